"""Parity of robustlab's ImageNet-C-bar / CIFAR-10-C-bar corruptions with the reference code.

For every held-out image, corruption, severity and seed, runs the reference
(facebookresearch/augmentation-corruption, ``imagenet_c_bar/corrupt.py``, checked out at run
time into a temporary folder and run in its own pinned environment, see ``perf/cbar_refenv.py``)
after ``np.random.seed(seed)`` and robustlab with ``rng=np.random.RandomState(seed)``, and
compares the uint8 outputs.

Every C-bar corruption draws its randomness from NumPy's global generator (and inner
``RandomState(seed)`` objects seeded from it), so all 15 are seeded in the reference and are
compared pixel for pixel; the harness also prints a statistic of the change (mean |corrupted -
clean|) on both sides, which must agree whenever the pixels do.

The held-out images are scikit-image's bundled photographs (none of them is used by the unit
tests), brought to the released geometry: ImageNet-C-bar's resize 256 / centre crop 224 (the
``imagenet-c`` profile, the ImageNet-C-bar table) and CIFAR's 32x32 (the ``cifar`` profile, the
CIFAR-10-C-bar table).

Printed per set and corruption: the smallest per-cell fraction of identical values, the largest
absolute difference, the mean |change| of robustlab and of the reference, the seconds per call
of each (wall, one thread), and ``ok`` (identical >= 99.99 % in every cell and max diff <= 1;
the kernels are in fact bit-identical).

Usage::

    python perf/parity_cbar.py                               # both sets, severities 1-5, seeds 0-2
    python perf/parity_cbar.py --sets cifar10-c-bar --seeds 0-9 --json cbar.json
    python perf/parity_cbar.py --write-golden tests/fixtures/corruptions/cbar_golden.json

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from cbar_refenv import CbarJob, ensure_cbar_env, run_cbar_reference  # noqa: E402

from robustlab.corruptions import corrupt  # noqa: E402
from robustlab.corruptions.cbar import SETS  # noqa: E402

MIN_IDENTICAL = 0.9999
MAX_DIFF = 1
#: The profile and image side of each released set.
SET_GEOMETRY = {"imagenet-c-bar": ("imagenet-c", 224), "cifar10-c-bar": ("cifar", 32)}
HELD_OUT = ("chelsea", "coffee", "rocket", "coins")


def held_out_images(side: int, names=HELD_OUT) -> dict[str, np.ndarray]:
    """scikit-image photographs as uint8 side x side x 3: resize the short side to 256/224 x side
    (bilinear), centre crop (ImageNet-C-bar's geometry; grey images repeated to 3 channels)."""
    import skimage.data as data
    from PIL import Image

    out = {}
    for name in names:
        img = getattr(data, name)()
        if img.ndim == 2:
            img = np.repeat(img[:, :, None], 3, axis=2)
        pil = Image.fromarray(img[:, :, :3])
        short = round(side * 256 / 224) if side == 224 else side
        w, h = pil.size
        scale = short / min(w, h)
        pil = pil.resize((max(short, round(w * scale)), max(short, round(h * scale))), Image.BILINEAR)
        w, h = pil.size
        left, top = (w - side) // 2, (h - side) // 2
        out[f"{name}_{side}"] = np.ascontiguousarray(np.asarray(pil.crop((left, top, left + side, top + side))))
    return out


def parse_range(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def parity(sets: list[str], severities: list[int], seeds: list[int], corruptions: list[str] | None = None,
           *, images_per_set: int = len(HELD_OUT)) -> list[dict]:
    """Compare every (set, image, corruption, severity, seed); one summary row per set and corruption."""
    python = ensure_cbar_env()
    rows = []
    for set_name in sets:
        profile, side = SET_GEOMETRY[set_name]
        images = held_out_images(side, HELD_OUT[:images_per_set])
        keys = list(images)
        names = [n for n in SETS[set_name] if corruptions is None or n in corruptions]
        jobs = [CbarJob(i, n, SETS[set_name][n][s - 1], seed) for i in range(len(keys)) for n in names
                for s in severities for seed in seeds]
        t0 = time.perf_counter()
        print(f"{set_name}: {len(jobs)} reference calls...", file=sys.stderr, flush=True)
        ref = run_cbar_reference([images[k] for k in keys], jobs, python=python)
        print(f"{set_name}: reference done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        for n in names:  # load the compiled kernels before timing
            corrupt(images[keys[0]], n, 1, rng=0, profile=profile)
        cells: dict[str, list] = {n: [] for n in names}
        for job, (ref_out, ref_sec) in zip(jobs, ref):
            img = images[keys[job.image]]
            severity = SETS[set_name][job.name].index(job.param) + 1
            t1 = time.perf_counter()
            ours = corrupt(img, job.name, severity, rng=np.random.RandomState(job.seed), profile=profile)
            sec = time.perf_counter() - t1
            diff = np.abs(ours.astype(np.int16) - ref_out.astype(np.int16))
            cells[job.name].append((float(np.mean(diff == 0)), int(diff.max()),
                                    float(np.abs(ours.astype(np.int16) - img).mean()),
                                    float(np.abs(ref_out.astype(np.int16) - img).mean()), sec, ref_sec))
        for n in names:
            ident, mx, ch_o, ch_r, s_o, s_r = (np.asarray(c) for c in zip(*cells[n]))
            rows.append({"set": set_name, "corruption": n, "cells": len(ident), "identical_min": float(ident.min()),
                         "max_diff": int(mx.max()), "change_ours": float(ch_o.mean()), "change_ref": float(ch_r.mean()),
                         "seconds_ours": float(s_o.mean()), "seconds_ref": float(s_r.mean()),
                         "ok": bool(ident.min() >= MIN_IDENTICAL and mx.max() <= MAX_DIFF)})
    return rows


def print_rows(rows: list[dict]) -> None:
    print(f"{'set':<15}{'corruption':<33}{'cells':>6}{'identical':>11}{'max':>5}{'|chg| ours':>11}"
          f"{'|chg| ref':>10}{'ours s':>9}{'ref s':>9}  ok")
    for r in rows:
        print(f"{r['set']:<15}{r['corruption']:<33}{r['cells']:>6}{100 * r['identical_min']:>10.3f}%{r['max_diff']:>5}"
              f"{r['change_ours']:>11.2f}{r['change_ref']:>10.2f}{r['seconds_ours']:>9.4f}{r['seconds_ref']:>9.3f}"
              f"  {'yes' if r['ok'] else 'NO'}")


def write_golden(path: Path) -> None:
    """The unit tests' record of the reference (tests/corruptions/test_cbar.py runs without it):
    one 32 px image under the CIFAR-10-C-bar table and one 48 px image under the ImageNet-C-bar
    table, every corruption of the set at severities 1-5 with seed 7; per output the SHA-256 of
    its bytes and its sum (a JSON file, a few kilobytes; the inputs are stored as lists)."""
    import hashlib

    small = held_out_images(32, ("chelsea",))["chelsea_32"]
    medium = held_out_images(224, ("coffee",))["coffee_224"][::4, ::4][:48, :48].copy()
    inputs = {"cifar10-c-bar": small, "imagenet-c-bar": medium}
    seed = 7
    record: dict = {"seed": seed, "reference": "facebookresearch/augmentation-corruption imagenet_c_bar/corrupt.py",
                    "inputs": {k: v.tolist() for k, v in inputs.items()}, "outputs": {}}
    for set_name, img in inputs.items():
        names = list(SETS[set_name])
        jobs = [CbarJob(0, n, SETS[set_name][n][s - 1], seed) for n in names for s in range(1, 6)]
        for job, (out, _) in zip(jobs, run_cbar_reference([img], jobs)):
            severity = SETS[set_name][job.name].index(job.param) + 1
            out = np.ascontiguousarray(out, dtype=np.uint8)
            record["outputs"][f"{set_name}/{job.name}/{severity}"] = {
                "sha256": hashlib.sha256(out.tobytes()).hexdigest(), "sum": int(out.sum(dtype=np.int64))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, separators=(",", ":")))
    print(f"wrote {len(record['outputs'])} reference outputs to {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="imagenet-c-bar,cifar10-c-bar", help="released sets, comma-separated")
    parser.add_argument("--corruptions", default=None, help="only these corruptions (comma-separated)")
    parser.add_argument("--severities", default="1-5", help="e.g. 1-5 or 1,3,5")
    parser.add_argument("--seeds", default="0-2", help="seeds, e.g. 0-2")
    parser.add_argument("--images", type=int, default=len(HELD_OUT), help=f"held-out images per set (1-{len(HELD_OUT)})")
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    parser.add_argument("--write-golden", type=Path, help="write the unit tests' reference outputs and exit")
    args = parser.parse_args(argv)
    if args.write_golden:
        write_golden(args.write_golden)
        return 0
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = [s for s in sets if s not in SET_GEOMETRY]
    if unknown:
        raise SystemExit(f"unknown set(s) {unknown}: use {', '.join(SET_GEOMETRY)}")
    corruptions = args.corruptions.split(",") if args.corruptions else None
    rows = parity(sets, parse_range(args.severities), parse_range(args.seeds), corruptions, images_per_set=args.images)
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
