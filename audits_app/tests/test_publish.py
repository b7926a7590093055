"""Publishing a release: who may, when it is refused, the spot-check gate, and immutability after.

Built on the scored world of test_selectors (four fixture writers, four scenarios, C0-C3).
"""

from __future__ import annotations

import json
import types

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from audits_app.leaderboard.figures import release_statistics
from audits_app.models import Publication
from audits_app.publication import gate
from audits_app.publication.services import PublishError, release_publish, snapshot_hash
from audits_app.tests.stats_world import build_world
from runs_app.models import (
    Generation,
    GenerationAttempt,
    ImmutableError,
    Release,
    ReleaseStatus,
    TextScore,
)
from runs_app.stages import get_stage
from runs_app.stages.base import drain

OVERRIDE = "Spot-checks run by the partner lab next week; numbers are provisional."


def set_status(release: Release, status: str) -> Release:
    Release.objects.filter(pk=release.pk).update(status=status)
    release.refresh_from_db()
    return release


@pytest.fixture
def scored(scored_stats_release):
    """stats.0, every text generated and scored (`build_world`), its status scored."""
    return scored_stats_release


@pytest.fixture
def gated(imported_scenarios):
    """Like `scored`, but its gate asks for 20 % coverage and agreement 0.6."""
    from django.conf import settings

    from runs_app.schemas import ReleaseConfig
    from runs_app.services import release_config_from_file, release_create

    data = release_config_from_file(settings.RELEASES_DIR / "demo.0.yaml").model_dump()
    data.update(code="gated.0", scenarios=["greenvale-listeria", "cobaltcloud-breach"],
                tasks=["T1"], conditions=["C0", "C2"],
                bootstrap={"seed": 3, "resamples": 200, "level": 0.95},
                gate={"min_coverage": 0.2, "min_agreement": 0.6, "max_unscored_share": 0.2})
    release = release_create(config=ReleaseConfig.model_validate(data))
    build_world(release)
    return set_status(release, ReleaseStatus.SCORED)


def spotcheck_figures(monkeypatch, *, coverage: float, agreement: float | None, items: int):
    """Stand in for the spot-checks' `gate_figures`."""
    figures = types.SimpleNamespace(coverage=coverage, agreement=agreement, items=items)
    monkeypatch.setattr(gate, "gate_figures", lambda release: figures)


@pytest.fixture
def publisher(db):
    user = User.objects.create_user("pat", password="x", is_staff=True)
    user.groups.add(Group.objects.get(name="publisher"))
    return user


@pytest.fixture
def operator(db):
    user = User.objects.create_user("olga", password="x", is_staff=True)
    user.groups.add(Group.objects.get(name="operator"))
    return user


def publish_url(release: Release) -> str:
    return f"/releases/{release.code}/publish/"


# --- who may publish ------------------------------------------------------------------------


def test_it_forbids_non_publishers_on_get_and_post(client, scored, operator):
    client.force_login(operator)
    assert client.get(publish_url(scored)).status_code == 403
    assert client.post(publish_url(scored)).status_code == 403
    assert not Publication.objects.exists()
    assert Release.objects.get(pk=scored.pk).status == ReleaseStatus.SCORED


def test_it_sends_anonymous_visitors_to_log_in(client, scored):
    response = client.get(publish_url(scored))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_forbids_a_publisher_who_is_not_staff(client, scored, publisher):
    User.objects.filter(pk=publisher.pk).update(is_staff=False)
    client.force_login(publisher)
    assert client.get(publish_url(scored)).status_code == 403


def test_it_shows_what_will_be_frozen(client, scored, publisher):
    client.force_login(publisher)
    response = client.get(publish_url(scored))
    page = response.content.decode()
    assert response.status_code == 200
    assert scored.config_hash in page
    assert "Unscored jury verdicts" in page and "Failed cells" in page and "Refusals" in page
    assert "The gate is met." in page
    assert 'name="csrfmiddlewaretoken"' in page
    assert 'name="override_reason"' not in page  # the gate does not block


