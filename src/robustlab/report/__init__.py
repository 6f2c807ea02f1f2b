"""Reports of stored runs: one self-contained HTML file (or Markdown, CSV, JSON).

Example::

    from robustlab.report import write_report
    from robustlab.store import open_store
    with open_store("results/") as store:
        write_report(store, "report.html")

Each benchmark family's presentation (its ``show`` text, report section and headline, see
:mod:`robustlab.engine.presentation`) lives in a ``section_*.py`` module of this package, registered
under the entry-point group ``robustlab.presentations``; reading a run's result imports only its own.
The package's names load on first use, so that importing one presentation never imports the
renderers (Jinja2) or matplotlib.
"""

from ..lazy import lazy_exports

_LAZY = {
    "Estimate": ".collect", "collect_results": ".collect",
    **dict.fromkeys(("FORMATS", "build", "headline", "render_csv", "render_html", "render_json", "render_markdown",
                     "write_report"), ".render"),
    **dict.fromkeys(("ReportContext", "Section", "build_sections"), ".sections"),
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = ["FORMATS", "Estimate", "ReportContext", "Section", "build", "build_sections", "collect_results", "headline",
           "render_csv", "render_html", "render_json", "render_markdown", "write_report"]
