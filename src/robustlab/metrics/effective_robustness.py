"""Effective robustness (Taori et al. 2020, *Measuring Robustness to Natural Distribution Shifts in
Image Classification*; the imagenet-testbed).

Across many models, accuracy on a shifted test set follows accuracy on the original one along a
line once both axes are probit- or logit-scaled. A model's **effective robustness** is how far
its shifted accuracy lies above that trend at its original accuracy:

    ER = acc_shift - T^-1(a + b T(acc_orig))            (T: logit, probit or identity)

in accuracy units (fractions here; the testbed prints percentage points). The trend is an
ordinary least-squares line on the transformed axes (the testbed's ``scipy.stats.linregress``),
fitted over a set of runs and optional *reference points* (published accuracies of other models,
e.g. the testbed's ``robustness_top1s.csv``, see :func:`read_reference_points`).

The interval of ER combines, by Bonferroni, the model's exact Clopper-Pearson interval on the
shifted set and the fit's pointwise confidence band at its original accuracy, each at level
1 - alpha/2, so it covers with at least 1 - alpha (conservative; it ignores the uncertainty of
the model's own original accuracy, which moves the point along the line, not away from it).

Units: fractions in, fractions out. Fewer than :data:`MIN_POINTS` runs: no fit, and
:func:`trend_or_reason` says why.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import DataError, InputError
from ..fsutil import check_input_file
from ._checks import check_alpha
from .stats import LinearFit, clopper_pearson, linear_fit

__all__ = ["DEFAULT_TRANSFORM", "MIN_POINTS", "EffectiveRobustness", "ReferencePoint", "effective_robustness",
           "fit_trend", "read_reference_points", "reference_rows", "trend_or_reason"]

#: The imagenet-testbed's axis scaling.
DEFAULT_TRANSFORM = "logit"
#: A trend needs at least this many points (a line and its confidence band: n - 2 >= 1).
MIN_POINTS = 3


def fit_trend(original: Sequence[float], shifted: Sequence[float], *, transform: str = DEFAULT_TRANSFORM,
              alpha: float = 0.05) -> LinearFit:
    """The linear trend of shifted against original accuracy over a set of models.

    Parameters
    ----------
    original, shifted : sequence of float, shape (n_models,)
        Top-1 accuracies (fractions) of the same models on the original and the shifted test set.
    transform : {"logit", "probit", "linear"}
        Axis scaling before the least-squares fit (logit: the imagenet-testbed's default).
    alpha : float
        1 - confidence level of the fit's band (:meth:`LinearFit.band`).

    Returns
    -------
    LinearFit
        ``predict(x)`` and ``band(x)`` take and return accuracies (fractions).

    Raises
    ------
    InputError
        Fewer than 3 models, all original accuracies equal, or (logit/probit) an accuracy of
        exactly 0 or 1, each with the reason.
    """
    if len(original) < MIN_POINTS:
        raise InputError(f"a trend needs at least {MIN_POINTS} runs (models) with both accuracies; got "
                         f"{len(original)}. Evaluate more models on both test sets, or add published reference "
                         "points (--reference-points).")
    return linear_fit(original, shifted, alpha=alpha, transform=transform)


def trend_or_reason(original: Sequence[float], shifted: Sequence[float], *, transform: str = DEFAULT_TRANSFORM,
                    alpha: float = 0.05) -> tuple[LinearFit | None, str]:
    """:func:`fit_trend`, or ``(None, why not)`` instead of raising (for reports and ``show``)."""
    try:
        return fit_trend(original, shifted, transform=transform, alpha=alpha), ""
    except InputError as exc:
        return None, str(exc)


@dataclass(frozen=True)
class EffectiveRobustness:
    """One model's distance above the trend (fractions).

    Attributes
    ----------
    value : float
        ``shifted - predicted``: positive above the trend.
    low, high : float or None
        The 1 - alpha interval (None when the shifted set's size is unknown).
    original, shifted, predicted : float
        The model's accuracies and the trend's shifted accuracy at its original accuracy.
    alpha : float
    """

    value: float
    low: float | None
    high: float | None
    original: float
    shifted: float
    predicted: float
    alpha: float

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "original": self.original,
                "shifted": self.shifted, "predicted": self.predicted, "alpha": self.alpha}


def effective_robustness(fit: LinearFit, original: float, shifted: float, *, n_shifted: int | None = None,
                         alpha: float = 0.05) -> EffectiveRobustness:
    """Effective robustness of a model with accuracies ``original`` and ``shifted`` (fractions).

    ``n_shifted``: the number of shifted test images behind ``shifted`` (for the interval).
    The interval is Bonferroni: Clopper-Pearson of the shifted accuracy at 1 - alpha/2, minus the
    fit's band at ``original`` at 1 - alpha/2 (see the module docstring).
    """
    a = check_alpha(alpha)
    for name, v in (("original", original), ("shifted", shifted)):
        if not (isinstance(v, (int, float, np.floating)) and 0.0 <= float(v) <= 1.0):
            raise InputError(f"{name} accuracy must be a fraction in [0, 1]; got {v!r}.")
    predicted = float(fit.predict(float(original)))
    value = float(shifted) - predicted
    if not n_shifted:
        return EffectiveRobustness(value, None, None, float(original), float(shifted), predicted, a)
    k = int(round(float(shifted) * int(n_shifted)))
    y_lo, y_hi = clopper_pearson(k, int(n_shifted), alpha=a / 2)
    t_lo, t_hi = replace(fit, alpha=a / 2).band(float(original))
    return EffectiveRobustness(value, float(y_lo - t_hi), float(y_hi - t_lo), float(original), float(shifted),
                               predicted, a)


@dataclass(frozen=True)
class ReferencePoint:
    """A published (original, shifted) accuracy pair of a model, as fractions."""

    model: str
    original: float
    shifted: float
    source: str = ""


#: Column names accepted for the simple CSV layout.
ORIGINAL_COLUMNS = ("original", "original_accuracy", "x")
SHIFTED_COLUMNS = ("shifted", "shifted_accuracy", "y")


def _pick(header: Sequence[str], names: Sequence[str]) -> str | None:
    return next((h for h in header if h.strip().lower() in names), None)


#: The largest reference-points file read (imagenet-testbed's robustness_top1s.csv is about 100 KB).
MAX_REFERENCE_BYTES = 64 * 2**20


def reference_rows(path: str | os.PathLike) -> tuple[Path, list[list[str]]]:
    """``(path, rows)`` of a reference-points CSV, checked to be a regular, non-empty, comma-separated
    file with a header (DataError naming what is wrong otherwise)."""
    p = check_input_file(path, "reference points file", max_bytes=MAX_REFERENCE_BYTES)
    try:
        with p.open(newline="", encoding="utf-8") as f:
            rows = [row for row in csv.reader(f) if any(cell.strip() for cell in row)]
    except OSError as exc:
        raise DataError(f"cannot read reference points {p}: {exc.strerror or exc}.") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"reference points {p} is not a CSV text file ({exc}); it needs a header with model, original, "
                        "shifted.") from None
    if not rows:
        raise DataError(f"reference points file {p} is empty; it needs a header with model, original, shifted.")
    if len(rows[0]) == 1:
        sep = next((s for s in (";", "\t", "|") if s in rows[0][0]), None)
        how = f"separated by {sep!r}" if sep else "a single column"
        raise DataError(f"reference points {p} is {how}, not comma-separated: write it as a CSV with commas, with "
                        "the columns model, original, shifted (or imagenet-testbed's robustness_top1s.csv).")
    return p, rows


def read_reference_points(path: str | os.PathLike, *, original: str | None = None,
                          shifted: str | None = None) -> list[ReferencePoint]:
    """Published accuracies of other models from a CSV file.

    Two layouts:

    - **simple**: columns ``model``, ``original`` and ``shifted`` (also ``original_accuracy`` /
      ``shifted_accuracy``), optional ``source``: one row per model;
    - **wide** (the imagenet-testbed's ``robustness_top1s.csv``): ``model`` and one column per
      test set; ``original`` and ``shifted`` name the two columns (e.g. ``val`` and
      ``imagenetv2-matched-frequency-format-val``; for ImageNet-A use
      ``val-on-imagenet-a-classes``).

    Accuracies are percent (0-100) when any value in the two columns exceeds 1, else fractions;
    a file that mixes the two (a row of fractions among percents) is refused, naming the row.
    Rows with an empty cell are skipped (the testbed leaves cells empty for settings a model was
    not run on).

    Raises
    ------
    DataError
        A missing file or one that is not a regular file (a FIFO, a device), an empty one, one
        separated by ``;`` or tabs, a missing column (naming the columns present), a non-number
        (naming the line) or fractions mixed with percents.
    """
    p, rows = reference_rows(path)
    header = [h.strip() for h in rows[0]]
    model_col = _pick(header, ("model", "name"))
    x_col = original if original is not None else _pick(header, ORIGINAL_COLUMNS)
    y_col = shifted if shifted is not None else _pick(header, SHIFTED_COLUMNS)
    missing = [what for what, col in (("model", model_col), ("original", x_col), ("shifted", y_col))
               if col is None or col not in header]
    if missing:
        raise DataError(f"reference points {p} lacks the column(s) {', '.join(missing)} (it has "
                        f"{', '.join(header[:8])}{', ...' if len(header) > 8 else ''}). Use the columns model, original, "
                        "shifted, or name two columns of a wide table (e.g. original=val, "
                        "shifted=imagenetv2-matched-frequency-format-val).")
    ix, iy, im = header.index(x_col), header.index(y_col), header.index(model_col)
    isrc = header.index("source") if "source" in header else None
    parsed: list[tuple[str, float, float, str]] = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or len(row) <= max(ix, iy, im):
            continue
        xs, ys = row[ix].strip(), row[iy].strip()
        if not xs or not ys:
            continue
        try:
            x, y = float(xs), float(ys)
        except ValueError:
            raise DataError(f"{p} line {line}: {x_col}={xs!r}, {y_col}={ys!r} are not both numbers.") from None
        if not (math.isfinite(x) and math.isfinite(y)) or x < 0 or y < 0:
            raise DataError(f"{p} line {line}: accuracies must be non-negative numbers; got {xs}, {ys}.")
        source = row[isrc].strip() if isrc is not None and isrc < len(row) else f"{p.name}: {x_col} / {y_col}"
        parsed.append((row[im].strip(), x, y, source))
    scale = 100.0 if any(x > 1 or y > 1 for _, x, y, _ in parsed) else 1.0
    fractions = [(model, x, y) for model, x, y, _ in parsed if scale == 100.0 and 0 < max(x, y) <= 1]
    if fractions:
        model, x, y = fractions[0]
        raise DataError(f"reference points {p} mixes fractions and percents: {model} has {x:g} / {y:g} while other "
                        f"rows are percent ({len(fractions)} such row(s)). Write every accuracy as percent (76.1) or "
                        "every one as a fraction (0.761).")
    out = []
    for model, x, y, source in parsed:
        if x / scale > 1 or y / scale > 1:
            raise DataError(f"{p}: {model} has an accuracy above 100%.")
        out.append(ReferencePoint(model, x / scale, y / scale, source))
    return out
