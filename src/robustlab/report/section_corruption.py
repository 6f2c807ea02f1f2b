"""The common-corruptions section (``imagenet-c``, ``corrupted``): CE per corruption, error vs severity, clean vs
corrupted accuracy, and for variants of one model (:mod:`.variants`) the error change per corruption."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..benchmarks.corruption import NOT_COMPARABLE_LABEL, published_baseline_label
from . import figures as F
from .collect import Estimate, metric_table
from .section_base import (ReportContext, Section, accuracy_scatter, first_value, label, labelled, pct,
                           register_section, short_path)
from .variants import PairedDifference, paired_corruption_differences, variant_pairs, verdict_note


@register_section("corruption", ["imagenet-c", "corrupted"])
def corruption_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("corruption", "Common corruptions (ImageNet-C)",
                  "Top-1 error under 15 benchmark corruptions at 5 severities. CE normalises a corruption's "
                  "summed error by the baseline's (AlexNet unless stated), mCE averages CE over the 15 "
                  "corruptions; relative mCE measures the drop from clean error. Lower is better; the "
                  "baseline scores 100.",
                  ["model", "benchmark", "dataset", "clean accuracy % [95% CI]", "mean corruption accuracy %",
                   "mCE", "relative mCE", "run"])
    ce_series, sev_series, sev_x, points = {}, {}, {}, {}
    categories: list[str] = []
    not_comparable = []
    for r in results:
        t, s = metric_table(r), r.summary or {}
        clean_err = s.get("clean_error")
        clean = Estimate.from_fraction(1 - clean_err, t.get(("n_samples", "clean"))) if clean_err is not None else None
        mca = first_value(s, "mean_corruption_accuracy", "mean_corruption_accuracy_subset")
        mce = first_value(s, "mce", "mce_subset")
        rel = first_value(s, "relative_mce", "relative_mce_subset")
        own = published_baseline_label(r.benchmark, r.config)
        sec.rows.append([r.model, r.benchmark, short_path(r.dataset), clean.percent() if clean else "–", pct(mca),
                         labelled(pct(mce), own if mce is not None else None),
                         labelled(pct(rel), own if rel is not None else None), r.run_id[:10]])
        corr = s.get("corruptions") or {}
        ces = {c: v.get("ce") for c, v in corr.items() if v.get("ce") is not None}
        if ces:
            for c in ces:
                if c not in categories:
                    categories.append(c)
            ce_series[labelled(label(r), own)] = ces
            if own:
                not_comparable.append(label(r))
        sevs = sorted({int(k) for v in corr.values() for k, e in (v.get("errors") or {}).items() if e is not None})
        if sevs:
            xs = ([0] if clean_err is not None else []) + sevs
            ys = ([clean_err] if clean_err is not None else []) + [
                float(np.mean([v["errors"][str(k)] for v in corr.values() if v["errors"].get(str(k)) is not None]))
                for k in sevs]
            sev_x[label(r)], sev_series[label(r)] = xs, [100 * y for y in ys]
        if clean is not None and mca is not None:
            points[label(r)] = (clean.value, mca, (clean.low, clean.high), None)
        sec.notes += [f"{label(r)}: {n}" for n in r.notes]
    if ce_series:
        sec.figures.append(F.bar_groups(
            "ce-per-corruption", "Corruption error per corruption",
            "CE per corruption (%); the dashed line is the baseline (100). Lower is more robust."
            + (f" {', '.join(not_comparable)}: {NOT_COMPARABLE_LABEL} (errors on their own data divided by "
               "AlexNet's published ImageNet-C errors)." if not_comparable else ""),
            categories, {m: [100 * v.get(c, np.nan) for c in categories] for m, v in ce_series.items()},
            ylabel="corruption error CE (%)", reference=100, reference_label="baseline (100)"))
    if sev_series:
        sec.figures.append(F.lines(
            "error-vs-severity", "Error vs severity",
            "Top-1 error (%) averaged over the evaluated corruptions at each severity; severity 0 is the clean "
            "error.", sev_x, sev_series, xlabel="severity (0 = clean)", ylabel="top-1 error (%)"))
    if points:
        sec.figures.append(accuracy_scatter("clean-vs-corrupted", "Clean vs corrupted accuracy", points,
                                             "clean accuracy (%)", "mean accuracy under corruption (%)"))
    for reference, variant in variant_pairs(results):
        diffs = paired_corruption_differences(reference, variant, context.store if context else None)
        if diffs:
            sec.figures.append(variant_figure(reference, variant, diffs))
            sec.notes.append(verdict_note(label(reference), label(variant), diffs))
    return sec


def variant_figure(reference, variant, diffs: Sequence[PairedDifference]) -> F.Figure:
    """Error change per corruption of ``variant`` against ``reference`` (see :mod:`.variants`):
    the figure shows what happened on each corruption, the text only how the numbers were made."""
    paired = any(d.low is not None for d in diffs)
    n = max((d.n or 0 for d in diffs), default=0)
    a, b = label(reference), label(variant)
    caption = (f"Top-1 error of {b} minus that of {a} per corruption, averaged over the severities, in percentage "
               "points; below zero: fewer errors than " + a + ". " +
               (f"Paired over the same {n} images and corruption seeds; whiskers are 95% Student-t intervals of "
                "the mean per-image difference, and a bar is coloured when its interval excludes zero."
                if paired else "From the runs' summaries (no per-sample predictions at hand): no intervals."))
    return F.difference_bars(
        f"error-change-{_slug(variant.model)}", f"Error change per corruption: {b} vs {a}", caption,
        [d.corruption for d in diffs], [100 * d.difference for d in diffs],
        [(None, None) if d.low is None else (100 * d.low, 100 * d.high) for d in diffs], [d.verdict for d in diffs],
        ylabel="error difference (points)", legend_labels={
            "lower": f"{b} errs less (95% interval below 0)", "higher": f"{b} errs more (interval above 0)",
            "unclear": "no clear difference (interval contains 0)" if paired else "no interval"})


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower()
