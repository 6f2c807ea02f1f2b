"""Speed of the torch corruption backend: on the CPU against the numpy path, and on a GPU.

CPU (one thread each side, CPU seconds, in one run): per corruption and severity, the numpy
path corrupting ``--batch`` 224x224 images one call each (``corrupt``) against the torch
backend corrupting them as one uint8 (N, H, W, 3) batch (``corrupt_batch``). Each figure is the
minimum over ``--repeat`` runs after an untimed warm-up. Printed per corruption (5 severities
together): images per second of each side and their ratio (torch / numpy: above 1 the torch
backend is faster), then the whole 19 x 5 set.

GPU (when CUDA is available; otherwise the column reads "pending (no GPU)"): 19 x 5 on
``--gpu-batch`` (256) 224x224 float (N, 3, H, W) images already on the device, wall time with
synchronisation, images per second; and with ``--resnet50``, the throughput of a torchvision
ResNet-50 (random weights, nothing downloaded) on clean batches against corrupt-then-classify
batches, per corruption, and their ratio (issue 21's goal: at least 80 %).

Usage::

    python perf/speed_torch_corruptions.py                        # CPU columns; GPU if present
    python perf/speed_torch_corruptions.py --corruptions blur --batch 8 --repeat 2
    python perf/speed_torch_corruptions.py --resnet50 --json speed_torch.json

The CPU model, core count and load average are printed beside the figures.
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

import numpy as np
import torch
from speed_corruptions import SEVERITIES, bench_image, cpu_model

from robustlab.corruptions import corrupt, corrupt_batch, resolve_corruptions
from robustlab.fsutil import atomic_write_text

SIZE = 224
GPU_PENDING = "pending (no GPU)"


def best_of(repeat: int, fn) -> float:
    """Minimum CPU seconds of ``repeat`` calls of ``fn`` (after one untimed call)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def time_cpu(image: np.ndarray, names: list[str], batch: int, repeat: int, seed: int = 0) -> dict:
    """CPU seconds per (corruption, severity): numpy one image at a time, torch one batch."""
    images = [image] * batch
    tensor = torch.from_numpy(np.stack(images))
    ids = list(range(batch))
    out = {}
    for name in names:
        for s in SEVERITIES:
            numpy_s = best_of(repeat, lambda name=name, s=s: [corrupt(img, name, s, rng=np.random.RandomState(seed + i))
                                                              for i, img in enumerate(images)])
            torch_s = best_of(repeat, lambda name=name, s=s: corrupt_batch(tensor, name, s, seed=seed, ids=ids))
            out[(name, s)] = (numpy_s, torch_s)
        print(f"  cpu: {name}", file=sys.stderr, flush=True)
    return out


def time_gpu(names: list[str], batch: int, repeat: int, seed: int = 0) -> dict:
    """Wall seconds per (corruption, severity) for a float batch on the GPU (synchronised)."""
    device = torch.device("cuda")
    x = torch.from_numpy(bench_image(SIZE, SIZE)).permute(2, 0, 1)[None].float().div(255)
    x = x.expand(batch, -1, -1, -1).contiguous().to(device)
    ids = list(range(batch))
    out = {}
    for name in names:
        for s in SEVERITIES:
            corrupt_batch(x, name, s, seed=seed, ids=ids)
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                corrupt_batch(x, name, s, seed=seed, ids=ids)
                torch.cuda.synchronize()
                best = min(best, time.perf_counter() - t0)
            out[(name, s)] = best
        print(f"  gpu: {name}", file=sys.stderr, flush=True)
    return out


def time_resnet50(names: list[str], batch: int, repeat: int, severity: int = 3, seed: int = 0) -> dict:
    """Images/s of a ResNet-50 on clean batches and on batches corrupted first, on the GPU."""
    from torchvision.models import resnet50

    device = torch.device("cuda")
    model = resnet50().eval().to(device)
    x = torch.from_numpy(bench_image(SIZE, SIZE)).permute(2, 0, 1)[None].float().div(255)
    x = x.expand(batch, -1, -1, -1).contiguous().to(device)
    ids = list(range(batch))

    def rate(step) -> float:
        with torch.no_grad():
            step()
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                step()
                torch.cuda.synchronize()
                best = min(best, time.perf_counter() - t0)
        return batch / best

    clean = rate(lambda: model(x))
    per = {name: rate(lambda name=name: model(corrupt_batch(x, name, severity, seed=seed, ids=ids))) for name in names}
    return {"clean_images_per_s": clean, "corrupted_images_per_s": per,
            "fraction_of_clean": {n: v / clean for n, v in per.items()}, "severity": severity}


