"""Images per second of every torch corruption kernel on one device, at one size and batch.

Each corruption runs through :func:`robustlab.corruptions.corrupt_batch` (seeds, generators,
draws, kernel, clipping: the whole call a user makes) on a float (N, 3, S, S) batch already on
the device: a natural photo at S x S px, repeated N times with N different ids. Per corruption
and severity the figure is the fastest of ``--repeats`` calls after an untimed warm-up, wall
clock, synchronised on an accelerator; a corruption's images/s is N x 5 over the sum of its
five severities' times (as ``perf/gpu_check.py``'s torch_backend part).

Issue 33's target on a GPU of the H200's class: every kernel at 20,000 images/s or more at
224 px, batch 256. On a CPU the figures show the cost of each kernel, not the target.

Usage::

    python perf/speed_torch_kernels.py                                   # cuda if available, else cpu
    python perf/speed_torch_kernels.py --device cpu --batch 64 --names motion_blur,snow,spatter
    python perf/speed_torch_kernels.py --quick                           # smoke run (tests)

Prints a table and, last, one JSON line (``{"device": ..., "images_per_s": {...}, ...}``).
``kernel_throughput`` is the function other benchmarks (``perf/gpu_check.py``) can import.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

#: Issue 33's throughput target for every kernel, images/s at 224 px, batch 256, on a GPU.
TARGET = 20_000
SEVERITIES = (1, 2, 3, 4, 5)


def default_device() -> str:
    """``cuda`` when torch sees a GPU, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def synchronize(device: str) -> None:
    import torch

    kind = str(device).split(":")[0]
    if kind == "cuda":
        torch.cuda.synchronize()
    elif kind == "mps":
        torch.mps.synchronize()


def photo_batch(device: str, batch: int, size: int):
    """float (batch, 3, size, size) in [0, 1] on ``device``: one photo repeated."""
    import torch
    from speed_corruptions import bench_image

    x = torch.from_numpy(bench_image(size, size)).permute(2, 0, 1)[None].float().div(255)
    return x.expand(batch, -1, -1, -1).contiguous().to(device)


def kernel_throughput(device: str | None = None, batch: int = 256, size: int = 224,
                      names: list[str] | tuple[str, ...] | str | None = None, repeats: int = 2,
                      severities: tuple[int, ...] = SEVERITIES, seed: int = 0, clock: str = "wall") -> dict:
    """Images/s of each torch corruption kernel on ``device``.

    Parameters
    ----------
    device : str, optional
        A torch device (default :func:`default_device`).
    batch, size : int
        Images per call and their side in pixels.
    names : corruption names, a comma-separated string or subset name, optional
        Default: all 19.
    repeats : int
        Timed calls per corruption and severity; the fastest is kept.
    severities : tuple of int
        Severities timed (a corruption's figure is over all of them).
    clock : {"wall", "cpu"}
        ``wall``: elapsed time (synchronised on an accelerator); ``cpu``: this process's CPU
        time (on a CPU with one torch thread, steadier than wall time on a shared machine).

    Returns
    -------
    dict
        ``{"device", "batch", "size", "repeats", "clock", "severities", "images_per_s": {name: float},
        "seconds": {name: {severity: float}}, "total_images_per_s", "below_target": [names]}``;
        ``below_target`` lists the kernels under :data:`TARGET` (meaningful on a GPU only).
    """
    from robustlab.corruptions import corrupt_batch, resolve_corruptions

    device = default_device() if device is None else str(device)
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be wall or cpu; got {clock!r}")
    timer = time.perf_counter if clock == "wall" else time.process_time
    if names is None:
        names = "all"
    chosen = resolve_corruptions(names if isinstance(names, str) else ",".join(names))
    x = photo_batch(device, batch, size)
    ids = list(range(batch))
    seconds: dict[str, dict[int, float]] = {}
    rates: dict[str, float] = {}
    for name in chosen:
        seconds[name] = {}
        for s in severities:
            corrupt_batch(x[:2], name, s, seed=seed, ids=ids[:2])   # warm-up: caches, lazy kernels
            synchronize(device)
            best = float("inf")
            for _ in range(max(1, int(repeats))):
                t0 = timer()
                corrupt_batch(x, name, s, seed=seed, ids=ids)
                synchronize(device)
                best = min(best, timer() - t0)
            seconds[name][s] = best
        rates[name] = batch * len(severities) / sum(seconds[name].values())
    total = sum(sum(v.values()) for v in seconds.values())
    return {"device": device, "batch": batch, "size": size, "repeats": int(repeats), "clock": clock,
            "severities": list(severities), "images_per_s": rates, "seconds": seconds,
            "total_images_per_s": batch * len(severities) * len(chosen) / total if total else 0.0,
            "below_target": [n for n, r in rates.items() if r < TARGET]}


def format_table(result: dict) -> str:
    """The figures as a plain-text table, slowest first marked against :data:`TARGET`."""
    lines = [f"{'corruption':<18} {'images/s':>12}   (device {result['device']}, batch {result['batch']}, "
             f"{result['size']} px, best of {result['repeats']}, {result['clock']} clock)"]
    for name, rate in result["images_per_s"].items():
        mark = "" if rate >= TARGET else f"   below {TARGET:,}"
        lines.append(f"{name:<18} {rate:12,.0f}{mark}")
    lines.append(f"{'all':<18} {result['total_images_per_s']:12,.0f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    parser.add_argument("--batch", type=int, default=256, help="images per call (default 256)")
    parser.add_argument("--size", type=int, default=224, help="image side in px (default 224)")
    parser.add_argument("--names", default="all", help="corruptions or subsets, comma-separated (default all)")
    parser.add_argument("--repeats", type=int, default=2, help="timed calls per cell, fastest kept (default 2)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's own)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time (default) or this process's CPU time (steadier on a shared CPU, 1 thread)")
    parser.add_argument("--quick", action="store_true", help="smoke run: batch 4, 64 px, one severity, 1 repeat")
    args = parser.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    batch, size, repeats, severities = args.batch, args.size, args.repeats, SEVERITIES
    if args.quick:
        batch, size, repeats, severities = 4, 64, 1, (3,)
    result = kernel_throughput(args.device, batch, size, args.names, repeats, severities, clock=args.clock)
    result.update(torch=torch.__version__, threads=torch.get_num_threads(), cpu_count=os.cpu_count(),
                  gpu=torch.cuda.get_device_name(0) if result["device"].startswith("cuda") else None)
    print(format_table(result), flush=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
