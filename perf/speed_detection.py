"""End-to-end Coco-C-style evaluation: robustlab against the reference pipeline, in one run.

A COCO-format set of generated images (``--images``, default 200, ``--size`` 640x480: coloured
shapes on a smooth background, 3 categories, boxes in ``annotations/instances_val2017.json``)
is evaluated under ``--corruptions`` (default the 15 benchmark ones) x ``--severities``
(1-5) plus clean, with a small detector (a 4-layer CNN with a centre-heatmap head defined
here, fixed random weights; ``--model torchvision`` uses torchvision's
fasterrcnn_mobilenet_v3_large_320_fpn with random weights instead).

- **robustlab**: ``robustlab.evaluate(model, "coco-c", ...)``: corruption at native
  resolution in ``--workers`` processes (robustlab's kernels), batched inference, per-unit
  Parquet, COCO AP family with faster-coco-eval, P / mPC / rPC.
- **reference**: the same pipeline as mmdetection's ``test_robustness.py`` runs it:
  imagecorruptions 1.1.2 (in the pinned environment of ``perf/refenv.py``; its time is
  the sum of the ``corrupt`` calls alone, no process start), the same detector on each image,
  and COCO AP with pycocotools' COCOeval per setting.

The robustlab split (corruption / inference / AP) is measured by timing each stage alone on
the same work in this process (corruption: reading + corrupting every image of every setting;
inference: the detector on every image of every setting; AP: the benchmark's ``metrics`` on
the stored predictions); the end-to-end time is one ``evaluate`` call. ``--clock cpu``
(default) counts CPU seconds (this process and the engine's worker processes; for the reference
the CPU time of its ``corrupt`` calls), which a busy shared machine barely disturbs, with one
torch thread; ``--clock wall`` counts elapsed seconds. Target: end to end at least 5x faster than
the reference on CPU. Exit status 1 when missed.

Usage::

    python perf/speed_detection.py                                  # the full run (hours: reference glass blur)
    python perf/speed_detection.py --images 8 --size 320x240 --corruptions gaussian_noise,glass_blur,fog
    python perf/speed_detection.py --images 20 --json detection_speed.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))

from robustlab.data.images import write_image  # noqa: E402
from robustlab.engine import evaluate, get_benchmark, opened_store  # noqa: E402
from robustlab.benchmarks.corruption import select_corruptions  # noqa: E402
from robustlab.metrics.detection import coco_metrics, to_coco_results  # noqa: E402
from robustlab.metrics.under_corruption import performance_under_corruption  # noqa: E402
from robustlab.models.detection import as_detector  # noqa: E402

CATEGORIES = [{"id": 1, "name": "box"}, {"id": 2, "name": "disc"}, {"id": 3, "name": "bar"}]


# --- data ----------------------------------------------------------------------------------------------


def make_dataset(root: Path, n: int, width: int, height: int, seed: int = 0) -> Path:
    """n generated images with 2-5 objects each, COCO layout under ``root``."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    images, anns = [], []
    for i in range(n):
        base = rng.uniform(40, 200, 3)
        grad = rng.uniform(-0.2, 0.2, 3)
        img = np.clip(base + grad * (xx[..., None] * 0.5 + yy[..., None] * 0.5), 0, 255)
        for _ in range(int(rng.integers(2, 6))):
            cat = int(rng.integers(1, 4))
            w = int(rng.integers(width // 10, width // 3))
            h = int(rng.integers(height // 10, height // 3)) if cat != 3 else max(4, w // 4)
            x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
            colour = rng.uniform(0, 255, 3)
            if cat == 2:
                mask = ((xx - x - w / 2) / (w / 2)) ** 2 + ((yy - y - h / 2) / (h / 2)) ** 2 <= 1
                img[mask] = colour
            else:
                img[y:y + h, x:x + w] = colour
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": cat, "iscrowd": 0,
                         "bbox": [x, y, w, h], "area": float(w * h)})
        name = f"{i:012d}.png"
        write_image(root / "val2017" / name, img.astype(np.uint8))
        images.append({"id": i + 1, "file_name": name, "width": width, "height": height})
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / "annotations" / "instances_val2017.json").write_text(
        json.dumps({"images": images, "annotations": anns, "categories": CATEGORIES}))
    return root


# --- a small detector ------------------------------------------------------------------------------------


class TinyDetector(nn.Module):
    """A 4-layer CNN (stride 8) predicting a centre heatmap per class and box sizes; the top
    ``k`` peaks become boxes. Fixed random weights: this measures speed, not accuracy."""

    def __init__(self, n_classes: int = 3, k: int = 50, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                  nn.Conv2d(32, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, n_classes + 2, 1))
        self.k = k

    def forward(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        out = []
        for img in images:
            h, w = img.shape[-2:]
            y = self.body(img[None])[0]
            heat = torch.sigmoid(y[:-2])
            size = torch.sigmoid(y[-2:]) * torch.tensor([w, h], dtype=y.dtype)[:, None, None] * 0.5
            scores, index = heat.flatten().topk(min(self.k, heat.numel()))
            cls, rest = index // (heat.shape[1] * heat.shape[2]), index % (heat.shape[1] * heat.shape[2])
            cy, cx = (rest // heat.shape[2]).float() * 8 + 4, (rest % heat.shape[2]).float() * 8 + 4
            bw, bh = size[0].flatten()[rest], size[1].flatten()[rest]
            boxes = torch.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], 1)
            out.append({"boxes": boxes, "scores": scores, "labels": cls + 1})
        return out


def make_model(kind: str) -> nn.Module:
    if kind == "tiny":
        return as_detector(TinyDetector().eval(), name="tiny-centre-detector")
    from robustlab.models import load_model

    return load_model("torchvision:fasterrcnn_mobilenet_v3_large_320_fpn:none", device="cpu")


# --- the two pipelines --------------------------------------------------------------------------------------


#: The clock (set from --clock): wall seconds, or CPU seconds of this process (+ its reaped children).
CLOCK = {"now": time.perf_counter, "name": "wall"}


def cpu_now() -> float:
    """CPU seconds of this process and of its finished children (the engine's worker processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_robustlab(model, root: Path, corruptions, severities, workers: int, batch: int) -> dict:
    now = CLOCK["now"]
    with tempfile.TemporaryDirectory(prefix="rl-det-store-") as tmp:  # removed with its Parquet files
        store = Path(tmp)
        t0 = now()
        result = evaluate(model, "coco-c", root, store=store, corruptions=corruptions, severities=severities,
                          workers=workers, batch_size=batch, device="cpu", progress=False)
        e2e = now() - t0
        bench = get_benchmark("coco-c")
        config = bench.config_for(str(root), corruptions=corruptions, severities=severities)
        units = bench.plan(config)
        # stage costs, each alone in this process (kernels already compiled by the run above)
        t_corrupt = 0.0
        t_infer = 0.0
        for unit in units:
            samples = bench.samples(config, unit)
            t = now()
            images = [samples.read_pair(i)[0] for i in range(len(samples))]
            if unit.setting.shift != "clean":
                t_corrupt += now() - t
            xs = [torch.from_numpy(np.array(image)).permute(2, 0, 1).float().div(255) for image in images]
            t = now()
            with torch.inference_mode():
                for x in xs:
                    model([x])
            t_infer += now() - t
        with opened_store(store) as st:
            predictions = st.read_predictions(result.run_id, [u.key for u in units])
        t = now()
        bench.metrics(config, predictions)
        t_ap = now() - t
        return {"end_to_end_s": e2e, "corruption_s": t_corrupt, "inference_s": t_infer, "ap_s": t_ap,
                "P": result.metric("P"), "mPC": result.metric("mPC"), "rPC": result.metric("rPC"),
                "predictions": predictions, "config": config}


def run_reference(model, root: Path, corruptions, severities) -> dict:
    from refenv import run_reference as reference_corrupt

    from robustlab.data.detection import read_coco
    from robustlab.data.images import read_image

    ds = read_coco(root / "annotations" / "instances_val2017.json", root / "val2017")
    gt = json.loads((root / "annotations" / "instances_val2017.json").read_text())
    clean = [read_image(s.path) for s in ds.samples]
    ids = [s.image_id for s in ds.samples]
    now = CLOCK["now"]
    t = time.perf_counter()
    ref = reference_corrupt(clean, corruptions, severities, seed=0, clock=CLOCK["name"])
    corrupt_call_wall = time.perf_counter() - t
    t_corrupt = float(sum(ref.seconds.values()))
    t_infer = 0.0
    t_ap = 0.0
    nested: dict = {c: {} for c in corruptions}
    settings = [("clean", 0)] + [(c, s) for c in corruptions for s in severities]
    for c, s in settings:
        dets = []
        for i in range(len(clean)):
            image = clean[i] if c == "clean" else ref.images[(i, c, s)]
            x = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float().div(255)
            t = now()
            with torch.inference_mode():
                out = model([x])[0]
            t_infer += now() - t
            h, w = image.shape[:2]
            boxes = out["boxes"].numpy().astype(np.float64)
            boxes[:, 0::2] = boxes[:, 0::2].clip(0, w)
            boxes[:, 1::2] = boxes[:, 1::2].clip(0, h)
            dets.append({"boxes": boxes, "scores": out["scores"].numpy(), "labels": out["labels"].numpy()})
        t = now()
        stats = coco_metrics(gt, to_coco_results(ids, dets), backend="pycocotools")
        t_ap += now() - t
        if c == "clean":
            for name in corruptions:
                nested[name][0] = stats
        else:
            nested[c][s] = stats
    perf = performance_under_corruption(nested, metrics="AP", corruptions=list(corruptions), severities=severities)["AP"]
    return {"end_to_end_s": t_corrupt + t_infer + t_ap, "corruption_s": t_corrupt, "inference_s": t_infer,
            "ap_s": t_ap, "corruption_subprocess_wall_s": corrupt_call_wall,
            "P": perf.P, "mPC": perf.mPC, "rPC": perf.rPC}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--size", default="640x480", help="WIDTHxHEIGHT of the generated images.")
    parser.add_argument("--corruptions", default="benchmark")
    parser.add_argument("--severities", default="1-5")
    parser.add_argument("--workers", type=int, default=None, help="robustlab's corruption processes (default CPUs-1).")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--model", choices=("tiny", "torchvision"), default="tiny")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default torch's).")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu (default): CPU seconds (this process + engine workers; the reference's own "
                             "calls), steady on a shared machine; wall: elapsed seconds.")
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    elif args.clock == "cpu":
        torch.set_num_threads(1)  # CPU time then measures the work, not the threads' spinning
    CLOCK.update(now=cpu_now if args.clock == "cpu" else time.perf_counter, name=args.clock)
    from robustlab.corruptions import parse_severities
    from robustlab.engine.executor import default_workers

    width, height = (int(v) for v in args.size.lower().split("x"))
    corruptions = select_corruptions(args.corruptions)
    severities = list(parse_severities(args.severities))
    workers = default_workers() if args.workers is None else args.workers
    model = make_model(args.model)
    with tempfile.TemporaryDirectory(prefix="rl-det-data-") as tmp:
        root = make_dataset(Path(tmp) / "coco", args.images, width, height)
        ours = run_robustlab(model, root, corruptions, severities, workers, args.batch_size)
        ours.pop("predictions"), ours.pop("config")
        ref = None if args.skip_reference else run_reference(model, root, corruptions, severities)
    cells = len(corruptions) * len(severities)
    report = {"images": args.images, "size": [width, height], "corruptions": corruptions, "severities": severities,
              "settings": 1 + cells, "model": args.model, "clock": args.clock, "workers": workers, "torch_threads": torch.get_num_threads(),
              "machine": f"{platform.machine()} {platform.processor() or ''} {torch.get_num_threads()} threads".strip(),
              "robustlab": ours, "reference": ref}
    print(f"{args.images} images {width}x{height} x {len(corruptions)} corruptions x {len(severities)} severities "
          f"(+ clean), model {args.model}, robustlab workers {workers}")
    print(f"{'stage (' + args.clock + ' s)':<16}{'robustlab':>12}{'reference':>12}{'ratio':>8}")
    for key, label in (("corruption_s", "corruption"), ("inference_s", "inference"), ("ap_s", "AP"),
                       ("end_to_end_s", "end to end")):
        r = ref[key] if ref else float("nan")
        print(f"{label:<16}{ours[key]:>12.2f}{r:>12.2f}{r / ours[key]:>8.1f}")
    print(f"P / mPC / rPC (AP %): robustlab {100 * ours['P']:.1f} / {100 * ours['mPC']:.1f} / {100 * ours['rPC']:.1f}"
          + (f"; reference {100 * ref['P']:.1f} / {100 * ref['mPC']:.1f} / {100 * ref['rPC']:.1f}" if ref else ""))
    ok = True
    if ref:
        ratio = ref["end_to_end_s"] / ours["end_to_end_s"]
        report["speedup_end_to_end"] = ratio
        ok = ratio >= 5.0
        print(f"end-to-end speed-up {ratio:.1f}x (target >= 5x): {'met' if ok else 'MISSED'}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
