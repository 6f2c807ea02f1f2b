"""Perturbation stability (ImageNet-P): flip probability, top-5 distance, FR, mFR, T5D, mT5D.

From Hendrycks & Dietterich, *Benchmarking Neural Network Robustness to Common Corruptions and
Perturbations* (ICLR 2019), section 4 and Appendix C, checked against the reference
evaluation script (hendrycks/robustness, ``ImageNet-P/test.py``).

Which frames are compared
-------------------------
For ``m`` sequences of ``n`` frames (frame 0 first):

* **temporal** sequences (``noise=False``) compare frame ``j`` with frame ``j - d`` for
  ``j = d .. n-1``, with ``d`` the difficulty ``stride`` (``n - d`` pairs per sequence);
* **noise** sequences (``noise=True``) compare every frame ``j = 1 .. n-1`` with frame 0, the
  clean one; the stride is ignored (the harder noise datasets are separate sequences).

Each sequence's pairs are averaged, then the sequences (all sequences have the same number of
pairs, so this equals the plain mean over all pairs, as in the reference script).

Rankings
--------
Top-5 distances take *rankings*: integer class indices ordered from most to least likely,
shape (sequences, frames, K) with K >= 5 (``np.argsort(-scores, kind="stable")``, or the stored
top-k indices; :func:`rankings_from_scores` does it). The Zipf distance needs full rankings
(K = number of classes).

The permutation sigma of a pair is sigma(r) = the rank in the later frame of the class ranked
r in the earlier frame (1-based), as in the reference script. The top-5 distance of sigma is

* paper: ``d(sigma) = sum_{i=1..5} sum_{j=min(i,sigma(i))+1..max(i,sigma(i))} [1 <= j-1 <= 5]``;
* reference code: ``sum_{r=1..5} |(r-1) - min(sigma(r)-1, 5)|``.

They agree on every permutation: for r <= 5 and sigma(r) <= 6 both count |r - sigma(r)|, and
for sigma(r) > 6 both count 6 - r (the paper's indicator cuts the inner range at j = 6, the
code's ``min`` caps the new rank at 6). :func:`permutation_top5_distance` implements both, and
the tests check them against each other exhaustively on small permutations. Note the distance
is not symmetric: moving the top-5 down by one (sigma(r) = r + 1) costs 5, the inverse 9.

Units: flip probabilities are fractions (the paper prints percent: 23.65 means 0.2365); top-5
distances are in rank positions (0..25); FR, T5D ratios and mFR/mT5D are ratios, 1.0 for the
baseline (the paper prints 100 x).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Union

import numpy as np

from ..errors import InputError
from ..registry import Registry
from ..suites import ALEXNET_P_SOURCE, IMAGENET_P_PERTURBATIONS, PERTURBATION_SUBSETS
from ._checks import (
    as_bounded_array,
    as_float_array,
    as_int_array,
    check_nonempty_mapping,
    check_positive_int,
    check_fraction,
    check_scalar,
    numbers_only,
    require_keys,
)
from .ratios import DefinedMean, NormalisedTerm, UndefinedTermsWarning, mean_of_defined, normalised_term

__all__ = [
    "TEST_PERTURBATIONS",
    "VALIDATION_PERTURBATIONS",
    "ALL_PERTURBATIONS",
    "NOISE_PERTURBATIONS",
    "StabilityBaseline",
    "get_stability_baseline",
    "list_stability_baselines",
    "perturbation_subset",
    "frame_pairs",
    "rankings_from_scores",
    "flip_counts",
    "flip_probability",
    "sequence_flip_probabilities",
    "permutation_top5_distance",
    "pair_top5_distances",
    "top5_distance",
    "sequence_top5_distances",
    "zipf_distance",
    "flip_rate",
    "flip_rates",
    "mfr",
    "top5_distance_rates",
    "mt5d",
    "flip_rate_terms",
    "top5_distance_rate_terms",
    "mfr_detail",
    "mt5d_detail",
]

#: The 10 test and 4 validation perturbations of ImageNet-P, all 14, and those whose sequences are
#: independent noise draws (compared with frame 0): from the plain table :mod:`robustlab.suites`,
#: which the perturbation catalog declares with the generators.
TEST_PERTURBATIONS: tuple[str, ...] = PERTURBATION_SUBSETS["test"]
VALIDATION_PERTURBATIONS: tuple[str, ...] = PERTURBATION_SUBSETS["validation"]
ALL_PERTURBATIONS: tuple[str, ...] = PERTURBATION_SUBSETS["all"]
NOISE_PERTURBATIONS: tuple[str, ...] = PERTURBATION_SUBSETS["noise"]

#: The subset names :func:`perturbation_subset` accepts.
SUBSETS = ("test", "benchmark", "validation", "holdout", "all")


def perturbation_subset(subset: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``test``/``benchmark`` (10), ``validation``/``holdout`` (4), ``all`` (14) or a list."""
    if isinstance(subset, str):
        if subset not in SUBSETS:
            raise InputError(
                f"unknown perturbation subset {subset!r}; use one of {', '.join(SUBSETS)} or a list of names."
            )
        return PERTURBATION_SUBSETS[subset]
    names = tuple(subset)
    if not names:
        raise InputError("the perturbation subset is empty: give at least one perturbation name.")
    return names


