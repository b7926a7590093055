from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scenarios_app.models import Scenario
from scenarios_app.services import scenarios_export


class Command(BaseCommand):
    help = "Write each scenario's current version as OUT/<slug>.yaml; they import back unchanged."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--out", required=True, help="folder to write into")
        parser.add_argument("slugs", nargs="*", help="only these scenarios (default: all)")

    def handle(self, *args, out: str, slugs: list[str], **options) -> None:
        out_dir = Path(out)
        if out_dir.exists() and not out_dir.is_dir():
            raise CommandError(f"--out {out}: is a file, not a folder to write the scenarios into")
        known = set(Scenario.objects.values_list("slug", flat=True))
        unknown = sorted(set(slugs) - known)
        if unknown:
            raise CommandError(f"no scenario {', '.join(map(repr, unknown))}; there are: "
                               f"{', '.join(sorted(known)) or 'none (import_scenarios first)'}")
        try:
            written = scenarios_export(out_dir=out_dir, slugs=slugs or None)
        except OSError as error:
            raise CommandError(f"--out {out}: cannot be written ({error.strerror})") from None
        self.stdout.write(f"exported {len(written)} scenario(s) to {out}")
