"""The presentations and sections of the shifts beyond ImageNet-C: ImageNet-C-bar / CIFAR-10-C-bar
(``imagenet-c-bar``), the natural-shift test sets and subtype robustness (their ``show`` side is their
benchmark modules'), and effective robustness across every run that publishes an (original, shifted)
accuracy pair (:mod:`.effective`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..benchmarks.corruption_bar import CBarShow
from ..benchmarks.natural_shift import NaturalShiftShow
from ..benchmarks.subtype import SubtypeShow
from ..engine.presentation import register_presentation
from . import figures as F
from .collect import Estimate, metric_table
from .effective import group_rows, shift_groups, trend_figure
from .section_base import (ReportContext, Section, first_value, pct, register_comparison, run_labels, short_path)


def cbar_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("corruption-bar", "ImageNet-C-bar / CIFAR-10-C-bar",
                  "Top-1 error under the 10 corruptions of each -bar set (Mintun et al. 2021), chosen to be "
                  "perceptually far from ImageNet-C's, at 5 severities. The paper reports the mean error; CE-bar "
                  "divides a corruption's mean error by the paper's plainly trained baseline's (ResNet-50 / WRN-40-2, "
                  "its Table 2: there is no published AlexNet on these sets), mCE-bar averages it. Lower is better.",
                  ["model", "set", "dataset", "clean accuracy % [95% CI]", "mean error %", "mCE-bar", "run"])
    series: dict[str, dict[str, float]] = {}
    categories: list[str] = []
    names = run_labels(results)
    for r in results:
        t, s = metric_table(r), r.summary or {}
        clean_err = s.get("clean_error")
        clean = Estimate.from_fraction(1 - clean_err, t.get(("n_samples", "clean"))) if clean_err is not None else None
        sec.rows.append([r.model, s.get("set", ""), short_path(r.dataset), clean.percent() if clean else "–",
                         pct(first_value(s, "mean_error_bar", "mean_error_bar_subset")),
                         pct(first_value(s, "mce_bar", "mce_bar_subset")), r.run_id[:10]])
        errs = {c: v["mean_error"] for c, v in (s.get("corruptions") or {}).items() if v.get("mean_error") is not None}
        for c in errs:
            if c not in categories:
                categories.append(c)
        if errs:
            series[names[r.run_id]] = errs
        sec.notes += [f"{names[r.run_id]}: {n}" for n in r.notes]
    if series:
        sec.figures.append(F.bar_groups(
            "cbar-error-per-corruption", "Mean error per -bar corruption",
            "Top-1 error (%) per corruption, averaged over severities 1-5.", categories,
            {m: [100 * v.get(c, np.nan) for c in categories] for m, v in series.items()}, ylabel="top-1 error (%)"))
    return sec


def cbar_headline(result, results: Sequence = (), store=None) -> list[str]:
    """``mean error 57.7 · mCE-bar 100.0`` (percent)."""
    s = result.summary or {}
    parts = []
    mean = first_value(s, "mean_error_bar", "mean_error_bar_subset")
    if mean is not None:
        parts.append(f"mean error {pct(mean)}")
    mce = first_value(s, "mce_bar", "mce_bar_subset")
    if mce is not None:
        parts.append(f"mCE-bar {pct(mce)}")
    return parts


@register_comparison("effective-robustness")
def effective_section(results: Sequence, context: ReportContext | None = None) -> Section | None:
    """Per shifted test set: the trend of shifted vs original accuracy (logit axes) over the report's runs
    and the reference points, and each run's effective robustness with its interval."""
    refs = context.reference_points if context else None
    groups = shift_groups(results, reference_points=refs, fit_on=context.fit_on if context else None)
    if not groups:
        return None
    sec = Section("effective-robustness", "Effective robustness",
                  "Accuracy on a shifted test set against accuracy on the original one, per model. Across models the "
                  "two follow a line on logit axes (Taori et al. 2020, the imagenet-testbed); a model's effective "
                  "robustness is its height above that line, in accuracy points. As the testbed, the line is fitted "
                  "on standard models only (--fit-on chooses), and a fitted model at 0 % on the shifted set splits it "
                  "in two. The interval combines the model's 95% Clopper-Pearson interval with the line's 95% band "
                  "(Bonferroni, each at 97.5%).",
                  ["model", "shift", "original accuracy %", "shifted accuracy %", "trend %", "effective robustness",
                   "run"])
    for k, group in enumerate(groups):
        sec.rows += group_rows(group)
        sec.figures.append(trend_figure(group, f"effective-robustness-{k}"))
        if group.fit is None:
            sec.notes.append(f"{group.shift}: no trend. {group.reason}")
        if refs is not None and not group.references:
            sec.notes.append(f"{group.shift}: the reference points file {refs} has no rows for this shift.")
    return sec


def _interval(row: dict | None, key: str) -> str:
    if not row or row.get(key) is None:
        return "–"
    return f"{pct(row[key])} [{pct(row.get(f'{key}_low'))}, {pct(row.get(f'{key}_high'))}]"


