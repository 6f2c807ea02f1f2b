"""Report sections, one per benchmark family: a summary table, figures and notes.

A section builder takes the results of one family (several models, several runs) and returns a
:class:`Section`. Families: ``corruption`` (imagenet-c, corrupted), ``adversarial``
(adversarial-auc) and ``generic`` (any other benchmark: its metric rows as a table). Other
families register their builder with :func:`register_section`; each family's builder lives in a
``section_*.py`` module (shared pieces in :mod:`.section_base`), all imported here.

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
from .section_base import (BUILDERS, COMPARISONS, FAMILIES, HEADLINES, ORDER, ReportContext, Section, family_of, label,
                           merge_notes, register_comparison, register_headline, register_section, run_labels)

__all__ = ["BUILDERS", "COMPARISONS", "FAMILIES", "HEADLINES", "ORDER", "ReportContext", "Section", "build_sections",
           "family_of", "generic_section", "merge_notes", "register_comparison", "register_headline",
           "register_section", "run_labels"]


def build_sections(results: Sequence, context: ReportContext | None = None) -> list[Section]:
    context = context or ReportContext()
    groups: dict[str, list] = defaultdict(list)
    for r in results:
        groups[family_of(r.benchmark)].append(r)
    ordered = sorted(groups, key=lambda f: ORDER.index(f) if f in ORDER else len(ORDER))
    sections = [BUILDERS.get(f, generic_section)(groups[f], context) for f in ordered]
    sections += [sec for builder in COMPARISONS.values() if (sec := builder(results, context)) is not None]
    for sec in sections:
        sec.notes = merge_notes(sec.notes)
    return sections


def generic_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("generic", "Other benchmarks", "Metric rows of runs whose benchmark has no dedicated section.",
                  ["model", "benchmark", "metric", "setting", "value", "run"],
                  legend="Values as stored: fractions and ratios (0.767 is 76.7 %).")
    for r in results:
        for m, s, v in r.metrics:
            sec.rows.append([r.model, r.benchmark, m, s, f"{v:.6g}", r.run_id[:10]])
        sec.notes += [f"{label(r)}: {n}" for n in r.notes]
    return sec
