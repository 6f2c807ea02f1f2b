"""Numeric building blocks of the corruption kernels (public: plugins' kernels and the perturbation
sequences use them too).

Each function reproduces one helper of the reference implementations (imagecorruptions 1.1.2
and hendrycks' ``make_*_c.py``) with the *same floating-point operations in the same order*, so
that a kernel built from them gives bit-identical results, but runs vectorised or compiled
(numba) instead of in Python pixel loops.

Helpers:

- :func:`severity_param` - look up a per-profile 5-severity table.
- :func:`unit_float` / :func:`to_uint8` / :func:`unit_to_uint8` - the references' ``x / 255.``
  and final ``np.uint8`` (truncating) conversions.
- :func:`gaussian_smooth` - ``skimage.filters.gaussian`` (scipy's separable filter, mode
  ``nearest``, truncate 4) over the spatial axes only, compiled (:mod:`._gaussian`).
- :func:`disk_kernel` - the anti-aliased disk of defocus blur.
- :func:`motion_blur_kernel`, :func:`motion_blur` - imagecorruptions' ImageMagick-free line
  blur (edge-replicated shifts, float64 accumulation).
- :func:`clipped_zoom` - crop-and-zoom (bilinear, exactly ``scipy.ndimage.zoom(order=1)``),
  top-left (imagecorruptions) or centred (hendrycks) semantics.
- :func:`zoom_sum` - the sum of several clipped zooms (zoom blur), computing only the kept
  window of each zoomed layer.
- :func:`glass_shuffle` - glass blur's local pixel "swap" (a copy in the reference).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numba
import numpy as np

from .exactmath import exp as exact_exp
from .exactmath import pairwise_sum
from ._gaussian import gaussian_filter
from ._sampler_route import draw_randint

__all__ = [
    "clipped_zoom", "disk_kernel", "gaussian_smooth", "glass_shuffle", "motion_blur",
    "motion_blur_kernel", "motion_blur_weights", "severity_param", "to_uint8", "unit_float", "unit_to_uint8",
    "unit_value_to_uint8",
    "zoom_output_size", "zoom_window",
    "zoom_sum",
]


# --------------------------------------------------------------------------- tables

def severity_param(table: dict, profile: str, severity: int):
    """The parameter of ``severity`` (1..5) for ``profile`` in a per-profile table.

    ``table`` maps profile names to 5-tuples; ``imagenet-c`` falls back to the
    ``imagecorruptions`` entry (their tables agree for all noise and blur corruptions).
    """
    row = table.get(profile)
    if row is None and profile == "imagenet-c":
        row = table["imagecorruptions"]
    if row is None:
        raise KeyError(f"no parameters for profile {profile!r}")
    return row[severity - 1]


# --------------------------------------------------------------------------- conversions

def unit_float(image: np.ndarray) -> np.ndarray:
    """``image / 255.`` as float64 (the references' first step), any shape."""
    return np.asarray(image) / 255.0


def to_uint8(x: np.ndarray) -> np.ndarray:
    """The references' final ``np.uint8(x)``: truncation toward zero of values in [0, 255].

    Callers clip first (every reference corruption ends in ``np.clip(..)``), so no wrap-around
    happens; NaNs never occur in these kernels.
    """
    return x.astype(np.uint8)


@numba.njit(cache=True, nogil=True, inline="always")
def unit_value_to_uint8(v, lo, hi, scale):  # pragma: no cover - compiled
    """``np.uint8(np.clip(v, lo, hi) * scale)`` for one value, in compiled loops.

    ``lo``, ``hi``, ``scale`` (0, 1, 255) are given in ``v``'s float type, so a float32 value
    is multiplied in float32 as NumPy does.
    """
    if v < lo:
        v = lo
    elif v > hi:
        v = hi
    return np.uint8(v * scale)


@numba.njit(cache=True, nogil=True)
def _unit_to_uint8(flat, lo, hi, scale, out):  # pragma: no cover - compiled
    for i in range(flat.shape[0]):
        out[i] = unit_value_to_uint8(flat[i], lo, hi, scale)


def unit_to_uint8(x: np.ndarray) -> np.ndarray:
    """The references' output step ``np.uint8(np.clip(x, 0, 1) * 255)``, in one compiled pass.

    ``x`` is float64 or float32 (the product is taken in ``x``'s dtype, as NumPy does); the
    result is bit-identical and has ``x``'s shape.
    """
    x = np.ascontiguousarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"unit_to_uint8 needs float32 or float64 values; got {x.dtype}")
    kind = x.dtype.type
    out = np.empty(x.shape, np.uint8)
    _unit_to_uint8(x.reshape(-1), kind(0), kind(1), kind(255), out.reshape(-1))
    return out


