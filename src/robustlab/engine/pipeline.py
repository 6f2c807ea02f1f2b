"""The local executor's data path: worker processes fill batch slots, the main process predicts.

:class:`BatchFeed` turns a run's :class:`~robustlab.engine.work.UnitStream` into loaded
batches, in the order they finish loading:

1. **Slices** (:func:`slices`): each pending unit is cut into batches of ``batch_size``
   consecutive samples. Consecutive units whose benchmark names the same shared reads
   (:meth:`~robustlab.engine.Benchmark.shared_reads`) and whose samples are made, position by
   position, from one base sample set form a *group*: each of its slices is read once (a
   :class:`~robustlab.engine.loading.ReadTask`) and then loaded for every unit of the group from
   the images read (decode once, corrupt many).
2. **Tasks** go to a pool of worker processes (:class:`LoadingPool`; none with ``workers=0``:
   then they run here), each into a free slot of the shared :class:`~robustlab.engine.slots.SlotArena`.
   A task is submitted only when a slot is free, so what is in flight is bounded (at least two
   batches per worker) and no slot is ever overwritten while the main process reads it.
3. **Batches** come back as a :class:`~robustlab.engine.records.Batch` whose pixels are a
   tensor over the slot (no copy); the consumer calls :meth:`LoadedBatch.release` when it no
   longer needs them (after the model has them on its device).

Every unit's batches are the same as the other executors' (the same slices of the same sample
sets, :func:`robustlab.engine.work.load_batch`), so the stored columns are identical with any
number of workers, with or without groups.
"""

from __future__ import annotations

import collections
import os
import queue
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import interrupts
from ..errors import RobustlabError
from .loading import ATTACHED, BaseRef, LoadTask, ReadTask, TaskResult, at_depth, per_image, run_task, same_set, worker_main
from .slots import SlotArena, SlotRef
from .work import BatchTask, UnitStream, UnitWork, raise_recorded

#: Modules the forkserver imports once, so each worker starts in milliseconds; the benchmark's
#: module and its :attr:`~robustlab.engine.Benchmark.worker_modules` are added. Not torch: the
#: loading path does not need it (a worker imports it only for the shared-tensor fallback), and
#: importing it made the forkserver's start, which every run's first batch waits for, 3.4 s
#: instead of 0.1 s on a 2-core machine.
WORKER_PRELOAD = ("robustlab.data.classification", "robustlab.engine.loading")

#: Seconds between two looks at the workers while waiting for a result.
POLL_SECONDS = 1.0


# --- slices ----------------------------------------------------------------------------------------


@dataclass
class Slice:
    """Samples ``start..stop`` of one unit, or of every unit of a group (``depths``: where each
    member's sample set holds the group's base, see :func:`~robustlab.engine.loading.rebase`;
    None for a single unit)."""

    members: list[UnitWork]
    start: int
    stop: int
    depths: list[int] | None = None


def member_depth(source: Any, base: Any) -> int | None:
    """Where ``source`` holds the sample set ``base``: 0 (it is ``base``), 1 (it is a per-image
    view of ``base``), None (neither)."""
    if same_set(source, base):
        return 0
    if per_image(source) and same_set(source.base, base):
        return 1
    return None


def group_base(first: UnitWork, work: UnitWork) -> tuple[int, int] | None:
    """The shallowest sample set both units make their samples from, as (its depth in ``first``,
    its depth in ``work``); None when they share none."""
    if first.size != work.size:
        return None
    for depth in ((0, 1) if per_image(first.source) else (0,)):
        found = member_depth(work.source, at_depth(first.source, depth))
        if found is not None:
            return depth, found
    return None


def slices(stream: UnitStream, batch_size: int, shared_reads: Callable[[Any], str | None] | None,
           expect: Callable[[UnitWork], None]) -> Iterator[Slice]:
    """The run's slices, listing units lazily (each announced to ``expect`` when listed).

    ``shared_reads(unit)`` is the benchmark's :meth:`~robustlab.engine.Benchmark.shared_reads`
    (None: no groups). A group holds the consecutive units of one name that make their samples
    from one base sample set (:func:`group_base`); a unit that does not starts a new group.
    """
    group: list[UnitWork] = []
    depths: list[int] = []
    name: str | None = None

    def flush() -> Iterator[Slice]:
        if len(group) == 1:
            yield from _unit_slices(group[0], batch_size)
        elif group:
            for start in group[0].batch_starts(batch_size):
                yield Slice(list(group), start, min(start + batch_size, group[0].size), list(depths))
        group.clear()
        depths.clear()

    for work in stream:
        expect(work)
        if work.size == 0:
            continue
        key = shared_reads(work.unit) if shared_reads is not None else None
        if group and key is not None and key == name:
            if len(group) == 1:
                found = group_base(group[0], work)
                if found is not None:
                    depths[:] = [found[0]]
                    group.append(work)
                    depths.append(found[1])
                    continue
            else:
                depth = member_depth(work.source, at_depth(group[0].source, depths[0]))
                if depth is not None:
                    group.append(work)
                    depths.append(depth)
                    continue
        yield from flush()
        if key is None:
            yield from _unit_slices(work, batch_size)
            continue
        group.append(work)
        depths.append(0)
        name = key
    yield from flush()


