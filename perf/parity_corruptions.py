"""Parity of robustlab's corruptions with imagecorruptions 1.1.2 (faithful mode).

For every image, corruption and severity, runs imagecorruptions in the pinned reference
environment (``perf/refenv.py``) after ``np.random.seed(seed)`` and robustlab with
``rng=np.random.RandomState(seed)``, and compares the two uint8 outputs.

Printed per corruption (over all images and severities):

- ``identical``: the smallest per-(image, severity) fraction of identical pixel values;
- ``max``: the largest absolute difference anywhere; ``mean``: the mean absolute difference;
- for corruptions whose reference cannot be seeded (impulse_noise), the per-image fraction of
  altered values instead (mean of UNSEEDED_REPEATS draws each), robustlab vs reference, and
  their largest relative gap;
- ``ours s`` / ``ref s``: summed best-of-``--repeat`` time per call (CPU seconds by default);
- ``ok``: the target met (seedable: identical >= 99.9 % and max <= 1; unseedable: altered
  fractions within 5 %).

Usage::

    python perf/parity_corruptions.py                       # all 19, severities 1-5
    python perf/parity_corruptions.py --corruptions blur,fog --images small
    python perf/parity_corruptions.py --json parity.json --timing
    python perf/parity_corruptions.py --write-golden tests/fixtures/corruptions/golden.npz
    python perf/parity_corruptions.py --write-small-golden tests/fixtures/corruptions/small_golden.npz
    python perf/parity_corruptions.py --write-defocus-kernels tests/fixtures/corruptions/defocus_kernels.npz
    python perf/parity_corruptions.py --imagemagick-motion  # hendrycks' Wand route (optional)

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from refenv import ReferenceJob, ensure_refenv, reference_env, run_reference_jobs  # noqa: E402

from robustlab.corruptions import get_corruption, resolve_corruptions  # noqa: E402
from robustlab.corruptions import corrupt  # noqa: E402

#: Target for seedable corruptions: fraction of identical values and largest difference.
MIN_IDENTICAL = 0.999
MAX_DIFF = 1
#: Target for unseedable ones: relative gap of the fraction of altered values.
MAX_ALTERED_GAP = 0.05
#: Unseedable corruptions are run this many times per cell (robustlab with seeds seed..seed+R-1,
#: the reference unseeded) and the mean altered fractions compared: a single draw of a small
#: image at severity 1 has a sampling spread of several percent on its own.
UNSEEDED_REPEATS = 8


# --------------------------------------------------------------------------- test images

def _resize(img: np.ndarray, h: int, w: int) -> np.ndarray:
    import cv2

    return cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)


def test_images(which: str = "all") -> dict[str, np.ndarray]:
    """Named uint8 test images from scikit-image's bundled data.

    ``small``: a 224x224 colour crop and a 96x136 grey one (fast). ``all``: also chelsea
    (300x451 colour), coins (303x384 grey) and rocket (427x640 colour). ``timing``: the
    224x224 colour image and rocket (427x640), the speed benchmark's two sizes. Or a
    comma-separated list of the names above (e.g. ``rocket_427x640``).
    """
    import skimage.data as data

    astronaut = _resize(data.astronaut()[:400, 50:450], 224, 224)
    sets = {
        "astronaut_224": lambda: astronaut,
        "camera_96x136_grey": lambda: _resize(data.camera(), 96, 136),
        "chelsea_300x451": data.chelsea,
        "coins_303x384_grey": data.coins,
        "rocket_427x640": data.rocket,
    }
    presets = {
        "small": ["astronaut_224", "camera_96x136_grey"],
        "all": list(sets),
        "timing": ["astronaut_224", "rocket_427x640"],
    }
    names = presets.get(which) or [n.strip() for n in which.split(",") if n.strip()]
    unknown = [n for n in names if n not in sets]
    if unknown:
        raise SystemExit(f"unknown test image(s) {unknown}: use small, all, timing or names from {list(sets)}")
    return {n: np.ascontiguousarray(sets[n]()) for n in names}


# --------------------------------------------------------------------------- comparison

@dataclass
class Cell:
    """Comparison of one (image, corruption, severity)."""

    image: str
    corruption: str
    severity: int
    identical: float
    max_diff: int
    mean_diff: float
    altered_ours: float
    altered_ref: float
    seconds_ours: float
    seconds_ref: float


@dataclass
class Row:
    """Summary of one corruption over all its cells."""

    corruption: str
    seedable: bool
    identical_min: float
    max_diff: int
    mean_diff: float
    altered_gap: float
    seconds_ours: float
    seconds_ref: float
    ok: bool
    cells: list = field(default_factory=list)


def as_rgb(img: np.ndarray) -> np.ndarray:
    return np.repeat(img[:, :, None], 3, axis=2) if img.ndim == 2 else img


def compare(ours: np.ndarray, ref: np.ndarray, clean: np.ndarray) -> tuple[float, int, float, float, float]:
    """(identical fraction, max |diff|, mean |diff|, altered fraction ours, altered fraction ref)."""
    if ours.shape != ref.shape:
        raise AssertionError(f"shape mismatch: robustlab {ours.shape} vs reference {ref.shape}")
    diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
    clean3 = as_rgb(clean)
    return (float(np.mean(diff == 0)), int(diff.max()), float(diff.mean()),
            float(np.mean(ours != clean3)), float(np.mean(ref != clean3)))


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def run_ours(img: np.ndarray, name: str, severity: int, seed: int, repeat: int = 1,
             clock: str = "cpu") -> tuple[np.ndarray, float]:
    """robustlab's output and its best time over ``repeat`` calls (``clock``: cpu or wall)."""
    timer = CLOCKS[clock]
    best = float("inf")
    for _ in range(repeat):
        t0 = timer()
        out = corrupt(img, name, severity, rng=np.random.RandomState(seed))
        best = min(best, timer() - t0)
    return out, best


