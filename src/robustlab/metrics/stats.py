"""Statistics for robustness numbers: exact binomial intervals, Welch's t-test, bootstrap
intervals for accuracy drops, and the least-squares line of perturbed vs original accuracy.

* Clopper & Pearson (1934) exact intervals, used for pm-k accuracies by Shankar et al., *Do
  Image Classifiers Generalize Across Time?* (2019/2021).
* Welch's unequal-variance t-test, used across training seeds by Kunhardt, Deza & Poggio.
* Paired percentile bootstrap of the accuracy drop (original - perturbed) on the same samples.
* Ordinary least squares of perturbed on original accuracy across models with the pointwise
  confidence band of the mean (the "linear trend" plots of Shankar et al. / Taori et al.),
  optionally on probit- or logit-scaled axes.

All accuracies are fractions. Randomness only through an explicit ``rng``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..seeding import RngLike, as_generator
from ._checks import (
    as_float_array,
    as_fraction_array,
    as_int_array,
    check_alpha,
    check_choice,
    check_positive_int,
    to_builtin,
)


def scipy_stats():
    """:mod:`scipy.stats`, imported on first use (it costs about half a second, and most callers of
    this module never need it)."""
    from scipy import stats

    return stats

__all__ = [
    "percent",
    "clopper_pearson",
    "WelchResult",
    "welch_t_test",
    "BootstrapInterval",
    "bootstrap_accuracy_drop",
    "LinearFit",
    "linear_fit",
    "correlation_p_value",
]


def percent(value: Any) -> Any:
    """``100 * value``: fractions/ratios as the papers print them (mCE 0.767 -> 76.7)."""
    arr = as_float_array(value, "value", allow_empty=True)
    out = arr * 100.0
    return float(out) if out.ndim == 0 else out


def clopper_pearson(successes: Any, trials: Any, *, alpha: float = 0.05) -> tuple[Any, Any]:
    """Exact (Clopper-Pearson) two-sided 1 - alpha interval for a binomial proportion.

    Parameters
    ----------
    successes : int or array of int
        k, the number of successes (0 <= k <= n).
    trials : int or array of int
        n >= 1.
    alpha : float
        0.05 for a 95% interval.

    Returns
    -------
    (lower, upper)
        Floats (or arrays, broadcast) in [0, 1]: Beta(alpha/2; k, n-k+1) and
        Beta(1-alpha/2; k+1, n-k) quantiles, with lower = 0 at k = 0 and upper = 1 at k = n.
    """
    a = check_alpha(alpha)
    k = as_int_array(successes, "successes")
    n = as_int_array(trials, "trials", min_value=1)
    try:
        k, n = np.broadcast_arrays(k, n)
    except ValueError:
        raise InputError(
            f"successes and trials do not broadcast: shapes {k.shape} and {n.shape}."
        ) from None
    if np.any(k > n):
        raise InputError(
            f"successes must be <= trials, got k={int(k[k > n][0])} > n={int(n[k > n][0])}."
        )
    with np.errstate(invalid="ignore"):
        lo = np.where(k == 0, 0.0, scipy_stats().beta.ppf(a / 2, np.maximum(k, 1), n - k + 1))
        hi = np.where(k == n, 1.0, scipy_stats().beta.ppf(1 - a / 2, k + 1, np.maximum(n - k, 1)))
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def correlation_p_value(r: Any, n: Any) -> float:
    """Two-sided p-value of a Pearson correlation ``r`` over ``n`` points (the t-test with n - 2
    degrees of freedom); 1.0 when it is undefined (fewer than 3 points, or ``r`` NaN).

    >>> round(correlation_p_value(0.053, 15), 2)
    0.85
    >>> correlation_p_value(0.99, 10) < 1e-6
    True
    """
    for value, name in ((r, "r"), (n, "n")):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InputError(f"{name} must be a number; got {value!r}.")
    r, n = float(r), int(n)
    if n < 3 or not np.isfinite(r):
        return 1.0
    if abs(r) >= 1.0:
        return 0.0
    t = r * np.sqrt((n - 2) / (1.0 - r * r))
    return float(2 * scipy_stats().t.sf(abs(t), n - 2))


@dataclass(frozen=True)
class WelchResult:
    """Welch's t-test of mean(a) vs mean(b)."""

    t: float
    df: float
    p_value: float
    mean_a: float
    mean_b: float
    alpha: float
    significant: bool

    def to_dict(self) -> dict:
        return to_builtin(asdict(self))


