"""A published release is immutable in the database itself (DESIGN section 8).

The models refuse changes in `save()` and `delete()`, but queryset updates, bulk deletes and
raw SQL never call those. So the rules are also triggers, created by each app's migrations for
PostgreSQL and SQLite alike, and re-created after every `migrate` (`sync_guards`): SQLite
rebuilds a table to alter it, which drops that table's triggers.

What the triggers refuse:

- every row under a release (work tables and their child rows, pinned scenario versions, the
  spot-check evidence): INSERT, UPDATE and DELETE once the release is published;
- the release row itself: UPDATE and DELETE once it is published (the UPDATE that publishes it
  is allowed: its old status is not yet `published`);
- a publication and a scenario version: UPDATE and DELETE, always. An edited scenario gets a
  new version, and `Scenario.current_version` moves to it;
- evidence added after publication by design (the contamination check, the arena's reviews,
  pairs, votes and results, the recognisability run): new rows may come, but once the release
  is published none is ever DELETEd (`KEPT`), and the rows written once are never UPDATEd
  either (`RECORDED`);
- rows that may still move one way (`ONE_WAY`): an arena vote may become a shadow vote (a
  voter flagged later), never the reverse, and nothing else of it changes; a model a published
  release used keeps its id, family and name (a later release may still give it a role), and
  neither is ever DELETEd; a task brief's or an overlay's version that a frozen release names
  is never changed or DELETEd (an edit is saved as the next version);
- a reading study's people (`STUDY_GUARDS`), whether or not the release is published: once a
  participant's session is completed, its readings are never added to, changed or DELETEd and
  its answers on the participant row never change, nor is the row DELETEd; a participant's
  platform hashes are never rewritten at all (they keep one platform id to one session);
- on PostgreSQL also TRUNCATE of a table holding such rows (TRUNCATE fires no row triggers).

A refusal is an IntegrityError whose message starts with `REFUSAL_PREFIX` and names the
operation and the table. `refusals_as_immutable_error`, installed on every connection, turns
it into an `ImmutableError` with that message, so the admin and the commands, which already
catch `ImmutableError`, report it in words.

There is no switch that turns the triggers off for ordinary code. The only code that removes
them is the migrations' reverse operation and the test runner's flush between transactional
tests (see conftest.py), which drops and re-creates them inside its own transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import DatabaseError
from django.db.migrations import RunPython

REFUSAL_PREFIX = "baitbench immutable:"
RELEASE_TABLE = "runs_app_release"
PUBLISHED = "published"
# What a guard refuses for rows of a published release.
FROZEN = "frozen"  # INSERT, UPDATE and DELETE
RECORDED = "recorded"  # UPDATE and DELETE: rows may still be added
KEPT = "kept"  # DELETE: rows may be added and may progress (a probe's status, a pair's count)
ONE_WAY = "one way"  # DELETE, and an UPDATE that changes `fixed` columns or meets `backwards`


class ImmutableError(ValidationError):
    """Raised when something under a published (or frozen) release, a publication or a
    scenario version would change."""


@dataclass(frozen=True)
class Guard:
    """The rule for one table.

    `release_column` (with `parent_table`, for a child row such as a claim): how a row reaches
    its release. A guard without a release column refuses UPDATE and DELETE always.
    """

    app_label: str
    table: str
    release_column: str = ""
    parent_table: str = ""
    mode: str = FROZEN
    # ONE_WAY: the columns no UPDATE may change, and what an UPDATE may not do besides (SQL
    # over OLD and NEW, the same on PostgreSQL and SQLite).
    fixed: tuple[str, ...] = ()
    backwards: str = ""
    # How a row is "under a published release" when no release column says it (SQL over
    # `{row}`, per vendor): a model is, once a published release's configuration names it.
    published_sql: tuple[tuple[str, str], ...] = ()
    reason: str = ""  # the refusal's words, when the mode's own do not fit
    # ONE_WAY: columns no UPDATE may change at all, whatever `published` says.
    never_changed: tuple[str, ...] = ()

    @property
    def always(self) -> bool:
        return not self.release_column and not self.published_sql

    @property
    def operations(self) -> tuple[str, ...]:
        """The operations its triggers are on."""
        if self.always or self.table == RELEASE_TABLE or self.mode in (RECORDED, ONE_WAY):
            return ("UPDATE", "DELETE")
        return ("DELETE",) if self.mode == KEPT else ("INSERT", "UPDATE", "DELETE")

    def changed(self) -> str:
        """SQL: the UPDATE goes where a ONE_WAY row may not."""
        moved = [f"NEW.{column} IS DISTINCT FROM OLD.{column}" for column in self.fixed]
        return " OR ".join(moved + ([f"({self.backwards})"] if self.backwards else []))

    def rewritten(self) -> str:
        """SQL: the UPDATE changes a column that never changes ("" when there is none)."""
        return " OR ".join(f"NEW.{column} IS DISTINCT FROM OLD.{column}"
                           for column in self.never_changed)

    def release_of(self, row: str) -> str:
        """SQL for the release id of `row` (OLD or NEW)."""
        if not self.parent_table:
            return f"{row}.{self.release_column}"
        return (f"(SELECT parent.release_id FROM {self.parent_table} parent "
                f"WHERE parent.id = {row}.{self.release_column})")

    def published(self, row: str, vendor: str = "") -> str:
        if self.published_sql:
            return dict(self.published_sql)[vendor].format(row=row)
        return (f"EXISTS (SELECT 1 FROM {RELEASE_TABLE} guarded "
                f"WHERE guarded.id = {self.release_of(row)} AND guarded.status = '{PUBLISHED}')")


def _under_release(app_label: str, table: str, column: str = "release_id",
                   parent: str = "", mode: str = FROZEN) -> Guard:
    return Guard(app_label, table, column, parent, mode)


def _pinned_by_a_release(setting: str, codes: str) -> tuple[tuple[str, str], ...]:
    """SQL: a frozen release runs (or ran) with this version of a task brief or an overlay:
    its language, the version its configuration names (1 unless set) and one of its codes."""
    return (
        ("sqlite", f"EXISTS (SELECT 1 FROM {RELEASE_TABLE} pinning WHERE pinning.frozen_at IS "
                   f"NOT NULL AND pinning.language = {{row}}.language AND COALESCE(json_extract("
                   f"pinning.config, '$.{setting}'), 1) = {{row}}.version AND EXISTS (SELECT 1 "
                   f"FROM json_each(pinning.config, '$.{codes}') listed "
                   f"WHERE listed.value = {{row}}.code))"),
        ("postgresql", f"EXISTS (SELECT 1 FROM {RELEASE_TABLE} pinning WHERE pinning.frozen_at "
                       f"IS NOT NULL AND pinning.language = {{row}}.language AND COALESCE(("
                       f"pinning.config ->> '{setting}')::int, 1) = {{row}}.version AND "
                       f"pinning.config -> '{codes}' @> to_jsonb({{row}}.code::text))"),
    )


# A reading study's people (DESIGN section 10): their answers are evidence from the moment
# their session is completed, whether or not the release is published, and the keyed hashes of
# their platform ids are what keeps one id to one session, so they are never rewritten.
COMPLETED_SESSION = ("a completed session's answers are kept as they were given, and a "
                     "participant's platform hashes never change")
STUDY_GUARDS: tuple[Guard, ...] = (
    Guard("audits_app", "audits_app_studyparticipant", mode=ONE_WAY, reason=COMPLETED_SESSION,
          fixed=("id", "study_id", "key", "simulated", "consented_at", "profile", "position",
                 "turned_away", "placed_at", "attention_passed", "completed_at",
                 "completion_code", "exclusions", "duplicate_of_id"),
          never_changed=("platform_id_hash", "platform_study_hash", "platform_session_hash"),
          published_sql=(("sqlite", "{row}.completed_at IS NOT NULL"),
                         ("postgresql", "{row}.completed_at IS NOT NULL"))),
    # No reading is added to, changed in or taken from a completed session.
    Guard("audits_app", "audits_app_studyreading", mode=FROZEN, reason=COMPLETED_SESSION,
          published_sql=tuple(
              (vendor, "EXISTS (SELECT 1 FROM audits_app_studyparticipant completed "
                       "WHERE completed.id = {row}.participant_id "
                       "AND completed.completed_at IS NOT NULL)")
              for vendor in ("sqlite", "postgresql"))),
)

PINNED_TEXT = ("a release ran with this version, word for word: a change is a new version "
               "(and a release takes it by naming it)")

# Every table whose rows belong to a release, and the tables that never change.
GUARDS: tuple[Guard, ...] = (
    Guard("scenarios_app", "scenarios_app_scenarioversion"),
    Guard("scenarios_app", "scenarios_app_task", mode=ONE_WAY, reason=PINNED_TEXT,
          fixed=("id", "code", "language", "version", "name", "brief"),
          published_sql=_pinned_by_a_release("task_version", "tasks")),
    Guard("scenarios_app", "scenarios_app_condition", mode=ONE_WAY, reason=PINNED_TEXT,
          fixed=("id", "code", "language", "version", "name", "overlay"),
          published_sql=_pinned_by_a_release("condition_version", "conditions")),
    Guard("runs_app", RELEASE_TABLE, release_column="id"),
    Guard("runs_app", "runs_app_scoringversion"),
    _under_release("runs_app", "runs_app_releasescenario"),
    # What an operator asked to run, and the budget: nothing runs under a published release.
    # (Drain tickets are bookkeeping of the queue, not of the release: a queued copy that
    # starts after publication must still be able to mark itself finished.)
    _under_release("runs_app", "runs_app_stagerun"),
    _under_release("runs_app", "runs_app_runcontrol"),
    _under_release("runs_app", "runs_app_generation"),
    _under_release("runs_app", "runs_app_generationattempt", "generation_id",
                   "runs_app_generation"),
    _under_release("runs_app", "runs_app_refusalcheck"),
    _under_release("runs_app", "runs_app_jurorverdict"),
    _under_release("runs_app", "runs_app_claim", "verdict_id", "runs_app_jurorverdict"),
    _under_release("runs_app", "runs_app_readerresponse"),
    _under_release("runs_app", "runs_app_agentrun"),
    _under_release("runs_app", "runs_app_crossexamturn"),
    _under_release("runs_app", "runs_app_textscore"),
    Guard("audits_app", "audits_app_publication"),
    _under_release("audits_app", "audits_app_spotcheckbatch"),
    _under_release("audits_app", "audits_app_spotcheckitem", "batch_id",
                   "audits_app_spotcheckbatch"),
    _under_release("audits_app", "audits_app_spotcheck"),
    _under_release("audits_app", "audits_app_spotcheckcorrection"),
    _under_release("audits_app", "audits_app_outofbandaudit"),
    _under_release("audits_app", "audits_app_outofbandverdict", "audit_id",
                   "audits_app_outofbandaudit"),
    _under_release("audits_app", "audits_app_humanreaderresult"),
    # Added after publication by design; their findings are computed again on each run
    # (runs_app_contaminationfinding, replaced in one transaction), the evidence is kept.
    _under_release("runs_app", "runs_app_contaminationcheck", mode=KEPT),
    _under_release("runs_app", "runs_app_contaminationprobe", "contamination_check_id",
                   "runs_app_contaminationcheck", mode=KEPT),
    _under_release("audits_app", "audits_app_ethicsreview", mode=RECORDED),
    _under_release("audits_app", "audits_app_arenaevent", mode=RECORDED),
    _under_release("audits_app", "audits_app_recognisabilityrun", mode=RECORDED),
    _under_release("audits_app", "audits_app_arenaresult", mode=RECORDED),
    # A published release's archive, built once on the first download and kept.
    _under_release("audits_app", "audits_app_releasearchive", mode=RECORDED),
    _under_release("audits_app", "audits_app_arenapair", mode=KEPT),
    # A vote only ever becomes a shadow vote (its voter flagged later), with its reasons.
    Guard("audits_app", "audits_app_arenavote", "pair_id", "audits_app_arenapair",
          mode=ONE_WAY, backwards="OLD.shadow AND NOT NEW.shadow", fixed=(
              "id", "pair_id", "voter_id", "showing_id", "favourable", "honest", "recognised",
              "a_on_left", "attention", "attention_passed", "seconds_to_vote", "simulated",
              "note", "created_at")),
    # What a published release says about its models (its archive's attributions, its
    # pages' names) is read from these rows: a release's roles for a model may still grow.
    Guard("runs_app", "runs_app_llmmodel", mode=ONE_WAY,
          fixed=("id", "openrouter_id", "family", "display_name"), published_sql=(
              ("sqlite", f"EXISTS (SELECT 1 FROM {RELEASE_TABLE} guarded, "
                         f"json_each(guarded.config, '$.models') listed "
                         f"WHERE guarded.status = '{PUBLISHED}' "
                         f"AND json_extract(listed.value, '$.id') = {{row}}.openrouter_id)"),
              ("postgresql", f"EXISTS (SELECT 1 FROM {RELEASE_TABLE} guarded "
                             f"WHERE guarded.status = '{PUBLISHED}' AND guarded.config -> "
                             f"'models' @> jsonb_build_array(jsonb_build_object('id', "
                             f"{{row}}.openrouter_id)))"),
          )),
    _under_release("audits_app", "audits_app_simulatedpairvote", "pair_id",
                   "audits_app_arenapair", mode=KEPT),
    # Reading studies' texts made public: once, for good.
    _under_release("audits_app", "audits_app_studytextsreveal", mode=RECORDED),
    *STUDY_GUARDS,
)


def _message(operation: str, guard: Guard) -> str:
    if guard.reason:
        reason = guard.reason
    elif guard.always:
        reason = "its rows never change (a change is a new row)"
    elif guard.table == RELEASE_TABLE:
        reason = "the release is published"
    elif guard.mode == KEPT:
        reason = "evidence about a published release is kept"
    elif guard.mode == RECORDED:
        reason = "a record about a published release never changes (a change is a new row)"
    elif guard.mode == ONE_WAY:
        reason = ("what a published release used does not change (a vote may only become a "
                  "shadow vote)")
    else:
        reason = "the row belongs to a published release"
    return f"{REFUSAL_PREFIX} {operation} of {guard.table} refused: {reason}"


# ---------------------------------------------------------------------------------------------
# SQLite: one trigger per operation, RAISE(ABORT) when its WHEN clause holds
# ---------------------------------------------------------------------------------------------


def _sqlite_conditions(guard: Guard) -> dict[str, str]:
    """Operation -> the WHEN clause under which it is refused."""
    if guard.always:
        return {"UPDATE": "1", "DELETE": "1"}
    if guard.table == RELEASE_TABLE:
        return {"UPDATE": f"OLD.status = '{PUBLISHED}'", "DELETE": f"OLD.status = '{PUBLISHED}'"}
    published_old = guard.published("OLD", "sqlite")
    conditions = {
        "INSERT": guard.published("NEW", "sqlite"),
        "UPDATE": f"{published_old} OR {guard.published('NEW', 'sqlite')}",
        "DELETE": published_old,
    }
    if guard.mode == RECORDED:
        conditions["UPDATE"] = published_old
    if guard.mode == ONE_WAY:
        conditions["UPDATE"] = f"(({guard.changed()}) AND {published_old})"
        if guard.never_changed:
            conditions["UPDATE"] += f" OR ({guard.rewritten()})"
    return {operation: conditions[operation] for operation in guard.operations}


def _sqlite_install(guard: Guard) -> list[str]:
    statements = []
    for operation, condition in _sqlite_conditions(guard).items():
        name = f"baitbench_guard_{guard.table}_{operation.lower()}"
        message = _message(operation, guard).replace("'", "''")
        statements += [
            f"DROP TRIGGER IF EXISTS {name}",
            f"CREATE TRIGGER {name} BEFORE {operation} ON {guard.table} FOR EACH ROW "
            f"WHEN {condition} BEGIN SELECT RAISE(ABORT, '{message}'); END",
        ]
    return statements


def _sqlite_drop(guard: Guard) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS baitbench_guard_{guard.table}_{operation.lower()}"
            for operation in ("INSERT", "UPDATE", "DELETE")]


# ---------------------------------------------------------------------------------------------
# PostgreSQL: one row trigger function per table, and a TRUNCATE guard (no row trigger fires
# on TRUNCATE)
# ---------------------------------------------------------------------------------------------


def _pg_raise(guard: Guard, operation: str = "%s") -> str:
    # restrict_violation: psycopg and Django raise it as an IntegrityError, as SQLite's ABORT.
    message = _message(operation, guard).replace("'", "''")
    return (f"RAISE EXCEPTION USING ERRCODE = 'restrict_violation', "
            f"MESSAGE = format('{message}', TG_OP);")


def _pg_row_checks(guard: Guard) -> str:
    if guard.always:
        return _pg_raise(guard)
    if guard.table == RELEASE_TABLE:
        return f"IF OLD.status = '{PUBLISHED}' THEN {_pg_raise(guard)} END IF;"
    published_old = guard.published("OLD", "postgresql")
    if guard.mode in (KEPT, RECORDED):
        # The trigger fires only on the refused operations; each has an OLD row.
        return f"IF {published_old} THEN {_pg_raise(guard)} END IF;"
    if guard.mode == ONE_WAY:
        rewritten = (f"IF TG_OP = 'UPDATE' THEN IF {guard.rewritten()} THEN {_pg_raise(guard)} "
                     f"END IF; END IF; " if guard.never_changed else "")
        return (f"{rewritten}IF TG_OP = 'DELETE' THEN IF {published_old} THEN "
                f"{_pg_raise(guard)} END IF; ELSIF ({guard.changed()}) THEN "
                f"IF {published_old} THEN {_pg_raise(guard)} END IF; END IF;")
    # NEW is read only where it exists (INSERT, UPDATE), OLD likewise (UPDATE, DELETE).
    return (f"IF TG_OP IN ('UPDATE', 'DELETE') THEN IF {published_old} THEN "
            f"{_pg_raise(guard)} END IF; END IF; "
            f"IF TG_OP IN ('INSERT', 'UPDATE') THEN IF "
            f"{guard.published('NEW', 'postgresql')} THEN {_pg_raise(guard)} END IF; END IF;")


def _pg_truncate_check(guard: Guard) -> str:
    if guard.always:
        held = f"EXISTS (SELECT 1 FROM {guard.table})"
    elif guard.table == RELEASE_TABLE:
        held = f"EXISTS (SELECT 1 FROM {RELEASE_TABLE} WHERE status = '{PUBLISHED}')"
    else:
        held = (f"EXISTS (SELECT 1 FROM {guard.table} held_row "
                f"WHERE {guard.published('held_row', 'postgresql')})")
    return f"IF {held} THEN {_pg_raise(guard, 'TRUNCATE')} END IF;"


def _pg_install(guard: Guard) -> list[str]:
    name = f"baitbench_guard_{guard.table}"
    operations = " OR ".join(guard.operations)
    return [
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $guard$ "
        f"BEGIN {_pg_row_checks(guard)} "
        f"IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $guard$",
        f"CREATE OR REPLACE TRIGGER {name} BEFORE {operations} ON {guard.table} "
        f"FOR EACH ROW EXECUTE FUNCTION {name}()",
        f"CREATE OR REPLACE FUNCTION {name}_truncate() RETURNS trigger LANGUAGE plpgsql "
        f"AS $guard$ BEGIN {_pg_truncate_check(guard)} RETURN NULL; END $guard$",
        f"CREATE OR REPLACE TRIGGER {name}_truncate BEFORE TRUNCATE ON {guard.table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {name}_truncate()",
    ]


def _pg_drop(guard: Guard) -> list[str]:
    name = f"baitbench_guard_{guard.table}"
    return [f"DROP TRIGGER IF EXISTS {name} ON {guard.table}",
            f"DROP TRIGGER IF EXISTS {name}_truncate ON {guard.table}",
            f"DROP FUNCTION IF EXISTS {name}()", f"DROP FUNCTION IF EXISTS {name}_truncate()"]


# ---------------------------------------------------------------------------------------------
# Installing and removing the guards
# ---------------------------------------------------------------------------------------------

_BUILDERS: dict[str, tuple[Callable[[Guard], list[str]], Callable[[Guard], list[str]]]] = {
    "sqlite": (_sqlite_install, _sqlite_drop),
    "postgresql": (_pg_install, _pg_drop),
}


def _chosen(connection, app_labels: Iterable[str] | None) -> list[Guard]:
    labels = set(app_labels) if app_labels is not None else None
    existing = set(connection.introspection.table_names())
    return [guard for guard in GUARDS if guard.table in existing
            and (labels is None or guard.app_label in labels)]


def _run(connection, app_labels: Iterable[str] | None, which: int) -> int:
    if connection.vendor not in _BUILDERS:
        raise NotImplementedError(
            f"BaitBench guards published releases with triggers on PostgreSQL and SQLite; "
            f"{connection.vendor} is not supported")
    build = _BUILDERS[connection.vendor][which]
    guards = _chosen(connection, app_labels)
    with connection.cursor() as cursor:
        for guard in guards:
            for statement in build(guard):
                cursor.execute(statement)
    return len(guards)


def guards_install(connection, app_labels: Iterable[str] | None = None) -> int:
    """Create (or replace) the triggers of every guarded table that exists; idempotent.
    Returns the number of tables guarded."""
    return _run(connection, app_labels, 0)


def guards_drop(connection, app_labels: Iterable[str] | None = None) -> int:
    return _run(connection, app_labels, 1)


def migration_operations(app_label: str) -> tuple[Callable, Callable]:
    """(forwards, backwards) for a RunPython that guards one app's tables."""

    def forwards(apps, schema_editor) -> None:
        guards_install(schema_editor.connection, [app_label])

    def backwards(apps, schema_editor) -> None:
        guards_drop(schema_editor.connection, [app_label])

    return forwards, backwards


