"""Compiled pixel loops of :mod:`robustlab.models.pixels` (numba; imported when first used)."""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def lookup_levels(pixels, table, out):  # pragma: no cover - compiled
    """``out[i, k, c] = table[c, pixels[i, k, c]]`` for uint8 pixels (N, K, 3) and a float32
    table (3, 256): one pass from uint8 levels to a network's normalised input."""
    for i in range(pixels.shape[0]):
        src = pixels[i]
        dst = out[i]
        for k in range(src.shape[0]):
            dst[k, 0] = table[0, src[k, 0]]
            dst[k, 1] = table[1, src[k, 1]]
            dst[k, 2] = table[2, src[k, 2]]
