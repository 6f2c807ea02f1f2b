"""What a run found besides its predictions: its metrics, and the samples it skipped (problems)
(:class:`StoreResults`, a part of :class:`~robustlab.store.Store`)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from sqlalchemy import Connection, delete, select

from ..errors import InputError
from . import catalog
from .catalog import metrics, problems, runs
from .database import upsert_statement
from .lifecycle import StoreBase


class StoreResults(StoreBase):
    """Put and read a run's metrics; record and list the samples it skipped."""

    def put_metrics(self, run_id: str, rows: Iterable[tuple[str, str, float]]) -> None:
        """Replace the run's metrics with ``rows`` of (metric name, setting, value).

        ``setting`` names what the value is about (``"fog/3"``, ``"fog"``, or ``""`` for the
        whole run); NaN values are kept as NaN.
        """
        self._in_run(run_id, replace_metrics, metric_rows(rows), write=True)

    def get_metrics(self, run_id: str) -> list[tuple[str, str, float]]:
        """The run's metrics as (name, setting, value), in the order they were put."""
        return [
            (name, setting, catalog.null_to_nan(value))
            for name, setting, value in self._in_run(run_id, read_metrics)
        ]

    def record_problem(self, run_id: str, unit: str, sample_id: str, message: str) -> None:
        """Record a sample the run skipped (corrupt JPEG, unreadable file...) and why.

        Recording the same (unit, sample) again replaces the message, so a retried unit does
        not pile up duplicates.
        """
        for name, value in (("unit", unit), ("sample_id", sample_id), ("message", message)):
            if not isinstance(value, str):
                raise InputError(f"{name} must be a string, got {type(value).__name__} {value!r}.")
        row = {"unit": unit, "sample_id": sample_id, "message": message, "recorded_at": time.time()}
        self._in_run(run_id, save_problem, row, write=True)

    def problems(self, run_id: str) -> list[tuple[str, str, str]]:
        """Skipped samples of the run as (unit, sample_id, message), sorted by unit and sample."""
        return [tuple(r) for r in self._in_run(run_id, read_problems)]


def metric_rows(rows: Iterable[tuple[str, str, float]]) -> list[dict]:
    """``metrics`` rows (without the run) of (name, setting, value) items, in their order.

    Raises
    ------
    InputError
        An item that is not (non-empty name, setting, number), or a (name, setting) given twice.
    """
    clean, seen = [], set()
    for position, item in enumerate(rows):
        try:
            name, setting, value = item
            value = float(value)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"metric row {item!r} must be (name, setting, value) with a number value."
            ) from exc
        if not isinstance(name, str) or not name or not isinstance(setting, str):
            raise InputError(
                f"metric row {item!r}: name must be a non-empty string and setting a string."
            )
        if (name, setting) in seen:
            raise InputError(
                f"metric {name!r} for setting {setting!r} is given twice: give each once."
            )
        seen.add((name, setting))
        clean.append(
            {
                "name": name,
                "setting": setting,
                "value": catalog.nan_to_null(value),
                "position": position,
            }
        )
    return clean


# --- transactions (each runs as one, from StoreResults) ---------------------------------------


def replace_metrics(conn: Connection, rid: str, rows: list[dict]) -> None:
    """Replace run ``rid``'s metrics with ``rows`` (of :func:`metric_rows`)."""
    # Two drivers finishing one shared run both put its metrics. The run's row lock makes
    # the second wait for the first to commit, then replace its rows; without it, the
    # second's insert met the first's uncommitted rows (PostgreSQL: a unique violation).
    # SQLite's write transactions are exclusive already (FOR UPDATE is left out there).
    conn.execute(select(runs.c.id).where(runs.c.id == rid).with_for_update())
    conn.execute(delete(metrics).where(metrics.c.run_id == rid))
    if rows:
        conn.execute(metrics.insert(), [{"run_id": rid, **r} for r in rows])


def read_metrics(conn: Connection, rid: str) -> list:
    """Run ``rid``'s (name, setting, value) rows in the order they were put (NULL for NaN)."""
    query = select(metrics.c.name, metrics.c.setting, metrics.c.value).where(metrics.c.run_id == rid)
    return conn.execute(query.order_by(metrics.c.position)).all()


def save_problem(conn: Connection, rid: str, row: dict) -> None:
    """Record (or replace) a skipped sample of run ``rid``."""
    statement = upsert_statement(
        conn.dialect.name, problems, ("run_id", "unit", "sample_id"), ("message", "recorded_at")
    )
    conn.execute(statement, {"run_id": rid, **row})


def read_problems(conn: Connection, rid: str) -> list:
    """Run ``rid``'s skipped samples as (unit, sample_id, message) rows, by unit and sample."""
    query = select(problems.c.unit, problems.c.sample_id, problems.c.message).where(problems.c.run_id == rid)
    return conn.execute(query.order_by(problems.c.unit, problems.c.sample_id)).all()
