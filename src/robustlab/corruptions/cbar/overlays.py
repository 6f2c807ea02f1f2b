"""C-bar corruptions that paint over the image: sparkles, inverse sparkles, checkerboard cutout.

Compiled per-pixel loops with the reference's float64 operations in its order (see
:mod:`.fields`); the per-pass float32 rounding of the reference's sparkle loop is kept.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["checkerboard_mask", "sparkle_pass"]


@numba.njit(cache=True, nogil=True)
def sparkle_pass(image, c0, c1, radius, ray_lengths, exponent, inverse):  # pragma: no cover - compiled
    """One star of rays centred on (``c0`` row, ``c1`` column) over a float32 HxWx3 ``image``.

    Each pixel's blend weight f in [0, 1] comes from its angle (which ray, interpolated between
    ray lengths) and distance; the pixel becomes ``v + f (255 - v)`` (a white sparkle) or, with
    ``inverse``, ``255 + f (v - 255)`` (white everywhere but inside the star). float64 HxWx3 out.
    """
    h, w, channels = image.shape
    out = np.empty((h, w, channels), np.float64)
    rays = ray_lengths.shape[0]
    two_pi = 2 * np.pi
    for y in range(h):
        for x in range(w):
            dp0 = y - c0
            dp1 = x - c1
            dist = math.sqrt(dp0 * dp0 + dp1 * dp1)
            angle = math.atan2(dp1, dp0)
            d = (angle + np.pi) / two_pi * rays
            i = int(d)
            f = d - i
            if radius != 0:
                lo = ray_lengths[i % rays]
                length = lo + f * (ray_lengths[(i + 1) % rays] - lo)
                g = length * length / (dist * dist + 1e-4)
                g = g ** exponent
                f -= 0.5
                f = 1 - f * f
                f *= g
            f = min(max(f, 0.0), 1.0)
            for ch in range(channels):
                v = float(image[y, x, ch])
                out[y, x, ch] = 255.0 + f * (v - 255.0) if inverse else v + f * (255.0 - v)
    return out


@numba.njit(cache=True, nogil=True)
def checkerboard_mask(h, w, cos_a, sin_a, scale, grid):  # pragma: no cover - compiled
    """True where the rotated checkerboard cuts the pixel out (a "black" square whose grid cell is set).

    Square coordinates ``nx = (cos a y + sin a x) / scale``, ``ny = (-sin a y + cos a x) / scale``;
    cell ``grid[int(nx), int(ny)]`` (Python indexing: negative indices count from the end).
    """
    out = np.zeros((h, w), np.bool_)
    gx, gy = grid.shape
    for y in range(h):
        for x in range(w):
            nx = (cos_a * y + sin_a * x) / scale
            ny = (-sin_a * y + cos_a * x) / scale
            if int(nx % 2) != int(ny % 2):
                continue
            ix = int(nx)
            iy = int(ny)
            if ix < 0:
                ix += gx
            if iy < 0:
                iy += gy
            out[y, x] = grid[ix, iy]
    return out
