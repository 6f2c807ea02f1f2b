"""The reference's bilinear sampling and the warps built on it (ripple, pinch and twirl).

The reference (``utils/image.py``) samples an image at a float point ``(row, col)`` from its
four neighbours, each neighbour outside the image counting as black. It does this per pixel on
NumPy arrays, so the arithmetic type follows NumPy 1.x's casting rules, which the compiled loop
here reproduces:

- a **uint8** image: every product and sum in float64;
- a **float32** image: a neighbour's weighted value is a float32 product (NumPy 1.x keeps a
  float32 array times a float64 scalar in float32), and the two sums stay float32 while both of
  their terms are; a neighbour outside the image is an int64 zero, which turns its term, and
  every sum it enters, into float64.

:func:`bilinear_at` returns the sampled value and whether it ended in float64 (callers that
store into float32 arrays, or multiply the whole image afterwards, need to know).
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["bilinear_at", "pinch_and_twirl_cells", "ripple_warp"]


@numba.njit(cache=True, nogil=True, inline="always")
def _term32(image, r, c, ch, w):  # pragma: no cover - compiled
    return np.float32(image[r, c, ch]) * np.float32(w)


@numba.njit(cache=True, nogil=True)
def bilinear_at(image, p0, p1, ch, f32):  # pragma: no cover - compiled
    """Channel ``ch`` of ``image`` (HxWxC) at the float point (``p0`` row, ``p1`` column).

    ``f32``: the image is float32 and the float32 rules of the module docstring apply; else
    float64 throughout. Returns ``(value as float64, ended in float64)``.
    """
    h, w = image.shape[0], image.shape[1]
    l = int(math.floor(p0))
    u = int(math.floor(p1))
    r = l + 1
    d = u + 1
    wu = (1.0 - p1) + u
    wd = (1.0 - d) + p1
    wl = (1.0 - p0) + l
    wr = (1.0 - r) + p0
    in_l = 0 <= l < h
    in_r = 0 <= r < h
    in_u = 0 <= u < w
    in_d = 0 <= d < w
    lu, ld, ru, rd = in_l and in_u, in_l and in_d, in_r and in_u, in_r and in_d
    if not f32:
        al = (float(image[l, u, ch]) * wu if lu else 0.0) + (float(image[l, d, ch]) * wd if ld else 0.0)
        ar = (float(image[r, u, ch]) * wu if ru else 0.0) + (float(image[r, d, ch]) * wd if rd else 0.0)
        return al * wl + ar * wr, True
    # al, ar: float32 while both terms are in the image, else float64 (an int64 zero joined in)
    al32 = lu and ld
    if al32:
        al = float(_term32(image, l, u, ch, wu) + _term32(image, l, d, ch, wd))
    else:
        al = (float(_term32(image, l, u, ch, wu)) if lu else 0.0) + (float(_term32(image, l, d, ch, wd)) if ld else 0.0)
    ar32 = ru and rd
    if ar32:
        ar = float(_term32(image, r, u, ch, wu) + _term32(image, r, d, ch, wd))
    else:
        ar = (float(_term32(image, r, u, ch, wu)) if ru else 0.0) + (float(_term32(image, r, d, ch, wd)) if rd else 0.0)
    if al32 and ar32:
        return float(np.float32(al) * np.float32(wl) + np.float32(ar) * np.float32(wr)), False
    tl = float(np.float32(al) * np.float32(wl)) if al32 else al * wl
    tr = float(np.float32(ar) * np.float32(wr)) if ar32 else ar * wr
    return tl + tr, True


@numba.njit(cache=True, nogil=True)
def ripple_warp(image, amplitudes, wavelengths, phases):  # pragma: no cover - compiled
    """Ripple: each output pixel (y, x) samples the uint8 ``image`` at
    ``(y, x) + amplitudes * sin(2 pi (y, x) / wavelengths + phases)``; float64 HxWx3 out."""
    h, w, c = image.shape
    out = np.empty((h, w, c), np.float64)
    two_pi = 2.0 * np.pi
    for y in range(h):
        s0 = amplitudes[0] * math.sin(two_pi * y / wavelengths[0] + phases[0])
        p0 = y + s0
        for x in range(w):
            p1 = x + amplitudes[1] * math.sin(two_pi * x / wavelengths[1] + phases[1])
            for ch in range(c):
                out[y, x, ch] = bilinear_at(image, p0, p1, ch, False)[0]
    return out


@numba.njit(cache=True, nogil=True)
def _twirl_point(y, x, c0, c1, radius, amount, angle):  # pragma: no cover - compiled
    dx = y - c0
    dy = x - c1
    dist = math.sqrt(dx * dx + dy * dy)
    if dist > radius or np.round(dist, 3) == 0.0:
        return float(y), float(x)
    d = dist / radius
    t = math.sin(np.pi * 0.5 * d) ** (-amount)
    dx *= t
    dy *= t
    e = 1 - d
    a = angle * (e * e)
    ca = math.cos(a)
    sa = math.sin(a)
    return c0 + (dx * ca - dy * sa), c1 + (dx * sa + dy * ca)


@numba.njit(cache=True, nogil=True)
def pinch_and_twirl_cells(image, cells, angles, amount):  # pragma: no cover - compiled
    """Pinch and twirl: ``cells`` x ``cells`` square cells of ``side // cells`` pixels, each
    warped inside its inscribed circle by its own angle (``angles[i, j]``: column block i, row
    block j), cell after cell as the reference does, reading the partly warped float32 image.
    Returns the float32 HxWx3 result (pixels outside the cells unchanged)."""
    out = image.astype(np.float32)
    side = image.shape[0]
    grid = side // cells
    radius = grid / 2
    channels = image.shape[2]
    block = np.empty((grid, grid, channels), np.float32)
    for i in range(cells):
        for j in range(cells):
            left = i * grid
            top = j * grid
            c0 = top + radius
            c1 = left + radius
            for yy in range(grid):
                for xx in range(grid):
                    p0, p1 = _twirl_point(top + yy, left + xx, c0, c1, radius, amount, angles[i, j])
                    for ch in range(channels):
                        block[yy, xx, ch] = np.float32(bilinear_at(out, p0, p1, ch, True)[0])
            out[top:top + grid, left:left + grid, :] = block
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _luma(field, y, x):  # pragma: no cover - compiled
    if 0 <= y < field.shape[0] and 0 <= x < field.shape[1]:
        return field[y, x, 0] * 0.2126 + field[y, x, 1] * 0.7152 + field[y, x, 2] * 0.0722
    return 0.0


@numba.njit(cache=True, nogil=True)
def caustic_refraction_warp(image, caustics, eta, lens_scale, lighting):  # pragma: no cover - compiled
    """Refraction through a caustic lens: per pixel, the luma slope of ``caustics`` (HxWx3
    float64) gives a surface normal; the ray refracted by it (index ``eta``) picks where the
    float32 ``image`` (HxWx3, values in [0, 1]) is sampled, displaced by ``lens_scale`` (rounded
    to 1/1000 pixel as the reference does), and the slope brightens or darkens the result by
    ``lighting``. Returns ``(values in [0, 1] as float64 HxWx3, whether any pixel ended in float64)``.
    """
    h, w, channels = image.shape
    out = np.empty((h, w, channels), np.float64)
    any64 = False
    for y in range(h):
        for x in range(w):
            north = _luma(caustics, y, x - 1)
            south = _luma(caustics, y, x + 1)
            west = _luma(caustics, y - 1, x)
            east = _luma(caustics, y + 1, x)
            n0 = east - west
            n1 = south - north
            norm = math.sqrt(n0 * n0 + n1 * n1 + 1.0)
            n0 /= norm
            n1 /= norm
            n2 = 1.0 / norm
            r0 = 0.0
            r1 = 0.0
            if abs(n2) < 1.0 - 1e-3:
                out_angle = math.asin(math.sin(math.acos(n2)) / eta)
                u0 = math.cos(out_angle)
                u1 = math.sin(out_angle)
                sn = math.sqrt(n1 * n1 + n0 * n0)
                s0 = -n1 / sn
                s1 = n0 / sn
                # the frame (normal, normal x spectator, spectator) is orthonormal: its inverse
                # is its transpose (the reference inverts it numerically; the difference, ~1e-16,
                # vanishes in the rounding to 1/1000 below)
                o0 = n1 * 0.0 - n2 * s1
                o1 = n2 * s0 - n0 * 0.0
                r0 = np.round((n0 * u0 + o0 * u1) * lens_scale, 3)
                r1 = np.round((n1 * u0 + o1 * u1) * lens_scale, 3)
            p0 = y + r0
            p1 = x + r1
            light_ns = (north - south) * lighting
            light_ew = (east - west) * lighting
            for ch in range(channels):
                v, is64 = bilinear_at(image, p0, p1, ch, True)
                if is64:
                    v = v + light_ns
                    v = v + light_ew
                else:
                    v = float(np.float32(v) + np.float32(light_ns))
                    v = float(np.float32(v) + np.float32(light_ew))
                    # np.clip of a float32 array stays float32: the value is exact either way
                any64 = any64 or is64
                out[y, x, ch] = min(max(v, 0.0), 1.0)
    return out, any64
