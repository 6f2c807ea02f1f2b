"""What the local executor's loading workers do: tasks in, batches in shared-memory slots out.

Three kinds of task (:class:`LoadTask`, :class:`ReadTask`), run by :func:`run_task` in a worker
process (or in the main process with ``--workers 0``):

- **load** a batch of one unit: the benchmark's ``load`` for each sample, each sample's pixels
  written straight into the task's slot (:class:`SlotSink`) as it loads;
- **read** the images of a *base*: the sample set that several units of the run make their
  samples from (decode once, corrupt many: ``imagenet-c --on-the-fly`` reads each clean image
  once and makes its 19 x 5 corrupted versions from it). The base's ``read(i)`` for each sample,
  into a slot, with the errors of the samples that could not be read;
- **load from a base**: a load whose sample set is rebased (:func:`rebase`) onto the images
  already read (:class:`BaseImages`), so its ``read(i)`` makes the sample from the base's image
  instead of decoding the file again. The pixels are the same, bit for bit: a per-image view's
  ``read(i)`` is a function of its base's ``read(i)`` and ``i`` alone, and :class:`BaseImages`
  returns exactly what the base's ``read(i)`` returned (or raises the error it raised).

Workers never see the model: they get the benchmark, the model's pixel-space preparation
(:class:`~robustlab.engine.executor.ImagePreparer`) and the slot arena's name.
"""

from __future__ import annotations

import dataclasses
import signal
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RobustlabError
from .records import Batch, PixelSink
from .slots import SlotArena, SlotRef
from .work import BatchTask, SourceHandle, load_batch, raise_recorded


# --- tasks and results -------------------------------------------------------------------------------

#: The id of the result a worker sends once it has mapped the slot arena.
ATTACHED = -1


@dataclass(frozen=True)
class BaseRef:
    """The images of a base read for positions ``start..start+n`` of its units: in a slot
    (:class:`SlotRef`, workers) or an array (the main process with no workers; None when every
    image failed), with the errors of the positions that could not be read
    (``{position: (error class, message)}``). ``usable`` is False when the images could not be
    kept in one stacked array (sizes differ, larger than a slot): the units then read their
    files themselves."""

    images: SlotRef | np.ndarray | None
    start: int
    failures: Mapping[int, tuple[str, str]] = field(default_factory=dict)
    usable: bool = True


@dataclass(frozen=True)
class LoadTask:
    """Load batch ``task`` into ``slot`` (None: the pixels travel with the result), reading its
    images from ``base`` when given: the unit's sample set is rebased onto it at ``depth`` (0: the
    unit's sample set is the base itself, 1: its ``base`` is, see :func:`rebase`)."""

    id: int
    task: BatchTask
    slot: int | None = None
    base: BaseRef | None = None
    depth: int = 0


@dataclass(frozen=True)
class ReadTask:
    """Read images ``task.start..task.stop`` of the base of the unit sample set ``task.source``
    (at ``depth``, see :func:`at_depth`) into ``slot``."""

    id: int
    task: BatchTask
    slot: int | None = None
    depth: int = 0


@dataclass
class TaskResult:
    """What a task returns: a loaded ``batch`` (load) or a ``base`` (read), or ``error``: an
    exception other than a robustlab error, as (class name, message with the worker's traceback)."""

    id: int
    batch: Batch | None = None
    base: BaseRef | None = None
    error: tuple[str, str] | None = None


# --- writing pixels into a slot ------------------------------------------------------------------


