"""Turn stored runs into a report: self-contained HTML, Markdown, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jinja2

from .. import __version__
from ..environment import describe_differences, distinct_environments, summarize
from ..errors import InputError
from ..fsutil import atomic_write_text
from .collect import collect_results
from .sections import ReportContext, Section, build_sections

FORMATS = ("html", "markdown", "csv", "json")
SUMMARY_COLUMNS = ["model", "benchmark", "dataset", "headline", "run"]
#: What the summary table's brackets and ratios are.
SUMMARY_LEGEND = ("[a, b] = exact 95 % Clopper-Pearson interval. mCE, rel. mCE, mFR and mT5D are % of the baseline "
                  "named after \"vs\" (100 = the baseline); \"(12 of 15)\": the mean of the terms that are defined "
                  "(the baseline's number is above its sampling error). R = area under accuracy(eps) / clean accuracy "
                  "over the eps interval, divided by its length (1 = no loss). P / mPC / rPC: clean performance, its "
                  "mean under corruption, and their ratio.")


def headline(result, context_results: Sequence = (), store=None) -> str:
    """The numbers a reader looks for first: its presentation's headline
    (:meth:`~robustlab.engine.presentation.Presentation.headline_parts`: by default the headline
    metrics it declares), else its first numbers; ratios say what they divide by (``vs demo:baseline
    (run 3957802f2e)``, ``vs published AlexNet``)."""
    from .section_base import presentation

    shown = presentation(result)
    parts = shown.headline_parts(result, context_results, store) if shown is not None else []
    if not parts:
        s = result.summary or {}
        headline_keys = [k for k in s if isinstance(s.get(k), (int, float)) and not isinstance(s.get(k), bool)][:4]
        parts = [f"{k} {s[k]:.4g}" for k in headline_keys] or [f"{len(result.metrics)} metrics"]
    return "; ".join(parts)


def build(results: Sequence, context: ReportContext | None = None) -> tuple[list[list[str]], list[Section]]:
    """The summary rows and the sections; ``context`` (e.g. the open store) enables example grids."""
    store = context.store if context is not None else None
    summary = [[r.model, r.benchmark, r.dataset, headline(r, results, store), r.run_id[:10]] for r in results]
    return summary, build_sections(results, context)


def environment_notice(results: Sequence) -> str:
    """One sentence on where the reported numbers were computed: the one environment they share, or
    that they come from several and what differs between them (runs side by side from different
    stacks or machines may differ in their last digits)."""
    environments = distinct_environments(env for r in results for env in getattr(r, "environments", []) or [])
    if not environments:
        return ""
    if len(environments) == 1:
        return f"Computed in one environment: {summarize(environments[0])}."
    return (f"These runs come from {len(environments)} different environments, so numbers side by side may "
            f"differ by the stack as well as the model; they differ in " + "; ".join(
                describe_differences(environments, noun="environment")) + ".")


def render_html(results: Sequence, *, title: str = "robustlab report", store: str = "",
                context: ReportContext | None = None) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("robustlab.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    summary, sections = build(results, context)
    return env.get_template("report.html.j2").render(
        title=title, version=__version__, store=store, n_runs=len(results), summary_columns=SUMMARY_COLUMNS,
        summary_rows=summary, summary_legend=SUMMARY_LEGEND, sections=sections,
        environment=environment_notice(results))


def render_markdown(results: Sequence, *, title: str = "robustlab report",
                    context: ReportContext | None = None) -> str:
    summary, sections = build(results, context)

    def table(columns: list[str], rows: list[list[str]]) -> list[str]:
        esc = [[str(v).replace("|", "\\|") for v in row] for row in rows]
        return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + ["| " + " | ".join(r) + " |" for r in esc]

    notice = environment_notice(results)
    out = [f"# {title}", ""] + ([notice, ""] if notice else []) + ["## Summary", ""] + table(SUMMARY_COLUMNS, summary) \
        + ["", SUMMARY_LEGEND]
    for sec in sections:
        out += ["", f"## {sec.title}", "", sec.intro, ""]
        if sec.rows:
            out += table(sec.columns, sec.rows)
            if sec.legend:
                out += ["", sec.legend]
        out += [f"- note: {n}" for n in sec.notes]
    return "\n".join(out + ["", f"{MARKDOWN_MARK} {__version__} -->"]) + "\n"


def render_csv(results: Sequence) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["run_id", "model", "benchmark", "dataset", "metric", "setting", "value"])
    for r in results:
        for m, s, v in r.metrics:
            writer.writerow([r.run_id, r.model, r.benchmark, r.dataset, m, s, repr(float(v))])
    return buf.getvalue()


def render_json(results: Sequence) -> str:
    return json.dumps({"robustlab": __version__, "runs": [r.to_dict() for r in results]}, indent=1)


#: How each format marks a file as a robustlab report, so that ``report -o`` may replace it
#: (and only it): the HTML generator tag, a closing comment in Markdown, the CSV header, the
#: JSON's ``robustlab`` key.
HTML_MARK = '<meta name="generator" content="robustlab report'
MARKDOWN_MARK = "<!-- written by robustlab report"
CSV_HEADER = "run_id,model,benchmark,dataset,metric,setting,value"


def is_report_file(path: str | os.PathLike) -> bool:
    """True when ``path`` is a report robustlab wrote (any format), judged from its content."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(4096)
            fh.seek(max(0, p.stat().st_size - 512))
            tail = fh.read()
    except OSError:
        return False
    text, end = head.decode("utf-8", "replace"), tail.decode("utf-8", "replace")
    if HTML_MARK in text or MARKDOWN_MARK in end or text.startswith(CSV_HEADER + "\n"):
        return True
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and set(data) == {"robustlab", "runs"}
    return False


