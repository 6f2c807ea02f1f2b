"""Events of a run: what a user must hear about while it works (a stall, a lost node, waiting for
another driver), kept for ``--json`` (the result's ``events``) and echoed as log lines on stderr.

Each event is a dict: ``kind`` (``stalled``, ``node_lost``, ``waiting``, ``actors``...),
``message`` (one line a person reads), ``time`` (UTC, ISO 8601) and fields of its own (e.g.
``pending_demands``). stdout stays free for the ``--json`` document.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

#: The prefix of every log line.
LOG_PREFIX = "robustlab: "


class EventLog:
    """Collect a run's events and echo each as one line on stderr.

    Parameters
    ----------
    echo : bool
        Print each event's message on stderr as it happens (default True).
    """

    def __init__(self, echo: bool = True) -> None:
        self.echo = echo
        self.events: list[dict[str, Any]] = []

    def emit(self, kind: str, message: str, *, echo: bool = True, **fields: Any) -> dict[str, Any]:
        """Record one event (and echo it unless ``echo=False``: a summary kept for ``--json``); returns it."""
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        event = {"kind": kind, "message": message, "time": now, **fields}
        self.events.append(event)
        if self.echo and echo:
            print(LOG_PREFIX + message, file=sys.stderr, flush=True)
        return event


def merge_events(*lists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events of several logs in time order (each event once)."""
    seen, merged = set(), []
    for event in sorted((e for events in lists for e in events), key=lambda e: e["time"]):
        if id(event) not in seen:
            seen.add(id(event))
            merged.append(event)
    return merged
