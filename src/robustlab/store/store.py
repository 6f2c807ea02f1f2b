"""The results store: a catalog of runs, units, metrics and problems, plus Parquet predictions.

A *run* is (model, benchmark, dataset, config); its id is a hash of those, so registering the
same run twice gives the same id. A run is done as *work units* (e.g. ``"fog/3/shard-0007"``);
each finished unit's per-sample predictions go to one Parquet file (written atomically), then
one catalog row marks the unit done. A killed run therefore resumes with
:meth:`Store.completed_units`, and re-writing a unit replaces it (never double-counts).

Each process opens its own :class:`Store` (a Store pickles as its location, so handing one
to a worker process reopens it there).
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, Table, delete, func, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from ..errors import DataError, InputError, StoreError
from . import catalog
from .catalog import SCHEMA_VERSION, holders, leases, metrics, problems, runs, units
from .database import Database
from .home import settle_home, visibility_problem
from .identity import RUN_ID_LENGTH, canonical_json, run_id_for
from .leases import (
    CLAIMED,
    HELD,
    STORED,
    HolderInfo,
    lock_run,
    new_holder_row,
    read_holders,
    renewal_values,
)
from .location import STORE_ENV, StoreLocation, resolve_location
from .predictions import (
    PredictionsChangedError,
    file_sha256,
    read_unit_file,
    unit_file_name,
    write_unit_file,
)

#: Run states: registered, being worked on, all units and metrics done, stopped by an error,
#: stopped by the user (Ctrl-C) or a killed process (a ``running`` run no live process holds is
#: shown as ``interrupted``, see :mod:`robustlab.store.leases`).
RUN_STATUSES = ("pending", "running", "complete", "failed", "interrupted")
#: States that record a finish time.
_FINISHED = ("complete", "failed", "interrupted")
#: Key of the PostgreSQL advisory lock that serialises schema creation and migration.
_SCHEMA_LOCK_KEY = 0x726F6275  # "robu"


class RunNotFoundError(StoreError):
    """No run (or no single run) matches the id or prefix given."""


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


class Store:
    """Catalog (SQLite or PostgreSQL) plus per-sample predictions (Parquet files).

    Use :func:`open_store` to make one; close it with :meth:`close` or a ``with`` block.

    Attributes
    ----------
    location : StoreLocation
        The catalog URL/file and the predictions folder.
    migrated_from : int or None
        The schema version the catalog was migrated from when opening it, else None.
    backup_path : Path or None
        Copy of an SQLite catalog taken before migrating it, else None.
    durable : bool
        Whether each write is flushed to the disk before it counts (see :func:`open_store`).
    store_id : str or None
        The store's id, recorded in its catalog and in its predictions folder's marker file.
    """

    def __init__(
        self,
        location: StoreLocation,
        *,
        busy_timeout: float = 15.0,
        lock_retries: int = 3,
        durable: bool = False,
        must_exist: bool = False,
        relocate: bool = False,
    ) -> None:
        self.location = location
        self.durable = bool(durable)
        if must_exist and location.sqlite_path is not None and not location.sqlite_path.exists():
            raise _no_store_error(location)
        self._options = {
            "busy_timeout": busy_timeout,
            "lock_retries": lock_retries,
            "durable": self.durable,
        }
        self._db = Database(
            location, busy_timeout=busy_timeout, lock_retries=lock_retries, durable=self.durable
        )
        self.migrated_from: int | None = None
        self.backup_path: Path | None = None
        try:
            self._prepare_schema(must_exist=must_exist)
            home = settle_home(self._db, location, relocate=relocate)
        except BaseException:
            self._db.close()
            raise
        self.location = home.location
        self.store_id = home.store_id
        self._home_problem = home.problem

    # --- life cycle ---------------------------------------------------------------------------

    @property
    def predictions_dir(self) -> Path:
        """Folder holding the Parquet files, one sub-folder per run (the one the catalog records)."""
        return self.location.predictions_dir

    def require_predictions(self) -> Path:
        """The predictions folder, or StoreError when this process cannot see the one the catalog
        records (see :mod:`robustlab.store.home`)."""
        if self._home_problem is not None:  # look again: another process may have just created the store
            self._home_problem = visibility_problem(self.location, self.store_id)
            if self._home_problem is not None:
                raise StoreError(self._home_problem)
        return self.location.predictions_dir

    def close(self) -> None:
        """Release the database connections (the store can be reopened with open_store)."""
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __reduce__(self):
        return (_reopen, (self.location, self._options))

    def __repr__(self) -> str:
        return f"Store({self.location.describe()!r}, predictions={str(self.predictions_dir)!r})"

    # --- runs ---------------------------------------------------------------------------------

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

        def work(conn: Connection) -> None:
            conn.execute(self._upsert(runs, ("id",), ()), row)
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
            if tuple(stored) != (model, benchmark, dataset, config_json):
                raise StoreError(
                    f"run id {run_id} is already used by a different run ({stored.model} on "
                    f"{stored.benchmark}/{stored.dataset}): a hash collision. Change any config value "
                    "(e.g. add a 'tag') to get another id."
                )

        self._db.run(work, write=True)
        return run_id

    def get_run(self, run_id: str) -> RunRecord:
        """The run with id ``run``, or the only run whose id starts with ``run``.

        Raises
        ------
        RunNotFoundError
            When no run, or more than one, matches.
        """

        def work(conn: Connection) -> RunRecord:
            rid = self._resolve(conn, run_id)
            return _to_record(conn.execute(_runs_query().where(runs.c.id == rid)).one(), _held_runs(conn))

        return self._db.run(work, write=False)

    def list_runs(self, benchmark: str | None = None, model: str | None = None) -> list[RunRecord]:
        """All runs, oldest first, optionally only those of one benchmark and/or model."""
        query = _runs_query().order_by(runs.c.created_at, runs.c.id)
        if benchmark is not None:
            query = query.where(runs.c.benchmark == benchmark)
        if model is not None:
            query = query.where(runs.c.model == model)
        return self._db.run(lambda conn: [_to_record(r, held) for held in [_held_runs(conn)]
                                          for r in conn.execute(query)], write=False)

    def set_run_status(self, run_id: str, status: str) -> None:
        """Set a run's status (``"running"``, ``"complete"``, ``"failed"``, ``"interrupted"`` or ``"pending"``).

        ``"complete"``, ``"failed"`` and ``"interrupted"`` also record the finish time; the others clear it.
        """
        if status not in RUN_STATUSES:
            raise InputError(
                f"unknown run status {status!r}: use one of {', '.join(RUN_STATUSES)}."
            )
        finished = time.time() if status in _FINISHED else None

        def work(conn: Connection) -> None:
            rid = self._resolve(conn, run_id)
            conn.execute(
                update(runs).where(runs.c.id == rid).values(status=status, finished_at=finished)
            )

        self._db.run(work, write=True)

    def delete_run(self, run_id: str) -> None:
        """Remove a run: its catalog rows, then its prediction files."""

        def work(conn: Connection) -> str:
            rid = self._resolve(conn, run_id)
            for table in (problems, metrics, units, leases, holders):
                conn.execute(delete(table).where(table.c.run_id == rid))
            conn.execute(delete(runs).where(runs.c.id == rid))
            return rid

        rid = self._db.run(work, write=True)
        if self._home_problem is None:
            shutil.rmtree(self.predictions_dir / rid, ignore_errors=True)

    # --- units and predictions ----------------------------------------------------------------

    def completed_units(self, run_id: str) -> set[str]:
        """Names of the run's units whose predictions are stored (catalog row and file present).

        A unit whose Parquet file has gone missing is not counted, so resuming recomputes it.
        """

        def work(conn: Connection) -> list:
            rid = self._resolve(conn, run_id)
            return conn.execute(
                select(units.c.unit, units.c.file).where(units.c.run_id == rid)
            ).all()

        folder = self.require_predictions()
        rows = self._db.run(work, write=False)
        return {unit for unit, file in rows if (folder / file).is_file()}

    def unit_meta(self, run_id: str) -> dict[str, dict]:
        """``{unit: meta}`` of the run's stored units (as :meth:`completed_units` counts them):
        the JSON meta each was written with (sample counts, data fingerprint...)."""

        def work(conn: Connection) -> list:
            rid = self._resolve(conn, run_id)
            return conn.execute(
                select(units.c.unit, units.c.file, units.c.meta_json).where(units.c.run_id == rid)
            ).all()

        folder = self.require_predictions()
        rows = self._db.run(work, write=False)
        return {
            unit: json.loads(meta or "{}")
            for unit, file, meta in rows
            if (folder / file).is_file()
        }

    def write_unit(
        self,
        run_id: str,
        unit: str,
        columns: Mapping[str, np.ndarray],
        meta: Mapping | None = None,
        *,
        replace: bool = True,
    ) -> bool:
        """Store one finished unit's per-sample predictions.

        With ``replace=True`` (default) a later write of the unit replaces an earlier one. With
        ``replace=False`` the unit is committed at most once: the file is written under a name
        of its own and the catalog row inserted only if the unit has none yet; a second write
        (a retried task, a second driver) changes nothing and returns False, so a unit never
        mixes two attempts. The evaluation engine writes this way.

        Parameters
        ----------
        run_id : str
            Run id (or unique prefix).
        unit : str
            Free-form unit name, e.g. ``"fog/3/shard-0007"``.
        columns : dict of str to np.ndarray
            Equal-length arrays, sample axis first: 1-D (``sample_id`` strings, ``label`` int64,
            ``correct`` bool...) or N-D fixed width (``top5`` ``(N, 5)`` int64, ``logits``
            ``(N, C)`` float32). Dtypes and shapes are kept exactly.
        meta : dict, optional
            JSON-serialisable facts about the unit (timings, device...).

        Notes
        -----
        The Parquet file is written under a temporary name and renamed, then the catalog row is
        upserted; a crash in between leaves the unit not done, to be redone on resume.
        """
        if not isinstance(unit, str) or not unit:
            raise InputError(f"unit names must be non-empty strings, got {unit!r}.")
        meta_json = canonical_json(meta or {}, where="meta")
        folder = self.require_predictions()
        rid = (
            run_id
            if _is_full_id(run_id)
            else self._db.run(lambda conn: self._resolve(conn, run_id), write=False)
        )
        relative = f"{rid}/{unit_file_name(unit)}"
        if not replace:  # a file of its own; the catalog decides below whether it is the one
            relative = relative.replace(".parquet", f".{secrets.token_hex(4)}.parquet")
        path = folder / relative
        n_rows = write_unit_file(path, columns, json.loads(meta_json), fsync=self.durable)
        row = {
            "run_id": rid,
            "unit": unit,
            "file": relative,
            "n_rows": n_rows,
            "meta_json": meta_json,
            "written_at": time.time(),
            "sha256": file_sha256(path),
        }

        def work(conn: Connection) -> bool:
            if conn.execute(select(runs.c.id).where(runs.c.id == rid)).first() is None:
                raise self._not_found(rid)
            if not replace:
                stored = conn.execute(
                    select(units.c.file).where(units.c.run_id == rid, units.c.unit == unit)
                ).scalar()
                if stored is not None and (folder / stored).is_file():
                    return False
            conn.execute(
                self._upsert(
                    units, ("run_id", "unit"), ("file", "n_rows", "meta_json", "written_at", "sha256")
                ),
                row,
            )
            return True

        try:
            written = self._db.run(work, write=True)
        except RunNotFoundError:
            path.unlink(missing_ok=True)
            raise
        if not written:
            path.unlink(missing_ok=True)
        return written

    def read_unit(self, run_id: str, unit: str) -> dict[str, np.ndarray]:
        """The columns written for one unit, with their dtypes and shapes."""
        return self.read_predictions(run_id, [unit])[unit]

    def read_predictions(
        self, run_id: str, units: Iterable[str] | None = None, *, lazy: bool = False
    ) -> Mapping[str, dict[str, np.ndarray]]:
        """Per-sample predictions of a run, by unit (sorted by unit name unless ``units`` is given).

        Parameters
        ----------
        run_id : str
            Run id or unique prefix.
        units : iterable of str, optional
            Units to read (in this order); default all stored units.
        lazy : bool
            Return a read-only mapping that reads a unit's file each time it is looked up, so that
            a pass over a 3.75M-sample run holds one unit in memory rather than all of them (the
            engine computes metrics this way). Default: a dict of every unit, read now.

        Raises
        ------
        StoreError
            When a requested unit has not been written, or its file is missing or unreadable.
        """
        wanted = None if units is None else list(dict.fromkeys(units))
        table = catalog.units

        self.require_predictions()

        def work(conn: Connection) -> tuple[str, dict]:
            rid = self._resolve(conn, run_id)
            query = select(table.c.unit, table.c.file, table.c.n_rows, table.c.sha256).where(table.c.run_id == rid)
            if wanted is not None and len(wanted) <= 500:
                query = query.where(table.c.unit.in_(wanted))
            return rid, {r.unit: r for r in conn.execute(query)}

        rid, rows = self._db.run(work, write=False)
        order = sorted(rows) if wanted is None else wanted
        missing = [u for u in order if u not in rows]
        if missing:
            raise StoreError(
                f"run {rid} has no stored predictions for unit(s) {', '.join(map(repr, missing[:5]))}"
                f"{' ...' if len(missing) > 5 else ''}: they have not finished. Resume the run to compute them."
            )
        if lazy:
            return UnitPredictions(order, lambda unit: self._read_file(rid, rows[unit]))
        return {unit: self._read_file(rid, rows[unit]) for unit in order}

    def delete_unit(self, run_id: str, unit: str) -> None:
        """Forget one unit (catalog row and file) so that resuming the run recomputes it."""

        def work(conn: Connection) -> str | None:
            rid = self._resolve(conn, run_id)
            file = conn.execute(
                select(units.c.file).where(units.c.run_id == rid, units.c.unit == unit)
            ).scalar()
            conn.execute(delete(units).where(units.c.run_id == rid, units.c.unit == unit))
            return file

        file = self._db.run(work, write=True)
        if file is not None and self._home_problem is None:
            (self.predictions_dir / file).unlink(missing_ok=True)

    # --- holders and leases (see robustlab.store.leases) -----------------------------------------

    def open_holder(self, run_id: str, ttl: float) -> str:
        """Register this process as working on a run; returns its holder id.

        The holder stays live for ``ttl`` seconds (database clock) unless renewed with
        :meth:`renew_holder`; :meth:`close_holder` ends it and releases its leases.
        """
        holder = secrets.token_hex(8)

        def work(conn: Connection) -> None:
            rid = self._resolve(conn, run_id)
            conn.execute(holders.insert().values(**new_holder_row(holder, rid, self._db.dialect, ttl)))

        self._db.run(work, write=True)
        return holder

    def renew_holder(self, holder: str, run_id: str, ttl: float) -> None:
        """Extend a holder's life by ``ttl`` seconds from now (re-registering it when another
        process already removed it as gone)."""

        def work(conn: Connection) -> None:
            done = conn.execute(update(holders).where(holders.c.holder == holder)
                                .values(**renewal_values(self._db.dialect, ttl)))
            if not done.rowcount:
                conn.execute(holders.insert().values(**new_holder_row(holder, run_id, self._db.dialect, ttl)))

        self._db.run(work, write=True)

    def close_holder(self, holder: str) -> None:
        """End a holder: remove it and release the units it claimed."""

        def work(conn: Connection) -> None:
            conn.execute(delete(leases).where(leases.c.holder == holder))
            conn.execute(delete(holders).where(holders.c.holder == holder))

        self._db.run(work, write=True)

    def holders(self, run_id: str | None = None) -> list[HolderInfo]:
        """The processes registered as working on a run (on any run when ``run_id`` is None),
        with their liveness judged now (gone ones included, ``alive=False``)."""

        def work(conn: Connection) -> list[HolderInfo]:
            return read_holders(conn, None if run_id is None else self._resolve(conn, run_id))

        return self._db.run(work, write=False)

    def claim_unit(self, run_id: str, unit: str, holder: str) -> tuple[str, HolderInfo | None]:
        """Claim a pending unit for ``holder`` before computing it.

        Returns
        -------
        (state, other)
            ``("claimed", None)``: compute it; ``("stored", None)``: it is stored already;
            ``("held", info)``: the live holder ``info`` claimed it (a claim by a holder that is
            gone is taken over).
        """
        folder = self.require_predictions()

        def work(conn: Connection) -> tuple[str, HolderInfo | None]:
            rid = self._resolve(conn, run_id)
            lock_run(conn, rid)
            stored = conn.execute(select(units.c.file).where(units.c.run_id == rid, units.c.unit == unit)).scalar()
            if stored is not None and (folder / stored).is_file():
                return STORED, None
            owner = conn.execute(select(leases.c.holder).where(leases.c.run_id == rid, leases.c.unit == unit)).scalar()
            if owner is not None and owner != holder:
                other = next((h for h in read_holders(conn, rid) if h.holder == owner), None)
                if other is not None and other.alive:
                    return HELD, other
            row = {"run_id": rid, "unit": unit, "holder": holder, "claimed_at": time.time()}
            conn.execute(self._upsert(leases, ("run_id", "unit"), ("holder", "claimed_at")), row)
            return CLAIMED, None

        return self._db.run(work, write=True)

    def clear_gone_holders(self) -> int:
        """Remove holders that are gone (and their leases); returns how many."""

        def work(conn: Connection) -> int:
            gone = [h.holder for h in read_holders(conn) if not h.alive]
            if gone:
                conn.execute(delete(leases).where(leases.c.holder.in_(gone)))
                conn.execute(delete(holders).where(holders.c.holder.in_(gone)))
            return len(gone)

        return self._db.run(work, write=True)

    def unit_files(self) -> list[tuple[str, str, str, str | None]]:
        """Every stored unit as (run id, unit, file relative to the predictions folder, SHA-256 or None)."""
        query = select(units.c.run_id, units.c.unit, units.c.file, units.c.sha256).order_by(units.c.run_id, units.c.unit)
        return [tuple(r) for r in self._db.run(lambda conn: conn.execute(query).all(), write=False)]

    def stale_runs(self) -> list[str]:
        """Runs stored as ``running`` that no live process holds (shown as ``interrupted``)."""

        def work(conn: Connection) -> list[str]:
            held = _held_runs(conn)
            running = conn.execute(select(runs.c.id).where(runs.c.status == "running")).scalars().all()
            return [r for r in running if r not in held]

        return self._db.run(work, write=False)

    # --- metrics and problems -------------------------------------------------------------------

    def put_metrics(self, run_id: str, rows: Iterable[tuple[str, str, float]]) -> None:
        """Replace the run's metrics with ``rows`` of (metric name, setting, value).

        ``setting`` names what the value is about (``"fog/3"``, ``"fog"``, or ``""`` for the
        whole run); NaN values are kept as NaN.
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

        def work(conn: Connection) -> None:
            rid = self._resolve(conn, run_id)
            # Two drivers finishing one shared run both put its metrics. The run's row lock makes
            # the second wait for the first to commit, then replace its rows; without it, the
            # second's insert met the first's uncommitted rows (PostgreSQL: a unique violation).
            # SQLite's write transactions are exclusive already (FOR UPDATE is left out there).
            conn.execute(select(runs.c.id).where(runs.c.id == rid).with_for_update())
            conn.execute(delete(metrics).where(metrics.c.run_id == rid))
            if clean:
                conn.execute(metrics.insert(), [{"run_id": rid, **r} for r in clean])

        self._db.run(work, write=True)

    def get_metrics(self, run_id: str) -> list[tuple[str, str, float]]:
        """The run's metrics as (name, setting, value), in the order they were put."""

        def work(conn: Connection) -> list:
            rid = self._resolve(conn, run_id)
            query = select(metrics.c.name, metrics.c.setting, metrics.c.value).where(
                metrics.c.run_id == rid
            )
            return conn.execute(query.order_by(metrics.c.position)).all()

        return [
            (name, setting, catalog.null_to_nan(value))
            for name, setting, value in self._db.run(work, write=False)
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

        def work(conn: Connection) -> None:
            rid = self._resolve(conn, run_id)
            statement = self._upsert(
                problems, ("run_id", "unit", "sample_id"), ("message", "recorded_at")
            )
            conn.execute(statement, {"run_id": rid, **row})

        self._db.run(work, write=True)

    def problems(self, run_id: str) -> list[tuple[str, str, str]]:
        """Skipped samples of the run as (unit, sample_id, message), sorted by unit and sample."""

        def work(conn: Connection) -> list:
            rid = self._resolve(conn, run_id)
            query = select(problems.c.unit, problems.c.sample_id, problems.c.message).where(
                problems.c.run_id == rid
            )
            return conn.execute(query.order_by(problems.c.unit, problems.c.sample_id)).all()

        return [tuple(r) for r in self._db.run(work, write=False)]

    # --- internals ------------------------------------------------------------------------------

    def _prepare_schema(self, *, must_exist: bool = False) -> None:
        where = self.location.describe()
        foreign_ok = not self.location.is_sqlite
        version = self._db.run(
            lambda c: catalog.detect_version(c, where=where, foreign_tables_ok=foreign_ok),
            write=False,
        )
        if version == SCHEMA_VERSION:
            return
        if version is None and must_exist:
            raise _no_store_error(self.location)
        if version is not None:
            catalog.check_supported(version, where)
            if self.location.sqlite_path is not None:
                self.backup_path = _backup_sqlite(self.location.sqlite_path, version)

        def upgrade(conn: Connection) -> int | None:
            if self._db.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK_KEY})
            found = catalog.detect_version(
                conn, where=where, foreign_tables_ok=foreign_ok
            )  # again, under the lock
            now = time.time()
            if found is None:
                catalog.create_current(conn, now)
            else:
                catalog.check_supported(found, where)
                catalog.migrate(conn, found, now)
            return found

        found = self._db.run(upgrade, write=True)
        self.migrated_from = found if found is not None and found < SCHEMA_VERSION else None

    def _resolve(self, conn: Connection, run: str) -> str:
        if not isinstance(run, str) or not run:
            raise InputError(f"a run is named by its id or an id prefix (a string), got {run!r}.")
        matches = (
            conn.execute(
                select(runs.c.id)
                .where(runs.c.id.startswith(run, autoescape=True))
                .order_by(runs.c.id)
                .limit(6)
            )
            .scalars()
            .all()
        )
        if run in matches:
            return run
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise self._not_found(run)
        raise RunNotFoundError(
            f"run prefix {run!r} matches several runs ({', '.join(matches[:5])}{' ...' if len(matches) > 5 else ''}): "
            "give more characters of the id."
        )

    def _not_found(self, run_id: str) -> RunNotFoundError:
        return RunNotFoundError(
            f"no run {run_id!r} in the store {self.location.describe()}: list the runs with `robustlab runs` "
            "(or store.list_runs()) and check --store."
        )

    def _upsert(self, table: Table, keys: tuple[str, ...], update_columns: tuple[str, ...]):
        """INSERT ... ON CONFLICT (keys) DO UPDATE/NOTHING for this dialect; rows go to execute()."""
        return upsert_statement(self._db.dialect, table, keys, update_columns)

    def _read_file(self, run_id: str, row) -> dict[str, np.ndarray]:
        path = self.predictions_dir / row.file
        try:
            columns = read_unit_file(path, row.sha256)
        except PredictionsChangedError as exc:
            raise PredictionsChangedError(
                f"unit {row.unit!r} of run {run_id}: {exc} Its numbers cannot be trusted. Put the original file "
                f"back, or forget the unit and recompute it: store.delete_unit({run_id!r}, {row.unit!r}) (Python), "
                "then run the same `robustlab evaluate` command again. `robustlab store check` lists every such file."
            ) from None
        except DataError as exc:
            raise StoreError(
                f"unit {row.unit!r} of run {run_id}: {exc} The catalog {self.location.describe()} lists it, "
                f"so the predictions folder {self.predictions_dir} is not the one it was written to (pass "
                "predictions_dir=... or move predictions/ with the catalog), or the file was removed: "
                f"then store.delete_unit({run_id!r}, {row.unit!r}) and resume the run to recompute it."
            ) from exc
        n_rows = len(next(iter(columns.values()))) if columns else 0
        if n_rows != row.n_rows:
            raise StoreError(
                f"unit {row.unit!r} of run {run_id}: the file {path} has {n_rows} rows but the catalog "
                f"recorded {row.n_rows}; it was overwritten outside robustlab. Delete the unit "
                "(store.delete_unit) and resume the run."
            )
        return columns


