"""Parity of the torch corruption backend (on the CPU) with the numpy path, 19 corruptions x 5 severities.

The numpy path is the definition (it reproduces imagecorruptions 1.1.2; see
perf/parity_corruptions.py). The torch backend draws its randomness from torch generators, so
only the corruptions that draw nothing can match pixel for pixel; the others are compared in
distribution. Three checks, each with the bound of issue 21 / SPEC section 7:

1. **Pixels** on the parity images (perf/parity_corruptions.py's ``test_images``: five
   photographs from 96x136 to 427x640, two of them grey, given as RGB). Random corruptions
   get rounds of ``--seeds`` draws per image on each side, until the standard error of the
   strength gap is at most ``--target-se`` or ``--max-draws`` draws are made (both printed):

   - deterministic corruptions (gaussian, defocus and zoom blur, brightness, contrast,
     saturate, pixelate, jpeg_compression): mean |torch - numpy| <= 1.0 grey level (the worst
     image and severity is reported, with the largest difference anywhere);
   - random ones: the strength of change, mean |corrupted - clean| over the images and draws,
     within 10 % between the backends (worst severity reported), and the Kolmogorov-Smirnov
     statistic of the two distributions of signed pixel changes (corrupted - clean), reported
     without a bound;
   - glass blur, also with the numpy path's own shuffle offsets fed to the torch kernel: the
     difference left is the parallel shuffle's (zero: it is exact) plus float rounding.

2. **A classifier's error**: the demo CNN (``robustlab.demo.models.load_demo_model("cnn")``) on
   ``--scenes`` demo test scenes (64x64, ``robustlab.demo.world``), corrupted by each backend
   (the same ids and seed), top-1 error per corruption and severity: the two errors within 1.5
   points. The paired standard error of the difference is printed beside it, so whether n is
   large enough for the bound to mean something can be read off the table.

3. The outcome per corruption: ``ok``, or the bounds it missed. ``--record`` writes it to
   ``src/robustlab/corruptions/torch/parity.json``, which ``robustlab list`` shows.

Usage::

    python perf/parity_torch.py                                  # everything (about an hour of CPU)
    python perf/parity_torch.py --corruptions fog,frost --scenes 500 --max-draws 64
    python perf/parity_torch.py --json parity_torch.json --record

Exit status 1 when a bound is missed.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import torch  # noqa: E402

from parity_corruptions import as_rgb, test_images  # noqa: E402  (the parity images)

from robustlab.corruptions import corrupt, corrupt_batch, resolve_corruptions  # noqa: E402
from robustlab.corruptions.torch.parity import PARITY_FILE  # noqa: E402
from robustlab.fsutil import atomic_write_text  # noqa: E402

SEVERITIES = (1, 2, 3, 4, 5)
#: Corruptions that draw nothing: compared pixel for pixel.
DETERMINISTIC = ("gaussian_blur", "defocus_blur", "zoom_blur", "brightness", "contrast", "saturate",
                 "pixelate", "jpeg_compression")
#: The bounds (SPEC section 7).
MAX_MEAN_DIFF = 1.0          # grey levels, deterministic corruptions
MAX_STRENGTH_GAP = 0.10      # relative, random corruptions
MAX_ERROR_GAP = 1.5          # top-1 error points, every corruption
RECORD_PATH = BENCH_DIR.parent / "src" / "robustlab" / "corruptions" / "torch" / PARITY_FILE


# --------------------------------------------------------------------------- pixel statistics

def delta_histogram(corrupted: np.ndarray, clean: np.ndarray) -> np.ndarray:
    """Counts of the signed changes corrupted - clean, -255..255 (511 bins)."""
    delta = corrupted.astype(np.int16) - clean.astype(np.int16)
    return np.bincount((delta + 255).ravel(), minlength=511).astype(np.int64)


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic of two histograms over the same bins."""
    ca = np.cumsum(a) / max(a.sum(), 1)
    cb = np.cumsum(b) / max(b.sum(), 1)
    return float(np.abs(ca - cb).max())


