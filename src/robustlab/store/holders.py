"""Who works on a run: holders and the units they claim, as transactions of a store
(:class:`StoreHolders`, a part of :class:`~robustlab.store.Store`).

What a holder and a claim are, and when a holder counts as gone: :mod:`robustlab.store.leases`.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from sqlalchemy import Connection, delete, select, update

from .catalog import holders, leases, units
from .database import upsert_statement
from .leases import CLAIMED, HELD, STORED, HolderInfo, lock_run, new_holder_row, read_holders, renewal_values
from .lifecycle import StoreBase


class StoreHolders(StoreBase):
    """Register, renew and end holders; claim units for them."""

    def open_holder(self, run_id: str, ttl: float) -> str:
        """Register this process as working on a run; returns its holder id.

        The holder stays live for ``ttl`` seconds (database clock) unless renewed with
        :meth:`renew_holder`; :meth:`close_holder` ends it and releases its leases.
        """
        holder = secrets.token_hex(8)
        self._in_run(run_id, insert_holder, holder, ttl, write=True)
        return holder

    def renew_holder(self, holder: str, run_id: str, ttl: float) -> None:
        """Extend a holder's life by ``ttl`` seconds from now (re-registering it when another
        process already removed it as gone)."""
        self._write(renew, holder, run_id, ttl)

    def close_holder(self, holder: str) -> None:
        """End a holder: remove it and release the units it claimed."""
        self._write(remove_holder, holder)

    def holders(self, run_id: str | None = None) -> list[HolderInfo]:
        """The processes registered as working on a run (on any run when ``run_id`` is None),
        with their liveness judged now (gone ones included, ``alive=False``)."""
        if run_id is None:
            return self._read(read_holders)
        return self._in_run(run_id, read_holders)

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
        return self._in_run(run_id, claim, unit, holder, folder, write=True)

    def clear_gone_holders(self) -> int:
        """Remove holders that are gone (and their leases); returns how many."""
        return self._write(remove_gone_holders)


# --- transactions (each runs as one, from StoreHolders) ---------------------------------------


def insert_holder(conn: Connection, rid: str, holder: str, ttl: float) -> None:
    """Add the holder ``holder`` of this process on run ``rid``, live for ``ttl`` seconds."""
    conn.execute(holders.insert().values(**new_holder_row(holder, rid, conn.dialect.name, ttl)))


def renew(conn: Connection, holder: str, run_id: str, ttl: float) -> None:
    """Extend ``holder``'s life by ``ttl`` seconds; add it again (on ``run_id``) when it was removed."""
    done = conn.execute(update(holders).where(holders.c.holder == holder)
                        .values(**renewal_values(conn.dialect.name, ttl)))
    if not done.rowcount:
        conn.execute(holders.insert().values(**new_holder_row(holder, run_id, conn.dialect.name, ttl)))


def remove_holder(conn: Connection, holder: str) -> None:
    """Delete ``holder`` and its claims."""
    conn.execute(delete(leases).where(leases.c.holder == holder))
    conn.execute(delete(holders).where(holders.c.holder == holder))


def claim(conn: Connection, rid: str, unit: str, holder: str, folder: Path) -> tuple[str, HolderInfo | None]:
    """Claim ``unit`` of run ``rid`` for ``holder`` (claims on one run are serialised by
    :func:`~robustlab.store.leases.lock_run`): ``(STORED, None)`` when its file is in
    ``folder`` already, ``(HELD, other)`` when a live ``other`` holder claimed it, else the
    claim is recorded (taking over a gone holder's) and ``(CLAIMED, None)`` returned."""
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
    conn.execute(upsert_statement(conn.dialect.name, leases, ("run_id", "unit"), ("holder", "claimed_at")), row)
    return CLAIMED, None


def remove_gone_holders(conn: Connection) -> int:
    """Delete the holders that are gone, and their claims; returns how many."""
    gone = [h.holder for h in read_holders(conn) if not h.alive]
    if gone:
        conn.execute(delete(leases).where(leases.c.holder.in_(gone)))
        conn.execute(delete(holders).where(holders.c.holder.in_(gone)))
    return len(gone)
