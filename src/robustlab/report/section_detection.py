"""Report section of the detection-under-corruption benchmarks (``coco-c``, ``voc-c``,
``cityscapes-c``, ``detection-corrupted``; Robust Detection Benchmark), and results imported
from mmdetection's robustness pickles (``mmdet-results``).

Table: per run and metric, P (clean performance), mPC (mean over the corruptions and
severities) and rPC = mPC / P. Figures for the headline metric (COCO: AP@[.5:.95]; VOC: AP50):
performance per corruption, rPC per corruption, performance vs severity (0 = clean) and, when
the run stored per-image pixel RMSE, RMSE vs rPC per corruption with the fitted line.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..benchmarks.detection_presentation import DetectionPmkShow, DetectionShow
from ..engine.presentation import register_presentation
from ..engine.setting import Setting
from ..metrics.stats import correlation_p_value
from ..metrics.under_corruption import rpc_undefined_reason
from . import figures as F
from .collect import metric_table
from .section_base import ReportContext, Section, run_config, run_labels, short_path

#: Metrics in the table besides the headline, when the run has them.
TABLE_METRICS = ("AP", "AP50", "AP75")


def headline_metric(result) -> str:
    return (result.summary or {}).get("headline") or getattr(run_config(result), "headline", None) or "AP"


def robustness(result, metric: str) -> tuple[float, float, float] | None:
    """(P, mPC, rPC) of one metric from the stored rows, or None when the run has none."""
    t = metric_table(result)
    keys = [(f"{k}:{metric}", "") for k in ("P", "mPC", "rPC")]
    if not all(k in t for k in keys):
        return None
    return tuple(t[k] for k in keys)  # type: ignore[return-value]


def detection_headline(result, results: Sequence = (), store=None) -> list[str]:
    """``AP: P 36.3 / mPC 18.2 / rPC 50.2`` (percent) for the run's headline metric."""
    head = headline_metric(result)
    got = robustness(result, head)
    if got is None:
        return ["P / mPC / rPC unavailable (a cell has no score)"]
    p, mpc, rpc = got
    reason = rpc_undefined_reason(p, rpc)
    return [f"{head}: P {100 * p:.1f} / mPC {100 * mpc:.1f} / rPC {100 * rpc:.1f}"] + ([reason] if reason else [])


def _per_setting(result, name: str) -> dict[str, float]:
    return {s: v for m, s, v in result.metrics if m == name}


def corruption_values(result, name: str) -> dict[str, float]:
    """``{corruption: value}`` of a per-corruption row (``mPC:AP``, ``rPC:AP``), in the run's corruption order."""
    rows = _per_setting(result, name)
    return {c: rows[c] for c in getattr(run_config(result), "corruptions", None) or [] if c in rows}


def severity_curve(result, metric: str) -> tuple[list[int], list[float]]:
    """Severities 0 (clean, P) .. 5 and the mean performance over the corruptions at each."""
    t = metric_table(result)
    sevs = sorted(Setting.parse(s).level for m, s in t if m == f"mPC:{metric}" and s.startswith("severity/"))
    if (f"P:{metric}", "") not in t or not sevs:
        return [], []
    return [0] + sevs, [t[(f"P:{metric}", "")]] + [t[(f"mPC:{metric}", f"severity/{s}")] for s in sevs]


def rmse_per_corruption(result) -> dict[str, float]:
    """Mean over severities of the stored per-cell pixel RMSE (0-255 grey levels), per corruption."""
    cells: dict[str, list[float]] = {}
    for setting, v in _per_setting(result, "rmse").items():
        if "/" in setting:
            cells.setdefault(setting.split("/", 1)[0], []).append(v)
    return {c: float(np.mean(v)) for c, v in cells.items()}


#: The p-value under which a correlation counts as significant, and a fitted line is drawn.
SIGNIFICANCE = 0.05


def rmse_scatter(points: dict[str, tuple[list[float], list[float], list[str], tuple[float, float] | None]],
                 *, metric: str) -> F.Figure:
    """RMSE (x) vs rPC (y, %) per corruption, one colour per model, with each run's fitted line."""
    plt = F.pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    named: dict[str, tuple[float, float]] = {}
    unfitted: list[str] = []
    for name, (xs, ys, labels, line) in points.items():
        (dots,) = ax.plot(xs, [100 * y for y in ys], "o", markersize=4, label=name)
        for x, y, text in zip(xs, ys, labels):
            named.setdefault(text, (x, 100 * y))  # each corruption named once (same RMSE for every model)
        r = float(np.corrcoef(xs, ys)[0, 1]) if len(xs) >= 3 and np.ptp(xs) > 0 and np.ptp(ys) > 0 else float("nan")
        p = correlation_p_value(r, len(xs))
        if line is not None and np.all(np.isfinite(line)) and p < SIGNIFICANCE:
            grid = np.linspace(min(xs), max(xs), 20)
            ax.plot(grid, 100 * (line[0] + line[1] * grid), color=dots.get_color(), linewidth=1)
        elif line is not None:  # a line through points that do not correlate would show a trend that is not there
            unfitted.append(f"{name} (r = {r:.3f}, p = {p:.2f})" if np.isfinite(r) else f"{name} (r undefined)")
    ax.set_xlabel("pixel RMSE between clean and corrupted image (grey levels, 0-255)")
    ax.set_ylabel(f"rPC: {metric} under corruption / clean {metric} (%)")
    ax.grid(alpha=0.3)
    F.legend_above(ax)
    unnamed = F.label_points(ax, [p[0] for p in named.values()], [p[1] for p in named.values()], list(named))
    return F.Figure("rmse-vs-rpc", "Pixel change vs relative performance",
                    "One point per corruption (RMSE and rPC averaged over its severities); lines are each run's "
                    "least-squares fit (its slope, in rPC points per grey level of RMSE, is in the notes), drawn only "
                    f"where the correlation is significant (p < {SIGNIFICANCE:g}). A steep fall means performance "
                    "follows how much the pixels change."
                    + (f" No line for {'; '.join(unfitted)}: the correlation is not significant, so a fitted line would "
                       "show a trend the points do not support." if unfitted else "")
                    + (f" Points without room for their name: {', '.join(unnamed)}." if unnamed else ""),
                    svg=F.figure_svg(fig))