@dataclass
class PixelCell:
    """One (corruption, severity) over the parity images and draws."""

    corruption: str
    severity: int
    strength_numpy: float            # mean |corrupted - clean|, grey levels
    strength_torch: float
    strength_gap: float              # |torch - numpy| / numpy
    strength_se: float               # standard error of the gap (relative)
    draws: int                       # draws per image on each side
    ks: float
    mean_diff: float | None = None   # deterministic: worst image's mean |torch - numpy|
    max_diff: int | None = None


def numpy_outputs(img: np.ndarray, name: str, severity: int, seed: int, ids: list[int]) -> list[np.ndarray]:
    return corrupt_batch([img] * len(ids), name, severity, seed=seed, ids=ids)


def torch_outputs(img: np.ndarray, name: str, severity: int, seed: int, ids: list[int]) -> np.ndarray:
    batch = torch.from_numpy(np.ascontiguousarray(img))[None].expand(len(ids), -1, -1, -1).contiguous()
    return corrupt_batch(batch, name, severity, seed=seed, ids=ids).numpy()


def strength_gap_se(per_image_n: list[list[float]], per_image_t: list[list[float]]) -> tuple[float, float, float, float]:
    """(mean strength numpy, torch, relative gap, its standard error) from per-image draw lists.

    Every image has the same number of draws on both sides, so the images' own differences
    cancel; the standard error comes from the draws' spread within each image.
    """
    m = len(per_image_n)
    sn = float(np.mean([np.mean(v) for v in per_image_n]))
    st = float(np.mean([np.mean(v) for v in per_image_t]))
    var = sum(np.var(a, ddof=1) / len(a) + np.var(b, ddof=1) / len(b)
              for a, b in zip(per_image_n, per_image_t) if len(a) > 1) / m ** 2
    return sn, st, abs(st - sn) / max(sn, 1e-12), float(np.sqrt(var)) / max(sn, 1e-12)


