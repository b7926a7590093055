"""A small named world for scenario tests: valid documents, scenarios in the database, staff."""

from __future__ import annotations

import copy
import functools
import uuid
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User

from runs_app.models import Release, ReleaseScenario
from scenarios_app.models import Scenario
from scenarios_app.schemas import ScenarioFile
from scenarios_app.services import scenario_apply

SHIPPED = Path(settings.SCENARIOS_DIR)
GREENVALE = SHIPPED / "greenvale-listeria.yaml"
# Counted from the folder, so that adding a scenario file needs no change to a test.
SHIPPED_FILES = sorted(SHIPPED.glob("*.yaml"))


@functools.cache
def _greenvale() -> dict[str, Any]:
    return yaml.safe_load(GREENVALE.read_text(encoding="utf-8"))


def valid_document(**changes: Any) -> dict[str, Any]:
    """A fresh copy of the Greenvale scenario as loaded YAML, with top-level fields changed."""
    document = copy.deepcopy(_greenvale())
    document.update(changes)
    return document


def other_scenario_document(slug: str) -> dict[str, Any]:
    """Greenvale's content under another slug and canary: a second, distinct scenario."""
    return valid_document(slug=slug, canary=f"BAITBENCH-CANARY-{uuid.uuid4()}",
                          title=f"Scenario {slug}")


def make_scenario(slug: str = "greenvale-listeria", **changes: Any) -> Scenario:
    """A scenario in the database, applied as an import would apply it (one version)."""
    document = valid_document() if slug == "greenvale-listeria" else other_scenario_document(slug)
    document.update(changes)
    scenario, _ = scenario_apply(document=ScenarioFile.model_validate(document))
    return scenario


def make_staff(username: str, role: str | None) -> User:
    user = User.objects.create_user(username, password="x", is_staff=True)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def dump(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def pin_in_release(scenario: Scenario, code: str) -> None:
    """A draft release that pins the scenario's current version, as freezing a config does.
    (runs_app depends on this app; only its tests reach back for a release.)"""
    release = Release.objects.create(code=code, language=scenario.language, config={},
                                     config_hash="")
    ReleaseScenario.objects.create(release=release, scenario_version=scenario.current_version)