class UnitPredictions(Mapping):
    """A run's predictions by unit, read from disk on each lookup (``read_predictions(lazy=True)``).

    Iterating over items reads one unit at a time and keeps none, so memory stays at one unit's
    columns whatever the run's size; a metric that needs several passes reads the files again.
    """

    def __init__(self, units: list[str], read) -> None:
        self._units = list(units)
        self._known = frozenset(self._units)
        self._read = read

    def __getitem__(self, unit: str) -> dict[str, np.ndarray]:
        if unit not in self._known:
            raise KeyError(unit)
        return self._read(unit)

    def __iter__(self):
        return iter(self._units)

    def __len__(self) -> int:
        return len(self._units)

    def __contains__(self, unit: object) -> bool:
        return unit in self._known


def open_store(
    location: str | os.PathLike | None = None,
    *,
    predictions_dir: str | os.PathLike | None = None,
    busy_timeout: float = 15.0,
    lock_retries: int = 3,
    durable: bool = False,
    must_exist: bool = False,
    relocate: bool = False,
) -> Store:
    """Open (creating or migrating as needed) the results store at ``location``.

    Parameters
    ----------
    location : str, path-like or None
        None: ``$ROBUSTLAB_STORE`` or ``./.robustlab/``. A folder: ``<folder>/catalog.db`` and
        ``<folder>/predictions/``. A ``.db``/``.sqlite`` file or ``sqlite:///file.db``: that
        SQLite catalog, predictions beside it. ``postgresql://user@host/db``: the catalog on
        PostgreSQL (psycopg 3).
    predictions_dir : str or path-like, optional
        Folder for the Parquet predictions (default: beside an SQLite catalog; for PostgreSQL
        ``$ROBUSTLAB_PREDICTIONS_DIR`` or ``./.robustlab/predictions``).
    busy_timeout : float
        Seconds one SQLite transaction waits for another writer's lock.
    lock_retries : int
        Further attempts after a lock timeout before a StoreError.
    durable : bool
        False (default): writes survive a killed or crashed process (files are renamed into
        place only when complete; SQLite ``synchronous=NORMAL``), and after a power loss at
        worst the last units are redone. True: also flush every Parquet file and SQLite commit
        to the disk (``fsync``; about 10 ms more per unit on a slow disk).
    must_exist : bool
        Refuse a location that holds no store yet instead of creating one (what reading
        commands do: a typo in ``--store`` must not silently give an empty store).
    relocate : bool
        Record ``predictions_dir`` as the store's predictions folder after the folder was moved
        (it must hold the store's marker file).

    Notes
    -----
    A catalog this process cannot write (read-only file, folder or mount) is opened read-only:
    reading works, writing raises a StoreError saying so.

    The catalog records its predictions folder when the store is created; later opens use it
    (``predictions_dir`` may be left out) and refuse a different one (see
    :mod:`robustlab.store.home`).

    Raises
    ------
    StoreError
        When the location is not a store (another kind of file), is locked, has a newer schema,
        or (``must_exist``) holds no store.
    InputError
        When the location is malformed (unsupported URL scheme, in-memory SQLite).
    """
    resolved = resolve_location(location, predictions_dir)
    check_not_truncated(resolved)
    return Store(
        resolved,
        busy_timeout=busy_timeout,
        lock_retries=lock_retries,
        durable=durable,
        must_exist=must_exist,
        relocate=relocate,
    )


