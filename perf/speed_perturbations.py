"""Speed of making ImageNet-P sequences: robustlab vs the reference's per-frame loop, in one run.

For each of the 10 test perturbations and ``--images`` source photos, times

* **robustlab**: ``robustlab.perturbations.generate`` (vectorised, crop-window warps, one HSV
  conversion) then ``write_mp4`` straight from the frame array;
* **reference**: a straightforward reimplementation of ``make_imagenet_p.py``'s loop: per
  frame, torchvision's ``affine`` on the whole 256 px image then ``CenterCrop(224)``
  (rotate, scale, zoom_blur, translate), ``cv2.warpPerspective`` on the whole image (tilt),
  ``rgb2hsv``/``hsv2rgb`` every frame (brightness), ``torch.randn_like`` /
  ``RandomState.poisson`` per frame (noise), a scipy convolution with a motion-blur line
  kernel per frame (motion_blur, snow; the reference called ImageMagick); every frame saved
  as PNG in a temporary folder, then the PNGs read back and encoded to MP4 with PyAV (the
  reference ran ``ffmpeg -i img%d.png``).

Both sides encode with the same x264 settings (crf 20, noise crf 23 + tune grain, yuv444p,
preset ``--preset``, default medium) so the ratio measures the pipeline, not the encoder; the
release itself used ``-preset veryslow`` (``--reference-preset veryslow`` times the reference
as released). ``--no-encode`` times frame generation alone (robustlab) against the per-frame
loop with its PNG writes (reference).

Source photos: random crops (shorter side 256-400 px, aspect 0.75-1.33) of scikit-image's
bundled photographs, deterministic from ``--seed``. The clock is process CPU time (all
threads, x264's included), robust to other load on the machine; wall time is printed too.

Usage::

    python perf/speed_perturbations.py                    # 200 images, all 10 perturbations
    python perf/speed_perturbations.py --images 20 --perturbations rotate,brightness
    python perf/speed_perturbations.py --images 20 --no-encode --json speed.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import scipy.ndimage as ndi
import torch
import torchvision.transforms.functional as TF
from PIL import Image
from skimage import color as skcolor
from skimage import data as skdata

from robustlab.perturbations import generate, get_perturbation
from robustlab.perturbations._geometry import tilt_matrix
from robustlab.perturbations.dataset import resolve_perturbations
from robustlab.perturbations.io import MP4_PRESET, encode_mp4, write_mp4

TARGET = 5.0
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field", "cat",
          "retina", "skin", "colorwheel")


# --- inputs ---------------------------------------------------------------------------------


def make_images(n: int, seed: int) -> list[np.ndarray]:
    """``n`` RGB photos: random crops of scikit-image's bundled images, resized (shorter side 256-400)."""
    rng = np.random.default_rng(seed)
    photos = []
    for name in PHOTOS:
        try:
            img = getattr(skdata, name)()
        except Exception:  # noqa: BLE001 - a photo needing a download (pooch) is just skipped
            continue
        if img.ndim == 3 and img.shape[2] >= 3 and min(img.shape[:2]) >= 200:
            photos.append(np.ascontiguousarray(img[..., :3]))
    out = []
    for i in range(n):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        aspect = rng.uniform(0.75, 1.33)
        ch = int(rng.integers(int(0.6 * h), h + 1))
        cw = min(w, max(16, int(ch * aspect)))
        top, left = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        crop = photo[top:top + ch, left:left + cw]
        short = int(rng.integers(256, 401))
        scale = short / min(crop.shape[:2])
        size = (max(short, round(crop.shape[1] * scale)), max(short, round(crop.shape[0] * scale)))
        out.append(np.asarray(Image.fromarray(crop).resize(size, Image.BILINEAR)))
    return out


# --- the reference's per-frame loop, reimplemented -----------------------------------------------


def line_kernel(radius: int, sigma: float, angle: float) -> np.ndarray:
    """A one-sided motion-blur line kernel (ImageMagick's MotionBlur shape), normalised."""
    size = 2 * radius + 1
    kernel = np.zeros((size, size))
    rad = math.radians(angle)
    for k in range(radius + 1):
        y = radius + int(round(k * math.sin(rad)))
        x = radius + int(round(k * math.cos(rad)))
        kernel[y, x] += math.exp(-k * k / (2 * sigma * sigma))
    return kernel / kernel.sum()


