"""The catalog's tables (schema version 2), the earlier layouts (versions 0 and 1) and the migrations.

Tables (SQLAlchemy Core, the same on SQLite and PostgreSQL):

- ``robustlab_schema``: one row, the schema version and the robustlab version that wrote it;
- ``runs``: one row per run (model, benchmark, dataset, config, status, times);
- ``units``: one row per finished work unit (its Parquet file and the file's SHA-256, number of
  samples, meta);
- ``metrics``: (run, metric name, setting) -> value, computed from stored predictions;
- ``problems``: samples skipped by a run (corrupt JPEG...), with the reason;
- ``store_info``: facts about the store itself (key -> value): its id and the folder its
  predictions live in (see :mod:`robustlab.store.home`);
- ``holders``: the processes working on a run now (host, pid, heartbeat expiry);
- ``leases``: which holder claimed which pending unit (see :mod:`robustlab.store.leases`).

Version 1 had no ``units.sha256`` and none of the last three tables; version 2 only adds them.

Per-sample predictions are never rows here: they live in Parquet files (see predictions.py).

Version 0 is the layout before this module kept a version: no ``robustlab_schema`` table,
``runs.config`` instead of ``config_json``, ISO-text ``created_at``, no model spec, no finish
time, ``units.path``, metrics keyed by one string ``"name@setting"``, no ``problems`` table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import (
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    inspect,
    select,
    text,
)

from .. import __version__
from ..errors import StoreError

SCHEMA_VERSION = 2
SCHEMA_TABLE = "robustlab_schema"

metadata = MetaData()

schema_table = Table(
    SCHEMA_TABLE,
    metadata,
    Column("version", Integer, nullable=False),
    Column("robustlab_version", String(32), nullable=False),
    Column("updated_at", Float, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("model", Text, nullable=False),
    Column("benchmark", Text, nullable=False),
    Column("dataset", Text, nullable=False),
    Column("config_json", Text, nullable=False),
    Column("model_spec_json", Text, nullable=True),
    Column("status", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("finished_at", Float, nullable=True),
    Index("ix_runs_benchmark_model", "benchmark", "model"),
)

units = Table(
    "units",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("unit", Text, nullable=False),
    Column("file", Text, nullable=False),
    Column("n_rows", Integer, nullable=False),
    Column("meta_json", Text, nullable=False),
    Column("written_at", Float, nullable=False),
    # SHA-256 (hex) of the file's bytes when it was written; NULL for units stored before version 2.
    Column("sha256", String(64), nullable=True),
    PrimaryKeyConstraint("run_id", "unit"),
)

metrics = Table(
    "metrics",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("name", Text, nullable=False),
    Column("setting", Text, nullable=False),
    # NULL stands for NaN: SQLite cannot store NaN in a REAL column.
    Column("value", Float, nullable=True),
    Column("position", Integer, nullable=False),
    PrimaryKeyConstraint("run_id", "name", "setting"),
)

problems = Table(
    "problems",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("unit", Text, nullable=False),
    Column("sample_id", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("recorded_at", Float, nullable=False),
    PrimaryKeyConstraint("run_id", "unit", "sample_id"),
)

store_info = Table(
    "store_info",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

holders = Table(
    "holders",
    metadata,
    Column("holder", String(32), primary_key=True),
    Column("run_id", String(64), nullable=False),
    Column("host", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    # the process's start time as the kernel counts it, so a reused pid is not taken for it
    Column("process", Text, nullable=True),
    Column("started_at", Float, nullable=False),
    # database clock (seconds since the epoch) after which the holder counts as gone
    Column("expires_at", Float, nullable=False),
    Index("ix_holders_run", "run_id"),
)

leases = Table(
    "leases",
    metadata,
    Column("run_id", String(64), nullable=False),
    Column("unit", Text, nullable=False),
    Column("holder", String(32), nullable=False),
    Column("claimed_at", Float, nullable=False),
    PrimaryKeyConstraint("run_id", "unit"),
)

#: Tables version 2 added (created by the migration from version 1 when missing).
TABLES_ADDED_IN_V2 = (store_info, holders, leases)

# --- version 0: the earlier layout, kept to migrate from (and to build test stores) --------

metadata_v0 = MetaData()

Table(
    "runs",
    metadata_v0,
    Column("id", String(64), primary_key=True),
    Column("model", Text, nullable=False),
    Column("benchmark", Text, nullable=False),
    Column("dataset", Text, nullable=False),
    Column("config", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", Text, nullable=False),  # ISO 8601 text
)
Table(
    "units",
    metadata_v0,
    Column("run_id", String(64), nullable=False),
    Column("unit", Text, nullable=False),
    Column("path", Text, nullable=False),
    Column("n_rows", Integer, nullable=False),
    PrimaryKeyConstraint("run_id", "unit"),
)
Table(
    "metrics",
    metadata_v0,
    Column("run_id", String(64), nullable=False),
    Column("metric", Text, nullable=False),  # "name" or "name@setting"
    Column("value", Float, nullable=True),
    PrimaryKeyConstraint("run_id", "metric"),
)


def detect_version(conn: Connection, *, where: str, foreign_tables_ok: bool) -> int | None:
    """The schema version of the catalog behind ``conn``; None when it holds no robustlab tables.

    Parameters
    ----------
    where : str
        The store's name for messages (file or URL).
    foreign_tables_ok : bool
        Whether other applications' tables may share the database (True for PostgreSQL). When
        False, a database with tables but none of robustlab's is refused.

    Raises
    ------
    StoreError
        When the database holds tables that are not a robustlab catalog.
    """
    names = set(inspect(conn).get_table_names())
    if SCHEMA_TABLE in names:
        version = conn.execute(select(schema_table.c.version)).scalar()
        if version is None:
            raise StoreError(
                f"the {SCHEMA_TABLE} table of the store {where} is empty: the catalog was damaged. "
                "Restore it from a backup or start a new store."
            )
        return int(version)
    if "runs" in names:
        columns = {c["name"] for c in inspect(conn).get_columns("runs")}
        if {"id", "config", "status"} <= columns:
            return 0
        raise StoreError(
            f"the database {where} has a 'runs' table that robustlab did not write: use another "
            "database (or folder) for the robustlab store."
        )
    user_tables = {n for n in names if not n.startswith("sqlite_")}
    if user_tables and not foreign_tables_ok:
        raise StoreError(
            f"the SQLite file {where} holds other tables ({', '.join(sorted(user_tables)[:5])}) and "
            "is not a robustlab store: choose another --store location."
        )
    return None


def create_current(conn: Connection, now: float) -> None:
    """Create the current layout and record its version (in the caller's transaction)."""
    metadata.create_all(conn)
    _set_version(conn, now)


def check_supported(version: int, where: str) -> None:
    """Raise when ``version`` is newer than this robustlab understands."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the store {where} has schema version {version}, written by a newer robustlab; this "
            f"robustlab {__version__} understands versions up to {SCHEMA_VERSION}. Upgrade robustlab "
            "(pip install -U robustlab), or use another --store location."
        )
    if version < 0:
        raise StoreError(
            f"the store {where} has the invalid schema version {version}: it was damaged."
        )


def migrate(conn: Connection, from_version: int, now: float) -> None:
    """Migrate the catalog from ``from_version`` to :data:`SCHEMA_VERSION` in the caller's transaction.

    Each step reads the old rows, drops the old tables, creates the new ones and writes the
    rows back (catalogs are small: no per-sample rows), which works the same on SQLite and
    PostgreSQL; the transaction makes it all-or-nothing.
    """
    for version in range(from_version, SCHEMA_VERSION):
        _MIGRATIONS[version](conn, now)


def _set_version(conn: Connection, now: float) -> None:
    conn.execute(schema_table.delete())
    conn.execute(
        schema_table.insert().values(
            version=SCHEMA_VERSION, robustlab_version=__version__, updated_at=now
        )
    )


def _migrate_v0_to_v1(conn: Connection, now: float) -> None:
    old = {
        name: conn.execute(table.select()).mappings().all()
        for name, table in metadata_v0.tables.items()
    }
    metadata_v0.drop_all(conn)
    metadata.create_all(conn)
    run_rows = [
        {
            "id": r["id"],
            "model": r["model"],
            "benchmark": r["benchmark"],
            "dataset": r["dataset"],
            "config_json": r["config"],
            "model_spec_json": None,
            "status": r["status"],
            "created_at": _iso_to_epoch(r["created_at"], now),
            "finished_at": None,
        }
        for r in old["runs"]
    ]
    known = {r["id"] for r in run_rows}
    unit_rows = [
        {
            "run_id": r["run_id"],
            "unit": r["unit"],
            "file": r["path"],
            "n_rows": r["n_rows"],
            "meta_json": "{}",
            "written_at": now,
        }
        for r in old["units"]
        if r["run_id"] in known
    ]
    metric_rows = []
    for position, r in enumerate(old["metrics"]):
        if r["run_id"] not in known:
            continue
        name, _, setting = r["metric"].partition("@")
        value = r["value"]
        metric_rows.append(
            {
                "run_id": r["run_id"],
                "name": name,
                "setting": setting,
                "value": value,
                "position": position,
            }
        )
    for table, rows in ((runs, run_rows), (units, unit_rows), (metrics, metric_rows)):
        if rows:
            conn.execute(table.insert(), rows)
    _set_version(conn, now)


def _migrate_v1_to_v2(conn: Connection, now: float) -> None:
    """Additive: ``units.sha256`` and the store_info, holders and leases tables (each only when
    missing, so the step also completes a catalog that a v0 migration already built at v2)."""
    columns = {c["name"] for c in inspect(conn).get_columns("units")}
    if "sha256" not in columns:
        conn.execute(text("ALTER TABLE units ADD COLUMN sha256 VARCHAR(64)"))
    metadata.create_all(conn, tables=list(TABLES_ADDED_IN_V2))
    _set_version(conn, now)


def _iso_to_epoch(text: str, default: float) -> float:
    try:
        return datetime.fromisoformat(text).timestamp()
    except (TypeError, ValueError):
        return default


_MIGRATIONS: dict[int, Callable[[Connection, float], None]] = {0: _migrate_v0_to_v1, 1: _migrate_v1_to_v2}


def nan_to_null(value: float) -> float | None:
    """Metric value for the database: NaN is stored as NULL."""
    value = float(value)
    return None if math.isnan(value) else value


def null_to_nan(value: float | None) -> float:
    """Metric value read back: NULL is NaN."""
    return math.nan if value is None else float(value)


def dumps(value) -> str:
    """JSON text of an already JSON-safe value (see identity.to_jsonable)."""
    return json.dumps(value, sort_keys=True)
