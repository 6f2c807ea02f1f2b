"""A rich progress bar for training and dataset builds: images done, images/s, ETA, a status text.

Bars go to stderr (stdout stays machine-readable) and are shown by default only when stderr
is a terminal.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from ..engine.progress import RateColumn


class ImageProgress:
    """One bar over ``total`` images with a free status text (e.g. the running loss)."""

    def __init__(self, description: str, total: int, *, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.description = description
        self.total = total
        self._progress: Progress | None = None
        self._task = None

    def __enter__(self) -> ImageProgress:
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                TaskProgressColumn(), RateColumn(), TextColumn("eta"), TimeRemainingColumn(),
                TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("{task.fields[status]}"),
                console=Console(stderr=True), transient=False)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.description, total=self.total, status="")
        return self

    def advance(self, images: int, status: str | None = None) -> None:
        if self._progress is not None:
            fields = {} if status is None else {"status": status}
            self._progress.update(self._task, advance=images, **fields)

    def set_total(self, total: int) -> None:
        self.total = total
        if self._progress is not None:
            self._progress.update(self._task, total=total)

    def describe(self, description: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=description)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