def check_not_truncated(location: StoreLocation) -> None:
    """Refuse a zero-byte SQLite catalog: SQLite would take it for a new, empty database and the
    store's runs would silently be gone. A catalog robustlab made is never empty once created,
    so the file was truncated (a full disk, a failed copy) or made by something else. (A catalog
    another process is creating this instant is waited for, up to 2 s, or 30 s while its
    journal shows the creation under way.)"""
    path = location.sqlite_path
    if path is None:
        return
    start = time.monotonic()
    while path.is_file() and path.stat().st_size == 0:
        creating = any(path.with_name(path.name + suffix).exists() for suffix in ("-journal", "-wal"))
        if time.monotonic() - start > (30.0 if creating else 2.0):
            raise StoreError(f"the store's catalog {path} is empty (0 bytes): it was truncated (a full disk, a failed "
                             "copy) or made by another program, and opening it would start a new, empty store. "
                             "Restore it from a backup; if this store never held results, delete the file to start "
                             "afresh.")
        time.sleep(0.05)


def _no_store_error(location: StoreLocation) -> StoreError:
    where = location.describe()
    what = f"no store at {where} (the file does not exist)" if location.sqlite_path is not None else \
        f"the database {where} holds no robustlab store"
    return StoreError(
        f"{what}: check --store (or ${STORE_ENV}) for a typo; `robustlab evaluate` creates a store when it first "
        "writes results."
    )


