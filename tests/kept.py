"""Worlds built once and kept for the tests that ask for them, each test seeing a clean copy.

Building a release and running it through the stages costs seconds; many tests only read
such a world and change a row or two. A kept world is built inside a transaction that stays
open while the tests that ask for it run: each test runs in a savepoint within it (pytest-
django's `db` nests its transaction there, as Django's TestCase nests a test in its class's
`setUpTestData`), so what a test writes is rolled back before the next one, which finds the
world as it was built. The transaction is rolled back when the module is done, or sooner:

- before any test that does not ask for the world (even in the same module), so no test ever
  sees rows it did not ask for; a later test that asks for it gets it built again;
- before any transactional test (live server, workers), which cannot run inside a transaction.

A world is a module-scoped fixture named `kept_...` whose body is
`yield from world_kept(request, django_db_blocker, build)`; the fixture the tests use is
function-scoped, depends on it and on `db`, and returns `copy.deepcopy(value)` (as Django's
TestCase copies `setUpTestData` objects), so a test that changes an object in memory does not
change the next test's.

A browser test needs a world the live server's thread can read: on PostgreSQL it has a
connection of its own, which sees no open transaction. `world_served` builds such a world
committed, for the tests of a module that only read it through the live server (none of them
transactional: each runs in `db`'s transaction, so what it writes itself is rolled back); it
is closed as a kept world is, by a flush instead of a rollback (the flush every transactional
test ends with), and each test checks on its way out that no table's row count moved (the
server's own writes are committed on PostgreSQL).

`conftest.py` calls `worlds_close_for(item)` before each test is set up and
`items_grouped(items)` after collection (tests asking for the same worlds run together).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from django.db import connections, transaction

T = TypeVar("T")

# The fixture definitions of the worlds now open, with the requests they were built for.
_open: dict[str, tuple[object, pytest.FixtureRequest]] = {}


def world_kept(request: pytest.FixtureRequest, django_db_blocker, build: Callable[[], T]
               ) -> Iterator[T]:
    """Open a transaction on every database, build the world in it and yield it; roll the
    transaction back at the end (the module's, or before a test that must not see the world).
    A module-scoped fixture's body: `yield from world_kept(request, django_db_blocker, build)`.
    """
    atomics = []
    with django_db_blocker.unblock():
        try:
            for alias in connections:
                atomic = transaction.atomic(using=alias)
                atomic._from_testcase = True  # as Django's TestCase marks its own
                atomic.__enter__()
                atomics.append((alias, atomic))
            value = build()
        except BaseException:
            _rollback(atomics)
            raise
    yield from _kept_open(request, django_db_blocker, value, lambda: _rollback(atomics))


def world_served(request: pytest.FixtureRequest, django_db_blocker, build: Callable[[], T]
                 ) -> Iterator[T]:
    """Build the world committed and yield it; flush every database at the end (the module's,
    or before a test that must not see the world). A module-scoped fixture's body:
    `yield from world_served(request, django_db_blocker, build)`."""
    with django_db_blocker.unblock():
        try:
            value = build()
        except BaseException:
            _flush()
            raise
    yield from _kept_open(request, django_db_blocker, value, _flush)


def _kept_open(request: pytest.FixtureRequest, django_db_blocker, value: T,
               close: Callable[[], None]) -> Iterator[T]:
    """Yield the built world, known as open (`worlds_close_for`) until `close` undoes it."""
    name = request.fixturename
    _open[name] = (request._fixturedef, request)
    try:
        yield value
    finally:
        _open.pop(name, None)
        with django_db_blocker.unblock():
            close()


def _flush() -> None:
    """As a transactional test's end (django.test.TransactionTestCase._fixture_teardown)."""
    from django.core.management import call_command

    for alias in connections:
        call_command("flush", verbosity=0, interactive=False, database=alias,
                     reset_sequences=False, allow_cascade=False, inhibit_post_migrate=False)


def rows_counted() -> dict[str, int]:
    """Every table's row count, on the default database: what a test reading a served world
    must leave as it found it."""
    connection = connections["default"]
    with connection.cursor() as cursor:
        counts = {}
        for table in sorted(connection.introspection.table_names(cursor)):
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def _rollback(atomics) -> None:
    for alias, atomic in reversed(atomics):
        transaction.set_rollback(True, using=alias)
        atomic.__exit__(None, None, None)


def _transactional(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    marker = item.get_closest_marker("django_db")
    return bool({"transactional_db", "live_server"} & names) or (
        marker is not None and bool(marker.kwargs.get("transaction")
                                    or marker.kwargs.get("reset_sequences")
                                    or (marker.args and marker.args[0])))


def worlds_close_for(item: pytest.Item) -> None:
    """Roll back every open world `item` does not ask for (all of them for a transactional
    test), before any of its fixtures is set up."""
    names = set(getattr(item, "fixturenames", ()))
    transactional = _transactional(item)
    if transactional and kept_names(item):
        raise pytest.UsageError(f"{item.nodeid}: a transactional test cannot run inside a kept "
                                f"world ({', '.join(kept_names(item))}); build it in the test")
    for name, (fixturedef, request) in list(_open.items()):
        if transactional or name not in names:
            fixturedef.finish(request)  # runs world_kept's rollback; built again when asked


def kept_names(item: pytest.Item) -> tuple[str, ...]:
    return tuple(sorted(name for name in getattr(item, "fixturenames", ())
                        if name.startswith("kept_")))


def items_grouped(items: list[pytest.Item]) -> None:
    """Within each module's run of tests (pytest-django has already put the database tests
    before the transactional ones), let the tests asking for the same kept worlds follow one
    another, so each world is built once per run rather than once per interruption. A
    transactional test asking for a kept world is a mistake, named at collection."""
    wrong = [item.nodeid for item in items if _transactional(item) and kept_names(item)]
    if wrong:
        raise pytest.UsageError("transactional tests cannot run inside a kept world (build it "
                                "in the test instead; tests/kept.py): " + ", ".join(wrong))
    start = 0
    while start < len(items):
        end = start
        module = items[start].module if hasattr(items[start], "module") else None
        while end < len(items) and getattr(items[end], "module", None) is module:
            end += 1
        if end == start:
            end += 1
        run = items[start:end]
        order = {}
        for item in run:
            order.setdefault(kept_names(item), len(order))
        run.sort(key=lambda item: order[kept_names(item)])
        items[start:end] = run
        start = end
