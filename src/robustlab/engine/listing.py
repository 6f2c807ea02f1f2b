"""Listing stored runs (``robustlab runs``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def runs_as_dicts(records: Iterable[Any]) -> list[dict[str, Any]]:
    """JSON-able rows of :class:`robustlab.store.RunRecord` objects."""
    return [{"run_id": r.id, "status": r.status, "benchmark": r.benchmark, "model": r.model, "dataset": r.dataset,
             "units_done": r.n_units_done, "created_at": r.created_at.isoformat() if r.created_at else None,
             "finished_at": r.finished_at.isoformat() if r.finished_at else None} for r in records]


def format_runs(records: Iterable[Any]) -> str:
    """A plain-text table of runs, newest first."""
    rows = sorted(records, key=lambda r: r.created_at, reverse=True)
    if not rows:
        return "no runs stored yet: run `robustlab evaluate ...` first."
    lines = [f"{'run':<13}{'status':<12}{'benchmark':<13}{'units':>6}  model / dataset"]
    for r in rows:
        lines.append(f"{r.id:<13}{r.status:<12}{r.benchmark:<13}{r.n_units_done:>6}  {r.model}  {r.dataset}")
    return "\n".join(lines)
