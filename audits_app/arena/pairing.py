"""Which pair a voter sees next (DESIGN section 9): balanced, and informative.

Pure numpy over the arena's pair catalogue; the service feeds it arrays and the current
ratings. Every pair is two texts of one cell by two different writers, both complied and
scored, of a public scenario (the catalogue holds nothing else).

Candidates are ordered by these keys in turn, the first deciding most:

1. pairing load: how often the pair's two writers have been shown together (either order),
   counted in steps of LOAD_STEP showings, least first; so every pairing of writers that has a
   pair gets about as many votes, as a Bradley-Terry comparison wants. Where every pairing
   exists, every writer is then shown about equally often too, one with fewer pairs (one that
   refused a condition, say) included. Where one does not (two writers never share a cell),
   the balance is over the pairings that exist: balancing the writers' own loads instead
   starves another pairing (with candid-refuser missing, equal loads of the four writers
   leave no room for advocate-spinner at all);
2. scenario load: the same for the pair's scenario;
3. pair load: how often this very pair (these two texts) was shown, in the same steps, so
   the texts are spread over voters before a pair is repeated much;
4. uninformativeness, 1 - 4 p (1 - p) in steps of INFORMATION_STEP, where p is the chance,
   under the current ratings, that the first writer is preferred: a vote between writers rated
   alike (p near 1/2) tells most about their order, one between far-apart writers little.
   Without ratings every pair is equally informative;
5. a random draw (seeded in tests).

Counting loads in steps lets the later keys choose among pairs that are balanced enough, rather
than letting one showing's difference in load decide everything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import expit

LOAD_STEP = 2
INFORMATION_STEP = 0.1


@dataclass(frozen=True, eq=False)
class Catalogue:
    """The arena's pairs as parallel arrays (N pairs)."""

    ids: npt.NDArray[np.int64]
    model_a: npt.NDArray[np.int64]  # indices into the release's writers
    model_b: npt.NDArray[np.int64]
    scenario: npt.NDArray[np.int64]  # index into the release's scenarios
    shown: npt.NDArray[np.int64]  # how often each pair has been shown
    n_models: int
    n_scenarios: int


def choose_pair(
    catalogue: Catalogue, *, exclude: npt.ArrayLike = (), ratings: npt.ArrayLike | None = None,
    rng: np.random.Generator,
) -> int | None:
    """The id of the pair to show next, or None when every pair is excluded."""
    available = np.flatnonzero(~np.isin(catalogue.ids, np.asarray(exclude, dtype=np.int64)))
    if not len(available):
        return None
    keys = sort_keys(catalogue, ratings)[:, available]
    # lexsort sorts by the last key first: the random draw last, the pairing load first.
    order = np.lexsort((rng.random(len(available)), *keys[::-1]))
    return int(catalogue.ids[available[order[0]]])


def sort_keys(catalogue: Catalogue, ratings: npt.ArrayLike | None = None) -> np.ndarray:
    """[4, N]: pairing load, scenario load, pair load, uninformativeness (see the
    docstring)."""
    shown = catalogue.shown.astype(np.float64)
    scenario_shown = np.bincount(catalogue.scenario, shown, catalogue.n_scenarios)
    return np.array([
        np.floor(_pairing_load(catalogue) / LOAD_STEP),
        np.floor(scenario_shown[catalogue.scenario] / LOAD_STEP),
        np.floor(shown / LOAD_STEP),
        np.round(_uninformativeness(catalogue, ratings) / INFORMATION_STEP),
    ])


def _pairing_load(catalogue: Catalogue) -> np.ndarray:
    """[N]: how often each pair's two writers were shown together, in either order (pairs
    list the lower text id first, so one pairing of writers comes in both orders)."""
    low = np.minimum(catalogue.model_a, catalogue.model_b)
    high = np.maximum(catalogue.model_a, catalogue.model_b)
    pairing = low * catalogue.n_models + high
    together = np.bincount(pairing, catalogue.shown.astype(np.float64),
                           catalogue.n_models ** 2)
    return together[pairing]


def _uninformativeness(catalogue: Catalogue, ratings: npt.ArrayLike | None) -> np.ndarray:
    if ratings is None:
        return np.zeros(len(catalogue.ids))
    strength = np.nan_to_num(np.asarray(ratings, dtype=np.float64), nan=0.0)
    preferred = expit(strength[catalogue.model_a] - strength[catalogue.model_b])
    return 1.0 - 4.0 * preferred * (1.0 - preferred)