def table(names: list[str], cpu: dict, batch: int, gpu: dict | None, gpu_batch: int) -> str:
    head = (f"{'corruption':<18} {'numpy img/s':>12} {'torch img/s':>12} {'torch/numpy':>12}   "
            f"{'GPU img/s (' + str(gpu_batch) + ')':>18}")
    lines = [head, "-" * len(head)]
    tot_n = tot_t = tot_g = 0.0
    for name in names:
        n_s = sum(cpu[(name, s)][0] for s in SEVERITIES)
        t_s = sum(cpu[(name, s)][1] for s in SEVERITIES)
        tot_n, tot_t = tot_n + n_s, tot_t + t_s
        # 5 severities of `batch` images: images per second over the whole set
        g = "pending (no GPU)"
        if gpu is not None:
            g_s = sum(gpu[(name, s)] for s in SEVERITIES)
            tot_g += g_s
            g = f"{5 * gpu_batch / g_s:,.0f}"
        lines.append(f"{name:<18} {5 * batch / n_s:12.1f} {5 * batch / t_s:12.1f} {n_s / t_s:11.2f}x   {g:>18}")
    lines.append("-" * len(head))
    g = GPU_PENDING if gpu is None else f"{5 * len(names) * gpu_batch / tot_g:,.0f}"
    lines.append(f"{'all ' + str(len(names)) + ' x 5':<18} {5 * len(names) * batch / tot_n:12.2f} "
                 f"{5 * len(names) * batch / tot_t:12.2f} {tot_n / tot_t:11.2f}x   {g:>18}")
    lines.append(f"images/s: corrupted images per second over severities 1-5 (for the whole set: per "
                 f"corruption-severity cell); CPU columns one thread each, CPU time, batch of {batch}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corruptions", default="all", help="names or subsets, comma-separated (default all)")
    parser.add_argument("--batch", type=int, default=16, help="CPU batch (default 16)")
    parser.add_argument("--gpu-batch", type=int, default=256, help="GPU batch (default 256)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per cell, the minimum kept (default 3)")
    parser.add_argument("--resnet50", action="store_true", help="GPU: ResNet-50 clean vs corrupt-then-classify")
    parser.add_argument("--no-cpu", action="store_true", help="skip the CPU columns")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    import cv2

    cv2.setNumThreads(1)
    names = resolve_corruptions(args.corruptions)
    image = bench_image(SIZE, SIZE)
    gpu_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    print(f"{len(names)} corruptions x 5 severities at {SIZE}x{SIZE}; CPU: {cpu_model()}, {os.cpu_count()} cores, "
          f"load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}; torch {torch.__version__}, one thread; "
          f"GPU: {gpu_name or 'none'}", flush=True)
    cpu = {} if args.no_cpu else time_cpu(image, names, args.batch, args.repeat)
    gpu = time_gpu(names, args.gpu_batch, args.repeat) if gpu_name else None
    if cpu:
        print(table(names, cpu, args.batch, gpu, args.gpu_batch))
    elif gpu is None:
        print(f"GPU: {GPU_PENDING}")
    resnet = time_resnet50(names, args.gpu_batch, args.repeat) if (args.resnet50 and gpu_name) else None
    if args.resnet50:
        if resnet is None:
            print(f"ResNet-50 on-the-fly throughput: {GPU_PENDING}")
        else:
            print(f"ResNet-50 clean: {resnet['clean_images_per_s']:,.0f} images/s at batch {args.gpu_batch}")
            for n in names:
                print(f"  {n:<18} {resnet['corrupted_images_per_s'][n]:10,.0f} images/s "
                      f"({100 * resnet['fraction_of_clean'][n]:.0f}% of clean)")
    if args.json:
        atomic_write_text(args.json, json.dumps({
            "cpu_model": cpu_model(), "gpu": gpu_name or GPU_PENDING, "size": SIZE, "batch": args.batch,
            "gpu_batch": args.gpu_batch, "repeat": args.repeat, "torch": torch.__version__,
            "cpu_seconds": {f"{n}/{s}": {"numpy": v[0], "torch": v[1]} for (n, s), v in cpu.items()},
            "gpu_seconds": None if gpu is None else {f"{n}/{s}": v for (n, s), v in gpu.items()},
            "resnet50": resnet if resnet is not None else (GPU_PENDING if args.resnet50 else None),
            "load_average": os.getloadavg()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