class SlotSink(PixelSink):
    """Writes each sample's uint8 pixels into slot ``index`` as it loads; the batch's pixels are
    then a :class:`SlotRef`. Pixels that do not fit (another shape than the first sample's, another
    dtype, a batch larger than the slot) switch it to keeping them, as :class:`PixelSink` does
    (stacked in torch shared memory when ``stack`` is given), so any batch still loads."""

    def __init__(self, arena: SlotArena, index: int | None, capacity: int, stack=None) -> None:
        super().__init__(stack)
        self.arena, self.index, self.capacity = arena, index, capacity
        self.shape: tuple[int, ...] | None = None
        self.count = 0
        self.view: np.ndarray | None = None
        self.fallback = index is None

    def add(self, pixels: Any) -> None:
        if pixels is None or self.fallback:
            super().add(pixels)
            return
        pixels = np.asarray(pixels)
        shape = tuple(pixels.shape)
        if self.view is None:
            if pixels.dtype != np.uint8 or pixels.ndim < 2 or not self.arena.fits((self.capacity, *shape)):
                self._give_up()
                super().add(pixels)
                return
            self.shape = shape
            self.view = self.arena.array(SlotRef(self.index, (self.capacity, *shape)))
        if shape != self.shape or pixels.dtype != np.uint8:
            self._give_up()
            super().add(pixels)
            return
        self.view[self.count] = pixels
        self.count += 1

    @property
    def keeps(self) -> bool:  # type: ignore[override]
        return self.fallback

    def _give_up(self) -> None:
        """Keep the pixels written so far as arrays from now on (copies: the slot is reused)."""
        if self.view is not None:
            self.items.extend(self.view[j].copy() for j in range(self.count))
        self.view, self.count, self.fallback = None, 0, True

    def result(self, unit: str = "") -> Any:
        if self.fallback or self.view is None:
            return super().result(unit)
        self.check(unit)
        return SlotRef(self.index, (self.count, *self.shape))


