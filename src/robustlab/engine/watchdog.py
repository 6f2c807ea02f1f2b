"""A run never hangs silently: the watchdog notices when no batch finishes, says why, and gives up
after a patience the user chooses.

The executor calls :meth:`Watchdog.progress` whenever a batch finishes and :meth:`Watchdog.check`
while it waits. After :data:`REPORT_AFTER` seconds without progress the watchdog reports (an event:
a log line on stderr and an entry of the ``--json`` result's ``events``) what the executor's
``diagnose`` says (on Ray: the pending resource demands, the available resources, lost nodes),
and again every :data:`REPEAT_EVERY` seconds while the stall lasts. After ``stall_timeout``
seconds without progress it raises :class:`StalledRunError`: the run fails cleanly, with every
unit finished so far stored.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from ..errors import InputError, RobustlabError
from .events import EventLog

#: Seconds without a finished batch before the first report (well within 30 s).
REPORT_AFTER = 15.0
#: Seconds between two reports of the same stall.
REPEAT_EVERY = 30.0
#: Default patience (seconds without progress) before a run fails.
STALL_TIMEOUT = 300.0


class StalledRunError(RobustlabError):
    """No batch finished for longer than the run's stall timeout.

    ``events`` holds the run's events (the watchdog's reports among them)."""

    def __init__(self, message: str, events: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.events = list(events or [])


def check_stall_timeout(value: Any) -> float:
    """A stall timeout in seconds (a positive number); InputError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isnan(value):
        raise InputError(f"stall timeout must be a positive number of seconds; got {value!r}.")
    return float(value)


class Watchdog:
    """Report stalls and fail a run that makes no progress (see the module docstring).

    Parameters
    ----------
    events : EventLog
        Where reports go.
    diagnose : callable
        ``diagnose(seconds without progress) -> (message, fields)``: what is wrong now.
    stall_timeout : float
        Seconds without progress before :class:`StalledRunError`.
    report_after, repeat_every : float
        Seconds before the first report, and between reports.
    """

    def __init__(self, events: EventLog, diagnose: Callable[[float], tuple[str, dict[str, Any]]],
                 stall_timeout: float = STALL_TIMEOUT, report_after: float = REPORT_AFTER,
                 repeat_every: float = REPEAT_EVERY) -> None:
        self.events, self.diagnose = events, diagnose
        self.stall_timeout = stall_timeout
        self.report_after = min(report_after, stall_timeout)
        self.repeat_every = repeat_every
        self.last_progress = time.monotonic()
        self.last_report: float | None = None

    def progress(self) -> None:
        """A batch finished."""
        if self.last_report is not None:
            self.events.emit("resumed", "progress again: the run continues")
        self.last_progress = time.monotonic()
        self.last_report = None

    def check(self) -> None:
        """Report or fail when the run has made no progress for too long."""
        now = time.monotonic()
        idle = now - self.last_progress
        if idle >= self.stall_timeout:
            message, fields = self.diagnose(idle)
            self.events.emit("stalled", message, idle_seconds=round(idle), **fields)
            raise StalledRunError(
                f"no progress for {idle:.0f} s (--stall-timeout {self.stall_timeout:g}): {message} The run stopped; "
                "every unit finished so far is stored, and running the same command again continues it.",
                self.events.events)
        if idle >= self.report_after and (self.last_report is None or now - self.last_report >= self.repeat_every):
            message, fields = self.diagnose(idle)
            left = self.stall_timeout - idle
            self.events.emit("stalled", f"no batch finished for {idle:.0f} s: {message} The run fails in {left:.0f} s "
                             "(--stall-timeout) unless it makes progress.", idle_seconds=round(idle), **fields)
            self.last_report = now
