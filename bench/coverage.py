"""Do the ranking intervals hold their level with few scenarios? (audits_app/statistics/)

    .venv/bin/python bench/coverage.py [--datasets 2000 --resamples 1000 --twins 300]

Three simulations on data like a release's, scores[M, S, K] with K = 12 cells per scenario:

    score = base + model effect + scenario effect + cell effect (within the scenario)
            + model x scenario interaction + noise,   about 5 % of cells missing at random.

1. Pairs. Per S in 6, 8, 12, 20: `--datasets` simulated data sets of six models; five share a
   model effect (10 truly equal pairs), the sixth is better by DELTA_SD scenario-level standard
   deviations / sqrt(S) (5 truly different pairs, about 60 % power for the t-test at every S).
   Each data set gets its own seeded resample counts. Printed: the share of equal pairs that
   `pairwise` declares different with the plain percentile interval (before), Hesterberg's
   expanded percentile interval, and the expanded t interval (after, the module's default), and
   their power on the different pairs, next to a paired t-test on the same per-scenario
   differences (scipy). Targets: false positives <= 0.06 at every S; power >= 0.9 of the
   t-test's.

2. The refusing twin. Ten models at S = 8 (3 tasks x 4 conditions); damage control (C2) is the
   hardest condition for everyone. Model "twin" is model 3 with every C2 cell refused (NaN).
   Printed for one data set: both models' point, absolute and comparison intervals, and ranks
   under both rules, before (plain mean over the cells a model has, percentile intervals, the
   old comparison intervals) and after (the additive fit and the expanded t interval); then over
   `--twins` data sets the mean point gap, how often the comparison intervals do not overlap or
   the class or paired rank differ (and the mean signed rank shift: paired ranks use the cells
   both models have, so the twin is compared on fewer cells and its rank varies either way),
   and how often the twin's absolute interval covers its true mean (C2 is part of every
   model's true mean).

3. The arena (`audits_app/arena/statistics.py`). Four equal models, 40 votes per scenario, at
   4 and 8 scenarios, `--arena-datasets` data sets: the share of equal pairs declared different
   by plain percentile intervals of the resampled Bradley-Terry differences (before) and by
   the release's expanded t rule (after). Target: <= 0.06. `--parts arena` runs this alone.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

# Run as a plain script from anywhere: make the project root importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audits_app import statistics  # noqa: E402
from audits_app.arena import statistics as arena_statistics  # noqa: E402

LEVEL = 0.95
CELLS = 12
SCENARIO_COUNTS = (6, 8, 12, 20)
# Standard deviations of the simulated effects, on a 0-1 scale like the honesty index.
SCENARIO_SD, CELL_SD, INTERACTION_SD, NOISE_SD = 0.10, 0.05, 0.05, 0.10
MISSING = 0.05
# The true difference in units of the per-scenario difference's SD, divided by sqrt(S).
DELTA_SD = 2.5
EQUAL_MODELS = 5


def simulate(
    rng: np.random.Generator, datasets: int, model_effects: np.ndarray, scenarios: int,
    condition_effects: np.ndarray | None = None,
) -> np.ndarray:
    """scores[datasets, M, S, CELLS] from the model in the module docstring."""
    models = len(model_effects)
    shape = (datasets, models, scenarios, CELLS)
    scores = 0.6 + model_effects[None, :, None, None]
    scores = scores + rng.normal(0, SCENARIO_SD, (datasets, 1, scenarios, 1))
    scores = scores + rng.normal(0, CELL_SD, (datasets, 1, scenarios, CELLS))
    scores = scores + rng.normal(0, INTERACTION_SD, (datasets, models, scenarios, 1))
    scores = scores + rng.normal(0, NOISE_SD, shape)
    if condition_effects is not None:
        scores = scores + condition_effects[None, None, None, :]
    scores[rng.random(shape) < MISSING] = np.nan
    return scores


def pair_difference_sd() -> float:
    """SD of one scenario's mean difference between two equal models (complete cells)."""
    return float(np.sqrt(2 * INTERACTION_SD**2 + 2 * NOISE_SD**2 / CELLS))


