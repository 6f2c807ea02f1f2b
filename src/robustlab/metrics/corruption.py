"""Classification under common corruptions: CE, mCE, relative mCE, mean corruption accuracy.

From Hendrycks & Dietterich, *Benchmarking Neural Network Robustness to Common Corruptions and
Perturbations* (ICLR 2019), section 4, and RobustBench (Croce et al., 2021) for the plain mean
accuracy over the 15 x 5 corruption cells.

Units
-----
All inputs and outputs are **fractions** (0.239, not 23.9). Error rates ``E`` are top-1 errors
in [0, 1]. Corruption errors are ratios to the baseline: the AlexNet baseline has CE = mCE =
relative mCE = **1.0** exactly; papers print these ratios as percent (mCE 76.7 means 0.767):
use :func:`robustlab.metrics.percent` to print them that way.

Input format
------------
A model's corruption errors are a mapping ``{corruption: value}`` where ``value`` is either the
five errors of severities 1..5 (shape (5,)) or their mean (a scalar). Because CE is a ratio of
sums over the same five severities, only the mean matters; partial severity lists are refused.

Undefined terms
---------------
A baseline measured on a small set (a :class:`CorruptionBaseline` with ``samples``) has
sampling error. A corruption's relative CE divides by the baseline's *rise* in error from clean
data; when that rise is not larger than its sampling margin (95 %, see
:mod:`robustlab.metrics.ratios`) -- or the baseline's error even drops -- the term is undefined:
:func:`relative_ce_terms` says why, and the relative mCE averages the defined terms only
(:func:`relative_mce_detail` names them). The same holds for CE when the baseline's error is not
above its margin. The published AlexNet has no sample sizes (margin 0), so with it every term is
defined and the paper's definitions apply unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Union

import math
import warnings

import numpy as np

from ..errors import InputError
from ..registry import Registry
from ..suites import ALEXNET_C_SOURCE, ALEXNET_CLEAN_ERROR, CORRUPTION_SUBSETS, IMAGENET_C_CORRUPTIONS, SEVERITIES
from ._checks import (
    as_fraction_array,
    check_fraction,
    check_nonempty_mapping,
    require_keys,
    to_builtin,
)
from .ratios import (
    Z_95,
    DefinedMean,
    NormalisedTerm,
    UndefinedTermsWarning,
    binomial_margin,
    mean_of_defined,
    normalised_term,
)

__all__ = [
    "BENCHMARK_CORRUPTIONS",
    "HOLDOUT_CORRUPTIONS",
    "ALL_CORRUPTIONS",
    "N_SEVERITIES",
    "CorruptionBaseline",
    "CorruptionSummary",
    "corruption_subset",
    "get_corruption_baseline",
    "list_corruption_baselines",
    "corruption_errors",
    "mce",
    "relative_corruption_errors",
    "relative_ce_terms",
    "corruption_error_terms",
    "relative_mce",
    "relative_mce_detail",
    "UndefinedTermsWarning",
    "mean_corruption_accuracy",
    "corruption_summary",
]

#: The 15 benchmark corruptions of ImageNet-C, by group (noise, blur, weather, digital), the 4
#: held-out (validation) ones and all 19: from the plain table :mod:`robustlab.suites`, which the
#: corruption catalog declares with the kernels.
BENCHMARK_CORRUPTIONS: tuple[str, ...] = CORRUPTION_SUBSETS["benchmark"]
HOLDOUT_CORRUPTIONS: tuple[str, ...] = CORRUPTION_SUBSETS["holdout"]
ALL_CORRUPTIONS: tuple[str, ...] = CORRUPTION_SUBSETS["all"]
#: Severities per corruption.
N_SEVERITIES = len(SEVERITIES)

#: The subset names :func:`corruption_subset` accepts.
SUBSETS = tuple(CORRUPTION_SUBSETS)

ErrorsLike = Mapping[str, Any]


def corruption_subset(subset: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Names of a corruption subset: ``benchmark``/``common`` (15), ``holdout``/``validation``
    (4), ``all`` (19), or an explicit list of names (returned as a tuple)."""
    if isinstance(subset, str):
        if subset not in SUBSETS:
            raise InputError(
                f"unknown corruption subset {subset!r}; use one of {', '.join(SUBSETS)} "
                "or give a list of corruption names."
            )
        return CORRUPTION_SUBSETS[subset]
    names = tuple(subset)
    if not names:
        raise InputError("the corruption subset is empty: give at least one corruption name.")
    return names


