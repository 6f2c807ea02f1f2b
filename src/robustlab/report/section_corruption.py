"""The common-corruptions family's presentation (``imagenet-c``, ``corrupted``) and report section: CE per
corruption, error vs severity, clean vs corrupted accuracy, and for variants of one model
(:mod:`.variants`) the error change per corruption. The ``show`` side (notes, summary, text) is
:mod:`robustlab.benchmarks.corruption_presentation`'s; this module adds the section and the headline."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..benchmarks.corruption_presentation import NOT_COMPARABLE_LABEL, CorruptedShow, ImageNetCShow
from ..engine.presentation import register_presentation
from ..metrics.corruption import HOLDOUT_CORRUPTIONS
from . import figures as F
from .collect import Estimate, metric_table
from .examples import corruption_examples
from .section_base import (CI_LEGEND, ReportContext, Section, accuracy_scatter, common_denominator, comparability,
                           first_value, label, labelled, pct, ratio_denominator, run_labels, short_path, terms_text)
from .variants import PairedDifference, paired_corruption_differences, variant_pairs, verdict_note


def corruption_headline(result, results: Sequence = (), store=None) -> list[str]:
    """``clean acc 75.0 [53.3, 90.2]; mCE 60.0; rel. mCE 98.3 (11 of 15) vs demo:baseline (run ...)``:
    ratios labelled when they compare with nothing published, else followed by what they divide by."""
    t, s = metric_table(result), result.summary or {}
    parts: list[str] = []
    if s.get("clean_error") is not None:
        parts.append("clean acc " + Estimate.from_fraction(1 - s["clean_error"], t.get(("n_samples", "clean"))).percent())
    own = comparability(result)
    ratios = []
    for key, name in (("mce", "mCE"), ("relative_mce", "rel. mCE"), ("mce_subset", "mCE (subset)"),
                      ("relative_mce_subset", "rel. mCE (subset)")):
        if s.get(key) is not None:
            ratios.append(labelled(f"{name} {100 * s[key]:.1f}{terms_text(s, key)}", own))
    if s.get("relative_mce_na"):
        ratios.append("rel. mCE n/a")
    denominator = ratio_denominator(result, results, store)
    if ratios and denominator and not own:
        ratios[-1] += f" vs {denominator}"
    return parts + ratios


#: How the CE chart marks a held-out (validation) corruption, which mCE does not average.
HELD_OUT_MARK = "†"


#: The section's intro and its table's legend.
INTRO = ("Top-1 error under 15 benchmark corruptions at 5 severities. CE normalises a corruption's summed error by "
         "the baseline's (the table's \"normalised by\" column names it), mCE averages CE over the 15 corruptions; "
         "relative mCE measures the rise from clean error, relative to the baseline's rise. Lower is better; the "
         "baseline scores 100.")
LEGEND = (f"{CI_LEGEND}. mCE and relative mCE are % of the baseline named in \"normalised by\" (100 = the baseline). "
          "\"(12 of 15)\": the mean of the corruptions whose ratio is defined; a ratio is undefined (n/a) where the "
          "baseline's error, or its rise over clean error, is within its sampling error (the notes say where).")


class _Series:
    """What the section's figures collect run by run."""

    def __init__(self) -> None:
        self.ce: dict[str, dict[str, float]] = {}
        self.severity: dict[str, list[float]] = {}
        self.severity_x: dict[str, list[int]] = {}
        self.points: dict[str, tuple] = {}
        self.categories: list[str] = []
        self.not_comparable: list[str] = []
        self.denominators: list[str | None] = []


def corruption_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("corruption", "Common corruptions (ImageNet-C)", INTRO,
                  ["model", "benchmark", "dataset", "clean accuracy % [95% CI]", "mean corruption accuracy %",
                   "mCE", "relative mCE", "normalised by", "run"], legend=LEGEND)
    store = context.store if context is not None else None
    series = _Series()
    names = run_labels(results)
    for r in results:
        add_run(sec, series, r, names[r.run_id], results, store)
    sec.figures += series_figures(series)
    for reference, variant in variant_pairs(results):
        diffs = paired_corruption_differences(reference, variant, store)
        if diffs:
            sec.figures.append(variant_figure(reference, variant, diffs))
            sec.notes.append(verdict_note(label(reference), label(variant), diffs))
    examples = next((fig for r in results if (fig := corruption_examples(r)) is not None), None)
    if examples is not None:
        sec.figures.append(examples)
    return sec