@functools.lru_cache(maxsize=32)
def upsert_statement(
    dialect_name: str, table: Table, keys: tuple[str, ...], update_columns: tuple[str, ...]
):
    """``INSERT ... ON CONFLICT (keys) DO UPDATE SET update_columns`` (or ``DO NOTHING`` when
    there are none) for ``"sqlite"`` or ``"postgresql"``; pass the rows to ``execute()``."""
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    statement = dialect.insert(table)
    if not update_columns:
        return statement.on_conflict_do_nothing(index_elements=list(keys))
    return statement.on_conflict_do_update(
        index_elements=list(keys), set_={c: statement.excluded[c] for c in update_columns}
    )


def _reopen(location: StoreLocation, options: dict) -> Store:
    return Store(location, **options)


def _is_full_id(run: Any) -> bool:
    return (
        isinstance(run, str)
        and len(run) == RUN_ID_LENGTH
        and all(c in "0123456789abcdef" for c in run)
    )


def _runs_query():
    n_units = select(func.count()).where(units.c.run_id == runs.c.id).scalar_subquery()
    return select(runs, n_units.label("n_units_done"))


def _held_runs(conn: Connection) -> set[str]:
    """Ids of the runs a live holder works on now."""
    return {h.run_id for h in read_holders(conn) if h.alive}


def _to_record(row, held: set[str]) -> RunRecord:
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


def _backup_sqlite(path: Path, version: int) -> Path:
    """Copy an SQLite catalog (consistently, through SQLite's backup API) before migrating it."""
    backup = path.with_name(f"{path.name}.v{version}.bak")
    tmp = path.with_name(f".{backup.name}.{os.getpid()}.tmp")
    source = sqlite3.connect(path)
    try:
        target = sqlite3.connect(tmp)
        try:
            source.backup(target)
        finally:
            target.close()
        os.replace(tmp, backup)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(
            f"cannot back up {path} before migrating it ({exc}): free disk space or fix permissions."
        ) from exc
    finally:
        source.close()
        tmp.unlink(missing_ok=True)
    return backup
