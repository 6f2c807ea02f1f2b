"""Throughput of ``robustlab finetune`` with and without augmentation, against a bare training loop.

Workload (issue 18): one epoch of fine-tuning a ResNet-18 (``torchvision:resnet18:none``:
random weights, no download; the cost is the same with pretrained ones) at 224 px on an image
folder of generated JPEGs (320x256, 10 classes), SGD, batch 16. Three runs, each timed:

- **bare loop**: torchvision ``ImageFolder`` + ``RandomResizedCrop(224)`` + flip, the same
  network, loss and optimiser, written by hand (what a user writes without robustlab);
- **robustlab, no augmentation**: :func:`robustlab.train.finetune` (seeded crops and order,
  checkpoint at the epoch end, manifest);
- **robustlab, paper-noise**: the same with ``augment="paper-noise"`` (one of six ImageNet-C
  corruptions per image, severity 1-5, numpy path in the loader);
- **bare loop + corruption**: the bare loop applying the same corruption draw per image with
  :func:`robustlab.corruptions.corrupt` in the dataset (the hand-written equivalent).

    python perf/speed_finetune.py [--images 48] [--threads 1] [--workers 0]

Prints images/s (wall clock, and per CPU-second of this process: with ``--workers 0`` all the
work is in it) and the ratios robustlab / bare. The GPU column is measured when CUDA is
present, else printed as pending.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from rates import print_rates, timed


def make_folder(root: Path, images: int, classes: int = 10, size=(256, 320)) -> Path:
    from robustlab.data.images import write_image

    rng = np.random.default_rng(0)
    for i in range(images):
        y, x = np.mgrid[0:size[0], 0:size[1]]
        img = np.stack([x * 255 / size[1], y * 255 / size[0], ((x // 16 + y // 16) % 2) * 200], -1)
        img = np.clip(img + rng.normal(0, 20, img.shape), 0, 255).astype(np.uint8)
        write_image(root / f"class_{i % classes:02d}" / f"{i:05d}.jpg", img, quality=90)
    return root


def bare_loop(folder: Path, device: str, batch_size: int, workers: int, corrupt: bool) -> int:
    import torchvision
    import torchvision.transforms as T

    from robustlab.corruptions import corrupt as corrupt_image
    from robustlab.corruptions.transforms import RandomCorruption

    scheme = RandomCorruption("paper-noise", seed=0)

    class Corrupt:
        def __init__(self):
            self.calls = 0

        def __call__(self, pil):
            choice = scheme.choose(self.calls)
            self.calls += 1
            name, severity = choice
            return corrupt_image(np.asarray(pil), name, severity, rng=np.random.RandomState(self.calls))

    steps = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
    steps += [Corrupt(), T.ToTensor()] if corrupt else [T.ToTensor()]
    steps.append(T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)))
    data = torchvision.datasets.ImageFolder(str(folder), transform=T.Compose(steps))
    loader = torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=True, num_workers=workers)
    net = torchvision.models.resnet18(num_classes=10).to(device).train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    n = 0
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(net(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += len(y)
    return n


def robustlab_run(folder: Path, out: Path, device: str, batch_size: int, workers: int, augment) -> int:
    from robustlab.train import finetune, read_manifest

    finetune("torchvision:resnet18:none", folder, out=out, epochs=1, augment=augment, batch_size=batch_size,
             workers=workers, device=device, progress=False)
    return read_manifest(out)["history"][0]["images"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workers", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_folder(Path(tmp) / "data", args.images)
        # warm-up: imports, kernels (not timed)
        bare_loop(folder, "cpu", args.batch_size, 0, False)
        table: dict[str, dict[str, tuple[float, float]]] = {}
        for device in devices:
            runs = {
                "bare loop": lambda: bare_loop(folder, device, args.batch_size, args.workers, False),
                "robustlab finetune": lambda: robustlab_run(folder, Path(tmp) / f"a-{device}", device,
                                                            args.batch_size, args.workers, None),
                "bare loop + corruption": lambda: bare_loop(folder, device, args.batch_size, args.workers, True),
                "robustlab finetune --augment paper-noise": lambda: robustlab_run(
                    folder, Path(tmp) / f"b-{device}", device, args.batch_size, args.workers, "paper-noise"),
            }
            table[device] = {name: timed(fn) for name, fn in runs.items()}
    print(f"one epoch, ResNet-18 at 224 px, {args.images} images of 320x256, batch {args.batch_size}, "
          f"{args.threads} torch thread(s), {args.workers} loader worker(s)")
    print_rates(table, width=42, digits=2, gpu_digits=1)
    cpu = table["cpu"]
    print(f"ratio robustlab / bare, no augmentation:   {cpu['robustlab finetune'][0] / cpu['bare loop'][0]:.2f} "
          f"(wall), {cpu['robustlab finetune'][1] / cpu['bare loop'][1]:.2f} (CPU)")
    aug, bare_aug = cpu["robustlab finetune --augment paper-noise"], cpu["bare loop + corruption"]
    print(f"ratio robustlab / bare, with corruptions:  {aug[0] / bare_aug[0]:.2f} (wall), {aug[1] / bare_aug[1]:.2f} (CPU)")
    print(f"cost of paper-noise augmentation in robustlab: {cpu['robustlab finetune'][0] / aug[0]:.2f}x the time")


if __name__ == "__main__":
    main()