def pixel_parity(images: dict[str, np.ndarray], names: list[str], seed: int, draws: int, max_draws: int,
                 target_se: float, progress: bool = True) -> list[PixelCell]:
    """Pixel statistics per (corruption, severity). Random corruptions get rounds of ``draws``
    draws per image on each side until the strength gap's standard error is at most
    ``target_se`` (relative) or ``max_draws`` draws per image are made."""
    cells = []
    for name in names:
        t0 = time.perf_counter()
        deterministic = name in DETERMINISTIC
        for s in SEVERITIES:
            hist_n, hist_t = np.zeros(511, np.int64), np.zeros(511, np.int64)
            strengths_n = [[] for _ in images]
            strengths_t = [[] for _ in images]
            diffs, maxes = [], []
            made = 0
            while True:
                ids = list(range(made, made + (1 if deterministic else draws)))
                for k, img in enumerate(images.values()):
                    for a, b in zip(numpy_outputs(img, name, s, seed, ids), torch_outputs(img, name, s, seed, ids)):
                        hist_n += delta_histogram(a, img)
                        hist_t += delta_histogram(b, img)
                        strengths_n[k].append(np.abs(a.astype(np.int16) - img).mean())
                        strengths_t[k].append(np.abs(b.astype(np.int16) - img).mean())
                        d = np.abs(a.astype(np.int16) - b.astype(np.int16))
                        diffs.append(float(d.mean()))
                        maxes.append(int(d.max()))
                made += len(ids)
                sn, st, gap, se = strength_gap_se(strengths_n, strengths_t)
                if deterministic or se <= target_se or made >= max_draws:
                    break
            cell = PixelCell(name, s, sn, st, gap, se, made, ks_statistic(hist_n, hist_t))
            if deterministic:
                cell.mean_diff, cell.max_diff = max(diffs), max(maxes)
            cells.append(cell)
        if progress:
            print(f"  pixels: {name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return cells


def glass_same_offsets(images: dict[str, np.ndarray], seed: int) -> list[dict]:
    """Torch glass blur with the numpy path's own offsets vs the numpy path, per severity."""
    from robustlab.corruptions.blur import GLASS
    from robustlab.corruptions._kernels import severity_param
    from robustlab.corruptions.torch.blur import glass_blur_offsets
    from robustlab.corruptions.torch.ops import to_levels

    rows = []
    for s in SEVERITIES:
        sigma, d, iterations = severity_param(GLASS, "imagecorruptions", s)
        diffs, maxes, identical = [], [], []
        for img in images.values():
            h, w = img.shape[:2]
            rs = np.random.RandomState(seed)
            offsets = [torch.from_numpy(rs.randint(-d, d, size=(h - 2 * d, w - 2 * d, 2)))[None]
                       for _ in range(iterations)]
            x = torch.from_numpy(img).permute(2, 0, 1)[None].float() / 255
            got = to_levels(glass_blur_offsets(x, sigma, d, offsets))[0].permute(1, 2, 0).numpy().astype(np.int16)
            want = corrupt(img, "glass_blur", s, rng=np.random.RandomState(seed)).astype(np.int16)
            diff = np.abs(got - want)
            diffs.append(float(diff.mean()))
            maxes.append(int(diff.max()))
            identical.append(float(np.mean(diff == 0)))
        rows.append({"severity": s, "mean_diff": max(diffs), "max_diff": max(maxes), "identical_min": min(identical)})
    return rows


# --------------------------------------------------------------------------- classifier

@dataclass
class ErrorCell:
    corruption: str
    severity: int
    error_numpy: float     # top-1 error, percent
    error_torch: float
    gap: float             # torch - numpy, points
    paired_se: float       # standard error of the gap, points
    discordant: float      # fraction of scenes whose correctness differs


def classify(model, images_nhwc: np.ndarray | torch.Tensor, batch: int = 500) -> np.ndarray:
    x = torch.as_tensor(images_nhwc)
    preds = []
    with torch.no_grad():
        for i in range(0, len(x), batch):
            chunk = x[i:i + batch].permute(0, 3, 1, 2).float() / 255
            preds.append(model(chunk).argmax(1).numpy())
    return np.concatenate(preds)


def torch_in_chunks(images: np.ndarray, name: str, severity: int, seed: int, ids: list, chunk: int = 1000) -> np.ndarray:
    """The torch backend over a large set, ``chunk`` images per call (same results: per-image seeds)."""
    return np.concatenate([corrupt_batch(torch.from_numpy(images[i:i + chunk]), name, severity, seed=seed,
                                         ids=ids[i:i + chunk]).numpy() for i in range(0, len(images), chunk)])


def error_parity(names: list[str], n_scenes: int, seed: int, progress: bool = True) -> tuple[list[ErrorCell], float]:
    from robustlab.demo.models import load_demo_model
    from robustlab.demo.world import make_scenes

    scenes = make_scenes("test", n_scenes, seed=0)
    model = load_demo_model("cnn")
    clean_error = 100 * float(np.mean(classify(model, scenes.images) != scenes.labels))
    ids = [f"scene-{i}" for i in range(n_scenes)]
    cells = []
    for name in names:
        t0 = time.perf_counter()
        for s in SEVERITIES:
            ours = np.stack(corrupt_batch(list(scenes.images), name, s, seed=seed, ids=ids))
            theirs = torch_in_chunks(scenes.images, name, s, seed, ids)
            right_n = classify(model, ours) == scenes.labels
            right_t = classify(model, theirs) == scenes.labels
            paired = right_n.astype(float) - right_t.astype(float)   # error_t - error_n per scene
            cells.append(ErrorCell(name, s, 100 * (1 - right_n.mean()), 100 * (1 - right_t.mean()),
                                   100 * float(paired.mean()), 100 * float(paired.std(ddof=1) / np.sqrt(n_scenes)),
                                   float(np.mean(right_n != right_t))))
        if progress:
            print(f"  classifier: {name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return cells, clean_error


# --------------------------------------------------------------------------- summary

@dataclass
class Row:
    corruption: str
    kind: str                       # deterministic / random
    mean_diff: float | None         # deterministic: worst mean |diff|
    max_diff: int | None
    strength_gap: float             # worst severity, relative
    strength_se: float              # its standard error
    ks: float                       # worst severity
    error_gap: float                # worst severity, points (signed, torch - numpy)
    error_se: float                 # its paired standard error
    ok: bool
    missed: list = field(default_factory=list)


def summarise(names: list[str], pixels: list[PixelCell], errors: list[ErrorCell]) -> list[Row]:
    rows = []
    for name in names:
        pc = [c for c in pixels if c.corruption == name]
        ec = [c for c in errors if c.corruption == name]
        deterministic = name in DETERMINISTIC
        missed = []
        mean_diff = max((c.mean_diff for c in pc), default=None) if deterministic else None
        max_diff = max((c.max_diff for c in pc), default=None) if deterministic else None
        worst_strength = max(pc, key=lambda c: c.strength_gap) if pc else None
        gap = worst_strength.strength_gap if worst_strength else 0.0
        ks = max((c.ks for c in pc), default=0.0)
        worst = max(ec, key=lambda c: abs(c.gap)) if ec else None
        if deterministic and mean_diff is not None and mean_diff > MAX_MEAN_DIFF:
            missed.append(f"mean |diff| {mean_diff:.2f} > {MAX_MEAN_DIFF}")
        if not deterministic and gap > MAX_STRENGTH_GAP:
            missed.append(f"strength {100 * gap:.1f}% > {100 * MAX_STRENGTH_GAP:.0f}% (severity {worst_strength.severity})")
        if worst is not None and abs(worst.gap) > MAX_ERROR_GAP:
            missed.append(f"error {worst.gap:+.2f} points (severity {worst.severity})")
        rows.append(Row(name, "deterministic" if deterministic else "random", mean_diff, max_diff, gap,
                        worst_strength.strength_se if worst_strength else 0.0, ks,
                        worst.gap if worst else 0.0, worst.paired_se if worst else 0.0, not missed, missed))
    return rows


def format_table(rows: list[Row], n_scenes: int) -> str:
    head = (f"{'corruption':<18} {'kind':<6} {'mean|d|':>7} {'max':>4} {'strength':>9} {'(se)':>6} {'KS':>6} "
            f"{'error gap':>10} {'(se)':>6}  ok")
    lines = [head, "-" * len(head)]
    for r in rows:
        md = f"{r.mean_diff:7.3f}" if r.mean_diff is not None else f"{'-':>7}"
        mx = f"{r.max_diff:4d}" if r.max_diff is not None else f"{'-':>4}"
        lines.append(f"{r.corruption:<18} {r.kind[:6]:<6} {md} {mx} {100 * r.strength_gap:8.2f}% "
                     f"{100 * r.strength_se:5.2f}% {r.ks:6.3f} "
                     f"{r.error_gap:+10.2f} {r.error_se:6.2f}  {'yes' if r.ok else 'NO: ' + '; '.join(r.missed)}")
    lines.append(f"mean|d|, max: deterministic corruptions, worst image and severity (bound {MAX_MEAN_DIFF}); "
                 f"strength: worst severity's gap (bound {100 * MAX_STRENGTH_GAP:.0f}% for random ones); KS: worst "
                 f"severity; error gap: worst severity, torch - numpy, {n_scenes} scenes (bound {MAX_ERROR_GAP}).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corruptions", default="all", help="names or subsets, comma-separated (default all)")
    parser.add_argument("--images", default="all", help="parity images: all, small, or names (default all)")
    parser.add_argument("--seeds", type=int, default=16, help="draws per image per round for the random "
                        "corruptions, on each side (default 16)")
    parser.add_argument("--max-draws", type=int, default=256, help="most draws per image and severity "
                        "(default 256)")
    parser.add_argument("--target-se", type=float, default=0.02, help="stop drawing when the strength gap's "
                        "standard error is at most this, relative (default 0.02: the 10%% bound is 5 of them)")
    parser.add_argument("--scenes", type=int, default=10000, help="demo test scenes for the classifier check "
                        "(default 10000; 0 skips it)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--record", action="store_true",
                        help=f"write the per-corruption outcome to {RECORD_PATH.relative_to(BENCH_DIR.parent)}")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    names = resolve_corruptions(args.corruptions)
    images = {k: as_rgb(v) for k, v in test_images(args.images).items()}
    print("images: " + ", ".join(f"{k} {v.shape}" for k, v in images.items()))
    print(f"torch {torch.__version__} on the CPU ({platform.processor() or platform.machine()}), "
          f"{args.threads} threads; random cells: rounds of {args.seeds} draws per image until the strength "
          f"gap's standard error <= {100 * args.target_se:.1f}% or {args.max_draws} draws; {args.scenes} scenes",
          flush=True)
    t0 = time.perf_counter()
    pixels = pixel_parity(images, names, args.seed, args.seeds, args.max_draws, args.target_se)
    glass = glass_same_offsets(images, args.seed) if "glass_blur" in names else []
    errors, clean_error = error_parity(names, args.scenes, args.seed) if args.scenes else ([], None)
    rows = summarise(names, pixels, errors)
    print(format_table(rows, args.scenes))
    if clean_error is not None:
        print(f"demo cnn clean top-1 error on the {args.scenes} scenes: {clean_error:.2f}%")
    for g in glass:
        print(f"glass_blur with the numpy path's offsets, severity {g['severity']}: mean |diff| {g['mean_diff']:.4f}, "
              f"max {g['max_diff']}, identical {100 * g['identical_min']:.3f}% (worst image)")
    print(f"done in {time.perf_counter() - t0:.0f} s")
    bad = [r.corruption for r in rows if not r.ok]
    if bad:
        print("bounds missed: " + ", ".join(bad))
    meta = {"made_by": "perf/parity_torch.py", "torch": torch.__version__, "device": "cpu",
            "images": {k: list(v.shape) for k, v in images.items()}, "draws_per_round": args.seeds,
            "max_draws": args.max_draws, "target_se": args.target_se, "scenes": args.scenes,
            "seed": args.seed, "bounds": {"mean_diff": MAX_MEAN_DIFF, "strength_gap": MAX_STRENGTH_GAP,
                                          "error_gap_points": MAX_ERROR_GAP}}
    if args.json:
        atomic_write_text(args.json, json.dumps({**meta, "clean_error": clean_error, "rows": [asdict(r) for r in rows],
                                                 "pixels": [asdict(c) for c in pixels],
                                                 "errors": [asdict(c) for c in errors], "glass_same_offsets": glass},
                                                indent=1))
    if args.record:
        record = load_record()
        record.update(meta)
        entries = record.setdefault("corruptions", {})
        for r in rows:
            entries[r.corruption] = {"kind": r.kind, "ok": r.ok, "missed": r.missed,
                                     "mean_diff": r.mean_diff, "max_diff": r.max_diff,
                                     "strength_gap": round(r.strength_gap, 4), "strength_se": round(r.strength_se, 4),
                                     "ks": round(r.ks, 4),
                                     "error_gap_points": round(r.error_gap, 3), "error_se_points": round(r.error_se, 3),
                                     "scenes": args.scenes}
        atomic_write_text(RECORD_PATH, json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"recorded in {RECORD_PATH}")
    return 1 if bad else 0


def load_record() -> dict:
    """The current record (so a run on a subset updates only its corruptions)."""
    if RECORD_PATH.is_file():
        return json.loads(RECORD_PATH.read_text(encoding="utf-8"))
    return {}


if __name__ == "__main__":
    raise SystemExit(main())
