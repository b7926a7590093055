"""Defining and editing a release in the admin, with the rules of a release file."""

from __future__ import annotations

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User

from baitbench_site import yaml_files
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
    data = yaml_files.safe_load((settings.RELEASES_DIR / "demo.0.yaml").read_text()) | changes
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
    ({"variants": True}, "variants: a whole number, not true"),
    ({"gate": {"min_agreement": True}}, "gate.min_agreement: a number, not true"),
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

    data = yaml_files.safe_load(demo_config(code="roles.0"))
    release_create(config=ReleaseConfig.model_validate(data))
    assert LlmModel.objects.get(openrouter_id="fixture/spinner").can_write
    # A later release in which the spinner is not a writer leaves the registry's pool alone.
    writers = [model for model in data["writers"] if model != "fixture/spinner"]
    release_create(config=ReleaseConfig.model_validate(data | {"code": "roles.1",
                                                                "writers": writers}))
    assert LlmModel.objects.get(openrouter_id="fixture/spinner").can_write


# --- what the admin offers is what it allows (a user tryout's findings) -----------------------


def _world():
    from tests.world import release_rows_create, scenario_version, user_create

    ann, bob = user_create("ann", "auditor"), user_create("bob", "auditor")
    version = scenario_version()
    return {"pub": release_rows_create(code="pub.0", version=version, ann=ann, bob=bob,
                                       publish=True),
            "ran": release_rows_create(code="ran.0", version=version, ann=ann, bob=bob,
                                       publish=False)}


def test_a_frozen_or_published_release_shows_its_configuration(operator_client, prompt_texts,
                                                                client):
    from tests.world import user_create

    world = _world()
    for release in (world["ran"].release, world["pub"].release):
        page = operator_client.get(f"/admin/runs_app/release/{release.pk}/change/")
        body = page.content.decode()
        assert page.status_code == 200
        assert "Config yaml" not in body and "<pre>code: " + release.code in body
        assert "Frozen on" in body
    # Someone who may only view a release reads its configuration too, frozen or not.
    client.force_login(user_create("pat", "publisher"))
    demo = Release.objects.create(code="plain.0", language="en", config={"code": "plain.0"},
                                  config_hash="0" * 64)
    body = client.get(f"/admin/runs_app/release/{demo.pk}/change/").content.decode()
    assert "Config yaml" not in body and "<pre>code: plain.0" in body
    assert "Not frozen yet" in body


def test_a_delete_page_names_every_row_it_would_delete(operator_client, demo_release):
    body = operator_client.get(
        f"/admin/runs_app/release/{demo_release.pk}/delete/").content.decode()
    assert "object (" not in body
    assert body.count("demo.0 pins scenario ") == demo_release.pins.count() > 0


def test_no_row_without_a_name():
    from django.apps import apps
    from django.db import models

    unnamed = [model.__name__ for model in apps.get_models()
               if model._meta.app_label in ("runs_app", "audits_app", "scenarios_app")
               and model.__str__ is models.Model.__str__]
    assert unnamed == []


def test_delete_is_offered_only_where_it_is_allowed(operator_client, prompt_texts):
    world = _world()
    empty = Release.objects.create(code="empty.0", language="en", config={},
                                   config_hash="0" * 64)
    changelist = "/admin/runs_app/release/"
    for release, why in ((world["pub"].release, "it is published"),
                         (world["ran"].release, "it has generations, which nobody deletes here")):
        change = operator_client.get(f"{changelist}{release.pk}/change/").content.decode()
        assert f"/admin/runs_app/release/{release.pk}/delete/" not in change, release
        assert operator_client.get(f"{changelist}{release.pk}/delete/").status_code == 403
        response = operator_client.post(changelist, {
            "action": "delete_selected", "_selected_action": [release.pk, empty.pk]},
            follow=True)
        said = [str(message) for message in response.context["messages"]]
        assert any(message.startswith("Nothing was deleted: ") and f"{release.code}: {why}"
                   in message for message in said), said
        assert Release.objects.filter(pk__in=[release.pk, empty.pk]).count() == 2
    # A release nothing keeps is offered, and deleted.
    change = operator_client.get(f"{changelist}{empty.pk}/change/").content.decode()
    assert f"/admin/runs_app/release/{empty.pk}/delete/" in change
    assert operator_client.post(f"{changelist}{empty.pk}/delete/",
                                {"post": "yes"}).status_code == 302
    assert not Release.objects.filter(pk=empty.pk).exists()
    # A model a release used: no delete button.
    model = world["ran"].open_text.model
    change = operator_client.get(f"/admin/runs_app/llmmodel/{model.pk}/change/").content.decode()
    assert f"/admin/runs_app/llmmodel/{model.pk}/delete/" not in change


