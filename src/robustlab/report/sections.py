"""Report sections, one per benchmark family: a summary table, figures and notes.

A section builder takes the results of one family (several models, several runs) and returns a
:class:`Section`. A run's family is its benchmark's declaration
(:attr:`robustlab.engine.Benchmark.family`); a family's builder lives in a ``section_*.py``
module (shared pieces in :mod:`.section_base`), all imported here. A family without a builder
(a plugin's, or none declared) is shown by :func:`generic_section` under its benchmark's
``family_title``. Sections come in the order the families' benchmarks were registered.

Builders are called as ``builder(results, context)``: the :class:`ReportContext` carries what
a report may read beyond the results, e.g. the store (per-sample predictions for example
grids); it is never required, so a report can always be built from the results alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from . import section_adversarial, section_corruption, section_detection, section_perturbation, section_video  # noqa: F401  (register)
from . import section_interventions  # noqa: F401  (registers a comparison across families)
from . import section_shifts  # noqa: F401  (C-bar; effective robustness across families)
from .section_base import (BUILDERS, COMPARISONS, GENERIC, HEADLINES, ReportContext, Section, family_of, family_rank,
                           family_title, merge_notes, register_comparison, register_headline, register_section,
                           run_labels)

__all__ = ["BUILDERS", "COMPARISONS", "GENERIC", "HEADLINES", "ReportContext", "Section", "build_sections",
           "family_of", "generic_section", "merge_notes", "register_comparison", "register_headline",
           "register_section", "run_labels"]


def build_sections(results: Sequence, context: ReportContext | None = None) -> list[Section]:
    context = context or ReportContext()
    groups: dict[str, list] = defaultdict(list)
    for r in results:
        groups[family_of(r.benchmark)].append(r)
    rank = {f: min(family_rank(r.benchmark) for r in runs) for f, runs in groups.items()}
    ordered = sorted(groups, key=lambda f: (f == GENERIC, rank[f]))
    sections = [BUILDERS[f](groups[f], context) if f in BUILDERS else
                generic_section(groups[f], context, key=f, title=None if f == GENERIC else
                                family_title(groups[f][0].benchmark)) for f in ordered]
    sections += [sec for builder in COMPARISONS.values() if (sec := builder(results, context)) is not None]
    for sec in sections:
        sec.notes = merge_notes(sec.notes)
    return sections


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
