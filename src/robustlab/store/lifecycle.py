"""Opening a store: the catalog's schema (created, or migrated after a backup), the predictions
folder's home, and the transactions every part of :class:`~robustlab.store.Store` runs.

:class:`StoreBase` is what the store's parts (runs, units, holders, results) share: the
connections, the location, and :meth:`StoreBase._read` / :meth:`StoreBase._write` /
:meth:`StoreBase._in_run`, which run one named transaction function (``work(conn, ...)``).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self, TypeVar

from sqlalchemy import Connection, text

from ..errors import StoreError
from . import catalog
from .catalog import SCHEMA_VERSION
from .database import Database
from .home import settle_home, visibility_problem
from .identity import resolve_run
from .location import STORE_ENV, StoreLocation

T = TypeVar("T")

#: Key of the PostgreSQL advisory lock that serialises schema creation and migration.
SCHEMA_LOCK_KEY = 0x726F6275  # "robu"


class StoreBase:
    """A store's connections, location and predictions home (see :class:`~robustlab.store.Store`)."""

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
            raise no_store_error(location)
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.location.describe()!r}, predictions={str(self.predictions_dir)!r})"

    # --- transactions -------------------------------------------------------------------------

    @property
    def _where(self) -> str:
        """The catalog, for messages."""
        return self.location.describe()

    def _read(self, work: Callable[..., T], *args) -> T:
        """``work(conn, *args)`` in one read transaction."""
        return self._db.run(lambda conn: work(conn, *args), write=False)

    def _write(self, work: Callable[..., T], *args) -> T:
        """``work(conn, *args)`` in one write transaction (run again from the start while the
        database is locked: see :meth:`~robustlab.store.database.Database.run`)."""
        return self._db.run(lambda conn: work(conn, *args), write=True)

    def _in_run(self, run_id: str, work: Callable[..., T], *args, write: bool = False) -> T:
        """``work(conn, rid, *args)`` in one transaction, ``rid`` the id that ``run_id`` (an id or
        a unique prefix) names, resolved in that transaction."""
        where = self._where
        return self._db.run(lambda conn: work(conn, resolve_run(conn, run_id, where), *args), write=write)

    def _prepare_schema(self, *, must_exist: bool = False) -> None:
        where = self._where
        foreign_ok = not self.location.is_sqlite
        version = self._read(functools.partial(catalog.detect_version, where=where, foreign_tables_ok=foreign_ok))
        if version == SCHEMA_VERSION:
            return
        if version is None and must_exist:
            raise no_store_error(self.location)
        if version is not None:
            catalog.check_supported(version, where)
            if self.location.sqlite_path is not None:
                self.backup_path = backup_sqlite(self.location.sqlite_path, version)
        found = self._write(upgrade_schema, where, foreign_ok)
        self.migrated_from = found if found is not None and found < SCHEMA_VERSION else None


def upgrade_schema(conn: Connection, where: str, foreign_tables_ok: bool) -> int | None:
    """Create the catalog's tables, or migrate them to :data:`SCHEMA_VERSION`, under the schema
    lock (PostgreSQL; SQLite's write transactions are serial already); returns the version found
    (None: there was no catalog)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
    found = catalog.detect_version(conn, where=where, foreign_tables_ok=foreign_tables_ok)  # again, under the lock
    now = time.time()
    if found is None:
        catalog.create_current(conn, now)
    else:
        catalog.check_supported(found, where)
        catalog.migrate(conn, found, now)
    return found


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


def no_store_error(location: StoreLocation) -> StoreError:
    """The error for a location that holds no store (opened with ``must_exist``)."""
    where = location.describe()
    what = f"no store at {where} (the file does not exist)" if location.sqlite_path is not None else \
        f"the database {where} holds no robustlab store"
    return StoreError(
        f"{what}: check --store (or ${STORE_ENV}) for a typo; `robustlab evaluate` creates a store when it first "
        "writes results."
    )


def backup_sqlite(path: Path, version: int) -> Path:
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
