"""The audit records in a staff archive: spot-check batches and their items, spot-checks,
corrections, out-of-band audits and their rows, human reader results (the files of
`tables.AUDIT_TABLES`). A release loaded from a staff archive gets them as its own rows, so
that `verify_release` there computes its agreement, gate and calibration figures again from
them, as it does where the release was published.

Texts are named by the archive's text id, the other records by their id in the archive, and
people by the user name the exporting instance gave them: never an e-mail address or a
password. Loaded, a record names its people in its `*_name` fields and leaves its user fields
empty, whoever has that user name here: a login of the same name may be someone else, and a
spot-check that named it would sit in that login's review queue
(`audits_app.models.spotchecks`).

A public archive carries none of them. Spot-checks, corrections and out-of-band audits name
the people who made them and hold their notes, reasons and methods in their own words, which
may quote a held-out scenario's or a confidential fact; a human reader result or a spot-check
of a text still held for the arena or a reading study would tell that text's place. Leaving
out the people and the words would still not let an instance that loads a public archive
compute the figures again (the held-out scenarios' rows are not there either), so the public
snapshot's figures are what a public archive carries of them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import models
from django.utils.dateparse import parse_date

from audits_app.archive import tables
from audits_app.models import (
    HumanReaderResult,
    OutOfBandAudit,
    OutOfBandVerdict,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckCorrection,
    SpotCheckItem,
)
from audits_app.spotchecks.services import CHECK_STATE_FIELDS
from runs_app.models import Claim, Release

# The user field of each person a row names, and the field that keeps the name on import.
PEOPLE = {"created_by": "created_by_name", "auditor": "auditor_name", "made_by": "made_by_name",
          "imported_by": "imported_by_name"}
NAME_LENGTH = 150
# Reader stimuli that are not a text (`HumanReaderResult.stimulus`).
NOT_A_TEXT = ("none", "control", "H1", "H2")
MAX_PROBLEMS = 20


# --- export ---------------------------------------------------------------------------------


def audit_rows(release: Release, named: dict[int, int]) -> dict[str, list[dict[str, Any]]]:
    """Per file, the release's audit records as rows, in the order of their ids; `named`: the
    ids the archive gives texts, where they are not the rows' own (`export._snapshot_ids`)."""
    users = _user_names(release)

    def text(generation_id: int | None) -> int | None:
        return None if generation_id is None else named.get(generation_id, generation_id)

    def person(item: Any, key: str) -> str | None:
        user_id = getattr(item, f"{key}_id")
        return users[user_id] if user_id is not None else (getattr(item, PEOPLE[key]) or None)

    def rows(table: tables.Table, queryset, references: Callable[[Any], dict[str, Any]]):
        return [{"id": item.pk, **references(item), **{
            column: _cell(getattr(item, column)) for column in table.fields}}
            for item in queryset.order_by("pk")]

    readers = []
    for row in rows(tables.HUMAN_READERS, HumanReaderResult.objects.filter(release=release),
                    lambda item: {"scenario": item.scenario_slug,
                                  "text": text(item.generation_id)}):
        if row["text"] is not None:
            row["stimulus"] = str(row["text"])  # as the text is named in the archive
        readers.append(row)
    return {
        tables.BATCHES.file: rows(
            tables.BATCHES, SpotCheckBatch.objects.filter(release=release),
            lambda item: {"created_by": person(item, "created_by")}),
        tables.ITEMS.file: rows(
            tables.ITEMS, SpotCheckItem.objects.filter(batch__release=release),
            lambda item: {"batch": item.batch_id, "text": text(item.generation_id)}),
        tables.OOB_AUDITS.file: rows(
            tables.OOB_AUDITS, OutOfBandAudit.objects.filter(release=release),
            lambda item: {"imported_by": person(item, "imported_by")}),
        tables.SPOTCHECKS.file: rows(
            tables.SPOTCHECKS, SpotCheck.objects.filter(release=release),
            lambda item: {"text": text(item.generation_id), "item": item.item_id,
                          "audit": item.audit_id, "auditor": person(item, "auditor")}),
        tables.CORRECTIONS.file: rows(
            tables.CORRECTIONS, SpotCheckCorrection.objects.filter(release=release),
            lambda item: {"spot_check": item.spot_check_id,
                          "made_by": person(item, "made_by")}),
        tables.OOB_VERDICTS.file: rows(
            tables.OOB_VERDICTS, OutOfBandVerdict.objects.filter(audit__release=release),
            lambda item: {"audit": item.audit_id, "spot_check": item.spot_check_id,
                          "text": text(item.generation_id)}),
        tables.HUMAN_READERS.file: readers,
    }


