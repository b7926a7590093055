"""Writes for spot-checks: sampling batches, assigning and recording verdicts, and corrections
after the reveal. Reads: `audits_app.spotchecks.selectors`; the out-of-band audit import:
`audits_app.spotchecks.imports`."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence

import numpy as np
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from audits_app.models import (
    SpotCheck,
    SpotCheckBatch,
    SpotCheckCorrection,
    SpotCheckItem,
)
from audits_app.spotchecks.sampling import stratified_sample
from audits_app.spotchecks.selectors import JuryText, jury_texts
from baitbench_site.roles import RECORD_PERMISSION, NoRoleWouldHelp
from runs_app.models import Generation, Release

# Ids of the given texts of a release that may not be sampled: `viewer.not_blind_ids`.
LeaveOut = Callable[[Release, Sequence[int]], set[int]]


def _population(release: Release, leave_out: LeaveOut | None) -> tuple[list[JuryText], int]:
    """Scored texts not yet in any batch of the release, in the order of their cells (model,
    scenario, task, condition, variant): text ids are planned in a random order, so a seeded
    sample follows the cells, and the same seed draws the same texts in every run. With them,
    how many `leave_out` left out (texts public elsewhere, or twins of texts held elsewhere:
    `pages.viewer.not_blind_ids`)."""
    sampled = set(SpotCheckItem.objects.filter(batch__release=release)
                  .values_list("generation_id", flat=True))
    texts = jury_texts(release)
    cells = {pk: cell for pk, *cell in Generation.objects.filter(pk__in=list(texts)).values_list(
        "pk", "model__openrouter_id", "scenario_version__scenario__slug", "task", "condition",
        "variant")}
    unsampled = [pk for pk in texts if pk not in sampled]
    public = leave_out(release, unsampled) if leave_out is not None else set()
    return ([texts[generation_id] for generation_id in sorted(unsampled, key=cells.__getitem__)
             if generation_id not in public], len(public))


class BatchError(ValueError):
    """A batch that cannot be drawn as asked; the message says why."""


@transaction.atomic
def spotcheck_batch_create(
    *, release: Release, size: int | None = None, share: float | None = None,
    seed: int | None = None, disagreement_weight: float = 2.0, double_code_share: float = 0.0,
    auditors: Sequence = (), name: str = "", user=None, leave_out: LeaveOut | None = None,
) -> SpotCheckBatch:
    """Sample texts stratified by model x condition x jury class, texts on which the jurors
    disagreed drawn with `disagreement_weight` times the weight; seeded (default: the release's
    bootstrap seed plus the batch count, so a second batch differs from the first).

    The texts `leave_out` names are not drawn, and counted on the batch (`left_out_public`):
    every page that makes batches passes `pages.viewer.not_blind_ids`, which names the texts
    anyone can read with their writer in another release, and those with the words of a text
    another release holds blind. A `share` is of the texts
    left, and so are the figures estimated from the sample (see that function)."""
    if (size is None) == (share is None):
        raise ValueError("give either size or share")
    if double_code_share and len(auditors) == 1:
        # Assigned so, every double-coded text was coded once, and silently.
        raise BatchError("double coding gives a text to two auditors: assign at least two, "
                         "or a double-coding share of 0")
    population, left_out = _population(release, leave_out)
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
            f"text is in a batch already{_left_out_words(left_out)}")
    batch = SpotCheckBatch.objects.create(
        release=release, name=name, seed=seed, size=len(chosen),
        disagreement_weight=disagreement_weight, double_code_share=double_code_share,
        left_out_public=left_out, created_by=user,
    )
    # The queue's order is random, unseeded: in the sample's order (by generation id) texts
    # of one writer would sit together, and the seed is on the batch for anyone to replay.
    secrets.SystemRandom().shuffle(chosen)
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


def _left_out_words(left_out: int) -> str:
    return (f" or left out, {left_out} of them because their words are public in another "
            f"release or are those of a text another release holds blind (they cannot be "
            f"checked blind)" if left_out else "")


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
    if not user.has_perm(RECORD_PERMISSION):
        raise PermissionDenied("only the assigned auditor records this spot-check")
    if check.auditor_id != user.pk:
        raise NoRoleWouldHelp("only the assigned auditor records this spot-check")
    if check.release.is_published:
        raise NoRoleWouldHelp(f"release {check.release.code} is published: its spot-checks "
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
        raise NoRoleWouldHelp("the verdict is final once the jury is revealed: record a "
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
def spotcheck_correction_allowed(*, check: SpotCheck, user) -> None:
    """Raise PermissionDenied unless `user` may correct `check`: its own auditor, once it is
    done, until the release is published. Asked before the correction's form is read, so that
    a refusal never depends on what was posted."""
    if not user.has_perm(RECORD_PERMISSION):
        raise PermissionDenied("only the auditor who recorded this spot-check corrects it")
    if check.auditor_id != user.pk:
        raise NoRoleWouldHelp("only the auditor who recorded this spot-check corrects it")
    if not check.is_done:
        raise NoRoleWouldHelp("a pending spot-check is recorded, not corrected")
    if check.release.is_published:
        raise NoRoleWouldHelp(f"release {check.release.code} is published: its spot-checks "
                               f"cannot change")


def spotcheck_correct(
    *, check: SpotCheck, user, claim_labels: dict[int, str], facts_conveyed: Sequence[str],
    techniques: Sequence[str], agrees_with_jury: bool | None, note: str, reason: str,
) -> SpotCheckCorrection:
    """Record a change to a revealed check as a row of its own (who, when, what, why).

    The blind verdict stays as it was saved and the agreement figures keep counting it. Only
    the check's own auditor corrects it, only once it is done, and only until the release is
    published (then nothing under it changes)."""
    spotcheck_correction_allowed(check=check, user=user)
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
