"""Who is working on a run: holders with a heartbeat, and the units they claimed.

A process that computes a run's units (a driver: ``robustlab evaluate``, local or Ray) registers
a *holder* in the catalog and renews it while it works (a heartbeat). Before it computes a unit
it *claims* it: the claim succeeds when the unit is not stored yet and no live holder claimed it.
So several drivers on one store (PostgreSQL, or SQLite on one machine) share a run's units
instead of each computing all of them, and the units of a driver that dies are taken over once
its holder counts as gone. Leases only avoid duplicate work: exactly-once storage is the
store's own guarantee (``write_unit(..., replace=False)``).

A holder counts as gone when its heartbeat expired (the database's clock, so the drivers'
clocks do not matter), or at once when it ran on this machine and its process no longer exists
(a pid checked with its start time, so a reused pid is not mistaken for it).

The same record tells a run that is being worked on from one whose process was killed: a run
whose status is ``running`` but which no live holder holds is shown as ``interrupted``.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from dataclasses import dataclass

from sqlalchemy import Connection, Float, cast, func, literal, select, text

from .catalog import holders

#: Seconds a holder stays live without a heartbeat (``$ROBUSTLAB_LEASE_SECONDS`` overrides).
LEASE_SECONDS = 30.0
LEASE_ENV = "ROBUSTLAB_LEASE_SECONDS"
#: Results of a claim.
CLAIMED, STORED, HELD = "claimed", "stored", "held"


def lease_seconds() -> float:
    """The holder lifetime in seconds: ``$ROBUSTLAB_LEASE_SECONDS`` when set (> 0), else :data:`LEASE_SECONDS`."""
    try:
        value = float(os.environ.get(LEASE_ENV, ""))
    except ValueError:
        return LEASE_SECONDS
    return value if value > 0 else LEASE_SECONDS


def this_host() -> str:
    """This machine's name, as holders record it."""
    return socket.gethostname()


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()  # field 22 of stat(5); the first two fields were cut off
    except (OSError, IndexError):
        return None


def process_alive(pid: int, start: str | None) -> bool:
    """Whether process ``pid`` (started at ``start``, when known) still runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if start is None:
        return True
    now = process_start(pid)
    return now is None or now == start


def db_now(dialect: str):
    """The database's clock as seconds since the epoch (an SQL expression)."""
    if dialect == "postgresql":
        return cast(func.extract("epoch", func.clock_timestamp()), Float)
    return (func.julianday(literal("now")) - 2440587.5) * 86400.0


@dataclass(frozen=True)
class HolderInfo:
    """A process working on a run.

    Attributes
    ----------
    holder : str
        Its id (random hex).
    run_id, host : str
        The run it works on and the machine it runs on.
    pid : int
        Its process id on that machine.
    started_at : float
        When it started (seconds since the epoch).
    seconds_left : float
        Seconds before its heartbeat expires (negative: expired).
    alive : bool
        Whether it counts as live (heartbeat not expired, and its process exists when it runs
        on this machine).
    """

    holder: str
    run_id: str
    host: str
    pid: int
    started_at: float
    seconds_left: float
    alive: bool

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def read_holders(conn: Connection, run_id: str | None = None) -> list[HolderInfo]:
    """Every holder (of one run when ``run_id`` is given), with its liveness judged now."""
    now = db_now(conn.dialect.name)
    query = select(holders, now.label("now"))
    if run_id is not None:
        query = query.where(holders.c.run_id == run_id)
    here = this_host()
    found = []
    for row in conn.execute(query):
        left = float(row.expires_at) - float(row.now)
        alive = left > 0 and (row.host != here or process_alive(int(row.pid), row.process))
        found.append(HolderInfo(row.holder, row.run_id, row.host, int(row.pid), float(row.started_at), left, alive))
    return found


def lock_run(conn: Connection, run_id: str) -> None:
    """Serialise claims on one run (PostgreSQL: an advisory lock for the transaction; SQLite's
    write transactions are serial already)."""
    if conn.dialect.name == "postgresql":
        key = int(hashlib.sha256(run_id.encode()).hexdigest()[:15], 16)  # 60 bits: a bigint
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def renewal_values(dialect: str, ttl: float) -> dict:
    """Column values that extend a holder's life by ``ttl`` seconds from the database's now."""
    return {"expires_at": db_now(dialect) + ttl}


def new_holder_row(holder: str, run_id: str, dialect: str, ttl: float) -> dict:
    """The row of a new holder for this process."""
    pid = os.getpid()
    return {"holder": holder, "run_id": run_id, "host": this_host(), "pid": pid, "process": process_start(pid),
            "started_at": time.time(), **renewal_values(dialect, ttl)}
