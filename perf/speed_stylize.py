"""Throughput of ``robustlab stylize`` at 512 px, against a bare AdaIN loop, in one run.

Workload (issue 18): N content images of 512x512 (JPEG, an image folder), styles of 640x512
resized to 512 on their shorter side (as the reference tool), AdaIN with the full-size
VGG-19 encoder (through relu4_1) and decoder, alpha 1. The networks are randomly initialised
here (the released weights are not downloaded by a benchmark); their cost is that of the
trained ones.

- **bare loop**: what the reference tool (stylize-datasets) does per image: read the content,
  draw a style, read and resize it, encode both, AdaIN, decode, save (PIL, JPEG);
- **robustlab stylize**: :func:`robustlab.train.stylize.stylize_dataset` (seeded style per
  image, style statistics cached per process, output cropped to the content size, atomic
  writes, summary), ``--workers`` processes of one thread each.

    python perf/speed_stylize.py [--images 6] [--styles 3] [--threads 1] [--workers 1]

Prints images/s (wall clock; and per CPU-second of this process when ``--workers 1``, where
all the work is in it) and the ratio robustlab / bare. The GPU column is measured when CUDA is
present, else printed as pending.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from rates import print_rates, timed


def make_images(folder: Path, n: int, size: tuple[int, int], seed: int) -> list[Path]:
    from robustlab.data.images import write_image

    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        y, x = np.mgrid[0:size[0], 0:size[1]]
        img = np.stack([x * 255 / size[1], y * 255 / size[0], ((x // 32 + y // 32) % 2) * 200], -1)
        img = np.clip(img + rng.normal(0, 25, img.shape), 0, 255).astype(np.uint8)
        paths.append(write_image(folder / f"{i:04d}.jpg", img, quality=90))
    return paths


def full_size_weights(folder: Path):
    from robustlab.models.weights import file_sha256
    from robustlab.train.adain import AdainWeights, adain_decoder, normalised_vgg19

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.save(normalised_vgg19().state_dict(), folder / "vgg_normalised.pth")
    torch.save(adain_decoder().state_dict(), folder / "decoder.pth")
    enc, dec = folder / "vgg_normalised.pth", folder / "decoder.pth"
    return AdainWeights(enc, dec, 1.0, {"encoder": file_sha256(enc), "decoder": file_sha256(dec)})


def bare_loop(contents: list[Path], styles: list[Path], out: Path, weights, device: str) -> int:
    import torchvision.transforms as T
    from PIL import Image

    from robustlab.train.adain import AdaIN, adaptive_instance_norm, channel_statistics

    model = AdaIN.from_weights(weights).to(device)
    style_tf = T.Compose([T.Resize(512), T.ToTensor()])
    rng = np.random.default_rng(0)
    out.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        for path in contents:
            content = T.ToTensor()(Image.open(path).convert("RGB"))[None].to(device)
            style = style_tf(Image.open(styles[rng.integers(len(styles))]).convert("RGB"))[None].to(device)
            features = model.encoder(content)
            target = adaptive_instance_norm(features, *channel_statistics(model.encoder(style)))
            image = model.decoder(target).clamp(0, 1)[0].mul(255).add(0.5).clamp(0, 255).byte()
            Image.fromarray(image.permute(1, 2, 0).cpu().numpy()).save(out / path.name, quality=75)
    return len(contents)


def robustlab_run(src: Path, styles: Path, out: Path, weights, device: str, workers: int) -> int:
    from robustlab.train.stylize import stylize_dataset

    return stylize_dataset(src, styles, out, weights=weights, workers=workers, device=device).written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=6)
    ap.add_argument("--styles", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        contents = make_images(root / "content" / "images", args.images, (512, 512), 0)
        styles = make_images(root / "styles", args.styles, (512, 640), 1)
        weights = full_size_weights(root / "weights")
        table = {}
        for device in devices:
            table[device] = {
                "bare AdaIN loop": timed(lambda: bare_loop(contents, styles, root / f"bare-{device}", weights, device)),
                "robustlab stylize": timed(lambda: robustlab_run(root / "content", root / "styles",
                                                                 root / f"rl-{device}", weights, device, args.workers)),
            }
    print(f"{args.images} content images of 512x512, {args.styles} styles (512 px shorter side), full-size AdaIN, "
          f"{args.threads} torch thread(s), {args.workers} worker(s)")
    print_rates(table, width=20, digits=3, gpu_digits=2)
    cpu = table["cpu"]
    print(f"ratio robustlab / bare: {cpu['robustlab stylize'][0] / cpu['bare AdaIN loop'][0]:.2f} (wall), "
          f"{cpu['robustlab stylize'][1] / cpu['bare AdaIN loop'][1]:.2f} (CPU)")


if __name__ == "__main__":
    main()
