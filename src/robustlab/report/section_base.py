"""What every report section shares: the Section record, how a run's presentation is found, and
small helpers.

A benchmark's runs are shown by its registered presentation
(:class:`robustlab.engine.presentation.Presentation`); runs whose presentations share a *family* share
one section, built by the presentation's ``section`` (the generic section when it has none), and each
run's summary row is its presentation's ``headline_parts``. The built-in families' presentations live
in the ``section_*.py`` modules, which import this module only; a plugin's live with its benchmark.
Sections across families (an intervention beside its plain model) register with
:func:`register_comparison`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .collect import short_model


@dataclass
class Section:
    """One report section: intro, a table (``columns``, ``rows``) with its ``legend`` line (what
    its brackets and ratios are), figures (:class:`robustlab.report.figures.Figure`) and notes."""

    key: str
    title: str
    intro: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    figures: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    legend: str = ""


@dataclass(frozen=True)
class ReportContext:
    """What section builders may read besides the results: the open store (None: results only), a
    CSV of published accuracies of other models for the effective-robustness trends (None: none),
    and which models those trends are fitted on (``fit_on``: standard, all or a file of names)."""

    store: Any = None
    reference_points: Any = None
    fit_on: Any = None


SectionBuilder = Callable[[Sequence, ReportContext], Section]
#: The family of runs whose presentation has none (or whose benchmark is not installed here).
GENERIC = "generic"

#: Sections across families (e.g. an intervention beside its plain model): ``builder(results,
#: context) -> Section or None`` (None: nothing to show), appended after the family sections.
COMPARISONS: dict[str, Callable[[Sequence, ReportContext], Section | None]] = {}


def register_comparison(key: str) -> Callable:
    """Decorator: a section builder over all of a report's results (see :data:`COMPARISONS`)."""

    def deco(fn):
        COMPARISONS[key] = fn
        return fn

    return deco


def benchmark_of(result):
    """The benchmark of a run, or None when this robustlab does not know it (a plugin not installed)."""
    from ..engine.benchmark import get_benchmark
    from ..errors import RobustlabError

    try:
        return get_benchmark(result.benchmark)
    except RobustlabError:
        return None


def presentation(result):
    """The presentation of a run (:class:`~robustlab.engine.presentation.Presentation`), or None when
    this robustlab does not know its benchmark."""
    from ..engine.presentation import presentation_of

    bench = benchmark_of(result)
    return presentation_of(bench) if bench is not None else None


def run_config(result):
    """A run's config as its benchmark's dataclass (None when its benchmark is not known here)."""
    return getattr(result, "run_config", None)


def family_of(result) -> str:
    """The report family of a run (:data:`GENERIC` when its presentation has none)."""
    shown = presentation(result)
    return (shown.family_name() if shown is not None else "") or GENERIC


def family_rank(benchmark: str) -> int:
    """Where ``benchmark`` stands in the registration order (unknown benchmarks last): families are
    presented in the order of their first registered benchmark."""
    from ..engine.benchmark import list_benchmarks

    names = list_benchmarks()
    return names.index(benchmark) if benchmark in names else len(names)


def merge_notes(notes: Sequence[str]) -> list[str]:
    """``"a: x", "b: x"`` -> ``"a, b: x"``: one line per distinct note, naming every model it concerns."""
    who: dict[str, list[str]] = {}
    for note in notes:
        name, sep, text = note.partition(": ")
        key, owner = (text, name) if sep else (note, "")
        who.setdefault(key, [])
        if owner and owner not in who[key]:
            who[key].append(owner)
    return [f"{', '.join(owners)}: {text}" if owners else text for text, owners in who.items()]


def label(result) -> str:
    """Legend label of a run: its model's name, shortened (:func:`run_labels` adds what tells runs apart)."""
    return short_model(result.model)


def run_labels(results: Sequence) -> dict[str, str]:
    """``{run id: legend label}``: the model; where runs of one model share a section, plus what
    tells them apart (the benchmark, else the data folder's name, else the options that differ,
    e.g. ``limit=50``), else the run id."""
    from ..engine.listing import differing_settings, value_text

    by_model: dict[str, list] = defaultdict(list)
    for r in results:
        by_model[short_model(r.model)].append(r)
    out: dict[str, str] = {}
    for name, runs in by_model.items():
        benches, datasets = {r.benchmark for r in runs}, {r.dataset for r in runs}
        settings = differing_settings(runs) if len(runs) > 1 else {}
        for r in runs:
            differ = {k: v for k, v in settings.get(r.run_id, {}).items()
                      if len({repr((other.config or {}).get(k)) for other in runs}) > 1}
            if len(runs) == 1:
                out[r.run_id] = name
            elif len(benches) > 1:
                out[r.run_id] = f"{name} · {r.benchmark}"
            elif len(datasets) > 1:
                out[r.run_id] = f"{name} · {short_path(r.dataset.rstrip('/').rsplit('/', 1)[-1], 18)}"
            elif differ:
                out[r.run_id] = f"{name} · " + " ".join(f"{k}={value_text(v)}" for k, v in list(differ.items())[:2])
            else:
                out[r.run_id] = name
    seen: dict[str, int] = {}
    for text in out.values():
        seen[text] = seen.get(text, 0) + 1
    return {rid: (f"{text} ({rid[:6]})" if seen[text] > 1 else text) for rid, text in out.items()}


