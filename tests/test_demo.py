"""`manage.py demo` run twice: the second run keeps a curator's edit and the demo password."""

from __future__ import annotations

import io
import re
import shutil

import pytest
import yaml
from django.conf import settings
from django.contrib.auth import authenticate as _authenticate
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, RequestFactory, override_settings

from audits_app.models import Publication
from audits_app.publication.snapshot_model import SNAPSHOT_SCHEMA_VERSION, snapshot_load
from baitbench_site import yaml_files
from runs_app.models import Release
from scenarios_app.models import Scenario
from scenarios_app.tests.factories import change_form_data, change_url
from tests.kept import world_kept
from tests.world import user_create

pytestmark = pytest.mark.django_db

SLUGS = ["greenvale-listeria", "cobaltcloud-breach"]
EDITED_TITLE = "Greenvale listeria, as the curator wrote it"


def authenticate(**credentials):
    """A login as the login page makes it: django-axes counts attempts per request."""
    return _authenticate(RequestFactory().post("/admin/login/"), **credentials)


DUTCH_SLUG = "waterschap-dijkverzakking"


def small_demo_files(folder) -> tuple:
    """The demo on two shipped scenarios, T1 x C0/C2: the same command, less work. Its
    scenario and release folders under `folder`."""
    scenarios, releases = folder / "scenarios", folder / "releases"
    scenarios.mkdir()
    releases.mkdir()
    for slug in SLUGS:
        shutil.copy(settings.SCENARIOS_DIR / f"{slug}.yaml", scenarios)
    config = yaml_files.safe_load((settings.RELEASES_DIR / "demo.0.yaml").read_text())
    config.update(scenarios=SLUGS, tasks=["T1"], conditions=["C0", "C2"],
                  bootstrap={"seed": 5, "resamples": 200, "level": 0.95})
    (releases / "demo.0.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    # The demo's Dutch release, as small: one Dutch scenario, T4 (its cross-examination) x C0.
    dutch = yaml_files.safe_load((settings.RELEASES_DIR / "demo-nl.0.yaml").read_text())
    shutil.copy(settings.SCENARIOS_DIR / f"{DUTCH_SLUG}.yaml", scenarios)
    dutch.update(scenarios=[DUTCH_SLUG], tasks=["T4"], conditions=["C0"],
                 bootstrap={"seed": 5, "resamples": 200, "level": 0.95})
    (releases / "demo-nl.0.yaml").write_text(yaml.safe_dump(dutch, sort_keys=False))
    return scenarios, releases


@pytest.fixture(scope="module")
def kept_first_demo(request, django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo's first run on the small files, kept (tests/kept.py): each test starts from
    what it left, in a savepoint. Its folders and what it printed."""
    folders = small_demo_files(tmp_path_factory.mktemp("demo"))

    def build() -> tuple:
        with override_settings(SCENARIOS_DIR=folders[0], RELEASES_DIR=folders[1]):
            return folders, demo()

    yield from world_kept(request, django_db_blocker, build)


@pytest.fixture
def small_demo(kept_first_demo, db, settings):
    """The small demo's settings, its first run done: what that run printed."""
    (settings.SCENARIOS_DIR, settings.RELEASES_DIR), first = kept_first_demo
    return first


def demo(*args: str) -> str:
    out = io.StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str:
    return re.search(r"user 'demo', password '([^']+)'", output).group(1)


def curator_edits_the_title(slug: str) -> None:
    client = Client()
    client.force_login(user_create("cora", "curator"))
    scenario = Scenario.objects.get(slug=slug)
    data = change_form_data(client, scenario) | {"title": EDITED_TITLE}
    response = client.post(change_url(scenario), data)
    assert response.status_code == 302, response.content.decode()[:2000]


def test_a_second_run_keeps_the_curators_edit_and_the_password(small_demo):
    first = small_demo  # the first run's output
    assert "scenarios: 3 imported" in first and "published demo.0" in first
    password = printed_password(first)

    curator_edits_the_title("greenvale-listeria")
    edited = Scenario.objects.select_related("current_version").get(slug="greenvale-listeria")
    assert edited.current_version.number == 2

    second = demo()

    assert "2 unchanged, 1 kept as edited" in second
    assert ("kept greenvale-listeria: its current version 2 (saved by cora) differs from the "
            "shipped file") in second
    assert "demo.0 is already published: nothing to do" in second
    assert "password unchanged" in second and password not in second
    scenario = Scenario.objects.select_related("current_version").get(slug="greenvale-listeria")
    assert scenario.title == EDITED_TITLE
    assert scenario.current_version.pk == edited.current_version.pk
    assert scenario.versions.count() == 2
    assert authenticate(username="demo", password=password) is not None
    assert Release.objects.get(code="demo.0").is_published
    # Every snapshot the demo published reads back as the typed model, and dumps unchanged.
    publications = list(Publication.objects.all())
    assert {p.release.code for p in publications} == {"demo.0", "demo-nl.0"}
    for publication in publications:
        typed = snapshot_load(publication.snapshot)
        assert typed.schema_version == SNAPSHOT_SCHEMA_VERSION
        assert typed.as_data() == publication.snapshot


def test_the_password_changes_only_when_asked(small_demo):
    password = printed_password(small_demo)  # the first run's
    again = printed_password(demo("--reset-password"))
    assert again != password
    assert authenticate(username="demo", password=password) is None
    assert authenticate(username="demo", password=again) is not None
    # `make demo PORT=8001`: the links it prints are on the port it serves.
    output = demo("--password", "chosen-by-me", "--port", "8001")
    assert authenticate(username="demo", password="chosen-by-me") is not None
    assert "Leaderboard: http://127.0.0.1:8001/releases/demo.0/" in output
    assert "Staff login for http://127.0.0.1:8001/admin/ " in output
    assert ":8000" not in output


def test_a_weak_demo_password_is_refused_before_any_work(db):
    with pytest.raises(CommandError, match="--password is refused: .*This password is too short"):
        demo("--password", "demo")
    assert not get_user_model().objects.filter(username="demo").exists()