def _unit_slices(work: UnitWork, batch_size: int) -> Iterator[Slice]:
    for start in work.batch_starts(batch_size):
        yield Slice([work], start, min(start + batch_size, work.size))


# --- the worker pool ------------------------------------------------------------------------------------


class LoadingPool:
    """``workers`` loading processes (forkserver), or none: then :meth:`submit` runs the task here."""

    def __init__(self, benchmark, prepare, workers: int, arena: SlotArena) -> None:
        self.benchmark, self.prepare, self.arena = benchmark, prepare, arena
        self.workers = int(workers)
        self._done: collections.deque[TaskResult] = collections.deque()
        self._procs: list[Any] = []
        if self.workers:
            from ..data.jobs import pool_context

            ctx = pool_context((*WORKER_PRELOAD, type(benchmark).__module__, *getattr(benchmark, "worker_modules", ())))
            self._tasks, self._results = ctx.Queue(), ctx.Queue()
            for _ in range(self.workers):
                proc = ctx.Process(target=worker_main, daemon=True,
                                   args=(self._tasks, self._results, arena.spec, benchmark, prepare, os.getpid()))
                proc.start()
                self._procs.append(proc)
            self._attached = 0
            self._early: collections.deque[TaskResult] = collections.deque()
            while self._attached < self.workers:  # then the arena's file can go: the workers have it mapped
                self._early.extend(r for r in [self._next()] if r.id != ATTACHED)
            arena.unlink()

    def submit(self, task: LoadTask | ReadTask) -> None:
        if self.workers:
            self._tasks.put(task)
        else:
            self._done.append(run_task(task, self.arena, self.benchmark, self.prepare))

    def get(self) -> TaskResult:
        """The next finished task's result (waits; raises when a worker died)."""
        if not self.workers:
            return self._done.popleft()
        if self._early:
            return self._early.popleft()
        while True:
            result = self._next()
            if result.id != ATTACHED:
                return result

    def _next(self) -> TaskResult:
        while True:
            try:
                result = self._results.get(timeout=POLL_SECONDS)
                if result.id == ATTACHED:
                    self._attached += 1
                return result
            except queue.Empty:
                dead = [p for p in self._procs if p.exitcode is not None]
                if dead:
                    codes = ", ".join(f"pid {p.pid} exit {p.exitcode}" for p in dead)
                    raise RobustlabError(f"a loading worker process died ({codes}), e.g. killed by the system for "
                                         "lack of memory. Lower --workers or --batch-size and run again: the units "
                                         "already stored are kept.") from None
                interrupts.check()

    def close(self) -> None:
        if not self._procs:
            return
        for _ in self._procs:
            try:
                self._tasks.put_nowait(None)
            except Exception:  # noqa: BLE001 - a broken queue: the workers are terminated below
                break
        deadline = time.monotonic() + 2.0
        for proc in self._procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(1.0)
        for q in (self._tasks, self._results):
            q.cancel_join_thread()
            q.close()
        self._procs = []


# --- the feed ---------------------------------------------------------------------------------------


@dataclass
class LoadedBatch:
    """A loaded batch; :meth:`release` gives its slot back once its pixels are no longer read."""

    batch: Any
    on_release: Callable[[], None] | None = None

    def release(self) -> None:
        if self.on_release is not None:
            self.on_release()
            self.on_release = None


@dataclass
class _Base:
    """A group slice whose base images are being read or were read (its slot, its members left)."""

    slice: Slice
    slot: int | None
    ref: BaseRef | None = None
    left: int = 0


@dataclass
class _Flight:
    kind: str
    slot: int | None
    base: _Base | None = None
    unit: str = ""


