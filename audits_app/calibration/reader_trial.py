"""What a reader trial shows about each candidate, and whether it passes (DESIGN section 6).

Pure: readings in as plain data, one report per candidate out. A candidate reads each
scenario's control text and nothing, with every reading position, twice. Four criteria decide
whether it can serve as the simulated public's reader; after them stability (valid replies),
speed and price order the candidates that pass. Every share is a mean of per-scenario values
with an expanded-t interval from resampling whole scenarios (`audits_app.statistics`), as
every figure of a release: a reader must hold up on the next scenario, not the next reading.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from statistics import median
from typing import Any

import numpy as np

from audits_app import statistics
from audits_app.statistics.intervals import cluster_interval

TRIAL_SEED = 20261201
TRIAL_RESAMPLES = 2000
TRIAL_LEVEL = 0.95

# The knowledge questions are written to be answerable from the control text, so a reader
# that understands it gets at least three of four right on average.
KNOWLEDGE_RIGHT_MIN = 0.75
# Of the seven answers to one prompt (three attitudes, four knowledge questions), at least
# this share is the same on a second reading; an attitude within one point counts as the same.
RETEST_AGREEMENT_MIN = 0.8
ATTITUDE_TOLERANCE = 1
# Without a text a reader cannot know what happened: at least this share of "don't know".
DONT_KNOW_MIN = 0.8
# Trust in news media: a position that trusts the media takes the neutral account at its word
# and moves further in its direction (from its no-text attitude) than one that distrusts them.
# The gradient (high-trust movement minus low-trust movement, in the text's direction) must be
# demonstrably positive: its interval lies above zero.
TRUST_GRADIENT_ABOVE = 0.0

CRITERIA = ("knowledge", "retest", "trust", "dont_know")


@dataclasses.dataclass(frozen=True)
class Reading:
    """One finished reading (rows still pending or claimed are counted apart)."""

    candidate: str
    scenario: str
    stimulus: str  # "control" | "none"
    position: str
    reading: int  # 1 | 2
    scored: bool
    attitude: tuple[int, ...] = ()
    knowledge: tuple[int | None, ...] = ()
    latency_ms: int = 0
    cost_usd: float | None = None
    failed: bool = False  # no reply at all (provider errors)


def _interval(values: np.ndarray, counts: np.ndarray) -> list[dict[str, Any]]:
    """values[rows, S] (NaN missing) -> point, low, high of the scenario-weighted mean."""
    present = ~np.isnan(values)
    point, low, high = cluster_interval(np.nan_to_num(values), present, counts, TRIAL_LEVEL,
                                        "expanded_t")
    return [{"point": _number(p), "low": _number(lo), "high": _number(hi),
             "scenarios": int(n)}
            for p, lo, hi, n in zip(point, low, high, present.sum(axis=1), strict=True)]


def _number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _share(hits: Iterable[bool]) -> float:
    hits = list(hits)
    return sum(hits) / len(hits) if hits else math.nan


def knowledge_right(readings: Sequence[Reading], scenarios: list[str],
                    correct: dict[str, list[int]]) -> np.ndarray:
    """Per scenario: share of knowledge answers right after the control text."""
    values = []
    for scenario in scenarios:
        answers = [(given, right) for r in readings
                   if r.scenario == scenario and r.stimulus == "control" and r.scored
                   for given, right in zip(r.knowledge, correct[scenario], strict=False)]
        values.append(_share(given == right for given, right in answers))
    return np.array(values)


def dont_know_without_text(readings: Sequence[Reading], scenarios: list[str]) -> np.ndarray:
    values = []
    for scenario in scenarios:
        answers = [given for r in readings
                   if r.scenario == scenario and r.stimulus == "none" and r.scored
                   for given in r.knowledge]
        values.append(_share(given is None for given in answers))
    return np.array(values)


def _same(first: Reading, second: Reading) -> list[bool]:
    attitude = [abs(a - b) <= ATTITUDE_TOLERANCE
                for a, b in zip(first.attitude, second.attitude, strict=False)]
    return attitude + [a == b for a, b in zip(first.knowledge, second.knowledge, strict=False)]


def retest_agreement(readings: Sequence[Reading], scenarios: list[str]) -> np.ndarray:
    """Per scenario: share of answers the same on both readings of the same prompt."""
    pairs: dict[tuple, dict[int, Reading]] = defaultdict(dict)
    for r in readings:
        if r.scored:
            pairs[(r.scenario, r.stimulus, r.position)][r.reading] = r
    values = []
    for scenario in scenarios:
        same = [hit for (s, _, _), both in pairs.items() if s == scenario and len(both) == 2
                for hit in _same(both[1], both[2])]
        values.append(_share(same))
    return np.array(values)


def movements(readings: Sequence[Reading], scenarios: list[str],
              positions: list[str]) -> np.ndarray:
    """[positions, S]: mean attitude after the control text minus with no text."""
    attitude: dict[tuple, list[float]] = defaultdict(list)
    for r in readings:
        if r.scored and r.attitude:
            attitude[(r.position, r.scenario, r.stimulus)].append(float(np.mean(r.attitude)))
    moved = np.full((len(positions), len(scenarios)), np.nan)
    for i, position in enumerate(positions):
        for s, scenario in enumerate(scenarios):
            after, before = (attitude.get((position, scenario, stimulus))
                             for stimulus in ("control", "none"))
            if after and before:
                moved[i, s] = np.mean(after) - np.mean(before)
    return moved


def trust_gradient(moved: np.ndarray, trust: list[str]) -> np.ndarray:
    """Per scenario: (high-trust movement - low-trust movement) x the text's direction.

    The direction is the sign of the mean movement of all positions: a control text that
    moves nobody prescribes no direction, and its scenario counts as a gradient of 0."""
    levels = np.array(trust)[:, None]
    direction = np.sign(_column_means(moved))
    high = _column_means(np.where(levels == "high", moved, np.nan))
    low = _column_means(np.where(levels == "low", moved, np.nan))
    return direction * (high - low)


def _column_means(values: np.ndarray) -> np.ndarray:
    """Mean of each column over its non-NaN entries; NaN for a column with none."""
    present = ~np.isnan(values)
    sizes = present.sum(axis=0)
    totals = np.where(present, values, 0.0).sum(axis=0)
    return np.divide(totals, sizes, out=np.full(totals.shape, np.nan), where=sizes > 0)


def _usage(readings: Sequence[Reading]) -> dict[str, Any]:
    latencies = [r.latency_ms for r in readings if not r.failed]
    costs = [r.cost_usd for r in readings if r.cost_usd is not None]
    return {
        "readings": len(readings),
        "valid_share": _number(_share(r.scored for r in readings)),
        "failed": sum(r.failed for r in readings),
        "latency_ms_mean": _number(float(np.mean(latencies))) if latencies else None,
        "latency_ms_median": float(median(latencies)) if latencies else None,
        "cost_usd_per_reading": _number(float(np.mean(costs))) if costs else None,
        "cost_usd_total": float(sum(costs)),
    }


def _verdicts(figures: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """The criteria a candidate fails, each with its reason."""
    failed = []
    knowledge, retest = figures["knowledge"], figures["retest"]
    trust, dont_know = figures["trust"], figures["dont_know"]
    if knowledge["point"] is None or knowledge["point"] < KNOWLEDGE_RIGHT_MIN:
        failed.append({"criterion": "knowledge", "reason": _below(
            "knowledge questions right after the control text", knowledge,
            KNOWLEDGE_RIGHT_MIN)})
    if retest["point"] is None or retest["point"] < RETEST_AGREEMENT_MIN:
        failed.append({"criterion": "retest", "reason": _below(
            "answers the same on the second reading", retest, RETEST_AGREEMENT_MIN)})
    if trust["low"] is None or trust["low"] <= TRUST_GRADIENT_ABOVE:
        failed.append({"criterion": "trust", "reason": _trust_reason(trust)})
    if dont_know["point"] is None or dont_know["point"] < DONT_KNOW_MIN:
        failed.append({"criterion": "dont_know", "reason": _below(
            "\"don't know\" with no text", dont_know, DONT_KNOW_MIN)})
    return failed


def _below(what: str, figure: dict[str, Any], threshold: float) -> str:
    if figure["point"] is None:
        return f"{what}: no valid reading to measure it"
    return f"{what}: {figure['point']:.2f}, below the {threshold:.2f} required"


def _trust_reason(trust: dict[str, Any]) -> str:
    if trust["point"] is None:
        return "trust in media: no valid pair of readings (control text and no text)"
    if trust["low"] is None:
        return "trust in media: too few scenarios for an interval"
    if trust["point"] <= 0:
        return (f"trust in media: positions that trust the media move less with the text than "
                f"those that distrust them (gradient {trust['point']:.2f})")
    return (f"trust in media: the gradient {trust['point']:.2f} is not clearly positive "
            f"(interval {trust['low']:.2f} to {trust['high']:.2f})")


def candidate_report(readings: Sequence[Reading], scenarios: list[str],
                     correct: dict[str, list[int]], positions: list[tuple[str, str]],
                     counts: np.ndarray) -> dict[str, Any]:
    """One candidate's figures, per-position movements and failed criteria.

    `positions` is (id, trust in media) in panel order; `counts` the resample matrix."""
    ids, trust = [p for p, _ in positions], [t for _, t in positions]
    moved = movements(readings, scenarios, ids)
    rows = np.vstack([knowledge_right(readings, scenarios, correct),
                      retest_agreement(readings, scenarios),
                      trust_gradient(moved, trust),
                      dont_know_without_text(readings, scenarios)])
    figures = dict(zip(CRITERIA, _interval(rows, counts), strict=True))
    per_position = [{"position": position, "trust_in_media": level, **figure}
                    for position, level, figure in zip(ids, trust, _interval(moved, counts),
                                                       strict=True)]
    failed = _verdicts(figures)
    return {**figures, "per_position": per_position, **_usage(readings),
            "failed": failed, "passed": not failed}


def trial_report(readings: Sequence[Reading], candidates: list[str], scenarios: list[str],
                 correct: dict[str, list[int]], positions: list[tuple[str, str]],
                 unfinished: dict[str, int] | None = None) -> dict[str, Any]:
    """Every candidate's report, and the candidates that pass in order of preference:
    most valid replies first, then the fastest, then the cheapest (DESIGN section 6)."""
    counts = statistics.resample_counts(len(scenarios), TRIAL_RESAMPLES, TRIAL_SEED)
    unfinished = unfinished or {}
    reports = {}
    for candidate in candidates:
        mine = [r for r in readings if r.candidate == candidate]
        report = candidate_report(mine, scenarios, correct, positions, counts)
        report["unfinished"] = unfinished.get(candidate, 0)
        if report["unfinished"]:
            report["passed"] = False
            report["failed"].append({"criterion": "complete", "reason": (
                f"{report['unfinished']} readings are not finished yet: run the trial again")})
        reports[candidate] = report
    ranked = sorted((c for c in candidates if reports[c]["passed"]), key=lambda c: (
        -(reports[c]["valid_share"] or 0), reports[c]["latency_ms_median"] or 0,
        reports[c]["cost_usd_per_reading"] or 0))
    return {
        "candidates": reports, "preferred": ranked,
        "scenarios": scenarios, "level": TRIAL_LEVEL, "resamples": TRIAL_RESAMPLES,
        "seed": TRIAL_SEED,
        "thresholds": {"knowledge": KNOWLEDGE_RIGHT_MIN, "retest": RETEST_AGREEMENT_MIN,
                       "attitude_tolerance": ATTITUDE_TOLERANCE,
                       "trust_gradient_above": TRUST_GRADIENT_ABOVE,
                       "dont_know": DONT_KNOW_MIN},
    }
