"""Writes for spot-checks: sampling batches, assigning and recording verdicts, and importing
out-of-band audits and human reader results (issue 6). Definitions: spotcheck_selectors."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from audits_app import agreement, csv_files
from audits_app.models import (
    HumanReaderResult,
    OutOfBandAudit,
    OutOfBandVerdict,
    SpotCheck,
    SpotCheckBatch,
    SpotCheckCorrection,
    SpotCheckItem,
)
from audits_app.spotcheck_selectors import JuryText, jury_texts, text_code
from runs_app.models import Generation, Release

RECORD_PERMISSION = "audits_app.record_spotcheck"


# --- sampling ------------------------------------------------------------------------------

def allocate(stratum_weights: dict[str, float], stratum_sizes: dict[str, int],
             size: int) -> dict[str, int]:
    """Split `size` over strata in proportion to their total weight (largest remainder), never
    more than a stratum holds; what a full stratum cannot take goes to the others."""
    allocation = dict.fromkeys(stratum_sizes, 0)
    remaining = min(size, sum(stratum_sizes.values()))
    open_strata = [name for name in stratum_sizes if stratum_sizes[name] > 0]
    while remaining > 0 and open_strata:
        total = sum(stratum_weights[name] for name in open_strata)
        exact = {name: remaining * stratum_weights[name] / total for name in open_strata}
        shares = {name: int(exact[name]) for name in open_strata}
        by_remainder = sorted(open_strata, key=lambda name: (-(exact[name] - shares[name]), name))
        for name in by_remainder[: remaining - sum(shares.values())]:
            shares[name] += 1
        for name in open_strata:
            take = min(shares[name], stratum_sizes[name] - allocation[name])
            allocation[name] += take
            remaining -= take
        open_strata = [name for name in open_strata if allocation[name] < stratum_sizes[name]]
    return allocation


def stratified_sample(strata: Sequence[str], weights: Sequence[float], size: int,
                      seed: int) -> list[int]:
    """Indices of a weighted stratified sample: per stratum, `allocate`d counts drawn without
    replacement with probability proportional to weight. Same seed, same sample."""
    rng = np.random.default_rng(seed)
    weight = np.asarray(weights, dtype=float)
    members: dict[str, list[int]] = {}
    for index, stratum in enumerate(strata):
        members.setdefault(stratum, []).append(index)
    names = sorted(members)
    allocation = allocate({name: float(weight[members[name]].sum()) for name in names},
                          {name: len(members[name]) for name in names}, size)
    chosen: list[int] = []
    for name in names:
        indices = np.array(members[name])
        probabilities = weight[indices] / weight[indices].sum()
        picked = rng.choice(indices, size=allocation[name], replace=False, p=probabilities)
        chosen.extend(int(index) for index in picked)
    return sorted(chosen)


def _population(release: Release) -> list[JuryText]:
    """Scored texts not yet in any batch of the release."""
    sampled = set(SpotCheckItem.objects.filter(batch__release=release)
                  .values_list("generation_id", flat=True))
    return [text for generation_id, text in sorted(jury_texts(release).items())
            if generation_id not in sampled]


class BatchError(ValueError):
    """A batch that cannot be drawn as asked; the message says why."""


@transaction.atomic
def spotcheck_batch_create(
    *, release: Release, size: int | None = None, share: float | None = None,
    seed: int | None = None, disagreement_weight: float = 2.0, double_code_share: float = 0.0,
    auditors: Sequence = (), name: str = "", user=None,
) -> SpotCheckBatch:
    """Sample texts stratified by model x condition x jury class, texts on which the jurors
    disagreed drawn with `disagreement_weight` times the weight; seeded (default: the release's
    bootstrap seed plus the batch count, so a second batch differs from the first)."""
    if (size is None) == (share is None):
        raise ValueError("give either size or share")
    population = _population(release)
    if share is not None:
        size = round(share * len(population))
    if seed is None:
        seed = release.parsed_config().bootstrap.seed + release.spotcheck_batches.count()
    chosen = stratified_sample(
        [text.stratum for text in population],
        [disagreement_weight if text.disagreed else 1.0 for text in population], size or 0, seed,
    )
    if not chosen:
        # An empty batch would sit in every queue as "0 of 0 done".
        raise BatchError(
            f"a share of {share} of the {len(population)} unsampled texts is no text: give "
            f"a larger share or a size" if population
            else f"release {release.code} has no scored text left to sample: every scored "
            f"text is in a batch already")
    batch = SpotCheckBatch.objects.create(
        release=release, name=name, seed=seed, size=len(chosen),
        disagreement_weight=disagreement_weight, double_code_share=double_code_share,
        created_by=user,
    )
    rng = np.random.default_rng(seed + 1)
    doubled = set(rng.choice(len(chosen), size=round(double_code_share * len(chosen)),
                             replace=False).tolist()) if chosen else set()
    SpotCheckItem.objects.bulk_create([
        SpotCheckItem(batch=batch, generation_id=population[index].generation_id,
                      stratum=population[index].stratum, jury_class=population[index].jury_class,
                      jurors_disagreed=population[index].disagreed,
                      double_coded=position in doubled, position=position + 1)
        for position, index in enumerate(chosen)
    ])
    if auditors:
        spotcheck_batch_assign(batch=batch, auditors=auditors)
    return batch


@transaction.atomic
def spotcheck_batch_assign(*, batch: SpotCheckBatch, auditors: Sequence) -> int:
    """Round-robin assignment of unassigned items; a double-coded item gets two different
    auditors. Returns the number of spot-checks created."""
    auditors = list(auditors)
    if not auditors:
        return 0
    created = 0
    turn = 0
    for item in batch.items.filter(checks__isnull=True).order_by("position"):
        wanted = 2 if item.double_coded and len(auditors) > 1 else 1
        for offset in range(wanted):
            SpotCheck.objects.create(
                release=batch.release, generation=item.generation, item=item,
                auditor=auditors[(turn + offset) % len(auditors)],
            )
            created += 1
        turn += 1
    return created


# --- recording -----------------------------------------------------------------------------

def spotcheck_record(
    *, check: SpotCheck, user, claim_labels: dict[int, str], facts_conveyed: Sequence[str],
    techniques: Sequence[str], agrees_with_jury: bool | None, note: str = "",
) -> SpotCheck:
    """Save one auditor's blind verdict on one text (item by item). After the first save the
    jury's verdict is revealed and the check is final, but for the overall agreement, asked
    only then and answered once; later changes are corrections (`spotcheck_correct`)."""
    if not user.has_perm(RECORD_PERMISSION) or check.auditor_id != user.pk:
        raise PermissionDenied("only the assigned auditor records this spot-check")
    if check.release.is_published:
        raise PermissionDenied(f"release {check.release.code} is published: its spot-checks "
                               f"cannot change")
    text = jury_texts(check.release, [check.generation_id]).get(check.generation_id)
    quotes = {claim.position: claim.quote for claim in text.claims} if text else {}
    labels = [
        {"position": position, "quote": quotes[position], "label": label}
        for position, label in sorted(claim_labels.items()) if position in quotes
    ]
    blind = (labels, list(facts_conveyed), list(techniques))
    if check.status == SpotCheck.Status.DONE and not _only_answers_overall(
            check, blind, agrees_with_jury, note):
        # Once saved, the auditor has seen the jury's labels: a changed label would no
        # longer be a blind verdict, and the agreement figures count only blind ones. The
        # one question asked after the reveal (overall agreement) is answered once; every
        # other change is a correction, recorded beside the check with its reason.
        raise PermissionDenied("the verdict is final once the jury is revealed: record a "
                               "correction (with its reason) instead")
    check.claim_labels, check.facts_conveyed, check.techniques = blind
    check.agrees_with_jury = agrees_with_jury
    check.note = note
    check.status = SpotCheck.Status.DONE
    check.completed_at = timezone.now()
    check.save()
    return check


def _only_answers_overall(check: SpotCheck, blind: tuple, agrees_with_jury: bool | None,
                          note: str) -> bool:
    """A second save of a revealed check may add the overall answer, and change nothing."""
    unchanged = blind == (check.claim_labels, check.facts_conveyed, check.techniques)
    overall = check.agrees_with_jury is None or agrees_with_jury == check.agrees_with_jury
    return unchanged and note == check.note and overall


# --- corrections after the reveal ---------------------------------------------------------

class CorrectionError(ValueError):
    """A correction that cannot be recorded as given; the message says what to fix."""


CHECK_STATE_FIELDS = ("claim_labels", "facts_conveyed", "techniques", "agrees_with_jury", "note")


def spotcheck_state(check: SpotCheck) -> dict:
    """The check as it stands: its own saved verdict, or its latest correction's state."""
    latest = check.corrections.order_by("-made_at", "-pk").first()
    if latest is not None:
        return latest.state
    return {name: getattr(check, name) for name in CHECK_STATE_FIELDS}


