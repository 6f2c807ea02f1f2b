"""Running many independent CPU-bound jobs on a process pool, with bounded queueing.

The dataset builders (``robustlab corrupt``, ``robustlab perturb``) turn a dataset into
millions of small picklable tasks; :func:`run_jobs` streams them through worker processes
and yields results as they finish, keeping only ``workers * queue_per_worker`` tasks queued
so the task iterator may be lazy. Workers ignore Ctrl-C (the parent handles it), exit when the
parent dies (even by SIGKILL; see :func:`exit_with_parent`, which other worker pools, such as
the evaluation engine's, call too), and use one thread each (the pool already uses every core).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from ..errors import InputError, RobustlabWarning

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    """The cores this process may use (CPU affinity where the OS tells it, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1  # pragma: no cover - macOS, Windows


def cap_workers(workers: int, what: str = "--workers") -> int:
    """``workers`` processes, at most the cores this process may use (:func:`default_workers`):
    more only compete for the same cores, and each holds its own memory and semaphores (``-j
    1000`` on 2 cores started 1,000 workers and leaked hundreds of semaphores). A capped count
    says so once, as a :class:`~robustlab.errors.RobustlabWarning`."""
    cores = default_workers()
    if workers <= cores:
        return workers
    warnings.warn(f"{what} {workers} is more than the {cores} CPU core(s) this process may use; using {cores} "
                  "worker(s).", RobustlabWarning, stacklevel=2)
    return cores


def worker_count(workers: int | None) -> int:
    """The processes a dataset builder runs: ``workers`` (capped at the cores, :func:`cap_workers`),
    or every core (:func:`default_workers`) when None; InputError below 1."""
    count = default_workers() if workers is None else int(workers)
    if count < 1:
        raise InputError(f"workers must be at least 1; got {workers}.")
    return cap_workers(count)


#: How often the portable parent watch looks for the parent (seconds).
PARENT_WATCH_INTERVAL = 1.0
#: prctl option that asks Linux to send a signal when the parent thread exits.
_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies (``PR_SET_PDEATHSIG``).

    Returns False where that is unsupported (not Linux, no ``prctl``). The request is tied to
    the parent *thread* that forked this process and is not inherited by this process's
    children.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl (sandboxes)
        return False


def _watch_process(pid: int, interval: float) -> None:
    while True:
        time.sleep(interval)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:  # pid reused by another user's process: ours is gone
            os._exit(1)


def exit_with_parent(parent_pid: int | None = None, *, interval: float = PARENT_WATCH_INTERVAL,
                     watch: bool = True) -> bool:
    """Make this (worker) process exit soon after ``parent_pid`` dies, even by SIGKILL.

    Call it first thing in a worker process (a pool initializer, a DataLoader
    ``worker_init_fn``). Two mechanisms, so a worker never outlives the run by more than a
    second or two and never holds its memory for minutes:

    - on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills this process the moment
      its direct parent exits (for workers started by a forkserver that is the forkserver,
      which itself dies with the main process: see :mod:`robustlab.data.forkserver_guard`);
    - everywhere (unless ``watch=False``), a daemon thread that checks every ``interval``
      seconds that ``parent_pid`` (the process that started the run) still exists, and exits
      otherwise.

    Parameters
    ----------
    parent_pid : int, optional
        The process whose death ends this one, normally the main process of the command (pass
        ``os.getpid()`` from there). Default: the current parent (``os.getppid()``).
    interval : float
        Seconds between two checks of the watch thread.
    watch : bool
        Start the watch thread (a process that will fork, such as a forkserver, should not
        hold a thread: it relies on the kernel alone).

    Returns
    -------
    bool
        Whether the kernel will end this process with its parent (Linux).
    """
    watched = os.getppid() if parent_pid is None else int(parent_pid)
    direct_parent = os.getppid()
    by_kernel = set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != direct_parent:  # pragma: no cover - the parent died before prctl took effect
        os._exit(1)
    try:
        os.kill(watched, 0)
    except ProcessLookupError:
        os._exit(1)
    except PermissionError:  # pragma: no cover
        pass
    if watch:
        threading.Thread(target=_watch_process, args=(watched, interval), daemon=True, name="parent-watch").start()
    return by_kernel


def single_threaded_worker(parent_pid: int) -> None:
    """Pool initializer: ignore SIGINT, die with the parent, one thread for BLAS/OpenCV/numba."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent(parent_pid)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        pass
    try:
        import cv2

        cv2.setNumThreads(1)
    except ImportError:  # pragma: no cover
        pass
    try:
        import numba

        numba.set_num_threads(1)
    except (ImportError, ValueError):  # pragma: no cover
        pass


#: Imported first by the forkserver: it exits with the process that started it (see that module).
FORKSERVER_GUARD = "robustlab.data.forkserver_guard"


def pool_context(preload: Sequence[str] = ()) -> multiprocessing.context.BaseContext:
    """forkserver (workers fork from a clean process that imported ``preload`` once), else spawn.

    Called from the main thread, the forkserver also imports :data:`FORKSERVER_GUARD` first, so
    it and its workers die with this process even when it is killed by SIGKILL. (Not from other
    threads: the kernel ties that guard to the thread that starts the forkserver, and a
    short-lived thread would take the forkserver with it. Workers still end within
    :data:`PARENT_WATCH_INTERVAL` through :func:`exit_with_parent`.)
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        guard = [FORKSERVER_GUARD] if threading.current_thread() is threading.main_thread() else []
        ctx.set_forkserver_preload([*guard, *(m for m in preload if m != FORKSERVER_GUARD)])
        return ctx
    return multiprocessing.get_context("spawn")  # pragma: no cover - Windows, macOS default


def run_jobs(fn: Callable[[T], R], tasks: Iterable[T], workers: int, *, preload: Sequence[str] = (),
             queue_per_worker: int = 4) -> Iterator[R]:
    """Yield ``fn(task)`` for every task, in completion order, on ``workers`` processes.

    ``fn`` must be a module-level function and tasks picklable. With ``workers <= 1`` the tasks
    run in this process, in order. An exception in ``fn`` propagates (the queue is dropped;
    tasks in flight finish).
    """
    if workers <= 1:
        for task in tasks:
            yield fn(task)
        return
    todo = iter(tasks)
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(preload),
                                  initializer=single_threaded_worker, initargs=(os.getpid(),))
    running: set[cf.Future] = set()
    try:
        while True:
            for task in todo:
                running.add(pool.submit(fn, task))
                if len(running) >= workers * queue_per_worker:
                    break
            if not running:
                break
            done, running = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                yield fut.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
