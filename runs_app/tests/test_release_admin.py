"""Defining and editing a release in the admin, with the rules of a release file."""

from __future__ import annotations

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User

from runs_app.models import LlmModel, Release
from runs_app.services import release_freeze

ADD_URL = "/admin/runs_app/release/add/"


@pytest.fixture
def operator(db):
    user = User.objects.create_user("olga", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name="operator"))
    return user


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


def demo_config(**changes) -> str:
    data = yaml.safe_load((settings.RELEASES_DIR / "demo.0.yaml").read_text()) | changes
    return yaml.safe_dump(data, sort_keys=False)


def test_an_operator_defines_a_release_in_the_admin(operator_client, imported_scenarios):
    response = operator_client.post(ADD_URL, {"config_yaml": demo_config(code="admin.0")})
    assert response.status_code == 302, response.content.decode()[:2000]
    release = Release.objects.get(code="admin.0")
    assert release.scenario_versions.count() == 8 and len(release.config_hash) == 64
    assert all("@" in entry for entry in release.config["scenarios"])
    assert LlmModel.objects.filter(openrouter_id="fixture/spinner", can_write=True).exists()


@pytest.mark.parametrize(("changes", "message"), [
    ({"weights": {"claims": 0.5, "omission": 0.3, "knowledge_harm": 0.3}}, "weights must sum"),
    ({"scenarios": ["no-such-scenario"]}, "&#x27;no-such-scenario&#x27; is not imported"),
    ({"jurors": ["fixture/juror-a", "fixture/juror-b"]}, "jurors"),
    ({"writers": ["fixture/unknown"]}, "not declared under models"),
    ({"scoring_version": "v9"}, "configuration: scoring_version: "),
    ({"knowledge_harm_cap": 4}, "knowledge_harm_cap: 4 differs from the cap of scoring version"),
])
def test_a_broken_configuration_is_refused_with_its_field(
    operator_client, imported_scenarios, changes, message
):
    response = operator_client.post(ADD_URL, {"config_yaml": demo_config(code="bad.0", **changes)})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Release.objects.filter(code="bad.0").exists()


def test_malformed_yaml_is_refused(operator_client, imported_scenarios):
    response = operator_client.post(ADD_URL, {"config_yaml": "code: [unclosed"})
    assert "malformed YAML" in response.content.decode()
    assert not Release.objects.exists()


def test_a_draft_is_editable_and_a_frozen_release_is_not(operator_client, demo_release):
    url = f"/admin/runs_app/release/{demo_release.pk}/change/"
    operator_client.post(url, {"config_yaml": demo_config(title="Renamed draft")})
    demo_release.refresh_from_db()
    assert demo_release.title == "Renamed draft"

    release_freeze(release=demo_release)
    frozen_hash = demo_release.config_hash
    operator_client.post(url, {"config_yaml": demo_config(title="Too late", variants=3)})
    demo_release.refresh_from_db()
    assert demo_release.title == "Renamed draft" and demo_release.config_hash == frozen_hash
    assert demo_release.config["variants"] == 1


def test_a_new_release_adds_to_a_models_roles_and_never_takes_one_away(imported_scenarios):
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_create

    data = yaml.safe_load(demo_config(code="roles.0"))
    release_create(config=ReleaseConfig.model_validate(data))
    assert LlmModel.objects.get(openrouter_id="fixture/spinner").can_write
    # A later release in which the spinner is not a writer leaves the registry's pool alone.
    writers = [model for model in data["writers"] if model != "fixture/spinner"]
    release_create(config=ReleaseConfig.model_validate(data | {"code": "roles.1",
                                                                "writers": writers}))
    assert LlmModel.objects.get(openrouter_id="fixture/spinner").can_write