@dataclass(frozen=True)
class CorruptionBaseline:
    """Mean top-1 error per corruption (fraction, mean over severities 1..5) of a reference model.

    Attributes
    ----------
    name : str
        Registry name (``"alexnet"``).
    errors : Mapping[str, float]
        ``{corruption: mean error over severities}``, fractions.
    clean_error : float or None
        Top-1 error on clean data (needed for relative CE).
    source : str
        Where the numbers come from.
    samples : Mapping[str, int] or None
        ``{corruption: images per severity}`` when the errors were measured here (a stored run):
        they give the errors' sampling margins. None for published numbers (margin 0).
    clean_samples : int or None
        Images behind ``clean_error`` (None: published).
    """

    name: str
    errors: Mapping[str, float]
    clean_error: float | None = None
    source: str = ""
    samples: Mapping[str, int] | None = None
    clean_samples: int | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "errors": dict(self.errors),
            "clean_error": self.clean_error,
            "source": self.source,
            "samples": None if self.samples is None else dict(self.samples),
            "clean_samples": self.clean_samples,
        }

    def error_margin(self, corruption: str, z: float = Z_95) -> float:
        """Sampling margin (95 % by default) of the mean error over the 5 severities of
        ``corruption``; 0 for published numbers. Uses the mean error for every severity, which
        bounds the binomial variance of the mean from above."""
        n = (self.samples or {}).get(corruption)
        return binomial_margin(self.errors[corruption], N_SEVERITIES * n, z) if n else 0.0

    def clean_margin(self, z: float = Z_95) -> float:
        """Sampling margin of the clean error (0 when published or unknown)."""
        if self.clean_error is None or not self.clean_samples:
            return 0.0
        return binomial_margin(self.clean_error, self.clean_samples, z)

    def rise_margin(self, corruption: str, z: float = Z_95) -> float:
        """Sampling margin of the rise ``mean error under corruption - clean error`` (both margins
        combined as independent: conservative for errors on the same images)."""
        return math.hypot(self.error_margin(corruption, z), self.clean_margin(z))


_BASELINES: Registry[CorruptionBaseline] = Registry("corruption baseline")
_BASELINES.add(
    "alexnet",
    CorruptionBaseline(
        name="alexnet",
        errors=MappingProxyType({c.name: c.alexnet for c in IMAGENET_C_CORRUPTIONS}),
        clean_error=ALEXNET_CLEAN_ERROR,
        source=ALEXNET_C_SOURCE,
    ),
)


def get_corruption_baseline(name: str) -> CorruptionBaseline:
    """The built-in baseline called ``name`` (see :func:`list_corruption_baselines`)."""
    return _BASELINES.get(name)


def list_corruption_baselines() -> list[str]:
    """Names of the built-in corruption baselines."""
    return _BASELINES.names()


def _mean_error(value: Any, name: str) -> float:
    arr = as_fraction_array(value, name)
    if arr.ndim == 0:
        return float(arr)
    if arr.shape != (N_SEVERITIES,):
        raise InputError(
            f"{name} must be one number (the mean over severities) or {N_SEVERITIES} numbers "
            f"(severities 1..{N_SEVERITIES}); got shape {arr.shape}."
        )
    return float(arr.mean())


