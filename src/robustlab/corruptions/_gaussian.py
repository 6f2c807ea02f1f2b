"""scipy.ndimage's Gaussian filter, compiled: the same floating-point operations, faster.

The references smooth with ``scipy.ndimage.gaussian_filter`` (directly or through
``skimage.filters.gaussian``): one 1-D correlation per axis, axis 0 first, each pass written
to the output dtype before the next reads it. scipy's symmetric-kernel loop computes every
value as ``x[i] * w[0]``, then adds ``(x[i - k] + x[i + k]) * w[k]`` for k = r, r-1, ..., 1
(outermost pair first), in float64, and casts the sum to the output dtype. The loops here do
exactly that per value, so results are bit-identical, but they run along contiguous rows
(vectorised) instead of copying every strided line into a buffer, and both passes run row by
row while the data is in cache: 2-3x faster than scipy on 640x427 images, one thread.

Supported: 2-D (HxW) and channel-last 3-D (HxWxC, channels never mixed: sigma 0 on the
channel axis) arrays of float32/float64, modes ``nearest`` (edge repeated) and ``reflect``
(half-sample symmetric, repeated as often as the radius needs), any truncate.
"""

from __future__ import annotations

import numba
import numpy as np

from .exactmath import exp as exact_exp
from .exactmath import pairwise_sum

__all__ = ["gaussian_filter", "gaussian_weights"]

#: scipy skips an axis whose sigma is at most this.
_SKIP_SIGMA = 1e-15
MODES = ("nearest", "reflect")


def gaussian_weights(sigma: float, truncate: float) -> np.ndarray:
    """scipy's 1-D Gaussian kernel: radius ``int(truncate * sigma + 0.5)``, exp, normalised.

    The same operations as ``scipy.ndimage._filters._gaussian_kernel1d`` (order 0), with the
    exponential correctly rounded and the sum in NumPy's pairwise order
    (:mod:`~robustlab.corruptions.exactmath`), so the weights are the same float64 values on
    every machine (NumPy's own exp differs by one unit in the last place on CPUs with AVX-512).
    """
    sd = float(sigma)
    radius = int(float(truncate) * sd + 0.5)
    x = np.arange(-radius, radius + 1)
    phi = exact_exp(-0.5 / (sd * sd) * x ** 2)
    return phi / pairwise_sum(phi)


def _boundary_index(n: int, radius: int, mode: str) -> np.ndarray:
    """Source index of every position -radius .. n - 1 + radius of a line of length ``n``."""
    pos = np.arange(-radius, n + radius)
    if mode == "nearest":
        return np.clip(pos, 0, n - 1)
    period = 2 * n  # reflect: d c b a | a b c d | d c b a, repeated
    pos = np.mod(pos, period)
    return np.where(pos >= n, period - 1 - pos, pos)


@numba.njit(cache=True, nogil=True)
def _column_sums(src, y, weights, index, acc):  # pragma: no cover - compiled
    # acc[i] = the axis-0 correlation at row y of src (H, L), in scipy's order.
    r = (weights.shape[0] - 1) // 2
    row = src[y]
    w0 = weights[r]
    for i in range(acc.shape[0]):
        acc[i] = np.float64(row[i]) * w0
    for j in range(r, 0, -1):
        a = src[index[y + r - j]]
        b = src[index[y + r + j]]
        wj = weights[r - j]
        for i in range(acc.shape[0]):
            acc[i] += (np.float64(a[i]) + np.float64(b[i])) * wj


@numba.njit(cache=True, nogil=True)
def _row_sums(row, weights, index, channels, padded, acc):  # pragma: no cover - compiled
    # acc[i] = the axis-1 correlation of one row of W*C interleaved values, in scipy's order.
    length = acc.shape[0]
    r = (weights.shape[0] - 1) // 2
    for q in range(index.shape[0]):
        s = index[q] * channels
        for k in range(channels):
            padded[q * channels + k] = row[s + k]
    mid = padded[r * channels:r * channels + length]
    w0 = weights[r]
    for i in range(length):
        acc[i] = mid[i] * w0
    for j in range(r, 0, -1):
        # Views, so the index is a plain loop counter (no negative-index check) and the loop
        # vectorises.
        a = padded[(r - j) * channels:(r - j) * channels + length]
        b = padded[(r + j) * channels:(r + j) * channels + length]
        wj = weights[r - j]
        for i in range(length):
            acc[i] += (a[i] + b[i]) * wj


