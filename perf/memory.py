"""Peak memory of a process tree while something runs: the sum of the PSS (proportional set size:
shared pages split between the processes that map them) of this process and its descendants
(the forkserver and the loading workers), sampled every ``interval`` seconds from
``/proc/<pid>/smaps_rollup`` (Linux). Shared memory (the batch-slot arena) is counted once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return out


def tree_pss_mib(root: int | None = None) -> float:
    """PSS of ``root`` (default this process) and all its descendants, in MiB."""
    todo, seen, total = [root or os.getpid()], set(), 0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _pss_kib(pid)
        todo.extend(_children(pid))
    return total / 1024


def available() -> bool:
    return os.path.exists(f"/proc/{os.getpid()}/smaps_rollup")


def peak_above(fn: Callable[[], Any], interval: float = 0.2) -> tuple[Any, float, float]:
    """``(fn(), peak MiB above the start, MiB at the start)`` of this process tree while ``fn`` runs."""
    start = tree_pss_mib()
    peak = [start]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(interval):
            peak[0] = max(peak[0], tree_pss_mib())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        result = fn()
    finally:
        done.set()
        thread.join()
    peak[0] = max(peak[0], tree_pss_mib())
    return result, peak[0] - start, start
