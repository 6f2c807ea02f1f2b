"""Weather corruptions: snow, frost, fog (benchmark) and spatter (held-out).

Every kernel is ``kernel(image, severity, rs, profile) -> image``: a uint8 HxWx3 array in,
a uint8 HxWx3 array out (truncated, as both references do with ``np.uint8``), with all random
draws taken from ``rs`` in the order the reference takes them from the global ``np.random``.

Profiles (see :data:`robustlab.corruptions.registry.PROFILES`):

- ``imagecorruptions``: imagecorruptions 1.1.2, any size, bit-faithful.
- ``imagenet-c``, ``cifar``, ``tinyimagenet``: Hendrycks' ``make_*_c.py`` tables and
  semantics, exact at their nominal sizes (224, 32, 64 px). Snow's motion blur, which the
  reference runs through ImageMagick (Wand), is ImageMagick's line kernel (same taps, weights
  and edges) applied to the 8-bit snow layer with ImageMagick Q16's rounding (to 16 bits, then
  truncated to 8 bits): identical to ImageMagick 6.9.11 in our tests; which ImageMagick build
  Hendrycks used is not recorded. At other sizes the tables apply as they are; where a
  reference step needs the nominal size (fog's 256 px plasma map, frost's un-scaled texture
  crop) the map or texture is enlarged as imagecorruptions does.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import cv2
import numba
import numpy as np

from ..errors import DataError
from ._gaussian import gaussian_filter
from .ops import clipped_zoom, motion_blur
from ._sampler_route import draw_normal
from ._plasma import next_power_of_two, plasma_fractal

# --------------------------------------------------------------------------- severity tables
# One 5-tuple per profile; imagenet-c shares imagecorruptions' values wherever the two agree.

#: snow: (noise mean, noise std, zoom, threshold, blur radius, blur sigma, image weight)
SNOW = {
    "imagecorruptions": ((0.1, 0.3, 3, 0.5, 10, 4, 0.8), (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
                         (0.55, 0.3, 4, 0.9, 12, 8, 0.7), (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
                         (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55)),
    "cifar": ((0.1, 0.2, 1, 0.6, 8, 3, 0.95), (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
              (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9), (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
              (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8)),
    "tinyimagenet": ((0.1, 0.2, 1, 0.6, 8, 3, 0.8), (0.1, 0.2, 1, 0.5, 10, 4, 0.8),
                     (0.15, 0.3, 1.75, 0.55, 10, 4, 0.7), (0.25, 0.3, 2.25, 0.6, 12, 6, 0.65),
                     (0.3, 0.3, 1.25, 0.65, 14, 12, 0.6)),
}
SNOW["imagenet-c"] = SNOW["imagecorruptions"]

#: frost: (image weight, texture weight)
FROST = {
    "imagecorruptions": ((1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75)),
    "cifar": ((1, 0.2), (1, 0.3), (0.9, 0.4), (0.85, 0.4), (0.75, 0.45)),
    "tinyimagenet": ((1, 0.3), (0.9, 0.4), (0.8, 0.45), (0.75, 0.5), (0.7, 0.55)),
}
FROST["imagenet-c"] = FROST["imagecorruptions"]

#: fog: (fog strength, plasma wibble decay)
FOG = {
    "imagecorruptions": ((1.5, 2), (2.0, 2), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4)),
    "cifar": ((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)),
    "tinyimagenet": ((0.4, 3), (0.7, 3), (1, 2.5), (1.5, 2), (2, 1.75)),
}
FOG["imagenet-c"] = FOG["imagecorruptions"]

#: spatter: (noise mean, noise std, blur sigma, threshold, intensity / mud blur sigma, mud?)
SPATTER = {
    "imagecorruptions": ((0.65, 0.3, 4, 0.69, 0.6, 0), (0.65, 0.3, 3, 0.68, 0.6, 0),
                         (0.65, 0.3, 2, 0.68, 0.5, 0), (0.65, 0.3, 1, 0.65, 1.5, 1),
                         (0.67, 0.4, 1, 0.65, 1.5, 1)),
    "cifar": ((0.62, 0.1, 0.7, 0.7, 0.5, 0), (0.65, 0.1, 0.8, 0.7, 0.5, 0),
              (0.65, 0.3, 1, 0.69, 0.5, 0), (0.65, 0.1, 0.7, 0.69, 0.6, 1),
              (0.65, 0.1, 0.5, 0.68, 0.6, 1)),
    "tinyimagenet": ((0.62, 0.1, 0.7, 0.7, 0.6, 0), (0.65, 0.1, 0.8, 0.7, 0.6, 0),
                     (0.65, 0.3, 1, 0.69, 0.6, 0), (0.65, 0.1, 0.7, 0.68, 0.6, 1),
                     (0.65, 0.1, 0.5, 0.67, 0.6, 1)),
}
SPATTER["imagenet-c"] = SPATTER["imagecorruptions"]

#: Side of the plasma map Hendrycks' scripts draw (then crop) for their nominal image size.
FOG_MAPSIZE = {"imagenet-c": 256, "cifar": 32, "tinyimagenet": 64}
#: Hendrycks' CIFAR / Tiny-ImageNet scripts shrink the frost texture by this factor first.
FROST_TEXTURE_SCALE = {"cifar": 0.2, "tinyimagenet": 0.3}
FROST_FILES = ("frost1.png", "frost2.png", "frost3.png", "frost4.jpg", "frost5.jpg", "frost6.jpg")


# --------------------------------------------------------------------------- snow

@numba.njit(cache=True, nogil=True)
def _snow_composite(x, grey, layer, weight, rest):  # pragma: no cover - compiled
    # float32: weight * x + rest * max(x, grey * 1.5 + 0.5); then in float64 + layer + layer
    # rotated by 180 degrees, clipped to [0, 1], * 255, truncated (the reference's dtypes/order).
    rows, cols = layer.shape
    out = np.empty((rows, cols, 3), np.uint8)
    for y in range(rows):
        for c in range(cols):
            flake = layer[y, c]
            mirrored = layer[rows - 1 - y, cols - 1 - c]
            lifted = grey[y, c] * np.float32(1.5) + np.float32(0.5)
            for k in range(3):
                v = x[y, c, k]
                blended = weight * v + rest * max(v, lifted)
                total = (np.float64(blended) + flake) + mirrored
                out[y, c, k] = np.uint8(min(max(total, 0.0), 1.0) * 255.0)
    return out


def snow(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Falling snow: a thresholded, zoomed noise layer motion-blurred at a random angle.

    Draws: ``normal(H x W)`` for the flakes, then ``uniform(-135, -45)`` for the blur angle.
    """
    mean, std, zoom, threshold, radius, sigma, weight = SNOW[profile][severity - 1]
    h, w = image.shape[:2]
    flakes = draw_normal(rs, (h, w), mean, std)
    if profile == "imagecorruptions":
        # the whole zoomed layer (a little larger than the image) is blurred, then cropped
        flakes = clipped_zoom(flakes, zoom, full=True)
        flakes[flakes < threshold] = 0
        np.clip(flakes, 0, 1, out=flakes)
        blurred = motion_blur(flakes, radius, sigma, rs.uniform(-135, -45), (h, w))
        layer = np.round(blurred * 255).astype(np.uint8) / 255.0
    else:
        # Hendrycks: the layer goes through ImageMagick as an 8-bit PNG (truncated on the way
        # in); ImageMagick (Q16) blurs, rounds to 16 bits and scales back down to 8 by truncation
        flakes = clipped_zoom(flakes, zoom, centred=True)
        flakes[flakes < threshold] = 0
        flakes8 = (np.clip(flakes, 0, 1) * 255).astype(np.uint8)
        blurred = motion_blur(flakes8, radius, sigma, rs.uniform(-135, -45), (h, w))
        layer = (np.floor(np.clip(blurred, 0, 255) * 257 + 0.5) // 257).astype(np.uint8) / 255.0
    x = image.astype(np.float32) / 255.0
    grey = cv2.cvtColor(x, cv2.COLOR_RGB2GRAY)
    return _snow_composite(x, grey, layer, np.float32(weight), np.float32(1 - weight))


# --------------------------------------------------------------------------- frost

@lru_cache(maxsize=None)
def frost_texture(index: int) -> np.ndarray:
    """Texture ``index`` (0..5), decoded once per process: uint8 RGB, read-only.

    Decoded with OpenCV like the references (``cv2.imread``), shipped as package data.
    """
    name = FROST_FILES[index]
    try:
        data = (resources.files(__package__) / "frost" / name).read_bytes()
    except OSError as exc:
        raise DataError(f"frost texture {name} is missing from the robustlab install ({exc}); "
                        "reinstall robustlab (pip install --force-reinstall robustlab).") from exc
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise DataError(f"frost texture {name} could not be decoded; reinstall robustlab.")
    rgb = np.ascontiguousarray(bgr[..., ::-1])
    rgb.setflags(write=False)
    return rgb


def fit_scale(texture_shape: tuple[int, ...], image_shape: tuple[int, ...]) -> float:
    """imagecorruptions' texture scale: cover the image, then 10 % more (also when it fits)."""
    th, tw = texture_shape[:2]
    h, w = image_shape[:2]
    if th >= h and tw >= w:
        scale = 1
    elif th < h and tw >= w:
        scale = h / th
    elif th >= h and tw < w:
        scale = w / tw
    else:
        scale = np.maximum(h / th, w / tw)
    return scale * 1.1


@lru_cache(maxsize=64)
def _resized_texture(index: int, width: int, height: int, interpolation: int) -> np.ndarray:
    out = cv2.resize(frost_texture(index), dsize=(width, height), interpolation=interpolation)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=16)