# --- a base's images, already read ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BaseImages:
    """The images of the sample set ``source`` for positions ``start..start+len(images)``, already
    read: ``read(i)`` returns the image ``source.read(i)`` returned (read-only), or raises the error
    it raised. Ids, labels and classes are ``source``'s."""

    source: Any
    images: Any
    start: int
    failures: Mapping[int, tuple[str, str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.source)

    @property
    def ids(self):
        return self.source.ids

    @property
    def labels(self) -> np.ndarray:
        return self.source.labels

    @property
    def classes(self):
        return getattr(self.source, "classes", ())

    def id(self, i: int) -> str:
        get = getattr(self.source, "id", None)
        return get(i) if callable(get) else self.source.ids[i]

    def read(self, i: int) -> np.ndarray:
        failed = self.failures.get(i)
        if failed is not None:
            raise_recorded(failed)
        return self.images[i - self.start]


def per_image(source: Any) -> bool:
    """Whether ``source`` is a per-image view: ``read(i)`` a function of ``source.base.read(i)``
    and ``i`` alone (its class says so with ``per_image = True``)."""
    return bool(getattr(source, "per_image", False))


def at_depth(source: Any, depth: int) -> Any:
    """``source`` (depth 0) or its base (depth 1)."""
    return source.base if depth else source


def rebase(source: Any, depth: int, images: BaseImages) -> Any:
    """``source`` reading from ``images`` the images of its part at ``depth`` (0: the source itself
    is that base, 1: its ``base`` is; see :func:`at_depth`)."""
    return dataclasses.replace(source, base=images) if depth else images


def same_set(a: Any, b: Any) -> bool:
    """Whether two sample sets read the same images at every position: the same object, or of one
    type with equal fields (per-image views: their own fields and the same base; others: every
    field, e.g. root, files and labels, or their ids and labels)."""
    if a is b:
        return True
    if type(a) is not type(b) or len(a) != len(b):
        return False
    if dataclasses.is_dataclass(a):
        names = [f.name for f in dataclasses.fields(a) if f.name not in ("base", "_ids")]
        if not all(_equal(getattr(a, n), getattr(b, n)) for n in names):
            return False
        return same_set(a.base, b.base) if hasattr(a, "base") else True
    return tuple(a.ids) == tuple(b.ids) and _equal(getattr(a, "labels", None), getattr(b, "labels", None))


def _equal(x: Any, y: Any) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and np.array_equal(x, y)
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - values that cannot be compared are taken as different
        return False


# --- running tasks ------------------------------------------------------------------------------------


def resolve(source: Any) -> Any:
    return source.get() if isinstance(source, SourceHandle) else source


def run_task(task: LoadTask | ReadTask, arena: SlotArena, benchmark, prepare, *, stack=None) -> TaskResult:
    """Run one task (in a worker, or in the main process with no workers) and return its result.

    Exceptions other than robustlab errors are returned in ``error`` with their traceback (the
    main process raises them, naming the worker), never lost."""
    try:
        if isinstance(task, ReadTask):
            return TaskResult(task.id, base=read_base(task, arena, prepare))
        source = resolve(task.task.source)
        if task.base is not None:
            images = task.base.images
            if isinstance(images, SlotRef):
                images = arena.array(images, writable=False)
            base = at_depth(source, task.depth)
            source = rebase(source, task.depth, BaseImages(base, images, task.base.start, task.base.failures))
        sink = SlotSink(arena, task.slot, task.task.stop - task.task.start, stack=stack)
        batch = load_batch(benchmark, task.task, prepare, sink=sink, source=source)
        if stack is not None and isinstance(batch.pixels, list):  # images of several sizes: by file descriptor
            # (encoded files, 1-D and small, travel pickled)
            batch.pixels = [stack([np.asarray(p)])[0] if np.ndim(p) > 1 else p for p in batch.pixels]
        return TaskResult(task.id, batch=batch)
    except Exception as exc:  # noqa: BLE001 - reported to the main process with its traceback
        return TaskResult(task.id, error=(type(exc).__name__, f"{exc}\n{traceback.format_exc()}"))


def read_base(task: ReadTask, arena: SlotArena, prepare) -> BaseRef:
    """Read the base images of ``task`` into its slot (an array with no slot): ``base.read(i)`` for
    each position, a robustlab error kept as that position's failure. A base whose images do not
    fit one stacked uint8 array (sizes differ, larger than the slot) is returned unusable."""
    from ..data.images import max_pixels_limit

    source = at_depth(resolve(task.task.source), task.depth)
    start, stop = task.task.start, task.task.stop
    out: np.ndarray | None = None
    failures: dict[int, tuple[str, str]] = {}
    unusable = BaseRef(None, start, usable=False)
    with max_pixels_limit(getattr(prepare, "max_pixels", None)):
        for i in range(start, stop):
            try:
                image = np.asarray(source.read(i))
            except RobustlabError as exc:
                failures[i] = (type(exc).__name__, str(exc))
                continue
            if out is None:
                shape = (stop - start, *image.shape)
                if image.dtype != np.uint8 or (task.slot is not None and not arena.fits(shape)):
                    return unusable
                out = np.zeros(shape, np.uint8) if task.slot is None else arena.array(SlotRef(task.slot, shape))
            if image.shape != out.shape[1:] or image.dtype != np.uint8:
                return unusable
            out[i - start] = image
    images = out if task.slot is None or out is None else SlotRef(task.slot, out.shape)
    return BaseRef(images, start, failures)


def worker_main(tasks, results, arena_spec, benchmark, prepare, main_pid: int) -> None:
    """A loading worker's life: take tasks until None, put their results. It exits soon after
    the run's main process dies, ignores Ctrl-C (the main process handles it) and runs OpenCV
    on one thread (the workers share the cores)."""
    from ..data.jobs import exit_with_parent

    exit_with_parent(main_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import cv2

    cv2.setNumThreads(1)
    arena = SlotArena.attach(arena_spec)
    results.put(TaskResult(ATTACHED))  # the main process removes the arena's file once all have it mapped
    try:
        while True:
            task = tasks.get()
            if task is None:
                break
            results.put(run_task(task, arena, benchmark, prepare, stack=shared_stack))
    finally:
        arena.close()


def shared_stack(arrays: list[np.ndarray]):
    """``arrays`` (equal shapes and dtype) stacked into one torch tensor of shape
    ``(len(arrays), *shape)`` in shared memory, the dtype kept: pixels that do not fit a slot then
    travel to the main process by file descriptor, not by pickling. torch is imported on the first
    call: a worker whose batches fit their slots never needs it."""
    import torch

    shape = (len(arrays), *arrays[0].shape)
    storage = torch.UntypedStorage._new_shared(int(np.prod(shape)) * arrays[0].dtype.itemsize)
    out = torch.empty(0, dtype=torch.from_numpy(arrays[0][:0]).dtype).set_(storage, 0, shape)
    np.stack(arrays, out=out.numpy())
    return out
