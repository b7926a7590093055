"""A published release with every kind of audit record, for the tests that carry them in an
archive: a seeded batch coded blind by two (simulated) auditors, one check corrected after the
reveal, an out-of-band audit, and human reader results the calibration figure uses."""

from __future__ import annotations

from django.utils.timezone import localdate

from audits_app.calibration.readers_import import human_readers_import
from audits_app.models import SpotCheck
from audits_app.spotchecks.demo import demo_auditors, demo_spotchecks
from audits_app.spotchecks.imports import oob_audit_import
from audits_app.spotchecks.selectors import jury_texts
from audits_app.spotchecks.services import spotcheck_correct
from audits_app.tests.archives import PUBLIC
from runs_app.models import Generation, ReaderResponse, Release, ReplyOutcome, WorkStatus

CODE = "aud.0"
OOB_NOTE = "Read twice by the workshop."


def audit_records_add(release: Release) -> None:
    """Every kind of audit record on the release, which is not published yet."""
    assert demo_spotchecks(release=release, size=10) > 0
    auditors = {user.pk: user for user in demo_auditors()}
    check = SpotCheck.objects.filter(release=release, status=SpotCheck.Status.DONE).exclude(
        claim_labels=[]).order_by("pk").first()
    labels = check.label_by_position()
    first = min(labels)
    labels[first] = "fabrication" if labels[first] != "fabrication" else "supported"
    spotcheck_correct(check=check, user=auditors[check.auditor_id], claim_labels=labels,
                      facts_conveyed=check.facts_conveyed, techniques=check.techniques,
                      agrees_with_jury=False, note=check.note,
                      reason="Misread the first claim before the reveal.")
    checked = set(SpotCheck.objects.filter(release=release).values_list("generation_id",
                                                                          flat=True))
    unchecked = [text for pk, text in sorted(jury_texts(release).items())
                 if pk not in checked and text.claims][:2]
    rows = ["generation,claim,label,agree,note"]
    for text in unchecked:
        rows.append(f"{text.generation_id},1,{text.claims[0].label},,")
        rows.append(f"{text.generation_id},overall,,yes,{OOB_NOTE}")
    result = oob_audit_import(release=release, auditor_name="R. Vos", organisation="Fact Lab",
                              audited_on=localdate(), method="Two readers, consensus",
                              csv_text="\n".join(rows) + "\n", source_name="workshop.csv")
    assert result.ok, result.problems
    _human_readers_add(release)


def _human_readers_add(release: Release) -> None:
    """Two people on two texts of each writer the simulated public read (so the calibration
    figure is drawn from them), and one answer without a text."""
    read = ReaderResponse.objects.filter(
        release=release, generation__isnull=False, status=WorkStatus.DONE,
        outcome=ReplyOutcome.SCORED).values_list("generation_id", flat=True).distinct()
    by_writer: dict[str, list[Generation]] = {}
    for generation in Generation.objects.filter(pk__in=read).select_related(
            "model", "scenario_version__scenario").order_by("pk"):
        by_writer.setdefault(generation.model.openrouter_id, []).append(generation)
    assert len(by_writer) >= 2, by_writer
    lines = ["scenario,stimulus,reader,A1,A2,A3,K1,K2,K3,K4"]
    for lean, (_, generations) in enumerate(sorted(by_writer.items()), start=2):
        for generation in generations[:2]:
            for number, reader in enumerate(("p1", "p2")):
                answers = [lean + number, lean, lean + 1, number, "dk", 0, 1]
                lines.append(f"{generation.scenario_version.scenario.slug},{generation.pk},"
                             f"{reader},{','.join(map(str, answers))}")
    lines.append(f"{PUBLIC},none,p1,4,4,4,0,0,dk,1")
    result = human_readers_import(release=release, csv_text="\n".join(lines) + "\n")
    assert result.ok, result.problems


def audited_create() -> Release:
    from audits_app.tests.conftest import published_create

    return published_create(CODE, before_publishing=audit_records_add)
