"""The work of a run as a stream: units listed lazily, batch tasks, per-unit accumulation.

Every executor (local DataLoader, Ray) runs the same pieces:

- :class:`UnitStream` walks the benchmark's plan lazily: it lists a unit's samples only when
  the executor asks for the unit's first batch, fingerprints them (:mod:`robustlab.data.fingerprint`)
  and skips units already stored. When the run resumes, it first checks every stored unit's
  fingerprint against the data as it is now and refuses to mix (:class:`DataChangedError`).
- :class:`BatchTask` names one batch (a unit's sample set and a slice of it); workers turn it
  into a :class:`~robustlab.engine.records.Batch` with :func:`load_batch`.
- :class:`UnitResults` collects a unit's batch results keyed by their start position, so a
  batch computed twice (a retried Ray task) fills the same slot once, and builds the unit's
  columns when every batch is in: the store then commits the unit exactly once.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..environment import environment_record
from ..errors import DataError, InputError, ModelError, RobustlabError
from .benchmark import Benchmark, Unit
from .config import RunConfig
from .records import Batch, PixelSink, collate, sample_id

#: Fingerprint modes: file sizes and modification times (default, cheap), or content hashes.
FINGERPRINT_MODES = ("stat", "content")


class DataChangedError(DataError):
    """The data under a run changed since some of its units were stored."""


# --- units ------------------------------------------------------------------------------------------


@dataclass
class UnitWork:
    """A pending unit with its listed samples (``source``), their count and fingerprint."""

    unit: Unit
    source: Any
    size: int
    fingerprint: str

    @property
    def key(self) -> str:
        return self.unit.key

    def batch_starts(self, batch_size: int) -> range:
        return range(0, self.size, batch_size)


class UnitStream:
    """Iterate the pending units of a run, listing each one's samples only when reached.

    Parameters
    ----------
    benchmark, config : the run's benchmark and config
    stored : dict
        ``{unit key: stored meta}`` of the units already in the store.
    fingerprint : str
        ``stat`` or ``content`` (see :data:`FINGERPRINT_MODES`).
    claim : callable, optional
        ``claim(unit key) -> "claimed" | "stored" | "held"``, asked before a pending unit is
        listed (see :class:`robustlab.engine.leases.RunHolder`): a unit stored since the run
        started is skipped, one another live driver claimed is left to it (``deferred``).

    Notes
    -----
    ``keys`` holds every unit key of the plan once the stream is exhausted (pending and
    stored, in plan order); ``deferred`` the keys of the units left to other drivers. Before
    yielding anything, a stream over a partly stored run checks the stored units' fingerprints
    (:meth:`verify`).
    """

    def __init__(self, benchmark: Benchmark, config: RunConfig, stored: Mapping[str, Mapping[str, Any]],
                 *, fingerprint: str = "stat", claim: Callable[[str], str] | None = None) -> None:
        if fingerprint not in FINGERPRINT_MODES:
            raise DataError(f"fingerprint must be one of {', '.join(FINGERPRINT_MODES)}; got {fingerprint!r}.")
        self.benchmark = benchmark
        self.config = config
        self.stored = dict(stored)
        self.mode = fingerprint
        self.keys: list[str] = []
        self.claim = claim
        self.deferred: list[str] = []
        self.exhausted = False
        self.listed = 0
        self.yielded = 0
        self._units: Iterable[Unit] | None = None
        self._walker: Iterator[UnitWork] | None = None
        self._head: UnitWork | None = None

    def _plan(self) -> Iterable[Unit]:
        if self._units is None:
            self._units = self.benchmark.plan(self.config)
        return self._units

    def verify(self) -> int:
        """Check every stored unit against the data as it is now; return how many are stored.

        Raises :class:`DataChangedError` naming the changed units and the way out. Units stored
        before fingerprints existed (no ``fingerprint`` in their meta) are accepted.
        """
        if not self.stored:
            return 0
        self._refuse_weaker_stored_checks()
        units = list(self._plan())  # resuming: the plan's keys are needed up front
        self._units = units
        changed = []
        for unit in units:
            meta = self.stored.get(unit.key)
            if meta is None or not meta.get("fingerprint"):
                continue
            source = self.benchmark.samples(self.config, unit)
            now = self.benchmark.fingerprint(self.config, unit, source, _stored_mode(meta))
            if now != meta["fingerprint"]:
                changed.append(_describe_change(unit.key, meta, source))
        planned = {u.key for u in units}
        gone = sorted(set(self.stored) - planned)
        if gone:
            changed.append(f"{len(gone)} stored unit(s) are no longer in the plan (e.g. {gone[0]})")
        if changed:
            shown = "; ".join(changed[:3]) + (f"; and {len(changed) - 3} more" if len(changed) > 3 else "")
            raise DataChangedError(
                f"the data of this run changed since its stored units were computed: {shown}. Its stored numbers "
                "describe the old data, and resuming would mix old and new. To evaluate the data as it is now as a "
                "new run (the old one is kept), run again with --tag NAME (Python: tag=NAME); to discard the old "
                "run, delete it from the store first.")
        return sum(1 for u in units if u.key in self.stored)

    def _refuse_weaker_stored_checks(self) -> None:
        """A stricter fingerprint asked for than the stored units carry (``content`` on units
        stored with ``stat``) cannot be honoured by checking them: no content hash of the data
        they measured exists. Refuse, with the two ways out, instead of checking less than asked."""
        wanted = FINGERPRINT_MODES.index(self.mode)
        if wanted == 0:  # stat: units stored before fingerprints existed are accepted (see verify)
            return
        weaker = sorted(key for key, meta in self.stored.items()
                        if not meta.get("fingerprint") or FINGERPRINT_MODES.index(_stored_mode(meta)) < wanted)
        if weaker:
            modes = sorted({_stored_mode(self.stored[k]) if self.stored[k].get("fingerprint") else "nothing"
                            for k in weaker})
            raise InputError(
                f"--fingerprint {self.mode} was asked, but {len(weaker)} stored unit(s) of this run (e.g. {weaker[0]}) "
                f"were tied to their data by {' and '.join(modes)} only, so their data cannot be checked by "
                f"{self.mode}. Rerun with --fingerprint stat (Python: fingerprint='stat') to accept the stored "
                f"check, or evaluate the data as a new run with --tag NAME --fingerprint {self.mode}.")

    def _walk(self) -> Iterator[UnitWork]:
        for unit in self._plan():
            self.keys.append(unit.key)
            if unit.key in self.stored:
                continue
            if self.claim is not None:
                state = self.claim(unit.key)
                if state == "held":
                    self.deferred.append(unit.key)
                if state != "claimed":
                    continue
            source = self.benchmark.samples(self.config, unit)
            size = len(source)
            self.listed += size
            self.yielded += 1
            yield UnitWork(unit, source, size, self.benchmark.fingerprint(self.config, unit, source, self.mode))
        self.exhausted = True

    def peek(self) -> UnitWork | None:
        """The first pending unit (listed now, yielded again by iteration), or None when every
        unit of the plan is stored or left to other drivers (``deferred``)."""
        if self._walker is None:
            self._walker = self._walk()
            self._head = next(self._walker, None)
        return self._head

    def __iter__(self) -> Iterator[UnitWork]:
        head = self.peek()
        if head is None:
            return
        self._head = None
        yield head
        yield from self._walker


def _stored_mode(meta: Mapping[str, Any]) -> str:
    """The fingerprint mode a stored unit was checked with (``stat`` for unknown spellings)."""
    mode = str(meta.get("fingerprint", "")).split(":", 1)[0]
    return mode if mode in FINGERPRINT_MODES else "stat"


def _describe_change(key: str, meta: Mapping[str, Any], source: Any) -> str:
    before = int(meta.get("n_samples", 0)) + int(meta.get("n_skipped", 0))
    now = len(source)
    if now != before:
        return f"unit {key} had {before} samples and now has {now}"
    return f"unit {key} has the same number of samples ({now}) but files were replaced or modified"


# --- batches ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchTask:
    """One batch to load: samples ``start..stop`` of unit ``unit`` (``source``: its sample set,
    or a :class:`SourceHandle` to it when the task crosses a process boundary)."""

    unit: str
    source: Any
    start: int
    stop: int


def load_batch(benchmark: Benchmark, task: BatchTask, prepare, *, sink: PixelSink | None = None,
               source: Any = None) -> Batch:
    """Worker side: load the task's samples into a Batch.

    Each sample's pixels go to ``sink`` as the sample loads (default: kept, then stacked; see
    :class:`~robustlab.engine.records.PixelSink`). ``source`` replaces the task's own sample set
    (the local executor's decode-once passes a view of images already read). A sample whose
    loading raises a robustlab error (unreadable file, image too small for a corruption...)
    becomes a problem of the batch; any other robustlab error is returned in ``Batch.error`` so
    the executor raises it as one clear message, not as a worker traceback.
    """
    from ..data.images import max_pixels_limit

    if source is None:
        source = task.source.get() if isinstance(task.source, SourceHandle) else task.source
    sink = PixelSink() if sink is None else sink
    samples, positions, problems = [], [], []
    try:
        with max_pixels_limit(getattr(prepare, "max_pixels", None)):
            for i in range(task.start, task.stop):
                try:
                    sample = benchmark.load(source, i, prepare)
                except RobustlabError as exc:
                    problems.append((i, sample_id(source, i), str(exc)))
                    continue
                sink.add(sample.pixels)
                samples.append(sample)
                positions.append(i)
        return collate(samples, unit=task.unit, start=task.start, positions=positions, problems=problems, sink=sink)
    except RobustlabError as exc:
        return failed_batch(task, exc)


def failed_batch(task: BatchTask, exc: RobustlabError) -> Batch:
    """A batch that carries the robustlab error its loading raised (the executor raises it)."""
    return Batch(unit=task.unit, start=task.start, positions=np.zeros(0, np.int64), ids=np.zeros(0, "<U1"),
                 labels=np.zeros(0, np.int64), error=(type(exc).__name__, str(exc)))


def raise_batch_error(batch: Batch) -> None:
    """Raise the robustlab error a worker recorded in ``batch.error`` (same class, same message)."""
    if batch.error is not None:
        raise_recorded(batch.error)


def raise_recorded(error: tuple[str, str]) -> None:
    """Raise a robustlab error recorded as ``(class name, message)`` in another process."""
    import robustlab.errors as errors

    kind, message = error
    cls = getattr(errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, RobustlabError)):
        cls = RobustlabError
    raise cls(message)


def predict_batch(benchmark: Benchmark, model: Any, batch: Batch, config: RunConfig) -> dict[str, np.ndarray]:
    """``benchmark.predict`` on a batch, under the run's precision (:mod:`robustlab.engine.runtime`);
    an exception other than a robustlab error becomes a ModelError naming the model, the unit and
    the batch's samples."""
    from .benchmark import model_device
    from .runtime import RunOptions

    options = RunOptions.from_config(config)
    try:
        with options.autocast(model_device(model)) if options.dtype is not None else contextlib.nullcontext():
            return benchmark.predict(model, batch, config)
    except RobustlabError:
        raise
    except Exception as exc:  # the model (or the user's code in it) failed
        name = getattr(model, "name", type(model).__name__)
        first = batch.ids[0] if len(batch.ids) else "?"
        last = batch.ids[-1] if len(batch.ids) else "?"
        where = f"sample {first}" if len(batch.ids) == 1 else f"samples {first} .. {last}"
        raise ModelError(f"model {name!r} raised {type(exc).__name__}: {exc} (unit {batch.unit}, {where}). "
                         "Check the model on one of these inputs; rerun with --debug for the traceback.") from exc


# --- per-unit results ------------------------------------------------------------------------------------


@dataclass
class UnitResults:
    """The batch results of one unit, filled once per batch start, in any order."""

    work: UnitWork
    batch_size: int
    slots: dict[int, tuple[Batch, dict[str, np.ndarray] | None]] = field(default_factory=dict)

    @property
    def n_batches(self) -> int:
        return math.ceil(self.work.size / self.batch_size)

    def add(self, batch: Batch, columns: dict[str, np.ndarray] | None) -> bool:
        """Record one batch's result; False when that batch was already recorded (a retry)."""
        if batch.start in self.slots:
            return False
        self.slots[batch.start] = (batch, columns)
        return True

    @property
    def complete(self) -> bool:
        return len(self.slots) == self.n_batches

    def columns(self) -> tuple[dict[str, np.ndarray], list[tuple[str, str]]]:
        """The unit's stored columns (``sample_id``, ``label``, then the predictions) and its
        problems ``[(sample id, message)]``, in sample order."""
        ordered = [self.slots[s] for s in sorted(self.slots)]
        batches = [b for b, _ in ordered if len(b)]
        ids = np.concatenate([b.ids for b in batches]) if batches else np.zeros(0, dtype="<U1")
        labels = np.concatenate([b.labels for b in batches]) if batches else np.zeros(0, np.int64)
        out: dict[str, np.ndarray] = {"sample_id": ids, "label": labels.astype(np.int64)}
        predicted = [c for b, c in ordered if len(b) and c is not None]
        if predicted:
            for name in predicted[0]:
                out[name] = np.concatenate([c[name] for c in predicted])
        problems = [(pid, message) for b, _ in ordered for _, pid, message in b.problems]
        return out, problems

    def meta(self, n_samples: int, n_skipped: int) -> dict[str, Any]:
        """The unit's catalog meta: sample counts, the data's fingerprint and the environment it was
        computed in (recorded beside the run, never part of its identity)."""
        return {"n_samples": n_samples, "n_skipped": n_skipped, "fingerprint": self.work.fingerprint,
                "environment": environment_record()}


def write_unit(store, run_id: str, results: UnitResults) -> tuple[int, int]:
    """Commit a finished unit to the store (problems first, then the columns, exactly once).

    Returns (samples stored, samples skipped)."""
    columns, problems = results.columns()
    for pid, message in problems:
        store.record_problem(run_id, results.work.key, pid, message)
    n = len(columns["label"])
    store.write_unit(run_id, results.work.key, columns, meta=results.meta(n, len(problems)), replace=False)
    return n, len(problems)


# --- sample sets shared with worker processes --------------------------------------------------------


_SOURCE_CACHE: OrderedDict[str, Any] = OrderedDict()
_SOURCE_CACHE_SIZE = 8


@dataclass(frozen=True)
class SourceHandle:
    """A unit's sample set pickled once into a file; tasks carry this small handle instead of the
    set itself (which may list thousands of paths), and each process unpickles it once."""

    path: str

    def get(self) -> Any:
        source = _SOURCE_CACHE.get(self.path)
        if source is None:
            with open(self.path, "rb") as fh:
                source = pickle.load(fh)  # written by this run's own process (SharedSources.share)
            _SOURCE_CACHE[self.path] = source
            while len(_SOURCE_CACHE) > _SOURCE_CACHE_SIZE:
                _SOURCE_CACHE.popitem(last=False)
        else:
            _SOURCE_CACHE.move_to_end(self.path)
        return source


class SharedSources:
    """A private temporary folder of pickled sample sets, one per unit in flight."""

    def __init__(self) -> None:
        shm = "/dev/shm"
        base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
        self.folder = tempfile.mkdtemp(prefix="robustlab-units-", dir=base)
        self._count = 0

    def share(self, source: Any) -> SourceHandle:
        self._count += 1
        path = os.path.join(self.folder, f"{self._count:08d}.pkl")
        with open(path, "wb") as fh:
            pickle.dump(source, fh, protocol=pickle.HIGHEST_PROTOCOL)
        return SourceHandle(path)

    def release(self, handle: SourceHandle) -> None:
        try:
            os.unlink(handle.path)
        except OSError:
            pass

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> SharedSources:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
