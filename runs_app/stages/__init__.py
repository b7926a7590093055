"""The stages of the chain, in order (DESIGN section 5). Each drains one work table."""

from __future__ import annotations

import importlib

from runs_app.schemas import STAGE_NAMES
from runs_app.stages.base import Stage

# name -> "module.Class"; imported on first use.
STAGE_CLASSES: dict[str, str] = {
    "generate": "runs_app.stages.generate.GenerateStage",
    "refusal": "runs_app.stages.refusal.RefusalStage",
    "jury": "runs_app.stages.jury.JuryStage",
    "panel": "runs_app.stages.panel.PanelStage",
    "uptake": "runs_app.stages.uptake.UptakeStage",
    "reveal": "runs_app.stages.reveal.RevealStage",
    "crossexam": "runs_app.stages.crossexam.CrossExamStage",
}


def available_stages() -> list[str]:
    return [name for name in STAGE_NAMES if name in STAGE_CLASSES]


def get_stage(name: str) -> Stage:
    if name not in STAGE_CLASSES:
        known = ", ".join(available_stages())
        raise KeyError(f"unknown stage {name!r}; stages: {known}")
    module_path, class_name = STAGE_CLASSES[name].rsplit(".", 1)
    return getattr(importlib.import_module(module_path), class_name)()
