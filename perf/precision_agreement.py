"""Top-1 agreement between a lower-precision run (``--precision bf16`` / ``fp16``) and fp32 on the same images.

A bf16 run is another run (its own identity), so its numbers are never an answer for fp32; this
measures how far apart the two are on real models. Each model is evaluated through
``robustlab.evaluate`` on the ``corrupted`` benchmark (clean images and ``--corruptions`` at
``--severities``) in fp32 and at each lower precision its device can run, and the stored top-1
predictions are compared image by image.

- ``--models demo`` (default): the demo's three trained classifiers (``demo:cnn``,
  ``demo:cnn-noise``, ``demo:baseline``) on the demo's scene images (``write_scene_folders``), on
  the CPU.
- ``--models resnet50``: a torchvision ResNet-50 with random weights (nothing is downloaded) on
  generated 256x320 photos, on ``--device`` (a GPU: the gpu_check's engine part records the same).

Usage::

    python perf/precision_agreement.py                       # the demo's models on the CPU
    python perf/precision_agreement.py --models resnet50 --device cuda --images 2000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np


def top1(store: str, run_id: str) -> dict[str, int]:
    from robustlab.store import open_store

    with open_store(store) as st:
        out = {}
        for unit, cols in st.read_predictions(run_id).items():
            setting = unit.rsplit("/", 1)[0]
            for sid, top in zip(cols["sample_id"], cols["top5_index"][:, 0]):
                out[f"{setting}|{sid}"] = int(top)
        return out


def supported(precision: str, device: str) -> bool:
    import torch

    from robustlab.engine.runtime import RunOptions
    from robustlab.errors import InputError

    try:
        RunOptions(precision=precision).check(torch.device(device))
        return True
    except InputError:
        return False


def agreement(model, name: str, data: Path, device: str, options: dict) -> dict:
    import robustlab

    with tempfile.TemporaryDirectory() as store:
        base = robustlab.evaluate(model, "corrupted", data, store=store, device=device, progress=False, **options)
        fp32 = top1(store, base.run_id)
        rows = {"model": name, "images": len(fp32)}
        for precision in ("bf16", "fp16"):
            if not supported(precision, device):
                rows[precision] = None
                continue
            run = robustlab.evaluate(model, "corrupted", data, store=store, device=device, progress=False,
                                     precision=precision, **options)
            low = top1(store, run.run_id)
            same = [fp32[k] == low[k] for k in fp32 if k in low]
            rows[precision] = float(np.mean(same)) if same else float("nan")
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", choices=("demo", "resnet50"), default="demo")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--images", type=int, default=400, help="resnet50: generated photos")
    parser.add_argument("--corruptions", default="gaussian_noise,defocus_blur,fog,contrast,jpeg_compression")
    parser.add_argument("--severities", default="1,3,5")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    options = {"corruptions": args.corruptions, "severities": args.severities, "workers": args.workers,
               "batch_size": 64}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.models == "demo":
            from robustlab.demo.models import CLASSIFIERS
            from robustlab.demo.world import write_scene_folders

            data = write_scene_folders(Path(tmp) / "scenes")["val"]
            for name in CLASSIFIERS:
                results.append(agreement(f"demo:{name}", f"demo:{name}", data, args.device, options))
        else:
            sys.path.insert(0, str(Path(__file__).parent))
            from speed_engine import make_photos

            data = make_photos(Path(tmp) / "photos", args.images, (256, 320))
            results.append(agreement("torchvision:resnet50:none", "torchvision:resnet50 (random weights)", data,
                                     args.device, {**options, "batch_size": 256}))
    print(f"{'model':<40} {'images':>8} {'bf16 vs fp32':>14} {'fp16 vs fp32':>14}   ({args.device})")
    for r in results:
        cells = [("-" if r[p] is None else f"{100 * r[p]:.2f} %") for p in ("bf16", "fp16")]
        print(f"{r['model']:<40} {r['images']:>8} {cells[0]:>14} {cells[1]:>14}")
    if args.json:
        args.json.write_text(json.dumps({"device": args.device, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
