"""What some fixture models "remember": the shipped scenario files (DESIGN section 7).

A real model knows nothing of a scenario beyond its prompt unless the scenario's file was in
its training data. Two kinds of fixture stand in for models that know more, and both must
say so: the trial readers that understand a text as a capable model would (they look up which
facts a knowledge question is about, which their prompt never shows), and the contaminated
writer `fixture/leaky`, which repeats a canary as a model trained on the files would. Both
look the scenario up here by the organisation's name, which their prompt does show. Nothing
else in the fixture provider reads these files.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings


@functools.cache
def _files(directory: Path, stamps: tuple[tuple[str, int], ...]) -> dict[str, dict[str, Any]]:
    del stamps  # part of the cache key: an edited file is read again
    remembered = {}
    for path in sorted(directory.glob("*.yaml")):
        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(document, dict) and isinstance(document.get("organisation"), dict):
            remembered[document["organisation"].get("name", "")] = document
    return remembered


def remembered_files() -> dict[str, dict[str, Any]]:
    """Shipped scenario documents (plain YAML data) by organisation name."""
    directory = Path(settings.SCENARIOS_DIR)
    stamps = tuple((p.name, p.stat().st_mtime_ns) for p in sorted(directory.glob("*.yaml")))
    return _files(directory, stamps)


def recall(text: str) -> dict[str, Any] | None:
    """The scenario whose organisation the text names (the longest name that occurs)."""
    named = [name for name in remembered_files() if name and name in text]
    return remembered_files()[max(named, key=len)] if named else None
