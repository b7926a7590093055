"""Reads for spot-checks: the jury's view of a text, review queues, agreement and gate figures.

Definitions used throughout (DESIGN sections 2 and 6):

- A *scored text* is a generation with at least one juror verdict that is done and scored.
- Its *jury claim list* is the distinct quotes its scored jurors extracted (whitespace and case
  folded), in order of first appearance by seat then position; positions are 1-based. A claim's
  *jury label* is the majority of the labels the jurors gave it; a tie goes to the more severe
  label (`agreement.majority`).
- A text's *verdict class* (per juror, per person) is its most severe claim label, `supported`
  when it has none; the *jury class* is the majority of the jurors' classes. Sampling strata are
  model x condition x jury class.
- The jurors *disagreed* on a text when any claim got different labels or their classes differ.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Prefetch

from audits_app.leaderboard.figures import release_resampling
from audits_app.models import SpotCheck
from audits_app.statistics import agreement
from audits_app.text_codes import text_code
from runs_app.models import (
    Claim,
    Generation,
    JurorVerdict,
    Release,
    ReleaseStatus,
    ReplyOutcome,
    WorkStatus,
)

# Fewer jury-vs-people claim pairs than this: kappa is not reported (and the gate cannot pass).
MIN_AGREEMENT_CLAIMS = 10


@dataclass(frozen=True)
class JuryClaim:
    position: int
    quote: str
    labels: dict[int, str]  # seat -> label

    @property
    def label(self) -> str:
        return agreement.majority(list(self.labels.values())) or agreement.LABELS[0]


@dataclass(frozen=True)
class JuryText:
    generation_id: int
    scenario_id: int
    model_id: str
    condition: str
    jurors: dict[int, str]  # seat -> juror model id
    claims: list[JuryClaim] = field(default_factory=list)
    facts_conveyed: dict[int, list[str]] = field(default_factory=dict)
    techniques: dict[int, list[str]] = field(default_factory=dict)

    def juror_class(self, seat: int) -> str:
        return agreement.worst(
            [claim.labels[seat] for claim in self.claims if seat in claim.labels])

    @property
    def jury_class(self) -> str:
        return agreement.majority([self.juror_class(seat) for seat in self.jurors]) or "supported"

    @property
    def disagreed(self) -> bool:
        if len({self.juror_class(seat) for seat in self.jurors}) > 1:
            return True
        return any(len(set(claim.labels.values())) > 1 for claim in self.claims)

    @property
    def stratum(self) -> str:
        return f"{self.model_id}|{self.condition}|{self.jury_class}"


def normalised_quote(quote: str) -> str:
    """A claim's quote as two jurors' copies of it compare: spacing and case set aside."""
    return " ".join(quote.split()).casefold()


def scored_verdicts(release: Release):
    return JurorVerdict.objects.filter(
        release=release, status=WorkStatus.DONE, outcome=ReplyOutcome.SCORED
    )


def jury_texts(release: Release, generation_ids: list[int] | None = None) -> dict[int, JuryText]:
    """The jury's view of every scored text of a release (or of the given generations)."""
    # Only what the jury's view needs: the whole rows (a text's body and replies, its scenario
    # version's document) were most of a staff agreement page's two seconds.
    verdicts = scored_verdicts(release).select_related(
        "juror", "generation__model", "generation__scenario_version"
    ).only(
        "seat", "facts_conveyed", "techniques", "juror__openrouter_id",
        "generation__condition", "generation__model__openrouter_id",
        "generation__scenario_version__scenario_id",
    ).prefetch_related(Prefetch(
        "claim_rows", queryset=Claim.objects.only("verdict_id", "position", "quote", "label"))
    ).order_by("generation_id", "seat")
    if generation_ids is not None:
        verdicts = verdicts.filter(generation_id__in=generation_ids)
    texts: dict[int, JuryText] = {}
    for verdict in verdicts:
        generation = verdict.generation
        text = texts.setdefault(generation.pk, JuryText(
            generation_id=generation.pk, scenario_id=generation.scenario_version.scenario_id,
            model_id=generation.model.openrouter_id, condition=generation.condition, jurors={},
        ))
        text.jurors[verdict.seat] = verdict.juror.openrouter_id
        text.facts_conveyed[verdict.seat] = list(verdict.facts_conveyed)
        text.techniques[verdict.seat] = list(verdict.techniques)
        _merge_claims(text, verdict)
    return texts