def test_a_publisher_publishes_from_the_web(client, scored, publisher):
    client.force_login(publisher)
    response = client.post(publish_url(scored))
    assert response.status_code == 302 and response["Location"] == f"/releases/{scored.code}/"
    publication = Publication.objects.get(release=scored)
    assert publication.published_by == publisher
    assert publication.config_hash == scored.config_hash
    assert publication.gate_override_reason == ""
    assert Release.objects.get(pk=scored.pk).status == ReleaseStatus.PUBLISHED


def test_the_publisher_role_holds_the_permission(publisher, operator):
    assert publisher.has_perm("audits_app.publish_release")
    assert not operator.has_perm("audits_app.publish_release")


# --- what is stored -------------------------------------------------------------------------


def test_the_snapshot_holds_the_statistics(scored, publisher):
    publication = release_publish(release=scored, user=publisher)
    snapshot = publication.snapshot
    json.dumps(snapshot, allow_nan=False)  # JSON-safe: NaN would raise
    assert publication.snapshot_hash == snapshot_hash(snapshot)
    fresh = release_statistics(scored)  # same seed, same data: the same figures
    for key in ("leaderboards", "per_condition", "c1_minus_c3", "c2_vs_c0", "versus_control",
                "versus_control_overall", "baseline_without_text", "refusal_rates", "control"):
        assert snapshot[key] == json.loads(json.dumps(fresh[key])), key
    assert snapshot["release"]["code"] == scored.code
    assert snapshot["counts"]["texts"] == 64 and len(snapshot["texts"]) == 64
    assert snapshot["gate"]["passed"] is True
    assert snapshot["method"] == {**snapshot["method"], "seed": 7, "resamples": 500,
                                  "level": 0.95, "rule": "paired"}
    # The scoring version the release pinned when it was created, by name and hash.
    name, digest = scored.config["scoring_version"].split("@")
    assert (snapshot["method"]["scoring_version"], snapshot["method"]["scoring_hash"]) == (
        name, digest)
    assert snapshot["method"]["juror_instruction_language"] == "en"
    # The chart's frame belongs to the release: its file's, full scales by default.
    assert snapshot["chart"] == {"honesty": [0.0, 1.0], "persuasion": [1.0, 7.0],
                                 "anchors": ["control", "human"]}


def test_the_snapshot_freezes_the_chart_frame_the_release_file_gives(scored, publisher):
    framed = {**scored.config, "chart": {"honesty": [0.3, 1.0], "persuasion": [2, 6],
                                         "anchors": ["control"]}}
    Release.objects.filter(pk=scored.pk).update(config=framed)
    publication = release_publish(release=Release.objects.get(pk=scored.pk), user=publisher)
    assert publication.snapshot["chart"] == {"honesty": [0.3, 1.0], "persuasion": [2.0, 6.0],
                                             "anchors": ["control"]}


# --- immutability ---------------------------------------------------------------------------


def test_everything_under_a_published_release_refuses_to_change(scored, publisher):
    publication = release_publish(release=scored, user=publisher)
    release = Release.objects.get(pk=scored.pk)
    release.title = "edited"
    with pytest.raises(ImmutableError):
        release.save()
    generation = Generation.objects.filter(release=release).first()
    generation.text = "rewritten"
    with pytest.raises(ImmutableError):
        generation.save()
    score = TextScore.objects.filter(release=release).first()
    score.honesty_index = 1.0
    with pytest.raises(ImmutableError):
        score.save()
    with pytest.raises(ImmutableError):
        score.delete()
    with pytest.raises(ImmutableError):  # nothing is added under it either
        Generation.objects.create(release=release, model=generation.model, task="T1",
                                  scenario_version=generation.scenario_version,
                                  condition="C0", variant=9)
    with pytest.raises(ImmutableError):
        GenerationAttempt.objects.create(generation=generation, number=99, outcome="ok")
    with pytest.raises(ImmutableError):
        drain(get_stage("generate"), release)
    publication.gate_override_reason = "changed my mind"
    with pytest.raises(ImmutableError):
        publication.save()
    with pytest.raises(ImmutableError):
        publication.delete()
    with pytest.raises(ImmutableError):
        Publication.objects.filter(pk=publication.pk).update(snapshot={})
    with pytest.raises(ImmutableError):
        Publication.objects.all().delete()
    stored = Publication.objects.get(pk=publication.pk)
    assert stored.snapshot_hash == snapshot_hash(stored.snapshot)
    assert TextScore.objects.get(pk=score.pk).honesty_index != 1.0


