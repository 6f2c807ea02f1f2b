"""Progress of downloads and extractions: a bar on a terminal, log lines otherwise.

``mode`` is ``bar`` (rich, on a terminal), ``log`` (a line on stderr every ``interval`` seconds and
one when a file is done), ``none``, or ``auto``: the bar when stderr is a terminal, else log lines,
so output redirected to a file or a CI log is never silent.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from ...errors import unknown_name

MODES = ("auto", "bar", "log", "none")
INTERVAL = 10.0


def human_bytes(n: float | None) -> str:
    """``1.3 GB``: bytes in decimal units, as publishers show sizes."""
    if n is None:
        return "?"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


class TransferProgress:
    """Reports the bytes of one named transfer at a time (see the module docstring)."""

    def __init__(self, mode: str = "auto", *, stream=None, interval: float = INTERVAL) -> None:
        if mode not in MODES:
            raise unknown_name("progress mode", mode, MODES)
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if getattr(self.stream, "isatty", lambda: False)() else "log"
        self.mode, self.interval = mode, interval
        self._bar = None
        self._task = None
        self._label, self._last, self._start = "", 0.0, 0.0

    def message(self, text: str) -> None:
        if self.mode == "none":
            return
        if self._bar is not None:
            self._bar.console.print(text)
        else:
            print(text, file=self.stream, flush=True)

    def start(self, label: str, total: int | None) -> Callable[[int, int | None], None]:
        """Begin a transfer; returns ``update(done, total)`` to call as bytes arrive."""
        self.finish()
        self._label, self._start, self._last = label, time.monotonic(), time.monotonic()
        if self.mode == "bar":
            from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                       TransferSpeedColumn)

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeRemainingColumn(), transient=False)
            self._bar.start()
            self._task = self._bar.add_task(label, total=total)
        return self.update

    def update(self, done: int, total: int | None) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total)
        elif self.mode == "log" and time.monotonic() - self._last >= self.interval:
            self._last = time.monotonic()
            self.message(self._line(done, total))

    def _line(self, done: int, total: int | None, final: bool = False) -> str:
        spent = max(time.monotonic() - self._start, 1e-9)
        share = f" ({100 * done / total:.0f} %)" if total else ""
        return (f"{self._label}: {'done, ' if final else ''}{human_bytes(done)} of {human_bytes(total)}{share}, "
                f"{human_bytes(done / spent)}/s")

    def done(self, done: int, total: int | None) -> None:
        """End the current transfer with a final line (log mode) or a full bar."""
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total or done)
        elif self.mode == "log":
            self.message(self._line(done, total, final=True))
        self.finish()

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
