"""Effective robustness (Taori et al. 2020, *Measuring Robustness to Natural Distribution Shifts in
Image Classification*), computed as the imagenet-testbed computes it.

Across many models, accuracy on a shifted test set follows accuracy on the original one along a
line once both axes are logit-scaled. A model's **effective robustness** is how far its shifted
accuracy lies above that trend at its original accuracy:

    ER = acc_shift - T^-1(a + b T(acc_orig))            (T: logit, probit or identity)

in accuracy units (fractions here; the testbed prints percentage points). The trend is an
ordinary least-squares line on the transformed axes (the testbed's ``scipy.stats.linregress`` on
logit axes, ``plotting/plotter.py``'s ``transform_acc``).

Which models the trend is fitted on (:func:`select_fit_points`, ``--fit-on``):

- ``standard`` (default): the testbed's *standard* models only, as its ``use_for_line_fit``
  (standard ImageNet training; no models trained with more data, no robustness interventions, no
  low-accuracy or subsampled ones). The list of its table's standard models ships with robustlab
  (:func:`standard_models`, with the testbed's commit); a CSV of your own may mark rows
  with a ``standard`` column (``true``/``false``) instead;
- ``all``: every row of the reference table;
- a set of model names (``--fit-on FILE``: one name a line).

**A zero accuracy on the shifted set** (ImageNet-A was filtered against ResNet-50, which scores
0 % on it) has no logit. The testbed (``format_eff_robust`` of
``plotting/paper_appendix_eff_robust.py``) then splits the fitted models at that model's original
accuracy (the *pivot*) and fits one line on the models below it and one on those above it; the
pivot model itself is in neither fit, and a model's trend is the lower line up to the pivot and
the upper one beyond it. :func:`fit_trend` does the same and returns a :class:`PiecewiseFit`
that names the pivot model.

The interval of ER combines, by Bonferroni, the model's exact Clopper-Pearson interval on the
shifted set and the fit's pointwise confidence band at its original accuracy, each at level
1 - alpha/2, so it covers with at least 1 - alpha (conservative; it ignores the uncertainty of
the model's own original accuracy, which moves the point along the line, not away from it).

Units: fractions in, fractions out. A line needs at least :data:`MIN_POINTS` models:
:func:`trend_or_reason` says why there is none.

>>> from robustlab.metrics import effective_robustness, fit_trend
>>> trend = fit_trend([0.60, 0.70, 0.76, 0.80], [0.47, 0.57, 0.63, 0.68])
>>> round(100 * effective_robustness(trend, 0.76, 0.70).value, 1)   # points above the trend
6.7
"""

from __future__ import annotations

import csv
import functools
import json
import math
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import DataError, InputError
from ..fsutil import check_input_file
from ._checks import as_fraction_array, check_alpha, check_fraction
from .stats import LinearFit, clopper_pearson, linear_fit

__all__ = ["DEFAULT_TRANSFORM", "FIT_ON_CHOICES", "MIN_POINTS", "EffectiveRobustness", "FitOn", "PiecewiseFit",
           "ReferencePoint", "Trend", "effective_robustness", "fit_trend", "parse_fit_on", "read_reference_points",
           "reference_rows", "select_fit_points", "standard_models", "trend_or_reason"]

#: The imagenet-testbed's axis scaling.
DEFAULT_TRANSFORM = "logit"
#: A trend needs at least this many points (a line and its confidence band: n - 2 >= 1).
MIN_POINTS = 3
#: ``--fit-on`` keywords (anything else names a file of model names).
FIT_ON_CHOICES = ("standard", "all")
_STANDARD_FILE = "imagenet_testbed_standard.json"
_TRUE, _FALSE = {"1", "true", "yes", "y", "standard"}, {"0", "false", "no", "n", ""}


@functools.lru_cache(maxsize=1)
def _standard_data() -> dict:
    return json.loads(resources.files(__package__).joinpath(_STANDARD_FILE).read_text(encoding="utf-8"))


def standard_models() -> frozenset[str]:
    """The imagenet-testbed's standard models (the rows of its ``robustness_top1s.csv`` its
    ``use_for_line_fit`` keeps: 85 models), as shipped with the testbed's commit
    (``standard_models_source()``)."""
    return frozenset(_standard_data()["models"])


def standard_models_source() -> str:
    """Where :func:`standard_models` comes from: repository, commit and rule."""
    return _standard_data()["source"]


@dataclass(frozen=True)
class FitOn:
    """Which models a trend is fitted on: ``mode`` is ``standard``, ``all`` or ``models`` (the
    names in ``models``, read from ``source``)."""

    mode: str = "standard"
    models: frozenset[str] = frozenset()
    source: str = ""

    def describe(self) -> str:
        if self.mode == "models":
            return f"the {len(self.models)} models listed in {self.source}"
        return {"standard": "standard models", "all": "every model"}[self.mode]