def _merge_claims(text: JuryText, verdict: JurorVerdict) -> None:
    by_quote = {normalised_quote(claim.quote): claim for claim in text.claims}
    for row in sorted(verdict.claim_rows.all(), key=lambda row: row.position):
        key = normalised_quote(row.quote)
        if key not in by_quote:
            by_quote[key] = JuryClaim(position=len(text.claims) + 1, quote=row.quote, labels={})
            text.claims.append(by_quote[key])
        by_quote[key].labels.setdefault(verdict.seat, row.label)


def done_checks(release: Release):
    return SpotCheck.objects.filter(release=release, status=SpotCheck.Status.DONE)


# --- gate figures ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GateFigures:
    """coverage: share of scored texts with at least one completed spot-check (web or out of band);
    agreement: Cohen's kappa, jury claim label vs people's claim label, over every completed
    spot-check; None with fewer than MIN_AGREEMENT_CLAIMS pairs or when kappa is undefined;
    items: the number of spot-checked texts."""

    coverage: float
    agreement: float | None
    items: int


def gate_figures(release: Release, texts: dict[int, JuryText] | None = None) -> GateFigures:
    """Coverage and agreement of the spot-checks; `texts`: the release's `jury_texts`, when
    the caller has them already (a text's jury view is the same read alone or with all)."""
    scored = set(scored_verdicts(release).values_list("generation_id", flat=True))
    checked = set(done_checks(release).filter(generation_id__in=scored)
                  .values_list("generation_id", flat=True))
    coverage = len(checked) / len(scored) if scored else 0.0
    checked_texts = (jury_texts(release, sorted(checked)) if texts is None
                     else {pk: texts[pk] for pk in sorted(checked) if pk in texts})
    pairs = claim_pairs(release, checked_texts)
    kappa = None
    if len(pairs.jury) >= MIN_AGREEMENT_CLAIMS:
        value = float(agreement.kappa_from_confusion(agreement.confusion(pairs.jury, pairs.people)))
        kappa = None if np.isnan(value) else value
    return GateFigures(coverage=coverage, agreement=kappa, items=len(checked))


# --- agreement data -------------------------------------------------------------------------

@dataclass
class ClaimPairs:
    """One entry per (completed spot-check, labelled claim)."""

    jury: list[int] = field(default_factory=list)
    people: list[int] = field(default_factory=list)
    scenario: list[int] = field(default_factory=list)
    out_of_band: list[bool] = field(default_factory=list)
    # per juror model id: (juror code, people code, scenario id)
    by_juror: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)


def claim_pairs(release: Release, texts: dict[int, JuryText]) -> ClaimPairs:
    pairs = ClaimPairs()
    for check in done_checks(release).filter(generation_id__in=list(texts)):
        text = texts[check.generation_id]
        claims = {claim.position: claim for claim in text.claims}
        for position, label in check.label_by_position().items():
            if position not in claims:
                continue
            claim = claims[position]
            pairs.jury.append(agreement.code(claim.label))
            pairs.people.append(agreement.code(label))
            pairs.scenario.append(text.scenario_id)
            pairs.out_of_band.append(check.out_of_band)
            for seat, juror_label in claim.labels.items():
                pairs.by_juror.setdefault(text.jurors[seat], []).append(
                    (agreement.code(juror_label), agreement.code(label), text.scenario_id)
                )
    return pairs


def _juror_units(texts: dict[int, JuryText]) -> tuple[np.ndarray, list[int], np.ndarray, list[int]]:
    """Claims x seats and texts x seats label codes (NaN where a juror has no label)."""
    claim_rows, claim_scenarios, class_rows, class_scenarios = [], [], [], []
    for text in texts.values():
        for claim in text.claims:
            claim_rows.append([agreement.code(claim.labels[seat]) if seat in claim.labels
                               else np.nan for seat in range(3)])
            claim_scenarios.append(text.scenario_id)
        class_rows.append([agreement.code(text.juror_class(seat)) if seat in text.jurors
                           else np.nan for seat in range(3)])
        class_scenarios.append(text.scenario_id)
    return (np.array(claim_rows, dtype=float).reshape(-1, 3), claim_scenarios,
            np.array(class_rows, dtype=float).reshape(-1, 3), class_scenarios)