def parity(images: dict[str, np.ndarray], names: list[str], severities: list[int], seed: int,
           *, progress: bool = True, repeat: int = 1, clock: str = "cpu") -> list[Row]:
    """Run both implementations on every cell and summarise per corruption.

    Timings (one process each, one call at a time, OpenCV and BLAS limited to one thread) are
    the minimum over ``repeat`` calls on each side, in CPU seconds by default (steady on a busy
    machine) or wall seconds; perf/speed_corruptions.py is the speed benchmark proper.
    """
    python = ensure_refenv()
    keys = list(images)
    jobs = []
    for i in range(len(keys)):
        for n in names:
            repeats = 1 if get_corruption(n).seedable else UNSEEDED_REPEATS
            jobs += [ReferenceJob(i, n, s, seed + r) for s in severities for r in range(repeats)]
    t0 = time.perf_counter()
    if progress:
        print(f"reference: {len(jobs)} calls on {len(keys)} images...", file=sys.stderr, flush=True)
    ref = run_reference_jobs([images[k] for k in keys], jobs, python=python, repeat=repeat, clock=clock)
    if progress:
        print(f"reference done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    for n in names:  # compile / warm caches so timings are steady-state
        run_ours(images[keys[0]], n, 1, seed)
    grouped: dict[tuple, list] = {}
    for job, result in zip(jobs, ref):
        grouped.setdefault((job.image, job.name, job.severity), []).append((job.seed, result))
    cells: dict[str, list[Cell]] = {n: [] for n in names}
    for (i, name, severity), runs in grouped.items():
        key = keys[i]
        stats, secs = [], []
        for run_seed, (ref_out, ref_sec) in runs:
            ours, sec = run_ours(images[key], name, severity, run_seed, repeat, clock)
            stats.append(compare(ours, ref_out, images[key]))
            secs.append((sec, ref_sec))
        ident, mx, mean, alt_o, alt_r = (np.asarray(col) for col in zip(*stats))
        cells[name].append(Cell(key, name, severity, float(ident.min()), int(mx.max()), float(mean.mean()),
                                float(alt_o.mean()), float(alt_r.mean()),
                                float(np.mean([s[0] for s in secs])), float(np.mean([s[1] for s in secs]))))
    rows = []
    for n in names:
        cs = cells[n]
        seedable = get_corruption(n).seedable
        gap = max(abs(c.altered_ours - c.altered_ref) / max(c.altered_ref, 1e-12) for c in cs)
        ident = min(c.identical for c in cs)
        mx = max(c.max_diff for c in cs)
        ok = gap <= MAX_ALTERED_GAP if not seedable else (ident >= MIN_IDENTICAL and mx <= MAX_DIFF)
        rows.append(Row(n, seedable, ident, mx, float(np.mean([c.mean_diff for c in cs])), gap,
                        sum(c.seconds_ours for c in cs), sum(c.seconds_ref for c in cs), ok, cs))
    return rows


def format_table(rows: list[Row]) -> str:
    head = (f"{'corruption':<18} {'identical':>10} {'max':>4} {'mean':>8} {'altered gap':>12} "
            f"{'ours s':>8} {'ref s':>8} {'speed-up':>9}  ok")
    lines = [head, "-" * len(head)]
    for r in rows:
        ident = f"{100 * r.identical_min:9.3f}%" if r.seedable else f"{'(unseeded)':>10}"
        speed = r.seconds_ref / r.seconds_ours if r.seconds_ours > 0 else float("inf")
        lines.append(f"{r.corruption:<18} {ident} {r.max_diff:>4} {r.mean_diff:>8.4f} "
                     f"{100 * r.altered_gap:>11.2f}% {r.seconds_ours:>8.3f} {r.seconds_ref:>8.3f} "
                     f"{speed:>8.1f}x  {'yes' if r.ok else 'NO'}")
    tot_o = sum(r.seconds_ours for r in rows)
    tot_r = sum(r.seconds_ref for r in rows)
    lines.append("-" * len(head))
    lines.append(f"{'total':<18} {'':>10} {'':>4} {'':>8} {'':>12} {tot_o:>8.3f} {tot_r:>8.3f} "
                 f"{tot_r / max(tot_o, 1e-12):>8.1f}x")
    return "\n".join(lines)


# --------------------------------------------------------------------------- ImageMagick motion blur

def imagemagick_motion_parity(images: dict[str, np.ndarray], seed: int) -> str:
    """robustlab's ``imagenet-c`` motion_blur vs ImageMagick (hendrycks' route), all severities.

    The angle is drawn as the kernel draws it (``RandomState(seed).uniform(-45, 45)``) and
    handed to ImageMagick, so both blur along the same line.
    """
    from refenv import run_imagemagick_motion_blur

    from robustlab.corruptions.blur import MOTION
    from robustlab.corruptions.ops import severity_param

    keys = list(images)
    jobs, ours = [], []
    for i, k in enumerate(keys):
        for s in range(1, 6):
            radius, sigma = severity_param(MOTION, "imagenet-c", s)
            angle = np.random.RandomState(seed).uniform(-45, 45)
            jobs.append((i, radius, sigma, angle))
            ours.append(corrupt(images[k], "motion_blur", s, rng=np.random.RandomState(seed), profile="imagenet-c"))
    refs = run_imagemagick_motion_blur([as_rgb(images[k]) for k in keys], jobs)
    lines = ["motion_blur (imagenet-c profile) vs ImageMagick via Wand:",
             f"{'image':<22} {'sev':>3} {'identical':>10} {'max':>4} {'mean':>8}"]
    for (i, _, _, _), s, o, r in zip(jobs, [s for _ in keys for s in range(1, 6)], ours, refs):
        d = np.abs(o.astype(np.int16) - r.astype(np.int16))
        lines.append(f"{keys[i]:<22} {s:>3} {100 * np.mean(d == 0):>9.3f}% {int(d.max()):>4} {d.mean():>8.4f}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- golden fixtures

#: What the golden fixtures hold: small images and two severities, so the file stays ~200 KB.
GOLDEN_SEVERITIES = (2, 5)


def golden_images() -> dict[str, np.ndarray]:
    """Two small inputs: a 36x44 colour crop and a 33x35 grey one (odd sizes on purpose)."""
    import skimage.data as data

    return {"colour_36x44": _resize(data.astronaut()[:400, 50:450], 36, 44),
            "grey_33x35": _resize(data.camera(), 33, 35)}


def write_golden(path: Path, names: list[str], seed: int) -> None:
    """Save reference outputs of ``names`` x GOLDEN_SEVERITIES on :func:`golden_images`.

    Layout of the .npz: ``input/<image>`` arrays and ``<image>/<corruption>/<severity>`` outputs
    (uint8), plus ``meta`` (json: seed, reference versions).
    """
    imgs = golden_images()
    keys = list(imgs)
    jobs = [ReferenceJob(i, n, s, seed) for i in range(len(keys)) for n in names for s in GOLDEN_SEVERITIES]
    outs = run_reference_jobs([imgs[k] for k in keys], jobs)
    arrays = {f"input/{k}": v for k, v in imgs.items()}
    for job, (out, _) in zip(jobs, outs):
        arrays[f"{keys[job.image]}/{job.name}/{job.severity}"] = out
    meta = {"seed": seed, "reference": "imagecorruptions==1.1.2", "severities": list(GOLDEN_SEVERITIES),
            "made_by": "perf/parity_corruptions.py --write-golden"}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB, {len(jobs)} outputs)")


#: The small-size fixtures (issue 21): the corruptions whose kernels depend on the image size at
#: small sizes (motion blur's line stops at the image border; defocus blur's reflected border
#: and its tap sums), every severity, and for motion blur several seeds (angles).
SMALL_GOLDEN_CORRUPTIONS = ("motion_blur", "defocus_blur")
SMALL_GOLDEN_SEEDS = {"motion_blur": (0, 1), "defocus_blur": (0,)}


def small_golden_images() -> dict[str, np.ndarray]:
    """Four inputs at and near the 32 px minimum (square, wide, tall and grey, noise): motion
    blur's 41-tap line (severity 5) leaves a 32 px wide image at angles within about 37 degrees
    of the horizontal, so the reference's early stop is exercised."""
    import skimage.data as data

    noise = np.random.default_rng(21).integers(0, 256, (36, 40, 3), dtype=np.uint8)
    return {"astronaut_32x32": _resize(data.astronaut()[:400, 50:450], 32, 32),
            "chelsea_32x40": _resize(data.chelsea(), 32, 40),
            "camera_40x32_grey": _resize(data.camera(), 40, 32),
            "noise_36x40": noise}


def write_small_golden(path: Path) -> None:
    """Save reference outputs of :data:`SMALL_GOLDEN_CORRUPTIONS`, severities 1-5, on
    :func:`small_golden_images`. Keys ``<image>/<corruption>/<severity>/<seed>``; ``input/<image>``
    and ``meta`` as in :func:`write_golden`."""
    imgs = small_golden_images()
    keys = list(imgs)
    jobs = [ReferenceJob(i, n, s, seed) for i in range(len(keys)) for n in SMALL_GOLDEN_CORRUPTIONS
            for s in range(1, 6) for seed in SMALL_GOLDEN_SEEDS[n]]
    outs = run_reference_jobs([imgs[k] for k in keys], jobs)
    arrays = {f"input/{k}": v for k, v in imgs.items()}
    for job, (out, _) in zip(jobs, outs):
        arrays[f"{keys[job.image]}/{job.name}/{job.severity}/{job.seed}"] = out
    meta = {"reference": "imagecorruptions==1.1.2", "made_by": "perf/parity_corruptions.py --write-small-golden",
            "seeds": SMALL_GOLDEN_SEEDS}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB, {len(jobs)} outputs)")


