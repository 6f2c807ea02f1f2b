"""Executors: how a run's pending units are computed. Plugins by name (``--executor local|ray``).

An executor takes the run's :class:`~robustlab.engine.work.UnitStream` (pending units, listed
lazily), loads each unit's batches with the benchmark's loader, runs ``predict`` with the model
and commits each finished unit to the store exactly once. Every executor computes the same
batches (consecutive slices of ``batch_size`` samples, never crossing a unit) with the same
code (:mod:`robustlab.engine.work`), so their stored columns are identical.

- ``local`` (:class:`LocalExecutor`): worker processes read, decode, corrupt and resize
  samples straight into batch slots in shared memory (uint8; pinned for the GPU), decoding each
  image once for all the units that make their samples from it, while this process runs
  batched inference one batch ahead (GPU when present, else CPU threads); see
  :mod:`robustlab.engine.pipeline`.
- ``ray`` (:class:`robustlab.engine.ray_executor.RayExecutor`, ``pip install "robustlab[ray]"``):
  Ray tasks load batches, actors that load the model once run inference, on a local Ray or the
  cluster at ``RAY_ADDRESS``.

A new executor is one file: subclass :class:`Executor`, declare its ``options`` (see
:mod:`robustlab.engine.schema`) and register it with :func:`register_executor` (another package
lists its module under the entry-point group ``robustlab.executors``); ``evaluate`` and the
command line pass it its options (:meth:`Executor.from_options`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .. import interrupts
from ..data.jobs import cap_workers
from ..errors import InputError
from ..registry import Registry
from .benchmark import Benchmark
from .config import RunConfig
from .progress import RunProgress, run_progress
from .options.schema import Option, OptionSchema
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
    (listing, loading and inference of the first batch). ``wait_seconds``: how long the main
    process waited for loaded batches (near 0: the model sets the pace; most of ``seconds``: the
    loading workers do). ``events``: what the user was told while it ran (see
    :mod:`robustlab.engine.events`)."""

    units: int = 0
    samples: int = 0
    skipped: int = 0
    seconds: float = 0.0
    store_seconds: float = 0.0
    wait_seconds: float = 0.0
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
        self.wait_seconds += other.wait_seconds
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
    "models" that need no pixels), ``max_pixels`` (the run's image-size limit, applied while
    a batch loads) and ``decode`` (``gpu``: JPEG files are sent undecoded, see
    :mod:`robustlab.engine.runtime`). Calling it prepares one uint8 HxWx3 image.
    """

    preprocessing: Any = None
    precomputed: bool = False
    max_pixels: int | None = None
    decode: str = "cpu"

    @classmethod
    def of(cls, model: Any, max_pixels: int | None = None, decode: str = "cpu") -> ImagePreparer:
        return cls(getattr(model, "preprocessing", None), bool(getattr(model, "precomputed", False)), max_pixels,
                   decode)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        return image if self.preprocessing is None else self.preprocessing.prepare_image(image)

    def pil(self, image):
        """The same on a decoded PIL image (readers call it before converting to numpy)."""
        return image if self.preprocessing is None else self.preprocessing.prepare_pil(image)

    @property
    def output_size(self) -> tuple[int, int] | None:
        """(height, width) of every prepared image when fixed (the model's crop), else None."""
        return None if self.preprocessing is None else self.preprocessing.crop


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

    def run(self, model: ModelRef, benchmark: Benchmark, config: RunConfig, stream: UnitStream, store, run_id: str, *,
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


def default_workers() -> int:
    """Worker processes for decoding/corruption: the CPU count minus one for the main process."""
    return max(0, min(8, (os.cpu_count() or 1) - 1))


def slot_bytes(prepare: ImagePreparer, batch_size: int) -> int:
    """Bytes of one batch slot: a batch of images at the model's input size (224 x 224 when the
    model takes any size; batches that do not fit travel another way, see
    :class:`~robustlab.engine.loading.SlotSink`)."""
    h, w = prepare.output_size or (224, 224)
    return int(batch_size) * max(h * w, 224 * 224) * 3


class BatchRunner:
    """Runs the model on loaded batches and records their columns.

    On a CUDA device it keeps one batch ahead: a batch's pixels go to the device on a copy
    stream (from the pinned slot, by DMA) and its model is launched before the results of the
    batch before it are waited for, so the device is never idle between two batches. A batch's
    slot is given back once its results are in (its copy is then certainly done)."""

    def __init__(self, benchmark: Benchmark, net: Any, config: RunConfig, device: Any, ledger: UnitLedger,
                 stats: ExecutionStats, start: float) -> None:
        import torch

        self.benchmark, self.net, self.config, self.device = benchmark, net, config, device
        self.ledger, self.stats, self.start = ledger, stats, start
        self.cuda = device.type == "cuda"
        self.copy_stream = torch.cuda.Stream(device) if self.cuda else None
        self.previous: tuple[Any, Any] | None = None

    def push(self, loaded) -> None:
        from ..models.pixels import decode_on_device, is_encoded

        batch = loaded.batch
        raise_batch_error(batch)
        if isinstance(batch.pixels, list) and any(is_encoded(p) for p in batch.pixels):
            batch.pixels = decode_on_device(batch.pixels, self.device)  # --decode gpu
        elif self.cuda:
            batch.pixels = self._to_device(batch.pixels)
        columns = predict_batch(self.benchmark, self.net, batch, self.config) if len(batch) else None
        if self.stats.first_batch_seconds is None:
            self.stats.first_batch_seconds = time.perf_counter() - self.start
        if not self.cuda:
            self._finish(loaded, columns)
            return
        previous, self.previous = self.previous, (loaded, columns)
        if previous is not None:
            self._finish(*previous)

    def flush(self) -> None:
        if self.previous is not None:
            previous, self.previous = self.previous, None
            self._finish(*previous)

    def _finish(self, loaded, columns) -> None:
        from .classification import resolve_columns

        columns = resolve_columns(columns)
        batch = loaded.batch
        batch.pixels = None  # the unit keeps its batches' ids and labels until it is stored, not their pixels
        loaded.release()
        self.ledger.record(batch, columns)

    def _to_device(self, pixels: Any) -> Any:
        import torch

        if isinstance(pixels, list):
            return [self._to_device(p) for p in pixels]
        if not isinstance(pixels, torch.Tensor) or pixels.device.type != "cpu":
            return pixels
        compute = torch.cuda.current_stream(self.device)
        with torch.cuda.stream(self.copy_stream):
            on_device = pixels.to(self.device, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(self.copy_stream)
        compute.wait_event(copied)
        on_device.record_stream(compute)
        return on_device


@register_executor
class LocalExecutor(Executor):
    """Worker processes decode/corrupt into shared batch slots, this process batches inference
    (see the module docstring and :mod:`robustlab.engine.pipeline`).

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

    def run(self, model: ModelRef, benchmark: Benchmark, config: RunConfig, stream: UnitStream, store, run_id: str, *,
            batch_size: int = 64, progress: str | bool | None = None, description: str = "evaluating",
            loaded=None) -> ExecutionStats:
        batch_size = check_batch_size(batch_size)
        net = loaded if loaded is not None else model.load()
        import torch

        from .classification import DEFER_RESULTS
        from .pipeline import BatchFeed, LoadingPool, slices
        from .slots import SlotArena, slot_count

        from .runtime import RunOptions

        options = RunOptions.from_config(config)
        net = options.prepare_model(net)
        device = getattr(net, "device", None) or torch.device("cpu")
        stats = ExecutionStats()
        start = time.perf_counter()
        workers = self.workers
        prepare = ImagePreparer.of(net, config.max_pixels, options.decode)
        size = slot_bytes(prepare, batch_size)
        with run_progress(description, progress) as bar, SharedSources() as shared, \
                SlotArena(slot_count(workers, size), size, shared=bool(workers)) as arena:
            if device.type == "cuda":
                arena.pin()
            handles: dict[str, Any] = {}

            def share(work: UnitWork):
                if not workers:
                    return work.source
                if work.key not in handles:
                    handles[work.key] = shared.share(work.source)
                return handles[work.key]

            def release(work: UnitWork) -> None:
                handle = handles.pop(work.key, None)
                if handle is not None:
                    shared.release(handle)

            ledger = UnitLedger(store, run_id, batch_size, bar, stats, on_unit_done=release)

            def planned():
                yield from slices(stream, batch_size, lambda unit: benchmark.shared_reads(config, unit), ledger.expect)
                bar.set_units_total(stream.yielded)

            pool = LoadingPool(benchmark, prepare, workers, arena)
            token = DEFER_RESULTS.set(device.type == "cuda")
            try:
                feed = BatchFeed(pool, arena, planned(), share, max_in_flight=max(2, 2 * workers),
                                 max_bases=max(1, min(2, arena.count - 2)))
                runner = BatchRunner(benchmark, net, config, device, ledger, stats, start)
                items = iter(feed)
                while True:
                    waited = time.perf_counter()
                    item = next(items, None)
                    stats.wait_seconds += time.perf_counter() - waited
                    if item is None:
                        break
                    runner.push(item)
                runner.flush()
            finally:
                DEFER_RESULTS.reset(token)
                pool.close()
        stats.seconds = time.perf_counter() - start
        return stats