def _shown(value) -> str:
    if value is None:
        return "not answered"
    if isinstance(value, bool):
        return "agree" if value else "disagree"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value) or "(empty)"


def state_changes(before: dict, after: dict) -> list[dict]:
    """What differs between two states, in words: one entry per claim and per field."""
    old_labels = {int(e["position"]): e["label"] for e in before["claim_labels"]}
    new_labels = {int(e["position"]): e["label"] for e in after["claim_labels"]}
    changes = [{"field": f"claim {position}", "before": _shown(old_labels.get(position)),
                "after": _shown(new_labels.get(position))}
               for position in sorted(old_labels.keys() | new_labels.keys())
               if old_labels.get(position) != new_labels.get(position)]
    for name, label in (("facts_conveyed", "facts conveyed"), ("techniques", "techniques"),
                        ("agrees_with_jury", "overall"), ("note", "note")):
        if before[name] != after[name]:
            changes.append({"field": label, "before": _shown(before[name]),
                            "after": _shown(after[name])})
    return changes


@transaction.atomic
def spotcheck_correct(
    *, check: SpotCheck, user, claim_labels: dict[int, str], facts_conveyed: Sequence[str],
    techniques: Sequence[str], agrees_with_jury: bool | None, note: str, reason: str,
) -> SpotCheckCorrection:
    """Record a change to a revealed check as a row of its own (who, when, what, why).

    The blind verdict stays as it was saved and the agreement figures keep counting it. Only
    the check's own auditor corrects it, only once it is done, and only until the release is
    published (then nothing under it changes)."""
    if not user.has_perm(RECORD_PERMISSION) or check.auditor_id != user.pk:
        raise PermissionDenied("only the auditor who recorded this spot-check corrects it")
    if not check.is_done:
        raise PermissionDenied("a pending spot-check is recorded, not corrected")
    if check.release.is_published:
        raise PermissionDenied(f"release {check.release.code} is published: its spot-checks "
                               f"cannot change")
    if not reason.strip():
        raise CorrectionError("say why: a correction needs a reason")
    before = spotcheck_state(check)
    quotes = {int(entry["position"]): entry["quote"] for entry in check.claim_labels}
    after = {
        "claim_labels": [{"position": position, "quote": quotes[position], "label": label}
                         for position, label in sorted(claim_labels.items())
                         if position in quotes],
        "facts_conveyed": list(facts_conveyed), "techniques": list(techniques),
        "agrees_with_jury": agrees_with_jury, "note": note,
    }
    changes = state_changes(before, after)
    if not changes:
        raise CorrectionError("nothing differs from the verdict as it stands")
    return SpotCheckCorrection.objects.create(
        release=check.release, spot_check=check, made_by=user, changes=changes, state=after,
        reason=reason.strip())


