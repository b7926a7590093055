"""Can the writer of a text be recognised from the text alone? (DESIGN section 9)

"Blind" pairs are only blind if readers cannot tell the writers apart, so it is measured: a
classifier learns to predict the writer from a release's texts, and its accuracy is compared
with chance. It is scored by cross-validation grouped by scenario: every text is predicted
by a classifier that never saw a text of its scenario, so it cannot recognise a writer by what
a scenario happens to make it say, only by how the writer writes.

The classifier: TF-IDF of word unigrams and bigrams (wording, stock phrases) and of character
3- to 5-grams within words (spelling, punctuation, formatting habits), then a multinomial
logistic regression. Both are standard and strong for authorship attribution on short texts,
fast on a few thousand texts, and deterministic (no random state is involved).

Pure: plain sequences in, a frozen dataclass out, no ORM. Accuracy intervals resample whole
scenarios with the release's seeded counts matrix, like every interval of a release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# scikit-learn (and the scipy.stats it imports) is imported where a classifier is made, not
# here: this module is imported with the admin by every process that sets Django up, and
# those imports were most of a management command's start-up (`manage.py run_release`).

# A pair is flagged as recognisable when the classifier gives the true writer of either text
# a probability above this: the true writer is then more likely, to the classifier, than all
# other writers together. The rule needs no tuning per release and is strict against chance
# for any arena of three or more writers (chance is 1/3 or less); with two writers it is
# chance itself, so a two-writer arena flags about half its pairs.
RECOGNISED_ABOVE = 0.5
# More folds cost a fit each; five keep at least four fifths of the scenarios for training.
MAX_FOLDS = 5
MIN_SCENARIOS = 2
MIN_WRITERS = 2


class RecognisabilityError(ValueError):
    """The texts cannot support the measurement (too few scenarios or writers)."""


@dataclass(frozen=True, eq=False)
class WriterAccuracy:
    writer: str
    texts: int
    accuracy: float  # share of its texts attributed to it
    low: float
    high: float
    mean_probability: float  # mean probability the classifier gave it on its own texts


@dataclass(frozen=True, eq=False)
class Recognisability:
    writers: list[str]  # sorted: the classifier's class order
    texts: int
    folds: int
    accuracy: float
    low: float
    high: float
    chance: float  # 1 / number of writers: guessing uniformly
    majority: float  # share of the commonest writer: always guessing it
    per_writer: list[WriterAccuracy]
    true_probability: npt.NDArray[np.float64]  # [N] out-of-fold probability of the true writer
    predicted: list[str]  # [N] out-of-fold prediction
    level: float

    def method(self) -> dict[str, object]:
        return {"features": "tf-idf word 1-2 grams + character 3-5 grams within words",
                "model": "multinomial logistic regression (C=1)",
                "validation": f"GroupKFold by scenario, {self.folds} folds",
                "threshold": RECOGNISED_ABOVE, "scikit_learn": _sklearn_version()}


def _sklearn_version() -> str:
    import sklearn

    return sklearn.__version__


def classifier():
    """The pipeline: a new, unfitted copy each time (cross-validation clones it per fold)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline, make_union

    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2, max_features=20000)
    characters = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True,
                                 min_df=2, max_features=20000)
    return make_pipeline(make_union(words, characters), LogisticRegression(C=1.0, max_iter=1000))


def recognise(
    texts: Sequence[str], writers: Sequence[str], scenarios: Sequence[str], *,
    scenario_order: Sequence[str], counts: npt.ArrayLike, level: float,
) -> Recognisability:
    """Out-of-fold predictions for every text, with accuracy overall and per writer.

    `scenario_order` names the columns of `counts` (the release's resample matrix); every text's
    scenario must be among them.
    """
    if not len(texts) == len(writers) == len(scenarios):
        raise RecognisabilityError("texts, writers and scenarios must have the same length")
    classes = sorted(set(writers))
    groups = sorted(set(scenarios))
    if len(classes) < MIN_WRITERS:
        raise RecognisabilityError(f"{len(classes)} writer(s): at least {MIN_WRITERS} needed")
    if len(groups) < MIN_SCENARIOS:
        raise RecognisabilityError(f"{len(groups)} scenario(s): at least {MIN_SCENARIOS} needed")
    folds = min(MAX_FOLDS, len(groups))
    from sklearn.model_selection import GroupKFold, cross_val_predict
    from threadpoolctl import threadpool_limits

    # One BLAS thread: the machine's cores are shared with the web and queue workers, and
    # BLAS threads fighting over them made a fit five times slower, not faster.
    with threadpool_limits(limits=1):
        probabilities = cross_val_predict(
            classifier(), list(texts), list(writers), groups=list(scenarios),
            cv=GroupKFold(n_splits=folds), method="predict_proba",
        )
    truth = np.array([classes.index(writer) for writer in writers])
    predicted = probabilities.argmax(axis=1)
    true_probability = probabilities[np.arange(len(truth)), truth]
    return _summarise(classes, truth, predicted, true_probability, scenarios, scenario_order,
                      np.asarray(counts), level, folds)


def _summarise(
    classes: list[str], truth: np.ndarray, predicted: np.ndarray, true_probability: np.ndarray,
    scenarios: Sequence[str], scenario_order: Sequence[str], counts: np.ndarray, level: float,
    folds: int,
) -> Recognisability:
    column = {slug: index for index, slug in enumerate(scenario_order)}
    missing = sorted(set(scenarios) - set(column))
    if missing:
        raise RecognisabilityError(f"scenarios not in the resample order: {', '.join(missing)}")
    scenario_index = np.array([column[slug] for slug in scenarios])
    correct = np.zeros((len(scenario_order), len(classes)))
    total = np.zeros_like(correct)
    np.add.at(correct, (scenario_index, truth), (predicted == truth).astype(float))
    np.add.at(total, (scenario_index, truth), 1.0)
    draws = counts.astype(np.float64)
    overall_low, overall_high = _ratio_interval(draws @ correct.sum(axis=1),
                                                draws @ total.sum(axis=1), level)
    per_writer = []
    for index, writer in enumerate(classes):
        own = truth == index
        low, high = _ratio_interval(draws @ correct[:, index], draws @ total[:, index], level)
        per_writer.append(WriterAccuracy(
            writer=writer, texts=int(own.sum()), accuracy=float((predicted[own] == index).mean()),
            low=low, high=high, mean_probability=float(true_probability[own].mean()),
        ))
    shares = np.bincount(truth, minlength=len(classes)) / len(truth)
    return Recognisability(
        writers=classes, texts=len(truth), folds=folds,
        accuracy=float((predicted == truth).mean()), low=overall_low, high=overall_high,
        chance=1.0 / len(classes), majority=float(shares.max()), per_writer=per_writer,
        true_probability=true_probability, predicted=[classes[i] for i in predicted],
        level=level,
    )


def _ratio_interval(numerators: np.ndarray, denominators: np.ndarray,
                    level: float) -> tuple[float, float]:
    """Percentile interval of sum(correct) / sum(texts) over resamples that drew any text."""
    drawn = denominators > 0
    if not drawn.any():
        return float("nan"), float("nan")
    ratios = numerators[drawn] / denominators[drawn]
    low, high = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)