# Runs in the reference environment: imagecorruptions' own disk() for every (radius, alias blur).
_DISK_WRITER = r"""
import json, sys
import numpy as np
import cv2
from imagecorruptions.corruptions import disk
params = json.loads(sys.argv[2])
np.savez_compressed(sys.argv[1], opencv=np.frombuffer(cv2.__version__.encode(), dtype=np.uint8),
                    **{f"{r}_{a}": disk(radius=r, alias_blur=a) for r, a in params})
"""


def write_defocus_kernels(path: Path) -> None:
    """Save the reference's defocus disks (imagecorruptions' ``disk``, the reference env's OpenCV)
    for every (radius, alias blur) of every profile's table, keys ``<radius>_<alias blur>``."""
    import subprocess
    import tempfile

    from robustlab.corruptions.blur import DEFOCUS

    params = sorted({p for table in DEFOCUS.values() for p in table})
    python = ensure_refenv()
    with tempfile.TemporaryDirectory(prefix="robustlab-disk-") as tmp:
        script = Path(tmp) / "disk.py"
        script.write_text(_DISK_WRITER)
        out = Path(tmp) / "kernels.npz"
        proc = subprocess.run([str(python), str(script), str(out), json.dumps(params)], env=reference_env(),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the reference run failed:\n{proc.stderr[-3000:]}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp_path = path.with_name(path.name + ".tmp.npz")
        tmp_path.write_bytes(out.read_bytes())
        tmp_path.replace(path)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB, {len(params)} kernels)")


