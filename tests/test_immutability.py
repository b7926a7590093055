"""A published release is immutable in the database itself (DESIGN section 8): raw SQL,
queryset updates and bulk deletes are refused by triggers, on SQLite and on PostgreSQL (run
this file with DATABASE_URL=postgres://... for the second)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection, transaction
from django.urls import reverse

from audits_app.models import OutOfBandAudit, Publication, SpotCheck, SpotCheckBatch
from baitbench_site.immutability import (
    FROZEN,
    GUARDS,
    KEPT,
    ONE_WAY,
    RECORDED,
    RELEASE_TABLE,
    STUDY_GUARDS,
    ImmutableError,
    guards_drop,
)
from runs_app.models import (
    Claim,
    Generation,
    JurorVerdict,
    LlmModel,
    Release,
    ReleaseStatus,
    TextScore,
)
from scenarios_app.models import Condition, Scenario, ScenarioVersion, Task
from scenarios_app.services import scenario_apply
from tests.kept import rows_counted
from tests.world import attempt, release_rows_create, scenario_version, user_create

# Reading studies' people are guarded by their session's completion, not by a release's
# publication (audits_app/calibration/studies/tests/test_guards.py).
UNDER_RELEASE = [guard for guard in GUARDS if not guard.always and guard.table != RELEASE_TABLE
                 and guard not in STUDY_GUARDS]
POSTGRESQL = connection.vendor == "postgresql"
# The tables a fresh database holds rows in: what migrations and their post_migrate fill.
MIGRATIONS_FILL = {"django_migrations", "django_content_type", "auth_permission", "auth_group",
                   "auth_group_permissions", "scenarios_app_task", "scenarios_app_condition"}


@pytest.fixture
def world(db):
    ann, bob = user_create("ann", "auditor"), user_create("bob", "auditor")
    version = scenario_version()
    return {
        "published": release_rows_create(code="pub.0", version=version, ann=ann, bob=bob,
                                         publish=True),
        "draft": release_rows_create(code="draft.0", version=version, ann=ann, bob=bob,
                                     publish=False),
        "version": version,
    }



def refused(call) -> str | None:
    """Run an ORM call in a savepoint: the ImmutableError's message, or None."""
    try:
        with transaction.atomic():
            call()
    except ImmutableError as refusal:
        return refusal.message
    return None


def copy_sql(table: str) -> str:
    """INSERT a copy of one row (without its id): what a bulk insert under a release does."""
    with connection.cursor() as cursor:
        columns = [column.name for column in
                   connection.introspection.get_table_description(cursor, table)
                   if column.name != "id"]
    names = ", ".join(connection.ops.quote_name(name) for name in columns)
    return f"INSERT INTO {table} ({names}) SELECT {names} FROM {table} WHERE id = %s"


def row_count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {table}")
        return cursor.fetchone()[0]


# --- raw SQL --------------------------------------------------------------------------------


# A ONE_WAY row may be updated where it may move: an update that changes what it may not.
ONE_WAY_CHANGES = {"audits_app_arenavote": "favourable = 'b'",
                   "runs_app_llmmodel": "openrouter_id = 'someone/else'",
                   "scenarios_app_task": "brief = 'Other words'",
                   "scenarios_app_condition": "overlay = 'Other words'"}


@pytest.mark.parametrize("guard", UNDER_RELEASE, ids=lambda guard: guard.table)
def test_raw_sql_cannot_add_change_or_delete_a_row_of_a_published_release(world, guard):
    row = world["published"].rows[guard.table]
    before = row_count(guard.table)

    reason = {FROZEN: "the row belongs to a published release",
              KEPT: "evidence about a published release is kept",
              RECORDED: "a record about a published release never changes (a change is a "
                        "new row)",
              ONE_WAY: "what a published release used does not change (a vote may only "
                       "become a shadow vote)"}[guard.mode]
    reason = guard.reason or reason
    change = ONE_WAY_CHANGES.get(guard.table, "id = id")
    for operation, sql in (("UPDATE", f"UPDATE {guard.table} SET {change} WHERE id = %s"),
                           ("DELETE", f"DELETE FROM {guard.table} WHERE id = %s")):
        message = attempt(sql, (row.pk,))
        if operation in guard.operations:
            assert message == f"{operation} of {guard.table} refused: {reason}", operation
        else:
            assert message is None, operation
    assert row_count(guard.table) == before
    if "INSERT" in guard.operations:
        assert attempt(copy_sql(guard.table), (row.pk,)) == (
            f"INSERT of {guard.table} refused: {reason}")
        assert row_count(guard.table) == before
    draft_row = world["draft"].rows.get(guard.table)  # none of the arena's: it opens later
    if draft_row is not None:
        assert attempt(f"UPDATE {guard.table} SET id = id WHERE id = %s",
                       (draft_row.pk,)) is None


