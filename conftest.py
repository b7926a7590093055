"""Fixtures shared by every app's tests: a small named world built from the shipped files."""

from __future__ import annotations

import copy
import os
import subprocess
import time

import pytest
from django.conf import settings
from django.db import transaction
from django.db.backends.base.operations import BaseDatabaseOperations

from baitbench_site import immutability
from tests.world import prompt_texts_seed, shipped_scenarios_import, small_demo_release_create

_flush = BaseDatabaseOperations.execute_sql_flush


def _flush_between_tests(self, sql_list) -> None:
    """Transactional tests (live server, workers) end with a flush that empties every table,
    which the immutability triggers refuse for published rows. The test runner, and only it,
    drops the triggers, flushes and re-creates them, in one transaction: no other code gets
    a way around them (baitbench_site.immutability).

    The flush empties the rows a data migration seeded too (task briefs and condition
    overlays; the roles come back by themselves, after every flush's post_migrate): they are
    put back in the same transaction, so that whichever test a worker runs next finds the
    database as migrations left it. (Put back by a fixture's teardown instead, they were lost
    whenever the flush ran after it: a test marked `django_db(transaction=True)` has its flush
    torn down last.)"""
    with transaction.atomic(using=self.connection.alias):
        immutability.guards_drop(self.connection)
        _flush(self, sql_list)
        immutability.guards_install(self.connection)
        if self.connection.alias == "default":
            prompt_texts_seed()


BaseDatabaseOperations.execute_sql_flush = _flush_between_tests


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test databases, whose commits on PostgreSQL do not wait for the disk
    (tests/scratch.py, `commits_unwaited`): set on the database for the live servers' and
    other processes' connections, and on the connection already open."""
    from django.db import connections

    from tests.scratch import commits_unwaited, suite_on_postgres

    if suite_on_postgres():
        with django_db_blocker.unblock():
            for alias in connections:
                with connections[alias].cursor() as cursor:
                    commits_unwaited(cursor.execute, connections[alias].settings_dict["NAME"])
                    cursor.execute("SET synchronous_commit = off")


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test counts its own rate limits (downloads, votes) from nothing: the per-process
    cache would otherwise carry counts from one test to the next."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def fresh_snapshot_cache():
    """Parsed snapshots are kept per process by (publication id, snapshot hash). On SQLite a
    rolled-back test's ids are used again, so a test could be served another test's snapshot
    and count one query fewer than a fresh process would: each test starts with none."""
    from audits_app import http_cache
    from audits_app.arena import selectors as arena_selectors
    from audits_app.pages import viewer as public
    from audits_app.pages import views
    from audits_app.publication import drafts, same_words

    with public._snapshots_lock:
        public._snapshots.clear()
    public.forget_release_list()
    http_cache.forget_rendered()  # kept answers too: their tags hold the same reused ids
    arena_selectors.forget_catalogues()  # the arena's pairs and texts, kept per release id
    same_words.forget_indexes()  # other releases' texts, kept per publication id and hash
    # A kept world (tests/kept.py) gives every test the same rows, ids and dates: nor may a
    # test find a draft's figures or the front page's answer another test computed.
    with drafts._drafts_lock:
        drafts._drafts.clear()
    with views._answers_lock:
        views._answers.clear()
    yield


@pytest.fixture
def prompt_texts(db):
    """The seeded task briefs and condition overlays (idempotently: they are there unless a
    test removed them)."""
    prompt_texts_seed()


# The worlds below are kept (tests/kept.py): built once for the tests of a module that ask
# for them, each test running in a savepoint inside, so each sees them as built. A
# transactional test (live server) cannot: its module defines the fixture it uses anew, with
# `transactional_db`, building the world per test with tests/world.py's builders.

@pytest.fixture(scope="module")
def kept_scenarios(request, django_db_setup, django_db_blocker):
    from tests.kept import world_kept

    yield from world_kept(request, django_db_blocker, shipped_scenarios_import)


@pytest.fixture
def imported_scenarios(kept_scenarios, db):
    """The shipped scenario files, imported (and the prompt texts they are written with)."""
    return copy.deepcopy(kept_scenarios)


@pytest.fixture(scope="module")
def kept_demo_release(request, kept_scenarios, django_db_blocker):
    from runs_app.services import release_get_or_load
    from tests.kept import world_kept

    yield from world_kept(request, django_db_blocker, lambda: release_get_or_load(code="demo.0"))


@pytest.fixture
def demo_release(kept_demo_release, imported_scenarios):
    """Release demo.0 loaded from releases/demo.0.yaml (draft, nothing run)."""
    return copy.deepcopy(kept_demo_release)