# --------------------------------------------------------------------------- gaussian

def gaussian_smooth(x: np.ndarray, sigma: float, *, mode: str = "nearest", truncate: float = 4.0) -> np.ndarray:
    """Gaussian blur of the spatial axes, like ``skimage.filters.gaussian(x, sigma, channel_axis=-1)``.

    Parameters
    ----------
    x : np.ndarray
        HxW or HxWxC; integer input is *not* rescaled (pass floats, as the references do after
        ``/ 255.``). float64 and float32 keep their dtype.
    sigma : float
        Standard deviation in pixels (the same for both spatial axes); channels are not mixed.
    mode, truncate
        As scipy.ndimage.gaussian_filter (scikit-image's defaults: ``nearest``, 4.0).

    Returns
    -------
    np.ndarray
        Same shape; float64 unless ``x`` is float32.
    """
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    sigmas = (sigma, sigma) if x.ndim == 2 else (sigma, sigma) + (0,) * (x.ndim - 2)
    return gaussian_filter(x, sigmas, mode=mode, truncate=truncate)


# --------------------------------------------------------------------------- defocus disk

def _round_f32(q: Fraction) -> np.float32:
    """The float32 nearest to the rational ``q``, ties to even (subnormals included)."""
    first = np.float32(float(q))
    best, best_gap = first, None
    for candidate in (np.nextafter(first, np.float32(-np.inf)), first, np.nextafter(first, np.float32(np.inf))):
        gap = abs(Fraction(float(candidate)) - q)
        if best_gap is None or gap < best_gap or (gap == best_gap and not int(candidate.view(np.uint32)) & 1):
            best, best_gap = candidate, gap
    return np.float32(best)


def _fma32(a, b, c) -> np.float32:
    """a * b + c for float32 values, rounded once (a fused multiply-add), exactly."""
    return _round_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))


def _gaussian_weights32(n: int, sigma: float) -> list:
    """OpenCV's ``getGaussianKernel(n, sigma, CV_32F)``: float32 exp weights, summed in float64,
    each scaled by the inverse sum and rounded to float32."""
    scale2 = -0.5 / (sigma * sigma)
    weights = [np.float32(v) for v in exact_exp([scale2 * (i - (n - 1) * 0.5) ** 2 for i in range(n)])]
    inverse = 1.0 / sum(float(w) for w in weights)
    return [np.float32(float(w) * inverse) for w in weights]


def _symmetric_pass32(src: np.ndarray, weights: list, centre_last: bool) -> np.ndarray:
    """One pass of OpenCV's float32 symmetric separable filter along axis 1, edges reflect-101.

    Mirrored pairs are added first (float32); ``centre_last=False``: centre * w[r], then each
    pair fused-multiply-added from the nearest outwards (OpenCV's 5-tap rows and its columns);
    ``centre_last=True``: the nearest pair times its weight, the outer pairs, then the centre
    fused-multiply-added last (its 3-tap rows).
    """
    r = len(weights) // 2
    h, w = src.shape

    def at(x: int) -> int:
        while x < 0 or x >= w:
            x = -x if x < 0 else 2 * (w - 1) - x
        return x

    out = np.empty_like(src)
    for y in range(h):
        row = src[y]
        for x in range(w):
            pairs = [None] + [np.float32(row[at(x - j)] + row[at(x + j)]) for j in range(1, r + 1)]
            if centre_last:
                total = np.float32(pairs[1] * weights[r - 1])
                for j in range(2, r + 1):
                    total = _fma32(pairs[j], weights[r - j], total)
                total = _fma32(row[x], weights[r], total)
            else:
                total = np.float32(row[x] * weights[r])
                for j in range(1, r + 1):
                    total = _fma32(pairs[j], weights[r - j], total)
            out[y, x] = total
    return out