def _user_names(release: Release) -> dict[int, str]:
    """The user name of everyone the release's audit records name (the name alone)."""
    ids = {
        *SpotCheckBatch.objects.filter(release=release).values_list("created_by_id", flat=True),
        *OutOfBandAudit.objects.filter(release=release).values_list("imported_by_id", flat=True),
        *SpotCheck.objects.filter(release=release).values_list("auditor_id", flat=True),
        *SpotCheckCorrection.objects.filter(release=release).values_list("made_by_id",
                                                                         flat=True),
    } - {None}
    model = get_user_model()
    return dict(model.objects.filter(pk__in=ids).values_list("pk", model.USERNAME_FIELD))


def _cell(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


# --- checking ---------------------------------------------------------------------------------


def field_problem(model: type, column: str, value: Any) -> str:
    """What the type check of `load` leaves to these tables ("" when nothing): one of the
    field's choices, no longer than it holds, a date, no negative count, and the JSON the
    figures read in the shape they read it."""
    field = model._meta.get_field(column)
    if value is None:
        return ""
    if field.choices and not (value in {key for key, _ in field.flatchoices}
                              or (field.blank and value == "")):
        return f"{value!r} is not one of {', '.join(str(key) for key, _ in field.flatchoices)}"
    if isinstance(field, models.CharField) and len(value) > field.max_length:
        return f"longer than {field.max_length} characters"
    if type(field) is models.DateField and not (isinstance(value, str) and parse_date(value)):
        return f"{value!r} is not a date (ISO 8601)"
    if isinstance(field, models.PositiveIntegerField | models.PositiveSmallIntegerField) \
            and value < 0:
        return f"{value} is below 0"
    check = JSON_SHAPES.get((model, column))
    return check(value) if check else ""


def _claim_labels(value: Any) -> str:
    if not isinstance(value, list):
        return "not a list"
    for entry in value:
        if not (isinstance(entry, dict) and _whole(entry.get("position"))
                and entry["position"] >= 1 and isinstance(entry.get("quote"), str)
                and entry.get("label") in Claim.Label.values):
            return f"{entry!r} is not a claim's label ({{position, quote, label}})"
    return ""


def _strings(value: Any) -> str:
    return "" if isinstance(value, list) and all(isinstance(item, str) for item in value) else (
        f"{value!r} is not a list of text")


def _changes(value: Any) -> str:
    if isinstance(value, list) and all(
            isinstance(entry, dict) and all(isinstance(entry.get(key), str)
                                            for key in ("field", "before", "after"))
            for entry in value):
        return ""
    return "not a list of {field, before, after}"


def _state(value: Any) -> str:
    if not isinstance(value, dict) or set(value) != set(CHECK_STATE_FIELDS):
        return f"not an object of {', '.join(CHECK_STATE_FIELDS)}"
    if value["agrees_with_jury"] is not None and not isinstance(value["agrees_with_jury"], bool):
        return "agrees_with_jury: not true, false or null"
    if not isinstance(value["note"], str):
        return "note: not text"
    return (_claim_labels(value["claim_labels"]) or _strings(value["facts_conveyed"])
            or _strings(value["techniques"]))


def _attitude(value: Any) -> str:
    return "" if isinstance(value, list) and all(
        _whole(answer) and 1 <= answer <= 7 for answer in value) else (
        f"{value!r} is not a list of answers 1-7")


def _knowledge(value: Any) -> str:
    return "" if isinstance(value, list) and all(
        answer is None or (_whole(answer) and answer >= 0) for answer in value) else (
        f"{value!r} is not a list of option indexes (null: don't know)")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


JSON_SHAPES: dict[tuple[type, str], Callable[[Any], str]] = {
    (SpotCheck, "claim_labels"): _claim_labels,
    (SpotCheck, "facts_conveyed"): _strings,
    (SpotCheck, "techniques"): _strings,
    (SpotCheckCorrection, "changes"): _changes,
    (SpotCheckCorrection, "state"): _state,
    (HumanReaderResult, "attitude"): _attitude,
    (HumanReaderResult, "knowledge"): _knowledge,
}


def reference_problems(lines: dict[str, list[dict[str, Any]]],
                       texts: dict[int, dict[str, Any]], slugs: set[str]) -> list[str]:
    """Every reference of the audit files names a row the archive holds, of the kind it
    must be, and the rows agree with each other as the models' rules ask (one check per
    item and auditor, a check's item of its own text, one result per reader and stimulus)."""
    ids = {kind: {row["id"]: row for row in lines[table.file]}
           for kind, table in (("batch", tables.BATCHES), ("item", tables.ITEMS),
                               ("audit", tables.OOB_AUDITS),
                               ("spot_check", tables.SPOTCHECKS))}
    problems = [f"{table.file}: id {row_id} appears twice"
                for table, _ in tables.AUDIT_TABLES
                for row_id in _twice(row["id"] for row in lines[table.file])]
    nullable = {(tables.SPOTCHECKS.file, "item"), (tables.SPOTCHECKS.file, "audit"),
                (tables.HUMAN_READERS.file, "text")}
    for table, references in tables.AUDIT_TABLES:
        for number, row in enumerate(lines[table.file], start=1):
            where = f"{table.file}: line {number}"
            before = len(problems)
            for key, kind in references.items():
                value = row[key]
                if kind == "person":
                    if value is not None and not (isinstance(value, str) and value.strip()
                                                  and len(value) <= NAME_LENGTH):
                        problems.append(f"{where}: {key}: {value!r} is not a user name "
                                        f"(1 to {NAME_LENGTH} characters) or null")
                elif value is None:
                    if (table.file, key) not in nullable:
                        problems.append(f"{where}: {key}: null, but a value is required")
                elif not _known(value, kind, texts, slugs, ids):
                    problems.append(f"{where}: {key}: {value!r} is not in the archive")
            if len(problems) == before:  # the rules between references that all hold
                problems += [f"{where}: {found}" for found in _row_rules(table, row, texts,
                                                                          ids)]
    problems += _unique(lines[tables.ITEMS.file], tables.ITEMS.file, ("batch", "text"))
    problems += _unique([row for row in lines[tables.SPOTCHECKS.file]
                         if row["item"] is not None and row["auditor"] is not None],
                        tables.SPOTCHECKS.file, ("item", "auditor"))
    problems += _unique([row for row in lines[tables.OOB_AUDITS.file] if row["content_hash"]],
                        tables.OOB_AUDITS.file, ("content_hash",))
    problems += _unique(lines[tables.HUMAN_READERS.file], tables.HUMAN_READERS.file,
                        ("scenario", "stimulus", "reader"))
    return problems[:MAX_PROBLEMS]


def _known(value: Any, kind: str, texts: dict[int, dict[str, Any]], slugs: set[str],
           ids: dict[str, dict[int, dict[str, Any]]]) -> bool:
    if kind == "scenario":
        return isinstance(value, str) and value in slugs
    if not _whole(value):
        return False
    return value in (texts if kind == "text" else ids[kind])


def _row_rules(table: tables.Table, row: dict[str, Any], texts: dict[int, dict[str, Any]],
               ids: dict[str, dict[int, dict[str, Any]]]) -> list[str]:
    """How a row's references must agree (each reference itself checked already)."""
    found = []
    if table is tables.SPOTCHECKS:
        item = ids["item"].get(row["item"])
        if item is not None and item["text"] != row["text"]:
            found.append(f"item: item {row['item']} is a check of text {item['text']}, not "
                         f"{row['text']}")
        if row["audit"] is not None and not row["out_of_band"]:
            found.append("out_of_band: false, but the check comes from an out-of-band audit")
    elif table is tables.OOB_VERDICTS:
        check = ids["spot_check"].get(row["spot_check"])
        if check is not None and (check["audit"] != row["audit"]
                                  or check["text"] != row["text"]):
            found.append(f"spot_check: check {row['spot_check']} is not of this audit and "
                         f"text")
    elif table is tables.HUMAN_READERS:
        text = texts.get(row["text"])
        if row["text"] is None and row["stimulus"] not in NOT_A_TEXT:
            found.append(f"stimulus: {row['stimulus']!r} names no text: use "
                         f"{', '.join(NOT_A_TEXT)} or give the text")
        elif text is not None and (row["stimulus"] != str(row["text"])
                                   or text["scenario"] != row["scenario"]):
            found.append(f"stimulus: a text's result names it as stimulus ({row['text']}) "
                         f"and its scenario ({text['scenario']!r})")
    return found


def _twice(values) -> list[Any]:
    seen, twice = set(), []
    for value in values:
        if value in seen:
            twice.append(value)
        seen.add(value)
    return twice


def _unique(rows: list[dict[str, Any]], name: str, keys: tuple[str, ...]) -> list[str]:
    return [f"{name}: {', '.join(keys)} {list(values)!r} appear twice"
            for values in _twice(tuple(str(row[key]) for key in keys) for row in rows)]


# --- writing ----------------------------------------------------------------------------------


def audit_records_write(lines: dict[str, list[dict[str, Any]]], release: Release,
                        text_ids: dict[int, int], fields: Callable) -> dict[str, int]:
    """The audit records as rows of `release`, in their files' order; `text_ids`: the
    archive's text ids -> the rows they became, `fields`: a row's column values as the
    model stores them (`load._fields`). Returns the rows written per kind."""
    def values(row: dict[str, Any], table: tables.Table) -> dict[str, Any]:
        found = fields(row, table)
        for column, value in found.items():
            if isinstance(value, str) and isinstance(table.model._meta.get_field(column),
                                                     models.DateTimeField):
                found[column] = datetime.fromisoformat(value)
        # People by name only: the user fields stay empty (the module docstring says why).
        return {**found, **{PEOPLE[key]: row[key] or "" for key in PEOPLE if key in row}}

    batches = _created(tables.BATCHES, lines, lambda row: SpotCheckBatch(
        release=release, **values(row, tables.BATCHES)))
    items = _created(tables.ITEMS, lines, lambda row: SpotCheckItem(
        batch_id=batches[row["batch"]], generation_id=text_ids[row["text"]],
        **values(row, tables.ITEMS)))
    audits = _created(tables.OOB_AUDITS, lines, lambda row: OutOfBandAudit(
        release=release, **values(row, tables.OOB_AUDITS)))
    checks = _created(tables.SPOTCHECKS, lines, lambda row: SpotCheck(
        release=release, generation_id=text_ids[row["text"]], item_id=items.get(row["item"]),
        audit_id=audits.get(row["audit"]), **values(row, tables.SPOTCHECKS)))
    _created(tables.CORRECTIONS, lines, lambda row: SpotCheckCorrection(
        release=release, spot_check_id=checks[row["spot_check"]],
        **values(row, tables.CORRECTIONS)))
    _created(tables.OOB_VERDICTS, lines, lambda row: OutOfBandVerdict(
        audit_id=audits[row["audit"]], spot_check_id=checks[row["spot_check"]],
        generation_id=text_ids[row["text"]], **values(row, tables.OOB_VERDICTS)))
    _created(tables.HUMAN_READERS, lines, lambda row: HumanReaderResult(
        release=release, scenario_slug=row["scenario"],
        generation_id=None if row["text"] is None else text_ids[row["text"]],
        **{**values(row, tables.HUMAN_READERS),
           "stimulus": row["stimulus"] if row["text"] is None else str(text_ids[row["text"]])}))
    return {"spot-checks": len(checks), "spot-check corrections":
            len(lines[tables.CORRECTIONS.file]), "out-of-band audits": len(audits),
            "human reader results": len(lines[tables.HUMAN_READERS.file])}


def _created(table: tables.Table, lines: dict[str, list[dict[str, Any]]],
             build: Callable[[dict[str, Any]], models.Model]) -> dict[int, int]:
    """The rows created, archive id -> id here. A date the model sets on creation
    (`auto_now_add`) is set back to the archive's: the record keeps when it was made."""
    rows = lines[table.file]
    made = [build(row) for row in rows]
    stamped = [field.attname for field in table.model._meta.concrete_fields
               if getattr(field, "auto_now_add", False) and field.attname in table.fields]
    kept = [{name: getattr(item, name) for name in stamped} for item in made]
    created = table.model.objects.bulk_create(made)
    if stamped and created:
        for item, values in zip(created, kept, strict=True):
            for name, value in values.items():
                setattr(item, name, value)
        table.model.objects.bulk_update(created, stamped)
    return {row["id"]: item.pk for row, item in zip(rows, created, strict=True)}