def _scaled_texture(index: int, factor: float) -> np.ndarray:
    out = cv2.resize(frost_texture(index), (0, 0), fx=factor, fy=factor)
    out.setflags(write=False)
    return out


def frost_layer(index: int, image_shape: tuple[int, ...], profile: str) -> np.ndarray:
    """The texture the frost crop is taken from, for an image of ``image_shape``."""
    h, w = image_shape[:2]
    texture = frost_texture(index)
    if profile in FROST_TEXTURE_SCALE:
        texture = _scaled_texture(index, FROST_TEXTURE_SCALE[profile])
    if profile == "imagecorruptions" or texture.shape[0] <= h or texture.shape[1] <= w:
        scale = fit_scale(frost_texture(index).shape, image_shape)
        th, tw = frost_texture(index).shape[:2]
        texture = _resized_texture(index, int(np.ceil(tw * scale)), int(np.ceil(th * scale)),
                                   cv2.INTER_CUBIC)
    return texture


@lru_cache(maxsize=32)
def _blend_table(image_weight: float, texture_weight: float) -> np.ndarray:
    """uint8 table[a, b] = trunc(clip(image_weight*a + texture_weight*b, 0, 255)) in float64."""
    levels = np.arange(256, dtype=np.float64)
    table = np.clip(image_weight * levels[:, None] + texture_weight * levels[None, :], 0, 255)
    table = table.astype(np.uint8)
    table.setflags(write=False)
    return table


