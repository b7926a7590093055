"""The demo's reading study: opened on a *simulated* approval and filled by a *simulated*
crowd (`simulation`), like the demo's arena. Nothing here runs outside `manage.py demo`, and
running it again adds nobody once the study has its readers."""

from __future__ import annotations

from django.core.files.base import ContentFile
from django.utils import timezone

from audits_app.arena.demo import DEMO_BODY, demo_letter
from audits_app.arena.services import ethics_review_record
from audits_app.calibration.studies import services
from audits_app.calibration.studies.selectors import study_progress
from audits_app.calibration.studies.simulation import simulated_crowd
from audits_app.models import EthicsReview, ReadingStudy
from audits_app.pages.viewer import load_snapshot
from runs_app.models import Release

DEMO_TITLE = "Demo reading study (simulated readers)"
# Two per position keeps the demo's added time near half a minute; the figure then needs 18
# of the 24 to be included (about one in ten simulated readers is excluded on purpose).
READERS_PER_POSITION = 2
READERS_FOR_FIGURE = 18


def demo_study(*, release: Release, user) -> str:
    study = ReadingStudy.objects.filter(release=release, title=DEMO_TITLE).first()
    if study is None:
        scenarios = sorted({t.scenario for t in services.study_texts(load_snapshot(
            release.publication))})[:2]
        if not scenarios:  # a demo database published before releases held cells for studies
            return (f"No demo reading study: {release.code} holds no texts for reading "
                    f"studies (`reading_studies.held_share` in its file).")
        study = services.study_create(release=release, user=user, plan=services.StudyPlan(
            title=DEMO_TITLE, scenarios=scenarios, seed=release.parsed_config().bootstrap.seed,
            readers_per_position=READERS_PER_POSITION, min_seconds_on_text=15.0,
            readers_for_figure=READERS_FOR_FIGURE))
    if not EthicsReview.objects.filter(study=study).exists():
        ethics_review_record(
            release=release, user=user, reviewing_body=DEMO_BODY, reference="DEMO-STUDY-0",
            decided_on=timezone.localdate(), decision=EthicsReview.Decision.APPROVED,
            document=ContentFile(demo_letter(), name="demo-study-approval.pdf"), study=study,
            note="Demo only: no ethics body reviewed this study. The approval is simulated.")
    if study.status == ReadingStudy.Status.DRAFT:
        study = services.study_open(study=study, user=user)
    wanted = READERS_PER_POSITION * study.quotas.count()
    done = study.participants.filter(simulated=True).count()
    if done < wanted:
        simulated_crowd(study, wanted - done)
    return study_report(study, simulated=True)


def study_report(study: ReadingStudy, *, simulated: bool) -> str:
    """Counts per reading position and arm, the exclusions, and whether the figure shows."""
    progress = study_progress(study, simulated=simulated)
    mark = "SIMULATED readers (not people)" if simulated else "people"
    lines = [f"Reading study {study.pk} on {study.release.code} ({study.get_status_display()}), "
             f"{mark}: {progress['participants']} took part, {progress['included']} included",
             "  excluded or turned away: " + (", ".join(
                 f"{reason} {count}" for reason, count in sorted(progress["reasons"].items()))
                 or "none"),
             "  position  target  started  completed  excluded"]
    lines += [f"  {row['position']:<8}  {row['target']:>6}  {row.get('started', 0):>7}  "
              f"{row.get('completed', 0):>9}  {row.get('excluded', 0):>8}"
              for row in progress["positions"]]
    lines.append("  arm                         started  completed  excluded")
    lines += [f"  {row['arm']:<26}  {row.get('started', 0):>7}  {row.get('completed', 0):>9}  "
              f"{row.get('excluded', 0):>8}" for row in progress["arms"]]
    lines.append(f"  reader's path: /studies/{study.pk}/")
    return "\n".join(lines)