def first_value(summary: dict, *keys: str):
    """The first of ``keys`` whose value is not None (full-benchmark value before its subset)."""
    return next((summary[k] for k in keys if summary.get(k) is not None), None)


def pct(v: float | None, digits: int = 1) -> str:
    """A fraction as percent text (``–`` for None/NaN)."""
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.{digits}f}"


def labelled(text: str, label: str | None) -> str:
    """``text [label]`` (e.g. a ratio marked "vs published AlexNet (ImageNet), not comparable"), or ``text``."""
    return f"{text} [{label}]" if label else text


#: The legend of brackets after a percentage, used by every table that prints them.
CI_LEGEND = "[a, b] = exact 95 % Clopper-Pearson interval"


def comparability(result) -> str | None:
    """The :meth:`~robustlab.engine.presentation.Presentation.comparability` label of a run's ratios,
    or None."""
    shown = presentation(result)
    typed = run_config(result)
    return shown.comparability(typed) if shown is not None and typed is not None else None


def ratio_denominator(result, results: Sequence = (), store: Any = None) -> str | None:
    """What a run's ratios to a baseline (CE, relative CE, FR, T5D) divide by, in a few words:
    what its benchmark publishes (``"published AlexNet"``; with ``", not comparable"`` on the
    user's own data), ``"<baseline model> (run <id>)"`` for a stored baseline run, or
    ``baseline_run=self`` (the baseline's own run: the same words as the runs it normalises); None
    when the run reports no ratios (CIFAR)."""
    run = getattr(run_config(result), "baseline_run", None)
    if run == "self":
        return f"{short_model(result.model)} (run {result.run_id[:10]})"
    if run:
        model = next((r.model for r in results if r.run_id == run), None)
        if model is None and store is not None:
            try:
                model = store.get_run(run).model
            except Exception:  # noqa: BLE001 - a deleted baseline run: name it by its id only
                model = None
        return f"{short_model(model)} (run {run[:10]})" if model else f"run {run[:10]}"
    shown, typed = presentation(result), run_config(result)
    published = shown.published_baseline(typed) if shown is not None and typed is not None else None
    if published is None:
        return None
    own = shown.comparability(typed)
    return own.removeprefix("vs ") if own else published


def common_denominator(denominators: Sequence[str | None]) -> str:
    """The one denominator of a figure's runs, or "each run's baseline (see the table)"."""
    named = sorted({d for d in denominators if d})
    if len(named) == 1:
        return named[0]
    return "each run's baseline (see the table)"


def terms_text(summary: dict, key: str) -> str:
    """``" (12 of 15)"`` when a mean of ratios averaged only its defined terms (see
    :mod:`robustlab.metrics.ratios`), else ``""``."""
    used, of = summary.get(f"{key}_terms"), summary.get(f"{key}_of")
    return f" ({used} of {of})" if used is not None and of is not None and used != of else ""


def short_path(path: str, width: int = 36) -> str:
    """``path`` shortened from the left to at most ``width`` characters (``…`` marks the cut)."""
    return path if len(path) <= width else "…" + path[-(width - 1):]


#: Fewest points (models) a least-squares line with its 95% band is drawn from.
MIN_FIT_POINTS = 5
#: The p-value of the correlation under which that line is drawn (above it there is no trend to show).
FIT_SIGNIFICANCE = 0.05


def accuracy_scatter(key: str, title: str, points: dict, xlabel: str, ylabel: str):
    """Clean vs shifted accuracy per model, with a least-squares fit across models when 3 or more."""
    from ..metrics.effective_robustness import fit_trend
    from ..metrics.stats import correlation_p_value
    from . import figures as F

    fit, weak = None, None
    if len(points) >= MIN_FIT_POINTS:
        xs = [p[0] for p in points.values()]
        try:
            fit = fit_trend(xs, [p[1] for p in points.values()], transform="linear")
        except InputError:
            fit = None
        if fit is not None and correlation_p_value(fit.r, fit.n) >= FIT_SIGNIFICANCE:
            weak, fit = (fit.r, correlation_p_value(fit.r, fit.n)), None  # no trend to draw
    caption = ("Each point is a model, with exact 95% Clopper-Pearson intervals; the dotted line is no drop"
               + ("; the solid line is the least-squares fit across models with its 95% band." if fit else
                  f". No fitted line or confidence band: {len(points)} model{'s' if len(points) != 1 else ''}, and a "
                  f"band from fewer than {MIN_FIT_POINTS} points covers almost any line, so it would say nothing."
                  if len(points) < MIN_FIT_POINTS else
                  f". No fitted line: the correlation across models is not significant (r = {weak[0]:.3f}, p = "
                  f"{weak[1]:.2f})." if weak else " No fitted line: the models' accuracies do not differ."))
    return F.scatter_with_fit(key, title, caption, points, xlabel=xlabel, ylabel=ylabel, fit=fit)
