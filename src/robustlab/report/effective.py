"""Effective robustness across runs: the (original, shifted) accuracy pairs runs publish, the trend
over them and each run's distance above it; the figure on logit axes; the ``show`` lines.

A benchmark takes part by putting ``summary["accuracy_pair"]`` in its runs' summaries::

    {"shift": "imagenet-a",              # the shifted test set (runs with the same shift share a trend)
     "original_set": "ImageNet val, the 200 ImageNet-A classes",
     "original": 0.81, "original_n": 10000,   # accuracy on the original test set (fraction, images)
     "shifted": 0.03, "shifted_n": 7500,      # ... on the shifted one (n None: no interval)
     "testbed_columns": ["val-on-imagenet-a-classes", "imagenet-a"]}   # optional: columns of the
                                                # imagenet-testbed's robustness_top1s.csv
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..metrics.effective_robustness import (DEFAULT_TRANSFORM, EffectiveRobustness, ReferencePoint,
                                            effective_robustness, read_reference_points, reference_rows,
                                            trend_or_reason)
from ..metrics.stats import LinearFit, clopper_pearson
from . import figures as F
from .collect import short_model

__all__ = ["ShiftGroup", "effective_lines", "er_text", "group_rows", "reference_points_for", "shift_groups",
           "trend_figure"]


@dataclass
class ShiftGroup:
    """The runs sharing one shifted test set, with the trend over them and the reference points."""

    shift: str
    original_set: str
    runs: list = field(default_factory=list)
    pairs: list[Mapping] = field(default_factory=list)
    references: list[ReferencePoint] = field(default_factory=list)
    fit: LinearFit | None = None
    reason: str = ""
    er: list[EffectiveRobustness] = field(default_factory=list)


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


def shift_groups(results: Sequence, *, reference_points: str | Path | None = None,
                 transform: str = DEFAULT_TRANSFORM, alpha: float = 0.05) -> list[ShiftGroup]:
    """Group the runs that publish an accuracy pair by shift; fit each group's trend (runs plus
    reference points) and every run's effective robustness."""
    groups: dict[tuple[str, str], ShiftGroup] = {}
    for r in results:
        pair = (r.summary or {}).get("accuracy_pair")
        if not pair or pair.get("original") is None or pair.get("shifted") is None:
            continue
        key = (pair["shift"], pair.get("original_set", ""))
        group = groups.setdefault(key, ShiftGroup(pair["shift"], pair.get("original_set", "")))
        group.runs.append(r)
        group.pairs.append(pair)
    for group in groups.values():
        if reference_points is not None:
            group.references = reference_points_for(reference_points, group.pairs[0])
        xs = [p["original"] for p in group.pairs] + [pt.original for pt in group.references]
        ys = [p["shifted"] for p in group.pairs] + [pt.shifted for pt in group.references]
        group.fit, group.reason = trend_or_reason(xs, ys, transform=transform, alpha=alpha)
        if group.fit is not None:
            group.er = [effective_robustness(group.fit, p["original"], p["shifted"], n_shifted=p.get("shifted_n"),
                                             alpha=alpha) for p in group.pairs]
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


def effective_lines(group: ShiftGroup, run_id: str | None = None) -> list[str]:
    """Plain-text lines for ``robustlab show``: the trend, then each run's accuracies and ER."""
    lines = [f"effective robustness on {group.shift} (original: {group.original_set or 'original test set'})"]
    if group.fit is None:
        return lines + [f"  no trend: {group.reason}"]
    fit = group.fit
    lines.append(f"  trend over {fit.n} points ({len(group.runs)} runs, {len(group.references)} reference points), "
                 f"{fit.transform} axes: slope {fit.slope:.3f}, intercept {fit.intercept:.3f}, r {fit.r:.3f}")
    lines.append(f"  {'model':<34}{'original %':>20}{'shifted %':>20}{'trend %':>9}{'ER (points) [95% CI]':>24}")
    for r, pair, er in zip(group.runs, group.pairs, group.er):
        mark = "*" if run_id and r.run_id == run_id else " "
        lines.append(f" {mark}{r.model[:33]:<34}{_with_ci(pair['original'], pair.get('original_n')):>20}"
                     f"{_with_ci(pair['shifted'], pair.get('shifted_n')):>20}{_pct(er.predicted):>9}{er_text(er):>24}")
    return lines


def _forward(v, transform: str):
    v = np.clip(np.asarray(v, dtype=float), 1e-4, 1 - 1e-4)
    if transform == "linear":
        return v
    from scipy import stats

    return stats.norm.ppf(v) if transform == "probit" else np.log(v / (1 - v))


