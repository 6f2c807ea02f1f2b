"""What every report section shares: the Section record, the family registry and small helpers.

Section modules (``section_*.py``) import this module only; :mod:`.sections` imports them all
(so they register) and builds a report's sections.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from . import figures as F
from .collect import short_model


@dataclass
class Section:
    key: str
    title: str
    intro: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    figures: list[F.Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReportContext:
    """What section builders may read besides the results: the open store (None: results only), and
    a CSV of published accuracies of other models for the effective-robustness trends (None: none)."""

    store: Any = None
    reference_points: Any = None


SectionBuilder = Callable[[Sequence, ReportContext], Section]
FAMILIES: dict[str, str] = {"imagenet-c": "corruption", "corrupted": "corruption", "adversarial-auc": "adversarial"}
BUILDERS: dict[str, SectionBuilder] = {}
#: ``{family: fn(result) -> [headline part, ...]}`` for the summary table (see render.headline).
HEADLINES: dict[str, Callable[[Any], list[str]]] = {}
ORDER = ["corruption", "corruption-bar", "natural-shift", "perturbation", "video", "adversarial", "detection",
         "subtype", "generic"]


def register_section(family: str, benchmarks: Sequence[str]) -> Callable[[SectionBuilder], SectionBuilder]:
    """Decorator: ``builder(results, context) -> Section`` for the runs of ``benchmarks``."""

    def deco(fn: SectionBuilder) -> SectionBuilder:
        BUILDERS[family] = fn
        for b in benchmarks:
            FAMILIES[b] = family
        return fn

    return deco


def register_headline(family: str) -> Callable:
    """Decorator: ``fn(result) -> list of str``, the summary-row numbers of a family's runs."""

    def deco(fn):
        HEADLINES[family] = fn
        return fn

    return deco


#: Sections across families (e.g. an intervention beside its plain model): ``builder(results,
#: context) -> Section or None`` (None: nothing to show), appended after the family sections.
COMPARISONS: dict[str, Callable[[Sequence, ReportContext], Section | None]] = {}


def register_comparison(key: str) -> Callable:
    """Decorator: a section builder over all of a report's results (see :data:`COMPARISONS`)."""

    def deco(fn):
        COMPARISONS[key] = fn
        return fn

    return deco


def family_of(benchmark: str) -> str:
    return FAMILIES.get(benchmark, "generic")


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
    """Legend label of a run: the model, plus the dataset when runs differ in it."""
    return short_model(result.model)


def run_labels(results: Sequence) -> dict[str, str]:
    """``{run id: legend label}``: the model; where runs of one model share a section, plus what
    tells them apart (the benchmark, else the data folder's name), else the run id."""
    by_model: dict[str, list] = defaultdict(list)
    for r in results:
        by_model[short_model(r.model)].append(r)
    out: dict[str, str] = {}
    for name, runs in by_model.items():
        benches = {r.benchmark for r in runs}
        for r in runs:
            if len(runs) == 1:
                out[r.run_id] = name
            elif len(benches) > 1:
                out[r.run_id] = f"{name} · {r.benchmark}"
            else:
                out[r.run_id] = f"{name} · {short_path(r.dataset.rstrip('/').rsplit('/', 1)[-1], 18)}"
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


def short_path(path: str, width: int = 36) -> str:
    """``path`` shortened from the left to at most ``width`` characters (``…`` marks the cut)."""
    return path if len(path) <= width else "…" + path[-(width - 1):]


def accuracy_scatter(key: str, title: str, points: dict, xlabel: str, ylabel: str) -> F.Figure:
    """Clean vs shifted accuracy per model, with a least-squares fit across models when 3 or more."""
    from ..metrics.effective_robustness import fit_trend

    fit = None
    if len(points) >= 3:
        xs = [p[0] for p in points.values()]
        try:
            fit = fit_trend(xs, [p[1] for p in points.values()], transform="linear")
        except InputError:
            fit = None
    caption = ("Each point is a model, with exact 95% Clopper-Pearson intervals; the dotted line is no drop"
               + ("; the solid line is the least-squares fit across models with its 95% band." if fit else
                  " (a fitted line needs at least 3 models with different accuracies)."))
    return F.scatter_with_fit(key, title, caption, points, xlabel=xlabel, ylabel=ylabel, fit=fit)