@functools.lru_cache(maxsize=64)
def _disk_kernel(radius: float, alias_blur: float) -> np.ndarray:
    if radius <= 8:
        half, taps = 8, 3
    else:
        half, taps = int(radius), 5
    grid = np.arange(-half, half + 1)
    xx, yy = np.meshgrid(grid, grid)
    disk = np.array((xx ** 2 + yy ** 2) <= radius ** 2, dtype=np.float32)
    disk /= np.sum(disk)
    weights = _gaussian_weights32(taps, float(alias_blur))
    rows = _symmetric_pass32(disk, weights, centre_last=taps == 3)
    kernel = np.ascontiguousarray(_symmetric_pass32(np.ascontiguousarray(rows.T), weights, centre_last=False).T)
    kernel.setflags(write=False)
    return kernel


def disk_kernel(radius: float, alias_blur: float) -> np.ndarray:
    """The anti-aliased disk of defocus blur (float32, sums to ~1; read-only, cached).

    A binary disk of ``radius`` on a grid of half-width max(8, radius) (the references use 8
    for radius <= 8), normalised, then smoothed by OpenCV's Gaussian blur (3x3 for radius <= 8,
    else 5x5) with sigma ``alias_blur``.

    The blur is computed here with the float32 operations of OpenCV 4.11's ``GaussianBlur``
    (the reference environment's; x86-64, fused multiply-adds), not by calling the installed
    OpenCV: OpenCV 5.0 rounds 12 of the 5x5 kernel's taps differently (one unit in the last
    place), which moved one defocus_blur output value in about 14 million by one grey level.
    The tests compare the result with kernels made by OpenCV 4.11 for every profile's table.
    """
    return _disk_kernel(float(radius), float(alias_blur))


# --------------------------------------------------------------------------- motion blur

@functools.lru_cache(maxsize=64)
def motion_blur_weights(radius: int, sigma: float) -> np.ndarray:
    """The ``2 * radius + 1`` normalised one-sided Gaussian weights of the motion blur line
    (float64, read-only, cached: they depend on the severity only, not on the angle)."""
    taps = np.arange(2 * int(radius) + 1)
    # exp correctly rounded and the sum in NumPy's pairwise order (exactmath): the weights are the
    # same float64 values on every machine; NumPy's own exp is not on CPUs with AVX-512.
    gauss = exact_exp(-taps ** 2 / (2 * (sigma ** 2))) / (np.sqrt(2 * np.pi) * sigma)
    weights = gauss / pairwise_sum(gauss)
    weights.setflags(write=False)
    return weights


def motion_blur_kernel(radius: int, sigma: float, angle: float, shape: tuple[int, int]):
    """Weights and integer pixel offsets of imagecorruptions' motion blur.

    The line has ``2 * radius + 1`` taps with one-sided Gaussian weights ``exp(-i^2 / 2 sigma^2)``
    (normalised), tap ``i`` sampling the pixel ``round(i * (sin, cos)(angle))`` away (rounded
    half down, as ``ceil(v - 0.5)``); the taps stop at the first one that leaves an image of
    ``shape`` (H, W). ImageMagick's MotionBlurImage uses the same geometry.

    Returns
    -------
    (weights float64 (n,), dy int64 (n,), dx int64 (n,))
        Output pixel (y, x) = sum_i weights[i] * input[clamp(y - dy[i]), clamp(x - dx[i])].
    """
    width = 2 * int(radius) + 1
    weights = motion_blur_weights(radius, sigma)
    radians = float(angle) * (math.pi / 180.0)  # numpy.deg2rad's one multiplication
    point = (width * math.sin(radians), width * math.cos(radians))
    hypot = math.hypot(point[0], point[1])
    dys, dxs = [], []
    for i in range(width):
        dy = -math.ceil(((i * point[0]) / hypot) - 0.5)
        dx = -math.ceil(((i * point[1]) / hypot) - 0.5)
        if abs(dy) >= shape[0] or abs(dx) >= shape[1]:
            break
        dys.append(dy)
        dxs.append(dx)
    n = len(dys)
    return weights[:n].astype(np.float64), np.asarray(dys, np.int64), np.asarray(dxs, np.int64)


@numba.njit(cache=True, nogil=True)
def _line_blur(padded, pad, channels, weights, dys, dxs, rows, cols):  # pragma: no cover - compiled
    # out[y, x*C + k] = sum_i weights[i] * layer[clamp(y - dys[i]), clamp(x - dxs[i]), k], summed
    # in tap order from 0.0 like the reference's shift-and-add loop. ``padded`` is the layer
    # with ``pad`` edge-replicated pixels on every side, as rows of (W + 2 pad) * C values.
    # Taps outer, values inner: each value still sums its taps in order, and the inner loop
    # runs over contiguous memory (vectorised).
    length = cols * channels
    out = np.zeros((rows, length))
    for y in range(rows):
        row = out[y]
        for i in range(weights.shape[0]):
            weight = weights[i]
            start = (pad - dxs[i]) * channels
            src = padded[pad + y - dys[i], start:start + length]
            for t in range(length):
                row[t] += weight * src[t]
    return out