# --------------------------------------------------------------------------------------------
# Pairs and rankings


def frame_pairs(n_frames: int, *, noise: bool, stride: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Indices (earlier, later) of the frame pairs compared in a sequence of ``n_frames``.

    Returns two int arrays of equal length: ``(0, j)`` for j = 1..n-1 when ``noise``, else
    ``(j - stride, j)`` for j = stride..n-1.
    """
    n = check_positive_int(n_frames, "n_frames", minimum=2)
    d = check_positive_int(stride, "stride")
    if not isinstance(noise, (bool, np.bool_)):
        raise InputError(f"noise must be True (noise sequence) or False (temporal), got {noise!r}.")
    if noise:
        later = np.arange(1, n)
        return np.zeros_like(later), later
    if d >= n:
        raise InputError(
            f"stride {d} leaves no frame pairs in sequences of {n} frames; use a stride < {n}."
        )
    later = np.arange(d, n)
    return later - d, later


def rankings_from_scores(scores: Any, k: int | None = None) -> np.ndarray:
    """Class indices ordered by decreasing score along the last axis (ties: lower index first,
    as ``scipy.stats.rankdata(-x, method="ordinal")`` in the reference); keep the first ``k``."""
    arr = as_float_array(scores, "scores")
    if arr.ndim < 1:
        raise InputError("scores must have a class axis (last axis).")
    order = np.argsort(-arr, axis=-1, kind="stable")
    if k is not None:
        k = check_positive_int(k, "k")
        order = order[..., :k]
    return order


def _predictions(predictions: Any) -> np.ndarray:
    arr = as_int_array(predictions, "predictions", ndim=2)
    if arr.shape[1] < 2:
        raise InputError(
            f"predictions must hold at least 2 frames per sequence, got shape {arr.shape}."
        )
    return arr


def _rankings(rankings: Any, *, keep: int | None = 5) -> np.ndarray:
    """Validated rankings; only the first ``keep`` columns are copied and checked (all when
    None), so top-5 metrics on full 1000-class rankings stay cheap."""
    raw = rankings if isinstance(rankings, np.ndarray) else numbers_only(rankings, "rankings")
    if raw.ndim != 3:
        raise InputError(
            f"rankings must be 3-dimensional (sequences, frames, K), got shape {raw.shape}."
        )
    m, n, k = raw.shape
    if n < 2:
        raise InputError(
            f"rankings must hold at least 2 frames per sequence, got shape {raw.shape}."
        )
    if k < 5:
        raise InputError(
            f"rankings must list at least the top 5 classes per frame (last axis), got {k}."
        )
    arr = as_int_array(raw if keep is None else raw[..., :keep], "rankings", ndim=3)
    srt = np.sort(arr, axis=-1)
    if np.any(srt[..., 1:] == srt[..., :-1]):
        raise InputError(
            "rankings repeat a class within one frame's ranking; each row must list distinct classes."
        )
    return arr


# --------------------------------------------------------------------------------------------
# Flip probability


def flip_counts(predictions: Any, *, noise: bool, stride: int = 1) -> np.ndarray:
    """Number of flips per sequence (so reports can show which sequences flip most).

    Parameters
    ----------
    predictions : array_like of int, shape (sequences, frames)
        Top-1 class per frame.
    noise, stride
        See the module docstring.

    Returns
    -------
    np.ndarray of int64, shape (sequences,)
        Flips out of ``len(frame_pairs(frames, noise=noise, stride=stride)[0])`` pairs.
    """
    preds = _predictions(predictions)
    earlier, later = frame_pairs(preds.shape[1], noise=noise, stride=stride)
    return np.count_nonzero(preds[:, later] != preds[:, earlier], axis=1).astype(np.int64)


def sequence_flip_probabilities(predictions: Any, *, noise: bool, stride: int = 1) -> np.ndarray:
    """Flip probability of each sequence, shape (sequences,), fractions."""
    counts = flip_counts(predictions, noise=noise, stride=stride)
    n_pairs = len(frame_pairs(np.asarray(predictions).shape[1], noise=noise, stride=stride)[0])
    return counts / n_pairs


def flip_probability(predictions: Any, *, noise: bool, stride: int = 1) -> float:
    """Flip probability FP: the fraction of compared frame pairs whose top-1 prediction differs.

    FP = 1/(m (n-1)) sum_i sum_j [p_j != p_{j-1}] for temporal sequences (stride 1), frame 0
    instead of p_{j-1} for noise sequences (Hendrycks & Dietterich 2019, section 4).

    Parameters
    ----------
    predictions : array_like of int, shape (sequences, frames)
        Top-1 predicted class of every frame.
    noise : bool
        True for noise sequences (compare with frame 0), False for temporal ones.
    stride : int
        Difficulty d of temporal sequences (compare frame j with j - d).

    Returns
    -------
    float
        A fraction in [0, 1] (the paper prints percent).
    """
    return float(np.mean(sequence_flip_probabilities(predictions, noise=noise, stride=stride)))


# --------------------------------------------------------------------------------------------
# Top-5 distance


def permutation_top5_distance(sigma: Any, *, formula: str = "reference") -> int:
    """Top-5 distance of one permutation sigma (1-based new ranks of old ranks 1..C).

    ``formula="reference"``: sum_{r=1..5} |(r-1) - min(sigma(r)-1, 5)| (hendrycks'
    ``test.py``); ``formula="paper"``: the double sum of Appendix C. Both give the same value
    for every permutation (see the module docstring). Examples: identity -> 0; swapping ranks
    5 and 6 -> 1; swapping ranks 1 and 5 -> 8; the top-5 shifted down by one rank -> 5.
    """
    s = as_int_array(sigma, "sigma", ndim=1, min_value=1)
    c = s.size
    if c < 5 or not np.array_equal(np.sort(s), np.arange(1, c + 1)):
        raise InputError(
            f"sigma must be a permutation of 1..C with C >= 5, got {s.tolist()[:12]}..."
        )
    if formula == "reference":
        r = np.arange(5)
        return int(np.sum(np.abs(r - np.minimum(s[:5] - 1, 5))))
    if formula == "paper":
        total = 0
        for i in range(1, 6):
            lo, hi = min(i, int(s[i - 1])), max(i, int(s[i - 1]))
            total += sum(1 for j in range(lo + 1, hi + 1) if 1 <= j - 1 <= 5)
        return total
    raise InputError(f"formula must be 'reference' or 'paper', got {formula!r}.")


def _top5_pair_distance(earlier: np.ndarray, later: np.ndarray) -> np.ndarray:
    """Top-5 distance of ranking pairs; arrays (..., K>=5) of class indices, best first."""
    a = earlier[..., :5]
    b = later[..., :5]
    match = a[..., :, None] == b[..., None, :]  # (..., 5 old ranks, 5 new ranks)
    found = match.any(axis=-1)
    # 0-based new rank of each old top-5 class, capped at 5 when it left the top 5
    new_rank = np.where(found, match.argmax(axis=-1), 5)
    return np.abs(np.arange(5) - new_rank).sum(axis=-1)


def pair_top5_distances(rankings: Any, *, noise: bool, stride: int = 1) -> np.ndarray:
    """Top-5 distance of every compared pair, shape (sequences, pairs), int64."""
    ranks = _rankings(rankings)
    earlier, later = frame_pairs(ranks.shape[1], noise=noise, stride=stride)
    return _top5_pair_distance(ranks[:, earlier], ranks[:, later]).astype(np.int64)


def sequence_top5_distances(rankings: Any, *, noise: bool, stride: int = 1) -> np.ndarray:
    """Mean top-5 distance per sequence, shape (sequences,)."""
    return pair_top5_distances(rankings, noise=noise, stride=stride).mean(axis=1)


def top5_distance(rankings: Any, *, noise: bool, stride: int = 1) -> float:
    """Mean top-5 distance over the compared frame pairs (Hendrycks & Dietterich 2019, App. C).

    Parameters
    ----------
    rankings : array_like of int, shape (sequences, frames, K), K >= 5
        Class indices ordered best first for every frame (see :func:`rankings_from_scores`).
    noise, stride
        Which frames are compared (module docstring).

    Returns
    -------
    float
        Mean distance in rank positions (0 = identical top-5 order; the paper's AlexNet values
        range 0.70..5.76).
    """
    return float(np.mean(sequence_top5_distances(rankings, noise=noise, stride=stride)))


def zipf_distance(rankings: Any, *, noise: bool, stride: int = 1) -> float:
    """Mean Zipf-weighted ranking distance, sum_r |1/r - 1/sigma(r)| / r over all classes.

    The "Zipf" variant of the reference script. ``rankings`` must be full rankings: shape
    (sequences, frames, C), each row a permutation of 0..C-1.
    """
    ranks = _rankings(rankings, keep=None)
    c = ranks.shape[-1]
    if ranks.min() < 0 or ranks.max() >= c:
        raise InputError(
            f"zipf_distance needs full rankings: every row a permutation of 0..{c - 1}; "
            f"got class indices up to {int(ranks.max())}. Pass all classes (rankings_from_scores(scores))."
        )
    earlier, later = frame_pairs(ranks.shape[1], noise=noise, stride=stride)
    a = ranks[:, earlier]
    b = ranks[:, later]
    # rank (1-based) of each class in the later frame, then sigma(r) = new rank of old rank r
    new_rank_of_class = np.argsort(b, axis=-1) + 1
    sigma = np.take_along_axis(new_rank_of_class, a, axis=-1)
    recip = 1.0 / np.arange(1, c + 1)
    dist = (np.abs(recip - 1.0 / sigma) * recip).sum(axis=-1)
    return float(dist.mean(axis=1).mean())


# --------------------------------------------------------------------------------------------
# Baselines and normalised rates


@dataclass(frozen=True)
class StabilityBaseline:
    """Flip probabilities (fractions) and top-5 distances (rank positions) of a reference model.

    ``flip_probability_margin`` and ``top5_distance_margin`` (same units, 95 % half-widths) are
    the sampling margins of values measured here (a stored run); None for published numbers
    (margin 0). A rate is undefined where the baseline's value is not above its margin.
    """

    name: str
    flip_probability: Mapping[str, float]
    top5_distance: Mapping[str, float]
    source: str = ""
    flip_probability_margin: Mapping[str, float] | None = None
    top5_distance_margin: Mapping[str, float] | None = None

    def margin(self, which: str, perturbation: str) -> float:
        """Sampling margin of ``which`` (``"flip_probability"`` or ``"top5_distance"``) for
        ``perturbation``; 0 for published values."""
        margins = getattr(self, f"{which}_margin") or {}
        return float(margins.get(perturbation, 0.0))

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "flip_probability": dict(self.flip_probability),
            "top5_distance": dict(self.top5_distance),
            "source": self.source,
            "flip_probability_margin": None if self.flip_probability_margin is None
            else dict(self.flip_probability_margin),
            "top5_distance_margin": None if self.top5_distance_margin is None else dict(self.top5_distance_margin),
        }


_BASELINES: Registry[StabilityBaseline] = Registry("stability baseline")
_BASELINES.add(
    "alexnet",
    StabilityBaseline(
        name="alexnet",
        flip_probability=MappingProxyType({p.name: p.flip_probability for p in IMAGENET_P_PERTURBATIONS}),
        top5_distance=MappingProxyType({p.name: p.top5_distance for p in IMAGENET_P_PERTURBATIONS}),
        source=ALEXNET_P_SOURCE,
    ),
)


def get_stability_baseline(name: str) -> StabilityBaseline:
    """The built-in ImageNet-P baseline called ``name`` (``"alexnet"``)."""
    return _BASELINES.get(name)


def list_stability_baselines() -> list[str]:
    """Names of the built-in ImageNet-P baselines."""
    return _BASELINES.names()


BaselineLike = Union[str, StabilityBaseline, Mapping[str, float]]


def _baseline_values(baseline: BaselineLike, which: str) -> tuple[str, Mapping[str, float], Mapping[str, float]]:
    """(name, values, sampling margins) of ``which`` in ``baseline``."""
    if isinstance(baseline, str):
        baseline = get_stability_baseline(baseline)
    if isinstance(baseline, StabilityBaseline):
        values = getattr(baseline, which)
        return baseline.name, values, {p: baseline.margin(which, p) for p in values}
    if isinstance(baseline, Mapping):
        check_nonempty_mapping(baseline, "baseline")
        values = {str(k): check_scalar(v, f"baseline[{k!r}]") for k, v in baseline.items()}
        return "custom", values, dict.fromkeys(values, 0.0)
    raise InputError(
        f"baseline must be a name such as 'alexnet', a StabilityBaseline or a mapping "
        f"{{perturbation: value}}; got {type(baseline).__name__}."
    )


#: The largest top-5 distance of one frame pair (the five classes of the top 5 all moved as
#: far as the reference formula counts): a mean T5D above it is not a top-5 distance.
MAX_TOP5_DISTANCE = 18


def _check_stability_value(value: Any, name: str, which: str) -> float:
    """A flip probability (a fraction) or a mean top-5 distance (in [0, MAX_TOP5_DISTANCE])."""
    if which == "flip_probability":
        return check_fraction(value, name)
    arr = as_bounded_array(value, name, 0, MAX_TOP5_DISTANCE, what="a mean top-5 distance")
    if arr.ndim != 0:
        raise InputError(f"{name} must be a single number, got shape {arr.shape}.")
    return float(arr)


def _rate_terms(
    values: Mapping[str, Any], baseline: BaselineLike, which: str, subset, label: str
) -> dict[str, NormalisedTerm]:
    check_nonempty_mapping(values, label)
    vals = {str(k): _check_stability_value(v, f"{label}[{k!r}]", which) for k, v in values.items()}
    name, base, margins = _baseline_values(baseline, which)
    if isinstance(baseline, Mapping):
        for k, v in base.items():
            _check_stability_value(v, f"baseline[{k!r}]", which)
    names = perturbation_subset(subset) if subset is not None else tuple(vals)
    require_keys(vals, names, label, what="perturbation")
    require_keys(base, names, f"baseline {name!r}", what="perturbation")
    return {p: normalised_term(p, vals[p], base[p], margins[p]) for p in names}


def _rates(
    values: Mapping[str, Any], baseline: BaselineLike, which: str, subset, label: str
) -> dict[str, float]:
    terms = _rate_terms(values, baseline, which, subset, label)
    bad = {p: t for p, t in terms.items() if not t.defined}
    if bad:
        name = _baseline_values(baseline, which)[0]
        raise InputError(f"baseline {name!r} has {which} within its sampling error (or 0) for "
                         f"{', '.join(bad)} ({'; '.join(t.reason for t in bad.values())}); the ratio is undefined. "
                         f"Use {'flip_rate_terms' if which == 'flip_probability' else 'top5_distance_rate_terms'}() "
                         "for the defined terms.")
    return {p: float(t.value) for p, t in terms.items()}


def _defined_mean(terms: Mapping[str, NormalisedTerm], what: str) -> float:
    detail = mean_of_defined(terms.values())
    if detail.value is None:
        raise InputError(f"{what} is undefined: the baseline's value is within its sampling error (or 0) for every "
                         f"perturbation ({', '.join(detail.undefined)}).")
    if detail.undefined:
        warnings.warn(f"{what} averages {detail.n_used} of {detail.n_terms} perturbations: undefined for "
                      f"{', '.join(detail.undefined)} (the baseline's value is within its sampling error).",
                      UndefinedTermsWarning, stacklevel=3)
    return float(detail.value)


def flip_rate(
    flip_probability: float, perturbation: str, *, baseline: BaselineLike = "alexnet"
) -> float:
    """Flip rate FR_p = FP[f, p] / FP[baseline, p] (a ratio; 1.0 = AlexNet).

    ``flip_probability`` is a fraction (0.2365, not 23.65).
    """
    return _rates(
        {perturbation: flip_probability}, baseline, "flip_probability", None, "flip_probability"
    )[perturbation]


def flip_rates(
    flip_probabilities: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] | None = None,
) -> dict[str, float]:
    """FR for each perturbation of ``flip_probabilities`` (or of ``subset``).

    Raises InputError where the baseline's flip probability is 0 or within its sampling margin
    (see :func:`flip_rate_terms`)."""
    return _rates(flip_probabilities, baseline, "flip_probability", subset, "flip_probabilities")


def flip_rate_terms(
    flip_probabilities: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] | None = None,
) -> dict[str, NormalisedTerm]:
    """FR per perturbation as :class:`~robustlab.metrics.ratios.NormalisedTerm` (value None, with
    the reason, where the baseline's flip probability is not above its sampling margin)."""
    return _rate_terms(flip_probabilities, baseline, "flip_probability", subset, "flip_probabilities")


def mfr_detail(
    flip_probabilities: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] = "test",
) -> DefinedMean:
    """mFR with what it averaged: the mean of the defined flip rates over ``subset``."""
    return mean_of_defined(flip_rate_terms(flip_probabilities, baseline=baseline, subset=subset).values())


def mfr(
    flip_probabilities: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] = "test",
) -> float:
    """Mean flip rate over the 10 test perturbations (a ratio: AlexNet 1.0; ResNet-50 0.580).

    Only defined flip rates are averaged (:func:`flip_rate_terms`); an
    :class:`~robustlab.metrics.ratios.UndefinedTermsWarning` names any left out.

    Parameters
    ----------
    flip_probabilities : Mapping[str, float]
        ``{perturbation: FP}``, fractions; every perturbation of ``subset`` must be present.
    baseline : str, StabilityBaseline or Mapping
        ``"alexnet"`` or the flip probabilities of another model.
    """
    return _defined_mean(flip_rate_terms(flip_probabilities, baseline=baseline, subset=subset), "mFR")


