"""Report section of the video pm-k benchmarks (``imagenet-vid-robust``, ``ytbb-robust``, ``video-pmk``).

Table: per run, anchor accuracy (pm-0) and pm-k accuracy with their stored exact 95%
Clopper-Pearson intervals, and the drop. Figures: pm-k accuracy vs k; original vs perturbed
accuracy across models (with the least-squares line); per-class original vs pm-k accuracy;
how many anchors each frame offset broke first; Gu et al.'s conditional accuracy; and, with
the store at hand, a grid of anchors next to the neighbour that broke them, with the model's
predictions. Every number comes from the run's stored metric rows (recomputable from its
per-frame predictions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..benchmarks.video_presentation import VideoShow
from ..engine.presentation import register_presentation
from ..errors import RobustlabError
from . import figures as F
from .collect import Estimate, metric_table
from .examples import thumbnail
from .section_base import (ReportContext, Section, accuracy_scatter, run_config, short_path,
                       run_labels)

#: Rows of the "anchor vs the neighbour that breaks it" grid.
MAX_EXAMPLES = 6
#: Notes of the plugin whose content the table and figures already show.
SHOWN_NOTES = ("pm-0 (anchor accuracy)", "accuracy vs k", "Gu et al.")


def pmk_estimates(result) -> tuple[Estimate, Estimate, int] | None:
    """(pm-0, pm-k, k) of a run from its stored rows (value and interval as stored), or None."""
    t = metric_table(result)
    if ("accuracy_original", "") not in t:
        return None
    n = int(t[("n_anchors", "")])

    def est(name: str, setting: str = "") -> Estimate:
        return Estimate(t[(name, setting)], t.get((f"{name}_low", setting)), t.get((f"{name}_high", setting)), n)

    return est("accuracy_original"), est("accuracy_pmk"), int(t[("k", "")])


def pmk_curve(result) -> tuple[list[int], list[Estimate]]:
    """The accuracy-vs-k curve of a run: ks and the stored pm-k accuracy (with interval) at each."""
    t = metric_table(result)
    n = int(t.get(("n_anchors", ""), 0)) or None
    ks = sorted(int(s[2:]) for m, s in t if m == "accuracy_pmk" and s.startswith("k="))
    return ks, [Estimate(t[("accuracy_pmk", f"k={k}")], t.get(("accuracy_pmk_low", f"k={k}")),
                         t.get(("accuracy_pmk_high", f"k={k}")), n) for k in ks]


def _by_setting(result, name: str, prefix: str) -> dict[str, float]:
    """``{setting without prefix: value}`` of one metric's rows whose setting starts with ``prefix``."""
    return {s[len(prefix):]: v for m, s, v in result.metrics if m == name and s.startswith(prefix)}


def pmk_headline(result, results: Sequence = (), store=None) -> list[str]:
    """Headline parts of a video run: ``pm-0 ... [lo, hi]``, ``pm-k ... [lo, hi]``."""
    got = pmk_estimates(result)
    if got is None:
        return []
    pm0, pmk, k = got
    return [f"pm-0 {pm0.percent()}", f"pm-{k} {pmk.percent()}"]


# --- figures -------------------------------------------------------------------------------------------


