"""Adversarial robustness over an interval of attack strengths.

From Kunhardt, Deza & Poggio, *The Effects of Image Distribution and Task on Adversarial
Robustness* (2021): with f(eps) the accuracy under an attack of strength eps (FGSM, L-inf,
inputs in [0, 1] in the paper),

* R = 1 / (f(eps0) (eps1 - eps0)) * integral_{eps0}^{eps1} f(eps) d eps, by the trapezoid
  rule on the measured grid: the area under the accuracy curve normalised by the rectangle
  of the starting accuracy, 1 for a model the attack does not hurt, 0.5 for a linear fall to
  0 over the interval; undefined when f(eps0) = 0;
* C = (f(eps) - f(eps0)) / f(eps0), the relative change between two strengths.

Units: eps in the attack's units (pixel scale [0, 1] for the paper's L-inf), finite and >= 0;
accuracies are fractions in [0, 1] (an accuracy above 1 is refused: it is a percentage or a
count, and would give a plausible-looking but wrong R).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ._checks import as_float_array, as_fraction_array, check_scalar

__all__ = ["PAPER_EPSILONS", "trapezoid", "robustness_auc", "relative_change", "normalised_curve"]

#: The epsilon grid of the paper (L-inf, images in [0, 1]).
PAPER_EPSILONS: tuple[float, ...] = (0.0, 0.0125, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def _curve(eps: Any, accuracy: Any, *, fractions: bool = True) -> tuple[np.ndarray, np.ndarray]:
    x = as_float_array(eps, "eps", ndim=1)
    y = as_fraction_array(accuracy, "accuracy", ndim=1) if fractions else as_float_array(accuracy, "accuracy", ndim=1)
    if np.any(x < 0):
        raise InputError(f"eps must be >= 0 (an attack strength); got {x.min()}.")
    if x.shape != y.shape:
        raise InputError(f"eps and accuracy must have the same length, got {x.size} and {y.size}.")
    if x.size < 2:
        raise InputError("give at least two (eps, accuracy) points to integrate over an interval.")
    steps = np.diff(x)
    if np.any(steps == 0):
        i = int(np.flatnonzero(steps == 0)[0])
        raise InputError(
            f"eps has a duplicated value {x[i]} (positions {i} and {i + 1}); give each strength once."
        )
    if np.any(steps < 0):
        i = int(np.flatnonzero(steps < 0)[0])
        raise InputError(
            f"eps must be sorted increasingly; {x[i]} is followed by {x[i + 1]} (position {i + 1}). "
            "Sort eps and accuracy together (np.argsort(eps))."
        )
    if np.any(y < 0):
        raise InputError(f"accuracy must be >= 0, got {y.min()}.")
    return x, y


def trapezoid(x: Any, y: Any) -> float:
    """Trapezoid-rule integral of y (>= 0) over a sorted, possibly uneven grid x (>= 0; 1-D, same length)."""
    xs, ys = _curve(x, y, fractions=False)
    return float(np.sum(np.diff(xs) * (ys[1:] + ys[:-1]) * 0.5))


def _grid_index(x: np.ndarray, value: float, name: str) -> int:
    hits = np.flatnonzero(np.isclose(x, value, rtol=1e-9, atol=1e-12))
    if hits.size == 0:
        raise InputError(
            f"{name}={value} is not one of the measured strengths {x.tolist()}; "
            "choose a measured eps (R integrates the measured grid)."
        )
    return int(hits[0])


def _interval(eps: Any, accuracy: Any, eps0: float | None, eps1: float | None):
    x, y = _curve(eps, accuracy)
    i0 = 0 if eps0 is None else _grid_index(x, check_scalar(eps0, "eps0"), "eps0")
    i1 = x.size - 1 if eps1 is None else _grid_index(x, check_scalar(eps1, "eps1"), "eps1")
    if i1 <= i0:
        raise InputError(f"eps1 ({x[i1]}) must be larger than eps0 ({x[i0]}).")
    return x, y, i0, i1


def robustness_auc(
    eps: Any, accuracy: Any, *, eps0: float | None = None, eps1: float | None = None
) -> float:
    """Normalised area R under the accuracy-vs-epsilon curve (Kunhardt, Deza & Poggio).

    Parameters
    ----------
    eps : array_like, shape (n,)
        Attack strengths, strictly increasing (uneven spacing is fine), e.g.
        :data:`PAPER_EPSILONS`.
    accuracy : array_like, shape (n,)
        Accuracy f(eps) at each strength (fraction in [0, 1]).
    eps0, eps1 : float, optional
        Interval ends; must be measured strengths. Default: the first and last.

    Returns
    -------
    float
        R = trapezoid(f, [eps0, eps1]) / (f(eps0) (eps1 - eps0)). 1 for a flat curve, 0.5 for
        a linear fall to 0, above 1 when accuracy rises.

    Raises
    ------
    InputError
        When f(eps0) = 0 (R is undefined), the grid is unsorted, has duplicates or negative
        or infinite strengths, an accuracy is outside [0, 1], or the inputs contain NaN or
        differ in length.
    """
    x, y, i0, i1 = _interval(eps, accuracy, eps0, eps1)
    f0 = y[i0]
    if f0 == 0:
        raise InputError(
            f"accuracy at eps0={x[i0]} is 0, so R (normalised by f(eps0)) is undefined; "
            "start the interval where the model is still correct sometimes."
        )
    area = trapezoid(x[i0 : i1 + 1], y[i0 : i1 + 1])
    return float(area / (f0 * (x[i1] - x[i0])))


def relative_change(f_eps: Any, f_eps0: Any) -> Any:
    """Relative change C = (f(eps) - f(eps0)) / f(eps0) (Kunhardt, Deza & Poggio).

    Scalars or broadcastable arrays; a float for scalar input. -1 means the accuracy fell to 0.
    """
    a = as_fraction_array(f_eps, "f_eps")
    b = as_fraction_array(f_eps0, "f_eps0")
    if np.any(b == 0):
        raise InputError(
            "f_eps0 is 0, so the relative change is undefined; pick a reference strength with non-zero accuracy."
        )
    try:
        out = (a - b) / b
    except ValueError as exc:
        raise InputError(
            f"f_eps and f_eps0 do not broadcast: shapes {a.shape} and {b.shape} ({exc})."
        ) from None
    return float(out) if out.ndim == 0 else out


def normalised_curve(eps: Any, accuracy: Any, *, eps0: float | None = None) -> np.ndarray:
    """The accuracy curve divided by f(eps0) (1.0 at eps0), shape (n,): the curve whose mean
    height over [eps0, eps1] is R, for plotting models with different clean accuracy together."""
    x, y, i0, _ = _interval(eps, accuracy, eps0, None)
    if y[i0] == 0:
        raise InputError(f"accuracy at eps0={x[i0]} is 0; the curve cannot be normalised by it.")
    return y / y[i0]