def _mean_errors(errors: ErrorsLike, name: str) -> dict[str, float]:
    check_nonempty_mapping(errors, name)
    return {str(c): _mean_error(v, f"{name}[{c!r}]") for c, v in errors.items()}


BaselineLike = Union[str, CorruptionBaseline, ErrorsLike]


def _resolve_baseline(
    baseline: BaselineLike, clean_error: float | None = None
) -> CorruptionBaseline:
    if isinstance(baseline, str):
        base = get_corruption_baseline(baseline)
    elif isinstance(baseline, CorruptionBaseline):
        base = baseline
    elif isinstance(baseline, Mapping):
        base = CorruptionBaseline("custom", _mean_errors(baseline, "baseline"), None, "given")
    else:
        raise InputError(
            f"baseline must be a name such as 'alexnet', a CorruptionBaseline or a mapping "
            f"{{corruption: error}}; got {type(baseline).__name__}."
        )
    if clean_error is not None:
        base = CorruptionBaseline(
            base.name, base.errors, check_fraction(clean_error, "baseline_clean_error"), base.source,
            base.samples, None,
        )
    return base


def _selected(
    errors: Mapping[str, float], base: CorruptionBaseline, subset, name: str
) -> tuple[str, ...]:
    names = corruption_subset(subset) if subset is not None else tuple(errors)
    require_keys(errors, names, name, what="corruption")
    require_keys(base.errors, names, f"baseline {base.name!r}", what="corruption")
    return names


def _refuse_undefined(terms: Mapping[str, NormalisedTerm], what: str, detail: str) -> dict[str, float]:
    bad = {c: t for c, t in terms.items() if not t.defined}
    if bad:
        reasons = "; ".join(f"{c}: {t.reason}" for c, t in bad.items())
        raise InputError(f"{what} is undefined for {', '.join(bad)} ({reasons}). Use {detail} to get the "
                         "defined terms with the reasons for the others.")
    return {c: float(t.value) for c, t in terms.items()}


def corruption_error_terms(
    errors: ErrorsLike, *, baseline: BaselineLike = "alexnet", subset: str | list[str] | None = None,
    z: float = Z_95,
) -> dict[str, NormalisedTerm]:
    """CE_c of each corruption as a :class:`~robustlab.metrics.ratios.NormalisedTerm`:
    numerator the model's mean error, denominator the baseline's, defined when the baseline's
    error exceeds its sampling margin (``z`` standard errors; 0 for published baselines)."""
    means = _mean_errors(errors, "errors")
    base = _resolve_baseline(baseline)
    names = _selected(means, base, subset, "errors")
    return {c: normalised_term(c, means[c], base.errors[c], base.error_margin(c, z)) for c in names}


def corruption_errors(
    errors: ErrorsLike, *, baseline: BaselineLike = "alexnet", subset: str | list[str] | None = None
) -> dict[str, float]:
    """Corruption error CE_c of each corruption: sum_s E[f,c,s] / sum_s E[base,c,s].

    Hendrycks & Dietterich (2019), eq. for CE^f_c.

    Parameters
    ----------
    errors : Mapping[str, float or array of shape (5,)]
        Top-1 error of the model per corruption: severities 1..5 or their mean; fractions.
    baseline : str, CorruptionBaseline or Mapping
        ``"alexnet"`` (built in), a :class:`CorruptionBaseline`, or the errors of another model
        in the same format as ``errors``.
    subset : str or list of str, optional
        Corruptions to compute; default every corruption in ``errors``.

    Returns
    -------
    dict[str, float]
        ``{corruption: CE}`` as ratios (1.0 = the baseline; papers print 100 x CE).

    Raises
    ------
    InputError
        When a baseline error is 0 or within its sampling error (see
        :func:`corruption_error_terms` for the defined terms and the reasons).
    """
    return _refuse_undefined(corruption_error_terms(errors, baseline=baseline, subset=subset), "CE",
                             "corruption_error_terms()")