# --------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corruptions", default="all",
                        help="names or subsets, comma-separated (default: all)")
    parser.add_argument("--severities", default="1,2,3,4,5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--images", default="all",
                        help="small, all, timing, or comma-separated image names (default: all)")
    parser.add_argument("--json", type=Path, help="also write the full results here")
    parser.add_argument("--repeat", type=int, default=1,
                        help="time each call as the minimum of N runs, on both sides (default 1)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: process CPU seconds (default, steady on a busy machine); wall: elapsed")
    parser.add_argument("--imagemagick-motion", action="store_true",
                        help="compare the imagenet-c motion_blur with ImageMagick (needs libmagickwand) and exit")
    parser.add_argument("--write-golden", type=Path, metavar="NPZ",
                        help="write reference outputs for the golden tests and exit")
    parser.add_argument("--write-small-golden", type=Path, metavar="NPZ",
                        help="write the small-size reference outputs (motion and defocus blur) and exit")
    parser.add_argument("--write-defocus-kernels", type=Path, metavar="NPZ",
                        help="write the reference's defocus disks (every profile's table) and exit")
    args = parser.parse_args(argv)
    names = resolve_corruptions(args.corruptions)
    if args.write_golden:
        write_golden(args.write_golden, names, args.seed)
        return 0
    if args.write_small_golden:
        write_small_golden(args.write_small_golden)
        return 0
    if args.write_defocus_kernels:
        write_defocus_kernels(args.write_defocus_kernels)
        return 0
    severities = [int(s) for s in args.severities.split(",")]
    images = test_images(args.images)
    if args.imagemagick_motion:
        print(imagemagick_motion_parity(images, args.seed))
        return 0
    print("images: " + ", ".join(f"{k} {v.shape}" for k, v in images.items()))
    import cv2

    cv2.setNumThreads(1)  # single core, like the reference
    rows = parity(images, names, severities, args.seed, repeat=args.repeat, clock=args.clock)
    print(format_table(rows))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    bad = [r.corruption for r in rows if not r.ok]
    if bad:
        print("targets missed: " + ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