def test_publishing_twice_is_refused(client, scored, publisher):
    release_publish(release=scored, user=publisher)
    with pytest.raises(PublishError, match="already published"):
        release_publish(release=scored, user=publisher)
    client.force_login(publisher)
    response = client.post(publish_url(scored))
    assert response.status_code == 400 and "already published" in response.content.decode()
    assert Publication.objects.count() == 1


def test_a_published_releases_publish_page_says_so_first_and_offers_nothing(
        client, scored, publisher):
    """A tryout found it still reading as a draft after publishing: "What will be frozen",
    "will hold", then "Cannot publish yet: already published"."""
    release_publish(release=scored, user=publisher)
    client.force_login(publisher)
    page = client.get(publish_url(scored)).content.decode()
    assert f"<h1>Release {scored.code} is published</h1>" in page
    assert f"by {publisher.get_username()}" in page and scored.get_absolute_url() in page
    assert "What was frozen" in page and "holds " in page
    for draft_words in ("What will be frozen", "will hold", "Cannot publish yet",
                        f"Publish {scored.code}</button>"):
        assert draft_words not in page, draft_words


# --- when a release may be published --------------------------------------------------------


def test_a_draft_is_refused(stats_release, publisher):  # noqa: F811
    with pytest.raises(PublishError, match="draft"):
        release_publish(release=stats_release, user=publisher)
    assert not Publication.objects.exists()


def test_a_running_release_with_pending_work_is_refused(stats_release, publisher):  # noqa: F811
    build_world(stats_release)
    set_status(stats_release, ReleaseStatus.RUNNING)
    Generation.objects.filter(pk=Generation.objects.filter(release=stats_release)
                              .values("pk")[:1]).update(status="pending")
    with pytest.raises(PublishError, match="stage generate: 1 pending of 64 rows"):
        release_publish(release=stats_release, user=publisher)


@pytest.mark.parametrize("status", ["pending", "claimed", "failed"])
def test_a_scored_release_with_work_left_or_failed_is_refused_whatever_its_status(
        stats_release, publisher, status):  # noqa: F811
    build_world(stats_release)
    set_status(stats_release, ReleaseStatus.SCORED)
    Generation.objects.filter(pk=Generation.objects.filter(release=stats_release)
                              .values("pk")[:1]).update(status=status)
    with pytest.raises(PublishError, match=f"stage generate: 1 {status} of 64 rows"):
        release_publish(release=stats_release, user=publisher)
    assert not Release.objects.get(pk=stats_release.pk).is_published


def test_a_reader_above_the_unscored_limit_is_named_and_refused(
        stats_release, publisher):  # noqa: F811
    build_world(stats_release)  # one unscored reading in nine per scenario: 11.1 %
    config = stats_release.config | {"gate": stats_release.config["gate"]
                                     | {"max_unscored_share": 0.1}}
    Release.objects.filter(pk=stats_release.pk).update(config=config,
                                                       status=ReleaseStatus.SCORED)
    stats_release.refresh_from_db()
    with pytest.raises(PublishError, match=r"stage panel: reader fixture/reader has 4 of 36 "
                                           r"rows unscored \(11\.1%, above the release's limit "
                                           r"of 10\.0%"):
        release_publish(release=stats_release, user=publisher)


def test_a_running_release_with_no_work_left_is_published(stats_release, publisher):  # noqa: F811
    build_world(stats_release)
    set_status(stats_release, ReleaseStatus.RUNNING)
    release_publish(release=stats_release, user=publisher)
    assert Release.objects.get(pk=stats_release.pk).is_published