@dataclass
class BatchFeed:
    """Loaded batches of a run, as they finish (see the module docstring).

    ``share(work)`` returns what a task carries as the unit's sample set (a handle to it in
    shared memory, for worker processes); a group's base is read from its first unit's.
    Submits a task only when a slot is free and fewer than ``max_in_flight`` are out; at most
    ``max_bases`` group slices hold their base images at once (the slot budget keeps one slot
    free for their units, so the feed never stalls).
    """

    pool: LoadingPool
    arena: SlotArena
    slices: Iterator[Slice]
    share: Callable[[UnitWork], Any]
    max_in_flight: int
    max_bases: int = 2
    _ids: Any = field(default_factory=lambda: iter(range(1 << 62)))

    def __post_init__(self) -> None:
        self.free: collections.deque[int] = collections.deque(range(self.arena.count))
        self.use_slots = self.arena.count > 0
        self.flights: dict[int, _Flight] = {}
        self.ready: collections.deque[tuple[LoadTask, _Base | None]] = collections.deque()
        self.open_bases = 0
        self.pending: Slice | None = None
        self.exhausted = False

    def __iter__(self) -> Iterator[LoadedBatch]:
        while True:
            self._fill()
            if not self.flights:
                if self.ready or self.pending is not None:  # the slot budget makes this impossible
                    raise RobustlabError("internal error: the loading feed stalled with work left; please report it.")
                return
            result = self.pool.get()
            flight = self.flights.pop(result.id)
            if result.error is not None:
                raise_worker_error(result.error, flight.unit or "a base read")
            if flight.kind == "read":
                self._base_read(flight, result.base)
            else:
                yield self._loaded(flight, result.batch)

    # --- submitting ------------------------------------------------------------------------------

    def _take_slot(self) -> int | None:
        return self.free.popleft() if self.use_slots else None

    def _give_slot(self, slot: int | None) -> None:
        if slot is not None:
            self.free.append(slot)

    def _room(self) -> bool:
        return len(self.flights) < self.max_in_flight and (not self.use_slots or bool(self.free))

    def _submit(self, task: LoadTask | ReadTask, flight: _Flight) -> None:
        self.flights[task.id] = flight
        self.pool.submit(task)

    def _fill(self) -> None:
        """Submit tasks while there is room: the units of bases already read first, then the next slice."""
        while self._room():
            if self.ready:
                task, base = self.ready.popleft()
                slot = self._take_slot()
                self._submit(LoadTask(task.id, task.task, slot, task.base, task.depth),
                             _Flight("load", slot, base, task.task.unit))
                continue
            if self.pending is None and not self.exhausted:
                self.pending = next(self.slices, None)
                self.exhausted = self.pending is None
            if self.pending is None or not self._start(self.pending):
                return
            self.pending = None

    def _start(self, piece: Slice) -> bool:
        """Submit a slice's first task: its load (one unit) or its base read (a group); False when
        a group must wait for the units of the bases already read."""
        if piece.depths is None:
            work = piece.members[0]
            slot = self._take_slot()
            task = LoadTask(next(self._ids), BatchTask(work.key, self.share(work), piece.start, piece.stop), slot)
            self._submit(task, _Flight("load", slot, None, work.key))
            return True
        if self.open_bases >= self.max_bases or (self.use_slots and len(self.free) < 2):
            return False
        slot = self._take_slot()
        first = piece.members[0]
        task = ReadTask(next(self._ids), BatchTask(first.key, self.share(first), piece.start, piece.stop), slot,
                        piece.depths[0])
        self.open_bases += 1
        self._submit(task, _Flight("read", slot, _Base(piece, slot)))
        return True

    # --- results ---------------------------------------------------------------------------------

    def _base_read(self, flight: _Flight, ref: BaseRef | None) -> None:
        """A group slice's base is read: queue its units' loads from it (from their own files when
        the images could not be kept in one slot)."""
        base = flight.base
        base.ref = ref
        usable = ref is not None and ref.usable
        base.left = len(base.slice.members) if usable else 0
        for work, depth in zip(base.slice.members, base.slice.depths):
            batch = BatchTask(work.key, self.share(work), base.slice.start, base.slice.stop)
            self.ready.append((LoadTask(next(self._ids), batch, None, ref if usable else None, depth),
                               base if usable else None))
        if not usable:
            self._give_slot(flight.slot)
            self.open_bases -= 1

    def _loaded(self, flight: _Flight, batch) -> LoadedBatch:
        if isinstance(batch.pixels, SlotRef):
            batch.pixels = self.arena.tensor(batch.pixels)

        def release(slot=flight.slot, base=flight.base) -> None:
            self._give_slot(slot)
            if base is not None:
                base.left -= 1
                if base.left == 0:
                    self._give_slot(base.slot)
                    self.open_bases -= 1

        return LoadedBatch(batch, release)


def raise_worker_error(error: tuple[str, str], where: str) -> None:
    """Raise an exception a loading task returned: a robustlab error as itself (its message, no
    traceback); anything else as its own class when it is a built-in exception (else RuntimeError),
    with the worker's traceback after the marker that
    :func:`robustlab.errors.one_line_message` reduces, as torch's DataLoader did."""
    import builtins

    import robustlab.errors as errors

    kind, message = error
    head, _, trace = message.partition("\nTraceback (most recent call last):")
    cls = getattr(errors, kind, None)
    if isinstance(cls, type) and issubclass(cls, RobustlabError):
        raise_recorded((kind, head))
    cls = getattr(builtins, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    text = _Message(f"Caught {kind} in a loading worker ({where}).\nOriginal Traceback (most recent call last):{trace}")
    try:
        exc = cls(text)
    except Exception:  # noqa: BLE001 - an exception class with another signature
        exc = RuntimeError(text)
    raise exc


class _Message(str):
    """A message that is its own repr (KeyError shows the repr of its argument: the traceback's
    lines would be folded into one escaped string)."""

    def __repr__(self) -> str:
        return str(self)