def test_the_release_row_refuses_changes_from_the_moment_it_is_published(world):
    published, draft = world["published"].release, world["draft"].release
    refusal = "{} of runs_app_release refused: the release is published"
    assert attempt("UPDATE runs_app_release SET title = 'edited' WHERE id = %s",
                   (published.pk,)) == refusal.format("UPDATE")
    assert attempt("DELETE FROM runs_app_release WHERE id = %s",
                   (published.pk,)) == refusal.format("DELETE")
    assert refused(lambda: Release.objects.filter(pk=published.pk).update(title="edited"))

    # A release that is not published changes freely, and publishing is itself an UPDATE.
    assert attempt("UPDATE runs_app_release SET title = 'renamed' WHERE id = %s",
                   (draft.pk,)) is None
    Release.objects.filter(pk=draft.pk).update(status=ReleaseStatus.PUBLISHED)
    assert refused(lambda: Release.objects.filter(pk=draft.pk).update(
        status=ReleaseStatus.SCORED)) == refusal.format("UPDATE")
    assert Release.objects.get(pk=published.pk).title == "Release pub.0"


def test_a_publication_never_changes(world):
    publication = world["published"].rows["audits_app_publication"]
    for sql in ("UPDATE audits_app_publication SET snapshot_hash = 'x' WHERE id = %s",
                "DELETE FROM audits_app_publication WHERE id = %s"):
        assert "of audits_app_publication refused" in attempt(sql, (publication.pk,))
    assert Publication.objects.get(pk=publication.pk).snapshot_hash == "cd" * 32


def test_a_scenario_version_never_changes_and_an_edit_is_a_new_version(world):
    pinned = world["version"]
    document = pinned.document()
    edited = document.model_copy(update={"title": "Greenvale, edited"})
    scenario, outcome = scenario_apply(document=edited)
    assert outcome == "updated"
    scenario = Scenario.objects.select_related("current_version").get(pk=scenario.pk)
    unpinned = scenario.current_version
    assert unpinned.number == pinned.number + 1

    for version in (pinned, unpinned):  # pinned by a release or not: never changed
        assert "of scenarios_app_scenarioversion refused" in attempt(
            "UPDATE scenarios_app_scenarioversion SET content_hash = 'x' WHERE id = %s",
            (version.pk,))
        assert "of scenarios_app_scenarioversion refused" in attempt(
            "DELETE FROM scenarios_app_scenarioversion WHERE id = %s", (version.pk,))
        version.content = {**version.content, "title": "changed under its hash"}
        assert refused(version.save)
        assert refused(lambda v=version: ScenarioVersion.objects.filter(pk=v.pk).update(
            content={}))
        assert refused(lambda v=version: ScenarioVersion.objects.filter(pk=v.pk).delete())
    # Deleting a scenario nothing pins would still delete its versions.
    loose, _ = scenario_apply(document=document.model_copy(update={
        "slug": "greenvale-copy", "canary": "BAITBENCH-CANARY-0123abcd-0000-4000-8000-12345678"}))
    assert refused(loose.delete)
    assert ScenarioVersion.objects.filter(scenario=loose).count() == 1
    assert ScenarioVersion.objects.get(pk=pinned.pk).content["title"] == document.title


# --- queryset updates and bulk deletes (what the issue found) --------------------------------


def test_queryset_updates_under_a_published_release_are_refused(world):
    rows = world["published"].rows
    generation, claim = rows["runs_app_generation"], rows["runs_app_claim"]
    attempts = {
        "the public text": lambda: Generation.objects.filter(pk=generation.pk).update(
            text="rewritten"),
        "a jury label": lambda: Claim.objects.filter(pk=claim.pk).update(label="fabrication"),
        "a text score": lambda: TextScore.objects.filter(release=world["published"].release)
        .update(honesty_index=1.0),
        "a verdict": lambda: JurorVerdict.objects.filter(pk=rows["runs_app_jurorverdict"].pk)
        .update(claims_score=0.0),
        "a check": lambda: SpotCheck.objects.filter(release=world["published"].release)
        .update(note="edited"),
    }
    for what, call in attempts.items():
        assert refused(call), what

    assert Generation.objects.get(pk=generation.pk).text == generation.text
    assert Claim.objects.get(pk=claim.pk).label == "supported"
    assert TextScore.objects.get(release=world["published"].release).honesty_index == 0.5


