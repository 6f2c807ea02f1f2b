"""Progress of runs: a rich bar on a terminal, plain log lines otherwise.

Units are listed lazily, so the bar's total grows as units are listed; its description shows
the units done and listed (``[3/12 units]``, ``[3/12+ units]`` while more are being planned).
Until every unit is listed, the total is not known: neither the bar nor the log line shows a
percentage or an ETA then (a run whose first units were listed could still be mostly ahead).
Progress goes to stderr, so ``--json`` output on stdout stays machine-readable.

Modes (``--progress``, :data:`PROGRESS_MODES`): ``bar`` (rich: samples done, images/s,
elapsed, ETA), ``log`` (one plain line every :data:`LOG_INTERVAL` seconds: units done, samples
done, samples/s, ETA -- for output redirected to a file, a CI log, ``nohup``), ``none``, and
``auto``: the bar when stderr is a terminal, else log lines. ``bar`` without a terminal falls
back to log lines, with a note (an animated bar in a file is unreadable).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Throughput of a task in images per second."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("  -- img/s" if speed is None else f"{speed:7.1f} img/s", style="cyan")


class RunProgress:
    """One bar for a run's pending samples; totals grow as units are listed."""

    def __init__(self, description: str, total_samples: int = 0, total_units: int | None = None, *,
                 enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty()
        self.enabled = enabled
        self.description = description
        self.units_listed = 0
        self.units_done = 0
        self.total_units = total_units
        self._total = total_samples
        self._progress: Progress | None = None
        self._task = None

    def __enter__(self) -> RunProgress:
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(), TaskProgressColumn(),
                RateColumn(), TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                console=Console(stderr=True), transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self._label(), total=self.known_total())
        return self

    def _label(self) -> str:
        if self.total_units is not None:
            return f"{self.description} [{self.units_done}/{self.total_units} units]"
        return f"{self.description} [{self.units_done}/{self.units_listed}+ units]"

    def known_total(self) -> int | None:
        """The samples to do, once every unit is listed (None before: no percentage, no ETA)."""
        return (self._total or None) if self.total_units is not None else None

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=self._label(), total=self.known_total())

    def add_samples(self, n_samples: int) -> None:
        """A unit of ``n_samples`` was listed."""
        self.units_listed += 1
        self._total += n_samples
        self._refresh()

    def set_units_total(self, n_units: int) -> None:
        """Every unit is listed: the totals are final."""
        self.total_units = n_units
        self._refresh()

    def advance(self, n_samples: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n_samples)

    def unit_done(self) -> None:
        self.units_done += 1
        self._refresh()

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)


#: The choices of ``--progress``.
PROGRESS_MODES = ("auto", "bar", "log", "none")
#: Seconds between two log lines (one every 10-30 s; ``ROBUSTLAB_PROGRESS_INTERVAL`` overrides it).
LOG_INTERVAL = 15.0
INTERVAL_ENV = "ROBUSTLAB_PROGRESS_INTERVAL"


def resolve_progress(mode: str | bool | None, stream: TextIO | None = None) -> tuple[str, str | None]:
    """The mode to use -- ``"bar"``, ``"log"`` or ``"none"`` -- and a note when ``bar`` was asked
    for without a terminal (then ``log``).

    ``mode``: one of :data:`PROGRESS_MODES`, or the older booleans: None = ``auto``, True =
    ``bar``, False = ``none``. ``stream``: where progress goes (default stderr).
    """
    from ..errors import unknown_name

    if mode is None or mode is True or mode is False:
        mode = {None: "auto", True: "bar", False: "none"}[mode]
    if mode not in PROGRESS_MODES:
        raise unknown_name("progress mode", str(mode), PROGRESS_MODES)
    stream = sys.stderr if stream is None else stream
    terminal = bool(getattr(stream, "isatty", lambda: False)())
    if mode == "auto":
        return ("bar" if terminal else "log"), None
    if mode == "bar" and not terminal:
        return "log", "--progress bar: stderr is not a terminal, so progress is printed as log lines instead."
    return mode, None


