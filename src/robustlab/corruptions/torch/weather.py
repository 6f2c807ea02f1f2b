"""Weather corruptions on a torch device: snow, frost, fog (benchmark) and spatter (held-out).

Same definitions and tables as :mod:`robustlab.corruptions.weather`, with each image's draws
from its own generator:

- snow: an (H, W) normal flake layer, then the blur angle U(-135, -45);
- frost: the texture index ``randint(5)`` (the sixth file is never used, as in the
  references), then the crop's top row and left column; the textures are the shipped files,
  resized like the numpy path and kept on the device, stacked, so that the crops are one gather;
- fog: the diamond-square plasma map's uniforms, all levels in one draw, coarse to fine;
- spatter: an (H, W) normal liquid layer. The water drops' shading (OpenCV's Canny edges,
  distance transform, histogram equalisation and filters in the reference) is re-expressed in
  torch, batched, step by step with OpenCV's definitions (:mod:`.water`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from .. import weather as numpy_weather
from .._plasma import next_power_of_two
from .draws import integers, normal, uniform, wide_float
from .ops import clipped_zoom, gaussian_blur, line_blur, per_image_loops, rgb_to_grey, to_levels
from .water import water_mask

__all__ = ["FROST_CHOICES", "frost_textures", "plasma_fractal"]


# --------------------------------------------------------------------------- snow

def snow(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Falling snow: a thresholded, zoomed noise layer motion-blurred at a random angle per image."""
    mean, std, zoom, threshold, radius, sigma, weight = numpy_weather.SNOW[profile][severity - 1]
    h, w = x.shape[-2:]
    flakes = normal(generators, (1, h, w), mean=mean, std=std, device=x.device, dtype=x.dtype)
    angles = uniform(generators, -135.0, -45.0, device=x.device, dtype=wide_float(x.device))
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

#: How many of the shipped frost textures the draws choose from (``randint(5)``, as the references).
FROST_CHOICES = 5


@lru_cache(maxsize=16)
def frost_textures(height: int, width: int, profile: str,
                   device: str) -> tuple[torch.Tensor, tuple[tuple[int, int], ...]]:
    """The frost textures an image of ``height`` x ``width`` is cropped from, resized as the numpy
    path does, stacked on ``device``: float (5, 3, TH, TW) in [0, 1] (each texture at the top left,
    zero beyond its own size) and each one's (rows, cols). Cached."""
    layers = [np.asarray(numpy_weather.frost_layer(k, (height, width, 3), profile)) for k in range(FROST_CHOICES)]
    sizes = tuple((int(t.shape[0]), int(t.shape[1])) for t in layers)
    stack = np.zeros((FROST_CHOICES, max(r for r, _ in sizes), max(c for _, c in sizes), 3), np.uint8)
    for k, t in enumerate(layers):
        stack[k, :t.shape[0], :t.shape[1]] = t[..., :3]
    return torch.from_numpy(stack).permute(0, 3, 1, 2).to(device=device, dtype=torch.float32) / 255, sizes


def frost(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """The image blended with a random crop of a frost photograph (a texture and a crop per image).

    Draws per image: the texture ``randint(5)``, then the crop's top row and left column, each
    ``randint`` over the positions the chosen texture allows. That range depends on the texture
    drawn, so the batch's texture choices are read on the host once (the kernel's one wait for
    the device); the crops are one gather for the whole batch (on a CPU: slices, faster there).
    """
    image_weight, texture_weight = numpy_weather.FROST[profile][severity - 1]
    n, _, h, w = x.shape
    textures, sizes = frost_textures(h, w, profile, str(x.device))
    index = integers(generators, 0, FROST_CHOICES, device=x.device)
    tops = torch.empty(n, dtype=torch.int64, device=x.device)
    lefts = torch.empty(n, dtype=torch.int64, device=x.device)
    for top, left, k, g in zip(tops.unbind(0), lefts.unbind(0), index.tolist(), generators):
        top.random_(0, sizes[k][0] - h, generator=g)
        left.random_(0, sizes[k][1] - w, generator=g)
    if per_image_loops(x.device):      # slices copy faster than an index computed per value
        crops = torch.stack([textures[k, :, t:t + h, c:c + w]
                             for k, t, c in zip(index.tolist(), tops.tolist(), lefts.tolist())])
    else:
        rows = (tops[:, None] + torch.arange(h, device=x.device))[:, None, :, None]
        cols = (lefts[:, None] + torch.arange(w, device=x.device))[:, None, None, :]
        channels = torch.arange(3, device=x.device)[None, :, None, None]
        crops = textures[index[:, None, None, None], channels, rows, cols]
    return image_weight * x + texture_weight * crops.to(x.dtype)


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


# --------------------------------------------------------------------------- spatter

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