@pytest.fixture(scope="module")
def kept_small_demo_release(request, kept_scenarios, django_db_blocker):
    from tests.kept import world_kept

    yield from world_kept(request, django_db_blocker, small_demo_release_create)


@pytest.fixture
def small_demo_release(kept_small_demo_release, imported_scenarios):
    """demo.0's models on two scenarios, T1 x C0/C2: a quick release for stage tests. It
    keeps no cells for an arena or reading studies (demo.0 does), so every text of it is
    public once published."""
    return copy.deepcopy(kept_small_demo_release)


@pytest.fixture(scope="session")
def chromium_session():
    """One Playwright driver and one headless Chromium for a test process, started by the first
    test that asks for a page (the `chromium` fixture) and stopped at the end: starting them
    took about 1.5 s a test, more than most browser tests' own work. Each test still gets
    browser contexts of its own (cookies, storage, cache), closed when it ends."""
    started: dict = {}
    yield started
    if started:
        _playwright_loop_marked(started, running=True)
        started["browser"].close()
        started["playwright"].stop()


def _playwright_loop_marked(started: dict, *, running: bool) -> None:
    """Playwright's sync API marks its event loop as the thread's running loop between its
    calls, and the ORM refuses to run under a running loop. A test asking for pages writes its
    rows first; between tests the loop is unmarked so the next tests' fixtures can write, and
    marked again before Playwright is called (it resumes inside that loop)."""
    import asyncio

    asyncio._set_running_loop(started["playwright"]._loop if running else None)


class ChromiumPages:
    """What the `chromium` fixture gives a test: `chromium(width, height)` opens a page in a
    browser context of its own; `chromium.context(**options)` opens a context with other
    options (JavaScript off, say); `chromium.finish()` closes the test's contexts and lets the
    ORM run again (the fixture's teardown does it too)."""

    def __init__(self, started: dict) -> None:
        self.started = started

    def __call__(self, width: int = 1200, height: int = 900):
        return self.context(viewport={"width": width, "height": height}).new_page()

    def context(self, **options):
        from playwright.sync_api import sync_playwright

        from tests.browser import chromium_launch

        started = self.started
        if started:
            _playwright_loop_marked(started, running=True)
            if not started["browser"].is_connected():  # it crashed in an earlier test
                started["browser"] = chromium_launch(started["playwright"])
        else:
            started["playwright"] = sync_playwright().start()
            started["browser"] = chromium_launch(started["playwright"])
        return started["browser"].new_context(**options)

    def finish(self) -> None:
        if self.started:
            _playwright_loop_marked(self.started, running=True)
            try:
                if self.started["browser"].is_connected():
                    for context in self.started["browser"].contexts:
                        context.close()
            finally:
                _playwright_loop_marked(self.started, running=False)


@pytest.fixture
def chromium(chromium_session):
    """Pages of one headless Chromium (tests/browser.py), kept for the test process: write the
    test's rows before asking for a page (the ORM refuses to run inside Playwright's event
    loop, until `chromium.finish()`). Every context the test opened is closed when it ends."""
    from tests.browser import chromium_required

    chromium_required()
    pages = ChromiumPages(chromium_session)
    yield pages
    pages.finish()


@pytest.fixture(scope="module")
def served_live_server(django_db_setup):
    """A live server for a module's tests that read a served world (tests/kept.py), which
    pytest-django's `live_server` cannot serve: any test asking for that one is transactional,
    and its flush would empty the world after the first test."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer(os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost")
    server._live_server_modified_settings.enable()
    yield server
    server._live_server_modified_settings.disable()
    server.stop()


@pytest.fixture(scope="session")
def migrated_scratch(tmp_path_factory):
    """An empty scratch database on the suite's backend, migrated once a session for the
    tests that start other processes; each test copies it (tests/scratch.py). On SQLite the
    session's test workers share one (`sqlite_session_shared`)."""
    from tests.scratch import migrated_create, sqlite_session_shared, suite_on_postgres

    if not suite_on_postgres():
        yield sqlite_session_shared(tmp_path_factory, "migrated",
                             lambda directory: migrated_create(directory, dict(os.environ)))
        return
    database = migrated_create(tmp_path_factory.mktemp("migrated"), dict(os.environ))
    yield database
    database.drop()


