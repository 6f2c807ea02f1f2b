"""Executors: how a run's pending units are computed. Plugins by name (``--executor local|ray``).

An executor takes the run's :class:`~robustlab.engine.work.UnitStream` (pending units, listed
lazily), loads each unit's batches with the benchmark's loader, runs ``predict`` with the model
and commits each finished unit to the store exactly once. Every executor computes the same
batches (consecutive slices of ``batch_size`` samples, never crossing a unit) with the same
code (:mod:`robustlab.engine.work`), so their stored columns are identical.

- ``local`` (:class:`LocalExecutor`): one :class:`torch.utils.data.DataLoader`; worker
  processes read, decode, corrupt and resize samples (uint8, shared memory) while this process
  runs batched inference (GPU when present, else CPU threads).
- ``ray`` (:class:`robustlab.engine.ray_executor.RayExecutor`, ``pip install "robustlab[ray]"``):
  Ray tasks load batches, actors that load the model once run inference, on a local Ray or the
  cluster at ``RAY_ADDRESS``.

A new executor is one file: subclass :class:`Executor`, declare its ``options`` (see
:mod:`robustlab.engine.schema`) and register it with :func:`register_executor` (another package
lists its module under the entry-point group ``robustlab.executors``); ``evaluate`` and the
command line pass it its options (:meth:`Executor.from_options`).
"""

from __future__ import annotations

import functools
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .. import interrupts
from ..data.jobs import cap_workers, exit_with_parent, pool_context
from ..errors import InputError
from ..registry import Registry
from .benchmark import Benchmark
from .progress import RunProgress, run_progress
from .schema import Option, OptionSchema
from .work import (
    BatchTask,
    SharedSources,
    UnitResults,
    UnitStream,
    UnitWork,
    load_batch,
    predict_batch,
    raise_batch_error,
    write_unit,
)


