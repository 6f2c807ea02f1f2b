"""MkDocs hook (mkdocs.yml ``hooks:``): the documentation's tables of registered things, made from the registries.

A page writes a marker where a table belongs, e.g. ``<!-- registry-table: corruptions -->``; the
build replaces it with the table the registry makes now, so a corruption, perturbation or
benchmark registered by robustlab or by an installed plugin appears in the documentation with
no edit to it. The tables:

- ``corruptions``: :func:`robustlab.corruptions.registry.corruption_table`;
- ``perturbations``: :func:`robustlab.perturbations.registry.perturbation_table`;
- ``benchmarks``: :func:`robustlab.engine.benchmark.benchmark_table`;
- ``releases``: :func:`robustlab.data.releases.sets.catalog_table` (the released data sets).
"""

from __future__ import annotations

import importlib
import re

#: Marker name -> "module:function" returning the table's Markdown.
TABLES = {
    "corruptions": "robustlab.corruptions.registry:corruption_table",
    "perturbations": "robustlab.perturbations.registry:perturbation_table",
    "benchmarks": "robustlab.engine.benchmark:benchmark_table",
    "releases": "robustlab.data.releases.sets:catalog_table",
}
MARKER = re.compile(r"<!--\s*registry-table:\s*([\w-]+)\s*-->")


def table(name: str) -> str:
    """The Markdown table ``name`` (a KeyError names the known ones)."""
    if name not in TABLES:
        raise KeyError(f"unknown registry table {name!r}; known: {', '.join(TABLES)}")
    module, _, function = TABLES[name].partition(":")
    return getattr(importlib.import_module(module), function)()


def on_page_markdown(markdown: str, **_: object) -> str:
    """Replace every table marker of a page with its table."""
    return MARKER.sub(lambda m: table(m.group(1)), markdown)