def frost(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Ice crystals: the image blended with a random crop of a frost photograph.

    Draws: ``randint(5)`` for the texture (so the sixth file is never chosen, as in both
    references), then ``randint`` for the crop's top row and left column.
    """
    image_weight, texture_weight = FROST[profile][severity - 1]
    h, w = image.shape[:2]
    index = rs.randint(5)
    texture = frost_layer(index, image.shape, profile)
    top = rs.randint(0, texture.shape[0] - h)
    left = rs.randint(0, texture.shape[1] - w)
    crop = texture[top:top + h, left:left + w]
    return _blend_table(float(image_weight), float(texture_weight))[image, crop]


# --------------------------------------------------------------------------- fog

def fog(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Fog: a plasma-fractal haze added, then the contrast rescaled to the image's maximum.

    Draws: the plasma map's uniforms. The map is ``next_power_of_two(max(H, W))`` pixels in
    imagecorruptions; in Hendrycks' profiles the script's fixed size (256 / 32 / 64), enlarged
    the same way when the image does not fit.
    """
    strength, decay = FOG[profile][severity - 1]
    h, w = image.shape[:2]
    mapsize = next_power_of_two(max(h, w, 3))
    if profile in FOG_MAPSIZE:
        mapsize = max(mapsize, FOG_MAPSIZE[profile])
    haze = plasma_fractal(mapsize, decay, rs, shape=(h, w))
    return _fog_composite(image, haze, float(strength))


@numba.njit(cache=True, nogil=True)
def _fog_composite(image, haze, strength):  # pragma: no cover - compiled
    # ((image / 255 + strength * haze) * max) / (max + strength), clipped, * 255, truncated;
    # float64, the reference's operations in its order (max = image.max() / 255).
    rows, cols = haze.shape
    max_val = image.max() / 255.0
    denominator = max_val + strength
    out = np.empty((rows, cols, 3), np.uint8)
    for y in range(rows):
        for c in range(cols):
            lift = strength * haze[y, c]
            for k in range(3):
                v = ((image[y, c, k] / 255.0 + lift) * max_val) / denominator
                out[y, c, k] = np.uint8(min(max(v, 0.0), 1.0) * 255.0)
    return out


# --------------------------------------------------------------------------- spatter

#: Colours of the two spatter kinds, per channel of the RGB image (the water colour is given in
#: the reference's BGR call order, so it lands on R, G, B as 175, 238, 238).
WATER = (175 / 255.0, 238 / 255.0, 238 / 255.0)
MUD = (63 / 255.0, 42 / 255.0, 20 / 255.0)
_RIDGE_KERNEL = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]])


