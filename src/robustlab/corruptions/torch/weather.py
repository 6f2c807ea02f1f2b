"""Weather corruptions on a torch device: snow, frost, fog (benchmark) and spatter (held-out).

Same definitions and tables as :mod:`robustlab.corruptions.weather`, with each image's draws
from its own generator:

- snow: an (H, W) normal flake layer, then the blur angle U(-135, -45);
- frost: the texture index ``randint(5)`` (the sixth file is never used, as in the
  references), then the crop's top row and left column; the textures are the shipped files,
  resized like the numpy path and kept on the device;
- fog: the diamond-square plasma map's uniforms, all levels in one draw, coarse to fine;
- spatter: an (H, W) normal liquid layer. The water drops' shading (OpenCV's Canny edges,
  distance transform, histogram equalisation and filters in the reference) is re-expressed in
  torch by :func:`water_mask`, step by step with OpenCV's definitions.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from .. import weather as numpy_weather
from .._plasma import next_power_of_two
from .draws import normal, uniform, wide_float
from .ops import (
    box_blur3,
    clipped_zoom,
    filter2d,
    gaussian_blur,
    line_blur,
    pad,
    rgb_to_grey,
    to_levels,
)

__all__ = ["canny", "distance_transform", "equalize_hist", "plasma_fractal", "water_mask"]


# --------------------------------------------------------------------------- snow

def snow(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Falling snow: a thresholded, zoomed noise layer motion-blurred at a random angle per image."""
    mean, std, zoom, threshold, radius, sigma, weight = numpy_weather.SNOW[profile][severity - 1]
    h, w = x.shape[-2:]
    flakes = normal(generators, (1, h, w), mean=mean, std=std, device=x.device, dtype=x.dtype)
    angles = uniform(generators, -135.0, -45.0, device=x.device, dtype=wide_float(x.device)).tolist()
    if profile == "imagecorruptions":
        # the whole zoomed layer (a little larger than the image) is blurred, then cropped
        flakes = clipped_zoom(flakes, zoom, full=True)
        flakes = torch.where(flakes < threshold, torch.zeros_like(flakes), flakes).clamp(0, 1)
        blurred = line_blur(flakes, radius, sigma, angles, (h, w))
        layer = torch.round(blurred * 255) / 255
    else:
        # hendrycks: an 8-bit layer through ImageMagick (Q16): rounded to 16 bits, truncated to 8
        flakes = clipped_zoom(flakes, zoom, centred=True)
        flakes = torch.where(flakes < threshold, torch.zeros_like(flakes), flakes)
        blurred = line_blur(to_levels(flakes), radius, sigma, angles, (h, w))
        layer = torch.floor(torch.floor(blurred.clamp(0, 255) * 257 + 0.5) / 257) / 255
    lifted = rgb_to_grey(x) * 1.5 + 0.5
    blended = weight * x + (1 - weight) * torch.maximum(x, lifted)
    return blended + layer + torch.flip(layer, (-2, -1))


# --------------------------------------------------------------------------- frost

@lru_cache(maxsize=32)
def frost_texture_tensor(index: int, height: int, width: int, profile: str, device: str) -> torch.Tensor:
    """The frost texture an image of ``height`` x ``width`` is cropped from: float (3, TH, TW)
    in [0, 1] on ``device``, resized as the numpy path does (cached)."""
    texture = numpy_weather.frost_layer(index, (height, width, 3), profile)
    return torch.from_numpy(np.array(texture)).permute(2, 0, 1).to(device=device, dtype=torch.float32) / 255


