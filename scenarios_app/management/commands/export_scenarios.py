from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from scenarios_app.services import scenarios_export


class Command(BaseCommand):
    help = "Write each scenario's current version as OUT/<slug>.yaml; they import back unchanged."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--out", required=True, help="folder to write into")
        parser.add_argument("slugs", nargs="*", help="only these scenarios (default: all)")

    def handle(self, *args, out: str, slugs: list[str], **options) -> None:
        written = scenarios_export(out_dir=Path(out), slugs=slugs or None)
        self.stdout.write(f"exported {len(written)} scenario(s) to {out}")