def natural_shift_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("natural-shift", "Natural distribution shifts",
                  "Top-1 and top-5 accuracy on test sets collected anew (ImageNetV2), adversarially filtered "
                  "(ImageNet-A), rendered (ImageNet-R), sketched (ImageNet-Sketch) or photographed in unusual poses "
                  "(ObjectNet), with exact 95% Clopper-Pearson intervals; the original accuracy is the ImageNet val "
                  "accuracy on the same classes. Their trends across models are in the effective-robustness section.",
                  ["model", "test set", "top-1 % [95% CI]", "top-5 % [95% CI]", "original top-1 % [95% CI]", "run"])
    names = run_labels(results)
    for r in results:
        s = r.summary or {}
        sec.rows.append([r.model, s.get("set", r.benchmark), _interval(s.get("shifted"), "accuracy"),
                         _interval(s.get("shifted"), "top5_accuracy"), _interval(s.get("clean"), "accuracy"),
                         r.run_id[:10]])
        sec.notes += [f"{names[r.run_id]}: {n}" for n in r.notes]
    return sec


def natural_shift_headline(result, results: Sequence = (), store=None) -> list[str]:
    """``top-1 63.4 · top-5 84.6`` (percent) on the shifted set."""
    row = (result.summary or {}).get("shifted") or {}
    return [f"top-1 {pct(row['accuracy'])}", f"top-5 {pct(row['top5_accuracy'])}"] if row else []


def subtype_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("subtype", "Subtype robustness",
                  "A model's last layer fine-tuned to tell 25 broad WordNet types apart from images of their ImageNet-1K "
                  "subtypes (seen), then tested on ImageNet-1K val images of the seen subtypes and on ImageNet-22K "
                  "subtypes it never saw (unseen), as in the ImageNet-C paper's Appendix G; 95% Clopper-Pearson "
                  "intervals. 'seen from holdout': the seen images were held out of the 22K copy and may include "
                  "training images.",
                  ["model", "ImageNet-1K top-1 %", "seen accuracy % [95% CI]", "unseen accuracy % [95% CI]",
                   "seen - unseen (points)", "subtypes", "run"])
    points = []
    names = run_labels(results)
    for r in results:
        s = r.summary or {}
        seen, unseen = s.get("seen") or {}, s.get("unseen") or {}

        def ci(row):
            return f"{pct(row['accuracy'])} [{pct(row['low'])}, {pct(row['high'])}]" if row else "–"

        sec.rows.append([r.model, pct(s.get("imagenet_top1")), ci(seen), ci(unseen),
                         "–" if s.get("gap") is None else f"{100 * s['gap']:+.1f}",
                         f"{s.get('lists', 'wordnet')} lists, seen from {s.get('seen_from', 'holdout')}", r.run_id[:10]])
        if s.get("imagenet_top1") is not None and seen and unseen:
            points.append((names[r.run_id], s["imagenet_top1"], seen, unseen))
        sec.notes += [f"{names[r.run_id]}: {n}" for n in r.notes]
    if points:
        sec.figures.append(subtype_figure(points))
    return sec


def subtype_figure(points) -> F.Figure:
    """Seen and unseen subtype accuracy against ImageNet-1K accuracy, one pair of points per model."""
    from .figures import pyplot

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5.0, 3.8))
    for marker, key, name in (("o", 2, "seen subtypes"), ("s", 3, "unseen subtypes")):
        xs = [100 * p[1] for p in points]
        ys = [100 * p[key]["accuracy"] for p in points]
        err = [[100 * (p[key]["accuracy"] - p[key]["low"]) for p in points],
               [100 * (p[key]["high"] - p[key]["accuracy"]) for p in points]]
        ax.errorbar(xs, ys, yerr=err, fmt=marker, markersize=5, capsize=2, label=name)
    F.label_points(ax, [100 * p[1] for p in points], [100 * p[3]["accuracy"] for p in points], [p[0] for p in points])
    ax.set_xlabel("ImageNet-1K top-1 accuracy (%)")
    ax.set_ylabel("broad-type accuracy (%)")
    ax.grid(alpha=0.3)
    F.legend_above(ax)
    return F.Figure("subtype-vs-imagenet", "Seen and unseen subtype accuracy vs ImageNet-1K accuracy",
                    "Each model contributes two points at its ImageNet-1K accuracy: accuracy on held-out images of the "
                    "seen subtypes and on the unseen ones (95% intervals).", svg=F.figure_svg(fig))


@register_presentation
class CBarPresentation(CBarShow):
    """``imagenet-c-bar`` runs: shown as :class:`CBarShow`, with this module's section and headline."""

    section_builder = staticmethod(cbar_section)
    headline_builder = staticmethod(cbar_headline)


@register_presentation
class NaturalShiftPresentation(NaturalShiftShow):
    """The natural-shift test sets: shown as :class:`NaturalShiftShow`, with this module's section and headline."""

    section_builder = staticmethod(natural_shift_section)
    headline_builder = staticmethod(natural_shift_headline)


@register_presentation
class SubtypePresentation(SubtypeShow):
    """``subtype-robustness`` runs: shown as :class:`SubtypeShow`, with this module's section (the summary
    row: its headline metrics, seen and unseen accuracy)."""

    section_builder = staticmethod(subtype_section)