def check_report_destination(out: str | os.PathLike, store: Any = None) -> None:
    """Refuse a report file that would destroy data, before anything is computed.

    - ``out`` exists and is not a report robustlab wrote (an empty file excepted): it is never
      overwritten;
    - ``out`` is not a regular file (a folder, a FIFO);
    - ``out`` lies inside a results store (the opened one, or any folder holding a catalog):
      a report there could replace the catalog or the predictions.

    Raises
    ------
    InputError
    """
    from ..data.folders import STORE_PREDICTIONS_FOLDER
    from ..store.location import CATALOG_FILE

    path = Path(out)
    target = Path(os.path.realpath(path))
    roots = []
    location = getattr(store, "location", None)
    sqlite = getattr(location, "sqlite_path", None)
    if sqlite is not None:
        roots += [Path(os.path.realpath(sqlite)).parent, Path(os.path.realpath(sqlite))]
    predictions = getattr(store, "predictions_dir", None)
    if predictions is not None:
        roots.append(Path(os.path.realpath(predictions)))
    for root in roots:
        if target == root or target.is_relative_to(root) and root.is_dir():
            raise InputError(f"{out} is inside the results store {root}: a report there could replace the catalog "
                             "or predictions. Write it elsewhere (-o report.html).")
    beside_catalog = (target.parent / CATALOG_FILE).is_file()
    in_predictions = target.parent.name == STORE_PREDICTIONS_FOLDER and any(target.parent.parent.glob("*.db"))
    if beside_catalog or in_predictions or target.name == CATALOG_FILE:
        raise InputError(f"{out} is inside a results store ({target.parent}): a report there could replace the "
                         "catalog or predictions. Write it elsewhere (-o report.html).")
    if not os.path.lexists(path):
        return
    if not path.is_file():
        raise InputError(f"{out} exists and is not a regular file; give a file name for the report (-o report.html).")
    if path.stat().st_size and not is_report_file(path):
        raise InputError(f"{out} exists and is not a report robustlab wrote: it is never overwritten. Choose "
                         "another file name (-o), or move that file away first.")


def _describe_location(location) -> str:
    """The store as a reader knows it: the SQLite folder, or the database URL without its password."""
    if location is None:
        return ""
    if getattr(location, "sqlite_path", None) is not None:
        return str(location.sqlite_path.parent)
    from ..store.location import hide_password

    return hide_password(str(getattr(location, "url", location)))


def write_report(store, out: str | os.PathLike, *, fmt: str | None = None, runs: Iterable[str] | None = None,
                 benchmarks: Iterable[str] | None = None, title: str = "robustlab report",
                 reference_points: str | os.PathLike | None = None, fit_on: str | os.PathLike | None = None) -> Path:
    """Write a report of the store's complete runs (or the chosen ones) to ``out``.

    ``fmt`` defaults from the extension: ``.html``, ``.md``, ``.csv``, ``.json``. The HTML is a
    single self-contained file (inline SVG/PNG, inline CSS, no scripts, no network).
    ``reference_points``: a CSV of published accuracies for the effective-robustness trends
    (:func:`robustlab.report.effective.reference_points_for`); ``fit_on``: which models those trends
    are fitted on (``standard``, the default; ``all``; or a file of model names).
    """
    out = Path(out)
    fmt = fmt or {".md": "markdown", ".markdown": "markdown", ".csv": "csv", ".json": "json"}.get(out.suffix.lower(), "html")
    if fmt not in FORMATS:
        raise InputError(f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}.")
    check_report_destination(out, store)
    results = collect_results(store, runs, benchmarks)
    where = _describe_location(getattr(store, "location", None))
    if not results:
        raise InputError(f"no complete runs to report in the store {where}: evaluate a model first "
                         "(robustlab evaluate ...) or check --store.")
    from ..metrics.effective_robustness import parse_fit_on

    context = ReportContext(store=store, reference_points=reference_points, fit_on=parse_fit_on(fit_on))
    text = {"html": lambda: render_html(results, title=title, store=where, context=context),
            "markdown": lambda: render_markdown(results, title=title, context=context),
            "csv": lambda: render_csv(results), "json": lambda: render_json(results)}[fmt]()
    atomic_write_text(out, text)
    return out