def frost(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """The image blended with a random crop of a frost photograph (a texture and a crop per image)."""
    image_weight, texture_weight = numpy_weather.FROST[profile][severity - 1]
    h, w = x.shape[-2:]
    crops = []
    for g in generators:
        index = int(torch.randint(5, (), generator=g, device=g.device))
        texture = frost_texture_tensor(index, h, w, profile, str(x.device)).to(x.dtype)
        top = int(torch.randint(0, texture.shape[1] - h, (), generator=g, device=g.device))
        left = int(torch.randint(0, texture.shape[2] - w, (), generator=g, device=g.device))
        crops.append(texture[:, top:top + h, left:left + w])
    return image_weight * x + texture_weight * torch.stack(crops)


# --------------------------------------------------------------------------- fog

def plasma_fractal(generators: list, mapsize: int, decay: float, *, device: torch.device,
                   dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Diamond-square plasma maps, one per generator: (N, mapsize, mapsize) in [0, 1].

    The definition of :func:`robustlab.corruptions._plasma.plasma_fractal` (periodic borders,
    per level: centres, top and left midpoints, each ``mean of 4 + wibble * U(-wibble, wibble)``,
    wibble starting at 100 and divided by ``decay`` per level), every level computed for the
    whole batch at once. Each image's ``mapsize**2 - 1`` uniforms are one draw.
    """
    if mapsize < 2 or mapsize & (mapsize - 1):
        raise ValueError(f"plasma map size must be a power of two >= 2; got {mapsize}")
    sizes = []
    side = 1
    while side < mapsize:
        sizes.append(side)
        side *= 2
    draws = uniform(generators, -1.0, 1.0, (3 * sum(s * s for s in sizes),), device=device, dtype=dtype)
    n = len(generators)
    corners = torch.zeros((n, 1, 1), device=device, dtype=dtype)
    wibble = 100.0
    offset = 0
    for side in sizes:
        noise = draws[:, offset:offset + 3 * side * side].reshape(n, 3, side, side) * (wibble * wibble)
        offset += 3 * side * side
        below = torch.roll(corners, -1, 1)
        right = torch.roll(corners, -1, 2)
        centres = ((corners + below) + (right + torch.roll(below, -1, 2))) / 4 + noise[:, 0]
        top = ((centres + torch.roll(centres, 1, 1)) + (corners + right)) / 4 + noise[:, 1]
        left = ((centres + torch.roll(centres, 1, 2)) + (corners + below)) / 4 + noise[:, 2]
        finer = torch.empty((n, 2 * side, 2 * side), device=device, dtype=dtype)
        finer[:, 0::2, 0::2] = corners
        finer[:, 0::2, 1::2] = top
        finer[:, 1::2, 0::2] = left
        finer[:, 1::2, 1::2] = centres
        corners = finer
        wibble /= decay
    low = corners.amin(dim=(1, 2), keepdim=True)
    high = corners.amax(dim=(1, 2), keepdim=True)
    return (corners - low) / (high - low)


def fog(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """A plasma-fractal haze added, then the contrast rescaled to each image's maximum."""
    strength, decay = numpy_weather.FOG[profile][severity - 1]
    h, w = x.shape[-2:]
    mapsize = next_power_of_two(max(h, w, 3))
    if profile in numpy_weather.FOG_MAPSIZE:
        mapsize = max(mapsize, numpy_weather.FOG_MAPSIZE[profile])
    haze = plasma_fractal(generators, mapsize, decay, device=x.device, dtype=x.dtype)[:, None, :h, :w]
    top = x.amax(dim=(1, 2, 3), keepdim=True)
    return ((x + strength * haze) * top) / (top + strength)


# --------------------------------------------------------------------------- spatter: water shading

#: OpenCV Canny's fixed-point tan(22.5 degrees) (CANNY_SHIFT = 15).
_TG22 = 13573
_SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)
#: The reference's emboss-like kernel that shades the drops.
RIDGE_KERNEL = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]], np.float32)
#: OpenCV's DIST_L2 5x5 chamfer costs: a step, a diagonal step, a knight's move.
CHAMFER = (1.0, 1.4, 2.1969)