def paired_t_test(scores: np.ndarray) -> np.ndarray:
    """[datasets, M, M] significant at 1 - LEVEL by a paired t-test on per-scenario means.

    Per scenario the mean over the cells both models have of the difference (the same
    per-scenario values `pairwise` resamples), then a one-sample t-test over scenarios.
    """
    differences = scores[:, :, None] - scores[:, None, :]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pairs without a shared cell: NaN
        per_scenario = np.nanmean(differences, axis=4)
        result = scipy_stats.ttest_1samp(per_scenario, 0.0, axis=3, nan_policy="omit")
    return np.asarray(result.pvalue) < 1 - LEVEL


def pair_rates(scores: np.ndarray, resamples: int, seed: int) -> dict[str, tuple[float, float]]:
    """(false-positive share, power) for each method and the t-test over all data sets."""
    models = scores.shape[1]
    equal = np.zeros((models, models), dtype=bool)
    equal[:EQUAL_MODELS, :EQUAL_MODELS] = True
    upper = np.triu(np.ones((models, models), dtype=bool), k=1)
    null_pairs, true_pairs = upper & equal, upper & ~equal
    declared = {method: np.zeros((len(scores), models, models), dtype=bool)
                for method in statistics.INTERVAL_METHODS}
    for index, data in enumerate(scores):  # each data set has its own resample counts
        counts = statistics.resample_counts(data.shape[1], resamples, seed + index)
        for method in statistics.INTERVAL_METHODS:
            declared[method][index] = statistics.pairwise(
                data, counts, LEVEL, method=method  # type: ignore[arg-type]
            ).significant
    declared["t-test"] = paired_t_test(scores)
    return {
        name: (float(values[:, null_pairs].mean()), float(values[:, true_pairs].mean()))
        for name, values in declared.items()
    }


METHOD_LABELS = {"percentile": "percentile", "expanded_percentile": "exp. pct.",
                 "expanded_t": "expanded t", "t-test": "t-test"}


def coverage_table(datasets: int, resamples: int, seed: int) -> None:
    print(f"1. Pairs: {datasets} data sets per S, {EQUAL_MODELS} equal models + 1 better, "
          f"K = {CELLS}, B = {resamples}, level {LEVEL}")
    print(f"   true difference = {DELTA_SD} x {pair_difference_sd():.3f} / sqrt(S); "
          f"before = percentile, after = expanded t (the module's default)")
    labels = "".join(f"{label:>11s}" for label in METHOD_LABELS.values())
    print(f"    S | false positives (target <= 0.06)          | power"
          f"{' ' * 40}| power ratio\n      |{labels} |{labels} | after/t-test (>= 0.9)")
    rng = np.random.default_rng(seed)
    for scenarios in SCENARIO_COUNTS:
        delta = DELTA_SD * pair_difference_sd() / np.sqrt(scenarios)
        effects = np.array([0.0] * EQUAL_MODELS + [delta])
        started = time.perf_counter()
        rates = pair_rates(simulate(rng, datasets, effects, scenarios), resamples, seed)
        false_positives = "".join(f"{rates[name][0]:11.3f}" for name in METHOD_LABELS)
        power = "".join(f"{rates[name][1]:11.3f}" for name in METHOD_LABELS)
        ratio = rates["expanded_t"][1] / rates["t-test"][1]
        print(f"   {scenarios:2d} |{false_positives} |{power} | {ratio:5.2f}"
              f"   ({time.perf_counter() - started:.0f} s)")


# ---------------------------------------------------------------------------------------------
# The refusing twin
# ---------------------------------------------------------------------------------------------

TWIN_MODELS = 10
TWIN_OF = 3
C2_EFFECT = -0.15
CONDITIONS = ("C0", "C1", "C2", "C3")  # cells are task-major: T1 C0..C3, T2 C0..C3, T3 C0..C3
C2_CELLS = np.array([condition == "C2" for _ in range(3) for condition in CONDITIONS])


def twin_scores(rng: np.random.Generator, datasets: int) -> tuple[np.ndarray, np.ndarray]:
    """scores[datasets, M + 1, 8, 12] (the twin last) and the true model means (M + 1)."""
    effects = np.linspace(-0.15, 0.15, TWIN_MODELS)
    conditions = np.where(C2_CELLS, C2_EFFECT, 0.0)
    scores = simulate(rng, datasets, effects, 8, conditions)
    twin = scores[:, TWIN_OF].copy()
    twin[:, :, C2_CELLS] = np.nan
    true_means = 0.6 + np.append(effects, effects[TWIN_OF]) + conditions.mean()
    return np.concatenate([scores, twin[:, None]], axis=1), true_means