def trend_figure(group: ShiftGroup, key: str) -> F.Figure:
    """Shifted vs original accuracy on the trend's axes (ticks in percent): runs with 95% intervals,
    reference points in grey, y = x, the trend with its 95% band."""
    import matplotlib.pyplot as plt

    transform = group.fit.transform if group.fit is not None else DEFAULT_TRANSFORM
    fig, ax = plt.subplots(figsize=(5.0, 4.4))
    if group.references:
        ax.scatter(_forward([p.original for p in group.references], transform),
                   _forward([p.shifted for p in group.references], transform), s=9, color="0.65",
                   label=f"reference points ({len(group.references)})", zorder=1)
    for r, pair in zip(group.runs, group.pairs):
        x, y = pair["original"], pair["shifted"]
        xe = ye = None
        if pair.get("original_n"):
            lo, hi = clopper_pearson(int(round(x * pair["original_n"])), int(pair["original_n"]))
            xe = [[_forward(x, transform) - _forward(lo, transform)], [_forward(hi, transform) - _forward(x, transform)]]
        if pair.get("shifted_n"):
            lo, hi = clopper_pearson(int(round(y * pair["shifted_n"])), int(pair["shifted_n"]))
            ye = [[_forward(y, transform) - _forward(lo, transform)], [_forward(hi, transform) - _forward(y, transform)]]
        ax.errorbar(_forward(x, transform), _forward(y, transform), xerr=xe, yerr=ye, fmt="o", markersize=4, capsize=2,
                    label=short_model(r.model), zorder=3)
    xs_all = [p["original"] for p in group.pairs] + [p.original for p in group.references]
    ys_all = [p["shifted"] for p in group.pairs] + [p.shifted for p in group.references]
    lo = max(0.01, min(xs_all + ys_all) - 0.05)
    hi = min(0.99, max(xs_all + ys_all) + 0.05)
    grid = np.linspace(lo, hi, 80)
    ax.plot(_forward(grid, transform), _forward(grid, transform), color="0.5", linestyle=":", linewidth=1,
            label="y = x (no drop)")
    if group.fit is not None:
        fit = group.fit
        ax.plot(_forward(grid, transform), _forward(fit.predict(grid), transform), color="k", linewidth=1,
                label=f"trend ({fit.transform} fit, slope {fit.slope:.2f})")
        band_lo, band_hi = fit.band(grid)
        ax.fill_between(_forward(grid, transform), _forward(band_lo, transform), _forward(band_hi, transform),
                        color="k", alpha=0.1, linewidth=0, label=f"{100 * (1 - fit.alpha):.0f}% band of the trend")
    ticks = [t for t in (0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99) if lo <= t <= hi] or [lo, hi]
    ax.set_xticks(_forward(ticks, transform), [f"{100 * t:g}" for t in ticks])
    ax.set_yticks(_forward(ticks, transform), [f"{100 * t:g}" for t in ticks])
    ax.set_xlim(_forward(lo, transform), _forward(hi, transform))
    ax.set_ylim(_forward(lo, transform), _forward(hi, transform))
    ax.set_xlabel(f"accuracy on {group.original_set or 'the original test set'} (%, {transform} axis)")
    ax.set_ylabel(f"accuracy on {group.shift} (%, {transform} axis)")
    ax.grid(alpha=0.3)
    F.legend_above(ax)
    caption = ("Each point is a model (95% Clopper-Pearson intervals); grey points are published reference accuracies. "
               "Effective robustness is a model's height above the trend, in accuracy points."
               if group.fit is not None else f"No trend: {group.reason}")
    return F.Figure(key, f"Effective robustness: {group.shift}", caption, svg=F.figure_svg(fig))


def group_rows(group: ShiftGroup) -> list[list[str]]:
    """Report table rows of a group: model, shift, accuracies with intervals, trend, ER, run."""
    ers: list[EffectiveRobustness | None] = list(group.er) if group.er else [None] * len(group.runs)
    return [[r.model, group.shift, _with_ci(p["original"], p.get("original_n")),
             _with_ci(p["shifted"], p.get("shifted_n")), _pct(er.predicted) if er else "–", er_text(er), r.run_id[:10]]
            for r, p, er in zip(group.runs, group.pairs, ers)]


def show_lines(store, result, *, reference_points: str | Path | None = None) -> list[str]:
    """``robustlab show``'s effective-robustness lines for ``result`` (empty when its benchmark
    publishes no accuracy pair): the trend over the store's complete runs of the same shift."""
    pair = (result.summary or {}).get("accuracy_pair")
    if not pair:
        return []
    from .collect import collect_results

    others = [r for r in collect_results(store, benchmarks=[result.benchmark]) if r.run_id != result.run_id]
    for group in shift_groups([result, *others], reference_points=reference_points):
        if any(r.run_id == result.run_id for r in group.runs):
            return [""] + effective_lines(group, result.run_id)
    return []
