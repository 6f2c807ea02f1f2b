"""An :class:`~robustlab.engine.EvaluationResult` as plain text (``robustlab show`` and
``EvaluationResult.table``), and the text helpers of the families' layouts (:func:`pct`,
:func:`text_table`).

The header (run, benchmark, model, data, status), then the benchmark family's own layout
(its presentation's :meth:`~robustlab.engine.presentation.Presentation.text`: per-corruption CE, flip rates per perturbation and
difficulty, the pm-k curve, P / mPC / rPC per corruption, accuracy per epsilon...), then the
notes and skipped samples. Numbers are printed as percentages, as the papers do.
"""

from __future__ import annotations

import math
from typing import Any

from ..environment import summarize
from ..errors import RobustlabError
from .benchmark import get_benchmark
from .config import RunConfig
from .presentation import metric_rows_text, presentation_of


def pct(value: Any, digits: int = 1) -> str:
    """A fraction as percent text (``-`` for None/NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{100 * value:.{digits}f}"


def format_result(result) -> str:
    """The text report of an :class:`~robustlab.engine.EvaluationResult` (see the module docstring)."""
    lines = [f"run {result.run_id}  {result.benchmark}  model {result.model}",
             f"data {result.dataset}  status {result.status}"]
    environments = getattr(result, "environments", None) or []
    if len(environments) == 1:
        lines.append(f"environment: {summarize(environments[0])}")
    elif environments:
        lines.append(f"environments: {len(environments)} (see the note below)")
    model_hash = stored_model_hash(result.config)
    if model_hash:
        lines.append(f"model hash {model_hash}")
    try:
        bench = get_benchmark(result.benchmark)
    except RobustlabError:  # not installed here: load_result's notes say so
        bench = None
    body: list[str] = []
    if result.metrics:
        try:
            body = presentation_of(bench).text(bench.config_of(result.config), result.summary, result.metrics) \
                if bench and result.summary is not None else metric_rows_text(result.metrics)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # stored by another version
            body = [f"notice: this run's stored metrics do not have the layout this robustlab version expects "
                    f"({type(exc).__name__}: {exc}); its metric rows follow as stored."] + metric_rows_text(result.metrics)
    if body:
        lines += [""] + body
    lines.append("")
    for note in result.notes:
        lines.append(f"note: {note}")
    if result.problems:
        lines.append(f"{len(result.problems)} samples skipped, e.g. {result.problems[0][1]}: {result.problems[0][2]}")
    return "\n".join(lines).rstrip()


def stored_model_hash(config: Any) -> str | None:
    """The ``model_hash`` a stored config records (any benchmark's, also one this robustlab does not know)."""
    if not isinstance(config, dict):
        return None
    try:
        return RunConfig.from_dict(config).model_hash
    except TypeError:  # a config without data: written by something else
        return None


def text_table(columns: list[str], rows: list[list[str]], *, first_width: int | None = None) -> list[str]:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(str(c)) for i, c in enumerate(columns)]
    if first_width:
        widths[0] = max(widths[0], first_width)
    fmt = lambda row: "  ".join(str(v).ljust(widths[0]) if i == 0 else str(v).rjust(widths[i])  # noqa: E731
                                for i, v in enumerate(row))
    head = fmt(columns)
    return [head, "-" * len(head)] + [fmt(r) for r in rows]