def paired_class_bars(key: str, title: str, caption: str, classes: Sequence[str],
                      series: Mapping[str, tuple[Sequence[float], Sequence[float]]], *, ylabel: str) -> F.Figure:
    """Per class and model a light bar (original) beside a solid bar (perturbed), in the model's colour."""
    n_cls, n_ser = len(classes), max(1, len(series))
    from matplotlib.patches import Patch

    plt = F.pyplot()
    fig, ax = plt.subplots(figsize=(min(9.0, max(5.6, 0.45 * n_cls * n_ser ** 0.5 + 1.5)), 3.4))
    width = 0.8 / (2 * n_ser)
    x = np.arange(n_cls)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, (orig, pert)) in enumerate(series.items()):
        colour = colours[i % len(colours)]
        left = x + (2 * i - (2 * n_ser - 1) / 2) * width
        ax.bar(left, orig, width, color=colour, alpha=0.35)
        ax.bar(left + width, pert, width, color=colour)
    ax.set_xticks(x, classes, rotation=45 if n_cls > 6 else 0, ha="right" if n_cls > 6 else "center")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 100)
    handles = [Patch(color=colours[i % len(colours)], label=name) for i, name in enumerate(series)]
    handles += [Patch(color="0.4", alpha=0.35, label="light: original"), Patch(color="0.4", label="solid: pm-k")]
    ax.legend(handles=handles, fontsize=7, frameon=False, ncol=min(4, len(handles)), loc="lower center",
              bbox_to_anchor=(0.5, 1.0))
    return F.Figure(key, title, caption, svg=F.figure_svg(fig))


@dataclass(frozen=True)
class AnchorExample:
    """One row of the example grid: an anchor, the frame that broke it and the predictions."""

    anchor: str
    frame: str
    offset: int
    truth: str
    anchor_prediction: str
    anchor_correct: bool
    frame_prediction: str

    def row_label(self) -> str:
        anchor = f"anchor: {self.anchor_prediction} ({'right' if self.anchor_correct else 'wrong'})"
        if self.offset == 0:
            return f"true: {self.truth}\n{anchor}"
        return f"true: {self.truth}\n{anchor}\n{self.offset:+d} frames: {self.frame_prediction} (wrong)"


def anchor_examples(store, result, limit: int = MAX_EXAMPLES) -> list[AnchorExample]:
    """Anchors of a stored run that are not pm-k correct, with what broke them.

    Neighbour failures (the anchor right, a neighbour wrong) come first, in anchor order; an
    anchor that is itself wrong is shown only when there are not enough of those.
    """
    from ..benchmarks.video import anchor_failures, frame_predictions
    from .section_base import benchmark_of

    pmk_set = benchmark_of(result).pmk_set(run_config(result))
    names = pmk_set.class_names
    preds = frame_predictions(store.read_predictions(result.run_id))
    failures = anchor_failures(store, result.run_id)
    failures = [f for f in failures if f.offset != 0] + [f for f in failures if f.offset == 0]

    def name(c: int) -> str:
        return names[c] if 0 <= c < len(names) else "nothing"

    out = []
    for f in failures[:limit]:
        a_pred = preds.get(f.anchor, len(names))
        truth = " / ".join(name(c) for c in pmk_set.labels.get(f.anchor, f.labels))
        out.append(AnchorExample(f.anchor, f.frame, f.offset, truth, name(a_pred),
                                 a_pred in pmk_set.labels.get(f.anchor, ()), name(f.prediction)))
    return out


def anchor_grid(store, result, label: str) -> F.Figure | None:
    """The grid "anchor vs the neighbour that breaks it" for one run; None when frames are unreadable."""
    from ..benchmarks.video import FrameSamples

    try:
        examples = anchor_examples(store, result)
    except (RobustlabError, OSError, KeyError, ValueError):
        return None
    keys = tuple(k for e in examples for k in (e.anchor, e.frame))
    frames = FrameSamples(Path(run_config(result).data), keys, np.full(len(keys), -1))
    rows, shown = [], []
    for i, e in enumerate(examples):
        try:  # a row whose frames are not readable here is left out
            rows.append([thumbnail(frames.read(2 * i))] + ([thumbnail(frames.read(2 * i + 1))] if e.offset else []))
            shown.append(e)
        except (RobustlabError, OSError):
            continue
    if not rows:
        return None
    k = run_config(result).k
    return F.image_grid("anchor-vs-neighbour", f"Examples: anchor vs the neighbour that breaks it ({label})",
                        f"Anchors that {label} gets right but a reviewed neighbour within ±{k} frames wrong (left: "
                        "the anchor, right: the nearest misclassified neighbour and its offset in frames), with the "
                        "model's top-1 predictions; rows with one image are anchors the model already gets wrong.",
                        rows, row_labels=[e.row_label() for e in shown],
                        col_labels=["anchor", "neighbour that breaks it"])


