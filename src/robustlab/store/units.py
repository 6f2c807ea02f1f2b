"""A store's units: each finished unit's per-sample predictions, one Parquet file and one catalog
row (:class:`StoreUnits`, a part of :class:`~robustlab.store.Store`).

A unit's file is written under a temporary name and renamed (:mod:`robustlab.store.predictions`),
then its catalog row is upserted in one transaction; a crash in between leaves the unit not done,
to be redone on resume. A unit whose file has gone missing does not count as stored.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from sqlalchemy import Connection, delete, select

from ..errors import DataError, InputError, StoreError
from .catalog import runs, units
from .database import upsert_statement
from .identity import RunNotFoundError, canonical_json, is_full_id, resolve_run, run_not_found
from .lifecycle import StoreBase
from .predictions import (
    PredictionsChangedError,
    file_sha256,
    read_unit_file,
    unit_file_name,
    write_unit_file,
)

#: Columns of a unit's catalog row that a later write of the unit replaces.
UNIT_UPDATES = ("file", "n_rows", "meta_json", "written_at", "sha256")


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


class StoreUnits(StoreBase):
    """Write, read, list and forget the units of a run."""

    def completed_units(self, run_id: str) -> set[str]:
        """Names of the run's units whose predictions are stored (catalog row and file present).

        A unit whose Parquet file has gone missing is not counted, so resuming recomputes it.
        """
        folder = self.require_predictions()
        rows = self._in_run(run_id, unit_rows, "unit", "file")
        return {unit for unit, file in rows if (folder / file).is_file()}

    def unit_meta(self, run_id: str) -> dict[str, dict]:
        """``{unit: meta}`` of the run's stored units (as :meth:`completed_units` counts them):
        the JSON meta each was written with (sample counts, data fingerprint...)."""
        folder = self.require_predictions()
        rows = self._in_run(run_id, unit_rows, "unit", "file", "meta_json")
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
        rid = run_id if is_full_id(run_id) else self._read(resolve_run, run_id, self._where)
        relative = f"{rid}/{unit_file_name(unit)}"
        if not replace:  # a file of its own; the catalog decides below whether it is the one
            relative = relative.replace(".parquet", f".{secrets.token_hex(4)}.parquet")
        path = folder / relative
        n_rows = write_unit_file(path, columns, json.loads(meta_json), fsync=self.durable)
        row = {"run_id": rid, "unit": unit, "file": relative, "n_rows": n_rows, "meta_json": meta_json,
               "written_at": time.time(), "sha256": file_sha256(path)}
        try:
            written = self._write(commit_unit, row, replace, folder, self._where)
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
        self.require_predictions()
        rid, rows = self._in_run(run_id, rows_to_read, wanted)
        order = sorted(rows) if wanted is None else wanted
        missing = [u for u in order if u not in rows]
        if missing:
            raise StoreError(
                f"run {rid} has no stored predictions for unit(s) {', '.join(map(repr, missing[:5]))}"
                f"{' ...' if len(missing) > 5 else ''}: they have not finished. Resume the run to compute them."
            )

        def read(unit: str) -> dict[str, np.ndarray]:
            return read_unit_columns(self.predictions_dir, rid, rows[unit], self._where)

        if lazy:
            return UnitPredictions(order, read)
        return {unit: read(unit) for unit in order}

    def delete_unit(self, run_id: str, unit: str) -> None:
        """Forget one unit (catalog row and file) so that resuming the run recomputes it."""
        file = self._in_run(run_id, forget_unit, unit, write=True)
        if file is not None and self._home_problem is None:
            (self.predictions_dir / file).unlink(missing_ok=True)

    def unit_files(self) -> list[tuple[str, str, str, str | None]]:
        """Every stored unit as (run id, unit, file relative to the predictions folder, SHA-256 or None)."""
        return self._read(every_unit_file)


# --- transactions (each runs as one, from StoreUnits) -----------------------------------------


def unit_rows(conn: Connection, rid: str, *columns: str) -> list:
    """``columns`` of the catalog rows of run ``rid``'s units (``"unit"``, ``"file"``...)."""
    return conn.execute(select(*(units.c[c] for c in columns)).where(units.c.run_id == rid)).all()


def commit_unit(conn: Connection, row: Mapping, replace: bool, folder: Path, where: str) -> bool:
    """Record the unit ``row`` (a ``units`` row whose file is written); returns whether it was.

    With ``replace=False`` a unit whose stored file exists is kept (returns False). Raises
    :class:`RunNotFoundError` when the run is not in the catalog ``where``.
    """
    rid, unit = row["run_id"], row["unit"]
    if conn.execute(select(runs.c.id).where(runs.c.id == rid)).first() is None:
        raise run_not_found(rid, where)
    if not replace:
        stored = conn.execute(
            select(units.c.file).where(units.c.run_id == rid, units.c.unit == unit)
        ).scalar()
        if stored is not None and (folder / stored).is_file():
            return False
    conn.execute(upsert_statement(conn.dialect.name, units, ("run_id", "unit"), UNIT_UPDATES), row)
    return True


def rows_to_read(conn: Connection, rid: str, wanted: list[str] | None) -> tuple[str, dict]:
    """``(rid, {unit: row})``: the file, row count and hash of run ``rid``'s units (those
    ``wanted``, when at most 500 are; else all)."""
    query = select(units.c.unit, units.c.file, units.c.n_rows, units.c.sha256).where(units.c.run_id == rid)
    if wanted is not None and len(wanted) <= 500:
        query = query.where(units.c.unit.in_(wanted))
    return rid, {r.unit: r for r in conn.execute(query)}


def forget_unit(conn: Connection, rid: str, unit: str) -> str | None:
    """Delete a unit's catalog row; returns its file (None when there was no row)."""
    file = conn.execute(
        select(units.c.file).where(units.c.run_id == rid, units.c.unit == unit)
    ).scalar()
    conn.execute(delete(units).where(units.c.run_id == rid, units.c.unit == unit))
    return file


def every_unit_file(conn: Connection) -> list[tuple[str, str, str, str | None]]:
    """Every unit's (run id, unit, file, SHA-256 or None), by run and unit."""
    query = select(units.c.run_id, units.c.unit, units.c.file, units.c.sha256).order_by(units.c.run_id, units.c.unit)
    return [tuple(r) for r in conn.execute(query).all()]


# --- files ------------------------------------------------------------------------------------


def read_unit_columns(folder: Path, run_id: str, row, where: str) -> dict[str, np.ndarray]:
    """The columns of the unit ``row`` (of :func:`rows_to_read`) of run ``run_id``, from its file
    in ``folder``, checked against its recorded hash and row count (``where``: the catalog).

    Raises
    ------
    PredictionsChangedError
        The file's bytes are not the ones written.
    StoreError
        The file is missing or unreadable, or has another number of rows.
    """
    path = folder / row.file
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
            f"unit {row.unit!r} of run {run_id}: {exc} The catalog {where} lists it, "
            f"so the predictions folder {folder} is not the one it was written to (pass "
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
