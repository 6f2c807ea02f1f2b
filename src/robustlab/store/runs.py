"""A store's runs: their records and states, and the transactions that register, read, change
and delete them (:class:`StoreRuns`, a part of :class:`~robustlab.store.Store`).

A run that is stored as ``running`` but that no live process holds (its driver was killed) reads
as ``interrupted`` (see :mod:`robustlab.store.leases`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, delete, func, select, update

from ..errors import InputError, StoreError
from .catalog import holders, leases, metrics, problems, runs, units
from .database import upsert_statement
from .identity import canonical_json, run_id_for
from .leases import read_holders
from .lifecycle import StoreBase

#: Run states: registered, being worked on, all units and metrics done, stopped by an error,
#: stopped by the user (Ctrl-C) or a killed process (a ``running`` run no live process holds is
#: shown as ``interrupted``, see :mod:`robustlab.store.leases`).
RUN_STATUSES = ("pending", "running", "complete", "failed", "interrupted")
#: States that record a finish time.
FINISHED = ("complete", "failed", "interrupted")


@dataclass(frozen=True)
class RunRecord:
    """One run as the catalog knows it.

    Attributes
    ----------
    id : str
        12 hex digits, a hash of (model, benchmark, dataset, config).
    model, benchmark, dataset : str
        Names as given to :meth:`Store.register_run`.
    config : dict
        The run's settings (corruptions, severities, batch size...), as JSON types.
    model_spec : dict or None
        How to rebuild the model (adapter name, weights, preprocessing), when given.
    status : str
        One of ``"pending"``, ``"running"``, ``"complete"``, ``"failed"``, ``"interrupted"``.
        A run stored as ``running`` that no live process holds (its driver was killed) reads
        as ``interrupted``.
    created_at, finished_at : datetime or None
        UTC times of registration and of the last change to complete/failed/interrupted.
    n_units_done : int
        Number of units with stored predictions.
    """

    id: str
    model: str
    benchmark: str
    dataset: str
    config: dict
    model_spec: dict | None
    status: str
    created_at: datetime
    finished_at: datetime | None
    n_units_done: int


class StoreRuns(StoreBase):
    """Register, read, list, change and delete runs."""

    def register_run(
        self,
        model: str,
        benchmark: str,
        dataset: str,
        config: Mapping,
        model_spec: Mapping | None = None,
    ) -> str:
        """Register a run and return its id; registering the same run again returns the same id.

        Parameters
        ----------
        model, benchmark, dataset : str
            Names of the model (e.g. ``"torchvision:resnet18"``), benchmark (``"imagenet-c"``) and
            dataset (a path or name).
        config : dict
            Everything else that changes the results (corruptions, severities, shard size...);
            JSON types, numpy scalars and paths are accepted.
        model_spec : dict, optional
            How to rebuild the model; not part of the id. Kept when the run has none yet.

        Returns
        -------
        str
            The run id (12 hex digits).
        """
        run_id = run_id_for(model, benchmark, dataset, config)
        config_json = canonical_json(config, where="config")
        spec_json = None if model_spec is None else canonical_json(model_spec, where="model_spec")
        row = {
            "id": run_id,
            "model": model,
            "benchmark": benchmark,
            "dataset": dataset,
            "config_json": config_json,
            "model_spec_json": spec_json,
            "status": "pending",
            "created_at": time.time(),
            "finished_at": None,
        }
        self._write(insert_run, row)
        return run_id

    def get_run(self, run_id: str) -> RunRecord:
        """The run with id ``run``, or the only run whose id starts with ``run``.

        Raises
        ------
        RunNotFoundError
            When no run, or more than one, matches.
        """
        return self._in_run(run_id, read_run)

    def list_runs(self, benchmark: str | None = None, model: str | None = None) -> list[RunRecord]:
        """All runs, oldest first, optionally only those of one benchmark and/or model."""
        return self._read(read_runs, benchmark, model)

    def set_run_status(self, run_id: str, status: str) -> None:
        """Set a run's status (``"running"``, ``"complete"``, ``"failed"``, ``"interrupted"`` or ``"pending"``).

        ``"complete"``, ``"failed"`` and ``"interrupted"`` also record the finish time; the others clear it.
        """
        if status not in RUN_STATUSES:
            raise InputError(
                f"unknown run status {status!r}: use one of {', '.join(RUN_STATUSES)}."
            )
        finished = time.time() if status in FINISHED else None
        self._in_run(run_id, write_status, status, finished, write=True)

    def delete_run(self, run_id: str) -> None:
        """Remove a run: its catalog rows, then its prediction files."""
        rid = self._in_run(run_id, delete_run_rows, write=True)
        if self._home_problem is None:
            shutil.rmtree(self.predictions_dir / rid, ignore_errors=True)

    def stale_runs(self) -> list[str]:
        """Runs stored as ``running`` that no live process holds (shown as ``interrupted``)."""
        return self._read(stale_run_ids)


# --- transactions (each runs as one, from StoreRuns) ------------------------------------------


def insert_run(conn: Connection, row: Mapping) -> None:
    """Add the run ``row`` (a ``runs`` row) unless it is there; give it its model spec when it
    has none. Refuses another run with the same id (a hash collision)."""
    conn.execute(upsert_statement(conn.dialect.name, runs, ("id",), ()), row)
    run_id, spec_json = row["id"], row["model_spec_json"]
    if spec_json is not None:
        conn.execute(
            update(runs)
            .where(runs.c.id == run_id, runs.c.model_spec_json.is_(None))
            .values(model_spec_json=spec_json)
        )
    stored = conn.execute(
        select(runs.c.model, runs.c.benchmark, runs.c.dataset, runs.c.config_json).where(
            runs.c.id == run_id
        )
    ).one()
    if tuple(stored) != (row["model"], row["benchmark"], row["dataset"], row["config_json"]):
        raise StoreError(
            f"run id {run_id} is already used by a different run ({stored.model} on "
            f"{stored.benchmark}/{stored.dataset}): a hash collision. Change any config value "
            "(e.g. add a 'tag') to get another id."
        )


def read_run(conn: Connection, rid: str) -> RunRecord:
    """The record of run ``rid``."""
    return to_record(conn.execute(runs_query().where(runs.c.id == rid)).one(), held_runs(conn))


def read_runs(conn: Connection, benchmark: str | None = None, model: str | None = None) -> list[RunRecord]:
    """Every run's record (of one benchmark and/or model), oldest first."""
    query = runs_query().order_by(runs.c.created_at, runs.c.id)
    if benchmark is not None:
        query = query.where(runs.c.benchmark == benchmark)
    if model is not None:
        query = query.where(runs.c.model == model)
    held = held_runs(conn)
    return [to_record(r, held) for r in conn.execute(query)]