@numba.njit(cache=True, nogil=True)
def _filter(src, out, w_rows, i_rows, w_cols, i_cols, channels):  # pragma: no cover - compiled
    # src, out: (H, W*C). Axis 0, then axis 1 unless w_cols is empty, row by row: the axis-0
    # result of row y is stored in out[y] (cast to the output dtype, as scipy stores its first
    # pass) and filtered along axis 1 from there.
    h, length = src.shape
    acc = np.empty(length, np.float64)
    r = (w_cols.shape[0] - 1) // 2 if w_cols.shape[0] else 0
    padded = np.empty(length + 2 * r * channels, np.float64)
    for y in range(h):
        dst = out[y]
        _column_sums(src, y, w_rows, i_rows, acc)
        for i in range(length):
            dst[i] = acc[i]
        if w_cols.shape[0]:
            _row_sums(dst, w_cols, i_cols, channels, padded, acc)
            for i in range(length):
                dst[i] = acc[i]


@numba.njit(cache=True, nogil=True)
def _filter_rows(src, out, w_cols, i_cols, channels):  # pragma: no cover - compiled
    # Axis 1 only (axis 0's sigma is 0): each row of src filtered into out.
    h, length = src.shape
    acc = np.empty(length, np.float64)
    r = (w_cols.shape[0] - 1) // 2
    padded = np.empty(length + 2 * r * channels, np.float64)
    for y in range(h):
        _row_sums(src[y], w_cols, i_cols, channels, padded, acc)
        dst = out[y]
        for i in range(length):
            dst[i] = acc[i]


def gaussian_filter(x: np.ndarray, sigma, *, mode: str = "reflect", truncate: float = 4.0,
                    output=None) -> np.ndarray:
    """``scipy.ndimage.gaussian_filter(x, sigma, mode=mode, truncate=truncate, output=output)``.

    Parameters
    ----------
    x : np.ndarray
        HxW or HxWxC, float32 or float64.
    sigma : float or sequence
        One value for both spatial axes, or one per axis (``(sy, sx)`` or ``(sy, sx, 0)``; the
        channel axis must have sigma 0).
    mode : {"nearest", "reflect"}
    truncate : float
    output : dtype, optional
        float32 or float64; by default the input's dtype (as scipy). Each pass is stored in it.

    Returns
    -------
    np.ndarray
        A new array of ``x``'s shape, bit-identical to scipy's.
    """
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64) or x.ndim not in (2, 3):
        raise TypeError(f"gaussian_filter needs a 2-D or 3-D float32/float64 array; got {x.ndim}-D {x.dtype}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}")
    sigmas = [float(sigma)] * x.ndim if np.ndim(sigma) == 0 else [float(s) for s in sigma]
    if len(sigmas) != x.ndim:
        raise ValueError(f"{len(sigmas)} sigmas for a {x.ndim}-D array")
    if x.ndim == 3 and sigmas[2] > _SKIP_SIGMA:
        raise ValueError("the channel axis cannot be smoothed; give it sigma 0")
    dtype = np.dtype(output if output is not None else x.dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"output must be float32 or float64; got {dtype}")
    h, w = x.shape[:2]
    channels = x.shape[2] if x.ndim == 3 else 1
    current = np.ascontiguousarray(x).reshape(h, w * channels)
    plans = []
    for axis, n in ((0, h), (1, w)):
        if sigmas[axis] > _SKIP_SIGMA:
            weights = gaussian_weights(sigmas[axis], truncate)
            plans.append((weights, _boundary_index(n, (len(weights) - 1) // 2, mode)))
        else:
            plans.append((np.empty(0), np.empty(0, np.int64)))
    out = np.empty((h, w * channels), dtype)
    (w_rows, i_rows), (w_cols, i_cols) = plans
    if len(w_rows):
        _filter(current, out, w_rows, i_rows, w_cols, i_cols, channels)
    elif len(w_cols):
        _filter_rows(current, out, w_cols, i_cols, channels)
    else:
        out[...] = current
    return out.reshape(x.shape)
