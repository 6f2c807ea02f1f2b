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
    python perf/parity_torch.py --table             # the recorded parity.json as a Markdown table
    python perf/parity_torch.py --glass-offsets     # glass blur with the numpy path's offsets only

Exit status 1 when a bound is missed.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import torch
from parity_corruptions import as_rgb, test_images

from robustlab.corruptions import corrupt, corrupt_batch, resolve_corruptions
from robustlab.corruptions.torch.parity import PARITY_FILE
from robustlab.fsutil import atomic_write_text

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


def numpy_outputs(img: np.ndarray, name: str, severity: int, seed: int, ids: list) -> list[np.ndarray]:
    return corrupt_batch([img] * len(ids), name, severity, seed=seed, ids=ids)


def torch_outputs(img: np.ndarray, name: str, severity: int, seed: int, ids: list) -> np.ndarray:
    batch = torch.from_numpy(np.ascontiguousarray(img))[None].expand(len(ids), -1, -1, -1).contiguous()
    return corrupt_batch(batch, name, severity, seed=seed, ids=ids).numpy()


def strength_gap_se(per_image_n: list[list[float]], per_image_t: list[list[float]]) -> tuple[float, float, float, float]:
    """(mean strength numpy, torch, relative gap, its standard error) from per-image draw lists.

    Every image has the same number of draws on both sides, so the images' own differences
    cancel; the standard error comes from the draws' spread within each image (the draws of
    different images are independent: their ids differ).
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
                count = 1 if deterministic else draws
                for k, (key, img) in enumerate(images.items()):
                    # ids name the image too, so the draws of different images are independent
                    ids = [f"{key}/{j}" for j in range(made, made + count)]
                    for a, b in zip(numpy_outputs(img, name, s, seed, ids), torch_outputs(img, name, s, seed, ids)):
                        hist_n += delta_histogram(a, img)
                        hist_t += delta_histogram(b, img)
                        strengths_n[k].append(np.abs(a.astype(np.int16) - img).mean())
                        strengths_t[k].append(np.abs(b.astype(np.int16) - img).mean())
                        d = np.abs(a.astype(np.int16) - b.astype(np.int16))
                        diffs.append(float(d.mean()))
                        maxes.append(int(d.max()))
                made += count
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


def one_pass_shuffle(img: np.ndarray, offsets: np.ndarray, d: int) -> np.ndarray:
    """The shuffle as a naive parallel copy: every visited pixel reads the unshuffled image
    (what the sequential loop is not; shows how much the chains of copies matter)."""
    h, w = img.shape[:2]
    out = img.copy()
    rows = (h - d - np.arange(h - 2 * d))[:, None]      # visit order: rows and columns descending
    cols = (w - d - np.arange(w - 2 * d))[None, :]
    out[rows, cols] = img[rows + offsets[..., 1], cols + offsets[..., 0]]
    return out


def glass_same_offsets(images: dict[str, np.ndarray], seed: int) -> list[dict]:
    """Torch glass blur with the numpy path's own offsets vs the numpy path, per severity.

    Also the shuffle alone on the clean images: the torch parallel shuffle (pointer jumping)
    against the numpy path's sequential loop, and a naive one-pass parallel copy against the
    loop (fractions of pixels that differ, largest over the images).
    """
    from robustlab.corruptions.ops import glass_shuffle as sequential_shuffle
    from robustlab.corruptions.ops import severity_param
    from robustlab.corruptions.blur import GLASS
    from robustlab.corruptions.torch.blur import glass_blur_offsets, glass_shuffle
    from robustlab.corruptions.torch.ops import to_levels

    rows = []
    for s in SEVERITIES:
        sigma, d, iterations = severity_param(GLASS, "imagecorruptions", s)
        diffs, maxes, identical, shuffle_differs, one_pass_differs = [], [], [], [], []
        for img in images.values():
            h, w = img.shape[:2]
            rs = np.random.RandomState(seed)
            drawn = [rs.randint(-d, d, size=(h - 2 * d, w - 2 * d, 2)) for _ in range(iterations)]
            offsets = [torch.from_numpy(o)[None] for o in drawn]
            x = torch.from_numpy(img).permute(2, 0, 1)[None].float() / 255
            got = to_levels(glass_blur_offsets(x, sigma, d, offsets))[0].permute(1, 2, 0).numpy().astype(np.int16)
            want = corrupt(img, "glass_blur", s, rng=np.random.RandomState(seed)).astype(np.int16)
            diff = np.abs(got - want)
            diffs.append(float(diff.mean()))
            maxes.append(int(diff.max()))
            identical.append(float(np.mean(diff == 0)))
            # the shuffle alone, same offsets: parallel (torch) and one-pass copy vs the sequential loop
            sequential = sequential_shuffle(img.copy(), d, iterations, np.random.RandomState(seed))
            parallel = torch.from_numpy(img).permute(2, 0, 1)[None]
            naive = img
            for step, o in zip(offsets, drawn):
                parallel = glass_shuffle(parallel, step, d)
                naive = one_pass_shuffle(naive, o, d)
            parallel = parallel[0].permute(1, 2, 0).numpy()
            shuffle_differs.append(float(np.mean((parallel != sequential).any(axis=2))))
            one_pass_differs.append(float(np.mean((naive != sequential).any(axis=2))))
        rows.append({"severity": s, "mean_diff": max(diffs), "max_diff": max(maxes), "identical_min": min(identical),
                     "shuffle_differs_max": max(shuffle_differs), "one_pass_differs_max": max(one_pass_differs)})
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
    """Top-1 classes of uint8 NHWC images (channels-last memory: 1.7x faster on a CPU)."""
    x = torch.as_tensor(images_nhwc)
    model = model.to(memory_format=torch.channels_last)
    preds = []
    with torch.inference_mode():
        for i in range(0, len(x), batch):
            chunk = (x[i:i + batch].permute(0, 3, 1, 2).float() / 255).contiguous(memory_format=torch.channels_last)
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

def pixel_fields(name: str, pixels: list[PixelCell]) -> dict:
    """The record fields of the pixel checks of one corruption (worst severity of each)."""
    pc = [c for c in pixels if c.corruption == name]
    worst = max(pc, key=lambda c: c.strength_gap)
    out = {"strength_gap": round(worst.strength_gap, 4), "strength_se": round(worst.strength_se, 4),
           "strength_severity": worst.severity, "ks": round(max(c.ks for c in pc), 4),
           "draws_max": max(c.draws for c in pc)}
    if name in DETERMINISTIC:
        out.update(mean_diff=round(max(c.mean_diff for c in pc), 4), max_diff=max(c.max_diff for c in pc))
    return out


def error_fields(name: str, errors: list[ErrorCell], n_scenes: int) -> dict:
    """The record fields of the classifier check of one corruption (its worst severity)."""
    worst = max((c for c in errors if c.corruption == name), key=lambda c: abs(c.gap))
    return {"error_gap_points": round(worst.gap, 3), "error_se_points": round(worst.paired_se, 3),
            "error_severity": worst.severity, "scenes": n_scenes}


def judge(entry: dict) -> list[str]:
    """The bounds an entry misses (empty when every measured bound holds)."""
    missed = []
    if entry.get("mean_diff") is not None and entry["mean_diff"] > MAX_MEAN_DIFF:
        missed.append(f"mean |diff| {entry['mean_diff']:.2f} > {MAX_MEAN_DIFF}")
    if entry.get("kind") == "random" and entry.get("strength_gap", 0) > MAX_STRENGTH_GAP:
        missed.append(f"strength {100 * entry['strength_gap']:.1f}% > {100 * MAX_STRENGTH_GAP:.0f}% "
                      f"(severity {entry['strength_severity']})")
    if abs(entry.get("error_gap_points", 0)) > MAX_ERROR_GAP:
        missed.append(f"error {entry['error_gap_points']:+.2f} points > {MAX_ERROR_GAP} "
                      f"(severity {entry['error_severity']})")
    return missed


def format_table(entries: dict[str, dict]) -> str:
    head = (f"{'corruption':<18} {'kind':<6} {'mean|d|':>7} {'max':>4} {'strength':>9} {'(se)':>6} {'KS':>6} "
            f"{'error gap':>10} {'(se)':>6} {'n':>6}  ok")
    lines = [head, "-" * len(head)]
    for name, e in entries.items():
        md = f"{e['mean_diff']:7.3f}" if e.get("mean_diff") is not None else f"{'-':>7}"
        mx = f"{e['max_diff']:4d}" if e.get("max_diff") is not None else f"{'-':>4}"
        st = (f"{100 * e['strength_gap']:8.2f}% {100 * e['strength_se']:5.2f}% {e['ks']:6.3f}"
              if "strength_gap" in e else f"{'-':>9} {'-':>6} {'-':>6}")
        er = (f"{e['error_gap_points']:+10.2f} {e['error_se_points']:6.2f} {e['scenes']:6d}"
              if "error_gap_points" in e else f"{'-':>10} {'-':>6} {'-':>6}")
        lines.append(f"{name:<18} {e['kind'][:6]:<6} {md} {mx} {st} {er}  "
                     f"{'yes' if e['ok'] else 'NO: ' + '; '.join(e['missed'])}")
    lines.append(f"mean|d|, max: deterministic corruptions, worst image and severity (bound {MAX_MEAN_DIFF}); "
                 f"strength: gap of mean |corrupted - clean| at the worst severity, with its standard error (bound "
                 f"{100 * MAX_STRENGTH_GAP:.0f}% for random corruptions); KS: worst severity; error gap: top-1 error "
                 f"torch - numpy at the worst severity, paired standard error, n scenes (bound {MAX_ERROR_GAP}).")
    return "\n".join(lines)


def _cell(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown_table(entries: dict[str, dict]) -> str:
    """The record's entries as a Markdown table (the figures of :func:`format_table`)."""
    lines = ["| corruption | kind | mean \\|d\\| | max | strength gap (se) | KS | error gap, points (se) | n | ok |",
             "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    for name, e in entries.items():
        strength = (f"{100 * e['strength_gap']:.2f} % ({100 * e['strength_se']:.2f})"
                    if "strength_gap" in e else "-")
        error = (f"{e['error_gap_points']:+.2f} ({e['error_se_points']:.2f}), sev. {e['error_severity']}"
                 if "error_gap_points" in e else "-")
        ok = "yes" if e.get("ok") else "**no**: " + "; ".join(e.get("missed", []))
        if e.get("ok") and set(e.get("measured", [])) != {"pixels", "classifier"}:
            ok += f" ({', '.join(e.get('measured', []))} only)"
        lines.append(f"| {name} | {e['kind']} | {_cell(e.get('mean_diff'), '.3f')} | {_cell(e.get('max_diff'), 'd')} "
                     f"| {strength} | {_cell(e.get('ks'), '.3f')} | {error} | {_cell(e.get('scenes'), ',d')} | {ok} |")
    return "\n".join(lines)


def markdown_glass(rows: list[dict]) -> str:
    """:func:`glass_same_offsets`' rows as a Markdown table."""
    lines = ["| severity | glass blur: mean \\|diff\\| | max diff | identical pixels | shuffle only: parallel "
             "vs sequential, pixels differing | one-pass copy vs sequential |",
             "|--:|--:|--:|--:|--:|--:|"]
    for g in rows:
        lines.append(f"| {g['severity']} | {g['mean_diff']:.4f} | {g['max_diff']} | {100 * g['identical_min']:.3f} % "
                     f"| {100 * g['shuffle_differs_max']:.3f} % | {100 * g['one_pass_differs_max']:.1f} % |")
    return "\n".join(lines)


def load_record() -> dict:
    """The current record (a run on a subset or one phase updates only what it measured)."""
    if RECORD_PATH.is_file():
        return json.loads(RECORD_PATH.read_text(encoding="utf-8"))
    return {}


def merge(entries: dict[str, dict], names: list[str], pixels: list[PixelCell] | None,
          errors: list[ErrorCell] | None, n_scenes: int) -> None:
    """Update ``entries`` (per corruption) with what this run measured, and judge them again."""
    for name in names:
        e = entries.setdefault(name, {})
        e["kind"] = "deterministic" if name in DETERMINISTIC else "random"
        if pixels:
            e.update(pixel_fields(name, pixels))
        if errors:
            e.update(error_fields(name, errors, n_scenes))
        e["missed"] = judge(e)
        e["measured"] = [m for m, key in (("pixels", "strength_gap"), ("classifier", "error_gap_points")) if key in e]
        e["ok"] = not e["missed"]


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
    parser.add_argument("--scenes", type=int, default=10000, help="demo test scenes for the classifier check of "
                        "the random corruptions (default 10000; 0 skips the check)")
    parser.add_argument("--scenes-deterministic", type=int, default=2000, help="scenes for the deterministic "
                        "corruptions, whose backends disagree on almost no scene (default 2000)")
    parser.add_argument("--skip-pixels", action="store_true", help="run the classifier check only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--json", type=Path, help="write every figure here (updated after each phase)")
    parser.add_argument("--table", action="store_true", help="print the recorded parity.json as a Markdown "
                        "table and exit (measures nothing)")
    parser.add_argument("--glass-offsets", action="store_true", help="run only glass blur with the numpy path's "
                        "own offsets (on --images) and print it as a Markdown table")
    parser.add_argument("--record", action="store_true",
                        help=f"update {RECORD_PATH.relative_to(BENCH_DIR.parent)} with the outcome (after each phase)")
    args = parser.parse_args(argv)
    if args.table:
        record = load_record()
        if not record.get("corruptions"):
            print(f"no parity recorded in {RECORD_PATH}", file=sys.stderr)
            return 1
        names = [n for n in resolve_corruptions(args.corruptions) if n in record["corruptions"]]
        print(markdown_table({n: record["corruptions"][n] for n in names}))
        print(f"\nRecorded by {record.get('made_by', '?')} with torch {record.get('torch', '?')} on the "
              f"{record.get('device', '?')}; bounds {record.get('bounds', {})}.")
        return 0
    torch.set_num_threads(args.threads)
    if args.glass_offsets:
        images = {k: as_rgb(v) for k, v in test_images(args.images).items()}
        print(markdown_glass(glass_same_offsets(images, args.seed)))
        print("\nimages: " + ", ".join(f"{k} {v.shape[0]}x{v.shape[1]}" for k, v in images.items())
              + f"; seed {args.seed}")
        return 0
    names = resolve_corruptions(args.corruptions)
    images = {k: as_rgb(v) for k, v in test_images(args.images).items()}
    print("images: " + ", ".join(f"{k} {v.shape}" for k, v in images.items()))
    print(f"torch {torch.__version__} on the CPU ({platform.processor() or platform.machine()}), "
          f"{args.threads} threads; random cells: rounds of {args.seeds} draws per image until the strength "
          f"gap's standard error <= {100 * args.target_se:.1f}% or {args.max_draws} draws; classifier: "
          f"{args.scenes} scenes (deterministic corruptions: {args.scenes_deterministic})", flush=True)
    t0 = time.perf_counter()
    record = load_record() if args.record else {}
    entries = {n: dict(record.get("corruptions", {}).get(n, {})) for n in names}
    meta = {"made_by": "perf/parity_torch.py", "torch": torch.__version__, "device": "cpu",
            "images": {k: list(v.shape) for k, v in images.items()}, "draws_per_round": args.seeds,
            "max_draws": args.max_draws, "target_se": args.target_se, "seed": args.seed,
            "bounds": {"mean_diff": MAX_MEAN_DIFF, "strength_gap": MAX_STRENGTH_GAP,
                       "error_gap_points": MAX_ERROR_GAP}}
    results: dict = {**meta, "pixels": [], "errors": [], "glass_same_offsets": [], "clean_error": None}

    def save(stage: str) -> None:
        results["entries"] = entries
        if args.json:
            atomic_write_text(args.json, json.dumps(results, indent=1))
        if args.record:
            record.update(meta)
            record.setdefault("corruptions", {}).update(entries)
            atomic_write_text(RECORD_PATH, json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"{stage}: saved" + (f" ({RECORD_PATH})" if args.record else ""), file=sys.stderr, flush=True)

    if not args.skip_pixels:
        pixels = pixel_parity(images, names, args.seed, args.seeds, args.max_draws, args.target_se)
        results["pixels"] = [asdict(c) for c in pixels]
        results["glass_same_offsets"] = glass_same_offsets(images, args.seed) if "glass_blur" in names else []
        merge(entries, names, pixels, None, 0)
        save("pixels")
    if args.scenes:
        for group, n in ((DETERMINISTIC, args.scenes_deterministic), (None, args.scenes)):
            chosen = [x for x in names if (x in DETERMINISTIC) == (group is not None)]
            if not chosen or not n:
                continue
            errors, clean_error = error_parity(chosen, n, args.seed)
            results["errors"] += [asdict(c) for c in errors]
            results.setdefault("clean_error_by_scenes", {})[str(n)] = clean_error
            merge(entries, chosen, None, errors, n)
            save(f"classifier ({n} scenes)")
    print(format_table(entries))
    for n, err in results.get("clean_error_by_scenes", {}).items():
        print(f"demo cnn clean top-1 error on the first {n} test scenes: {err:.2f}%")
    for g in results["glass_same_offsets"]:
        print(f"glass_blur with the numpy path's offsets, severity {g['severity']}: mean |diff| {g['mean_diff']:.4f}, "
              f"max {g['max_diff']}, identical {100 * g['identical_min']:.3f}% (worst image)")
    print(f"done in {time.perf_counter() - t0:.0f} s")
    bad = [n for n, e in entries.items() if not e["ok"]]
    if bad:
        print("bounds missed: " + ", ".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