def write_status(conn: Connection, rid: str, status: str, finished: float | None) -> None:
    """Set run ``rid``'s status and finish time."""
    conn.execute(update(runs).where(runs.c.id == rid).values(status=status, finished_at=finished))


def delete_run_rows(conn: Connection, rid: str) -> str:
    """Delete run ``rid`` and every row that belongs to it; returns ``rid``."""
    for table in (problems, metrics, units, leases, holders):
        conn.execute(delete(table).where(table.c.run_id == rid))
    conn.execute(delete(runs).where(runs.c.id == rid))
    return rid


def stale_run_ids(conn: Connection) -> list[str]:
    """Runs stored as ``running`` that no live holder works on."""
    held = held_runs(conn)
    running = conn.execute(select(runs.c.id).where(runs.c.status == "running")).scalars().all()
    return [r for r in running if r not in held]


# --- rows to records --------------------------------------------------------------------------


def runs_query():
    """``SELECT`` of every run's row with its number of stored units (``n_units_done``)."""
    n_units = select(func.count()).where(units.c.run_id == runs.c.id).scalar_subquery()
    return select(runs, n_units.label("n_units_done"))


def held_runs(conn: Connection) -> set[str]:
    """Ids of the runs a live holder works on now."""
    return {h.run_id for h in read_holders(conn) if h.alive}


def to_record(row, held: set[str]) -> RunRecord:
    """A row of :func:`runs_query` as a record (``running`` without a live holder: ``interrupted``)."""
    status = "interrupted" if row.status == "running" and row.id not in held else row.status
    return RunRecord(
        id=row.id,
        model=row.model,
        benchmark=row.benchmark,
        dataset=row.dataset,
        config=json.loads(row.config_json),
        model_spec=None if row.model_spec_json is None else json.loads(row.model_spec_json),
        status=status,
        created_at=datetime.fromtimestamp(row.created_at, tz=UTC),
        finished_at=None
        if row.finished_at is None
        else datetime.fromtimestamp(row.finished_at, tz=UTC),
        n_units_done=int(row.n_units_done),
    )
