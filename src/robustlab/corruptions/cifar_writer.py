"""Writing the CIFAR-10-C and CIFAR-10-C-bar array layouts from the CIFAR-10 test set:
``robustlab corrupt SRC DST --set cifar10-c-bar`` (or ``--set cifar10-c``).

Output, the layout of the released sets (and of :func:`robustlab.corruptions.released.read_cifar_c`
and :func:`robustlab.corruptions.cbar.released.discover_cbar`)::

    DST/<corruption>.npy          (5 N, 32, 32, 3) uint8, severity-major: rows (s-1) N .. s N - 1
                                  are severity s (N = 10,000 for the CIFAR-10 test set)
    DST/labels.npy                (5 N,): the test labels, once per severity (int64 for -bar,
                                  uint8 for CIFAR-10-C, as the reference scripts write them)
    DST/robustlab-corrupt.json    the settings and the summary of the last run

``cifar10-c-bar`` writes the 10 corruptions of ``make_cifar10_c_bar.py`` with its severity table
(``cifar10_c_bar.csv``); ``cifar10-c`` the 19 of Hendrycks & Dietterich's ``make_cifar_c.py``
with the ``cifar`` profile. No encoding: the arrays hold the kernels' uint8 output.

Source: the CIFAR-10 python version as torchvision downloads it: a root holding
``cifar-10-batches-py/``, that folder, or its ``test_batch`` file. The file is a pickle; it is
read with an unpickler that builds numpy arrays and nothing else
(:func:`robustlab.safeload.load_cifar_batch`).

Guarantees:

- **Row i of severity s is** ``corrupt_item(test[i], c, s, seed=seed, item=str(i), profile="cifar")``:
  the image robustlab's ``corrupted`` benchmark makes on the fly from row i of the clean test
  array (whose sample ids are the row numbers). Identical whatever the worker count.
- **Resumable, nothing half-written.** Each corruption's array is filled under a temporary name
  and renamed when complete; a rerun skips the complete ones and removes the temporary files
  of a killed run. Other settings than those on disk (seed, set) are refused; a changed
  ``test_batch`` makes every array again.

(The reference scripts draw from numpy's global state in their data-loader workers, unseeded,
so their files differ from run to run; robustlab's are reproducible, pixel-for-pixel the
reference kernels' output for the seeds it derives.)
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import interrupts
from ..data.builds import (TaskResult, check_destination, check_resume, output_lock, renew_sources, running,
                           write_summary)
from ..data.cifar import find_test_batch
from ..data.jobs import run_jobs, worker_count
from ..errors import DataError, InputError
from ..fsutil import atomic_write_npy, ensure_dir, explain_os_error, is_temporary_name, temporary_path
from ..safeload import load_cifar_batch
from .api import corrupt_batch
from .dataset import ARRAY_LAYOUTS, RESUME_KEYS, SUMMARY_NAME, CorruptSettings, CorruptSummary

__all__ = ["corrupt_cifar", "corrupt_cifar_with_progress"]

#: Images per task: small enough to keep every worker busy, large enough to amortise the pickling.
CHUNK = 500
LABELS_NAME = "labels.npy"
#: The dtype of ``labels.npy`` as each reference script writes it (``make_cifar_c.py``: uint8;
#: ``make_cifar10_c_bar.py``: int64).
LABEL_DTYPES = {"cifar10-c": np.uint8, "cifar10-c-bar": np.int64}


@dataclass(frozen=True)
class ChunkTask:
    """Rows ``start .. start + len(images)`` of the test set, corrupted by one corruption at one severity."""

    corruption: str
    severity: int
    start: int
    images: np.ndarray
    seed: int
    profile: str


def run_chunk(task: ChunkTask) -> tuple[ChunkTask, np.ndarray | None, str | None]:
    """Corrupt a chunk as the ``corrupted`` benchmark corrupts a batch of array rows (ids: the row
    numbers): (task, uint8 (n, 32, 32, 3) or None, error message or None)."""
    ids = [str(task.start + k) for k in range(len(task.images))]
    try:
        out = corrupt_batch(task.images, task.corruption, task.severity, seed=task.seed, ids=ids,
                            profile=task.profile)
    except Exception as exc:  # a kernel failed: this corruption's array cannot be completed
        interrupts.check()  # unless Ctrl-C was swallowed inside it
        return task, None, f"rows {ids[0]}-{ids[-1]}: {type(exc).__name__}: {exc}"
    return task, np.stack(out), None


def array_complete(path: Path, rows: int) -> bool:
    """Whether ``path`` is a finished array of this layout: a ``.npy`` of (rows, 32, 32, 3) uint8."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return False
    return array.dtype == np.uint8 and array.shape == (rows, 32, 32, 3)


