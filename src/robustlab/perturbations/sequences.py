"""Generators of the 14 ImageNet-P perturbation sequences (make_imagenet_p.py / make_cifar_p.py).

Frame parameters, per SPEC section 2 (i = frame index):

=================  =====================================  ======================================
perturbation       imagenet (224 px from Resize 256)      cifar (32 px)
=================  =====================================  ======================================
gaussian_noise     sigma .03 (difficulty 2/3: .05/.08)    .02 (.04/.06)
shot_noise         lambda 300 (120/60)                    700 (400/200)
speckle_noise      .05 (.10/.15)                          .05 (.07/.10)
motion_blur        radius 10, sigma 3, angle (i-30)*4     21 frames, r 6, s 1.8, angle (i-20)*9
zoom_blur          running mean of scales 1 + .004 i      same
snow               fixed layer, blur angle 4i - 150       zoom 2, radius 10, sigma 2
brightness         V + (i-15) * .02                       V + (i-15) * .015
translate          41 frames, (i-20) px before the crop   16 frames, (i-7) px
rotate             (i-15) degrees                         same
tilt               (i-15) degrees, perspective            .75 (i-15)
scale              (2.5 i + 40) / 100                     (2 i + 70) / 100
gaussian_blur      sigma .25 + .035 i (truncate 6)        .3 + .015 i (truncate 7)
spatter            layer re-convolved each frame          smaller layer, kernel (.2, .8)
shear              (i-15) degrees                         same
=================  =====================================  ======================================

Randomness comes from a numpy Generator (noise draws, snow and spatter layers), so a
sequence is reproducible from its seed; like the reference, outputs are truncated to uint8.
Motion blur uses robustlab's ImageMagick-free line blur (the reference used ImageMagick), so
motion_blur and snow match the released videos statistically, not bit for bit.
"""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image
from skimage import color as skcolor

from ..corruptions.ops import clipped_zoom, gaussian_smooth, motion_blur
from ..corruptions.weather import water_ridges
from ._geometry import affine_crop, center_crop, resize_shorter, tilt_crop, translate_crop

CROP = {"imagenet": 224, "cifar": None}


def _trunc(x: np.ndarray) -> np.ndarray:
    """``np.uint8(x * 255)`` of the reference for x in [0, 1] (truncation)."""
    return (x * 255).astype(np.uint8)


def _base(image: np.ndarray, setting: str) -> np.ndarray:
    """The image the frames are cut from: Resize(256) for imagenet, as is for cifar."""
    return resize_shorter(image, 256) if setting == "imagenet" else image


def _clean(image: np.ndarray, setting: str) -> np.ndarray:
    base = _base(image, setting)
    return center_crop(base, 224) if setting == "imagenet" else base


# --- noise sequences: frame 0 clean, frames 1..30 independent draws ----------------------

NOISE_LEVELS = {
    "gaussian_noise": {"imagenet": (0.03, 0.05, 0.08), "cifar": (0.02, 0.04, 0.06)},
    "shot_noise": {"imagenet": (300, 120, 60), "cifar": (700, 400, 200)},
    "speckle_noise": {"imagenet": (0.05, 0.10, 0.15), "cifar": (0.05, 0.07, 0.10)},
}


def _noise_sequence(image, rng, setting, difficulty, draw):
    x = _clean(image, setting)
    xf = x.astype(np.float32) / 255.0
    frames = np.empty((31, *x.shape), np.uint8)
    frames[0] = x
    for i in range(1, 31):
        frames[i] = _trunc(np.clip(draw(xf), 0, 1))
    return frames


def gaussian_noise(image, rng, setting, difficulty):
    sigma = NOISE_LEVELS["gaussian_noise"][setting][difficulty - 1]
    return _noise_sequence(image, rng, setting, difficulty,
                           lambda x: x + np.float32(sigma) * rng.standard_normal(x.shape, dtype=np.float32))


def shot_noise(image, rng, setting, difficulty):
    lam = NOISE_LEVELS["shot_noise"][setting][difficulty - 1]
    return _noise_sequence(image, rng, setting, difficulty, lambda x: rng.poisson(x * lam) / lam)


def speckle_noise(image, rng, setting, difficulty):
    scale = NOISE_LEVELS["speckle_noise"][setting][difficulty - 1]
    return _noise_sequence(image, rng, setting, difficulty,
                           lambda x: x + x * np.float32(scale) * rng.standard_normal(x.shape, dtype=np.float32))


# --- temporal sequences ---------------------------------------------------------------

MOTION = {"imagenet": (31, 10, 3.0, lambda i: (i - 30) * 4), "cifar": (21, 6, 1.8, lambda i: (i - 20) * 9)}


def motion_blur_sequence(image, rng, setting, difficulty):
    x = _clean(image, setting)
    n, radius, sigma, angle = MOTION[setting]
    return np.stack([np.clip(motion_blur(x, radius, sigma, angle(i)), 0, 255).astype(np.uint8) for i in range(n)])


def zoom_blur(image, rng, setting, difficulty):
    base = _base(image, setting)
    size = 224 if setting == "imagenet" else base.shape[0]
    first = center_crop(base, size) if setting == "imagenet" else base
    acc = first.astype(np.float32) / 255.0
    frames = [first]
    for i in range(1, 31):
        acc += affine_crop(base, size, scale=1 + 0.004 * i).astype(np.float32) / 255.0
        frames.append(((acc / (i + 1)) * 255).astype(np.uint8))
    return np.stack(frames)


