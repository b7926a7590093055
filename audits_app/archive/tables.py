"""The rows an archive carries, one table per file: which fields, which of them only staff get,
and how a cell is written so that it reads back exactly. Export and import share these lists,
so a field is either carried both ways or not at all."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from audits_app.csv_files import PLAIN_NUMBER
from audits_app.models import (
    HumanReaderResult,
    OutOfBandAudit,
    OutOfBandVerdict,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckCorrection,
    SpotCheckItem,
)
from runs_app.models import (
    AgentRun,
    CrossExamTurn,
    Generation,
    JurorVerdict,
    ReaderResponse,
    RefusalCheck,
    TextScore,
)

WORK = ("status", "attempts", "error", "finished_at")
USAGE = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cost_usd")
# Withheld from a public archive in every table that has them.
STAFF_ONLY = ("prompt", "raw_replies")


@dataclass(frozen=True)
class Table:
    file: str
    model: type
    fields: tuple[str, ...]  # model fields copied as they are
    staff_fields: tuple[str, ...] = ()

    def columns(self, *, staff: bool) -> tuple[str, ...]:
        return self.fields + (self.staff_fields if staff else ())


# Each row also carries `id` (its id in the exporting instance) and its references by name:
# `text` (the generation's id there), `model`/`juror`/`judge` (model ids), `scenario` (slug).
TEXTS = Table("texts.jsonl", Generation, (
    "task", "condition", "variant", "text", "finish_reason", "prompt_hash", "upstream_provider",
    "provider_generation_id", "latency_ms", *WORK, *USAGE), ("prompt",))
REFUSALS = Table("refusals.jsonl", RefusalCheck, (
    "verdict", "reason", "outcome", *WORK, *USAGE), ("raw_replies",))
VERDICTS = Table("verdicts.jsonl", JurorVerdict, (
    "seat", "outcome", "facts_conveyed", "confidential_disclosed", "techniques",
    "claims_score", "omission_score", "knowledge_harm_score", *WORK, *USAGE), ("raw_replies",))
READERS = Table("reader_responses.jsonl", ReaderResponse, (
    "stimulus", "stimulus_key", "position", "outcome", "attitude", "knowledge", *WORK, *USAGE),
    ("raw_replies",))
TRANSCRIPTS = Table("transcripts.jsonl", AgentRun, (
    "kind", "position", "outcome", "transcript", "result", *WORK, *USAGE), ("raw_replies",))
CROSSEXAM = Table("crossexam.jsonl", CrossExamTurn, (
    "number", "kind", "outcome", "question", "answer", "labels", *WORK, *USAGE),
    ("raw_replies",))
SCORE_FIELDS = tuple(field.name for field in TextScore._meta.concrete_fields
                     if field.name not in {"id", "release", "generation", "computed_at"})
SCORE_COLUMNS = ("text", *SCORE_FIELDS)
CLAIM_COLUMNS = ("verdict", "position", "quote", "label", "basis")
# Messages of an agent run that are prompts, not answers: withheld from a public archive (a
# prompt may hold a scenario's labelled or confidential material).
PROMPT_ROLES = ("system", "user")


# The audit records, in staff archives only (`audits_app.archive.audit_records`), in the order
# they are written and read: a file refers only to those before it. Besides `id`, a row names
# `text` (the archive's text id), `scenario` (slug), the rows of the files before it by their
# `id` there (`batch`, `item`, `audit`, `spot_check`), and people by the user name the
# exporting instance gave them (`created_by`, `auditor`, `made_by`, `imported_by`): never an
# e-mail address or a password.
BATCHES = Table("spotcheck_batches.jsonl", SpotCheckBatch, (
    "name", "seed", "size", "disagreement_weight", "double_code_share", "left_out_public",
    "created_at"))
ITEMS = Table("spotcheck_items.jsonl", SpotCheckItem, (
    "stratum", "jury_class", "jurors_disagreed", "double_coded", "position"))
OOB_AUDITS = Table("oob_audits.jsonl", OutOfBandAudit, (
    "auditor_name", "organisation", "audited_on", "method", "source_name", "content_hash",
    "imported_at"))
SPOTCHECKS = Table("spotchecks.jsonl", SpotCheck, (
    "status", "claim_labels", "facts_conveyed", "techniques", "agrees_with_jury", "note",
    "out_of_band", "completed_at"))
CORRECTIONS = Table("spotcheck_corrections.jsonl", SpotCheckCorrection, (
    "made_at", "changes", "state", "reason"))
OOB_VERDICTS = Table("oob_verdicts.jsonl", OutOfBandVerdict, (
    "row_number", "claim_position", "label", "agrees_with_jury", "note"))
HUMAN_READERS = Table("human_readers.jsonl", HumanReaderResult, (
    "stimulus", "reader", "attitude", "knowledge", "imported_at"))
# Each table's references: the row's key and what it names ("person": a user name or null).
AUDIT_TABLES: tuple[tuple[Table, dict[str, str]], ...] = (
    (BATCHES, {"created_by": "person"}),
    (ITEMS, {"batch": "batch", "text": "text"}),
    (OOB_AUDITS, {"imported_by": "person"}),
    (SPOTCHECKS, {"text": "text", "item": "item", "audit": "audit", "auditor": "person"}),
    (CORRECTIONS, {"spot_check": "spot_check", "made_by": "person"}),
    (OOB_VERDICTS, {"audit": "audit", "spot_check": "spot_check", "text": "text"}),
    (HUMAN_READERS, {"scenario": "scenario", "text": "text"}),
)
AUDIT_FILES = tuple(table.file for table, _ in AUDIT_TABLES)


def json_line(row: dict[str, Any]) -> str:
    """One row as a line. Keys keep their order (JSON stored in a row is stored back in the
    order it had), so the same rows always give the same bytes."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=str)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# CSV cells: a spreadsheet runs a cell that starts with = + - @ (and tab, CR) as a formula, so
# such text is written with a leading apostrophe, as every BaitBench CSV does
# (`csv_files.spreadsheet_cell`). Here a text that itself starts with an apostrophe gets one
# too, so that reading drops exactly one and every quote comes back as it was.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell_out(value: Any) -> Any:
    if isinstance(value, str) and (value.startswith("'") or (
            value.startswith(FORMULA_STARTS) and not _plain_number(value))):
        return "'" + value
    return value


def cell_in(text: str) -> str:
    return text[1:] if text.startswith("'") else text


def _plain_number(value: str) -> bool:
    return PLAIN_NUMBER.fullmatch(value) is not None
