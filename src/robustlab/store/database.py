"""Connections to the catalog database: SQLite tuned for several processes, or PostgreSQL.

SQLite runs in WAL mode (readers never block the writer, nor it them) with a busy timeout;
write transactions start with ``BEGIN IMMEDIATE`` so two writers queue on the lock instead of
failing when one upgrades a read to a write. A transaction that still finds the database
locked is retried a few times, then a :class:`StoreError` names the file and the processes
that have it open.

A catalog this process may not write (a read-only file or folder, a read-only mount) is opened
read-only (``mode=ro``), so every reading command works on it; a write then fails with a
StoreError saying the store is read-only. When its folder is not writable either and no
``-shm`` file exists (no writer has it open), it is opened ``immutable``, as SQLite needs for
a WAL database it cannot create the shared-memory file of.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from sqlalchemy import Connection, Engine, Table, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, NoSuchModuleError

from ..errors import StoreError
from ..fsutil import ensure_dir
from .location import StoreLocation

T = TypeVar("T")

SQLITE_MAGIC = b"SQLite format 3\x00"
#: PostgreSQL error codes worth retrying: serialization failure, deadlock, lock not available.
_PG_RETRY_CODES = {"40001", "40P01", "55P03"}
_WRITE_OPTION = "robustlab_write"


class Database:
    """A pool of connections to one catalog and the retry policy around its transactions.

    Parameters
    ----------
    location : StoreLocation
        Where the catalog is.
    busy_timeout : float
        Seconds SQLite waits for another writer's lock before one attempt fails.
    lock_retries : int
        Further attempts after a lock timeout before giving up with a StoreError.
    durable : bool
        SQLite only: flush every commit to the disk (``synchronous=FULL``) instead of at
        checkpoints (``NORMAL``, which survives a killed process but may lose the last commits
        on power loss).
    """

    def __init__(
        self,
        location: StoreLocation,
        *,
        busy_timeout: float = 15.0,
        lock_retries: int = 3,
        durable: bool = False,
    ) -> None:
        self.location = location
        self.busy_timeout = float(busy_timeout)
        self.lock_retries = int(lock_retries)
        self.read_only = False
        if location.sqlite_path is not None:
            check_sqlite_file(location.sqlite_path)
            self.read_only = not sqlite_writable(location.sqlite_path)
            url = sqlite_read_only_url(location.sqlite_path) if self.read_only else location.url
            self.engine = _sqlite_engine(url, self.busy_timeout, durable, read_only=self.read_only)
        else:
            self.engine = _postgres_engine(location)
        self._pid = os.getpid()

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    def run(self, work: Callable[[Connection], T], *, write: bool) -> T:
        """Run ``work(conn)`` in one transaction, retrying it while the database is locked.

        ``work`` must be safe to run again from the start (it is, as each attempt is its own
        transaction and a failed one is rolled back).
        """
        if os.getpid() != self._pid:  # forked: never share the parent's connections
            self.engine.dispose(close=False)
            self._pid = os.getpid()
        last_error: DBAPIError | None = None
        for attempt in range(self.lock_retries + 1):
            try:
                with self.engine.connect() as conn:
                    if write:
                        conn.execution_options(**{_WRITE_OPTION: True})
                    with conn.begin():
                        return work(conn)
            except DBAPIError as exc:
                if not self._is_retryable(exc):
                    explained = self._explain(exc)
                    if explained is exc:
                        raise
                    raise explained from exc
                last_error = exc
                time.sleep(min(0.05 * 2**attempt, 1.0))
        raise self._locked_error(last_error) from last_error

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    def _is_retryable(self, exc: DBAPIError) -> bool:
        if self.dialect == "sqlite":
            return "locked" in str(exc.orig).lower() or "busy" in str(exc.orig).lower()
        return getattr(exc.orig, "sqlstate", None) in _PG_RETRY_CODES

    def _explain(self, exc: DBAPIError) -> Exception:
        message = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        where = self.location.describe()
        lowered = message.lower()
        if self.dialect == "sqlite" and ("not a database" in lowered or "malformed" in lowered):
            return StoreError(
                f"the store catalog {where} is damaged ({message}). Recover what SQLite can with "
                f"`sqlite3 {where} .recover | sqlite3 recovered.db` and put recovered.db in its place, restore "
                f"a backup (catalog.db.v*.bak beside it, if any), or move {Path(where).name} away to start an "
                "empty store (the prediction files stay, but are no longer listed)."
            )
        if self.dialect == "sqlite" and ("disk is full" in lowered or "disk i/o error" in lowered):
            return StoreError(
                f"cannot write the store {where} ({message}): the disk is full, a disk quota or file size "
                "limit was reached, or the disk is failing. Free some space (finished units are kept) and run again."
            )
        if self.dialect == "sqlite" and ("readonly" in lowered or "read-only" in lowered):
            return StoreError(
                f"cannot write the store {where} ({message}): it is read-only for this user. Reading commands "
                "(runs, show, report) work on it; to add results, use a writable --store or fix its permissions."
            )
        if self.dialect == "sqlite" and "unable to open" in lowered:
            return StoreError(
                f"cannot open the store {where} ({message}): check that its folder exists and its permissions."
            )
        if self.dialect == "postgresql" and (
            exc.connection_invalidated or "connect" in message.lower()
        ):
            return StoreError(
                f"cannot reach the store database {where} ({message}). Check that the server is "
                "running and that the URL's user, host, port and database are right."
            )
        return exc

    def _locked_error(self, exc: DBAPIError | None) -> StoreError:
        where = self.location.describe()
        tries = self.lock_retries + 1
        if self.location.sqlite_path is None:
            return StoreError(
                f"the store {where} stayed locked or deadlocked after {tries} attempts ({exc.orig if exc else ''}). "
                "Another process holds the lock: wait for it to finish, or end it, then run again."
            )
        path = self.location.sqlite_path
        holders = processes_holding(
            [path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")]
        )
        held_by = (
            "; ".join(holders)
            if holders
            else "no process found (another machine over a network file system?)"
        )
        return StoreError(
            f"the store {path} is locked by another writer: gave up after {tries} attempts of "
            f"{self.busy_timeout:g} s. Processes that have it open: {held_by}. Wait for the other "
            "run to finish or end it (close any sqlite3 shell or database browser holding a "
            "transaction), then run again; finished units are kept. Network file systems do not "
            "support SQLite locking: keep the store on a local disk or use a postgresql:// URL."
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


def check_sqlite_file(path: Path) -> None:
    """Refuse a path that exists but is not an SQLite database; create its folder otherwise.

    Raises
    ------
    StoreError
        When ``path`` is a folder or a file that does not start with the SQLite header.
    """
    if path.is_dir():
        raise StoreError(
            f"the store file {path} is a folder: give the folder itself without the file name "
            f"(its catalog is then {path / 'catalog.db'}) or another file name."
        )
    if not path.exists():
        ensure_dir(path.parent)
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(
            f"cannot read the store file {path} ({exc.strerror}): check its permissions."
        ) from exc
    if head and head != SQLITE_MAGIC:
        raise StoreError(
            f"{path} is not an SQLite database (it starts with {head[:8]!r}), so it cannot be a "
            "robustlab store: choose another --store location, or move the file away."
        )


def sqlite_writable(path: Path) -> bool:
    """Whether this process may write the SQLite catalog ``path`` (and create its journal files).

    A file that does not exist yet counts as writable (it is about to be created).
    """
    if not path.exists():
        return True
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def sqlite_read_only_url(path: Path) -> str:
    """SQLAlchemy URL opening ``path`` read-only (``mode=ro``; ``immutable`` when nothing can
    be written beside it and no writer has it open, see the module docstring)."""
    params = "mode=ro"
    if not os.access(path.parent, os.W_OK) and not Path(f"{path}-shm").exists():
        params += "&immutable=1"
    return f"sqlite:///file:{quote(str(path))}?{params}&uri=true"


def processes_holding(paths: Iterable[Path]) -> list[str]:
    """Describe the processes that have any of ``paths`` open (Linux /proc; [] elsewhere)."""
    targets = {os.path.realpath(p) for p in paths}
    proc = Path("/proc")
    found = []
    if not proc.is_dir():
        return found
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            fds = os.listdir(pid_dir / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(pid_dir / "fd" / fd) in targets:
                    found.append(_describe_process(int(pid_dir.name)))
                    break
            except OSError:
                continue
    return found


def _describe_process(pid: int) -> str:
    if pid == os.getpid():
        return f"pid {pid} (this process, another connection)"
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        command = raw.replace(b"\x00", b" ").decode(errors="replace").strip()
    except OSError:
        command = "?"
    return f"pid {pid} ({command[:100]})"


def _sqlite_engine(url: str, busy_timeout: float, durable: bool, *, read_only: bool = False) -> Engine:
    engine = create_engine(url, connect_args={"timeout": busy_timeout, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection, _record) -> None:
        # Take transaction control from the sqlite3 module so that BEGIN IMMEDIATE is ours to send.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            if not read_only:  # setting the journal mode is a write
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql(
            "BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE_OPTION) else "BEGIN"
        )

    return engine


def _postgres_engine(location: StoreLocation) -> Engine:
    try:
        return create_engine(location.url, pool_pre_ping=True)
    except (ModuleNotFoundError, NoSuchModuleError) as exc:
        raise StoreError(
            f"the store {location.describe()} needs the PostgreSQL driver psycopg 3: "
            "pip install 'robustlab[postgres]'."
        ) from exc
