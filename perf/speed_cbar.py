"""Speed of robustlab's ImageNet-C-bar / CIFAR-10-C-bar corruptions against the reference, one core.

Run as ``python perf/speed_corruptions.py --cbar`` (or this file directly). For each released set
at its size (ImageNet-C-bar: 224x224, the ImageNet-C-bar table; CIFAR-10-C-bar: 32x32, its
table), times robustlab's ``corrupt`` here and the reference's transforms
(facebookresearch/augmentation-corruption, in the pinned environment of ``perf/cbar_refenv.py``),
both one thread, CPU seconds by default; a figure is the minimum over ``--repeat`` calls
(``--reference-repeat`` for the reference: its per-pixel Python loops take seconds a call at 224
px), after one untimed warm-up call per corruption (numba loads its compiled kernels).

Printed per set and corruption: milliseconds per image for the 5 severities together, robustlab
vs reference and the ratio; then the totals. Target: no corruption slower than the reference
(within :data:`TOLERANCE`: circular_motion_blur and transverse_chromatic_abberation spend their
time in the same ``scipy.ndimage`` spline routines on both sides, rotate and zoom, so they run
at parity, not faster). Exit status 1 when the reference ran and the target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from robustlab.corruptions import corrupt  # noqa: E402
from robustlab.corruptions.cbar import SETS  # noqa: E402

#: Each released set: its profile and image side.
SET_GEOMETRY = {"imagenet-c-bar": ("imagenet-c", 224), "cifar10-c-bar": ("cifar", 32)}
TIMERS = {"cpu": time.process_time, "wall": time.perf_counter}
#: A corruption misses the target when the reference is faster by more than this fraction.
TOLERANCE = 0.10


def time_ours(image: np.ndarray, name: str, profile: str, repeat: int, clock: str) -> float:
    """Seconds of robustlab for the 5 severities of ``name`` (per severity the minimum over ``repeat`` calls)."""
    timer = TIMERS[clock]
    corrupt(image, name, 1, rng=0, profile=profile)  # warm-up
    total = 0.0
    for severity in range(1, 6):
        best = float("inf")
        for r in range(repeat):
            rs = np.random.RandomState(r)  # seeding outside the clock, as the reference's np.random.seed
            t0 = timer()
            corrupt(image, name, severity, rng=rs, profile=profile)
            best = min(best, timer() - t0)
        total += best
    return total


def time_reference(image: np.ndarray, set_name: str, names: list[str], repeat: int, clock: str) -> dict[str, float]:
    """Seconds of the reference for the 5 severities of each of ``names``."""
    from cbar_refenv import CbarJob, run_cbar_reference

    jobs = [CbarJob(0, n, SETS[set_name][n][s], 0) for n in names for s in range(5)]
    out = run_cbar_reference([image], jobs, repeat=repeat, clock=clock)
    totals = {n: 0.0 for n in names}
    for job, (_, sec) in zip(jobs, out):
        totals[job.name] += sec
    return totals


def run(sets: list[str], *, repeat: int = 3, reference_repeat: int = 1, clock: str = "cpu",
        reference: bool = True, corruptions: list[str] | None = None) -> dict:
    """Time every corruption of ``sets``; returns the rows and totals (seconds per image, 5 severities)."""
    from speed_corruptions import bench_image, cpu_model

    rows, why_not = [], None
    for set_name in sets:
        profile, side = SET_GEOMETRY[set_name]
        image = bench_image(side, side)
        names = [n for n in SETS[set_name] if corruptions is None or n in corruptions]
        ours = {n: time_ours(image, n, profile, repeat, clock) for n in names}
        ref = None
        if reference and why_not is None:
            try:
                ref = time_reference(image, set_name, names, reference_repeat, clock)
            except (RuntimeError, OSError, FileNotFoundError) as exc:
                why_not = f"the reference could not be run: {exc}"
        for n in names:
            rows.append({"set": set_name, "corruption": n, "ours_s": ours[n], "ref_s": ref[n] if ref else None,
                         "ratio": ref[n] / ours[n] if ref and ours[n] > 0 else None})
    return {"cpu": cpu_model(), "clock": clock, "rows": rows, "reference_missing": why_not}


def print_rows(result: dict) -> None:
    print(f"CPU: {result['cpu']}; {result['clock']} seconds, one thread; ms per image for severities 1-5 together")
    print(f"{'set':<16}{'corruption':<33}{'robustlab ms':>13}{'reference ms':>14}{'ratio':>9}")
    for set_name in dict.fromkeys(r["set"] for r in result["rows"]):
        rows = [r for r in result["rows"] if r["set"] == set_name]
        for r in rows:
            ref = "–" if r["ref_s"] is None else f"{1000 * r['ref_s']:.1f}"
            ratio = "–" if r["ratio"] is None else f"{r['ratio']:.0f}x"
            print(f"{set_name:<16}{r['corruption']:<33}{1000 * r['ours_s']:>13.2f}{ref:>14}{ratio:>9}")
        ours = sum(r["ours_s"] for r in rows)
        if all(r["ref_s"] is not None for r in rows):
            ref_total = sum(r["ref_s"] for r in rows)
            print(f"{set_name:<16}{'total':<33}{1000 * ours:>13.2f}{1000 * ref_total:>14.1f}{ref_total / ours:>8.0f}x")
        else:
            print(f"{set_name:<16}{'total':<33}{1000 * ours:>13.2f}")
    if result["reference_missing"]:
        print(f"robustlab figures only: {result['reference_missing']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="imagenet-c-bar,cifar10-c-bar", help="released sets, comma-separated")
    parser.add_argument("--corruptions", default=None, help="only these corruptions (comma-separated)")
    parser.add_argument("--repeat", type=int, default=3, help="robustlab calls per severity; the minimum is kept")
    parser.add_argument("--reference-repeat", type=int, default=1, help="reference calls per severity (default 1)")
    parser.add_argument("--clock", choices=list(TIMERS), default="cpu", help="cpu (default) or wall seconds")
    parser.add_argument("--no-reference", action="store_true", help="time robustlab only")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in SET_GEOMETRY]
    if unknown:
        raise SystemExit(f"unknown set(s) {unknown}: use {', '.join(SET_GEOMETRY)}")
    result = run(sets, repeat=args.repeat, reference_repeat=args.reference_repeat, clock=args.clock,
                 reference=not args.no_reference,
                 corruptions=args.corruptions.split(",") if args.corruptions else None)
    print_rows(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    slower = [r["corruption"] for r in result["rows"] if r["ratio"] is not None and r["ratio"] < 1 - TOLERANCE]
    if slower:
        print(f"MISSED: slower than the reference: {', '.join(slower)}")
    return 1 if slower else 0


if __name__ == "__main__":
    raise SystemExit(main())
