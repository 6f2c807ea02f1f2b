"""``robustlab store check``: does the catalog agree with its predictions folder?

It lists

- **orphan files**: files in the predictions folder that no catalog row names (a unit written to
  Parquet whose catalog row never came: the store stopped mid-run, a second attempt of a unit,
  a killed write's hidden ``.*.tmp`` file), and run folders the catalog does not know;
- **missing files**: catalog rows whose file is gone (resuming the run recomputes those units);
- **changed files**: files whose bytes are not the ones recorded when they were written
  (replaced or swapped outside robustlab: their numbers cannot be trusted);
- **stale runs**: runs left ``running`` by a process that is gone (shown as ``interrupted``),
  and the records of gone holders.

``--repair`` removes the orphan files, marks stale runs ``interrupted`` and clears gone holders.
It never touches a unit the catalog lists: missing and changed units are reported with the
command that recomputes them. Files of a run a live process is working on, and files younger
than a minute, are left alone (a unit being written right now looks like an orphan for an
instant).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .home import MARKER_FILE
from .predictions import file_sha256

#: Orphan files younger than this (seconds) are left alone: a unit may be being written.
MIN_ORPHAN_AGE = 60.0


@dataclass
class StoreCheck:
    """What :func:`check_store` found (and removed with ``repair``).

    Attributes
    ----------
    predictions_dir : Path
        The folder checked.
    units : int
        Units the catalog lists.
    orphans : list of Path
        Files no catalog row names (removed when ``repaired``).
    in_use : list of Path
        Orphan-looking files kept because a live process works on their run, or they are new.
    missing, changed : list of (run id, unit, Path)
        Units whose file is gone, or whose bytes differ from the ones recorded.
    unverified : int
        Units stored before the catalog kept file hashes (not checked for changes).
    stale_runs : list of str
        Runs left ``running`` by a process that is gone.
    gone_holders : int
        Records of processes that are gone (cleared when ``repaired``).
    repaired : bool
        Whether ``repair`` ran.
    """

    predictions_dir: Path
    units: int = 0
    orphans: list[Path] = field(default_factory=list)
    in_use: list[Path] = field(default_factory=list)
    missing: list[tuple[str, str, Path]] = field(default_factory=list)
    changed: list[tuple[str, str, Path]] = field(default_factory=list)
    unverified: int = 0
    stale_runs: list[str] = field(default_factory=list)
    gone_holders: int = 0
    repaired: bool = False

    @property
    def clean(self) -> bool:
        """True when nothing needs attention (after a repair: nothing it could not fix)."""
        fixed = self.repaired
        return (not self.missing and not self.changed
                and (fixed or (not self.orphans and not self.stale_runs and not self.gone_holders)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "predictions_dir": str(self.predictions_dir), "units": self.units, "clean": self.clean,
            "repaired": self.repaired, "orphans": [str(p) for p in self.orphans],
            "in_use": [str(p) for p in self.in_use],
            "missing": [{"run_id": r, "unit": u, "file": str(p)} for r, u, p in self.missing],
            "changed": [{"run_id": r, "unit": u, "file": str(p)} for r, u, p in self.changed],
            "unverified": self.unverified, "stale_runs": self.stale_runs, "gone_holders": self.gone_holders,
        }

    def format(self) -> str:
        """A plain-text report, one finding per line."""
        lines = [f"predictions folder {self.predictions_dir}: {self.units} unit(s) in the catalog"]
        verb = "removed" if self.repaired else "found"
        if self.orphans:
            lines.append(f"{len(self.orphans)} orphan file(s) {verb} (no catalog row names them):")
            lines += [f"  {p}" for p in self.orphans]
        if self.in_use:
            lines.append(f"{len(self.in_use)} file(s) kept: a live process works on their run, or they are new:")
            lines += [f"  {p}" for p in self.in_use]
        for title, rows in (("missing file(s): the catalog lists them, the folder lacks them", self.missing),
                            ("changed file(s): their bytes differ from the ones stored", self.changed)):
            if rows:
                lines.append(f"{len(rows)} {title}:")
                lines += [f"  run {r} unit {u}: {p}" for r, u, p in rows]
        if self.missing or self.changed:
            lines.append("  to recompute such a unit: store.delete_unit(RUN, UNIT) in Python, then run the same "
                         "`robustlab evaluate` command again (a changed file may also be put back).")
        if self.unverified:
            lines.append(f"{self.unverified} unit(s) were stored before file hashes were kept: not checked for changes")
        if self.stale_runs:
            state = "marked interrupted" if self.repaired else "left running by a process that is gone (shown as " \
                                                               "interrupted)"
            lines.append(f"{len(self.stale_runs)} run(s) {state}: {', '.join(self.stale_runs)}")
        if self.gone_holders:
            lines.append(f"{self.gone_holders} record(s) of gone processes {'cleared' if self.repaired else 'found'}")
        if self.clean:
            lines.append("repaired." if self.repaired and (self.orphans or self.stale_runs or self.gone_holders)
                         else "the catalog and the predictions folder agree.")
        elif not self.repaired and (self.orphans or self.stale_runs or self.gone_holders):
            lines.append("run `robustlab store check --repair` to remove the orphans and clear stale states.")
        return "\n".join(lines)


def check_store(store, *, repair: bool = False, verify: bool = True, min_age: float = MIN_ORPHAN_AGE) -> StoreCheck:
    """Compare a store's catalog with its predictions folder (see the module docstring).

    Parameters
    ----------
    store : Store
        An open store.
    repair : bool
        Remove orphan files, mark stale runs interrupted, clear gone holders.
    verify : bool
        Hash every file and compare with the recorded hash (reads every file once).
    min_age : float
        Seconds: younger orphan-looking files are left alone.
    """
    folder = store.require_predictions()
    report = StoreCheck(folder)
    rows = store.unit_files()
    report.units = len(rows)
    known = {run.id for run in store.list_runs()}
    busy = {h.run_id for h in store.holders() if h.alive}
    named = set()
    for run_id, unit, file, sha256 in rows:
        path = folder / file
        named.add(os.path.normpath(path))
        if not path.is_file():
            report.missing.append((run_id, unit, path))
        elif sha256 is None:
            report.unverified += 1
        elif verify and file_sha256(path) != sha256:
            report.changed.append((run_id, unit, path))
    now = time.time()
    for path in sorted(_files(folder)):
        if os.path.normpath(path) in named or path.parent == folder and path.name == MARKER_FILE:
            continue
        run_id = path.relative_to(folder).parts[0]
        try:
            young = now - path.stat().st_mtime < min_age
        except OSError:
            continue
        (report.in_use if run_id in busy and run_id in known or young else report.orphans).append(path)
    report.stale_runs = store.stale_runs()
    report.gone_holders = sum(1 for h in store.holders() if not h.alive)
    if repair:
        for path in report.orphans:
            path.unlink(missing_ok=True)
        _remove_empty_folders(folder)
        for run_id in report.stale_runs:
            store.set_run_status(run_id, "interrupted")
        store.clear_gone_holders()
        report.repaired = True
    return report


def _files(folder: Path):
    for root, _dirs, names in os.walk(folder):
        for name in names:
            yield Path(root) / name


def _remove_empty_folders(folder: Path) -> None:
    for root, dirs, _names in os.walk(folder, topdown=False):
        for name in dirs:
            try:
                (Path(root) / name).rmdir()
            except OSError:
                pass
