"""The embedded demo world: digit scenes made only from data that ships inside dependencies.

Ingredients (no download):

- **digits**: scikit-learn's 1,797 bundled handwritten digits (8x8, values 0..16), used as
  alpha masks; a seeded split of the *digit instances* (75 % train, 25 % test) keeps the test
  writers' strokes unseen in training;
- **backgrounds**: scikit-learn's two sample photographs (``china.jpg``, ``flower.jpg``),
  scikit-image's colour photographs (astronaut, chelsea, coffee, rocket,
  immunohistochemistry) and its grey textures and photographs (brick, grass, gravel, camera,
  moon), the grey ones tinted with a random colour.

A *scene* is a random crop of a background (random scale, brightness and contrast), with one
digit pasted on it: upscaled with bicubic interpolation to a random size, coloured with a
random colour whose luminance contrasts with the background under it, at a random position,
fully inside the image. The label is the digit (10 classes), the box its tight extent.

Everything is a plain function of a seed: scene ``i`` of a split draws from its own generator
``derive_seed(seed, "scene", split, i)``, so a scene regenerates identically in any order.

Example::

    train = scene_dataset("train", seed=0)        # ArrayDataset, 2,000 uint8 64x64x3 scenes
    test = scene_dataset("test", seed=0)          # 500 scenes with held-out digit instances
    write_scene_folders("demo_scenes/", seed=0)   # demo_scenes/{train,val}/{0..9}/*.png
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np

from ..data.arrays import ArrayDataset
from ..data.images import write_image
from ..errors import InputError
from ..fsutil import ensure_dir
from ..seeding import derive_seed

#: Background pictures: (library, name). Grey ones are tinted per scene.
BACKGROUND_SOURCES = (
    ("sklearn", "china.jpg"), ("sklearn", "flower.jpg"), ("skimage", "astronaut"),
    ("skimage", "chelsea"), ("skimage", "coffee"), ("skimage", "rocket"),
    ("skimage", "immunohistochemistry"), ("skimage", "brick"), ("skimage", "grass"),
    ("skimage", "gravel"), ("skimage", "camera"), ("skimage", "moon"),
)  # fmt: skip
CLASS_NAMES = tuple(str(d) for d in range(10))
SPLITS = ("train", "test")
#: Default sizes of the classification splits.
DEFAULT_SIZES = {"train": 2000, "test": 500}
#: Fraction of the digit instances held out for the test split.
TEST_DIGIT_FRACTION = 0.25
#: alpha above which a pixel counts as part of the digit (for its box).
BOX_ALPHA = 0.3


@dataclass(frozen=True)
class Background:
    """One background picture: uint8 (H, W, 3) pixels and whether it is grey (tinted per use)."""

    name: str
    pixels: np.ndarray
    grey: bool


@dataclass(frozen=True)
class Scenes:
    """Generated scenes with their ground truth.

    Attributes
    ----------
    images : ndarray, uint8 (N, H, W, 3)
    labels : ndarray, int64 (N,)
        Digit class 0..9.
    boxes : ndarray, float32 (N, 4)
        Tight digit box x1, y1, x2, y2 in continuous pixel coordinates (x2 exclusive).
    """

    images: np.ndarray
    labels: np.ndarray
    boxes: np.ndarray

    def dataset(self, name: str) -> ArrayDataset:
        return ArrayDataset(self.images, self.labels, name)


# --- assets ------------------------------------------------------------------------------------


def _to_uint8_rgb(img: np.ndarray) -> tuple[np.ndarray, bool]:
    img = np.asarray(img)
    if img.dtype == bool:
        img = img.astype(np.uint8) * 255
    if img.dtype != np.uint8:
        img = np.clip(np.rint(img * 255 if img.max() <= 1 else img), 0, 255).astype(np.uint8)
    if img.ndim == 2:
        return np.ascontiguousarray(np.repeat(img[..., None], 3, axis=2)), True
    return np.ascontiguousarray(img[..., :3]), False


@lru_cache(maxsize=1)
def backgrounds() -> tuple[Background, ...]:
    """The background pictures (loaded once per process from the installed packages)."""
    import skimage.data
    from sklearn.datasets import load_sample_images

    sample = load_sample_images()
    sklearn_images = dict(zip((os.path.basename(f) for f in sample.filenames), sample.images))
    out = []
    for library, name in BACKGROUND_SOURCES:
        raw = sklearn_images[name] if library == "sklearn" else getattr(skimage.data, name)()
        pixels, grey = _to_uint8_rgb(raw)
        pixels.setflags(write=False)
        out.append(Background(f"{library}:{name}", pixels, grey))
    return tuple(out)


@lru_cache(maxsize=1)
def digit_glyphs() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as float32 alpha masks (1797, 8, 8) in [0, 1] and int64 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    glyphs = (d.images / 16.0).astype(np.float32)
    glyphs.setflags(write=False)
    return glyphs, d.target.astype(np.int64)


@lru_cache(maxsize=8)
def glyph_pool(split: str, seed: int = 0) -> dict[int, np.ndarray]:
    """Indices of the digit instances of ``split``, per class (seeded, stratified split).

    Returns
    -------
    dict
        class -> int64 array of indices into :func:`digit_glyphs`.
    """
    check_split(split)
    _, labels = digit_glyphs()
    rng = np.random.default_rng(derive_seed(seed, "digit-split"))
    pool = {}
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(labels == c))
        n_test = int(round(len(idx) * TEST_DIGIT_FRACTION))
        pool[c] = np.sort(idx[:n_test] if split == "test" else idx[n_test:])
    return pool


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise InputError(f"split must be one of {', '.join(SPLITS)}; got {split!r}.")
    return split


# --- drawing primitives -------------------------------------------------------------------------


def glyph_alpha(glyph: np.ndarray, side: float) -> np.ndarray:
    """An 8x8 digit upscaled to a float32 (s, s) alpha mask in [0, 1], s = round(side).

    Bicubic upscaling, then a contrast stretch that turns the blocky 8x8 ramp into strokes.
    """
    s = max(4, int(round(side)))
    up = cv2.resize(np.asarray(glyph, np.float32), (s, s), interpolation=cv2.INTER_CUBIC)
    return np.clip((up - 0.15) / 0.55, 0.0, 1.0)


def place_alpha(alpha: np.ndarray, height: int, width: int, x: float, y: float, scale: float = 1.0
                ) -> np.ndarray:
    """Draw ``alpha`` (scaled by ``scale``) with its top-left corner at (x, y) on an empty canvas.

    Sub-pixel positions and partial overlap with the canvas are handled (bilinear warp), so
    a digit can move smoothly and leave the frame.

    Returns
    -------
    ndarray, float32 (height, width) in [0, 1]
    """
    m = np.array([[scale, 0.0, x], [0.0, scale, y]], np.float32)
    return cv2.warpAffine(alpha, m, (width, height), flags=cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)


def alpha_box(alpha: np.ndarray, threshold: float = BOX_ALPHA) -> np.ndarray:
    """Tight box x1, y1, x2, y2 (float32, x2/y2 exclusive) of ``alpha > threshold``; zeros if empty."""
    ys, xs = np.nonzero(alpha > threshold)
    if len(xs) == 0:
        return np.zeros(4, np.float32)
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float32)


def luminance(rgb: np.ndarray) -> np.ndarray:
    """Rec. 601 luma of RGB values (..., 3), same units as the input."""
    return np.asarray(rgb, np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)


def contrasting_colour(under_luma: float, rng: np.random.Generator) -> np.ndarray:
    """A random colour (float32 RGB, 0..255) whose luma differs from ``under_luma`` by 90-150.

    A random RGB colour is pulled towards white (dark background) or black (bright
    background) until its luma reaches the target, which keeps its hue.
    """
    colour = rng.uniform(0, 255, 3).astype(np.float32)
    gap = rng.uniform(90, 150)
    darker = under_luma > 127 if abs(under_luma - 127) > 20 else bool(rng.integers(2))
    target = float(np.clip(under_luma - gap if darker else under_luma + gap, 0, 255))
    lum = float(luminance(colour))
    if target > lum:  # mix with white: luma is linear in the mix
        t = (target - lum) / max(255.0 - lum, 1e-3)
        colour = colour + (255.0 - colour) * min(t, 1.0)
    else:
        colour = colour * (target / max(lum, 1e-3))
    return colour.astype(np.float32)


def composite(background: np.ndarray, alpha: np.ndarray, colour: np.ndarray) -> np.ndarray:
    """``background * (1 - alpha) + colour * alpha`` as uint8 (H, W, 3)."""
    a = alpha[..., None]
    out = background.astype(np.float32) * (1.0 - a) + colour.reshape(1, 1, 3) * a
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def tint(pixels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A grey picture (H, W, 3) multiplied by a random pale colour (float32 out)."""
    colour = rng.uniform(0.45, 1.0, 3).astype(np.float32)
    return pixels.astype(np.float32) * colour


