"""Human reader results collected elsewhere, imported from a CSV (the calibration figure's
people), one row per reader and stimulus."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from audits_app import csv_files
from audits_app.models import (
    HumanReaderResult,
)
from audits_app.spotchecks.imports import ImportResult, refused_as_published
from runs_app.models import Generation, Release, WorkStatus

READER_COLUMNS = ("scenario", "stimulus", "reader", "a1", "a2", "a3", "k1", "k2", "k3", "k4")
DONT_KNOW = {"", "dk", "don't know", "dont know", "?"}
READER_NAME_LENGTH = HumanReaderResult._meta.get_field("reader").max_length


def _reader_stimulus(row: csv_files.Row, generations: dict[int, str], unwritten: set[int],
                     problem) -> int | None:
    """The generation id a stimulus names, or None for none/control/H1/H2."""
    slug, stimulus = row.cells["scenario"], row.cells["stimulus"]
    if stimulus in ("none", "control", "H1", "H2"):
        return None
    generation_id = csv_files.whole_number(stimulus)
    if generation_id is None:
        problem("stimulus", f"{stimulus!r}: use none, control, H1, H2 or a generation id"
                            f"{csv_files.digits_note(stimulus)}")
    elif generations.get(generation_id) != slug:
        problem("stimulus", f"generation {generation_id} is not a text of scenario {slug!r}")
    elif generation_id in unwritten:
        # Answers to a text that does not exist would be calibrated against nothing.
        problem("stimulus", f"generation {generation_id} has no text (its writing failed or "
                            f"never ran): a reader cannot have read it")
    return generation_id


def _parse_reader_row(row: csv_files.Row, options: dict[str, list[int]],
                      generations: dict[int, str], unwritten: set[int],
                      problems: list[str]) -> dict | None:
    cells = row.cells

    def problem(column: str, message: str) -> None:
        problems.append(f"row {row.number}, column {column}: {message}")

    before = len(problems)
    slug = cells["scenario"]
    if slug not in options:
        problem("scenario", f"{slug!r} is not a scenario of this release")
    generation_id = _reader_stimulus(row, generations, unwritten, problem)
    if not cells["reader"]:
        problem("reader", "required")
    elif len(cells["reader"]) > READER_NAME_LENGTH:
        problem("reader", f"longer than {READER_NAME_LENGTH} characters")
    attitude = []
    for column in ("a1", "a2", "a3"):
        value = csv_files.whole_number(cells[column])
        if value is None or not 1 <= value <= 7:
            problem(column.upper(), f"{cells[column]!r} is not an answer 1-7"
                                    f"{csv_files.digits_note(cells[column])}")
        else:
            attitude.append(value)
    knowledge: list[int | None] = []
    # Without a known scenario its questions' options are unknown: only the form is checked.
    counts = options.get(slug) or [None] * 4
    for column, count in zip(("k1", "k2", "k3", "k4"), counts, strict=False):
        text = cells[column].lower()
        value = csv_files.whole_number(text)
        if text in DONT_KNOW:
            knowledge.append(None)
        elif value is not None and (count is None or value < count):
            knowledge.append(value)
        elif value is not None:
            problem(column.upper(), f"option {value} is outside the {count} options (0-based)")
        else:
            problem(column.upper(), f"{cells[column]!r} is not an option index or 'dk'"
                                    f"{csv_files.digits_note(text)}")
    if len(problems) > before:
        return None
    return {"scenario_slug": slug, "stimulus": cells["stimulus"], "generation_id": generation_id,
            "reader": cells["reader"], "attitude": attitude, "knowledge": knowledge,
            "row": row.number}


def human_readers_import(*, release: Release, csv_text: str,
                         source_name: str = "") -> ImportResult:
    """Human reader results for calibration; validated row by row, all or nothing. A reader's
    answers to the same stimulus are replaced on re-import (so nothing counts twice)."""
    result = ImportResult()
    if refused_as_published(release, result):
        return result
    parsed = human_readers_read(release=release, csv_text=csv_text, source_name=source_name,
                                result=result)
    if result.problems:
        return result
    with transaction.atomic():
        for entry in parsed:
            _, created = HumanReaderResult.objects.update_or_create(
                release=release, scenario_slug=entry["scenario_slug"],
                stimulus=entry["stimulus"], reader=entry["reader"],
                defaults={"generation_id": entry["generation_id"], "attitude": entry["attitude"],
                          "knowledge": entry["knowledge"]},
            )
            result.replaced += not created
    result.rows = len(parsed)
    return result


def human_readers_read(*, release: Release, csv_text: str, source_name: str = "",
                       result: ImportResult) -> list[dict]:
    """The file's rows checked against the release, as the import would write them; the
    problems go to `result`. Writes nothing, so a reading study's CSV (DESIGN section 10) can
    be checked against the import on a published release too."""
    table, problems = csv_files.read_table(csv_text, required=READER_COLUMNS,
                                           source=source_name or "file")
    result.problems += problems
    if table is None:
        return []
    result.delimiter, result.skipped = table.delimiter, table.skipped
    generations = dict(Generation.objects.filter(release=release)
                       .values_list("pk", "scenario_version__scenario__slug"))
    unwritten = set(Generation.objects.filter(release=release).filter(
        ~Q(status=WorkStatus.DONE) | Q(text="")).values_list("pk", flat=True))
    options = {  # per scenario, the number of options of each knowledge question
        pin.scenario_version.scenario.slug:
            [len(question["options"]) for question in
             pin.scenario_version.content["knowledge_questions"]]
        for pin in release.pins.select_related("scenario_version__scenario")
    }
    parsed = [entry for row in table.rows
              if (entry := _parse_reader_row(row, options, generations, unwritten,
                                             result.problems)) is not None]
    first_row: dict[tuple, int] = {}
    for entry in parsed:
        key = (entry["scenario_slug"], entry["stimulus"], entry["reader"])
        if key in first_row:
            result.problems.append(f"row {entry['row']}: reader {entry['reader']!r} answers "
                                   f"{entry['stimulus']!r} again (first on row {first_row[key]})")
        first_row.setdefault(key, entry["row"])
    return parsed