def canny(levels: torch.Tensor, low: int, high: int) -> torch.Tensor:
    """OpenCV's ``Canny(image, low, high)`` (3x3 Sobel, L1 magnitude) of (N, 1, H, W) grey levels.

    Sobel with replicated edges; non-maximum suppression with OpenCV's fixed-point direction
    sectors and tie rules (strictly greater than one neighbour, at least the other);
    hysteresis: candidates above ``low`` joined (8-connected) to pixels above ``high``.

    Returns
    -------
    torch.Tensor
        bool (N, 1, H, W), True on edges.
    """
    padded = pad(pad(levels, 2, 1, 1, "nearest"), 3, 1, 1, "nearest")
    sobel_x = torch.as_tensor(_SOBEL_X, dtype=levels.dtype, device=levels.device)
    kernels = torch.stack([sobel_x, sobel_x.T])[:, None]
    grad = F.conv2d(padded, kernels).round().long()          # exact small integers
    gx, gy = grad[:, 0:1], grad[:, 1:2]
    mag = gx.abs() + gy.abs()
    m = F.pad(mag, (1, 1, 1, 1))                               # zeros around, as OpenCV's buffer
    h, w = mag.shape[-2:]

    def at(dy: int, dx: int) -> torch.Tensor:
        return m[..., 1 + dy:1 + dy + h, 1 + dx:1 + dx + w]

    ax, ay = gx.abs(), gy.abs() << 15
    tg22x = ax * _TG22
    tg67x = tg22x + (ax << 16)
    horizontal = ay < tg22x
    vertical = ~horizontal & (ay > tg67x)
    same_sign = (gx ^ gy) >= 0
    keep_h = (mag > at(0, -1)) & (mag >= at(0, 1))
    keep_v = (mag > at(-1, 0)) & (mag >= at(1, 0))
    keep_d = torch.where(same_sign, (mag > at(-1, -1)) & (mag > at(1, 1)), (mag > at(-1, 1)) & (mag > at(1, -1)))
    local_max = torch.where(horizontal, keep_h, torch.where(vertical, keep_v, keep_d)) & (mag > low)
    edges = local_max & (mag > high)
    weak = local_max & ~edges
    while True:
        grown = edges | (weak & (F.max_pool2d(edges.to(levels.dtype), 3, 1, 1) > 0))
        if bool((grown == edges).all()):
            return edges
        edges = grown


def distance_transform(features: torch.Tensor, cap: float) -> torch.Tensor:
    """OpenCV's ``distanceTransform(DIST_L2, 5)`` of (N, 1, H, W): chamfer distance to the
    nearest True pixel, then ``min(distance, cap)``.

    The two raster passes of OpenCV's 5x5 chamfer (costs 1, 1.4 and 2.1969), row by row for
    the whole batch: a row first takes the minimum over its 5x2 window of already visited
    rows, then the steps along the row (cost 1) as a running minimum, so each pass is exact.
    """
    a, b, c = CHAMFER
    n, _, h, w = features.shape
    big = float(cap) * 4 + 1e4
    device = features.device
    d = torch.full((n, h + 4, w + 4), big, dtype=torch.float32, device=device)
    d[:, 2:2 + h, 2:2 + w] = torch.where(features[:, 0], 0.0, big)
    ramp = torch.arange(w, dtype=torch.float32, device=device)
    far, near = [big, c, big, c, big], [c, b, a, b, c]          # costs two rows / one row away
    forward_cost = torch.tensor([far, near], device=device)[None, :, None, :]
    backward_cost = torch.tensor([near, far], device=device)[None, :, None, :]
    for y in range(2, 2 + h):                                   # top to bottom, left to right
        window = d[:, y - 2:y].unfold(2, 5, 1)                  # (N, 2, W, 5)
        row = torch.minimum(d[:, y, 2:2 + w], (window + forward_cost).amin(dim=(1, 3)))
        d[:, y, 2:2 + w] = torch.cummin(row - ramp, dim=1).values + ramp
    for y in range(1 + h, 1, -1):                               # bottom to top, right to left
        window = d[:, y + 1:y + 3].unfold(2, 5, 1)
        row = torch.minimum(d[:, y, 2:2 + w], (window + backward_cost).amin(dim=(1, 3)))
        d[:, y, 2:2 + w] = torch.flip(torch.cummin(torch.flip(row, (1,)) - ramp, dim=1).values + ramp, (1,))
    return d[:, None, 2:2 + h, 2:2 + w].clamp(max=cap)