SNOW = {"imagenet": (3, 14, 4.0), "cifar": (2, 10, 2.0)}


def snow(image, rng, setting, difficulty):
    x = _clean(image, setting).astype(np.float64) / 255.0
    h, w = x.shape[:2]
    zoom, radius, sigma = SNOW[setting]
    layer = rng.normal(loc=0.05, scale=0.3, size=(h, w))
    layer = clipped_zoom(layer[..., None], zoom, centred=True)[..., 0]
    layer[layer < 0.5] = 0
    layer = (np.clip(layer, 0, 1) * 255).astype(np.uint8)
    grey = cv2.cvtColor(np.float32(x), cv2.COLOR_RGB2GRAY).reshape(h, w, 1)
    base = 0.85 * x + 0.15 * np.maximum(x, grey * 1.5 + 0.5)
    frames = []
    for i in range(31):
        moving = motion_blur(layer, radius, sigma, i * 4 - 150).reshape(h, w, 1) / 255.0
        frames.append(_trunc(np.clip(base + moving + np.rot90(moving, k=2), 0, 1)))
    return np.stack(frames)


def brightness(image, rng, setting, difficulty):
    step = 0.02 if setting == "imagenet" else 0.015
    hsv = skcolor.rgb2hsv(_clean(image, setting) / 255.0)  # computed once, only V changes
    # HSV -> RGB gives every channel as V times a factor of (H, S) alone (V, V(1-S), V(1-Sf),
    # V(1-S(1-f))), so the factors are hsv2rgb at V = 1 and each frame is one multiplication:
    # the same float64 products skimage's hsv2rgb computes, hence bit-identical frames.
    unit_v = hsv.copy()
    unit_v[:, :, 2] = 1.0
    factors = skcolor.hsv2rgb(unit_v)
    value = hsv[:, :, 2:3]
    return np.stack([_trunc(factors * np.clip(value + (i - 15) * step, 0, 1)) for i in range(31)])


def translate(image, rng, setting, difficulty):
    base = _base(image, setting)
    n, mid = (41, 20) if setting == "imagenet" else (16, 7)
    return np.stack([translate_crop(base, i - mid, CROP[setting]) for i in range(n)])


def _affine_sequence(image, setting, **param_of_frame):
    base = _base(image, setting)
    size = 224 if setting == "imagenet" else base.shape[0]
    return np.stack([affine_crop(base, size, **{k: f(i) for k, f in param_of_frame.items()}) for i in range(31)])


def rotate(image, rng, setting, difficulty):
    return _affine_sequence(image, setting, angle=lambda i: i - 15)


def scale(image, rng, setting, difficulty):
    if setting == "imagenet":
        return _affine_sequence(image, setting, scale=lambda i: (i * 2.5 + 40) / 100.0)
    return _affine_sequence(image, setting, scale=lambda i: (i * 2 + 70) / 100.0)


def shear(image, rng, setting, difficulty):
    return _affine_sequence(image, setting, shear=lambda i: i - 15)


def tilt(image, rng, setting, difficulty):
    base = _base(image, setting)
    factor = 1.0 if setting == "imagenet" else 0.75
    return np.stack([tilt_crop(base, factor * (i - 15), CROP[setting]) for i in range(31)])


BLUR = {"imagenet": (0.25, 0.035, 6.0), "cifar": (0.3, 0.015, 7.0)}


def gaussian_blur(image, rng, setting, difficulty):
    x = _clean(image, setting) / 255.0
    start, step, truncate = BLUR[setting]
    return np.stack([_trunc(gaussian_smooth(x, start + step * i, truncate=truncate)) for i in range(31)])


SPATTER = {"imagenet": (0.65, 0.27, 3.7, 0.69, (0.05, 0.1, 0.15, 0.7)), "cifar": (0.6, 0.265, 1.75, 0.7, (0.2, 0.8))}
_WATER = np.array([238 / 255.0, 238 / 255.0, 175 / 255.0])  # pale turquoise (RGB)


def _convolve_columns_same(layer: np.ndarray, kernel: tuple[float, ...]) -> np.ndarray:
    """``np.convolve(column, kernel, mode='same')`` for every column at once."""
    n = len(kernel)
    h = layer.shape[0]
    full = np.zeros((h + n - 1, layer.shape[1]))
    for j, k in enumerate(kernel):
        full[j:j + h] += k * layer
    start = (n - 1) // 2
    return full[start:start + h]


def spatter(image, rng, setting, difficulty):
    x = _clean(image, setting).astype(np.float32) / 255.0
    loc, scale_, sigma, threshold, kernel = SPATTER[setting]
    layer = rng.normal(size=x.shape[:2], loc=loc, scale=scale_)
    layer = gaussian_smooth(layer, sigma)
    layer[layer < threshold] = 0
    frames = []
    for _ in range(31):
        li = (layer * 255).astype(np.uint8)
        m = li * water_ridges(li)
        m = m / np.max(m) if np.max(m) > 0 else m
        m = (m * 0.6)[..., None]
        frames.append(_trunc(np.clip(x + m * _WATER, 0, 1)))
        layer = _convolve_columns_same(layer, kernel)
    return np.stack(frames)