class _ArrayBuild:
    """One corruption's array being filled under a temporary name (renamed when every row is in)."""

    def __init__(self, final: Path, rows: int) -> None:
        self.final, self.left = final, rows
        self.tmp = temporary_path(final)
        try:
            self.array = np.lib.format.open_memmap(self.tmp, mode="w+", dtype=np.uint8, shape=(rows, 32, 32, 3))
        except OSError as exc:
            self.tmp.unlink(missing_ok=True)
            raise DataError(explain_os_error(exc, final, "write")) from None

    def put(self, start: int, block: np.ndarray) -> bool:
        """Store rows; True when the array is complete (then flushed and renamed)."""
        self.array[start:start + len(block)] = block
        self.left -= len(block)
        if self.left:
            return False
        try:
            self.array.flush()
            del self.array
            os.replace(self.tmp, self.final)
        except OSError as exc:
            self.discard()
            raise DataError(explain_os_error(exc, self.final, "write")) from None
        return True

    def discard(self) -> None:
        self.__dict__.pop("array", None)
        self.tmp.unlink(missing_ok=True)


def _remove_stale(dst: Path) -> None:
    for entry in os.scandir(dst):
        if is_temporary_name(entry.name) and entry.is_file():
            Path(entry.path).unlink(missing_ok=True)


def _tasks(images: np.ndarray, todo: list[str], settings: CorruptSettings) -> Iterator[ChunkTask]:
    """Corruption-major, so that few arrays are open at once."""
    for corruption in todo:
        for severity in settings.severities:
            for start in range(0, len(images), CHUNK):
                yield ChunkTask(corruption, severity, start, images[start:start + CHUNK], settings.seed,
                                settings.profile)


def corrupt_cifar(src: str | os.PathLike, dst: str | os.PathLike, settings: CorruptSettings, *,
                  workers: int | None = None, progress: Callable[[int], None] | None = None,
                  on_start: Callable[[CorruptSummary, int], None] | None = None) -> CorruptSummary:
    """Write the CIFAR-10-C(-bar) arrays of the CIFAR-10 test set ``src`` into ``dst`` (see the module docstring).

    Parameters
    ----------
    src : path
        The CIFAR-10 root, its ``cifar-10-batches-py`` folder or its ``test_batch`` file.
    dst : path
        Output folder; created if needed; an earlier run's is resumed.
    settings : CorruptSettings
        From :func:`robustlab.corruptions.dataset.make_settings` with ``release`` one of
        :data:`ARRAY_LAYOUTS` (all five severities).
    workers : int, optional
        Processes (default: every core). The arrays do not depend on it.
    progress, on_start
        As :func:`robustlab.corruptions.dataset.corrupt_dataset` (outputs = images x corruptions x 5).

    Returns
    -------
    CorruptSummary
        Also written to ``dst/robustlab-corrupt.json``. A corruption whose kernel failed is listed
        in ``failures`` and its array is not written.
    """
    if settings.release not in ARRAY_LAYOUTS:
        raise InputError(f"corrupt_cifar writes the {' and '.join(ARRAY_LAYOUTS)} layouts; settings.release is "
                         f"{settings.release!r}.")
    if tuple(settings.severities) != (1, 2, 3, 4, 5):
        raise InputError(f"--set {settings.release} holds all five severities in each array (severity-major); "
                         "leave out --severities.")
    workers = worker_count(workers)
    batch = find_test_batch(src)
    check_destination(dst, CorruptSummary.tool, SUMMARY_NAME, source=batch.parent)
    images, labels = load_cifar_batch(batch)
    dst = ensure_dir(dst)
    with output_lock(dst, CorruptSummary.tool):
        return _write_locked(batch, images, labels, dst, settings, workers, progress, on_start)


