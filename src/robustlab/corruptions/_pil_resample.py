"""Pillow's BOX and NEAREST resizing of 8-bit RGB images, compiled: the same pixels, faster.

pixelate resizes with ``Image.resize(..., BOX)`` and back with ``NEAREST`` (or BOX). Pillow's
8-bit resampler (``libImaging/Resample.c``) computes, per output pixel, a window of source
pixels with float64 weights, rounds the weights to 22-bit fixed point, sums ``pixel * weight``
in 32-bit integers from a rounding offset of 2**21 and shifts back, horizontally first (into an
8-bit intermediate) then vertically; its NEAREST resize (``Geometry.c``, ImagingScaleAffine)
steps a float64 source coordinate by ``in / out`` per pixel and truncates it. The loops here
do the same integer and float64 operations, so the result is identical to Pillow's (checked
in the tests against the installed Pillow), without Pillow's image objects and conversions,
which cost more than the resampling at these sizes (and more in recent Pillow releases).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["box_resize", "nearest_resize"]

PRECISION_BITS = 32 - 8 - 2


@numba.njit(cache=True, nogil=True)
def _box_coeffs(in_size, out_size):  # pragma: no cover - compiled
    # precompute_coeffs (BOX filter, box = (0, in_size)) + normalize_coeffs_8bpc.
    scale = np.float64(in_size) / out_size
    filterscale = max(scale, 1.0)
    support = 0.5 * filterscale
    ksize = int(np.ceil(support)) * 2 + 1
    weights = np.zeros((out_size, ksize), np.float64)
    bounds = np.empty((out_size, 2), np.int64)
    ss = 1.0 / filterscale
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        ww = 0.0
        xmin = int(center - support + 0.5)
        if xmin < 0:
            xmin = 0
        xmax = int(center + support + 0.5)
        if xmax > in_size:
            xmax = in_size
        xmax -= xmin
        for x in range(xmax):
            t = (x + xmin - center + 0.5) * ss
            w = 1.0 if (t > -0.5 and t <= 0.5) else 0.0
            weights[xx, x] = w
            ww += w
        for x in range(xmax):
            if ww != 0.0:
                weights[xx, x] /= ww
        bounds[xx, 0] = xmin
        bounds[xx, 1] = xmax
    fixed = np.empty((out_size, ksize), np.int64)
    for xx in range(out_size):
        for x in range(ksize):
            v = weights[xx, x]
            if v < 0:
                fixed[xx, x] = int(-0.5 + v * (1 << PRECISION_BITS))
            else:
                fixed[xx, x] = int(0.5 + v * (1 << PRECISION_BITS))
    return bounds, fixed


@numba.njit(cache=True, nogil=True)
def _clip8_into(acc, out):  # pragma: no cover - compiled
    # clip8: the sum shifted back to 8 bits and clamped.
    for i in range(acc.shape[0]):
        v = acc[i] >> PRECISION_BITS
        out[i] = 0 if v < 0 else (255 if v > 255 else v)


@numba.njit(cache=True, nogil=True)
def _box(src, out_w, out_h):  # pragma: no cover - compiled
    # ImagingResampleInner (Pillow <= 12 order, and Pillow 13's for proportional resizes):
    # the horizontal pass over the source rows the vertical pass uses, into 8 bits, then the
    # vertical pass. The sums are exact integers (no overflow: 255 * 2**22 + 2**21 < 2**31), so
    # they are accumulated in whatever order vectorises; the result is the same.
    in_h, in_w, channels = src.shape
    ybounds, ykk = _box_coeffs(in_h, out_h)
    first = ybounds[0, 0]
    last = ybounds[out_h - 1, 0] + ybounds[out_h - 1, 1]
    half = 1 << (PRECISION_BITS - 1)
    if out_w != in_w:
        xbounds, xkk = _box_coeffs(in_w, out_w)
        # Per output value j = xx * C + k and tap t: the source offset in the row and the weight
        # (0 past the window), so the pass is a few vectorised gathers per row.
        taps = 0
        for xx in range(out_w):
            taps = max(taps, xbounds[xx, 1])
        length = out_w * channels
        offset = np.empty((taps, length), np.int32)
        weight = np.zeros((taps, length), np.int32)
        for xx in range(out_w):
            for k in range(channels):
                j = xx * channels + k
                for t in range(taps):
                    inside = t < xbounds[xx, 1]
                    offset[t, j] = (xbounds[xx, 0] + (t if inside else 0)) * channels + k
                    if inside:
                        weight[t, j] = xkk[xx, t]
        temp = np.empty((last - first, length), np.uint8)
        acc = np.empty(length, np.int32)
        for yy in range(last - first):
            row = src[yy + first].reshape(-1)
            for j in range(length):
                acc[j] = half
            for t in range(taps):
                off = offset[t]
                wt = weight[t]
                for j in range(length):
                    acc[j] += np.int32(row[off[j]]) * wt[j]
            _clip8_into(acc, temp[yy])
    else:  # no horizontal pass: the vertical pass reads the source rows themselves
        temp = src[first:last].reshape(last - first, in_w * channels)
    length = temp.shape[1]
    if out_h == in_h:
        return temp.copy().reshape(out_h, length // channels, channels)
    out = np.empty((out_h, length), np.uint8)
    acc = np.empty(length, np.int32)
    for yy in range(out_h):
        for i in range(length):
            acc[i] = half
        for y in range(ybounds[yy, 1]):
            row = temp[ybounds[yy, 0] - first + y]
            weight = np.int32(ykk[yy, y])
            for i in range(length):
                acc[i] += np.int32(row[i]) * weight
        _clip8_into(acc, out[yy])
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
        row = rows[ys[y]]
        dst = out[y]
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