@dataclass
class ExecutionStats:
    """What one execution did: units and samples computed, samples skipped, time spent.

    ``first_batch_seconds``: from the start of the execution to the first batch's predictions
    (listing, loading and inference of the first batch). ``events``: what the user was told
    while it ran (see :mod:`robustlab.engine.events`)."""

    units: int = 0
    samples: int = 0
    skipped: int = 0
    seconds: float = 0.0
    store_seconds: float = 0.0
    first_batch_seconds: float | None = None
    by_unit: dict[str, int] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def images_per_second(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else float("nan")

    def merge(self, other: ExecutionStats) -> ExecutionStats:
        """Add another execution of the same run (a later pass) to this one; returns self."""
        self.units += other.units
        self.samples += other.samples
        self.skipped += other.skipped
        self.seconds += other.seconds
        self.store_seconds += other.store_seconds
        if self.first_batch_seconds is None:
            self.first_batch_seconds = other.first_batch_seconds
        self.by_unit.update(other.by_unit)
        self.events.extend(other.events)
        return self


@dataclass(frozen=True)
class ImagePreparer:
    """What workers need of the model: its pixel-space resize/crop, nothing more.

    Workers receive this small picklable object instead of the model (which may be large, or a
    user's class that cannot be pickled). Attributes: ``preprocessing`` (the adapter's
    :class:`~robustlab.models.Preprocessing`, or None), ``precomputed`` (True for result-file
    "models" that need no pixels) and ``max_pixels`` (the run's image-size limit, applied while
    a batch loads). Calling it prepares one uint8 HxWx3 image.
    """

    preprocessing: Any = None
    precomputed: bool = False
    max_pixels: int | None = None

    @classmethod
    def of(cls, model: Any, max_pixels: int | None = None) -> ImagePreparer:
        return cls(getattr(model, "preprocessing", None), bool(getattr(model, "precomputed", False)), max_pixels)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        return image if self.preprocessing is None else self.preprocessing.prepare_image(image)


@dataclass(frozen=True)
class ModelRef:
    """How an executor obtains the model: ``load()`` builds it (in this process, or in a Ray
    actor on another machine). ``model`` is a spec string or an object; the options are those
    of :func:`robustlab.models.load_model`.

    ``loaded``: the model already built in this process to hash it (returned by ``load()``
    here, never pickled: another process builds its own). ``digest``: the run's model hash;
    a model built elsewhere from a spec is checked against it, so every process runs the model
    the run is keyed by (a factory that builds a different model each call is refused).
    ``weights_digest``: for a model given as an object, the hash of its weights alone
    (:func:`robustlab.models.identity.weights_hash`, taken when the reference is pickled for
    another process), which is what that process checks: the object's code travels with it,
    while the code identity of a class defined in the user's script depends on the file the
    process runs as ``__main__`` (a Ray worker runs Ray's own)."""

    model: Any
    preprocessing: Any = None
    num_classes: int | None = None
    device: Any = None
    wrap: Any = None
    loaded: Any = field(default=None, compare=False, repr=False)
    digest: str | None = None
    weights_digest: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = {**self.__dict__, "loaded": None}
        if self.loaded is not None and self.weights_digest is None and not isinstance(self.model, str):
            from ..models.identity import weights_hash

            state["weights_digest"] = weights_hash(self.loaded)  # hashed only when the model leaves this process
        return state

    def load(self, device: Any = None):
        if self.loaded is not None and (device is None or str(device) == str(self.device)):
            return self.loaded
        from ..models import load_model

        model = load_model(self.model, preprocessing=self.preprocessing, num_classes=self.num_classes,
                           device=self.device if device is None else device, wrap=self.wrap)
        # a spec is rebuilt here: its whole identity must match; an object arrived with its code
        # (pickled), so its weights are what can differ (see weights_digest)
        expected = self.digest if isinstance(self.model, str) else self.weights_digest
        if expected is not None:
            from ..errors import ModelError
            from ..models.identity import HASH_LENGTH, model_hash, weights_hash

            built = model_hash(model)[:HASH_LENGTH] if isinstance(self.model, str) else weights_hash(model)
            if built != expected:
                raise ModelError(f"the model built here ({built}) is not the model this run is keyed by "
                                 f"({expected}): {getattr(model, 'name', self.model)} builds a different model "
                                 "on each call (random weights? a file that changed?). Seed its initialisation "
                                 "or load fixed weights, then run again.")
        return model


class Executor:
    """Base class: ``run`` computes the stream's units and commits them to the store.

    A subclass sets ``name`` and ``options`` (what its constructor takes, declared once: the
    engine and the command line pass it exactly these, see :meth:`from_options`)."""

    name: ClassVar[str] = ""
    #: The options its constructor takes (:class:`~robustlab.engine.schema.Option`).
    options: ClassVar[tuple[Option, ...]] = ()

    @classmethod
    def schema(cls) -> OptionSchema:
        return OptionSchema(f"the {cls.name} executor", cls.options)

    @classmethod
    def from_options(cls, **options: Any) -> Executor:
        """An executor built from ``options`` (None: not given): options it does not declare are
        refused with a did-you-mean, the others passed to the constructor with their defaults."""
        return cls(**cls.schema().resolve(options))

    def run(self, model: ModelRef, benchmark: Benchmark, config: dict, stream: UnitStream, store, run_id: str, *,
            batch_size: int = 64, progress: str | bool | None = None, description: str = "evaluating") -> ExecutionStats:
        raise NotImplementedError  # pragma: no cover - abstract


#: Executors by name. ``ray`` lives in :mod:`robustlab.engine.ray_executor` (imported on first
#: lookup; it needs the ``ray`` extra only when used); other packages list theirs under the
#: entry-point group ``robustlab.executors``.
EXECUTORS: Registry[type[Executor]] = Registry("executor", plugins=("robustlab.engine.ray_executor",),
                                               entry_points="robustlab.executors")


def register_executor(cls: type[Executor]) -> type[Executor]:
    """Class decorator: register an :class:`Executor` subclass under its ``name``."""
    if not cls.name:
        raise InputError(f"executor class {cls.__name__} needs a non-empty name.")
    EXECUTORS.add(cls.name, cls)
    return cls


def get_executor(name: str | Executor = "local", **options: Any) -> Executor:
    """An executor by name (``local``, ``ray``) built from ``options`` (:meth:`Executor.from_options`),
    or ``name`` itself when it is an executor (then no options may be given)."""
    if isinstance(name, Executor):
        given = sorted(k for k, v in options.items() if v is not None)
        if given:
            raise InputError(f"executor options ({', '.join(given)}) go to the executor's constructor; "
                             f"{type(name).__name__} is already built.")
        return name
    return EXECUTORS.get(name).from_options(**options)


def executor_of_option(name: str) -> str | None:
    """The first registered executor that declares the option ``name`` (None: none does)."""
    for executor in EXECUTORS.names():
        if name in EXECUTORS.get(executor).schema():
            return executor
    return None


def check_batch_size(batch_size: int) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise InputError(f"batch size must be a positive integer; got {batch_size!r}.")
    return int(batch_size)


# --- the batch loop shared by executors --------------------------------------------------------


class UnitLedger:
    """Bookkeeping of units in flight: their results, the progress bar, the stats and the
    commits to the store. Executors feed it batches (``expect``, ``record``)."""

    def __init__(self, store, run_id: str, batch_size: int, bar: RunProgress, stats: ExecutionStats,
                 on_unit_done: Callable[[UnitWork], None] | None = None) -> None:
        self.store, self.run_id, self.batch_size = store, run_id, batch_size
        self.bar, self.stats = bar, stats
        self.open: dict[str, UnitResults] = {}
        self.on_unit_done = on_unit_done

    def expect(self, work: UnitWork) -> None:
        """A unit was listed: show it, and commit it at once when it has no samples."""
        self.bar.add_samples(work.size)
        results = UnitResults(work, self.batch_size)
        if results.n_batches == 0:
            self._commit(results)
        else:
            self.open[work.key] = results

    def record(self, batch, columns) -> None:
        """One batch's predictions (None when no sample of it loaded). A Ctrl-C that a library
        swallowed while the batch was made stops the run here, its unit stored when complete."""
        results = self.open[batch.unit]
        if not results.add(batch, columns):
            return
        self.bar.advance(len(batch) + len(batch.problems))
        if results.complete:
            del self.open[batch.unit]
            self._commit(results)
        interrupts.check()

    def _commit(self, results: UnitResults) -> None:
        t0 = time.perf_counter()
        n, skipped = write_unit(self.store, self.run_id, results)
        self.stats.store_seconds += time.perf_counter() - t0
        self.stats.units += 1
        self.stats.samples += n
        self.stats.skipped += skipped
        self.stats.by_unit[results.work.key] = n
        self.bar.unit_done()
        if self.on_unit_done is not None:
            self.on_unit_done(results.work)


def batch_tasks(stream: UnitStream, ledger: UnitLedger, batch_size: int,
                share: Callable[[UnitWork], Any] | None = None) -> Iterator[BatchTask]:
    """The run's batch tasks, listing units lazily; each unit is announced to the ledger first.

    ``share(work)`` returns what a task carries as its source (default the sample set itself)."""
    for work in stream:
        ledger.expect(work)
        if work.size == 0:
            continue
        source = work.source if share is None else share(work)
        for start in work.batch_starts(batch_size):
            yield BatchTask(work.key, source, start, min(start + batch_size, work.size))
    ledger.bar.set_units_total(stream.yielded)


# --- local executor ----------------------------------------------------------------------------------


class _BatchLoader:
    """``loader[task]`` -> the task's :class:`~robustlab.engine.records.Batch` (in a worker); the
    local executor's map-style dataset (torch is imported where it runs, not with this module)."""

    def __init__(self, benchmark: Benchmark, prepare: ImagePreparer) -> None:
        self.benchmark = benchmark
        self.prepare = prepare

    def __getitem__(self, task: BatchTask):
        import torch
        from torch.utils.data import get_worker_info

        shared = get_worker_info() is not None
        batch = load_batch(self.benchmark, task, self.prepare, stack=stack_shared if shared else None)
        if shared and isinstance(batch.pixels, list):  # torch tensors travel through shared memory
            batch.pixels = [torch.from_numpy(np.ascontiguousarray(p)) for p in batch.pixels]
        return batch


def pass_through(batch):
    """Collate function of the local DataLoader: tasks already load whole batches."""
    return batch


def stack_shared(arrays: list[np.ndarray]):
    """Stack equal-shape uint8 arrays into one tensor; in a worker, straight into shared memory
    (as torch's default collate does), so sending the batch to the main process copies nothing."""
    import torch
    from torch.utils.data import get_worker_info

    shape = (len(arrays), *arrays[0].shape)
    if get_worker_info() is None:
        return torch.from_numpy(np.stack(arrays))
    storage = torch.UntypedStorage._new_shared(int(np.prod(shape)) * arrays[0].dtype.itemsize)
    out = torch.empty(0, dtype=torch.from_numpy(arrays[0][:0]).dtype).set_(storage, 0, shape)
    np.stack(arrays, out=out.numpy())
    return out


def _init_worker(_: int, main_pid: int | None = None) -> None:
    """Worker set-up: exit soon after the run's main process dies (even by SIGKILL); Ctrl-C
    goes to the parent; OpenCV single-threaded (the workers share the cores; torch already
    limits itself to one thread in DataLoader workers). Kept this light on purpose:
    threadpoolctl and numba thread set-up cost ~10% of a short run's CPU time.

    Workers start from a forkserver (:func:`robustlab.data.jobs.pool_context`), never by forking
    this process: forking a process whose OpenCV or OpenMP thread pools are running leaves the
    child's pools deadlocked (seen: ``cv2.setNumThreads`` hanging forever in a forked worker)."""
    exit_with_parent(main_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import cv2

    cv2.setNumThreads(1)


#: Modules the forkserver imports once, so each worker starts in milliseconds.
WORKER_PRELOAD = ("torch", "robustlab.corruptions.kernels", "robustlab.data.classification", "robustlab.engine.work")


def default_workers() -> int:
    """Worker processes for decoding/corruption: the CPU count minus one for the main process."""
    return max(0, min(8, (os.cpu_count() or 1) - 1))


@register_executor
class LocalExecutor(Executor):
    """Worker processes decode/corrupt, this process batches inference (see the module docstring).

    Parameters
    ----------
    workers : int, optional
        Decoding/corruption worker processes (0: in this process; default
        :func:`default_workers`).
    """

    name = "local"
    options = (Option("workers", "int", help="Decoding/corruption processes (default: CPUs - 1; 0 = none).",
                      flags=("-j",)),)

    def __init__(self, workers: int | None = None) -> None:
        workers = default_workers() if workers is None else workers
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 0:
            raise InputError(f"workers must be 0 or more; got {workers!r}.")
        self.workers = cap_workers(int(workers))

    def run(self, model: ModelRef, benchmark: Benchmark, config: dict, stream: UnitStream, store, run_id: str, *,
            batch_size: int = 64, progress: str | bool | None = None, description: str = "evaluating",
            loaded=None) -> ExecutionStats:
        batch_size = check_batch_size(batch_size)
        net = loaded if loaded is not None else model.load()
        import torch
        from torch.utils.data import DataLoader

        device = getattr(net, "device", None) or torch.device("cpu")
        stats = ExecutionStats()
        start = time.perf_counter()
        workers = self.workers
        with run_progress(description, progress) as bar, SharedSources() as shared:
            handles: dict[str, Any] = {}

            def share(work: UnitWork):
                if not workers:
                    return work.source
                handles[work.key] = shared.share(work.source)
                return handles[work.key]

            def release(work: UnitWork) -> None:
                handle = handles.pop(work.key, None)
                if handle is not None:
                    shared.release(handle)

            ledger = UnitLedger(store, run_id, batch_size, bar, stats, on_unit_done=release)
            loader = DataLoader(
                _BatchLoader(benchmark, ImagePreparer.of(net, config.get("max_pixels"))),
                sampler=batch_tasks(stream, ledger, batch_size, share),
                batch_size=None, num_workers=workers, collate_fn=pass_through,
                pin_memory=device.type == "cuda",
                worker_init_fn=functools.partial(_init_worker, main_pid=os.getpid()) if workers else None,
                prefetch_factor=4 if workers else None, persistent_workers=False,
                multiprocessing_context=pool_context(WORKER_PRELOAD) if workers else None,
            )
            for batch in loader:
                raise_batch_error(batch)
                columns = predict_batch(benchmark, net, batch, config) if len(batch) else None
                if stats.first_batch_seconds is None:
                    stats.first_batch_seconds = time.perf_counter() - start
                ledger.record(batch, columns)
        stats.seconds = time.perf_counter() - start
        return stats