def _remove_arrays(dst: Path, settings: CorruptSettings, changed: list[str]) -> None:
    """The CIFAR-10 test batch changed: every array made from it is stale."""
    if changed:
        for corruption in settings.corruptions:
            (dst / f"{corruption}.npy").unlink(missing_ok=True)


def _write_locked(batch: Path, images: np.ndarray, labels: np.ndarray, dst: Path, settings: CorruptSettings,
                  workers: int, progress, on_start) -> CorruptSummary:
    check_resume(dst, SUMMARY_NAME, settings, (*RESUME_KEYS, "release"), what="arrays")
    _remove_stale(dst)
    rows = 5 * len(images)
    changed, _ = renew_sources(dst, batch.parent, [batch.name], functools.partial(_remove_arrays, dst, settings))
    summary = CorruptSummary(str(batch), str(dst), "cifar-10 test_batch", settings, len(images),
                             len(settings.corruptions) * rows, workers=workers)
    summary.sources_changed = changed
    started = time.perf_counter()
    write_summary(dst, SUMMARY_NAME, summary)
    tiled = np.tile(labels.astype(LABEL_DTYPES[settings.release]), 5)
    label_path = dst / LABELS_NAME
    if not _same_labels(label_path, tiled):
        atomic_write_npy(label_path, tiled)
    todo = [c for c in settings.corruptions if not array_complete(dst / f"{c}.npy", rows)]
    summary.skipped = (len(settings.corruptions) - len(todo)) * rows
    if on_start is not None:
        on_start(summary, len(todo) * rows)
    open_arrays: dict[str, _ArrayBuild] = {}
    failed: set[str] = set()
    n_tasks = len(todo) * 5 * -(-len(images) // CHUNK)
    with running(summary, dst, SUMMARY_NAME, started):
        try:
            for task, block, error in run_jobs(run_chunk, _tasks(images, todo, settings),
                                               min(workers, max(1, n_tasks)), preload=[_kernels_module()]):
                n = len(task.images)
                if error is not None or task.corruption in failed:
                    if task.corruption not in failed:  # its rows stored so far will not be written either
                        failed.add(task.corruption)
                        build = open_arrays.pop(task.corruption, None)
                        if build is not None:
                            summary.written -= rows - build.left
                            summary.failed += rows - build.left
                            build.discard()
                    summary.record(TaskResult(task.corruption, 0, n, "error" if error else None,
                                              f"{task.corruption}/{task.severity}: {error}" if error else None))
                else:
                    build = open_arrays.get(task.corruption)
                    if build is None:
                        build = open_arrays[task.corruption] = _ArrayBuild(dst / f"{task.corruption}.npy", rows)
                    if build.put((task.severity - 1) * len(images) + task.start, block):
                        del open_arrays[task.corruption]
                    summary.record(TaskResult(task.corruption, n))
                if progress is not None:
                    progress(n)
                interrupts.check()  # a Ctrl-C swallowed inside a kernel that then went on
        finally:
            for build in open_arrays.values():  # interrupted or failed: no half-filled array is left
                build.discard()
    return summary


def _kernels_module() -> str:
    from . import kernels

    return kernels.__name__


def _same_labels(path: Path, labels: np.ndarray) -> bool:
    try:
        old = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return False
    return old.dtype == labels.dtype and old.shape == labels.shape and bool(np.array_equal(old, labels))


def corrupt_cifar_with_progress(src: str | os.PathLike, dst: str | os.PathLike, settings: CorruptSettings, *,
                                workers: int | None = None, console=None) -> CorruptSummary:
    """:func:`corrupt_cifar` with a progress bar (rate and ETA) on ``console`` (stderr)."""
    from ..data.builds import run_with_progress

    return run_with_progress(corrupt_cifar, "corrupting", console=console, src=src, dst=dst, settings=settings,
                             workers=workers)
