"""Effective robustness across runs: the (original, shifted) accuracy pairs runs publish, the trend
over them and each run's distance above it; the figure on logit axes; the ``show`` lines.

A benchmark takes part by putting ``summary["accuracy_pair"]`` in its runs' summaries::

    {"shift": "imagenet-a",              # the shifted test set (runs with the same shift share a trend)
     "original_set": "ImageNet val, the 200 ImageNet-A classes",
     "original": 0.81, "original_n": 10000,   # accuracy on the original test set (fraction, images)
     "shifted": 0.03, "shifted_n": 7500,      # ... on the shifted one (n None: no interval)
     "testbed_columns": ["val-on-imagenet-a-classes", "imagenet-a"]}   # optional: columns of the
                                                # imagenet-testbed's robustness_top1s.csv

Which points the trend is fitted on (``fit_on``, :func:`robustlab.metrics.effective_robustness.parse_fit_on`):

- ``standard`` (default): with a reference table, its standard models only (the imagenet-testbed's
  ``use_for_line_fit``), the report's runs being measured against that trend; without one, the
  report's runs except the zero-shot ones (a CLIP model is never a standard model);
- ``all``: every reference row and every run;
- a file of model names: the reference rows and runs it lists.

Runs are drawn by family (:func:`model_family`): CLIP zero-shot (``open_clip:``), ImageNet-trained
(``torchvision:``, ``timm:``, ``hf:``) and other.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..metrics.effective_robustness import (DEFAULT_TRANSFORM, EffectiveRobustness, FitOn, PiecewiseFit,
                                            ReferencePoint, Trend, effective_robustness, parse_fit_on,
                                            read_reference_points, reference_rows, select_fit_points,
                                            trend_or_reason)
from ..metrics.stats import clopper_pearson
from . import figures as F
from .collect import short_model

__all__ = ["FAMILIES", "ShiftGroup", "effective_lines", "er_text", "group_rows", "model_family",
           "reference_points_for", "shift_groups", "trend_figure"]

#: Model families of the figure, with their marker and colour.
FAMILIES = {"CLIP zero-shot": ("*", "#d1495b"), "ImageNet-trained": ("o", "#2a7ab0"), "other": ("s", "#3a9a5b")}
_IMAGENET_SOURCES = ("torchvision:", "timm:", "hf:")
#: Markers of the models of a family that has few (each is then named in the legend).
RUN_MARKERS = ("o", "s", "D", "^", "v", "P")


def model_family(model: str) -> str:
    """The figure's family of a stored model name: ``CLIP zero-shot``, ``ImageNet-trained`` or ``other``."""
    if model.startswith("open_clip:"):
        return "CLIP zero-shot"
    if model.startswith(_IMAGENET_SOURCES):
        return "ImageNet-trained"
    return "other"


@dataclass
class ShiftGroup:
    """The runs sharing one shifted test set, with the trend, the reference points and what was fitted.

    ``fitted`` holds, per run, whether the run is in the fit; ``fitted_references`` the reference
    points that are; ``fit_on`` the choice that decided both.
    """

    shift: str
    original_set: str
    runs: list = field(default_factory=list)
    pairs: list[Mapping] = field(default_factory=list)
    references: list[ReferencePoint] = field(default_factory=list)
    fit: Trend | None = None
    reason: str = ""
    er: list[EffectiveRobustness] = field(default_factory=list)
    fitted: list[bool] = field(default_factory=list)
    fitted_references: list[ReferencePoint] = field(default_factory=list)
    fit_on: FitOn = field(default_factory=FitOn)
    reference_file: str = ""

    def describe_fit(self) -> str:
        """Which points the trend is fitted on, in words."""
        runs, table = sum(self.fitted), self.reference_file or "the reference table"
        if self.fit_on.mode == "standard":
            if self.references:
                return f"the {len(self.fitted_references)} standard models of {table}"
            return f"{runs} of the report's runs (no reference table; zero-shot runs are not fitted)"
        return f"{self.fit_on.describe()}: {len(self.fitted_references)} rows of {table} and {runs} runs"