def water_ridges(liquid8: np.ndarray) -> np.ndarray:
    """The shading of water drops, as the references compute it (spatter here and in the ImageNet-P
    sequences): the distance to the uint8 liquid layer's Canny edges, truncated at 20, blurred,
    equalised, embossed and blurred again (uint8 HxW in, float32 HxW out)."""
    dist = 255 - cv2.Canny(liquid8, 50, 150)
    dist = cv2.distanceTransform(dist, cv2.DIST_L2, 5)
    _, dist = cv2.threshold(dist, 20, 20, cv2.THRESH_TRUNC)
    dist = cv2.blur(dist, (3, 3)).astype(np.uint8)
    dist = cv2.equalizeHist(dist)
    dist = cv2.filter2D(dist, cv2.CV_8U, _RIDGE_KERNEL)
    return cv2.blur(dist, (3, 3)).astype(np.float32)


def _water_mask(liquid: np.ndarray, intensity: float) -> np.ndarray:
    """Shaded water drops from the thresholded liquid layer (float64 HxW in, float32 HxW out)."""
    liquid8 = (liquid * 255).astype(np.uint8)
    mask = liquid8 * water_ridges(liquid8)
    mask /= np.max(mask)
    mask *= np.float32(intensity)
    return mask


def spatter(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Water drops (severities 1-3) or mud splashes (4-5) over the image.

    Draws: one ``normal(H x W)`` liquid layer.
    """
    mean, std, sigma, threshold, intensity, mud = SPATTER[profile][severity - 1]
    liquid = draw_normal(rs, image.shape[:2], mean, std)
    liquid = gaussian_filter(liquid, sigma, mode="nearest", truncate=4.0)
    liquid[liquid < threshold] = 0
    if not mud:
        mask = _water_mask(liquid, intensity)
        return _spatter_composite(image, mask, np.array(WATER), False)
    blots = np.where(liquid > threshold, 1, 0).astype(np.float32)
    blots = gaussian_filter(blots, intensity, output=np.float32, mode="nearest", truncate=4.0)
    blots[blots < 0.8] = 0
    return _spatter_composite(image, blots, np.array(MUD), True)


@numba.njit(cache=True, nogil=True)
def _spatter_composite(image, mask, colour, mud):  # pragma: no cover - compiled
    # x = image / 255 in float32. Water: clip(x + mask * colour) * 255 in float32. Mud:
    # x * (1 - mask) in float32, plus colour * mask in float64 (the reference's mixed dtypes),
    # clipped and * 255. Truncated to uint8.
    rows, cols = mask.shape
    out = np.empty((rows, cols, 3), np.uint8)
    for y in range(rows):
        for c in range(cols):
            m = mask[y, c]
            for k in range(3):
                x = np.float32(image[y, c, k]) / np.float32(255.0)
                if mud:
                    kept = x * (np.float32(1.0) - m)
                    v = np.float64(kept) + colour[k] * np.float64(m)
                    out[y, c, k] = np.uint8(min(max(v, 0.0), 1.0) * 255.0)
                else:
                    v32 = x + m * np.float32(colour[k])
                    v32 = min(max(v32, np.float32(0.0)), np.float32(1.0))
                    out[y, c, k] = np.uint8(v32 * np.float32(255.0))
    return out