def duration_text(seconds: float) -> str:
    """``"2 min 05 s"``, ``"1 h 04 min"``, ``"42 s"``: a duration for a log line."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {(seconds % 3600) // 60:02d} min"


class LogProgress:
    """:class:`RunProgress`'s interface, as a plain line every ``interval`` seconds on ``stream``:

    ``corrupted 3f2a1b: 12/96 units, 1,800/14,400 samples (12 %), 85.3 samples/s, ETA 2 min 28 s``

    (``12/40+ units, 1,800 samples done, 85.3 samples/s, ETA when every unit is listed`` while units
    are still being listed: no percentage and no ETA before the total is known), and a last line
    when the run ends. A daemon thread writes the lines, so a slow batch does not
    silence them.
    """

    def __init__(self, description: str, total_samples: int = 0, total_units: int | None = None, *,
                 interval: float = LOG_INTERVAL, stream: TextIO | None = None, note: str | None = None) -> None:
        self.description = description
        self.units_listed = 0
        self.units_done = 0
        self.total_units = total_units
        self.samples_done = 0
        self._total = total_samples
        self.interval = float(interval)
        self.stream = sys.stderr if stream is None else stream
        self.note = note
        self._start = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LogProgress:
        self._start = time.perf_counter()
        if self.note:
            self._write(self.note)
        self._thread = threading.Thread(target=self._loop, name="robustlab-progress-log", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._write(self.line())

    def _write(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed stream: progress is best effort
            pass

    def line(self, final: bool = False) -> str:
        """The current progress line (``final``: the run's last line)."""
        elapsed = time.perf_counter() - self._start
        rate = self.samples_done / elapsed if elapsed > 0 else 0.0
        units = (f"{self.units_done}/{self.total_units} units" if self.total_units is not None
                 else f"{self.units_done}/{self.units_listed}+ units")
        known = self.total_units is not None or final
        if known:
            samples = f"{self.samples_done:,}" + (f"/{self._total:,}" if self._total else "") + " samples"
            if self._total:
                samples += f" ({100 * self.samples_done / self._total:.0f} %)"
        else:  # more units may come: a percentage of what is listed so far would mislead
            samples = f"{self.samples_done:,} samples done"
        if final:
            return f"{self.description}: done, {units}, {samples} in {duration_text(elapsed)} ({rate:.1f} samples/s)"
        left = (self._total - self.samples_done) / rate if self._total and rate > 0 else None
        if not known:
            eta = "ETA when every unit is listed"
        elif left is None:
            eta = "ETA unknown"
        else:
            eta = f"ETA {duration_text(left)}"
        return f"{self.description}: {units}, {samples}, {rate:.1f} samples/s, {eta}"

    def add_samples(self, n_samples: int) -> None:
        self.units_listed += 1
        self._total += n_samples

    def set_units_total(self, n_units: int) -> None:
        self.total_units = n_units

    def advance(self, n_samples: int) -> None:
        self.samples_done += n_samples

    def unit_done(self) -> None:
        self.units_done += 1

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if exc[0] is None:
            self._write(self.line(final=True))


def run_progress(description: str, mode: str | bool | None = None, *, stream: TextIO | None = None,
                 interval: float | None = None) -> RunProgress | LogProgress:
    """The progress display of a run for ``mode`` (see :func:`resolve_progress`): a rich bar,
    log lines every ``interval`` seconds (default :data:`LOG_INTERVAL`, or ``$ROBUSTLAB_PROGRESS_INTERVAL``),
    or a disabled bar (``none``)."""
    import os

    chosen, note = resolve_progress(mode, stream)
    if interval is None:
        try:
            interval = float(os.environ.get(INTERVAL_ENV, LOG_INTERVAL))
        except ValueError:
            interval = LOG_INTERVAL
    if chosen == "log":
        return LogProgress(description, interval=interval, stream=stream, note=note)
    return RunProgress(description, enabled=chosen == "bar")
