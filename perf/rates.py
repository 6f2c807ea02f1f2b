"""What the training-side harnesses (speed_finetune, speed_stylize) share: images per second of a
run, by wall clock and by CPU time, and the table that prints them per device."""

from __future__ import annotations

import time
from collections.abc import Callable

GPU_PENDING = "pending (no GPU)"


def timed(fn: Callable[[], int]) -> tuple[float, float]:
    """Run ``fn`` (it returns how many images it processed): (images per wall second, images per
    CPU second of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    n = fn()
    return n / (time.perf_counter() - wall), n / max(1e-9, time.process_time() - cpu)


def print_rates(table: dict[str, dict[str, tuple[float, float]]], *, width: int, digits: int,
                gpu_digits: int | None = None) -> None:
    """One row per run: CPU images/s (wall), CPU images per CPU-second, GPU images/s or pending.
    ``table`` is ``{device: {run name: timed(...)}}`` with ``cpu`` always present; ``digits``
    decimals (``gpu_digits`` for the GPU column, default the same)."""
    gpu_digits = digits if gpu_digits is None else gpu_digits
    print(f"{'':{width}s} {'CPU img/s (wall)':>18s} {'CPU img/CPU-s':>14s} {'GPU img/s':>20s}")
    for name in table["cpu"]:
        wall, cpu = table["cpu"][name]
        gpu = f"{table['cuda'][name][0]:.{gpu_digits}f}" if "cuda" in table else GPU_PENDING
        print(f"{name:{width}s} {wall:18.{digits}f} {cpu:14.{digits}f} {gpu:>20s}")