def detection_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("detection", "Object detection under corruption (Robust Detection Benchmark)",
                  "P is the detector's performance on clean images (COCO: AP averaged over IoU .5:.95; Pascal VOC: "
                  "AP at IoU .5), mPC its mean over the corruptions and severities, and rPC = mPC / P the share of "
                  "clean performance kept under corruption. All in percent; higher is better.",
                  ["model", "benchmark", "dataset", "metric", "P (%)", "mPC (%)", "rPC (%)", "run"],
                  legend="P = the metric on clean images; mPC = its mean over corruptions x severities; rPC = mPC / P "
                         "(% of the detector's own clean performance: the denominator is the same run's P).")
    names = run_labels(results)
    heads = {headline_metric(r) for r in results}
    by_corruption, rpc_by_corruption, sev_x, sev_y, rmse_points = {}, {}, {}, {}, {}
    corruptions: list[str] = []
    for r in results:
        head, label = headline_metric(r), names[r.run_id]
        shown = [head] + [m for m in TABLE_METRICS if m != head]
        for metric in shown:
            got = robustness(r, metric)
            if got is not None:
                sec.rows.append([r.model, r.benchmark, short_path(r.dataset), metric] +
                                [f"{100 * v:.1f}" for v in got] + [r.run_id[:10]])
        if robustness(r, head) is None:
            sec.rows.append([r.model, r.benchmark, short_path(r.dataset), head, "–", "–", "–", r.run_id[:10]])
        if len(heads) > 1:
            label = f"{label} ({head})"
        mpc = corruption_values(r, f"mPC:{head}")
        if mpc:
            by_corruption[label] = mpc
            rpc_by_corruption[label] = corruption_values(r, f"rPC:{head}")
            corruptions += [c for c in mpc if c not in corruptions]
        xs, ys = severity_curve(r, head)
        if xs:
            sev_x[label], sev_y[label] = xs, [100 * y for y in ys]
        rmse = rmse_per_corruption(r)
        rpc = rpc_by_corruption.get(label, {})
        common = [c for c in rpc if c in rmse]
        if len(common) >= 2:
            t = metric_table(r)
            line = ((t[("rmse_vs_rpc:intercept", "")], t[("rmse_vs_rpc:slope", "")])
                    if ("rmse_vs_rpc:slope", "") in t else None)
            rmse_points[label] = ([rmse[c] for c in common], [rpc[c] for c in common], common, line)
        sec.notes += [f"{label}: {n}" for n in r.notes if not n.startswith(("P / mPC / rPC (", "rPC per corruption"))]
    metric_text = " / ".join(sorted(heads))
    if by_corruption:
        sec.figures.append(F.bar_groups(
            "performance-per-corruption", "Performance per corruption",
            f"{metric_text} (%) under each corruption, averaged over its severities (mPC per corruption).",
            corruptions, {m: [100 * v.get(c, np.nan) for c in corruptions] for m, v in by_corruption.items()},
            ylabel=f"{metric_text} under corruption (%)"))
        sec.figures.append(F.bar_groups(
            "rpc-per-corruption", "Relative performance per corruption",
            f"rPC per corruption: {metric_text} under the corruption as a share (%) of clean {metric_text}; the dashed "
            "line (100) is no loss.", corruptions,
            {m: [100 * v.get(c, np.nan) for c in corruptions] for m, v in rpc_by_corruption.items()},
            ylabel=f"rPC ({metric_text} kept, %)", reference=100, reference_label="clean (100)"))
    if sev_y:
        sec.figures.append(F.lines(
            "performance-vs-severity", "Performance vs severity",
            f"{metric_text} (%) averaged over the corruptions at each severity; severity 0 is clean (P).",
            sev_x, sev_y, xlabel="corruption severity (0 = clean)", ylabel=f"{metric_text} (%)"))
    if rmse_points:
        sec.figures.append(rmse_scatter(rmse_points, metric=metric_text))
    return sec


@register_presentation
class DetectionPresentation(DetectionShow):
    """The corrupted detection sets and imported mmdetection results: shown as :class:`DetectionShow`,
    with this module's section and headline."""

    section_builder = staticmethod(detection_section)
    headline_builder = staticmethod(detection_headline)


@register_presentation
class DetectionPmkPresentation(DetectionPmkShow):
    """Detection pm-k (``imagenet-vid-robust-detection``): its own metric rows in the report's generic
    section, its headline the default."""
