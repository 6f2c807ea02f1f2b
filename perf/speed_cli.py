"""Command-line start-up: how long the commands a user types often take before any work.

Times, as separate processes (best of ``--repeat``, wall clock), the bare interpreter
(``python -c pass``, the floor), ``robustlab --help``, ``robustlab list``, ``robustlab show`` of a
stored run, and the rerun of a complete stored ``corrupted`` evaluation (which must answer from
the store without importing torch or running the model). Prints seconds and the ratio to the
floor. Target: the rerun in at most 1.5 s.

    python perf/speed_cli.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from speed_corruptions import cpu_model  # the CPU's name with its family/model numbers

HERE = Path(__file__).resolve().parent
TINY = HERE.parent / "tests" / "engine" / "tiny_models.py"


def timed(argv: list[str], repeat: int, cwd: Path) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def make_run(root: Path) -> list[str]:
    """A labelled folder and a complete stored `corrupted` run on it; returns the evaluate argv."""
    import numpy as np

    from robustlab.data.images import write_image

    rng = np.random.default_rng(0)
    for label in ("cat", "dog", "fox"):
        for k in range(4):
            write_image(root / "data" / label / f"{k}.png", rng.integers(0, 256, (40, 40, 3), dtype=np.uint8))
    evaluate = [sys.executable, "-m", "robustlab.cli", "evaluate", "-m", f"python:{TINY}:make_tiny3", "-b",
                "corrupted", "-d", "data", "-c", "fog,contrast", "-s", "1,2", "--store", "store", "--workers", "0",
                "--no-progress"]
    subprocess.run(evaluate, cwd=root, check=True, stdout=subprocess.DEVNULL)
    return evaluate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        evaluate = make_run(root)
        cli = [sys.executable, "-m", "robustlab.cli"]
        rows = [("python -c pass (floor)", [sys.executable, "-c", "pass"]),
                ("robustlab --help", [*cli, "--help"]),
                ("robustlab list", [*cli, "list"]),
                ("robustlab runs", [*cli, "runs", "--store", "store"]),
                ("rerun of a complete stored run", evaluate)]
        times = [(label, timed(command, args.repeat, root)) for label, command in rows]
    floor = times[0][1]
    print(f"CLI start-up, best of {args.repeat}, wall clock; {cpu_model()}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    for label, seconds in times:
        print(f"  {label:<34}{seconds:7.2f} s  {seconds / floor:6.1f}x the floor")
    rerun = times[-1][1]
    print(f"rerun target <= 1.5 s: {'met' if rerun <= 1.5 else 'MISSED'} ({rerun:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