def equalize_hist(levels: torch.Tensor) -> torch.Tensor:
    """OpenCV's ``equalizeHist`` of each image of (N, 1, H, W) grey levels 0..255 (float).

    The cumulative histogram comes from sorting (no atomic adds: deterministic on every device).
    """
    n = levels.shape[0]
    flat = levels.reshape(n, -1).long()
    total = flat.shape[1]
    grid = torch.arange(256, device=levels.device)
    cumulative = torch.searchsorted(flat.sort(dim=1).values, grid.expand(n, -1).contiguous(), right=True)
    cumulative = cumulative.to(torch.float32)                               # values <= level, per level
    first = torch.argmax((cumulative > 0).to(torch.uint8), dim=1, keepdim=True)   # lowest level present
    first_count = cumulative.gather(1, first)
    scale = 255.0 / (total - first_count).clamp(min=1)
    lut = torch.round((cumulative - first_count) * scale).clamp(0, 255)
    lut = torch.where(grid[None] <= first, 0.0, lut)
    constant = first_count == total                                         # OpenCV: the image stays as it is
    lut = torch.where(constant, grid[None].to(torch.float32), lut)
    return lut.gather(1, flat).reshape(levels.shape).to(levels.dtype)


def water_mask(liquid: torch.Tensor, intensity: float) -> torch.Tensor:
    """Shaded water drops from the thresholded liquid layer: (N, 1, H, W) in, (N, 1, H, W) out.

    The reference's OpenCV chain on ``liquid8 = uint8(liquid * 255)``: Canny(50, 150) edges,
    distance to them (capped at 20), 3x3 mean truncated to levels, histogram equalisation,
    the ridge kernel (rounded, saturated), a rounded 3x3 mean; then ``liquid8 * shading``
    scaled to a maximum of ``intensity``.
    """
    liquid8 = to_levels(liquid)
    dist = distance_transform(canny(liquid8, 50, 150), 20.0)
    dist = torch.floor(box_blur3(dist) + 1e-4)
    dist = equalize_hist(dist)
    dist = torch.round(filter2d(dist, RIDGE_KERNEL, "reflect101")).clamp(0, 255)
    dist = torch.round(box_blur3(dist))
    mask = liquid8 * dist
    top = mask.amax(dim=(1, 2, 3), keepdim=True).clamp(min=1e-12)
    return mask / top * intensity


def spatter(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Water drops (severities 1-3) or mud splashes (4-5); one (H, W) normal liquid layer per image."""
    mean, std, sigma, threshold, intensity, mud = numpy_weather.SPATTER[profile][severity - 1]
    h, w = x.shape[-2:]
    liquid = normal(generators, (1, h, w), mean=mean, std=std, device=x.device, dtype=x.dtype)
    liquid = gaussian_blur(liquid, sigma, mode="nearest")
    liquid = torch.where(liquid < threshold, torch.zeros_like(liquid), liquid)
    if not mud:
        colour = torch.tensor(numpy_weather.WATER, dtype=x.dtype, device=x.device)[None, :, None, None]
        return x + water_mask(liquid, intensity) * colour
    colour = torch.tensor(numpy_weather.MUD, dtype=x.dtype, device=x.device)[None, :, None, None]
    blots = gaussian_blur((liquid > threshold).to(x.dtype), intensity, mode="nearest")
    blots = torch.where(blots < 0.8, torch.zeros_like(blots), blots)
    return x * (1 - blots) + colour * blots
