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


@numba.njit(cache=True, nogil=True, inline="always")
def _clip8(total):  # pragma: no cover - compiled
    # clip8: the rounded sum shifted back to 8 bits and clamped.
    v = total >> PRECISION_BITS
    return 0 if v < 0 else (255 if v > 255 else v)


@numba.njit(cache=True, nogil=True)
def _box(src, out_w, out_h):  # pragma: no cover - compiled
    # ImagingResampleInner (Pillow <= 12 order, and Pillow 13's for proportional resizes):
    # the horizontal pass over the source rows the vertical pass uses, into 8 bits, then the
    # vertical pass. Each output value is half + weight * (sum of its window's pixels) (see
    # _box_windows), the same integer Pillow accumulates tap by tap.
    in_h, in_w, channels = src.shape
    yfirst, ycount, yfixed = _box_windows(in_h, out_h)
    lo = yfirst[0]
    hi = yfirst[out_h - 1] + ycount[out_h - 1]
    for yy in range(out_h):
        lo = min(lo, yfirst[yy])
        hi = max(hi, yfirst[yy] + ycount[yy])
    half = np.int64(1) << (PRECISION_BITS - 1)
    if out_w != in_w:
        xfirst, xcount, xfixed = _box_windows(in_w, out_w)
        length = out_w * channels
        rows = np.empty((hi - lo, length), np.uint8)
        flat = src.reshape(in_h, in_w * channels)
        for yy in range(hi - lo):
            row = flat[yy + lo]
            dst = rows[yy]
            for xx in range(out_w):
                start = xfirst[xx] * channels
                stop = start + xcount[xx] * channels
                weight = xfixed[xx]
                for k in range(channels):
                    acc = np.int64(0)
                    for j in range(start + k, stop, channels):
                        acc += row[j]
                    dst[xx * channels + k] = _clip8(half + weight * acc)
    else:  # no horizontal pass: the vertical pass reads the source rows themselves
        rows = src[lo:hi].reshape(hi - lo, in_w * channels)
    length = rows.shape[1]
    if out_h == in_h:
        return rows.copy().reshape(out_h, length // channels, channels)
    out = np.empty((out_h, length), np.uint8)
    acc = np.empty(length, np.int32)  # a window's sum: at most 255 * in_h, far below 2**31
    for yy in range(out_h):
        for i in range(length):
            acc[i] = 0
        for y in range(yfirst[yy], yfirst[yy] + ycount[yy]):
            row = rows[y - lo]
            for i in range(length):
                acc[i] += row[i]
        weight = yfixed[yy]
        dst = out[yy]
        for i in range(length):
            dst[i] = _clip8(half + weight * np.int64(acc[i]))
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
    out = np.zeros((out_h, length), np.uint8)
    for y in range(out_h):
        if ys[y] < 0:
            continue
        dst = out[y]
        if y > 0 and ys[y] == ys[y - 1]:
            dst[:] = out[y - 1]
            continue
        row = rows[ys[y]]
        for i in range(length):
            if offset[i] >= 0:
                dst[i] = row[offset[i]]
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
