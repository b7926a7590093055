from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from baitbench_site import command_args
from runs_app.contamination_services import CheckReport, contamination_check_run
from runs_app.models import Release


class Command(BaseCommand):
    help = ("Probe every model of a release (writers, jurors, reader, journalist) with each "
            "scenario's canary prefix and its title and organisation, then scan every stored "
            "output of every release for the scenarios' canaries and long verbatim overlaps "
            "with parts of the files no writer is shown. Prints the findings. A probe with a "
            "reply is never asked again; the scan is redone on every run.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("code", type=command_args.text)
        parser.add_argument("--concurrency", type=int, help="calls in flight (default: settings)")

    def handle(self, *args, code: str, concurrency: int | None, **options) -> None:
        release = Release.objects.filter(code=code).first()
        if release is None:
            raise CommandError(f"no release {code!r} in the database (run it first)")
        report = contamination_check_run(release=release, concurrency=concurrency)
        write_report(self.stdout, report)


def write_report(stdout, report: CheckReport) -> None:
    probes = report.check.probes.count()
    stdout.write(f"contamination check of {report.check.release.code}: {probes} probes "
                 f"({report.probes_made} made now, {report.probes_failed} failed, "
                 f"{report.probes_waiting} waiting for the provider), "
                 f"{report.outputs_scanned} stored outputs scanned, "
                 f"{len(report.findings)} findings")
    for finding in report.findings:
        where = f" in {finding.source_release}" if finding.source_release else ""
        stdout.write(f"  {finding.get_kind_display()}: {finding.model} on "
                     f"{finding.scenario.slug} ({finding.source}{where})\n"
                     f"    {finding.evidence[:160]}")
    contaminated = sorted({(f.model, f.scenario.slug) for f in report.findings
                           if f.marks_contaminated})
    stdout.write("contaminated (model, scenario): "
                 + (", ".join(f"{m} on {s}" for m, s in contaminated) or "none"))