def top5_distance_rates(
    top5_distances: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] | None = None,
) -> dict[str, float]:
    """T5D ratio per perturbation: T5D[f, p] / T5D[baseline, p]."""
    return _rates(top5_distances, baseline, "top5_distance", subset, "top5_distances")


def top5_distance_rate_terms(
    top5_distances: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] | None = None,
) -> dict[str, NormalisedTerm]:
    """T5D ratios as :class:`~robustlab.metrics.ratios.NormalisedTerm` (see :func:`flip_rate_terms`)."""
    return _rate_terms(top5_distances, baseline, "top5_distance", subset, "top5_distances")


def mt5d_detail(
    top5_distances: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] = "test",
) -> DefinedMean:
    """mT5D with what it averaged: the mean of the defined T5D ratios over ``subset``."""
    return mean_of_defined(top5_distance_rate_terms(top5_distances, baseline=baseline, subset=subset).values())


def mt5d(
    top5_distances: Mapping[str, float],
    *,
    baseline: BaselineLike = "alexnet",
    subset: str | list[str] = "test",
) -> float:
    """Mean top-5 distance ratio over the 10 test perturbations (AlexNet 1.0; ResNet-50 0.783).
    Only defined ratios are averaged (as :func:`mfr`)."""
    return _defined_mean(top5_distance_rate_terms(top5_distances, baseline=baseline, subset=subset), "mT5D")