# --- the section ------------------------------------------------------------------------------------------


INTRO = ("Anchor frames from videos and their reviewed neighbours (frames within ±k of the anchor that look alike to "
         "people). Original accuracy (pm-0) scores the anchors alone; pm-k accuracy counts an anchor only when the "
         "model classifies it and every neighbour within ±k frames correctly, so the drop measures how often "
         "imperceptible changes between nearby frames flip the prediction. Intervals are exact 95% Clopper-Pearson.")


@dataclass
class _Series:
    """What the section's figures collect run by run."""

    curves_x: dict = field(default_factory=dict)
    curves_y: dict = field(default_factory=dict)
    bands: dict = field(default_factory=dict)
    points_by_set: dict = field(default_factory=dict)
    classes_by_set: dict = field(default_factory=dict)
    broken: dict = field(default_factory=dict)
    conditional: dict = field(default_factory=dict)
    ks_seen: set = field(default_factory=set)


def video_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("video", "Natural perturbations from video (pm-k)", INTRO,
                  ["model", "benchmark", "dataset", "anchors", "original accuracy % [95% CI]",
                   "pm-k accuracy % [95% CI]", "k", "drop (points)", "run"],
                  legend="[a, b] = exact 95 % Clopper-Pearson interval over the anchors; drop = original minus pm-k "
                         "accuracy, in percentage points.")
    names = run_labels(results)
    series = _Series()
    for r in results:
        sec.notes += [f"{names[r.run_id]}: {n}" for n in r.notes if not n.startswith(SHOWN_NOTES)]
        add_run(sec, series, r, names[r.run_id])
    sec.figures += curve_figures(series) + breakage_figures(series)
    store = context.store if context is not None else None
    if store is not None:
        ranked = sorted((r for r in results if pmk_estimates(r) is not None),
                        key=lambda r: (-pmk_estimates(r)[0].value, r.model, r.run_id))
        for r in ranked:  # the strongest model whose frames are readable here
            grid = anchor_grid(store, r, names[r.run_id])
            if grid is not None:
                sec.figures.append(grid)
                break
    return sec


def add_run(sec: Section, series: _Series, r, name: str) -> None:
    """One run's table row and figure values (nothing for a run without pm-k rows)."""
    got = pmk_estimates(r)
    if got is None:
        return
    pm0, pmk, k = got
    series.ks_seen.add(k)
    sec.rows.append([r.model, r.benchmark, short_path(r.dataset), str(pm0.n), pm0.percent(), pmk.percent(), str(k),
                     f"{100 * (pm0.value - pmk.value):.1f}", r.run_id[:10]])
    ks, curve = pmk_curve(r)
    if ks:
        series.curves_x[name] = ks
        series.curves_y[name] = [100 * e.value for e in curve]
        if all(e.low is not None for e in curve):
            series.bands[name] = ([100 * e.low for e in curve], [100 * e.high for e in curve])
    series.points_by_set.setdefault((r.benchmark, r.dataset), {})[name] = (
        pm0.value, pmk.value, (pm0.low, pm0.high), (pmk.low, pmk.high))
    orig, pert = _by_setting(r, "class_accuracy_original", "class/"), _by_setting(r, "class_accuracy_pmk", "class/")
    if orig:
        series.classes_by_set.setdefault((r.benchmark, r.dataset), {})[name] = (orig, pert)
    by_offset = _by_setting(r, "n_broken_at_offset", "offset=")
    if by_offset and pm0.n:
        series.broken[name] = {int(d): 100 * v / pm0.n for d, v in by_offset.items()}
    cond = _by_setting(r, "conditional_accuracy", "d=")
    if cond:
        series.conditional[name] = {int(d): v for d, v in cond.items()}


