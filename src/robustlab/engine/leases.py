"""A driver's hold on a run: a heartbeat in the catalog, unit claims, and sharing a run's units
with other drivers on the same store.

:class:`RunHolder` registers this process as working on a run (a *holder*, see
:mod:`robustlab.store.leases`) and renews it from a background thread while the run computes.
The run's :class:`~robustlab.engine.work.UnitStream` claims each pending unit through it before
listing the unit's samples: a unit another live driver claimed is left to that driver.

:meth:`RunHolder.compute` runs the executor pass by pass: after a pass has computed every unit it
could claim, the driver waits for the units other drivers hold (they are stored, or taken over
when their driver stops or dies) and runs another pass over those it can claim now. A waiting
driver has no unit in flight, so two drivers never wait on each other.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from ..store.leases import HELD, lease_seconds
from .events import EventLog, merge_events
from .executor import ExecutionStats
from .work import UnitStream

#: Seconds between two looks at the units other drivers hold (it grows to :data:`MAX_POLL`).
FIRST_POLL = 0.5
MAX_POLL = 5.0


class RunHolder:
    """This process's hold on a run (use as a context manager).

    Parameters
    ----------
    store : Store
        The run's store.
    run_id : str
        The run.
    ttl : float, optional
        Seconds the hold lasts without a heartbeat (default
        :func:`robustlab.store.leases.lease_seconds`); it is renewed every ``ttl / 3`` seconds.
    events : EventLog, optional
        Where "waiting for another driver" is reported.
    """

    def __init__(self, store, run_id: str, ttl: float | None = None, events: EventLog | None = None) -> None:
        self.store, self.run_id = store, run_id
        self.ttl = float(ttl) if ttl is not None else lease_seconds()
        self.events = events if events is not None else EventLog()
        self.holder: str | None = None
        self.held_by: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RunHolder:
        self.holder = self.store.open_holder(self.run_id, self.ttl)
        self._thread = threading.Thread(target=self._heartbeat, name="robustlab-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.holder is not None:
            with contextlib.suppress(Exception):  # a store that went away: the hold expires by itself
                self.store.close_holder(self.holder)

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            with contextlib.suppress(Exception):  # a store briefly unreachable: try again next beat
                self.store.renew_holder(self.holder, self.run_id, self.ttl)

    def claim(self, unit: str) -> str:
        """Claim a pending unit: ``"claimed"`` (compute it), ``"stored"`` or ``"held"`` (by another driver)."""
        state, other = self.store.claim_unit(self.run_id, unit, self.holder)
        if state == HELD:
            self.held_by[unit] = other.describe()
        else:
            self.held_by.pop(unit, None)
        return state

    def others(self) -> list:
        """The other live processes working on this run."""
        return [h for h in self.store.holders(self.run_id) if h.alive and h.holder != self.holder]

    def end(self, status: str) -> None:
        """Record how this driver's work on the run ended (``failed``, ``interrupted``), unless
        another live driver still works on it (the run then stays ``running``)."""
        if not self.others():
            self.store.set_run_status(self.run_id, status)

    def compute(self, execute: Callable[[UnitStream], ExecutionStats], stream: UnitStream,
                next_stream: Callable[[], UnitStream]) -> ExecutionStats:
        """Run ``execute`` on ``stream``, then wait for the units other drivers hold and run it
        again on those this driver can claim, until every unit of the run is stored.

        Parameters
        ----------
        execute : callable
            ``execute(stream) -> ExecutionStats``: one executor pass.
        stream : UnitStream
            The first pass's stream (made with ``claim=self.claim``).
        next_stream : callable
            Makes the stream of a later pass (the store's units as they are now).
        """
        stats = ExecutionStats()
        poll = FIRST_POLL
        told: set[str] = set()
        while True:
            if stream.peek() is not None:
                stats.merge(execute(stream))
                poll = FIRST_POLL
            if not stream.deferred:
                break
            who = sorted({self.held_by.get(u, "another driver") for u in stream.deferred})
            if set(who) != told:
                told = set(who)
                self.events.emit(
                    "waiting", f"waiting for {len(stream.deferred)} unit(s) that another driver is computing "
                    f"({'; '.join(who)}); they are taken over if it stops", units=len(stream.deferred), holders=who)
            time.sleep(poll)
            poll = min(MAX_POLL, poll * 2)
            stream = next_stream()
        stats.events = merge_events(self.events.events, stats.events)
        return stats