def mce(
    errors: ErrorsLike, *, baseline: BaselineLike = "alexnet", subset: str | list[str] = "benchmark"
) -> float:
    """Mean corruption error: the mean of CE_c over the 15 benchmark corruptions (by default).

    Returns a ratio: 1.0 for the baseline itself (printed as mCE 100 in the papers); the
    ResNet-50 of the paper has 0.767. ``errors`` and ``baseline`` as in :func:`corruption_errors`.
    Every corruption of ``subset`` must be present; others in ``errors`` are ignored.
    """
    ce = corruption_errors(errors, baseline=baseline, subset=subset)
    return float(np.mean(list(ce.values())))


def relative_ce_terms(
    errors: ErrorsLike,
    clean_error: float,
    *,
    baseline: BaselineLike = "alexnet",
    baseline_clean_error: float | None = None,
    subset: str | list[str] | None = None,
    z: float = Z_95,
    samples: int | Mapping[str, int] | None = None,
) -> dict[str, NormalisedTerm]:
    """Relative CE per corruption, with the reason where it is undefined.

    relative CE_c = sum_s (E[f,c,s] - E[f,clean]) / sum_s (E[base,c,s] - E[base,clean])
    (Hendrycks & Dietterich 2019). The term's numerator is the model's rise in mean error from
    clean data, its denominator the baseline's (fractions). It is undefined when the baseline's
    rise is not larger than its sampling margin (``z`` standard errors of the baseline's errors,
    from :attr:`CorruptionBaseline.samples`; 0 for the published AlexNet, whose rises are all
    positive, so the paper's definition stands) -- including when the baseline's error drops --
    and when the *model's* error does not move with severity (:func:`flat_error`: its errors at
    the 5 severities and clean are the same, at most one sample apart; exactly equal without
    ``samples``): a model at chance level cannot degrade, and its relative CE of 0 would read as
    perfect robustness.

    Parameters
    ----------
    errors, clean_error, baseline, baseline_clean_error, subset
        As in :func:`relative_corruption_errors`.
    z : float
        Standard errors in the margin (1.96: 95 %).
    samples : int or mapping, optional
        The model's samples per setting (one number, or per corruption): errors one sample apart
        count as not moving. None: only exactly equal errors count so.

    Returns
    -------
    dict[str, NormalisedTerm]
        ``{corruption: term}``; ``term.value`` is the ratio or None, ``term.reason`` why not.
    """
    means = _mean_errors(errors, "errors")
    clean = check_fraction(clean_error, "clean_error")
    base = _resolve_baseline(baseline, baseline_clean_error)
    if base.clean_error is None:
        raise InputError(
            f"baseline {base.name!r} has no clean error: pass baseline_clean_error=<fraction>."
        )
    names = _selected(means, base, subset, "errors")
    terms = {c: normalised_term(c, means[c] - clean, base.errors[c] - base.clean_error, base.rise_margin(c, z))
             for c in names}
    for c in names:
        per_severity = np.asarray(errors[c], dtype=float).reshape(-1)
        n = samples.get(c) if isinstance(samples, Mapping) else samples
        flat = flat_error(per_severity, clean, n, z) if per_severity.size == N_SEVERITIES else None
        if flat is not None:
            terms[c] = terms[c].undefined_by_model(flat)
    return terms


