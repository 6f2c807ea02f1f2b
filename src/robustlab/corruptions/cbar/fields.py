"""Procedural noise fields of the C-bar corruptions, as compiled loops over the pixel grid.

Each function computes, for every pixel of an SxS grid, what the reference computes in a
per-pixel Python function, with the same float64 operations in the same order (the C
library's sin, cos, atan2, pow and sqrt, as NumPy 1.x calls them for float64 scalars), so the
fields are the reference's values, not approximations of them. Pixel ``(y, x)`` is row ``y``,
column ``x``.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

__all__ = [
    "caustic_field", "cos_sin", "fourier_power", "perlin_tables", "perlin_turbulence", "plasma_field",
    "sine_rings", "single_frequency",
]


@numba.njit(cache=True, nogil=True)
def cos_sin(values):  # pragma: no cover - compiled
    """``(cos(values), sin(values))`` of a float64 array, element by element through the C library."""
    flat = values.reshape(-1)
    c = np.empty(flat.shape[0], np.float64)
    s = np.empty(flat.shape[0], np.float64)
    for i in range(flat.shape[0]):
        c[i] = math.cos(flat[i])
        s[i] = math.sin(flat[i])
    return c.reshape(values.shape), s.reshape(values.shape)


@functools.lru_cache(maxsize=8)
def fourier_power(side: int, brownish: bool) -> np.ndarray:
    """The spectrum magnitude of the reference's Fourier noises at each (y, x) of an SxS grid:
    the distance r from (S/2, S/2) (blue noise) or ``1 / (r ** 2 + 1)`` (brownish noise).

    Read-only float64 (S, S), cached per size.
    """
    centre = side / 2
    axis = np.arange(side, dtype=np.float64) - centre
    # (x - c)**2 + (y - c)**2: multiples of 1/4, exact; the sqrt is correctly rounded
    dist = np.sqrt(axis[None, :] ** 2 + axis[:, None] ** 2)
    power = 1 / (dist * dist + 1) if brownish else dist
    power.setflags(write=False)
    return power


@numba.njit(cache=True, nogil=True)
def single_frequency(side, f0, f1, phase):  # pragma: no cover - compiled
    """``sin(x * f0 + y * f1 + phase)`` over the SxS grid (float64)."""
    out = np.empty((side, side), np.float64)
    for y in range(side):
        for x in range(side):
            out[y, x] = math.sin(x * f0 + y * f1 + phase)
    return out


@numba.njit(cache=True, nogil=True)
def sine_rings(side, x0, y0, freq, amplitude, ring_width):  # pragma: no cover - compiled
    """Concentric sine waves: the ring phase in [-1/2, 1/2) of each pixel around (x0, y0) (float64 SxS)."""
    out = np.empty((side, side), np.float64)
    for y in range(side):
        for x in range(side):
            ax = x - x0
            ay = y - y0
            angle = math.atan2(ax, ay) * freq
            dist = (math.sqrt(ax * ax + ay * ay) + math.sin(angle) * amplitude) % ring_width
            out[y, x] = dist / ring_width - 0.5
    return out


@numba.njit(cache=True, nogil=True)
def plasma_field(side, time, scale, i0s, i1s, i2s, i3s):  # pragma: no cover - compiled
    """Plasma noise: (S, S, 3) float64 in channel order (r, g, b).

    ``i0s``..``i3s``: the reference's per-iteration state vector ``i`` (the same for every
    pixel), one entry per iteration.
    """
    out = np.empty((side, side, 3), np.float64)
    iters = i0s.shape[0]
    sr = math.sin(time)
    for y0 in range(side):
        for x0 in range(side):
            x = x0 / scale
            y = y0 / scale
            for s in range(iters):
                shift = time / i1s[s]
                r0 = math.cos(y * i0s[s] - i3s[s] + shift) / i2s[s]
                r1 = math.sin(x * i0s[s] - i3s[s] + shift) / i2s[s]
                n0 = r0 + (-r1) * 0.3
                n1 = r1 + r0 * 0.3
                x += n0
                y += n1
            out[y0, x0, 0] = math.sin(x - time)
            out[y0, x0, 2] = math.sin(y + time)
            out[y0, x0, 1] = math.sin((x + y + sr) * 0.5)
    return out


def perlin_tables(rs: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """The reference's Perlin permutation ``p`` (514 int64) and gradients ``g`` (514 x 2 float64), drawn from ``rs``.

    Draws: 514 ``randint(0, 2**31, size=2)`` (one gradient each), then 256 ``randint(0, 2**31)``
    (the shuffle), as ``utils/perlin_noise.py`` does.
    """
    b = 256
    raw = np.stack([rs.randint(low=0, high=2**31, size=2) for _ in range(2 * b + 2)])
    vec = (raw % (2 * b) - b) / b
    with np.errstate(invalid="ignore", divide="ignore"):  # a (0, 0) gradient is NaN there too
        g = vec / np.sqrt(vec[:, 0] ** 2 + vec[:, 1] ** 2)[:, None]
    p = np.arange(2 * b + 2)
    for i in range(b - 1, -1, -1):
        j = rs.randint(low=0, high=2**31) % b
        p[i], p[j] = p[j], p[i]
    # the reference copies entry by entry, so the last two copies read entries 0 and 1 again
    p[b:2 * b] = p[:b]
    p[2 * b:] = p[:2]
    g[b:2 * b] = g[:b]
    g[2 * b:] = g[:2]
    return p, g


@numba.njit(cache=True, nogil=True, inline="always")
def _perlin(p, g, x, y):  # pragma: no cover - compiled
    t = x + 4096
    bx0 = int(t) % 256
    bx1 = (bx0 + 1) % 256
    rx0 = t % 1.0
    rx1 = rx0 - 1.0
    t = y + 4096
    by0 = int(t) % 256
    by1 = (by0 + 1) % 256
    ry0 = t % 1.0
    ry1 = ry0 - 1.0
    i = p[bx0]
    j = p[bx1]
    b00 = p[i + by0]
    b10 = p[j + by0]
    b01 = p[i + by1]
    b11 = p[j + by1]
    sx = rx0 * rx0 * (3.0 - 2.0 * rx0)
    sy = ry0 * ry0 * (3.0 - 2.0 * ry0)
    u = rx0 * g[b00, 0] + ry0 * g[b00, 1]
    v = rx1 * g[b10, 0] + ry0 * g[b10, 1]
    a = u + sx * (v - u)
    u = rx0 * g[b01, 0] + ry1 * g[b01, 1]
    v = rx1 * g[b11, 0] + ry1 * g[b11, 1]
    b = u + sx * (v - u)
    return 1.5 * (a + sy * (b - a))


@numba.njit(cache=True, nogil=True)
def perlin_turbulence(side, p, g, step, octaves, gain, bias):  # pragma: no cover - compiled
    """``clip(gain * turbulence(y * step, x * step) + bias, 0, 1)`` over the SxS grid (float64).

    Turbulence sums ``|noise(f x, f y)| / f`` for f = 1, 2, 4, ... <= ``octaves``.
    """
    out = np.empty((side, side), np.float64)
    for y in range(side):
        for x in range(side):
            px = y * step
            py = x * step
            t = 0.0
            f = 1.0
            while f <= octaves:
                t += abs(_perlin(p, g, f * px, f * py)) / f
                f = f * 2
            v = gain * t + bias
            out[y, x] = min(max(v, 0.0), 1.0)
    return out


@numba.njit(cache=True, nogil=True)
def caustic_field(side, time, size):  # pragma: no cover - compiled
    """The caustic pattern in [0, 1] at each pixel (float64 SxS), before the reference's softening."""
    out = np.empty((side, side), np.float64)
    tau = 6.28318530718
    inten = 0.005
    for y in range(side):
        for x in range(side):
            p0 = (y / size) % 1 * tau - 250
            p1 = (x / size) % 1 * tau - 250
            i0 = p0
            i1 = p1
            c = 1.0
            for n in range(5):
                t = time * (1.0 - (3.5 / (n + 1)))
                a = p0 + (math.cos(t - i0) + math.sin(t + i1))
                b = p1 + (math.sin(t - i1) + math.cos(t + i0))
                i0 = a
                i1 = b
                q0 = p0 / (math.sin(i0 + t) / inten)
                q1 = p1 / (math.cos(i1 + t) / inten)
                c += 1.0 / math.sqrt(q0 * q0 + q1 * q1)
            c /= 5.0
            c = 1.17 - c ** 1.4
            v = abs(c) ** 8.0
            out[y, x] = min(max(v, 0.0), 1.0)
    return out