def parse_fit_on(value: str | os.PathLike | FitOn | Collection[str] | None) -> FitOn:
    """The :class:`FitOn` of a ``--fit-on`` value: ``standard`` (also None), ``all``, a file of model
    names (one a line, ``#`` comments) or a collection of names.

    Raises
    ------
    InputError
        A value that is neither keyword nor readable file, or a file listing no model.
    """
    if value is None:
        return FitOn()
    if isinstance(value, FitOn):
        return value
    if isinstance(value, str) and value.strip().lower() in FIT_ON_CHOICES:
        return FitOn(value.strip().lower())
    if isinstance(value, (str, os.PathLike)):
        path = Path(value).expanduser()
        if not path.is_file():
            raise InputError(f"--fit-on {str(value)!r} is neither standard, all nor a file of model names (one a "
                             "line); give one of them.")
        names = [ln.split("#", 1)[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()]
        names = [n for n in names if n]
        if not names:
            raise InputError(f"--fit-on file {path} lists no model; write one model name a line.")
        return FitOn("models", frozenset(names), str(path))
    names = frozenset(str(n) for n in value)
    if not names:
        raise InputError("fit_on names no model; give standard, all or model names.")
    return FitOn("models", names, "the given names")


def is_standard(point: ReferencePoint) -> bool:
    """Whether a reference point is a standard model: its own ``standard`` mark, else its name in
    the testbed's list."""
    return point.standard if point.standard is not None else point.model in standard_models()


def select_fit_points(points: Sequence[ReferencePoint], fit_on: FitOn | str | None = None) -> list[ReferencePoint]:
    """The reference points a trend is fitted on under ``fit_on`` (see the module docstring)."""
    chosen = parse_fit_on(fit_on)
    if chosen.mode == "all":
        return list(points)
    if chosen.mode == "models":
        return [p for p in points if p.model in chosen.models]
    return [p for p in points if is_standard(p)]


@dataclass(frozen=True)
class PiecewiseFit:
    """Two trends split at a pivot, as the testbed fits a shift on which a fitted model scores 0
    (see the module docstring): ``lower`` for original accuracies up to ``pivot``, ``upper`` beyond.

    ``predict`` and ``band`` take and return accuracies, like :class:`~robustlab.metrics.stats.LinearFit`.
    """

    lower: LinearFit
    upper: LinearFit
    pivot: float
    pivot_model: str = ""
    alpha: float = 0.05
    transform: str = DEFAULT_TRANSFORM
    pieces: tuple[LinearFit, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pieces", (self.lower, self.upper))

    @property
    def n(self) -> int:
        """Models fitted (the pivot model is in neither line)."""
        return self.lower.n + self.upper.n

    def _split(self, x, method: str):
        arr = np.asarray(x, dtype=float)
        below = arr <= self.pivot
        lo = getattr(self.lower, method)(arr)
        hi = getattr(self.upper, method)(arr)
        if method == "predict":
            out = np.where(below, lo, hi)
            return float(out) if np.ndim(out) == 0 else out
        out = tuple(np.where(below, a, b) for a, b in zip(lo, hi))
        return (float(out[0]), float(out[1])) if np.ndim(out[0]) == 0 else out

    def predict(self, x):
        """The trend's shifted accuracy at original accuracy ``x`` (the lower line up to the pivot)."""
        return self._split(x, "predict")

    def band(self, x):
        """The pointwise 1 - alpha band of the line ``x`` falls on."""
        return self._split(x, "band")

    def with_alpha(self, alpha: float) -> PiecewiseFit:
        return PiecewiseFit(replace(self.lower, alpha=alpha), replace(self.upper, alpha=alpha), self.pivot,
                            self.pivot_model, alpha, self.transform)

    def to_dict(self) -> dict:
        return {"pivot": self.pivot, "pivot_model": self.pivot_model, "lower": self.lower.to_dict(),
                "upper": self.upper.to_dict(), "alpha": self.alpha, "transform": self.transform}


Trend = LinearFit | PiecewiseFit


def _with_alpha(fit: Trend, alpha: float) -> Trend:
    return fit.with_alpha(alpha) if isinstance(fit, PiecewiseFit) else replace(fit, alpha=alpha)


def _name(names: Sequence[str] | None, i: int) -> str:
    return f"{names[i]!r}" if names is not None else f"point {i}"


def _line(xs: np.ndarray, ys: np.ndarray, labels: list[str], transform: str, alpha: float, what: str) -> LinearFit:
    if len(xs) < MIN_POINTS:
        raise InputError(f"a trend needs at least {MIN_POINTS} runs (models) with both accuracies{what}; got "
                         f"{len(xs)}. Evaluate more models on both test sets, or add published reference points "
                         "(--reference-points).")
    if transform != "linear":
        for x, y, label in zip(xs, ys, labels):
            if not (0 < x < 1 and 0 < y < 1):
                raise InputError(f"{label} has accuracies {100 * x:g} % / {100 * y:g} %: a {transform} axis needs "
                                 "accuracies strictly inside (0, 1) (0 % and 100 % have no logit). Leave that model "
                                 "out of the fit (--fit-on FILE), or fit on linear axes.")
    return linear_fit(xs, ys, alpha=alpha, transform=transform)


def fit_trend(original: Sequence[float], shifted: Sequence[float], *, transform: str = DEFAULT_TRANSFORM,
              alpha: float = 0.05, names: Sequence[str] | None = None) -> Trend:
    """The trend of shifted against original accuracy over a set of models.

    Parameters
    ----------
    original, shifted : sequence of float, shape (n_models,)
        Top-1 accuracies (fractions) of the same models on the original and the shifted test set.
    transform : {"logit", "probit", "linear"}
        Axis scaling before the least-squares fit (logit: the imagenet-testbed's default).
    alpha : float
        1 - confidence level of the fit's band (:meth:`LinearFit.band`).
    names : sequence of str, optional
        The models' names, for the messages and :attr:`PiecewiseFit.pivot_model`.

    Returns
    -------
    LinearFit or PiecewiseFit
        One line; or, when a model scores exactly 0 on the shifted set (logit and probit axes),
        two lines split at its original accuracy, as the testbed (see the module docstring).
        ``predict(x)`` and ``band(x)`` take and return accuracies (fractions).

    Raises
    ------
    InputError
        Fewer than 3 models (on either side of a split), all original accuracies equal, or
        another accuracy of exactly 0 or 1 on a logit/probit axis, naming the model.
    """
    xs = as_fraction_array(original, "original", ndim=1)
    ys = as_fraction_array(shifted, "shifted", ndim=1)
    if xs.shape != ys.shape:
        raise InputError(f"original and shifted must have one value per model each, got {xs.size} and {ys.size}.")
    if names is not None and len(names) != xs.size:
        raise InputError(f"names must name each of the {xs.size} models; got {len(names)}.")
    labels = [_name(names, i) for i in range(xs.size)]
    zeros = np.flatnonzero(ys == 0) if transform != "linear" else np.array([], dtype=int)
    if zeros.size == 0 or xs.size < MIN_POINTS:
        return _line(xs, ys, labels, transform, alpha, "")
    first = int(zeros[0])  # the testbed's pivot: the first fitted model at 0 % (its table order)
    pivot = float(xs[first])
    sides = []
    for mask, where in ((xs < pivot, "below"), (xs > pivot, "above")):
        what = (f" {where} {labels[first]}'s original accuracy {100 * pivot:g} % (it scores 0 % on the shifted set, "
                "so the trend is split there as the imagenet-testbed does)")
        sides.append(_line(xs[mask], ys[mask], [lb for lb, m in zip(labels, mask) if m], transform, alpha, what))
    return PiecewiseFit(sides[0], sides[1], pivot, names[first] if names is not None else "", alpha, transform)


def trend_or_reason(original: Sequence[float], shifted: Sequence[float], *, transform: str = DEFAULT_TRANSFORM,
                    alpha: float = 0.05, names: Sequence[str] | None = None) -> tuple[Trend | None, str]:
    """:func:`fit_trend`, or ``(None, why not)`` instead of raising (for reports and ``show``)."""
    try:
        return fit_trend(original, shifted, transform=transform, alpha=alpha, names=names), ""
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


def effective_robustness(fit: Trend, original: float, shifted: float, *, n_shifted: int | None = None,
                         alpha: float = 0.05) -> EffectiveRobustness:
    """Effective robustness of a model with accuracies ``original`` and ``shifted`` (fractions).

    ``n_shifted``: the number of shifted test images behind ``shifted`` (for the interval).
    The interval is Bonferroni: Clopper-Pearson of the shifted accuracy at 1 - alpha/2, minus the
    fit's band at ``original`` at 1 - alpha/2 (see the module docstring).
    """
    a = check_alpha(alpha)
    original, shifted = check_fraction(original, "original accuracy"), check_fraction(shifted, "shifted accuracy")
    predicted = float(fit.predict(float(original)))
    value = float(shifted) - predicted
    if not n_shifted:
        return EffectiveRobustness(value, None, None, float(original), float(shifted), predicted, a)
    k = int(round(float(shifted) * int(n_shifted)))
    y_lo, y_hi = clopper_pearson(k, int(n_shifted), alpha=a / 2)
    t_lo, t_hi = _with_alpha(fit, a / 2).band(float(original))
    return EffectiveRobustness(value, float(y_lo - t_hi), float(y_hi - t_lo), float(original), float(shifted),
                               predicted, a)


@dataclass(frozen=True)
class ReferencePoint:
    """A published (original, shifted) accuracy pair of a model, as fractions. ``standard``: the
    table's own mark (a ``standard`` column), None when it has none (see :func:`select_fit_points`)."""

    model: str
    original: float
    shifted: float
    source: str = ""
    standard: bool | None = None


#: Column names accepted for the simple CSV layout.
ORIGINAL_COLUMNS = ("original", "original_accuracy", "x")
SHIFTED_COLUMNS = ("shifted", "shifted_accuracy", "y")
STANDARD_COLUMNS = ("standard", "use_for_line_fit")


def _pick(header: Sequence[str], names: Sequence[str]) -> str | None:
    return next((h for h in header if h.strip().lower() in names), None)


def _standard_mark(text: str, where: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise DataError(f"{where}: standard={text!r} is not true or false; write true for a standard model (in the "
                    "trend), false otherwise.")
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
      ``shifted_accuracy``), optional ``source`` and ``standard`` (``true`` for the models the
      default trend is fitted on): one row per model;
    - **wide** (the imagenet-testbed's ``robustness_top1s.csv``): ``model`` and one column per
      test set; ``original`` and ``shifted`` name the two columns (e.g. ``val`` and
      ``imagenetv2-matched-frequency-format-val``; for ImageNet-A use
      ``val-on-imagenet-a-classes``).

    Accuracies are percent (0-100) when any value in the two columns exceeds 1, else fractions;
    a simple file that mixes the two (a row of fractions among percents) is refused, naming the
    row (a wide table is read as the testbed writes it: percent, low-accuracy models included).
    Rows with an empty cell are skipped (the testbed leaves cells empty for settings a model was
    not run on).

    Raises
    ------
    DataError
        A missing file or one that is not a regular file (a FIFO, a device), an empty one, one
        separated by ``;`` or tabs, a missing column (naming the columns present), a non-number,
        fractions mixed with percents, or an accuracy outside [0, 100] % (naming the line and the model).
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
    std_col = _pick(header, STANDARD_COLUMNS)
    istd = header.index(std_col) if std_col is not None else None
    parsed: list[tuple[int, str, float, float, str, bool | None]] = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or len(row) <= max(ix, iy, im):
            continue
        xs, ys = row[ix].strip(), row[iy].strip()
        if not xs or not ys:
            continue
        model = row[im].strip()
        where = f"{p} line {line} (model {model!r})"
        try:
            x, y = float(xs), float(ys)
        except ValueError:
            raise DataError(f"{where}: {x_col}={xs!r}, {y_col}={ys!r} are not both numbers.") from None
        if not (math.isfinite(x) and math.isfinite(y)) or x < 0 or y < 0:
            raise DataError(f"{where}: accuracies must be in [0, 1] (or percent in [0, 100]); got {xs}, {ys}.")
        source = row[isrc].strip() if isrc is not None and isrc < len(row) else f"{p.name}: {x_col} / {y_col}"
        mark = _standard_mark(row[istd], where) if istd is not None and istd < len(row) else None
        parsed.append((line, model, x, y, source, mark))
    scale = 100.0 if any(x > 1 or y > 1 for _, _, x, y, _, _ in parsed) else 1.0
    # a simple table mixing fractions into percent rows (read as percent, they would move the fit);
    # a wide table named by its columns is the testbed's, percent throughout, where a model below
    # 1 % (e.g. trained on 50,000 images for 2 epochs) is genuine
    simple = original is None and shifted is None
    fractions = [(model, x, y) for _, model, x, y, _, _ in parsed if simple and scale == 100.0 and 0 < max(x, y) <= 1]
    if fractions:
        model, x, y = fractions[0]
        raise DataError(f"reference points {p} mixes fractions and percents: {model} has {x:g} / {y:g} while other "
                        f"rows are percent ({len(fractions)} such row(s)). Write every accuracy as percent (76.1) or "
                        "every one as a fraction (0.761).")
    out = []
    for line, model, x, y, source, mark in parsed:
        if x / scale > 1 or y / scale > 1:
            raise DataError(f"{p} line {line} (model {model!r}): an accuracy above 100 % ({x:g}, {y:g}); accuracies "
                            "must be in [0, 1] (or percent in [0, 100]).")
        out.append(ReferencePoint(model, x / scale, y / scale, source, mark))
    return out