def reference_points_for(path: str | Path, pair: Mapping) -> list[ReferencePoint]:
    """The reference points of ``path`` that belong to ``pair``'s shift.

    A simple CSV with a ``shift`` column keeps its rows of that shift; a simple CSV without one
    applies to every shift; the imagenet-testbed's wide ``robustness_top1s.csv`` is read through
    the pair's ``testbed_columns``.
    """
    p, rows = reference_rows(path)
    header = [h.strip() for h in rows[0]]
    lowered = [h.lower() for h in header]
    if "original" in lowered or "original_accuracy" in lowered:
        points = read_reference_points(p)
        if "shift" not in lowered:
            return points
        with p.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        key = header[lowered.index("shift")]
        wanted = {r.get("model", "").strip() for r in rows if (r.get(key) or "").strip() == pair["shift"]}
        return [pt for pt in points if pt.model in wanted]
    columns = pair.get("testbed_columns")
    if columns and all(c in header for c in columns):
        return read_reference_points(p, original=columns[0], shifted=columns[1])
    if "model" not in lowered and "name" not in lowered:  # neither layout: never silently no points
        read_reference_points(p)  # raises, naming the columns it lacks and those it has
    return []


def _run_fitted(run, fit_on: FitOn, has_references: bool) -> bool:
    if fit_on.mode == "all":
        return True
    if fit_on.mode == "models":
        return run.model in fit_on.models or short_model(run.model) in fit_on.models
    return not has_references and model_family(run.model) != "CLIP zero-shot"


def fit_group(group: ShiftGroup, *, transform: str = DEFAULT_TRANSFORM, alpha: float = 0.05) -> None:
    """Choose the group's fitted points (its ``fit_on``), fit the trend and every run's ER."""
    group.fitted_references = select_fit_points(group.references, group.fit_on)
    group.fitted = [_run_fitted(r, group.fit_on, bool(group.references)) for r in group.runs]
    points = [(pt.model, pt.original, pt.shifted) for pt in group.fitted_references]
    points += [(r.model, p["original"], p["shifted"]) for r, p, f in zip(group.runs, group.pairs, group.fitted) if f]
    group.fit, group.reason = trend_or_reason([p[1] for p in points], [p[2] for p in points], transform=transform,
                                              alpha=alpha, names=[p[0] for p in points])
    if group.fit is None and group.references and not group.fitted_references:
        group.reason += (f" None of the {len(group.references)} reference rows is a standard model of the "
                         "imagenet-testbed: give --fit-on all to fit on every row, or mark rows with a standard column.")
    if group.fit is not None:
        group.er = [effective_robustness(group.fit, p["original"], p["shifted"], n_shifted=p.get("shifted_n"),
                                         alpha=alpha) for p in group.pairs]


def shift_groups(results: Sequence, *, reference_points: str | Path | None = None, fit_on=None,
                 transform: str = DEFAULT_TRANSFORM, alpha: float = 0.05) -> list[ShiftGroup]:
    """Group the runs that publish an accuracy pair by shift; fit each group's trend (over the points
    ``fit_on`` chooses, see the module docstring) and every run's effective robustness."""
    chosen = parse_fit_on(fit_on)
    groups: dict[tuple[str, str], ShiftGroup] = {}
    for r in results:
        pair = (r.summary or {}).get("accuracy_pair")
        if not pair or pair.get("original") is None or pair.get("shifted") is None:
            continue
        key = (pair["shift"], pair.get("original_set", ""))
        group = groups.setdefault(key, ShiftGroup(pair["shift"], pair.get("original_set", ""), fit_on=chosen))
        group.runs.append(r)
        group.pairs.append(pair)
    for group in groups.values():
        if reference_points is not None:
            group.references = reference_points_for(reference_points, group.pairs[0])
            group.reference_file = Path(reference_points).name
        fit_group(group, transform=transform, alpha=alpha)
    return list(groups.values())


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _with_ci(value: float, n: int | None) -> str:
    if not n:
        return _pct(value)
    lo, hi = clopper_pearson(int(round(value * n)), int(n))
    return f"{_pct(value)} [{_pct(lo)}, {_pct(hi)}]"


def er_text(er: EffectiveRobustness | None) -> str:
    """``+1.2 [-0.4, +2.9]`` percentage points, or ``–``."""
    if er is None:
        return "–"
    text = f"{100 * er.value:+.1f}"
    if er.low is not None:
        text += f" [{100 * er.low:+.1f}, {100 * er.high:+.1f}]"
    return text


def trend_text(fit: Trend) -> str:
    """``slope 0.929, intercept -0.498, r 0.990`` of a line; both lines of a split trend."""
    if isinstance(fit, PiecewiseFit):
        name = f"{fit.pivot_model} " if fit.pivot_model else ""
        return (f"split at {name}(original {_pct(fit.pivot)} %, 0 % shifted) as the imagenet-testbed splits it: "
                f"below, slope {fit.lower.slope:.3f}, intercept {fit.lower.intercept:.3f} ({fit.lower.n} points); "
                f"above, slope {fit.upper.slope:.3f}, intercept {fit.upper.intercept:.3f} ({fit.upper.n} points)")
    return f"slope {fit.slope:.3f}, intercept {fit.intercept:.3f}, r {fit.r:.3f}"


