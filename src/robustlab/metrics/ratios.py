"""Ratios to a baseline that cannot mislead: a denominator must stand clear of its sampling error.

CE, relative CE, FR and the T5D ratio all divide a model's number by a baseline's. With the
published AlexNet on ImageNet (50,000 images a cell) the denominators are exact enough and the
papers' definitions apply unchanged. With a baseline *measured on a small set* (the demo's
150 scenes, a user's own folder) a denominator can be indistinguishable from zero -- the
baseline's error barely moves under a corruption, or it rarely flips -- and the ratio is then
noise: a change of 1 point divided by one of -1.2 points reads -422 %, and one such term can
dominate a mean of fifteen.

The rule here: a term is **defined** when its denominator exceeds its sampling margin (the
half-width of its 95 % interval, ``z = 1.96`` standard errors; 0 for published numbers, which
come without sample sizes). An undefined term has no value, only the reason; means of terms
(:func:`mean_of_defined`) average the defined ones and say how many they used.

Units: whatever the numerator and denominator are in (fractions, rank positions); the ratio is
a plain ratio (1.0 = as much as the baseline; papers print 100 x).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._checks import as_float_array, check_fraction, check_scalar

__all__ = [
    "Z_95",
    "DefinedMean",
    "NormalisedTerm",
    "UndefinedTermsWarning",
    "binomial_margin",
    "mean_margin",
    "mean_of_defined",
    "normalised_term",
]

#: Standard errors in the half-width of a two-sided 95 % normal interval.
Z_95 = 1.959963984540054


class UndefinedTermsWarning(UserWarning):
    """A mean of ratios (relative mCE, mFR, mT5D) left out terms whose baseline denominator is
    within its sampling error; the message names them."""


@dataclass(frozen=True)
class NormalisedTerm:
    """One ratio ``numerator / denominator`` against a baseline, or why it is undefined.

    Attributes
    ----------
    name : str
        What the term is of (a corruption or perturbation name).
    numerator, denominator : float
        The model's and the baseline's numbers (same units).
    margin : float
        Sampling margin of the denominator (95 % half-width, same units; 0 for published numbers).
    value : float or None
        ``numerator / denominator`` when defined, else None.
    why : str or None
        Why the term is undefined when the reason is the model's, not the baseline's (its error
        does not move with severity, so the ratio says nothing about it); None otherwise.
    """

    name: str
    numerator: float
    denominator: float
    margin: float
    value: float | None
    why: str | None = None

    @property
    def defined(self) -> bool:
        return self.value is not None

    @property
    def reason(self) -> str | None:
        """Why the term is undefined (None when defined): the model's reason (:attr:`why`), else
        in words about the denominator."""
        if self.defined:
            return None
        if self.why:
            return self.why
        if self.denominator <= 0:
            return f"the baseline's value is {self.denominator:+.4g}, not above 0"
        return (f"the baseline's value {self.denominator:.4g} is within its sampling error "
                f"(±{self.margin:.4g}, 95 %)")

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "numerator": self.numerator,
                "denominator": self.denominator, "margin": self.margin, "reason": self.reason}

    def undefined_by_model(self, why: str) -> NormalisedTerm:
        """This term, undefined because of the model (``why`` says how)."""
        return NormalisedTerm(self.name, self.numerator, self.denominator, self.margin, None, why)


def normalised_term(name: str, numerator: float, denominator: float, margin: float = 0.0) -> NormalisedTerm:
    """The ratio ``numerator / denominator``, defined only when ``denominator > max(margin, 0)``.

    Parameters
    ----------
    name : str
        Label of the term (e.g. ``"zoom_blur"``).
    numerator, denominator : float
        Finite numbers in the same units.
    margin : float
        Sampling margin of the denominator (>= 0; 0 when it is a published, exact number).
    """
    if not isinstance(name, str) or not name:
        raise InputError(f"a ratio's name must be a non-empty string (e.g. 'zoom_blur'); got {name!r}.")
    num, den, mar = (check_scalar(v, f"{name}: the {what}") for v, what in
                     ((numerator, "numerator"), (denominator, "denominator"), (margin, "margin")))
    if mar < 0:
        raise InputError(f"{name}: the sampling margin must be >= 0; got {mar}.")
    return NormalisedTerm(name, num, den, mar, num / den if den > mar and den > 0 else None)


@dataclass(frozen=True)
class DefinedMean:
    """The mean of the defined terms of a set of ratios.

    Attributes
    ----------
    value : float or None
        Mean of the defined terms (None when no term is defined).
    used : tuple of str
        Names of the terms averaged.
    undefined : tuple of str
        Names of the terms left out, because undefined.
    """

    value: float | None
    used: tuple[str, ...]
    undefined: tuple[str, ...]

    @property
    def n_used(self) -> int:
        return len(self.used)

    @property
    def n_terms(self) -> int:
        return len(self.used) + len(self.undefined)

    def to_dict(self) -> dict:
        return {"value": self.value, "used": list(self.used), "undefined": list(self.undefined),
                "n_used": self.n_used, "n_terms": self.n_terms}


def mean_of_defined(terms: Iterable[NormalisedTerm]) -> DefinedMean:
    """Average the defined terms only, and say which were used and which left out."""
    terms = list(terms)
    used = [t for t in terms if t.defined]
    value = float(np.mean([t.value for t in used])) if used else None
    return DefinedMean(value, tuple(t.name for t in used), tuple(t.name for t in terms if not t.defined))


def binomial_margin(p: float, n: float, z: float = Z_95) -> float:
    """Sampling margin ``z * sqrt(p (1 - p) / n)`` of a proportion ``p`` (fraction) over ``n`` trials.

    ``n`` may be None or 0 for a published proportion without a sample size: the margin is 0.
    """
    p = check_fraction(p, "p")
    if n is None:
        return 0.0
    trials = check_scalar(n, "n")
    if trials < 0 or trials != int(trials):
        raise InputError(f"n must be a count of trials (an integer >= 0, or None); got {n!r}.")
    if trials == 0:
        return 0.0
    return float(z * math.sqrt(p * (1.0 - p) / trials))


def mean_margin(values: Sequence[float] | np.ndarray, z: float = Z_95) -> float:
    """Sampling margin ``z * std / sqrt(m)`` of the mean of ``m`` independent values (e.g. the
    per-sequence flip probabilities whose mean is a flip probability); 0 for fewer than 2."""
    arr = as_float_array(values, "values").ravel()
    if arr.size == 0:
        raise InputError("values is empty: the margin of a mean needs at least one value.")
    if arr.size < 2:
        return 0.0
    return float(z * arr.std(ddof=1) / math.sqrt(arr.size))