def add_run(sec: Section, series: _Series, r, name: str, results: Sequence, store) -> None:
    """One run's table row, notes and figure points."""
    t, s = metric_table(r), r.summary or {}
    clean_err = s.get("clean_error")
    clean = Estimate.from_fraction(1 - clean_err, t.get(("n_samples", "clean"))) if clean_err is not None else None
    mca = first_value(s, "mean_corruption_accuracy", "mean_corruption_accuracy_subset")
    mce_key = next((k for k in ("mce", "mce_subset") if s.get(k) is not None), "mce")
    rel_key = next((k for k in ("relative_mce", "relative_mce_subset") if s.get(k) is not None), "relative_mce")
    mce, rel = s.get(mce_key), s.get(rel_key)
    own = comparability(r)
    denominator = ratio_denominator(r, results, store)
    rel_text = "n/a" if s.get("relative_mce_na") else pct(rel) + terms_text(s, rel_key)
    sec.rows.append([r.model, r.benchmark, short_path(r.dataset), clean.percent() if clean else "–", pct(mca),
                     labelled(pct(mce) + terms_text(s, mce_key), own if mce is not None else None),
                     labelled(rel_text, own if rel is not None else None), denominator or "–", r.run_id[:10]])
    corr = s.get("corruptions") or {}
    ces = {c: v.get("ce") for c, v in corr.items() if v.get("ce") is not None}
    if ces:
        series.categories += [c for c in ces if c not in series.categories]
        series.ce[labelled(name, own)] = ces
        series.denominators.append(denominator)
        if own:
            series.not_comparable.append(name)
    sevs = sorted({int(k) for v in corr.values() for k, e in (v.get("errors") or {}).items() if e is not None})
    if sevs:
        xs = ([0] if clean_err is not None else []) + sevs
        ys = ([clean_err] if clean_err is not None else []) + [
            float(np.mean([v["errors"][str(k)] for v in corr.values() if v["errors"].get(str(k)) is not None]))
            for k in sevs]
        series.severity_x[name], series.severity[name] = xs, [100 * y for y in ys]
    if clean is not None and mca is not None:
        series.points[name] = (clean.value, mca, (clean.low, clean.high), None)
    sec.notes += [f"{name}: {n}" for n in r.notes]


def series_figures(series: _Series) -> list[F.Figure]:
    """CE per corruption, error vs severity and clean vs corrupted accuracy, of the runs that have them."""
    figures = []
    if series.ce:
        base = common_denominator(series.denominators)
        categories = series.categories
        held_out = [c for c in categories if c in HOLDOUT_CORRUPTIONS]
        shown = [f"{c} {HELD_OUT_MARK}" if c in held_out else c for c in categories]
        figures.append(F.bar_groups(
            "ce-per-corruption", "Corruption error per corruption",
            f"CE per corruption: the model's error divided by that of {base} (%); the dashed line is {base} (100). "
            "Lower is more robust. A missing bar is an undefined CE (the baseline's error within its sampling error)."
            + (f" {HELD_OUT_MARK} held out: {', '.join(held_out)} {'is a' if len(held_out) == 1 else 'are'} "
               "ImageNet-C's validation corruption(s), shown but not averaged into mCE (the mean of the 15 benchmark "
               "corruptions)." if held_out else "")
            + (f" {', '.join(series.not_comparable)}: {NOT_COMPARABLE_LABEL} (errors on their own data divided by "
               "AlexNet's published ImageNet-C errors)." if series.not_comparable else ""),
            shown, {m: [100 * v.get(c, np.nan) for c in categories] for m, v in series.ce.items()},
            ylabel=f"CE (% of {_short(base)})", reference=100, reference_label=f"{_short(base)} (100)"))
    if series.severity:
        figures.append(F.lines(
            "error-vs-severity", "Error vs severity",
            "Top-1 error (%) averaged over the evaluated corruptions at each severity; severity 0 is the clean "
            "error.", series.severity_x, series.severity, xlabel="severity (0 = clean)", ylabel="top-1 error (%)"))
    if series.points:
        figures.append(accuracy_scatter("clean-vs-corrupted", "Clean vs corrupted accuracy", series.points,
                                        "clean accuracy (%)", "mean accuracy under corruption (%)"))
    return figures


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


def _short(denominator: str) -> str:
    """A denominator short enough for an axis label: the model, without the run id."""
    return denominator.split(" (run ", 1)[0].split(" (see", 1)[0]


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower()


@register_presentation
class ImageNetCPresentation(ImageNetCShow):
    """``imagenet-c`` runs: the released layouts and ImageNet-C made on the fly."""

    section_builder = staticmethod(corruption_section)
    headline_builder = staticmethod(corruption_headline)


@register_presentation
class CorruptedPresentation(CorruptedShow):
    """``corrupted`` runs: the user's own folder, corrupted on the fly."""

    section_builder = staticmethod(corruption_section)
    headline_builder = staticmethod(corruption_headline)