def curve_figures(series: _Series) -> list[F.Figure]:
    """pm-k vs k, original vs perturbed accuracy (per set), and per-class accuracy (per set)."""
    figures = []
    k_text = f"k = {series.ks_seen.pop()}" if len(series.ks_seen) == 1 else "the run's k"
    if series.curves_y:
        figures.append(F.lines(
            "pmk-vs-k", "pm-k accuracy vs k",
            "Accuracy (%) when an anchor counts as correct only if it and every reviewed neighbour within ±k frames "
            "are classified correctly; k = 0 is the anchors alone. Shaded: exact 95% Clopper-Pearson intervals.",
            series.curves_x, series.curves_y, bands=series.bands,
            xlabel="k: largest frame offset of the neighbours (frames)", ylabel="pm-k accuracy (%)"))
    multi = len(series.points_by_set) > 1
    for i, ((bench, data), points) in enumerate(sorted(series.points_by_set.items())):
        where = f" ({bench}, {short_path(data, 28)})" if multi else ""
        figures.append(accuracy_scatter(
            "original-vs-perturbed" + (f"-{i + 1}" if multi else ""), "Original vs perturbed accuracy" + where,
            points, "original accuracy: anchors alone (%)", f"perturbed accuracy: pm-k, {k_text} (%)"))
    several = len(series.classes_by_set) > 1
    for i, ((bench, data), per_model) in enumerate(sorted(series.classes_by_set.items())):
        classes = sorted({c for orig, _ in per_model.values() for c in orig})
        where = f" ({bench}, {short_path(data, 28)})" if several else ""
        figures.append(paired_class_bars(
            "per-class-accuracy" + (f"-{i + 1}" if several else ""), "Per-class original vs pm-k accuracy" + where,
            "Accuracy (%) per class of the anchors' labels (an anchor with several labels counts for each): the "
            "light bar is the anchors alone, the solid bar pm-k.",
            classes, {m: ([100 * orig.get(c, np.nan) for c in classes], [100 * pert.get(c, np.nan) for c in classes])
                      for m, (orig, pert) in per_model.items()}, ylabel="accuracy (%)"))
    return figures


def breakage_figures(series: _Series) -> list[F.Figure]:
    """Where anchors break (the offset of the first error) and Gu et al.'s consistency between frames."""
    figures = []
    broken, conditional = series.broken, series.conditional
    if broken and any(any(v.values()) for v in broken.values()):
        figures.append(F.lines(
            "errors-by-offset", "Where anchors break: frame offset of the first error",
            "For anchors the model gets right, the offset (in frames, either direction) of the nearest neighbour it "
            "gets wrong: the share (%) of all anchors that each offset breaks first. Summed over offsets it is the "
            "drop from original to pm-k accuracy.",
            {m: sorted(v) for m, v in broken.items()}, {m: [v[d] for d in sorted(v)] for m, v in broken.items()},
            xlabel="|offset| of the first misclassified neighbour (frames)",
            ylabel="anchors broken first (% of anchors)"))
    if conditional:
        figures.append(F.lines(
            "conditional-accuracy", "Consistency between frames d apart",
            "Gu et al.'s measure: of the anchors classified correctly, the fraction (%) whose neighbour exactly d "
            "frames away is classified correctly too.",
            {m: sorted(v) for m, v in conditional.items()},
            {m: [100 * v[d] for d in sorted(v)] for m, v in conditional.items()},
            xlabel="distance between the frames d (frames)", ylabel="P(neighbour right | anchor right) (%)"))
    return figures


@register_presentation
class VideoPresentation(VideoShow):
    """The pm-k runs: shown as :class:`VideoShow`, with this module's section and headline."""

    section_builder = staticmethod(video_section)
    headline_builder = staticmethod(pmk_headline)