def effective_lines(group: ShiftGroup, run_id: str | None = None) -> list[str]:
    """Plain-text lines for ``robustlab show``: the trend, then each run's accuracies and ER."""
    lines = [f"effective robustness on {group.shift} (original: {group.original_set or 'original test set'})"]
    if group.fit is None:
        return lines + [f"  no trend: {group.reason}"]
    fit = group.fit
    lines.append(f"  trend over {fit.n} points ({group.describe_fit()}), {fit.transform} axes: {trend_text(fit)}")
    lines.append(f"  {'model':<34}{'original %':>20}{'shifted %':>20}{'trend %':>9}{'ER (points) [95% CI]':>24}")
    for r, pair, er in zip(group.runs, group.pairs, group.er):
        mark = "*" if run_id and r.run_id == run_id else " "
        lines.append(f" {mark}{r.model[:33]:<34}{_with_ci(pair['original'], pair.get('original_n')):>20}"
                     f"{_with_ci(pair['shifted'], pair.get('shifted_n')):>20}{_pct(er.predicted):>9}{er_text(er):>24}")
    return lines


#: The trend figure's lowest and highest accuracy shown (0 % and 100 % have no logit: drawn on the edges).
_EDGE = 0.005


def _forward(v, transform: str):
    v = np.clip(np.asarray(v, dtype=float), _EDGE, 1 - _EDGE)
    if transform == "linear":
        return v
    from scipy import stats

    return stats.norm.ppf(v) if transform == "probit" else np.log(v / (1 - v))


def _interval(value: float, n: int | None, transform: str):
    if not n:
        return None
    lo, hi = clopper_pearson(int(round(value * n)), int(n))
    return [[_forward(value, transform) - _forward(lo, transform)], [_forward(hi, transform) - _forward(value, transform)]]


def _draw_trend(ax, fit: Trend, lo: float, hi: float, transform: str) -> None:
    """The trend (each line of a split trend over its own side) with its band."""
    pieces = [(fit.lower, lo, fit.pivot), (fit.upper, fit.pivot, hi)] if isinstance(fit, PiecewiseFit) else [(fit, lo, hi)]
    for k, (line, a, b) in enumerate(pieces):
        if b <= a:
            continue
        grid = np.linspace(a, b, 80)
        label = f"trend ({line.transform} fit, slope {line.slope:.2f})" if len(pieces) == 1 else \
            f"trend {'below' if k == 0 else 'above'} the split (slope {line.slope:.2f})"
        ax.plot(_forward(grid, transform), _forward(line.predict(grid), transform), color="k",
                linestyle="-" if k == 0 else "--", linewidth=1.2, label=label, zorder=2)
        band_lo, band_hi = line.band(grid)
        ax.fill_between(_forward(grid, transform), _forward(band_lo, transform), _forward(band_hi, transform),
                        color="k", alpha=0.1, linewidth=0,
                        label=f"{100 * (1 - line.alpha):.0f}% band of the trend" if k == 0 else None)


def _draw_references(ax, group: ShiftGroup, transform: str) -> None:
    fitted = {id(p) for p in group.fitted_references}
    for in_fit, style in ((True, dict(color="0.45", s=12)), (False, dict(facecolors="none", edgecolors="0.6", s=12))):
        pts = [p for p in group.references if (id(p) in fitted) == in_fit]
        if pts:
            ax.scatter(_forward([p.original for p in pts], transform), _forward([p.shifted for p in pts], transform),
                       linewidths=0.8, zorder=1, label=f"reference models, {'in' if in_fit else 'not in'} the fit "
                       f"({len(pts)})", **style)


def trend_figure(group: ShiftGroup, key: str) -> F.Figure:
    """Shifted vs original accuracy on the trend's axes (ticks in percent): the reference models (filled:
    in the fit), the trend with its 95 % band (two lines when split), y = x, and the report's models by
    family with 95 % intervals, each named (in the legend, or beside its point when a family has
    many). Wide enough for a whole report row (readable at 1280 px)."""
    fig, unnamed = draw_trend(group)
    if group.fit is not None:
        caption = (f"The trend is fitted on {group.describe_fit()}; {trend_text(group.fit)}. Each coloured point is "
                   "one of the report's models, by family, with 95% Clopper-Pearson intervals; grey points are "
                   "published reference accuracies (filled: in the fit). Effective robustness is a model's height "
                   "above the trend, in accuracy points. Accuracies of 0 % or 100 % are drawn on the edges.")
    else:
        caption = f"No trend: {group.reason}"
    if unnamed:
        caption += f" Not named in the figure (no free space): {', '.join(unnamed)}."
    return F.Figure(key, f"Effective robustness: {group.shift}", caption, svg=F.figure_svg(fig))