def flat_error(errors: Any, clean_error: float, samples: int | None = None, z: float = Z_95) -> str | None:
    """Why a model's error does not move with severity (its errors at every severity and clean are
    the same: at most one sample apart over ``samples`` images per setting, exactly equal without
    ``samples``), or None when it moves. ``z`` is kept for the signature of the other rules.

    >>> flat_error([0.667] * 5, 0.667)
    "this model's error does not move with severity (66.7 % clean and at every severity): at chance level or blind to the corruption, it has no rise to compare"
    >>> flat_error([0.3, 0.35, 0.4, 0.5, 0.6], 0.25) is None
    True
    """
    values = np.append(np.asarray(errors, dtype=float).reshape(-1), float(clean_error))
    spread = float(values.max() - values.min())
    tolerance = 1.0 / samples if samples else 0.0
    if spread > tolerance + 1e-12:
        return None
    where = (f"{100 * values.min():.1f} % clean and at every severity" if spread < 1e-12 else
             f"{100 * values.min():.1f}-{100 * values.max():.1f} % clean and at every severity, one sample apart")
    return (f"this model's error does not move with severity ({where}): at chance level or blind to the corruption, "
            "it has no rise to compare")


def relative_corruption_errors(
    errors: ErrorsLike,
    clean_error: float,
    *,
    baseline: BaselineLike = "alexnet",
    baseline_clean_error: float | None = None,
    subset: str | list[str] | None = None,
) -> dict[str, float]:
    """Relative corruption error per corruption.

    relative CE_c = sum_s (E[f,c,s] - E[f,clean]) / sum_s (E[base,c,s] - E[base,clean])
    (Hendrycks & Dietterich 2019): how much *more* error the corruption causes than clean data,
    relative to the baseline's degradation.

    Parameters
    ----------
    errors : Mapping[str, float or array of shape (5,)]
        Model errors per corruption (fractions).
    clean_error : float
        The model's clean top-1 error (fraction).
    baseline, baseline_clean_error
        The baseline and its clean error; the built-in AlexNet knows its own (0.435). A baseline
        given as a mapping needs ``baseline_clean_error``.
    subset : optional
        As in :func:`corruption_errors`.

    Returns
    -------
    dict[str, float]
        Ratios (1.0 = as much degradation as the baseline).

    Raises
    ------
    InputError
        When a term is undefined: the baseline's error does not rise under the corruption by
        more than its sampling error. :func:`relative_ce_terms` gives every term with its reason.
    """
    terms = relative_ce_terms(errors, clean_error, baseline=baseline, baseline_clean_error=baseline_clean_error,
                              subset=subset)
    return _refuse_undefined(terms, "relative CE", "relative_ce_terms()")


def relative_mce_detail(
    errors: ErrorsLike,
    clean_error: float,
    *,
    baseline: BaselineLike = "alexnet",
    baseline_clean_error: float | None = None,
    subset: str | list[str] = "benchmark",
    z: float = Z_95,
) -> DefinedMean:
    """Relative mCE with what it averaged: the mean of the *defined* relative CE terms
    (:func:`relative_ce_terms`) over ``subset``, the names used and the names left out."""
    return mean_of_defined(relative_ce_terms(errors, clean_error, baseline=baseline,
                                             baseline_clean_error=baseline_clean_error, subset=subset,
                                             z=z).values())


def relative_mce(
    errors: ErrorsLike,
    clean_error: float,
    *,
    baseline: BaselineLike = "alexnet",
    baseline_clean_error: float | None = None,
    subset: str | list[str] = "benchmark",
) -> float:
    """Relative mCE: the mean of relative CE_c over the 15 benchmark corruptions (a ratio;
    1.0 for the baseline, printed as 100; ResNet-50 in the paper: 1.050).

    Only defined terms are averaged (see :func:`relative_ce_terms`); when some are left out an
    :class:`UndefinedTermsWarning` names them, and :func:`relative_mce_detail` returns them.
    Raises InputError when no term is defined.
    """
    detail = relative_mce_detail(errors, clean_error, baseline=baseline,
                                 baseline_clean_error=baseline_clean_error, subset=subset)
    if detail.value is None:
        raise InputError("relative mCE is undefined: the baseline's error does not rise measurably under any of "
                         f"{', '.join(detail.undefined)}; compare mCE instead.")
    if detail.undefined:
        warnings.warn(f"relative mCE averages {detail.n_used} of {detail.n_terms} corruptions: relative CE is "
                      f"undefined for {', '.join(detail.undefined)} (the baseline's error does not rise by more "
                      "than its sampling error).", UndefinedTermsWarning, stacklevel=2)
    return float(detail.value)