def motion_blur(x: np.ndarray, radius: int, sigma: float, angle: float,
                out_shape: tuple[int, int] | None = None) -> np.ndarray:
    """imagecorruptions' ``_motion_blur``: a line blur at ``angle`` degrees, edges replicated.

    Parameters
    ----------
    x : np.ndarray
        HxW or HxWxC, any real dtype (uint8 images or float layers); values are not rescaled.
    radius, sigma, angle
        Line half-length (taps = 2 radius + 1), Gaussian fall-off along it, direction in
        degrees.
    out_shape : (rows, cols), optional
        Compute only this top-left window (snow blurs a zoomed layer a little larger than the
        image and keeps the image's size); the edges still clamp at ``x``'s border.

    Returns
    -------
    np.ndarray
        float64, ``x``'s shape (or ``out_shape`` plus ``x``'s channels), unclipped.
        Bit-identical to the reference's float64 sum.
    """
    weights, dys, dxs = motion_blur_kernel(radius, sigma, angle, x.shape[:2])
    rows, cols = out_shape if out_shape is not None else x.shape[:2]
    if rows > x.shape[0] or cols > x.shape[1]:
        raise ValueError(f"out_shape {out_shape} is larger than the layer {x.shape[:2]}")
    pad = int(max(np.abs(dys).max(initial=0), np.abs(dxs).max(initial=0)))
    src = np.asarray(x, dtype=np.float64)
    flat = src.ndim == 2
    if flat:
        src = src[:, :, None]
    channels = src.shape[2]
    padded = np.pad(src, ((pad, pad), (pad, pad), (0, 0)), mode="edge")
    out = _line_blur(padded.reshape(padded.shape[0], -1), pad, channels, weights, dys, dxs, rows, cols)
    return out.reshape(rows, cols) if flat else out.reshape(rows, cols, channels)


# --------------------------------------------------------------------------- clipped zoom

def zoom_output_size(n: int, factor: float) -> int:
    """Length scipy.ndimage.zoom gives an axis of length ``n`` zoomed by ``factor``."""
    return int(round(n * factor))


def _zoom_axis(n_in: int, n_out: int, start: int, count: int):
    """Source indices and weights of scipy's order-1 zoom for outputs start..start+count-1.

    scipy (no grid mode) maps output k to input coordinate k * ((n_in - 1) / (n_out - 1)),
    takes w0 = 1 - (c - floor(c)) and w1 = 1 - w0, and outputs the constant 0 for a coordinate
    outside [0, n_in - 1] (mode "constant"); we give such outputs zero weights.
    """
    ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 1.0
    coord = np.arange(start, start + count, dtype=np.float64) * np.float64(ratio)
    floor = np.floor(coord)
    w0 = 1.0 - (coord - floor)
    w1 = 1.0 - w0
    lo = floor.astype(np.int64)
    hi = np.minimum(lo + 1, n_in - 1)
    outside = (coord < 0) | (coord > n_in - 1)
    if outside.any():
        lo[outside] = 0
        hi[outside] = 0
        w0[outside] = 0.0
        w1[outside] = 0.0
    return lo, hi, w0, w1