def draw_trend(group: ShiftGroup):
    """The matplotlib figure of :func:`trend_figure`, and the model names left out for lack of space."""
    from .figures import pyplot

    plt = pyplot()

    transform = group.fit.transform if group.fit is not None else DEFAULT_TRANSFORM
    fig, ax = plt.subplots(figsize=(8.4, 5.6))
    _draw_references(ax, group, transform)
    xs_all = [p["original"] for p in group.pairs] + [p.original for p in group.references]
    ys_all = [p["shifted"] for p in group.pairs] + [p.shifted for p in group.references]
    lo = max(_EDGE, min(xs_all + ys_all) - 0.03)
    hi = min(1 - _EDGE, max(xs_all + ys_all) + 0.03)
    grid = np.linspace(lo, hi, 80)
    ax.plot(_forward(grid, transform), _forward(grid, transform), color="0.5", linestyle=":", linewidth=1,
            label="y = x (no drop)", zorder=1)
    if group.fit is not None:
        _draw_trend(ax, group.fit, lo, hi, transform)
    names, px, py = [], [], []
    for family, (marker, colour) in FAMILIES.items():
        members = [(r, p) for r, p in zip(group.runs, group.pairs) if model_family(r.model) == family]
        own = len(members) <= len(RUN_MARKERS)  # few: each model its own marker and legend entry
        for k, (r, pair) in enumerate(members):
            x, y = pair["original"], pair["shifted"]
            shape = (marker if k == 0 else RUN_MARKERS[k]) if own else marker
            label = f"{short_model(r.model, 40)} ({family})" if own else (f"{family} ({len(members)})" if k == 0 else None)
            ax.errorbar(_forward(x, transform), _forward(y, transform),
                        xerr=_interval(x, pair.get("original_n"), transform),
                        yerr=_interval(y, pair.get("shifted_n"), transform), fmt=shape, color=colour,
                        markersize=10 if shape == "*" else 6, capsize=2, zorder=3, label=label)
            if not own:
                names.append(short_model(r.model))
                px.append(float(_forward(x, transform)))
                py.append(float(_forward(y, transform)))
    ticks = [t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99) if lo <= t <= hi] \
        or [lo, hi]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_ticks(_forward(ticks, transform), [f"{100 * t:g}" for t in ticks])
    ax.set_xlim(_forward(lo, transform), _forward(hi, transform))
    ax.set_ylim(_forward(lo, transform), _forward(hi, transform))
    ax.set_xlabel(f"accuracy on {group.original_set or 'the original test set'} (%, {transform} axis)", fontsize=10)
    ax.set_ylabel(f"accuracy on {group.shift} (%, {transform} axis)", fontsize=10)
    ax.tick_params(labelsize=9)
    ax.grid(alpha=0.3)
    F.legend_above(ax, fontsize=9)
    return fig, F.label_points(ax, px, py, names, fontsize=8, marker_radius=5.5)


def group_rows(group: ShiftGroup) -> list[list[str]]:
    """Report table rows of a group: model, shift, accuracies with intervals, trend, ER, run."""
    ers: list[EffectiveRobustness | None] = list(group.er) if group.er else [None] * len(group.runs)
    return [[r.model, group.shift, _with_ci(p["original"], p.get("original_n")),
             _with_ci(p["shifted"], p.get("shifted_n")), _pct(er.predicted) if er else "–", er_text(er), r.run_id[:10]]
            for r, p, er in zip(group.runs, group.pairs, ers)]


def show_lines(store, result, *, reference_points: str | Path | None = None, fit_on=None) -> list[str]:
    """``robustlab show``'s effective-robustness lines for ``result`` (empty when its benchmark
    publishes no accuracy pair): the trend over the store's complete runs of the same shift."""
    pair = (result.summary or {}).get("accuracy_pair")
    if not pair:
        return []
    from .collect import collect_results

    others = [r for r in collect_results(store, benchmarks=[result.benchmark]) if r.run_id != result.run_id]
    for group in shift_groups([result, *others], reference_points=reference_points, fit_on=fit_on):
        if any(r.run_id == result.run_id for r in group.runs):
            return [""] + effective_lines(group, result.run_id)
    return []
