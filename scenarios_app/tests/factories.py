"""A small named world for scenario tests: valid documents, scenarios in the database, staff."""

from __future__ import annotations

import copy
import functools
import io
import uuid
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.forms import CheckboxInput
from django.test import Client
from django.urls import reverse

from baitbench_site import yaml_files
from runs_app.models import Release, ReleaseScenario
from scenarios_app.forms import AnswerOptionsWidget
from scenarios_app.models import Fact, KnowledgeQuestion, Scenario, ScenarioVersion
from scenarios_app.schemas import ScenarioFile
from scenarios_app.services import scenario_apply

SHIPPED = Path(settings.SCENARIOS_DIR)
GREENVALE = SHIPPED / "greenvale-listeria.yaml"
# Counted from the folder, so that adding a scenario file needs no change to a test.
SHIPPED_FILES = sorted(SHIPPED.glob("*.yaml"))


@functools.cache
def _greenvale() -> dict[str, Any]:
    return yaml_files.safe_load(GREENVALE.read_text(encoding="utf-8"))


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


def run(command: str, *args: str) -> tuple[int, str, str]:
    """Run a management command as the shell would: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(command, *args, stdout=out, stderr=err)
    except SystemExit as exit_:
        return exit_.code, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def write(folder: Path, name: str, document: dict[str, Any] | str) -> str:
    path = folder / name
    path.write_text(document if isinstance(document, str) else dump(document), encoding="utf-8")
    return str(path)


def database_state() -> dict[str, Any]:
    """Everything an import could change: row counts, and each scenario's versions."""
    return {
        "counts": [model.objects.count()
                   for model in (Scenario, ScenarioVersion, Fact, KnowledgeQuestion)],
        "scenarios": sorted(Scenario.objects.values_list(
            "slug", "title", "current_version__number", "current_version__content_hash"
        )),
        "versions": sorted(ScenarioVersion.objects.values_list(
            "scenario__slug", "number", "content_hash"
        )),
    }


def change_url(scenario: Scenario) -> str:
    return reverse("admin:scenarios_app_scenario_change", args=[scenario.pk])


def _form_data(form) -> dict[str, object]:
    data = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if isinstance(field.widget, AnswerOptionsWidget):
            value = field.widget.format_value(value)
            for index, text in enumerate(value["options"]):
                data[form.add_prefix(f"{name}_{index}")] = text
            data[form.add_prefix(f"{name}_correct")] = str(value["correct"])
        elif isinstance(field.widget, CheckboxInput):
            if value:
                data[form.add_prefix(name)] = "on"
        elif value is not None:
            data[form.add_prefix(name)] = value
    return data


def change_form_data(client: Client, scenario: Scenario) -> dict[str, object]:
    """The POST data of the change page as a browser would send it, unedited: the main form,
    and every inline's management form and forms. Browsers send textarea line breaks as CRLF."""
    response = client.get(change_url(scenario))
    assert response.status_code == 200
    data = _form_data(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        data.update(_form_data(inline.formset.management_form))
        for form in inline.formset.forms:
            data.update(_form_data(form))
    return {key: value.replace("\n", "\r\n") if isinstance(value, str) else value
            for key, value in data.items()}
