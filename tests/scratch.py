"""Scratch databases for tests that start other processes (queue workers, a web server, the
site in a browser): a SQLite file, or a database of its own on the PostgreSQL server when the
suite runs on PostgreSQL.

Migrating one costs about ten CPU seconds and importing the shipped scenarios two more, so
the suite does each once (the session fixtures `migrated_scratch` and `scenarios_scratch` in
conftest.py) and every test starts from a copy: a file copy on SQLite, `CREATE DATABASE …
TEMPLATE` on PostgreSQL. A copy is what `migrate` (and `import_scenarios`) would have left.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
SERVER = "postgresql://postgres@127.0.0.1:5432"


def suite_on_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def commits_unwaited(execute: Callable[[str], object], name: str) -> None:
    """A test database's commits, from every process that connects to it afterwards, do not
    wait for the disk (`synchronous_commit = off`, set on the database: a copy made from it
    as a template does not inherit it). Here a commit waits about 3 ms for its WAL flush, and
    the worker, live-server and transactional tests commit tens of thousands of times. What
    the setting gives up is only the last commits' durability if the server itself crashes;
    what another session sees, and when, and every lock are as before, so the tests of
    claims, killed workers and concurrent drains test what they did."""
    execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')


class Database:
    """A scratch database on the suite's backend (or on SQLite when `sqlite`), empty, or a
    copy of `template` (another Database of the same kind, which no process may hold open
    while it is copied)."""

    def __init__(self, directory: Path, *, template: Database | None = None,
                 sqlite: bool = False) -> None:
        self.postgres = suite_on_postgres() and not sqlite
        if template is not None and template.postgres != self.postgres:
            raise ValueError(f"a {'PostgreSQL' if self.postgres else 'SQLite'} database cannot "
                             f"copy {template.url}")
        if self.postgres:
            self.name = f"bb_scratch_{uuid.uuid4().hex[:10]}"
            copied = f' TEMPLATE "{template.name}"' if template is not None else ""
            self._admin(f'CREATE DATABASE "{self.name}"{copied}')
            commits_unwaited(self._admin, self.name)
            self.url = f"postgres://postgres@127.0.0.1:5432/{self.name}"
        else:
            self.path = directory / f"scratch-{uuid.uuid4().hex[:8]}.sqlite3"
            if template is not None:
                # The backup API copies what a reader would see, whatever WAL holds.
                source, target = sqlite3.connect(template.path), sqlite3.connect(self.path)
                try:
                    source.backup(target)
                finally:
                    source.close()
                    target.close()
            self.url = f"sqlite:///{self.path}"

    @classmethod
    def at(cls, path: Path) -> Database:
        """The SQLite database file at `path`, made before (by another test worker:
        `sqlite_session_shared`)."""
        database = cls.__new__(cls)
        database.postgres, database.path, database.url = False, path, f"sqlite:///{path}"
        return database

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
            connection.execute(sql)

    def rows(self, sql: str) -> list[tuple]:
        if self.postgres:
            import psycopg

            with psycopg.connect(f"{SERVER}/{self.name}") as connection:
                return connection.execute(sql).fetchall()
        connection = sqlite3.connect(self.path)
        try:
            return connection.execute(sql).fetchall()
        finally:
            connection.close()

    def drop(self) -> None:
        if self.postgres:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    """`manage.py ARGS` in a process of its own; its output is in the error if it fails."""
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError(f"manage.py {' '.join(args)} exited with {result.returncode}:\n"
                             f"{result.stderr[-3000:]}")
    return result


class Shell:
    """One `manage.py shell` kept open for a test that asks another process the same question
    again and again while it waits (what the run page shows while a cluster starts): a new
    `manage.py shell` per look cost a second and a half of CPU, taken from the cluster being
    waited for. `ask(code)` runs `code` there and returns what it put in `answer` (JSON).
    Each look reads the database afresh: the shell holds no transaction open between looks."""

    LOOP = ("import json, sys\n"
            "for line in sys.stdin:\n"
            "    scope = {}\n"
            "    exec(json.loads(line), scope)\n"
            "    print('\\x1e' + json.dumps(scope.get('answer')), flush=True)\n")

    def __init__(self, env: dict) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "shell", "-c", self.LOOP], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, code: str):
        self.process.stdin.write(json.dumps(code) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:  # log lines may come first
            if line.startswith("\x1e"):
                return json.loads(line[1:])
        raise AssertionError(f"manage.py shell ended with {self.process.wait()}")

    def __enter__(self) -> Shell:
        return self

    def __exit__(self, *exc) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def migrated_create(directory: Path, env: dict, *, sqlite: bool = False) -> Database:
    """An empty database, migrated by `manage.py migrate` (run with `env`)."""
    database = Database(directory, sqlite=sqlite)
    env = {name: value for name, value in env.items() if name != "REDIS_URL"}
    manage("migrate", "-v0", env={**env, "DATABASE_URL": database.url})
    return database


def scenarios_create(directory: Path, migrated: Database, env: dict) -> Database:
    """A copy of `migrated` with the shipped scenario files imported by `import_scenarios`."""
    database = Database(directory, template=migrated)
    env = {name: value for name, value in env.items() if name != "REDIS_URL"}
    manage("import_scenarios", "scenarios/", env={**env, "DATABASE_URL": database.url})
    return database


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def session_shared(tmp_path_factory, name: str, create: Callable[[Path], Path]) -> Path:
    """What `create(directory)` makes (a file or a folder: its path), made once for the whole
    test session: under pytest-xdist its workers share it, made by whichever asks first while
    the others wait on a lock (a migration is ten CPU seconds, which every worker paid again
    on a machine of two cores). The session's temporary directory is new for each run, so
    nothing is kept from one run to the next; what is shared is only ever read or copied."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # pytest-N: the workers' popen-gwN folders are in it
    record = root / f"{name}.path"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if record.exists():
                return Path(record.read_text())
            directory = root / f"{name}-shared"
            directory.mkdir()
            made = create(directory)
            record.write_text(str(made))
            return made
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def sqlite_session_shared(tmp_path_factory, name: str,
                          create: Callable[[Path], Database]) -> Database:
    """A SQLite scratch database made once for the whole session (`session_shared`)."""
    return Database.at(session_shared(tmp_path_factory, name,
                                      lambda directory: create(directory).path))