@pytest.fixture(scope="session")
def scenarios_scratch(tmp_path_factory, migrated_scratch):
    """`migrated_scratch` with the shipped scenarios imported, once a session (shared by the
    test workers on SQLite, as `migrated_scratch` is); each test copies it
    (tests/scratch.py)."""
    from tests.scratch import scenarios_create, sqlite_session_shared, suite_on_postgres

    if not suite_on_postgres():
        yield sqlite_session_shared(tmp_path_factory, "scenarios", lambda directory:
                                    scenarios_create(directory, migrated_scratch,
                                                     dict(os.environ)))
        return
    database = scenarios_create(tmp_path_factory.mktemp("scenarios"), migrated_scratch,
                                dict(os.environ))
    yield database
    database.drop()


@pytest.fixture(scope="session")
def migrated_sqlite_scratch(request, tmp_path_factory):
    """An empty SQLite database, migrated once a session, whatever the suite's backend (on
    SQLite, `migrated_scratch` itself): for the tests that serve the site as `make serve`
    would, from a file (tests/scratch.py)."""
    from tests.scratch import migrated_create, sqlite_session_shared, suite_on_postgres

    if not suite_on_postgres():
        return request.getfixturevalue("migrated_scratch")
    return sqlite_session_shared(tmp_path_factory, "migrated-sqlite", lambda directory:
                                 migrated_create(directory, dict(os.environ), sqlite=True))


@pytest.fixture(scope="session")
def production_static(tmp_path_factory):
    """Production's static files, collected once a session (tests/serving.py) and shared by
    its test workers, for the tests that serve the site with production settings to test
    something else (read only: a server serves them)."""
    from tests.scratch import session_shared
    from tests.serving import static_collect

    return session_shared(tmp_path_factory, "production-static", static_collect)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    """Roll back the kept worlds this test does not ask for, before its fixtures are set up
    (tests/kept.py)."""
    from tests.kept import worlds_close_for

    worlds_close_for(item)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items) -> None:
    """After pytest-django's order (database tests, then transactional ones): within each
    module, the tests asking for the same kept worlds one after another (tests/kept.py)."""
    from tests.kept import items_grouped

    items_grouped(items)


FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_configure(config) -> None:
    """Tests count in a cache of their own process, whatever the environment says: a shared
    Redis cache (REDIS_URL) would mix parallel test workers' rate-limit counts, and the tests'
    `cache.clear()` would empty that Redis database (django-q2's queue included).

    Tests create many users: the production hasher's deliberate slowness (about a third of a
    second per password here) would be much of the suite's time. Set here, for the whole
    session, it holds for the worlds a module builds before its tests too (tests/kept.py).
    Only tests change it; the production settings are tested in subprocesses of their own."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.PASSWORD_HASHERS = FAST_HASHERS
    postgres_flush_deletes()


def postgres_flush_deletes() -> None:
    """On PostgreSQL, the flush that ends each transactional test (and closes each served
    world) deletes every table's rows instead of truncating the tables. A TRUNCATE of the
    eighty-odd tables gives each a new file (and its indexes theirs), and its commit, which
    removes the old ones, waits for the disk whatever `synchronous_commit` says: about a
    second and a half a flush here, where the few rows a test leaves are deleted in tens of
    milliseconds. Every table ends as empty (its foreign keys are checked at the commit, as
    Django's are deferred; the immutability guards are dropped around it either way,
    `_flush_between_tests`), and neither keeps its sequences' places. A flush asked to reset
    the sequences, or to cascade, truncates as Django does."""
    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade or not tables:
            return truncate(self, style, tables, reset_sequences=reset_sequences,
                            allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED;",
                *(f"DELETE FROM {self.quote_name(table)};" for table in tables)]

    DatabaseOperations.sql_flush = sql_flush


REDIS_SERVER = os.environ.get("BAITBENCH_REDIS_SERVER", "/usr/bin/redis-server")


@pytest.fixture
def redis_url(tmp_path):
    """The Redis on 127.0.0.1:6379 when one answers there (CI starts one), else a private
    redis-server on a free port for this test; `make test` installs the binary."""
    import socket

    if _redis_answers("redis://127.0.0.1:6379/0"):
        yield "redis://127.0.0.1:6379/0"
        return
    if not os.access(REDIS_SERVER, os.X_OK):
        pytest.fail(f"{REDIS_SERVER} is missing and no Redis answers on 127.0.0.1:6379: "
                    f"install it with `apt-get install redis-server` (`make test` does)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 30
        while not _redis_answers(url):
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server did not answer on port {port} within 30 s")
            time.sleep(0.2)
        yield url
    finally:
        server.kill()
        server.wait()


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.exceptions.ConnectionError:
        return False
