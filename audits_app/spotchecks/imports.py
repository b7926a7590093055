"""Out-of-band audits: verdicts recorded elsewhere (a worksheet, another tool) entered
afterwards from a CSV, each text's verdict a spot-check of its own."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Min
from django.utils import timezone

from audits_app import csv_files
from audits_app.models import (
    OutOfBandAudit,
    OutOfBandVerdict,
    SpotCheck,
)
from audits_app.spotchecks.selectors import JuryText, jury_texts
from audits_app.statistics import agreement
from audits_app.text_codes import text_code
from runs_app.models import Generation, Release, WorkStatus


@dataclass
class ImportResult:
    problems: list[str] = field(default_factory=list)
    rows: int = 0  # data rows imported
    checks: int = 0  # spot-checks created (out-of-band: one per text)
    replaced: int = 0  # reader results that replaced earlier answers
    skipped: int = 0  # blank rows, comment rows and rows left unfilled
    delimiter: str = ","
    audit: OutOfBandAudit | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def summary(self) -> str:
        """What was imported, in the words the review screens show."""
        if self.audit is not None:
            text = (f"Imported {self.rows} row(s) as {self.checks} spot-check(s) "
                    f"(import #{self.audit.pk}).")
        else:
            text = (f"Imported {self.rows} row(s): {self.rows - self.replaced} new, "
                    f"{self.replaced} replacing earlier answers.")
        if self.skipped:
            text += f" {self.skipped} blank, comment or unfilled row(s) skipped."
        if self.delimiter != ",":
            text += f" Read as {csv_files.DELIMITERS[self.delimiter]}-separated."
        return text


def refused_as_published(release: Release, result: ImportResult) -> bool:
    # DESIGN section 8: nothing is added under a published release (a correction is a new one).
    if release.is_published:
        result.problems.append(f"release {release.code} is published: nothing can be added")
    return release.is_published


AGREE_VALUES = {"agree": True, "yes": True, "true": True, "1": True,
                "disagree": False, "no": False, "false": False, "0": False, "": None}
# `text` takes the codes of the list of texts to audit (blind); `generation` takes ids, for
# files written by staff who know them. The worksheet's scenario, task, condition and quote
# columns are there for the auditor and are not read.
OOB_REQUIRED = ("claim",)
OOB_OPTIONAL = ("text", "generation", "label", "agree", "note")
OOB_INFORMATIONAL = ("scenario", "task", "condition", "quote")
UNFILLED = object()  # a worksheet row with no verdict written in


def _oob_text(row: csv_files.Row, texts: dict[int, JuryText], codes: dict[str, int],
              problem) -> JuryText | None:
    code, generation = row.cells.get("text", ""), row.cells.get("generation", "")
    if code:
        if code.lower() not in codes:
            problem("text", f"{code!r} is not a text of this release (see its list of texts "
                            "to audit)")
            return None
        named = codes[code.lower()]
        # Both columns filled must name one text: which one the verdict is on is not known.
        if generation and csv_files.whole_number(generation) != named:
            problem("generation", f"{generation!r} is not the text {code!r} names: give the "
                                  f"text code or the generation id, or both of one text")
            return None
        return texts[named]
    if not generation:
        problem("text", "required (a text code from the list of texts to audit)")
        return None
    number = csv_files.whole_number(generation)
    if number is None:
        problem("generation", f"{generation!r} is not a generation id"
                              f"{csv_files.digits_note(generation)}")
    elif number not in texts:
        problem("generation", f"generation {number} is not a scored text of this release")
    else:
        return texts[number]
    return None


def _parse_oob_row(row: csv_files.Row, texts: dict[int, JuryText], codes: dict[str, int],
                   problems: list[str]) -> dict | object | None:
    cells = row.cells

    def problem(column: str, message: str) -> None:
        problems.append(f"row {row.number}, column {column}: {message}")

    label, agree = cells.get("label", "").lower(), cells.get("agree", "").lower()
    if not (label or agree or cells.get("note")):
        return UNFILLED
    before = len(problems)
    text = _oob_text(row, texts, codes, problem)
    claim = cells["claim"].lower()
    position = None
    if claim != "overall":
        number = csv_files.whole_number(claim)
        if number is None or number < 1:
            problem("claim", f"{cells['claim']!r} is neither a claim position (1, 2, ...) nor "
                             f"'overall'{csv_files.digits_note(claim)}")
        elif text is not None and number > len(text.claims):
            problem("claim", f"the text has {len(text.claims)} jury claim(s), not {number}")
        else:
            position = number
    # A claim row holds the auditor's label of one claim, an overall row their agreement with
    # the jury on the whole text: a value in the other's column would be dropped, or stored
    # and never counted, so the row is refused instead.
    if claim == "overall" and label:
        problem("label", f"{cells['label']!r} on an overall row: labels go on the claim rows "
                         f"(1, 2, ...); an overall row takes agree or disagree")
    elif label and label not in agreement.LABELS:
        problem("label", f"{cells['label']!r} is not one of {', '.join(agreement.LABELS)}")
    elif claim != "overall" and not label:
        problem("label", "a claim row needs a label")
    if agree not in AGREE_VALUES:
        problem("agree", f"{cells['agree']!r} is not agree/disagree (yes/no)")
    elif claim != "overall" and agree:
        problem("agree", f"{cells['agree']!r} on a claim row: agree or disagree goes on the "
                         f"text's overall row; a claim row takes a label")
    elif claim == "overall" and AGREE_VALUES[agree] is None:
        problem("agree", "an overall row needs agree or disagree")
    if len(problems) > before:
        return None
    return {"generation": text.generation_id, "position": position, "label": label,
            "agree": AGREE_VALUES[agree], "note": cells.get("note", ""), "row": row.number}


# Time zones put an auditor's date up to a day either side of the server's (UTC+14 to UTC-12).
AUDITORS_DAY = dt.timedelta(days=1)


def audit_date_problem(release: Release, audited_on: dt.date) -> str:
    """Why an audit of the release's texts cannot have been done on this day ("" when it can):
    not after today, nor before the first of its texts was written. Its checks count toward
    the publication gate, so a date nobody could have audited on is refused, not kept. The
    auditor's day is their own: it may be a day ahead of the server's, or a day behind."""
    if audited_on > timezone.localdate() + AUDITORS_DAY:
        return f"{audited_on} is in the future: give the day the texts were audited"
    first = Generation.objects.filter(release=release, status=WorkStatus.DONE).aggregate(
        first=Min("finished_at"))["first"]
    if first is not None and audited_on < timezone.localdate(first) - AUDITORS_DAY:
        return (f"{audited_on} is before release {release.code}'s first text was written "
                f"({timezone.localdate(first)}): give the day the texts were audited")
    return ""


def _already_imported(audit: OutOfBandAudit) -> str:
    when = timezone.localtime(audit.imported_at).date().isoformat()
    who = (audit.imported_by.get_username() if audit.imported_by
           else audit.imported_by_name or "an unknown user")
    return (f"this file was already imported on {when} by {who} as import #{audit.pk}: "
            "nothing was imported again")


def _earlier_verdicts(release: Release, auditor_name: str, organisation: str) -> dict:
    """(generation, claim position) -> import number of the verdicts this auditor already
    gave: a grown worksheet imported again must not count its first rows twice."""
    rows = OutOfBandVerdict.objects.filter(
        audit__release=release, audit__auditor_name__iexact=auditor_name,
        audit__organisation__iexact=organisation,
    ).values_list("generation_id", "claim_position", "audit_id")
    return {(generation, position): audit for generation, position, audit in rows}


def _check_oob_rows(table: csv_files.Table, texts: dict[int, JuryText], codes: dict[str, int],
                    earlier: dict, result: ImportResult) -> list[dict]:
    parsed, seen = [], set()
    for row in table.rows:
        entry = _parse_oob_row(row, texts, codes, result.problems)
        if entry is UNFILLED:
            result.skipped += 1
            continue
        if entry is None:
            continue
        key = (entry["generation"], entry["position"])
        if key in seen:
            result.problems.append(f"row {row.number}, column claim: duplicate of an earlier "
                                   "row")
        elif key in earlier:
            result.problems.append(
                f"row {row.number}, column claim: this auditor's verdict on this claim was "
                f"imported before (import #{earlier[key]}); each verdict counts once, so leave "
                "the row out (to correct one, an administrator deletes that import before "
                "publication and the corrected file is imported again)")
        seen.add(key)
        parsed.append(entry)
    if not parsed and not result.problems:
        result.problems.append("no row holds a verdict (label, agree or note): nothing to "
                               "import")
    return parsed


def oob_audit_import(
    *, release: Release, auditor_name: str, organisation: str, audited_on: dt.date | None,
    method: str, csv_text: str, source_name: str = "", user=None,
) -> ImportResult:
    """Validate every row, then write all of them or none (one spot-check per text, flagged
    out-of-band; each row kept as an OutOfBandVerdict). The same rows are imported once."""
    result = ImportResult()
    if refused_as_published(release, result):
        return result
    for column, value in (("who", auditor_name), ("organisation", organisation),
                          ("date", audited_on), ("method", method)):
        if not value:
            result.problems.append(f"audit, field {column}: required")
    if audited_on and (problem := audit_date_problem(release, audited_on)):
        result.problems.append(f"audit, field date: {problem}")
    table, problems = csv_files.read_table(
        csv_text, required=OOB_REQUIRED, optional=OOB_OPTIONAL, informational=OOB_INFORMATIONAL,
        source=source_name or "file")
    result.problems += problems
    if table is None:
        return result
    result.delimiter, result.skipped = table.delimiter, table.skipped
    if "text" not in table.columns and "generation" not in table.columns:
        result.problems.append("row 1 (header): missing column(s) text (the text codes; a "
                               "generation column of ids is read too)")
        return result
    digest = table.content_hash()
    earlier_import = OutOfBandAudit.objects.filter(release=release, content_hash=digest).first()
    if earlier_import is not None:
        result.problems.append(_already_imported(earlier_import))
        return result
    texts = jury_texts(release)
    codes = {text_code(release.code, generation_id): generation_id for generation_id in texts}
    parsed = _check_oob_rows(table, texts, codes,
                             _earlier_verdicts(release, auditor_name, organisation), result)
    if result.problems:
        return result
    try:
        with transaction.atomic():
            result.audit = OutOfBandAudit.objects.create(
                release=release, auditor_name=auditor_name, organisation=organisation,
                audited_on=audited_on, method=method, source_name=source_name[:300],
                content_hash=digest, imported_by=user,
            )
            result.checks = _write_oob_checks(result.audit, parsed, texts)
    except IntegrityError:
        # The same file imported at the same moment by someone else: theirs counts.
        result.audit = None
        earlier_import = OutOfBandAudit.objects.filter(release=release,
                                                       content_hash=digest).first()
        if earlier_import is None:
            raise
        result.problems.append(_already_imported(earlier_import))
        return result
    result.rows = len(parsed)
    return result


def _write_oob_checks(audit: OutOfBandAudit, parsed: list[dict],
                      texts: dict[int, JuryText]) -> int:
    by_text: dict[int, list[dict]] = {}
    for entry in parsed:
        by_text.setdefault(entry["generation"], []).append(entry)
    for generation_id, entries in by_text.items():
        quotes = {claim.position: claim.quote for claim in texts[generation_id].claims}
        overall = next((entry for entry in entries if entry["position"] is None), None)
        check = SpotCheck.objects.create(
            release=audit.release, generation_id=generation_id, status=SpotCheck.Status.DONE,
            out_of_band=True, audit=audit, completed_at=timezone.now(),
            agrees_with_jury=overall["agree"] if overall else None,
            note="\n".join(entry["note"] for entry in entries if entry["note"]),
            claim_labels=[{"position": entry["position"], "quote": quotes[entry["position"]],
                           "label": entry["label"]}
                          for entry in sorted(entries, key=lambda e: e["position"] or 0)
                          if entry["position"] is not None],
        )
        OutOfBandVerdict.objects.bulk_create([
            OutOfBandVerdict(audit=audit, spot_check=check, row_number=entry["row"],
                             generation_id=generation_id, claim_position=entry["position"],
                             label=entry["label"], agrees_with_jury=entry["agree"],
                             note=entry["note"])
            for entry in entries
        ])
    return len(by_text)