def welch_t_test(a: Any, b: Any, *, alpha: float = 0.05) -> WelchResult:
    """Two-sided Welch t-test (unequal variances) of two samples, e.g. R over training seeds.

    Parameters
    ----------
    a, b : array_like, shape (n_a,), (n_b,)
        Independent samples, at least 2 values each, not both constant.
    alpha : float
        Significance level for ``significant``.

    Returns
    -------
    WelchResult
        t statistic, Welch-Satterthwaite degrees of freedom, two-sided p-value.
    """
    x = as_float_array(a, "a", ndim=1)
    y = as_float_array(b, "b", ndim=1)
    lvl = check_alpha(alpha)
    if x.size < 2 or y.size < 2:
        raise InputError(f"each sample needs at least 2 values, got {x.size} and {y.size}.")
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    if vx + vy == 0:
        raise InputError("both samples are constant; the t statistic is undefined.")
    t = (x.mean() - y.mean()) / np.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1))
    p = 2 * scipy_stats().t.sf(abs(t), df)
    return WelchResult(
        float(t), float(df), float(p), float(x.mean()), float(y.mean()), lvl, bool(p < lvl)
    )


@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile bootstrap interval of an accuracy drop (fractions)."""

    estimate: float
    lower: float
    upper: float
    alpha: float
    n_resamples: int
    paired: bool

    def to_dict(self) -> dict:
        return to_builtin(asdict(self))


def _correct(value: Any, name: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    arr = as_int_array(arr, name, ndim=1)
    if np.any(arr > 1):
        raise InputError(
            f"{name} must be 0/1 or booleans (correct per sample), got {int(arr.max())}."
        )
    return arr


def bootstrap_accuracy_drop(
    correct_original: Any,
    correct_perturbed: Any,
    *,
    rng: RngLike,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    paired: bool = True,
) -> BootstrapInterval:
    """Bootstrap interval of the accuracy drop acc(original) - acc(perturbed).

    Parameters
    ----------
    correct_original, correct_perturbed : array_like of bool, shape (n,) / (n_b,)
        Per-sample correctness. With ``paired=True`` (the same samples, e.g. anchors and their
        pm-k sets) both have shape (n,) and samples are resampled jointly; otherwise the two
        are resampled independently.
    rng : None, int, Generator or RandomState
        Required: the source of randomness (no global state).
    n_resamples : int
        Bootstrap replicates.
    alpha : float
        0.05 gives the 2.5% and 97.5% percentiles.

    Returns
    -------
    BootstrapInterval
        The observed drop and the percentile interval (fractions).

    Notes
    -----
    A resample of n paired samples only changes how many fall into each (orig, perturbed)
    outcome, so the replicates are drawn exactly as multinomial counts of the three drop
    values -1, 0, +1: O(n_resamples), whatever n.
    """
    a = _correct(correct_original, "correct_original")
    b = _correct(correct_perturbed, "correct_perturbed")
    lvl = check_alpha(alpha)
    reps = check_positive_int(n_resamples, "n_resamples")
    gen = as_generator(rng)
    estimate = float(a.mean() - b.mean())
    if paired:
        if a.shape != b.shape:
            raise InputError(
                f"paired bootstrap needs the same samples: got {a.size} and {b.size} values; "
                "pass paired=False for independent samples."
            )
        diff = a - b
        counts = np.array([np.sum(diff == -1), np.sum(diff == 0), np.sum(diff == 1)])
        draws = gen.multinomial(a.size, counts / a.size, size=reps)
        drops = (draws[:, 2] - draws[:, 0]) / a.size
    else:
        drops = (
            gen.binomial(a.size, a.mean(), size=reps) / a.size
            - gen.binomial(b.size, b.mean(), size=reps) / b.size
        )
    lo, hi = np.quantile(drops, [lvl / 2, 1 - lvl / 2])
    return BootstrapInterval(estimate, float(lo), float(hi), lvl, reps, bool(paired))


_TRANSFORMS = ("linear", "probit", "logit")


def _forward(v: np.ndarray, transform: str) -> np.ndarray:
    if transform == "linear":
        return v
    if np.any(v <= 0) or np.any(v >= 1):
        raise InputError(
            f"a {transform} axis needs accuracies strictly inside (0, 1), got values in [{v.min()}, {v.max()}]."
        )
    return scipy_stats().norm.ppf(v) if transform == "probit" else np.log(v / (1 - v))


def _backward(v: np.ndarray, transform: str) -> np.ndarray:
    if transform == "linear":
        return v
    return scipy_stats().norm.cdf(v) if transform == "probit" else 1 / (1 + np.exp(-v))


@dataclass(frozen=True)
class LinearFit:
    """Least-squares line y = slope * x + intercept (on the ``transform`` scale).

    ``predict`` and ``band`` take and return accuracies on the original scale.
    """

    slope: float
    intercept: float
    n: int
    r: float
    residual_std: float
    x_mean: float
    sxx: float
    alpha: float
    transform: str

    def predict(self, x: Any) -> Any:
        """Fitted perturbed accuracy at original accuracy ``x``."""
        tx = _forward(as_float_array(x, "x"), self.transform)
        out = _backward(self.intercept + self.slope * tx, self.transform)
        return float(out) if out.ndim == 0 else out

    def band(self, x: Any) -> tuple[Any, Any]:
        """Pointwise 1 - alpha confidence band of the fitted mean at ``x`` (lower, upper):
        yhat +- t_{n-2} s sqrt(1/n + (x - xbar)^2 / Sxx)."""
        tx = _forward(as_float_array(x, "x"), self.transform)
        yhat = self.intercept + self.slope * tx
        tcrit = scipy_stats().t.ppf(1 - self.alpha / 2, self.n - 2)
        half = (
            tcrit * self.residual_std * np.sqrt(1.0 / self.n + (tx - self.x_mean) ** 2 / self.sxx)
        )
        lo, hi = _backward(yhat - half, self.transform), _backward(yhat + half, self.transform)
        if np.ndim(lo) == 0:
            return float(lo), float(hi)
        return lo, hi

    def to_dict(self) -> dict:
        return to_builtin(asdict(self))


def linear_fit(
    original: Any, perturbed: Any, *, alpha: float = 0.05, transform: str = "linear"
) -> LinearFit:
    """Least-squares line of perturbed vs original accuracy across models.

    Parameters
    ----------
    original, perturbed : array_like, shape (n_models,)
        Accuracies (fractions) of the same models on original and perturbed data; n >= 3.
    alpha : float
        1 - confidence level of :meth:`LinearFit.band`.
    transform : {"linear", "probit", "logit"}
        Axis scaling before fitting: ``logit`` is what the imagenet-testbed fits (Taori et al.
        2020, its ``plotting/plotter.py``); ``probit`` is the scaling of Recht et al. 2019's plots.

    Returns
    -------
    LinearFit
    """
    lvl = check_alpha(alpha)
    check_choice(transform, "transform", _TRANSFORMS)
    x = as_fraction_array(original, "original", ndim=1)  # accuracies: fractions, not percent
    y = as_fraction_array(perturbed, "perturbed", ndim=1)
    if x.shape != y.shape:
        raise InputError(
            f"original and perturbed must have one value per model each, got {x.size} and {y.size}."
        )
    if x.size < 3:
        raise InputError(f"a line with a confidence band needs at least 3 models, got {x.size}.")
    tx, ty = _forward(x, transform), _forward(y, transform)
    xm = tx.mean()
    sxx = float(np.sum((tx - xm) ** 2))
    if sxx == 0:
        raise InputError("all original accuracies are equal; the slope is undefined.")
    slope = float(np.sum((tx - xm) * (ty - ty.mean())) / sxx)
    intercept = float(ty.mean() - slope * xm)
    resid = ty - (intercept + slope * tx)
    s = float(np.sqrt(np.sum(resid**2) / (x.size - 2)))
    syy = float(np.sum((ty - ty.mean()) ** 2))
    r = float(slope * np.sqrt(sxx / syy)) if syy > 0 else 0.0
    return LinearFit(slope, intercept, int(x.size), r, s, float(xm), sxx, lvl, transform)