def test_a_release_without_scores_is_refused(stats_release, publisher):  # noqa: F811
    from runs_app.stages import get_stage
    from runs_app.stages.base import drain

    drain(get_stage("generate"), stats_release)
    set_status(stats_release, ReleaseStatus.SCORED)
    with pytest.raises(PublishError, match="no scored texts"):
        release_publish(release=stats_release, user=publisher)


# --- the spot-check gate --------------------------------------------------------------------


def test_the_gate_blocks_with_its_reasons(monkeypatch, gated, publisher):
    spotcheck_figures(monkeypatch, coverage=0.1, agreement=0.5, items=3)
    with pytest.raises(PublishError) as refusal:
        release_publish(release=gated, user=publisher)
    message = str(refusal.value)
    assert "coverage 10.0% is below the gate's 20.0%" in message
    assert "agreement 0.50 is below the gate's 0.60" in message
    assert not Publication.objects.exists()
    assert Release.objects.get(pk=gated.pk).status == ReleaseStatus.SCORED


def test_unknown_agreement_blocks_a_gate_that_asks_for_it(monkeypatch, gated, publisher):
    spotcheck_figures(monkeypatch, coverage=0.5, agreement=None, items=0)
    with pytest.raises(PublishError, match="agreement is not known yet"):
        release_publish(release=gated, user=publisher)


def test_a_met_gate_publishes_without_a_reason(monkeypatch, gated, publisher):
    spotcheck_figures(monkeypatch, coverage=0.25, agreement=0.8, items=12)
    publication = release_publish(release=gated, user=publisher)
    assert publication.gate_override_reason == ""
    assert publication.snapshot["gate"]["coverage"] == 0.25
    assert publication.snapshot["gate"]["passed"] is True


def test_an_override_reason_publishes_and_is_kept(monkeypatch, gated, publisher):
    spotcheck_figures(monkeypatch, coverage=0.1, agreement=0.5, items=3)
    publication = release_publish(release=gated, user=publisher, override_reason=OVERRIDE)
    assert publication.gate_override_reason == OVERRIDE
    assert publication.snapshot["gate"]["override_reason"] == OVERRIDE
    assert publication.snapshot["gate"]["passed"] is False


def test_a_blank_override_reason_does_not_count(monkeypatch, gated, publisher):
    spotcheck_figures(monkeypatch, coverage=0.1, agreement=0.5, items=3)
    with pytest.raises(PublishError, match="spot-check gate is not met"):
        release_publish(release=gated, user=publisher, override_reason="   ")


def test_the_web_form_asks_for_a_reason_when_the_gate_blocks(monkeypatch, client, gated,
                                                            publisher):
    spotcheck_figures(monkeypatch, coverage=0.1, agreement=0.5, items=3)
    client.force_login(publisher)
    page = client.get(publish_url(gated)).content.decode()
    assert 'name="override_reason"' in page and "The gate is not met" in page
    refused = client.post(publish_url(gated), {"override_reason": ""})
    assert refused.status_code == 400 and "gate is not met" in refused.content.decode()
    published = client.post(publish_url(gated), {"override_reason": OVERRIDE})
    assert published.status_code == 302
    assert Publication.objects.get(release=gated).gate_override_reason == OVERRIDE


def test_the_command_publishes(capsys, monkeypatch, gated, publisher):
    spotcheck_figures(monkeypatch, coverage=0.1, agreement=0.5, items=3)
    with pytest.raises(CommandError, match="gate is not met"):
        call_command("publish_release", gated.code, user="pat")
    call_command("publish_release", gated.code, user="pat", override_reason=OVERRIDE)
    publication = Publication.objects.get(release=gated)
    assert publication.published_by == publisher
    assert publication.gate_override_reason == OVERRIDE
    assert f"published {gated.code}" in capsys.readouterr().out


def test_the_command_refuses_users_who_may_not_publish(scored, operator):
    with pytest.raises(CommandError, match="may not publish"):
        call_command("publish_release", scored.code, user="olga")
    with pytest.raises(CommandError, match="no user"):
        call_command("publish_release", scored.code, user="nobody")
    with pytest.raises(CommandError, match="no release"):
        call_command("publish_release", "nope.0")
    assert not Publication.objects.exists()