# --- CSV imports ---------------------------------------------------------------------------

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


def _refused_as_published(release: Release, result: ImportResult) -> bool:
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
        return texts[codes[code.lower()]]
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
    if label and label not in agreement.LABELS:
        problem("label", f"{cells['label']!r} is not one of {', '.join(agreement.LABELS)}")
    elif claim != "overall" and not label:
        problem("label", "a claim row needs a label")
    if agree not in AGREE_VALUES:
        problem("agree", f"{cells['agree']!r} is not agree/disagree (yes/no)")
    elif claim == "overall" and AGREE_VALUES[agree] is None and not label:
        problem("agree", "an overall row needs agree/disagree or a label")
    if len(problems) > before:
        return None
    return {"generation": text.generation_id, "position": position, "label": label,
            "agree": AGREE_VALUES[agree], "note": cells.get("note", ""), "row": row.number}


def _already_imported(audit: OutOfBandAudit) -> str:
    when = timezone.localtime(audit.imported_at).date().isoformat()
    who = audit.imported_by.get_username() if audit.imported_by else "an unknown user"
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
                "the row out (to correct it, delete that import and import again)")
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
    if _refused_as_published(release, result):
        return result
    for column, value in (("who", auditor_name), ("organisation", organisation),
                          ("date", audited_on), ("method", method)):
        if not value:
            result.problems.append(f"audit, field {column}: required")
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


READER_COLUMNS = ("scenario", "stimulus", "reader", "a1", "a2", "a3", "k1", "k2", "k3", "k4")
DONT_KNOW = {"", "dk", "don't know", "dont know", "?"}
READER_NAME_LENGTH = HumanReaderResult._meta.get_field("reader").max_length


def _reader_stimulus(row: csv_files.Row, generations: dict[int, str], problem) -> int | None:
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
    return generation_id


def _parse_reader_row(row: csv_files.Row, options: dict[str, list[int]],
                      generations: dict[int, str], problems: list[str]) -> dict | None:
    cells = row.cells

    def problem(column: str, message: str) -> None:
        problems.append(f"row {row.number}, column {column}: {message}")

    before = len(problems)
    slug = cells["scenario"]
    if slug not in options:
        problem("scenario", f"{slug!r} is not a scenario of this release")
    generation_id = _reader_stimulus(row, generations, problem)
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
    if _refused_as_published(release, result):
        return result
    table, problems = csv_files.read_table(csv_text, required=READER_COLUMNS,
                                           source=source_name or "file")
    result.problems += problems
    if table is None:
        return result
    result.delimiter, result.skipped = table.delimiter, table.skipped
    generations = dict(Generation.objects.filter(release=release)
                       .values_list("pk", "scenario_version__scenario__slug"))
    options = {  # per scenario, the number of options of each knowledge question
        pin.scenario_version.scenario.slug:
            [len(question["options"]) for question in
             pin.scenario_version.content["knowledge_questions"]]
        for pin in release.pins.select_related("scenario_version__scenario")
    }
    parsed = [entry for row in table.rows
              if (entry := _parse_reader_row(row, options, generations,
                                             result.problems)) is not None]
    first_row: dict[tuple, int] = {}
    for entry in parsed:
        key = (entry["scenario_slug"], entry["stimulus"], entry["reader"])
        if key in first_row:
            result.problems.append(f"row {entry['row']}: reader {entry['reader']!r} answers "
                                   f"{entry['stimulus']!r} again (first on row {first_row[key]})")
        first_row.setdefault(key, entry["row"])
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