def _people_units(release: Release, texts: dict[int, JuryText]) -> tuple[np.ndarray, list[int]]:
    """Double-coded claims: claims x first two people's codes (NaN where unlabelled)."""
    checks: dict[int, list[SpotCheck]] = {}
    for check in done_checks(release).filter(generation_id__in=list(texts)).order_by("pk"):
        checks.setdefault(check.generation_id, []).append(check)
    rows, scenarios = [], []
    for generation_id, coded in checks.items():
        if len(coded) < 2:
            continue
        first, second = (check.label_by_position() for check in coded[:2])
        for claim in texts[generation_id].claims:
            row = [agreement.code(labels[claim.position]) if claim.position in labels
                   else np.nan for labels in (first, second)]
            rows.append(row)
            scenarios.append(texts[generation_id].scenario_id)
    return np.array(rows, dtype=float).reshape(-1, 2), scenarios


def agreement_summary(release: Release) -> dict | None:
    """Every agreement figure of a release, JSON-able, for the staff page and the published
    snapshot. None when the release has no scored jury verdict yet."""
    texts = jury_texts(release)
    if not texts:
        return None
    config = release.parsed_config().bootstrap
    scenario_ids, counts = release_resampling(release)
    index = {scenario: column for column, scenario in enumerate(scenario_ids)}

    def clusters(scenario_ids: list[int]) -> list[int]:
        return [index[scenario] for scenario in scenario_ids]

    claim_units, claim_scenarios, class_units, class_scenarios = _juror_units(texts)
    pairs = claim_pairs(release, texts)
    figures = gate_figures(release, texts)
    summary = {
        "labels": list(agreement.LABELS),
        "unit": "claim",
        "bootstrap": {"seed": config.seed, "resamples": config.resamples, "level": config.level,
                      "clusters": "scenario"},
        "texts_scored": len(texts),
        "texts_checked": figures.items,
        "coverage": figures.coverage,
        "gate_agreement": figures.agreement,
        "jurors": {
            "claims": agreement.alpha_report(claim_units, clusters(claim_scenarios), counts,
                                             config.level),
            "texts": agreement.alpha_report(class_units, clusters(class_scenarios), counts,
                                            config.level),
        },
        "jury_vs_people": _kappa_breakdown(pairs, clusters, counts, config.level),
        "per_juror": {
            juror: agreement.kappa_report([j for j, _, _ in rows], [p for _, p, _ in rows],
                                          clusters([s for _, _, s in rows]), counts, config.level)
            for juror, rows in sorted(pairs.by_juror.items())
        },
        "texts": _text_level(release, texts, clusters, counts, config.level),
    }
    people_units, people_scenarios = _people_units(release, texts)
    summary["people"] = agreement.alpha_report(people_units, clusters(people_scenarios), counts,
                                               config.level)
    return summary


def _kappa_breakdown(pairs: ClaimPairs, clusters, counts, level: float) -> dict:
    """All spot-checks, then web-only and out-of-band-only: out-of-band audits are shown apart."""
    breakdown = {}
    for name, keep in (("all", lambda flag: True), ("in_band", lambda flag: not flag),
                       ("out_of_band", lambda flag: flag)):
        chosen = [i for i, flag in enumerate(pairs.out_of_band) if keep(flag)]
        breakdown[name] = agreement.kappa_report(
            [pairs.jury[i] for i in chosen], [pairs.people[i] for i in chosen],
            clusters([pairs.scenario[i] for i in chosen]), counts, level,
        )
    return breakdown


def _text_level(release: Release, texts: dict[int, JuryText], clusters, counts,
                level: float) -> dict:
    """Jury class vs the person's class (worst of their claim labels) per completed check, and
    the share of checks that agreed with the jury overall."""
    jury, people, scenarios, agreed = [], [], [], []
    for check in done_checks(release).filter(generation_id__in=list(texts)):
        text = texts[check.generation_id]
        labels = list(check.label_by_position().values())
        if labels or not text.claims:
            jury.append(agreement.code(text.jury_class))
            people.append(agreement.code(agreement.worst(labels)))
            scenarios.append(text.scenario_id)
        if check.agrees_with_jury is not None:
            agreed.append(check.agrees_with_jury)
    report = agreement.kappa_report(jury, people, clusters(scenarios), counts, level)
    report["overall_agree_share"] = sum(agreed) / len(agreed) if agreed else None
    report["overall_answers"] = len(agreed)
    return report