def scipy_motion_blur(x: np.ndarray, radius: int, sigma: float, angle: float) -> np.ndarray:
    """Per-channel scipy convolution with the line kernel (float in, float out)."""
    kernel = line_kernel(radius, sigma, angle)
    if x.ndim == 2:
        return ndi.convolve(x, kernel, mode="nearest")
    return np.stack([ndi.convolve(x[..., c], kernel, mode="nearest") for c in range(x.shape[2])], -1)


def _affine_crop(img: Image.Image, **kw) -> Image.Image:
    full = TF.affine(img, angle=kw.get("angle", 0), translate=list(kw.get("translate", (0, 0))),
                     scale=kw.get("scale", 1.0), shear=[0.0], interpolation=TF.InterpolationMode.BILINEAR)
    return TF.center_crop(full, [224, 224])


def reference_frames(name: str, photo: np.ndarray, rs: np.random.RandomState, gen: torch.Generator):
    """Yield the frames of ``name`` one at a time, as make_imagenet_p.py computes them (PIL images)."""
    img = TF.resize(Image.fromarray(photo), 256)
    crop = TF.center_crop(img, [224, 224])
    if name == "gaussian_noise":
        x = TF.to_tensor(crop)
        yield crop
        for _ in range(1, 31):
            yield TF.to_pil_image(torch.clamp(x + 0.03 * torch.randn(x.shape, generator=gen), 0, 1))
    elif name == "shot_noise":
        yield crop
        for _ in range(1, 31):
            z = np.array(crop, copy=True) / 255.0
            yield Image.fromarray(np.uint8(255 * np.clip(rs.poisson(z * 300) / 300.0, 0, 1)))
    elif name == "motion_blur":
        for i in range(31):
            z = scipy_motion_blur(np.asarray(crop, dtype=np.float64), 10, 3, (i - 30) * 4)
            yield Image.fromarray(np.uint8(np.clip(z, 0, 255)))
    elif name == "zoom_blur":
        avg = TF.to_tensor(crop)
        yield crop
        for i in range(1, 31):
            avg += TF.to_tensor(_affine_crop(img, scale=1 + 0.004 * i))
            yield TF.to_pil_image(avg / (i + 1))
    elif name == "snow":
        x = np.asarray(crop) / 255.0
        layer = rs.normal(size=(224, 224), loc=0.05, scale=0.3)
        ch = int(np.ceil(224 / 3))
        top = (224 - ch) // 2
        layer = ndi.zoom(layer[top:top + ch, top:top + ch], 3, order=1)
        trim = (layer.shape[0] - 224) // 2
        layer = layer[trim:trim + 224, trim:trim + 224]
        layer[layer < 0.5] = 0
        layer = np.clip(layer, 0, 1) * 255
        for i in range(31):
            moving = scipy_motion_blur(layer, 14, 4, i * 4 - 150)[..., None] / 255.0
            grey = cv2.cvtColor(np.float32(x), cv2.COLOR_RGB2GRAY).reshape(224, 224, 1)
            z = 0.85 * x + 0.15 * np.maximum(x, grey * 1.5 + 0.5)
            yield Image.fromarray(np.uint8(np.clip(z + moving + np.rot90(moving, k=2), 0, 1) * 255))
    elif name == "brightness":
        for i in range(31):
            z = skcolor.rgb2hsv(np.array(crop, copy=True) / 255.0)
            z[:, :, 2] = np.clip(z[:, :, 2] + (i - 15) * 0.02, 0, 1)
            yield Image.fromarray(np.uint8(skcolor.hsv2rgb(z) * 255))
    elif name == "translate":
        for i in range(41):
            yield _affine_crop(img, translate=(i - 20, 0))
    elif name == "rotate":
        for i in range(31):
            yield _affine_crop(img, angle=i - 15)
    elif name == "scale":
        for i in range(31):
            yield _affine_crop(img, scale=(i * 2.5 + 40) / 100.0)
    elif name == "tilt":
        x = np.asarray(img)
        h, w = x.shape[:2]
        for i in range(31):
            yield TF.center_crop(Image.fromarray(cv2.warpPerspective(x, tilt_matrix(h, w, i - 15), (w, h))),
                                 [224, 224])
    else:  # pragma: no cover - only the 10 test perturbations are benchmarked
        raise ValueError(name)