def test_bulk_deletes_of_published_evidence_are_refused(world):
    published, draft = world["published"].release, world["draft"].release
    for model, rows in ((SpotCheckBatch, {"release": published}),
                        (SpotCheck, {"release": published, "status": "done"}),
                        (OutOfBandAudit, {"release": published})):
        before = model.objects.filter(**rows).count()
        assert refused(lambda m=model, r=rows: m.objects.filter(**r).delete()), model.__name__
        assert model.objects.filter(**rows).count() == before > 0

    # The same evidence of a release that is not published can still be removed.
    SpotCheckBatch.objects.filter(release=draft).delete()
    assert not SpotCheck.objects.filter(release=draft, item__isnull=False).exists()


@pytest.mark.skipif(not POSTGRESQL, reason="TRUNCATE is PostgreSQL's")
def test_truncate_of_a_table_holding_published_rows_is_refused(world):
    with connection.cursor() as cursor:  # the test's own deferred checks would block TRUNCATE
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for table in ("runs_app_textscore", "audits_app_spotcheckcorrection", RELEASE_TABLE,
                  "scenarios_app_scenarioversion"):
        message = attempt(f"TRUNCATE {table} CASCADE")
        assert message and message.startswith(f"TRUNCATE of {table} refused"), table


# --- the guards themselves ------------------------------------------------------------------


def installed_guards() -> set[str]:
    with connection.cursor() as cursor:
        if POSTGRESQL:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgname LIKE 'baitbench_guard_%'")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                           "AND name LIKE 'baitbench_guard_%'")
        return {name for (name,) in cursor.fetchall()}


def expected_guards() -> set[str]:
    if POSTGRESQL:
        return {name for guard in GUARDS for name in
                (f"baitbench_guard_{guard.table}", f"baitbench_guard_{guard.table}_truncate")}
    return {f"baitbench_guard_{guard.table}_{operation.lower()}" for guard in GUARDS
            for operation in guard.operations}


# Tables whose rows may be added and changed under a published release, each with its reason
# (the contamination check and the arena's evidence are in GUARDS: kept or recorded).
ADDED_AFTER_PUBLICATION: dict[str, str] = {
    "runs_app_drain": "queue bookkeeping: a drain task queued before publication still marks "
                      "itself finished when it starts after it (and does no work)",
    "runs_app_contaminationfinding": "findings of the contamination check (its probes are "
                                     "kept): computed again on each run, as new outputs come",
    "audits_app_arenavoter": "the arena's anonymous voters",
    "audits_app_arenashowing": "which pair a voter was shown",
    "audits_app_releaseimport": "a record of importing a published release's archive",
    "audits_app_importedtext": "texts of an imported archive",
    # A reading study runs on a published release and gathers people's answers afterwards,
    # as the arena does; none of it is part of the frozen snapshot.
    "audits_app_readingstudy": "a reading study of a published release: opened and closed "
                               "after publication",
    "audits_app_studystimulus": "the stimuli a study drew from the published texts",
    "audits_app_studyquota": "a study's places per reading position and arm, taken and given "
                             "back as people read",
    "audits_app_studyparticipant": "a study's participants, added as they come",
    "audits_app_studyreading": "a participant's answers on one stimulus",
}


def test_every_table_under_a_release_is_guarded(db):
    """A new model with rows under a release must be added to GUARDS, or listed in
    ADDED_AFTER_PUBLICATION with the reason its rows may change after publication."""
    release_model = apps.get_model("runs_app", "Release")
    under = {release_model}
    changed = True
    while changed:
        found = {model for model in apps.get_models() for field in model._meta.concrete_fields
                 if field.is_relation and field.related_model in under}
        changed = not found <= under
        under |= found
    guarded = {guard.table for guard in GUARDS} | set(ADDED_AFTER_PUBLICATION)
    assert {model._meta.db_table for model in under} <= guarded
    assert installed_guards() == expected_guards()


def test_migrate_restores_guards_that_a_table_rebuild_dropped(db):
    guards_drop(connection, ["runs_app"])
    assert not any("runs_app" in name for name in installed_guards())
    call_command("migrate", verbosity=0)
    assert installed_guards() == expected_guards()


@pytest.mark.django_db(transaction=True)
def test_the_test_runners_flush_empties_a_published_release_and_keeps_the_guards():
    ann, bob = user_create("ann", "auditor"), user_create("bob", "auditor")
    published = release_rows_create(code="pub.0", version=scenario_version(), ann=ann, bob=bob,
                                    publish=True)
    # As the test runner flushes (TransactionTestCase._fixture_teardown): on PostgreSQL this
    # deletes the rows rather than truncating the tables (conftest.postgres_flush_deletes).
    call_command("flush", interactive=False, verbosity=0, reset_sequences=False,
                 allow_cascade=False, inhibit_post_migrate=False)
    assert not Release.objects.exists() and not ScenarioVersion.objects.exists()
    # Every table is empty but those migrations fill.
    assert {table for table, count in rows_counted().items() if count} == MIGRATIONS_FILL
    assert installed_guards() == expected_guards()
    # The next test's published release is as protected as this one was.
    ann, bob = user_create("ann", "auditor"), user_create("bob", "auditor")
    published = release_rows_create(code="pub.1", version=scenario_version(), ann=ann, bob=bob,
                                     publish=True)
    assert refused(lambda: Generation.objects.filter(release=published.release).update(
        text="edited"))