# --- review queue ---------------------------------------------------------------------------

def auditor_queue(user, leave_out: Collection[int] = ()) -> list[SpotCheck]:
    """A person's assigned spot-checks, in batch order, pending ones first within a batch,
    but those of the texts left out (the texts published releases still hold from this
    person: `pages.viewer.withheld_texts`)."""
    return list(
        SpotCheck.objects.filter(auditor=user, item__isnull=False)
        .exclude(generation_id__in=leave_out)
        .select_related("item__batch__release", "generation__scenario_version__scenario")
        .order_by("item__batch__created_at", "item__batch_id", "item__position")
    )


@dataclass(frozen=True)
class QueueProgress:
    """Where a check stands in its auditor's share of its batch ("check 3 of 20")."""

    position: int
    size: int
    done: int


def queue_progress(check: SpotCheck, leave_out: Collection[int] = ()) -> QueueProgress | None:
    """The check's place among its auditor's checks of the same batch, in the batch's order
    (items are shuffled when the batch is drawn, so the place says nothing of the writer),
    counting only the checks whose texts are not left out (as `auditor_queue`). An
    out-of-band check has no batch and no place."""
    if check.item_id is None:
        return None
    rows = list(SpotCheck.objects.filter(auditor_id=check.auditor_id,
                                         item__batch_id=check.item.batch_id)
                .exclude(generation_id__in=leave_out)
                .order_by("item__position").values_list("pk", "status"))
    ids = [pk for pk, _ in rows]
    return QueueProgress(position=ids.index(check.pk) + 1, size=len(ids),
                         done=sum(status == SpotCheck.Status.DONE for _, status in rows))


def next_pending(user, after: SpotCheck | None = None,
                 leave_out: Collection[int] = ()) -> SpotCheck | None:
    """The user's next check still to do; a published release's unfinished checks are closed,
    and checks of the texts `leave_out` names (held from this person:
    `pages.viewer.withheld_texts`) are skipped, as the queue lists none: "Next" would lead to
    a 404."""
    pending = SpotCheck.objects.filter(
        auditor=user, status=SpotCheck.Status.ASSIGNED, item__isnull=False
    ).exclude(release__status=ReleaseStatus.PUBLISHED).exclude(
        generation_id__in=leave_out).order_by(
        "item__batch__created_at", "item__batch_id", "item__position")
    if after is not None:
        pending = pending.exclude(pk=after.pk)
    return pending.first()


# --- out-of-band audits: the texts, blind -----------------------------------------------------

def audit_text_codes(release: Release, leave_out: Collection[int] = ()) -> dict[str, int]:
    """Text code -> generation id, for every scored text of the release but those left out
    (the texts the release still holds from this viewer: `pages.viewer.withheld_texts`)."""
    ids = scored_verdicts(release).values_list("generation_id", flat=True).distinct()
    return {text_code(release.code, generation_id): generation_id for generation_id in ids
            if generation_id not in leave_out}


@dataclass(frozen=True)
class AuditableText:
    code: str
    generation_id: int
    scenario: str  # slug
    scenario_title: str
    task: str
    condition: str
    claims: list[JuryClaim]  # positions and quotes; their labels are never shown


def auditable_texts(release: Release, texts: dict[int, JuryText] | None = None,
                    leave_out: Collection[int] = ()) -> list[AuditableText]:
    """The texts an out-of-band audit may cover (the release's scored texts but those left
    out, as `audit_text_codes`), by scenario, task and condition, then by code, so that
    neither the order nor any field tells the writer."""
    texts = jury_texts(release) if texts is None else texts
    texts = {pk: text for pk, text in texts.items() if pk not in leave_out}
    cells = Generation.objects.filter(pk__in=texts).values_list(
        "pk", "task", "condition", "scenario_version__scenario__slug",
        "scenario_version__content__title")  # the title the release pinned
    listed = [
        AuditableText(code=text_code(release.code, pk), generation_id=pk, scenario=slug,
                      scenario_title=title, task=task, condition=condition,
                      claims=texts[pk].claims)
        for pk, task, condition, slug, title in cells
    ]
    return sorted(listed, key=lambda t: (t.scenario, t.task, t.condition, t.code))


# --- calibration against people ---------------------------------------------------------------