@pytest.mark.parametrize(("text", "says"), [
    ("code: [unclosed", "configuration: malformed YAML at line 2, column 1: did not find "
                        "expected &#x27;,&#x27; or &#x27;]&#x27;"),
    ("code: x\n  title: y\n", "configuration: malformed YAML at line 2, column 8: "),
    ("base: &base fixture/a\ncode: alias.0\nreader: *base\n",
     "configuration: line 3, column 9: aliases (*base) are not allowed in a release file; "
     "write the value out"),
    ("code: a.0\ncode: b.0\n", "configuration: line 2, column 1: the key &#x27;code&#x27; "
                               "appears twice in one mapping"),
    ("title: " + "x" * 70_000, "configuration: too large (70,007 bytes; the limit is "
                                      "65,536: a release file is a few KB)"),
])
def test_a_release_yaml_error_is_one_line_naming_where(operator_client, imported_scenarios,
                                                        text, says):
    import re

    body = operator_client.post(ADD_URL, {"config_yaml": text}).content.decode()
    errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*>\s*<li>(.*?)</li>\s*</ul>', body, re.S)
    assert len(errors) == 1, errors
    assert errors[0].startswith(says) and "\n" not in errors[0], errors
    assert not Release.objects.exists()


def test_the_release_list_counts_each_release_with_no_join_of_its_texts(operator_client,
                                                                        prompt_texts):
    """The list's counts come from one subquery per table and release: with the texts joined
    beside them, SQLite ran every subquery once per text (2.4 s a query on the demo's two
    releases), and the paginator's count carried them all."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runs_app.models import Generation
    from runs_app.models.pipeline import WorkStatus

    world = _world()
    with CaptureQueriesContext(connection) as queries:
        response = operator_client.get("/admin/runs_app/release/")
    assert response.status_code == 200
    shown = {row.code: row for row in response.context["cl"].result_list}
    for name in ("pub", "ran"):
        release = world[name].release
        texts = Generation.objects.filter(release=release)
        row = shown[release.code]
        assert (row.generation_total, row.generation_done, row.generation_failed) == (
            texts.count(), texts.filter(status=WorkStatus.DONE).count(),
            texts.filter(status=WorkStatus.FAILED).count())
        assert row.generation_total > 0
    sql = [query["sql"] for query in queries.captured_queries]
    assert not [text for text in sql if 'JOIN "runs_app_generation"' in text]
    counts = [text for text in sql if "COUNT(*)" in text and "runs_app_release" in text]
    assert counts and all("runs_app_generation" not in text for text in counts), counts


def test_an_admin_message_keeps_the_release_code_it_opens_with(client, small_demo_release):
    # Django's admin capitalises every message (`capfirst`): "Small.0: …" named no release.
    client.force_login(User.objects.create_superuser("root", password="x"))
    response = client.post("/admin/runs_app/release/", {
        "action": "retry_failed_generate", "_selected_action": [small_demo_release.pk]},
        follow=True)
    page = response.content.decode()
    code = small_demo_release.code
    assert f"<li class=\"info\">{code}: 0 failed or unscored generate row(s) pending " \
           f"again.</li>" in page, page[page.find("messagelist"):][:400]
    assert code.capitalize() + ":" not in page