def reference_sequence(name: str, photo: np.ndarray, out: Path, work: Path, seed: int, *, encode: bool,
                       preset: str) -> None:
    """The reference pipeline for one image: frames -> PNG files -> (read back) -> MP4."""
    rs = np.random.RandomState(seed)
    gen = torch.Generator().manual_seed(seed)
    names = []
    for i, frame in enumerate(reference_frames(name, photo, rs, gen)):
        names.append(work / f"img{i}.png")
        frame.save(names[-1])
    if encode:
        frames = np.stack([np.asarray(Image.open(p).convert("RGB")) for p in names])
        encode_mp4(out, frames, noise=get_perturbation(name).noise, preset=preset)
    for p in names:
        p.unlink()


def robustlab_sequence(name: str, photo: np.ndarray, out: Path, seed: int, *, encode: bool, preset: str) -> None:
    frames = generate(photo, name, rng=seed)
    if encode:
        write_mp4(out, frames, noise=get_perturbation(name).noise, preset=preset)


# --- timing -------------------------------------------------------------------------------------


def time_side(fn, images: list[np.ndarray]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``fn(image, index)`` over all images."""
    cpu, wall = time.process_time(), time.perf_counter()
    for i, img in enumerate(images):
        fn(img, i)
    return time.process_time() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--perturbations", default="test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default=MP4_PRESET, help="x264 preset of both sides (default medium).")
    parser.add_argument("--reference-preset", default=None, help="x264 preset of the reference side only "
                        "(veryslow = as released); default: --preset.")
    parser.add_argument("--no-encode", action="store_true", help="Time frame generation only (no MP4).")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    names = resolve_perturbations(args.perturbations)
    images = make_images(args.images, args.seed)
    encode = not args.no_encode
    ref_preset = args.reference_preset or args.preset
    for name in names:  # warm-up: numba compiles, caches fill (untimed)
        with tempfile.TemporaryDirectory() as tmp:
            robustlab_sequence(name, images[0], Path(tmp, "w.mp4"), 0, encode=encode, preset=args.preset)
    print(f"{len(images)} images (224 px frames), {'generate + MP4' if encode else 'frames only'}, "
          f"x264 preset {args.preset}{'' if ref_preset == args.preset else f' (reference {ref_preset})'}; "
          f"CPU seconds, {platform.processor() or platform.machine()}, torch threads {torch.get_num_threads()}")
    head = f"{'perturbation':<16}{'robustlab img/s':>16}{'reference img/s':>16}{'ratio':>8}{'wall ratio':>12}"
    print(head + "\n" + "-" * len(head))
    results = {}
    totals = np.zeros(4)
    with tempfile.TemporaryDirectory() as tmp:
        out, work = Path(tmp, "out.mp4"), Path(tmp, "frames")
        work.mkdir()
        for name in names:
            ours = time_side(lambda img, i: robustlab_sequence(name, img, out, i, encode=encode, preset=args.preset),
                             images)
            ref = (float("nan"), float("nan")) if args.no_reference else time_side(
                lambda img, i: reference_sequence(name, img, out, work, i, encode=encode, preset=ref_preset), images)
            totals += [*ours, *ref]
            results[name] = {"robustlab_cpu_s": ours[0], "robustlab_wall_s": ours[1], "reference_cpu_s": ref[0],
                             "reference_wall_s": ref[1]}
            print(f"{name:<16}{len(images) / ours[0]:>16.2f}{len(images) / ref[0]:>16.2f}{ref[0] / ours[0]:>8.1f}"
                  f"{ref[1] / ours[1]:>12.1f}")
    n = len(images)
    print("-" * len(head))
    print(f"{'all ' + str(len(names)):<16}{n / totals[0]:>16.3f}{n / totals[2]:>16.3f}{totals[2] / totals[0]:>8.1f}"
          f"{totals[3] / totals[1]:>12.1f}")
    print("(img/s: source images through all listed perturbations per CPU second, per row: through that one)")
    ratio = totals[2] / totals[0]
    if not args.no_reference:
        print(f"total ratio {ratio:.1f}x (target {TARGET:.0f}x): {'met' if ratio >= TARGET else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps({"images": n, "encode": encode, "preset": args.preset,
                                         "reference_preset": ref_preset, "perturbations": results,
                                         "total_ratio_cpu": ratio, "total_ratio_wall": totals[3] / totals[1]},
                                        indent=1))
    return 0 if args.no_reference or ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