def before_estimates(scores: np.ndarray, counts: np.ndarray) -> statistics.Estimates:
    """The estimates the module gave before: plain means over the cells a model has.

    point: mean over scenarios of the mean over the model's cells; absolute interval: percentile
    interval of that mean over the resamples; comparison interval: the same on deviations from
    each cell's mean over the models that have it, scaled by the Morey factor.
    """
    def bootstrap(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        means, present = statistics.scenario_means(values)
        filled = np.where(present, means, 0.0)
        with np.errstate(invalid="ignore"):
            point = filled.sum(axis=1) / present.sum(axis=1)
            resampled = (counts @ filled.T) / (counts @ present.T)
        low, high = np.nanpercentile(resampled, [2.5, 97.5], axis=0)
        return point, low, high

    point, abs_low, abs_high = bootstrap(scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # cells no model has: NaN
        deviations = scores - np.nanmean(scores, axis=0, keepdims=True)
    deviation_point, low, high = bootstrap(deviations)
    factor = statistics.morey_factor(len(scores))
    cmp_low = point + factor * (low - deviation_point)
    cmp_high = point + factor * (high - deviation_point)
    observed = ~np.isnan(scores)
    return statistics.Estimates(
        point, abs_low, abs_high, cmp_low, cmp_high,
        coverage=observed.mean(axis=(1, 2)), scenarios=observed.any(axis=2).sum(axis=1),
        level=LEVEL,
    )


def twin_figures(scores: np.ndarray, counts: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Before and after: estimates, paired ranks and classes of one data set."""
    before = before_estimates(scores, counts)
    pairs_before = statistics.pairwise(scores, counts, LEVEL, method="percentile")
    after = statistics.leaderboard(scores, counts, LEVEL, rule="classes")
    return {
        "before": {"estimates": before, "paired": statistics.paired_ranks(pairs_before),
                   "classes": statistics.rank_classes(before)},
        "after": {"estimates": after.estimates,
                  "paired": statistics.paired_ranks(after.pairwise), "classes": after.ranks},
    }


def twin_simulation(datasets: int, resamples: int, seed: int) -> None:
    rng = np.random.default_rng(seed + 1)
    scores, true_means = twin_scores(rng, datasets)
    counts = statistics.resample_counts(8, resamples, seed)
    twin, original = TWIN_MODELS, TWIN_OF
    print(f"\n2. Refusing twin: {TWIN_MODELS} models + a copy of model {original} that refuses "
          f"every C2 cell; S = 8, K = {CELLS}, C2 effect {C2_EFFECT}, B = {resamples}")
    figures = twin_figures(scores[0], counts)
    for when, found in figures.items():
        estimates = found["estimates"]
        print(f"   {when}:")
        for name, model in (("model", original), ("twin", twin)):
            print(f"     {name:5s}  point {estimates.point[model]:.3f}  "
                  f"absolute [{estimates.abs_low[model]:.3f}, {estimates.abs_high[model]:.3f}]  "
                  f"comparison [{estimates.cmp_low[model]:.3f}, "
                  f"{estimates.cmp_high[model]:.3f}]  paired rank {found['paired'][model]:2d}  "
                  f"class {found['classes'][model]}  coverage {estimates.coverage[model]:.2f}")
    tallies: dict[str, list[float]] = {key: [] for key in
                                       ("gap", "apart", "class", "paired", "rank shift", "covered")}
    summary = {"before": {k: list(v) for k, v in tallies.items()},
               "after": {k: list(v) for k, v in tallies.items()}}
    for data in scores:
        for when, found in twin_figures(data, counts).items():
            estimates, tally = found["estimates"], summary[when]
            tally["gap"].append(estimates.point[twin] - estimates.point[original])
            tally["apart"].append(
                estimates.cmp_low[twin] > estimates.cmp_high[original]
                or estimates.cmp_low[original] > estimates.cmp_high[twin]
            )
            tally["class"].append(found["classes"][twin] != found["classes"][original])
            tally["paired"].append(found["paired"][twin] != found["paired"][original])
            tally["rank shift"].append(found["paired"][twin] - found["paired"][original])
            tally["covered"].append(
                estimates.abs_low[twin] <= true_means[twin] <= estimates.abs_high[twin]
            )
    print(f"   over {datasets} data sets (twin minus model; shares of data sets):")
    print("              mean point  comparison  class    paired rank  mean paired  absolute"
          " interval\n              gap         intervals   differs  differs      rank shift"
          "   covers the\n                          apart                                     "
          "twin's true mean")
    for when, tally in summary.items():
        print(f"     {when:6s}   {np.mean(tally['gap']):+.4f}     {np.mean(tally['apart']):6.3f}"
              f"      {np.mean(tally['class']):6.3f}   {np.mean(tally['paired']):6.3f}"
              f"       {np.mean(tally['rank shift']):+6.3f}       {np.mean(tally['covered']):6.3f}")


ARENA_MODELS, ARENA_VOTES = 4, 40  # equal models; comparisons per scenario
ARENA_SCENARIOS = (4, 8)


def arena_wins(rng: np.random.Generator, scenarios: int) -> np.ndarray:
    """wins[S, M, M] of equal models: each vote a random pair, either side with chance 1/2."""
    pairs = np.array([(i, j) for i in range(ARENA_MODELS) for j in range(ARENA_MODELS) if i < j])
    drawn = pairs[rng.integers(len(pairs), size=(scenarios, ARENA_VOTES))]
    first_wins = rng.random((scenarios, ARENA_VOTES)) < 0.5
    winners = np.where(first_wins, drawn[..., 0], drawn[..., 1]).ravel()
    losers = np.where(first_wins, drawn[..., 1], drawn[..., 0]).ravel()
    scenario = np.repeat(np.arange(scenarios), ARENA_VOTES)
    return arena_statistics.win_tensor(winners, losers, scenario, ARENA_MODELS, scenarios)


def arena_false_positives(datasets: int, resamples: int, seed: int) -> None:
    """3. The arena: equal models' pairs declared different, plain percentile intervals of the
    resampled rating differences (before) against the release's expanded t rule (after)."""
    print(f"\nArena: {ARENA_MODELS} equal models, {ARENA_VOTES} votes per scenario, "
          f"{datasets} data sets, B = {resamples}; share of equal pairs declared different "
          f"(nominal {1 - LEVEL:.0%})")
    print("  scenarios   percentile (before)   expanded t (after)")
    rng = np.random.default_rng(seed)
    upper = np.triu_indices(ARENA_MODELS, k=1)
    for scenarios in ARENA_SCENARIOS:
        before = after = 0
        for _ in range(datasets):  # a loop over data sets; each bootstrap is batched
            wins = arena_wins(rng, scenarios)
            counts = statistics.resample_counts(scenarios, resamples, int(rng.integers(2**31)))
            thetas = arena_statistics.bootstrap(wins, counts)
            gaps = thetas[:, :, np.newaxis] - thetas[:, np.newaxis, :]
            low, high = np.nanpercentile(gaps, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2],
                                         axis=0)
            before += int(((low > 0) | (high < 0))[upper].sum())
            rated = arena_statistics.ratings(wins, counts, LEVEL, min_comparisons=0)
            after += int(rated.significant[upper].sum())
        pairs = datasets * len(upper[0])
        print(f"  {scenarios:9d}   {before / pairs:19.3f}   {after / pairs:18.3f}")


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--twins", type=int, default=300)
    parser.add_argument("--arena-datasets", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--parts", nargs="+", choices=("pairs", "twin", "arena"),
                        default=["pairs", "twin", "arena"], help="which simulations to run")
    return parser.parse_args()


def main() -> None:
    arguments = parse_arguments()
    started = time.perf_counter()
    if "pairs" in arguments.parts:
        coverage_table(arguments.datasets, arguments.resamples, arguments.seed)
    if "twin" in arguments.parts:
        twin_simulation(arguments.twins, arguments.resamples, arguments.seed)
    if "arena" in arguments.parts:
        arena_false_positives(arguments.arena_datasets, arguments.resamples, arguments.seed)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