@numba.njit(cache=True, nogil=True)
def _bilinear_add(src, out, ylo, yhi, wy0, wy1, xlo, xhi, wx0, wx1, narrow):  # pragma: no cover - compiled
    # out[y, x, c] += cast(sum of the four products), products and sum ordered as scipy's
    # NI_ZoomShift: value * weight_row * weight_col, rows outer, columns inner; the float64 sum
    # is cast to out's dtype first (scipy returns the zoom in its input's dtype), then added in
    # that dtype. The columns are gathered once per source row (left and right neighbours of
    # every output column, channels interleaved), so each output row is four contiguous rows
    # of products: the same operations in the same order, vectorised. ``narrow``: out is
    # float32.
    h, w, c = out.shape
    length = w * c
    left = np.empty((src.shape[0], length), src.dtype)
    right = np.empty((src.shape[0], length), src.dtype)
    for r in range(src.shape[0]):
        row = src[r]
        lr = left[r]
        rr = right[r]
        if c == 3:  # colour images: straight-line copies (twice as fast as the channel loop)
            for x in range(w):
                c0 = xlo[x]
                c1 = xhi[x]
                lr[3 * x] = row[c0, 0]
                lr[3 * x + 1] = row[c0, 1]
                lr[3 * x + 2] = row[c0, 2]
                rr[3 * x] = row[c1, 0]
                rr[3 * x + 1] = row[c1, 1]
                rr[3 * x + 2] = row[c1, 2]
        else:
            for x in range(w):
                c0 = xlo[x]
                c1 = xhi[x]
                for k in range(c):
                    lr[x * c + k] = row[c0, k]
                    rr[x * c + k] = row[c1, k]
    b0 = np.empty(length)
    b1 = np.empty(length)
    for x in range(w):
        for k in range(c):
            b0[x * c + k] = wx0[x]
            b1[x * c + k] = wx1[x]
    flat = out.reshape(h, length)
    for y in range(h):
        a0 = wy0[y]
        a1 = wy1[y]
        p = left[ylo[y]]
        q = right[ylo[y]]
        u = left[yhi[y]]
        v = right[yhi[y]]
        row = flat[y]
        if narrow:
            for t in range(length):
                s = 0.0
                s += p[t] * a0 * b0[t]
                s += q[t] * a0 * b1[t]
                s += u[t] * a1 * b0[t]
                s += v[t] * a1 * b1[t]
                row[t] += np.float32(s)
        else:
            for t in range(length):
                s = 0.0
                s += p[t] * a0 * b0[t]
                s += q[t] * a0 * b1[t]
                s += u[t] * a1 * b0[t]
                s += v[t] * a1 * b1[t]
                row[t] += s


def zoom_window(n: int, factor: float, centred: bool, full: bool) -> tuple[int, int, int, int, int]:
    """(crop top, crop length, zoomed length, kept start, kept count) of one axis of length ``n``
    of a clipped zoom by ``factor`` >= 1: the central ``ceil(n / factor)`` pixels are zoomed to
    :func:`zoom_output_size` pixels, of which the top-left (imagecorruptions) or the centred
    (hendrycks, ``centred``) ``n`` are kept (all of them with ``full``). The numpy and the torch
    backends both take their windows from here (one rounding).

    >>> zoom_window(224, 1.5, centred=True, full=False)
    (37, 150, 225, 0, 224)
    """
    crop = math.ceil(n / float(factor))
    top = (n - crop) // 2
    n_out = zoom_output_size(crop, factor)
    if full:
        start, count = 0, n_out
    elif centred:
        start, count = (n_out - n) // 2, n
    else:
        start, count = 0, n
    if start + count > n_out:
        raise ValueError(f"zoom factor {factor} gives {n_out} < {n} pixels; factors must be >= 1")
    return top, crop, n_out, start, count


def _zoom_plan(shape: tuple[int, int], factor: float, centred: bool, full: bool):
    """Crop box and output window of one clipped zoom (see :func:`clipped_zoom`)."""
    return [zoom_window(n, factor, centred, full) for n in shape]


def _whole_pixels(lo: np.ndarray, w0: np.ndarray, w1: np.ndarray):
    """A slice (or the indices) of the source pixels when every output takes one whole pixel
    (weights 1 and 0: a zoom by exactly 1), else None."""
    if not (np.all(w0 == 1.0) and np.all(w1 == 0.0)):
        return None
    if lo.shape[0] and np.array_equal(lo, np.arange(lo[0], lo[0] + lo.shape[0])):
        return slice(int(lo[0]), int(lo[0]) + lo.shape[0])
    return lo


def _zoom_into(src: np.ndarray, out: np.ndarray, factor: float, centred: bool, full: bool) -> None:
    (top0, ch0, no0, s0, c0), (top1, ch1, no1, s1, c1) = _zoom_plan(src.shape[:2], factor, centred, full)
    crop = src[top0:top0 + ch0, top1:top1 + ch1]
    ylo, yhi, wy0, wy1 = _zoom_axis(ch0, no0, s0, c0)
    xlo, xhi, wx0, wx1 = _zoom_axis(ch1, no1, s1, c1)
    rows, cols = _whole_pixels(ylo, wy0, wy1), _whole_pixels(xlo, wx0, wx1)
    if rows is not None and cols is not None and np.isfinite(crop).all():
        # value * 1 * 1 + (three products with a 0 weight) is the value itself (finite values):
        # add the pixels, skipping the products (zoom blur's first factor is exactly 1).
        out += crop[rows][:, cols]
        return
    _bilinear_add(crop, out, ylo, yhi, wy0, wy1, xlo, xhi, wx0, wx1, out.dtype == np.float32)


