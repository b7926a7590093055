"""`verify_release`: a published release checked from its stored rows, and every kind of
change underneath it named, even one made with the triggers out of the way."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection

from audits_app.archive.export import release_archive
from audits_app.archive.load import release_import
from audits_app.arena.tests.conftest import HELD_OUT, PUBLIC, published_arena_release
from audits_app.models import Publication
from audits_app.tests.archives import forge, recoded, rezip
from audits_app.verification import release_verify
from baitbench_site import immutability
from runs_app.models import Generation, LlmModel, Release, TextScore, WorkStatus
from scenarios_app.services import scenarios_import

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(settings):
    imported = scenarios_import(paths=[str(settings.SCENARIOS_DIR / f"{slug}.yaml")
                                       for slug in [*PUBLIC, HELD_OUT]])
    assert imported.ok, imported.problems
    # Half its cells held for an arena: the public archive is the one without their texts.
    return published_arena_release("verify.0", held_share=0.5)


def behind_the_triggers(sql: str, params: tuple = ()) -> None:
    """What the role that owns the tables can do: take the triggers away, change a row."""
    immutability.guards_drop(connection)
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
    finally:
        immutability.guards_install(connection)


def test_an_untouched_release_verifies(release, capsys):
    result = release_verify(release=release)
    assert result.ok, result.differences
    call_command("verify_release", "verify.0")
    assert "verify.0: unchanged (snapshot hash" in capsys.readouterr().out


def test_a_rewritten_snapshot_is_caught_by_its_hash(release):
    publication = Publication.objects.get(release=release)
    snapshot = publication.snapshot
    snapshot["release"]["title"] = "Something else"
    behind_the_triggers("UPDATE audits_app_publication SET snapshot = %s WHERE id = %s",
                        (json.dumps(snapshot), publication.pk))
    differences = release_verify(release=release).differences
    assert any(line.startswith("snapshot: stored hash") for line in differences), differences
    assert "snapshot release.title: the stored value is not what the rows give" in differences


def test_a_snapshot_rewritten_out_of_shape_is_named_where(release):
    publication = Publication.objects.get(release=release)
    snapshot = publication.snapshot
    snapshot["leaderboards"]["honesty"]["rows"][0]["point"] = True
    behind_the_triggers("UPDATE audits_app_publication SET snapshot = %s WHERE id = %s",
                        (json.dumps(snapshot), publication.pk))
    differences = release_verify(release=release).differences
    assert "snapshot.leaderboards.honesty.rows.0.point: Input should be a valid number" \
        in differences


def test_a_changed_score_is_caught_by_recomputing_the_figures(release, capsys):
    score = TextScore.objects.filter(release=release, honesty_index__isnull=False).first()
    behind_the_triggers("UPDATE runs_app_textscore SET honesty_index = %s WHERE id = %s",
                        (1.0 - score.honesty_index, score.pk))
    differences = release_verify(release=release).differences
    assert differences and all(line.startswith("snapshot") for line in differences)
    assert any("leaderboards.honesty" in line or "texts[" in line for line in differences)
    with pytest.raises(SystemExit) as exit_code:
        call_command("verify_release", "verify.0")
    assert exit_code.value.code == 1
    assert "verify.0: snapshot " in capsys.readouterr().err


def test_a_renamed_model_is_caught_in_the_archives(release):
    model = LlmModel.objects.get(openrouter_id="fixture/spinner")
    behind_the_triggers("UPDATE runs_app_llmmodel SET openrouter_id = %s WHERE id = %s",
                        ("someone/else", model.pk))
    differences = release_verify(release=release).differences
    for kind in ("public", "staff"):
        assert any(line.startswith(f"{kind} archive texts.jsonl line ")
                   and "model 'someone/else' is not a model of config.json" in line
                   for line in differences), differences


def test_a_text_another_model_wrote_is_named_as_a_warning(release, capsys):
    """As the publish page warned of it: the publication still is what was published."""
    text = Generation.objects.filter(release=release, status=WorkStatus.DONE).first()
    behind_the_triggers("UPDATE runs_app_generation SET served_model = %s WHERE id = %s",
                        ("someone/else", text.pk))
    result = release_verify(release=release)
    writer = text.model.openrouter_id
    assert result.ok
    assert result.warnings == [
        f"attribution: writer {writer}: 1 of "
        f"{Generation.objects.filter(release=release, model=text.model, status='done').count()} "
        f"texts were served by another model (someone/else (1); texts {text.pk}): published, "
        f"they would be attributed to {writer}"]
    call_command("verify_release", "verify.0")
    out = capsys.readouterr().out
    assert "verify.0: warning: attribution: writer " in out and "verify.0: unchanged" in out


def test_a_kept_archive_changed_underneath_is_caught(release):
    from audits_app.archive.export import release_archive_kept

    kept = release_archive_kept(release, staff=False)
    assert release_verify(release=release).ok
    behind_the_triggers("UPDATE audits_app_releasearchive SET data = %s WHERE id = %s",
                        (bytes(kept.data) + b"x", kept.pk))
    differences = release_verify(release=release).differences
    assert any(line.startswith("kept public archive: its bytes hash to ")
               for line in differences), differences


def public_copy(release, **changes) -> Release:
    """The release's public archive under another code, imported here with `changes` made to
    its snapshot and the manifest recomputed: unverified, as any unsigned archive."""
    files = recoded(release_archive(release, staff=False), "copy.0")
    snapshot = json.loads(files["snapshot.json"])
    for change in changes.values():
        change(snapshot)
    release_import(data=forge(rezip(files), snapshot_dot_json=json.dumps(snapshot).encode()),
                   source="copy.zip")
    return Release.objects.get(code="copy.0")


def test_a_public_import_is_not_verified_though_nothing_it_holds_differs(release, capsys):
    copy = public_copy(release)
    verified = release_verify(release=copy)
    assert verified.ok and not verified.verified
    with pytest.raises(SystemExit) as exited:
        call_command("verify_release", "copy.0")
    said = capsys.readouterr().out
    assert exited.value.code == 2 and "unchanged" not in said
    assert ("copy.0: NOT VERIFIED: 4 checks could not be made (above); no difference in what "
            "could be checked (snapshot schema, texts recomputed from the rows, refusal rates "
            "within their intervals, public archive)") in said
    assert ("copy.0: not verified: figures: not recomputed: release imported from a public "
            "archive, which lacks the rows the public may not see (texts held for the arena or "
            "reading studies, held-out scenarios)") in said


def test_a_tampered_public_archive_is_never_said_to_be_unchanged(release, capsys):
    """A public archive's snapshot rewritten, its manifest recomputed, imports unverified as
    designed; verifying it printed "unchanged" and exited 0. What its rows allow is checked
    (each text's scores; a refusal rate's point, around which its interval is built), and
    the rest is named as not verified."""
    def refusal(snapshot):
        snapshot["refusal_rates"][0].update(point=0.999, low=0.0, high=0.0)

    def score(snapshot):
        snapshot["texts"][0]["honesty_index"] = 99.0

    copy = public_copy(release, refusal=refusal, score=score)
    with pytest.raises(SystemExit) as exited:
        call_command("verify_release", "copy.0")
    said = capsys.readouterr()
    assert exited.value.code == 1
    assert "unchanged" not in said.out + said.err
    text_id = copy.publication.snapshot["texts"][0]["id"]
    assert said.err.splitlines() == [
        f"copy.0: snapshot texts: text {text_id}: honesty_index: the stored value is not what "
        f"the rows give",
        "copy.0: snapshot refusal_rates[0] (fixture/candid): the point 0.999 is outside its "
        "own interval 0.0 to 0.0"]
    assert ("copy.0: not verified: figures: not recomputed: release imported from a public "
            "archive") in said.out
