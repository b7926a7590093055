"""Fixtures shared by every app's tests: a small named world built from the shipped files."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import transaction
from django.db.backends.base.operations import BaseDatabaseOperations

from baitbench_site import immutability
from scenarios_app.services import scenarios_import

_flush = BaseDatabaseOperations.execute_sql_flush


def _flush_between_tests(self, sql_list) -> None:
    """Transactional tests (live server, workers) end with a flush that empties every table,
    which the immutability triggers refuse for published rows. The test runner, and only it,
    drops the triggers, flushes and re-creates them, in one transaction: no other code gets
    a way around them (baitbench_site.immutability)."""
    with transaction.atomic(using=self.connection.alias):
        immutability.guards_drop(self.connection)
        _flush(self, sql_list)
        immutability.guards_install(self.connection)


BaseDatabaseOperations.execute_sql_flush = _flush_between_tests


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Tests create many users: the production hasher's deliberate slowness (about a third of
    a second per password here) would be most of the suite's time. Only tests change this."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_snapshot_cache():
    """Parsed snapshots are kept per process by (publication id, snapshot hash). On SQLite a
    rolled-back test's ids are used again, so a test could be served another test's snapshot
    and count one query fewer than a fresh process would: each test starts with none."""
    from audits_app import public

    with public._snapshots_lock:
        public._snapshots.clear()
    yield


def _seed_prompt_texts() -> None:
    """The task briefs and condition overlays a data migration writes. A test on a
    transactional database may run after another one flushed every table, seeded rows
    included, so the fixtures that need them put them back (idempotently)."""
    import importlib

    from django.apps import apps

    importlib.import_module("scenarios_app.migrations.0002_seed_tasks_conditions").seed(
        apps, None)


@pytest.fixture(autouse=True)
def seeded_rows_survive_a_flush(request, django_db_blocker):
    """A transactional test ends by flushing every table, the task briefs and condition
    overlays a data migration seeded included (the roles come back by themselves, after
    every flush's post_migrate). Put them back, so that whichever test a worker runs next
    finds the database as migrations left it."""
    yield
    marker = request.node.get_closest_marker("django_db")
    transactional = bool({"transactional_db", "live_server"} & set(request.fixturenames)) or (
        marker is not None and bool(marker.kwargs.get("transaction")
                                    or (marker.args and marker.args[0])))
    if transactional:
        with django_db_blocker.unblock():
            _seed_prompt_texts()


@pytest.fixture
def prompt_texts(db):
    """The seeded task briefs and condition overlays, there even after a flush."""
    _seed_prompt_texts()


@pytest.fixture
def imported_scenarios(db):
    """The shipped scenario files, imported (and the prompt texts they are written with)."""
    _seed_prompt_texts()
    result = scenarios_import(paths=[str(settings.SCENARIOS_DIR)])
    assert result.ok, result.problems
    return result


@pytest.fixture
def demo_release(imported_scenarios):
    """Release demo.0 loaded from releases/demo.0.yaml (draft, nothing run)."""
    from runs_app.services import release_get_or_load

    return release_get_or_load(code="demo.0")


@pytest.fixture
def small_demo_release(imported_scenarios):
    """demo.0's models on two scenarios, T1 x C0/C2: a quick release for stage tests."""
    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create

    config = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml")
    small = config.model_copy(update={
        "code": "small.0", "scenarios": ["greenvale-listeria", "cobaltcloud-breach"],
        "tasks": ["T1"], "conditions": ["C0", "C2"],
    })
    return release_create(config=ReleaseConfig.model_validate(small.model_dump()))
