"""Reports of stored runs: one self-contained HTML file (or Markdown, CSV, JSON).

Example::

    from robustlab.report import write_report
    from robustlab.store import open_store
    with open_store("results/") as store:
        write_report(store, "report.html")
"""

from .collect import Estimate, collect_results
from .render import FORMATS, build, headline, render_csv, render_html, render_json, render_markdown, write_report
from .sections import ReportContext, Section, build_sections, register_section

__all__ = ["FORMATS", "Estimate", "ReportContext", "Section", "build", "build_sections", "collect_results", "headline", "register_section",
           "render_csv", "render_html", "render_json", "render_markdown", "write_report"]