def _every_guard_install(apps, schema_editor) -> None:
    guards_install(schema_editor.connection)


def _every_guard_drop(apps, schema_editor) -> None:
    guards_drop(schema_editor.connection)


def around_table_rebuilds(*operations) -> list:
    """`operations` (adding columns, say) with every guard dropped before them and re-created
    after: SQLite rebuilds a table to add a column, and a guard of another table that reads
    this one would fail meanwhile. `sync_guards` re-creates them after migrate in any case."""
    return [RunPython(_every_guard_drop, _every_guard_install), *operations,
            RunPython(_every_guard_install, _every_guard_drop)]


def sync_guards(using: str = "default", **kwargs) -> None:
    """post_migrate: re-create every guard (a table that SQLite rebuilt lost its triggers)."""
    from django.db import connections

    guards_install(connections[using])


# ---------------------------------------------------------------------------------------------
# Refusals as ImmutableError
# ---------------------------------------------------------------------------------------------


def refusal_message(error: BaseException) -> str | None:
    """The trigger's words when `error` is a guard's refusal, else None."""
    text = str(error)
    if REFUSAL_PREFIX not in text:
        return None
    return text[text.index(REFUSAL_PREFIX) + len(REFUSAL_PREFIX):].splitlines()[0].strip()


def refusals_as_immutable_error(execute, sql, params, many, context):
    """A connection execute wrapper: a guard's refusal is raised as ImmutableError."""
    try:
        return execute(sql, params, many, context)
    except DatabaseError as error:
        message = refusal_message(error)
        if message is None:
            raise
        raise ImmutableError(message) from error


def install_error_wrapper(sender, connection, **kwargs) -> None:
    """connection_created: every connection reports refusals as ImmutableError (once)."""
    if refusals_as_immutable_error not in connection.execute_wrappers:
        connection.execute_wrappers.append(refusals_as_immutable_error)
