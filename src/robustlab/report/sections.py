"""Report sections, one per benchmark family: a summary table, figures and notes.

A run's section is its presentation's (:class:`robustlab.engine.presentation.Presentation`, which
its benchmark names): runs whose presentations share a family share one section, built by the
presentation's ``section(results, context)``. A family whose presentation builds none (a plugin's
without a section, or none declared) is shown by :func:`generic_section` under the presentation's
``title``. Sections come in the order the families' benchmarks were registered; the sections across
families (:func:`register_comparison`) follow.

Builders are called as ``section(results, context)``: the :class:`ReportContext` carries what a
report may read beyond the results, e.g. the store (per-sample predictions for example grids); it is
never required, so a report can always be built from the results alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from . import section_interventions  # noqa: F401  (registers a comparison across families)
from . import section_shifts  # noqa: F401  (registers effective robustness across families)
from .section_base import (COMPARISONS, GENERIC, ReportContext, Section, family_of, family_rank, merge_notes,
                           presentation, register_comparison, run_labels)

__all__ = ["COMPARISONS", "GENERIC", "ReportContext", "Section", "build_sections", "family_of", "generic_section",
           "merge_notes", "register_comparison", "run_labels"]


def build_sections(results: Sequence, context: ReportContext | None = None) -> list[Section]:
    context = context or ReportContext()
    groups: dict[str, list] = defaultdict(list)
    for r in results:
        groups[family_of(r)].append(r)
    rank = {f: min(family_rank(r.benchmark) for r in runs) for f, runs in groups.items()}
    ordered = sorted(groups, key=lambda f: (f == GENERIC, rank[f]))
    sections = [family_section(f, groups[f], context) for f in ordered]
    sections += [sec for builder in COMPARISONS.values() if (sec := builder(results, context)) is not None]
    for sec in sections:
        sec.notes = merge_notes(sec.notes)
    return sections


def family_section(family: str, results: Sequence, context: ReportContext) -> Section:
    """The section of one family's runs: its presentation's, else the generic one under its title."""
    if family == GENERIC:
        return generic_section(results, context)
    shown = presentation(results[0])
    sec = shown.section(results, context)
    return sec if sec is not None else generic_section(results, context, key=family, title=shown.title or family)


def generic_section(results: Sequence, context: ReportContext | None = None, *, key: str = GENERIC,
                    title: str | None = None) -> Section:
    """The metric rows of runs whose family has no section of its own (``title``: the family's;
    None: "Other benchmarks", the runs that declare no family)."""
    intro = ("Metric rows of runs whose benchmark has no dedicated section." if title is None else
             "Metric rows of these runs, as their benchmark stores them.")
    sec = Section(key, title or "Other benchmarks", intro,
                  ["model", "benchmark", "metric", "setting", "value", "run"],
                  legend="Values as stored: fractions and ratios (0.767 is 76.7 %).")
    names = run_labels(results)
    for r in results:
        for m, s, v in r.metrics:
            sec.rows.append([r.model, r.benchmark, m, s, f"{v:.6g}", r.run_id[:10]])
        sec.notes += [f"{names[r.run_id]}: {n}" for n in r.notes]
    return sec