def photometric(pixels: np.ndarray, gain: float, bias: float) -> np.ndarray:
    """``pixels * gain + bias`` clipped to uint8."""
    return np.clip(np.rint(pixels.astype(np.float32) * gain + bias), 0, 255).astype(np.uint8)


def background_crop(size: int, rng: np.random.Generator, *, min_scale: float = 0.12,
                    max_scale: float = 0.6) -> np.ndarray:
    """A random square crop of a random background, resized to uint8 (size, size, 3).

    The crop side is ``uniform(min_scale, max_scale) * min(H, W)``; grey pictures are tinted;
    brightness and contrast vary by about +-25 %.
    """
    bg = backgrounds()[int(rng.integers(len(backgrounds())))]
    h, w = bg.pixels.shape[:2]
    side = max(size // 2, int(min(h, w) * rng.uniform(min_scale, max_scale)))
    y, x = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
    crop = cv2.resize(bg.pixels[y:y + side, x:x + side], (size, size), interpolation=cv2.INTER_AREA)
    if bg.grey:
        crop = tint(crop, rng)
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    gain = rng.uniform(0.75, 1.25)
    return photometric(crop, gain, rng.uniform(-20, 20))


def paste_digit(image: np.ndarray, glyph: np.ndarray, side: float, x: float, y: float,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paste ``glyph`` at (x, y) with side ``side`` px in a colour contrasting with ``image``.

    Returns
    -------
    image : ndarray, uint8 (H, W, 3)
    box : ndarray, float32 (4,)
        Tight digit box (x1, y1, x2, y2).
    alpha : ndarray, float32 (H, W)
        The digit's opacity on the canvas.
    """
    h, w = image.shape[:2]
    alpha = place_alpha(glyph_alpha(glyph, side), h, w, x, y) * np.float32(rng.uniform(0.85, 1.0))
    under = alpha > BOX_ALPHA
    under_luma = float(luminance(image[under]).mean()) if under.any() else 127.0
    colour = contrasting_colour(under_luma, rng)
    return composite(image, alpha, colour), alpha_box(alpha), alpha


# --- classification scenes ---------------------------------------------------------------------


def scene(split: str, index: int, seed: int = 0, size: int = 64) -> tuple[np.ndarray, int, np.ndarray]:
    """Scene ``index`` of ``split``: uint8 (size, size, 3) image, its digit class, its box.

    The class is ``index % 10`` (balanced splits); the digit instance, background, colour,
    digit size (40-80 % of the image side) and position are drawn from
    ``derive_seed(seed, "scene", split, index)``.
    """
    rng = np.random.default_rng(derive_seed(seed, "scene", split, int(index)))
    label = int(index) % 10
    glyphs, _ = digit_glyphs()
    choices = glyph_pool(split, seed)[label]
    glyph = glyphs[choices[int(rng.integers(len(choices)))]]
    image = background_crop(size, rng)
    side = size * rng.uniform(0.4, 0.8)
    x, y = rng.uniform(0, size - side, 2)
    image, box, _ = paste_digit(image, glyph, side, x, y, rng)
    return image, label, box


def make_scenes(split: str, n: int | None = None, *, seed: int = 0, size: int = 64, start: int = 0) -> Scenes:
    """Scenes ``start .. start + n - 1`` of ``split`` (default n: 2,000 train, 500 test)."""
    check_split(split)
    n = DEFAULT_SIZES[split] if n is None else int(n)
    if n < 1 or size < 16:
        raise InputError(f"need n >= 1 scenes of size >= 16 px; got n={n}, size={size}.")
    images = np.empty((n, size, size, 3), np.uint8)
    labels = np.empty(n, np.int64)
    boxes = np.empty((n, 4), np.float32)
    for i in range(n):
        images[i], labels[i], boxes[i] = scene(split, start + i, seed, size)
    return Scenes(images, labels, boxes)


def scene_dataset(split: str = "test", *, n: int | None = None, seed: int = 0, size: int = 64) -> ArrayDataset:
    """The demo's 10-class classification split as an :class:`ArrayDataset` (uint8 NHWC)."""
    return make_scenes(split, n, seed=seed, size=size).dataset(f"demo-scenes-{split}")


def write_image_folder(dataset: ArrayDataset, root: str | os.PathLike, *, fmt: str = "png",
                       class_names: tuple[str, ...] = CLASS_NAMES) -> Path:
    """Write an :class:`ArrayDataset` as class subfolders ``root/<class name>/<index>.<fmt>``.

    Each file is written atomically; the layout is torchvision's ``ImageFolder`` (ImageNet
    style), so ``robustlab corrupt`` and ``robustlab evaluate --data`` read it.
    """
    fmt = fmt.lower().replace("jpeg", "jpg")
    if fmt not in ("png", "jpg"):
        raise InputError(f"image format {fmt!r} is unknown; use 'png' or 'jpg'.")
    root = ensure_dir(root)
    for i, (image, label) in enumerate(zip(dataset.images, dataset.labels)):
        write_image(root / class_names[int(label)] / f"{i:05d}.{fmt}", image, quality=95)
    return root


def write_scene_folders(root: str | os.PathLike, *, seed: int = 0, n_train: int | None = None,
                        n_test: int | None = None, size: int = 64, fmt: str = "png") -> dict[str, Path]:
    """Write both splits as ImageNet-style folders ``root/train/<c>/`` and ``root/val/<c>/``."""
    root = Path(root)
    return {"train": write_image_folder(scene_dataset("train", n=n_train, seed=seed, size=size), root / "train",
                                        fmt=fmt),
            "val": write_image_folder(scene_dataset("test", n=n_test, seed=seed, size=size), root / "val", fmt=fmt)}
