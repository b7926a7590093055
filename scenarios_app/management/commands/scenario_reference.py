"""`scenario_reference [--write]`: the scenario file reference, generated from the schema."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from scenarios_app.reference import REFERENCE_PATH, reference_path, scenario_file_reference


class Command(BaseCommand):
    help = (f"Print the scenario file reference generated from scenarios_app/schemas.py, or "
            f"write it to {REFERENCE_PATH} (--write) after changing the schema.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--write", action="store_true", help=f"write {REFERENCE_PATH}")

    def handle(self, *args, write: bool, **options) -> None:
        text = scenario_file_reference()
        if not write:
            self.stdout.write(text, ending="")
            return
        reference_path().write_text(text, encoding="utf-8")
        self.stdout.write(self.style.SUCCESS(f"wrote {REFERENCE_PATH}"))
