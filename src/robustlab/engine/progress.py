"""Progress bars for runs (rich): samples done, throughput in images/s, elapsed time and ETA.

Units are listed lazily, so the bar's total grows as units are listed; its description shows
the units done and listed (``[3/12 units]``, ``[3/12+ units]`` while more are being planned).
Bars go to stderr, so ``--json`` output on stdout stays machine-readable.
"""

from __future__ import annotations

import sys

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
            self._task = self._progress.add_task(self._label(), total=self._total or None)
        return self

    def _label(self) -> str:
        if self.total_units is not None:
            return f"{self.description} [{self.units_done}/{self.total_units} units]"
        return f"{self.description} [{self.units_done}/{self.units_listed}+ units]"

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=self._label(), total=self._total or None)

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