def test_a_vote_on_a_published_release_may_only_become_a_shadow_vote(world):
    vote = world["published"].rows["audits_app_arenavote"]
    table = "audits_app_arenavote"
    refusal = ("UPDATE of audits_app_arenavote refused: what a published release used does "
               "not change (a vote may only become a shadow vote)")

    assert attempt(f"UPDATE {table} SET shadow = %s, shadow_reasons = %s WHERE id = %s",
                   (True, '["rate"]', vote.pk)) is None
    assert attempt(f"UPDATE {table} SET shadow = %s WHERE id = %s", (False, vote.pk)) == refusal
    for change in ("favourable = 'b'", "a_on_left = NOT a_on_left", "voter_id = voter_id + 1"):
        assert attempt(f"UPDATE {table} SET {change} WHERE id = %s", (vote.pk,)) == refusal


def test_a_model_a_published_release_used_keeps_its_id_family_and_name(world):
    model = world["published"].rows["runs_app_llmmodel"]
    refusal = ("UPDATE of runs_app_llmmodel refused: what a published release used does not "
               "change (a vote may only become a shadow vote)")
    for change in ("openrouter_id = 'someone/else'", "family = 'other'",
                   "display_name = 'Renamed'"):
        assert attempt(f"UPDATE runs_app_llmmodel SET {change} WHERE id = %s",
                       (model.pk,)) == refusal
    # A later release may still give it a role; a model no published release names changes.
    assert attempt("UPDATE runs_app_llmmodel SET can_judge = %s WHERE id = %s",
                   (True, model.pk)) is None
    unused = LlmModel.objects.create(openrouter_id="fixture/unused", family="u",
                                     display_name="Unused")
    assert attempt("UPDATE runs_app_llmmodel SET display_name = 'Renamed' WHERE id = %s",
                   (unused.pk,)) is None
    assert attempt("DELETE FROM runs_app_llmmodel WHERE id = %s", (model.pk,)) == (
        refusal.replace("UPDATE", "DELETE"))


def test_a_task_brief_a_release_ran_with_never_changes_and_an_edit_is_the_next_version(
    world, client
):
    """The world's releases are frozen with T1 in English, task_version 1 (the default)."""
    pinned = Task.objects.get(code="T1", language="en", version=1)
    words = pinned.brief
    refusal = ("UPDATE of scenarios_app_task refused: a release ran with this version, word "
               "for word: a change is a new version (and a release takes it by naming it)")
    assert attempt("UPDATE scenarios_app_task SET brief = 'Other words' WHERE id = %s",
                   (pinned.pk,)) == refusal
    assert attempt("DELETE FROM scenarios_app_task WHERE id = %s", (pinned.pk,)) == (
        refusal.replace("UPDATE", "DELETE"))
    unpinned = Task.objects.get(code="T3", language="en", version=1)
    assert attempt("UPDATE scenarios_app_task SET name = 'Post' WHERE id = %s",
                   (unpinned.pk,)) is None

    client.force_login(user_create("cora", "curator"))
    response = client.post(reverse("admin:scenarios_app_task_change", args=[pinned.pk]), {
        "code": "T1", "language": "en", "version": 1, "name": pinned.name,
        "brief": words + " Keep it short."}, follow=True)

    assert response.status_code == 200
    assert Task.objects.get(pk=pinned.pk).brief == words
    edited = Task.objects.get(code="T1", language="en", version=2)
    assert edited.brief == words + " Keep it short."
    assert any("your edit is version 2" in str(message) and "task_version: 2" in str(message)
               for message in response.context["messages"])


def test_an_overlay_a_release_ran_with_never_changes(world):
    pinned = Condition.objects.get(code="C2", language="en", version=1)
    assert "refused" in attempt("UPDATE scenarios_app_condition SET overlay = 'x' "
                                "WHERE id = %s", (pinned.pk,))
    unused = Condition.objects.get(code="C1", language="en", version=1)  # not in the world's
    assert attempt("UPDATE scenarios_app_condition SET name = 'Advocacy' WHERE id = %s",
                   (unused.pk,)) is None
