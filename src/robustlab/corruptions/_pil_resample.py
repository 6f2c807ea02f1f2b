"""Pillow's BOX and NEAREST resizing of 8-bit RGB images, compiled: the same pixels, faster.

pixelate resizes with ``Image.resize(..., BOX)`` and back with ``NEAREST`` (or BOX). Pillow's
8-bit resampler (``libImaging/Resample.c``) computes, per output pixel, a window of source
pixels with float64 weights, rounds the weights to 22-bit fixed point, sums ``pixel * weight``
in 32-bit integers from a rounding offset of 2**21 and shifts back, horizontally first (into an
8-bit intermediate) then vertically; its NEAREST resize (``Geometry.c``, ImagingScaleAffine)
steps a float64 source coordinate by ``in / out`` per pixel and truncates it. The loops here
compute the same integers and float64 positions, so the result is identical to Pillow's
(checked in the tests against the installed Pillow), without Pillow's image objects and
conversions. A BOX window's weights are all equal, so a window is summed once and multiplied
once (:func:`_box_windows`); a NEAREST upscale gathers each distinct source row once and copies
it to the rows that repeat it: pixelate stays faster than the reference at every severity.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["box_resize", "nearest_resize"]

PRECISION_BITS = 32 - 8 - 2


@numba.njit(cache=True, nogil=True)
def _box_windows(in_size, out_size):  # pragma: no cover - compiled
    # precompute_coeffs (BOX filter, box = (0, in_size)) + normalize_coeffs_8bpc, reduced to
    # what a BOX window is: its taps weigh 1 or 0 before normalisation (1 where -0.5 < t <= 0.5;
    # t grows with the tap, so the ones are contiguous), so every nonzero normalised weight of a
    # window is the same 1.0 / ww and rounds to the same 22-bit fixed-point weight. A window is
    # thus (first source index, number of ones, that fixed weight): pixel * weight summed over
    # the window equals weight * (sum of the pixels), exactly, in integers.
    scale = np.float64(in_size) / out_size
    filterscale = max(scale, 1.0)
    support = 0.5 * filterscale
    ss = 1.0 / filterscale
    first = np.empty(out_size, np.int64)
    count = np.empty(out_size, np.int64)
    fixed = np.empty(out_size, np.int64)
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = int(center - support + 0.5)
        if xmin < 0:
            xmin = 0
        xmax = int(center + support + 0.5)
        if xmax > in_size:
            xmax = in_size
        xmax -= xmin
        start, ww = xmin, 0
        for x in range(xmax):
            t = (x + xmin - center + 0.5) * ss
            if t > -0.5 and t <= 0.5:
                if ww == 0:
                    start = x + xmin
                ww += 1
        first[xx] = start
        count[xx] = ww
        fixed[xx] = int(0.5 + (1.0 / ww) * (1 << PRECISION_BITS)) if ww else 0
    return first, count, fixed


@numba.njit(cache=True, nogil=True)
def _box(src, out_w, out_h):  # pragma: no cover - compiled
    # ImagingResampleInner (Pillow <= 12 order, and Pillow 13's for proportional resizes):
    # the horizontal pass over the source rows the vertical pass uses, into 8 bits, then the
    # vertical pass. Each output value is (2**21 + weight * window sum) >> 22, clamped (see
    # _box_windows): the integer Pillow accumulates tap by tap. The sums are summed tap-major
    # (for tap t, every output of the row at once: the same loads Pillow makes, without its
    # multiplications), in 32 bits: weight * sum <= (2**22 / n + 1/2) * 255 n + 2**21 < 2**31.
    in_h, in_w, channels = src.shape
    yfirst, ycount, yfixed = _box_windows(in_h, out_h)
    lo, hi = in_h, 0
    for yy in range(out_h):
        lo = min(lo, yfirst[yy])
        hi = max(hi, yfirst[yy] + ycount[yy])
    hi = max(hi, lo)
    half = np.int32(1 << (PRECISION_BITS - 1))
    if out_w != in_w:
        xfirst, xcount, xfixed = _box_windows(in_w, out_w)
        length = out_w * channels
        base = np.empty(length, np.int64)
        count = np.empty(length, np.int64)
        weight = np.empty(length, np.int32)
        for xx in range(out_w):
            for k in range(channels):
                base[xx * channels + k] = xfirst[xx] * channels + k
                count[xx * channels + k] = xcount[xx]
                weight[xx * channels + k] = xfixed[xx]
        fewest, most = xcount.min(), xcount.max()
        flat = src.reshape(in_h, in_w * channels)
        rows = np.empty((hi - lo, length), np.uint8)
        acc = np.empty(length, np.int32)
        for yy in range(hi - lo):
            row = flat[yy + lo]
            for j in range(length):
                acc[j] = row[base[j]] if count[j] > 0 else 0
            for t in range(1, most):
                step = t * channels
                if t < fewest:
                    for j in range(length):
                        acc[j] += row[base[j] + step]
                else:  # ragged windows: only those with a t-th pixel
                    for j in range(length):
                        if count[j] > t:
                            acc[j] += row[base[j] + step]
            dst = rows[yy]
            for j in range(length):
                dst[j] = min((half + weight[j] * acc[j]) >> PRECISION_BITS, 255)
    else:  # no horizontal pass: the vertical pass reads the source rows themselves
        rows = src[lo:hi].reshape(hi - lo, in_w * channels)
    length = rows.shape[1]
    if out_h == in_h:
        return rows.copy().reshape(out_h, length // channels, channels)
    out = np.empty((out_h, length), np.uint8)
    acc = np.empty(length, np.int32)
    for yy in range(out_h):
        for i in range(length):
            acc[i] = 0
        for y in range(yfirst[yy], yfirst[yy] + ycount[yy]):
            row = rows[y - lo]
            for i in range(length):
                acc[i] += row[i]
        w = np.int32(yfixed[yy])
        dst = out[yy]
        for i in range(length):
            dst[i] = min((half + w * acc[i]) >> PRECISION_BITS, 255)
    return out.reshape(out_h, length // channels, channels)


@numba.njit(cache=True, nogil=True)
def _nearest_index(in_size, out_size):  # pragma: no cover - compiled
    # ImagingScaleAffine's source positions: a = in / out, start a / 2, += a per pixel,
    # truncated; -1 marks a position outside the source (Pillow fills it with 0).
    a = np.float64(np.float32(in_size)) / out_size
    index = np.empty(out_size, np.int64)
    pos = 0.0 + a * 0.5
    for x in range(out_size):
        i = -1 if pos < 0.0 else int(pos)
        index[x] = i if i < in_size else -1
        pos += a
    return index


@numba.njit(cache=True, nogil=True)
def _nearest(src, out_w, out_h):  # pragma: no cover - compiled
    # Each output row is gathered once per distinct source row; an output row with the same
    # source row as the one before it (upscaling repeats rows) is a copy of that row.
    in_h, in_w, channels = src.shape
    xs = _nearest_index(in_w, out_w)
    ys = _nearest_index(in_h, out_h)
    length = out_w * channels
    offset = np.empty(length, np.int64)
    for x in range(out_w):
        for k in range(channels):
            offset[x * channels + k] = xs[x] * channels + k if xs[x] >= 0 else -1
    rows = src.reshape(in_h, in_w * channels)
    out = np.empty((out_h, length), np.uint8)
    for y in range(out_h):
        dst = out[y]
        if ys[y] < 0:  # outside the source: Pillow leaves 0
            for i in range(length):
                dst[i] = 0
        elif y > 0 and ys[y] == ys[y - 1]:
            prev = out[y - 1]
            for i in range(length):
                dst[i] = prev[i]
        else:
            row = rows[ys[y]]
            for i in range(length):
                dst[i] = row[offset[i]] if offset[i] >= 0 else 0
    return out.reshape(out_h, out_w, channels)


def _check(image: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, int, int]:
    image = np.ascontiguousarray(image)
    if image.dtype != np.uint8 or image.ndim != 3:
        raise TypeError(f"resizing needs a uint8 HxWxC image; got {image.ndim}-D {image.dtype}")
    w, h = (int(v) for v in size)
    if w < 1 or h < 1:
        raise ValueError(f"target size must be at least 1x1; got {w}x{h}")
    return image, w, h


def box_resize(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``Image.fromarray(image).resize(size, Image.BOX)`` as an array (size is (width, height))."""
    image, w, h = _check(image, size)
    if (h, w) == image.shape[:2]:
        return image.copy()
    return _box(image, w, h)


def nearest_resize(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``Image.fromarray(image).resize(size, Image.NEAREST)`` as an array (size is (width, height))."""
    image, w, h = _check(image, size)
    if (h, w) == image.shape[:2]:
        return image.copy()
    return _nearest(image, w, h)