def clipped_zoom(x: np.ndarray, factor: float, *, centred: bool = False, full: bool = False) -> np.ndarray:
    """Zoom into the centre of ``x`` by ``factor`` >= 1 (bilinear), keeping its size.

    Crops the central ``ceil(n / factor)`` pixels of each spatial axis and zooms them with
    ``scipy.ndimage.zoom(order=1)`` arithmetic (the result is bit-identical). Then:

    - ``centred=False`` (imagecorruptions): keeps the top-left H x W of the zoomed crop;
    - ``centred=True`` (hendrycks): trims the zoomed crop symmetrically to H x W;
    - ``full=True``: returns the whole zoomed crop (imagecorruptions' ``clipped_zoom`` return
      value, which may be a pixel larger than ``x``; snow crops it later).

    Parameters
    ----------
    x : np.ndarray
        HxW or HxWxC, float32 or float64 (the result has the same dtype; scipy computes in
        float64 and casts).
    """
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"clipped_zoom needs a float32/float64 array; got {x.dtype}")
    flat = x.ndim == 2
    src = np.ascontiguousarray(x[:, :, None] if flat else x)
    plan = _zoom_plan(src.shape[:2], factor, centred, full)
    out = np.zeros((plan[0][4], plan[1][4], src.shape[2]), x.dtype)
    _zoom_into(src, out, factor, centred, full)
    return out[:, :, 0] if flat else out


def zoom_sum(x: np.ndarray, factors, *, centred: bool = False) -> np.ndarray:
    """``sum(clipped_zoom(x, f) for f in factors)`` accumulated in float32, as zoom blur does.

    ``x`` is float32 HxWxC; each zoomed layer is rounded to float32 before it is added (scipy
    returns float32 layers), so the sum is bit-identical to the reference loop.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    total = np.zeros_like(x)
    for factor in factors:
        _zoom_into(x, total, float(factor), centred, False)
    return total


# --------------------------------------------------------------------------- glass blur

@numba.njit(cache=True, nogil=True)
def _glass_rows(x, offsets, row_start, n_rows, max_delta):  # pragma: no cover - compiled
    # Rows h = (H - d) - row_start ... descending; columns w = W - d ... d + 1 descending.
    h_img, w_img, c = x.shape
    n_cols = w_img - 2 * max_delta
    for a in range(n_rows):
        h = h_img - max_delta - (row_start + a)
        for b in range(n_cols):
            w = w_img - max_delta - b
            dx = offsets[a, b, 0]
            dy = offsets[a, b, 1]
            for k in range(c):
                x[h, w, k] = x[h + dy, w + dx, k]


def glass_shuffle(x: np.ndarray, max_delta: int, iterations: int, rs: np.random.RandomState,
                  *, chunk_values: int = 1 << 20) -> np.ndarray:
    """Glass blur's local pixel shuffle, in place on a uint8 HxWxC array; returns ``x``.

    For each iteration, rows h = H-d .. d+1 and columns w = W-d .. d+1 (both descending), draw
    ``dx, dy = rs.randint(-d, d, size=2)`` (so offsets lie in [-d, d-1]) and copy pixel
    (h+dy, w+dx) onto (h, w). The reference writes this as a tuple "swap" of NumPy views, which
    is in fact this one-way copy; later pixels read already-copied ones, so the order matters.
    The draws are made in row blocks of about ``chunk_values`` integers: the same stream as the
    reference's per-pixel draws (legacy ``randint`` consumes 32 bits per value, no buffering),
    by the compiled copy of NumPy's sampler where it is the faster (:mod:`._legacy_random`).
    """
    d = int(max_delta)
    h, w = x.shape[:2]
    n_rows, n_cols = h - 2 * d, w - 2 * d
    if n_rows <= 0 or n_cols <= 0:
        return x
    rows_per_chunk = max(1, chunk_values // (2 * n_cols))
    for _ in range(int(iterations)):
        for row_start in range(0, n_rows, rows_per_chunk):
            count = min(rows_per_chunk, n_rows - row_start)
            offsets = draw_randint(rs, -d, d, (count, n_cols, 2))
            _glass_rows(x, offsets, row_start, count, d)
    return x