def mean_corruption_accuracy(
    accuracies: ErrorsLike, *, subset: str | list[str] = "benchmark"
) -> float:
    """RobustBench's corruption accuracy: the plain mean accuracy over the 15 x 5 cells.

    Parameters
    ----------
    accuracies : Mapping[str, array of shape (5,) or float]
        Top-1 accuracy (fraction) per corruption and severity 1..5 (or the per-corruption mean).
    subset : str or list
        Corruptions averaged (all must be present).

    Returns
    -------
    float
        Mean accuracy, a fraction.
    """
    means = _mean_errors(accuracies, "accuracies")
    names = corruption_subset(subset)
    require_keys(means, names, "accuracies", what="corruption")
    return float(np.mean([means[c] for c in names]))


@dataclass(frozen=True)
class CorruptionSummary:
    """Everything ImageNet-C reports for one model (all ratios / fractions, see module doc).

    ``relative_corruption_errors`` holds the defined terms only; ``relative_ce_undefined`` says
    why each other one is undefined, and ``relative_mce_terms`` how many terms the relative mCE
    averaged (of ``len(subset)``).
    """

    baseline: str
    subset: tuple[str, ...]
    corruption_errors: Mapping[str, float]
    mce: float
    clean_error: float | None = None
    relative_corruption_errors: Mapping[str, float] | None = None
    relative_mce: float | None = None
    mean_error: float = field(default=float("nan"))
    relative_ce_undefined: Mapping[str, str] | None = None
    relative_mce_terms: int | None = None

    def to_dict(self) -> dict:
        return to_builtin(
            {
                "baseline": self.baseline,
                "subset": list(self.subset),
                "corruption_errors": dict(self.corruption_errors),
                "mce": self.mce,
                "clean_error": self.clean_error,
                "relative_corruption_errors": None
                if self.relative_corruption_errors is None
                else dict(self.relative_corruption_errors),
                "relative_mce": self.relative_mce,
                "relative_mce_terms": self.relative_mce_terms,
                "relative_ce_undefined": None
                if self.relative_ce_undefined is None
                else dict(self.relative_ce_undefined),
                "mean_error": self.mean_error,
            }
        )


def corruption_summary(
    errors: ErrorsLike,
    clean_error: float | None = None,
    *,
    baseline: BaselineLike = "alexnet",
    baseline_clean_error: float | None = None,
    subset: str | list[str] = "benchmark",
) -> CorruptionSummary:
    """CE per corruption, mCE, and (when ``clean_error`` is given) relative CE and relative mCE
    (over the defined terms, see :func:`relative_ce_terms`), plus the unnormalised mean error
    over the subset, in one serialisable record."""
    names = corruption_subset(subset)
    base = _resolve_baseline(baseline, baseline_clean_error)
    ce = corruption_errors(errors, baseline=base, subset=names)
    means = _mean_errors(errors, "errors")
    rce = rmce = undefined = n_terms = None
    if clean_error is not None:
        terms = relative_ce_terms(errors, clean_error, baseline=base, subset=names)
        rce = {c: t.value for c, t in terms.items() if t.defined}
        undefined = {c: t.reason for c, t in terms.items() if not t.defined}
        detail = mean_of_defined(terms.values())
        rmce, n_terms = detail.value, detail.n_used
    return CorruptionSummary(
        baseline=base.name,
        subset=names,
        corruption_errors=ce,
        mce=float(np.mean(list(ce.values()))),
        clean_error=None if clean_error is None else float(clean_error),
        relative_corruption_errors=rce,
        relative_mce=rmce,
        mean_error=float(np.mean([means[c] for c in names])),
        relative_ce_undefined=undefined,
        relative_mce_terms=n_terms,
    )
