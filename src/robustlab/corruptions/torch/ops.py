"""Batched building blocks of the torch corruption kernels.

Every function works on float tensors ``(N, C, H, W)`` on any device and treats each image
independently (no statistic is shared across the batch), so an image's result does not depend
on the batch it is in. They re-express the numpy path's routines (:mod:`...ops`,
:mod:`..._gaussian`) with torch operations: same definitions (weights, border rules,
sampling positions), float32 arithmetic instead of float64, and a different summation order
(matrix products or FFTs instead of scipy's and OpenCV's tap loops), so values agree to about
1e-6, not bit for bit.

- :func:`border_index`, :func:`pad` - extend an axis by a border rule (scipy's ``nearest`` and
  ``reflect``, OpenCV's ``reflect101``), any amount, by indexing;
- :func:`correlate_separable` - separable filters as two banded matrix products;
- :func:`filter2d` - 2-D filters as a few separable terms (SVD), or per-image FFTs;
- :func:`gaussian_blur` - ``scipy.ndimage.gaussian_filter`` over the spatial axes;
- :func:`box_blur3` - OpenCV's ``blur(x, (3, 3))``;
- :func:`line_blur` - imagecorruptions' motion blur (edge-replicated shifts), one angle per image;
- :func:`clipped_zoom` - crop-and-zoom with ``scipy.ndimage.zoom(order=1)`` sampling positions;
- :func:`bilinear_sample` - sample at fractional positions with mirrored borders
  (``map_coordinates(order=1, mode='reflect')`` or OpenCV's ``BORDER_REFLECT_101``);
- :func:`rgb_to_grey` - OpenCV's ``COLOR_RGB2GRAY`` weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from .._gaussian import gaussian_weights
from ..ops import motion_blur_kernel, zoom_window

__all__ = [
    "BORDER_MODES", "bilinear_sample", "border_index", "box_blur3", "clipped_zoom", "correlate_separable",
    "filter2d", "gaussian_blur", "line_blur", "pad", "rgb_to_grey", "separable_terms", "to_levels", "zoom_outside",
]

#: Border rules: ``nearest`` (edge repeated: scipy ``nearest``, OpenCV ``REPLICATE``),
#: ``reflect`` (half-sample symmetric ``d c b a | a b c d``: scipy ``reflect``, OpenCV
#: ``REFLECT``), ``reflect101`` (``d c b | a b c d``: OpenCV's default ``REFLECT_101``).
BORDER_MODES = ("nearest", "reflect", "reflect101")

#: Singular values (relative to the largest) below which a 2-D kernel's separable terms are
#: dropped: the defocus disks have exact ranks 3-7, everything past them is float noise.
RANK_TOLERANCE = 1e-9
#: filter2d switches to per-image FFTs for kernels at least this wide on images of at least
#: this many pixels (measured on one CPU core: a 21x21 disk at 224 px is 5x faster by FFT; at
#: 64 px the separable terms are as fast or faster).
FFT_FROM_SIDE = 11
FFT_FROM_PIXELS = 128 * 128

#: float32 products such as (k / 255) * 255 can land a hair below the integer k: values are
#: truncated to 256 levels after adding this many grey levels (far below any real difference).
LEVEL_TOLERANCE = 1e-3


def to_levels(x: torch.Tensor) -> torch.Tensor:
    """The references' ``np.uint8(np.clip(x, 0, 1) * 255)``, kept as float grey levels 0..255."""
    return torch.floor(x.clamp(0, 1) * 255 + LEVEL_TOLERANCE)


def border_index(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """Source index of every position ``-before .. n - 1 + after`` of an axis of length ``n``.

    Any amount of padding is allowed (the pattern repeats as often as needed).
    """
    if mode not in BORDER_MODES:
        raise ValueError(f"border mode must be one of {BORDER_MODES}; got {mode!r}")
    pos = np.arange(-before, n + after)
    if mode == "nearest" or n == 1:
        return np.clip(pos, 0, n - 1)
    if mode == "reflect":
        period = 2 * n
        pos = np.mod(pos, period)
        return np.where(pos >= n, period - 1 - pos, pos)
    period = 2 * (n - 1)
    pos = np.mod(pos, period)
    return np.where(pos >= n, period - pos, pos)


def pad(x: torch.Tensor, dim: int, before: int, after: int, mode: str) -> torch.Tensor:
    """``x`` extended along ``dim`` by ``before``/``after`` positions following ``mode``."""
    if before == 0 and after == 0:
        return x
    index = border_index(x.shape[dim], before, after, mode)
    return x.index_select(dim, torch.as_tensor(index, device=x.device))


@lru_cache(maxsize=32)
def separable_terms(kernel_bytes: bytes, shape: tuple[int, int]) -> tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]:
    """A 2-D kernel as a sum of outer products ``column x row`` (its SVD, negligible terms dropped)."""
    kernel = np.frombuffer(kernel_bytes, np.float64).reshape(shape)
    u, sv, vt = np.linalg.svd(kernel)
    keep = sv > RANK_TOLERANCE * max(sv[0], 1e-300)
    return tuple((tuple(u[:, i] * sv[i]), tuple(vt[i])) for i in np.flatnonzero(keep))


def _fft_filter(x: torch.Tensor, kernel: np.ndarray, mode: str) -> torch.Tensor:
    """filter2d by FFT, one image at a time (a batched FFT's rounding can depend on the batch)."""
    kh, kw = kernel.shape
    h, w = x.shape[-2:]
    padded = pad(pad(x, 2, kh // 2, kh // 2, mode), 3, kw // 2, kw // 2, mode)
    hp, wp = padded.shape[-2:]
    flipped = torch.as_tensor(np.ascontiguousarray(kernel[::-1, ::-1]), dtype=x.dtype, device=x.device)
    spectrum = torch.fft.rfft2(flipped, s=(hp, wp))          # correlation = convolution with the flip
    images = [torch.fft.irfft2(torch.fft.rfft2(img) * spectrum, s=(hp, wp))[..., kh - 1:kh - 1 + h, kw - 1:kw - 1 + w]
              for img in padded]
    return torch.stack(images).to(x.dtype)


def filter2d(x: torch.Tensor, kernel: np.ndarray, mode: str = "reflect101") -> torch.Tensor:
    """Correlate every channel of (N, C, H, W) ``x`` with an odd-sized 2-D ``kernel`` (anchor at
    its centre, borders by ``mode``), like ``cv2.filter2D``. Same shape and dtype.

    Small kernels or images: the kernel split into its few separable terms (SVD: the defocus
    disks have rank 3-7), each two banded matrix products (:func:`correlate_separable`).
    Kernels of :data:`FFT_FROM_SIDE` or more on images of :data:`FFT_FROM_PIXELS` or more: an
    FFT product per image (2-5x faster there). Both agree with direct correlation to float
    rounding, and neither lets an image's result depend on the rest of the batch.
    """
    k = np.ascontiguousarray(kernel, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] % 2 == 0 or k.shape[1] % 2 == 0:
        raise ValueError(f"filter2d needs an odd-sized 2-D kernel; got shape {k.shape}")
    if max(k.shape) >= FFT_FROM_SIDE and x.shape[-2] * x.shape[-1] >= FFT_FROM_PIXELS:
        return _fft_filter(x, k, mode)
    out = None
    for column, row in separable_terms(k.tobytes(), k.shape):
        term = correlate_separable(x, column, row, mode)
        out = term if out is None else out + term
    return torch.zeros_like(x) if out is None else out


@lru_cache(maxsize=128)
def _axis_matrix(n: int, weights: tuple[float, ...], mode: str, dtype: torch.dtype, device: str) -> torch.Tensor:
    """(n, n) matrix M with (M @ line) = the correlation of a line of length n with ``weights``,
    its border rule folded in (a tap that falls outside adds to the pixel it mirrors)."""
    r = len(weights) // 2
    index = border_index(n, r, r, mode)
    rows = np.repeat(np.arange(n), len(weights))
    cols = index[np.arange(n)[:, None] + np.arange(len(weights))[None, :]].ravel()
    matrix = np.zeros((n, n))
    np.add.at(matrix, (rows, cols), np.tile(np.asarray(weights, np.float64), n))
    return torch.as_tensor(matrix, dtype=dtype, device=device)


def correlate_separable(x: torch.Tensor, rows: Sequence[float] | np.ndarray | None,
                        cols: Sequence[float] | np.ndarray | None, mode: str) -> torch.Tensor:
    """Correlate (N, C, H, W) with 1-D odd-length ``rows`` along H and ``cols`` along W.

    ``None`` skips an axis. Each axis is one matrix product with a banded (H, H) or (W, W)
    matrix that holds the taps and the border rule (any radius): on a CPU 3-20x faster than a
    single-channel convolution or an FFT at 64-224 px, and a plain GEMM on accelerators.
    """
    device = str(x.device)
    out = x
    if cols is not None:
        mw = _axis_matrix(x.shape[-1], tuple(float(v) for v in cols), mode, x.dtype, device)
        out = torch.matmul(out, mw.T)
    if rows is not None:
        mh = _axis_matrix(x.shape[-2], tuple(float(v) for v in rows), mode, x.dtype, device)
        out = torch.matmul(mh, out)
    return out


def gaussian_blur(x: torch.Tensor, sigma: float | Sequence[float], *, mode: str = "nearest",
                  truncate: float = 4.0) -> torch.Tensor:
    """``scipy.ndimage.gaussian_filter`` of the spatial axes of (N, C, H, W) ``x``.

    Parameters
    ----------
    x : torch.Tensor
        float (N, C, H, W); channels are not mixed.
    sigma : float or (sigma_rows, sigma_cols)
        Standard deviation in pixels; an axis with sigma <= 1e-15 is left alone (as scipy).
    mode : str
        Border rule (:data:`BORDER_MODES`); ``nearest`` as scikit-image's ``gaussian``.
    truncate : float
        Radius ``int(truncate * sigma + 0.5)`` taps, as scipy.

    Returns
    -------
    torch.Tensor
        Same shape, dtype and device.
    """
    sy, sx = (float(sigma), float(sigma)) if np.ndim(sigma) == 0 else (float(sigma[0]), float(sigma[1]))
    rows = gaussian_weights(sy, truncate) if sy > 1e-15 else None
    cols = gaussian_weights(sx, truncate) if sx > 1e-15 else None
    return correlate_separable(x, rows, cols, mode)


def box_blur3(x: torch.Tensor) -> torch.Tensor:
    """``cv2.blur(x, (3, 3))``: the 3x3 mean, ``BORDER_REFLECT_101``."""
    third = (1 / 3, 1 / 3, 1 / 3)
    return correlate_separable(x, third, third, "reflect101")


def rgb_to_grey(x: torch.Tensor) -> torch.Tensor:
    """(N, 3, H, W) RGB -> (N, 1, H, W) luma with OpenCV's ``COLOR_RGB2GRAY`` weights."""
    return 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]


# --------------------------------------------------------------------------- motion blur

def line_blur(x: torch.Tensor, radius: int, sigma: float, angles: Sequence[float],
              out_hw: tuple[int, int] | None = None, *, method: str = "auto") -> torch.Tensor:
    """imagecorruptions' motion blur of each image along its own angle, edges replicated.

    Parameters
    ----------
    x : torch.Tensor
        float (N, C, H, W); values are not rescaled.
    radius, sigma : int, float
        Line half-length (2 radius + 1 taps) and Gaussian fall-off along it.
    angles : sequence of N floats
        Direction of each image's blur, in degrees.
    out_hw : (rows, cols), optional
        Compute only this top-left window (snow); the edges still clamp at ``x``'s border.
    method : {"auto", "views", "gather"}
        ``views``: per image and tap, a shifted view added in place (cheapest on a CPU);
        ``gather``: one gather per tap for the whole batch (fewest kernel launches, for
        accelerators); ``auto`` picks by device. Both add the same taps in the same order.

    Returns
    -------
    torch.Tensor
        float (N, C, rows, cols), unclipped: the weighted sum of the taps of
        :func:`robustlab.corruptions.ops.motion_blur_kernel`, added in tap order.
    """
    n, c, h, w = x.shape
    rows, cols = out_hw if out_hw is not None else (h, w)
    taps = [motion_blur_kernel(radius, sigma, float(a), (h, w)) for a in angles]
    pad_px = max((int(max(np.abs(dy).max(initial=0), np.abs(dx).max(initial=0))) for _, dy, dx in taps), default=0)
    padded = pad(pad(x, 2, pad_px, pad_px, "nearest"), 3, pad_px, pad_px, "nearest")
    out = torch.zeros((n, c, rows, cols), dtype=x.dtype, device=x.device)
    if method not in ("auto", "views", "gather"):
        raise ValueError(f"method must be auto, views or gather; got {method!r}")
    if method == "views" or (method == "auto" and x.device.type == "cpu"):
        for i, (weights, dys, dxs) in enumerate(taps):
            for weight, dy, dx in zip(weights.tolist(), dys.tolist(), dxs.tolist()):
                top, left = pad_px - dy, pad_px - dx
                out[i].add_(padded[i, :, top:top + rows, left:left + cols], alpha=weight)
        return out
    # images padded to the longest line with zero-weight taps
    count = max(len(t[0]) for t in taps)
    weights = np.zeros((n, count))
    dys = np.zeros((n, count), np.int64)
    dxs = np.zeros((n, count), np.int64)
    for i, (wt, dy, dx) in enumerate(taps):
        weights[i, :len(wt)], dys[i, :len(dy)], dxs[i, :len(dx)] = wt, dy, dx
    hp, wp = padded.shape[-2:]
    flat = padded.reshape(n, c, hp * wp)
    ys = torch.arange(rows, device=x.device)
    xs = torch.arange(cols, device=x.device)
    wts = torch.as_tensor(weights, dtype=x.dtype, device=x.device)
    dyt = torch.as_tensor(dys, device=x.device)
    dxt = torch.as_tensor(dxs, device=x.device)
    for t in range(count):
        r = ys[None, :] + (pad_px - dyt[:, t:t + 1])           # (N, rows)
        q = xs[None, :] + (pad_px - dxt[:, t:t + 1])           # (N, cols)
        index = (r[:, :, None] * wp + q[:, None, :]).reshape(n, 1, rows * cols).expand(n, c, rows * cols)
        out += wts[:, t, None, None, None] * flat.gather(2, index).reshape(n, c, rows, cols)
    return out


# --------------------------------------------------------------------------- zoom

def zoom_outside(n_in: int, n_out: int, start: int, count: int) -> np.ndarray:
    """Outputs start..start+count-1 of scipy's order-1 zoom whose float64 sampling position
    ``k * ((n_in - 1) / (n_out - 1))`` falls outside [0, n_in - 1]: scipy gives them the constant
    0 (the last one does, for some sizes, by one rounding step)."""
    ratio = np.float64((n_in - 1) / (n_out - 1)) if n_out > 1 else np.float64(1.0)
    coord = np.arange(start, start + count, dtype=np.float64) * ratio
    return (coord < 0) | (coord > n_in - 1)


def clipped_zoom(x: torch.Tensor, factor: float, *, centred: bool = False, full: bool = False) -> torch.Tensor:
    """Zoom into the centre of every image of (N, C, H, W) ``x`` by ``factor`` >= 1, bilinear.

    Crops the central ``ceil(n / factor)`` pixels of each axis and resizes them to
    ``round(crop * factor)`` with scipy's order-1 zoom positions (output k samples input
    ``k (n_in - 1) / (n_out - 1)``, i.e. ``align_corners=True``; where scipy's float64 position
    lands past the last pixel, the output is 0 as in scipy). Then keeps the top-left
    H x W (imagecorruptions), the centred H x W (``centred``: hendrycks) or everything
    (``full``: imagecorruptions' snow, a pixel or two larger than the image).
    """
    h, w = x.shape[-2:]
    top0, crop0, out0, start0, count0 = zoom_window(h, factor, centred, full)
    top1, crop1, out1, start1, count1 = zoom_window(w, factor, centred, full)
    crop = x[..., top0:top0 + crop0, top1:top1 + crop1]
    if (out0, out1) == (crop0, crop1):
        zoomed = crop
    else:
        zoomed = F.interpolate(crop, size=(out0, out1), mode="bilinear", align_corners=True)
    kept = zoomed[..., start0:start0 + count0, start1:start1 + count1]
    rows_out = zoom_outside(crop0, out0, start0, count0)
    cols_out = zoom_outside(crop1, out1, start1, count1)
    if rows_out.any() or cols_out.any():  # scipy's zeros, reproduced
        keep_rows = torch.as_tensor(~rows_out, dtype=x.dtype, device=x.device)[:, None]
        keep_cols = torch.as_tensor(~cols_out, dtype=x.dtype, device=x.device)[None, :]
        kept = kept * (keep_rows * keep_cols)
    return kept


# --------------------------------------------------------------------------- sampling

def _border_positions(i: torch.Tensor, n: int, mode: str) -> torch.Tensor:
    """Integer positions mapped into [0, n) by a mirrored border rule (any distance)."""
    if n == 1:
        return torch.zeros_like(i)
    if mode == "reflect":
        period = 2 * n
        i = torch.remainder(i, period)
        return torch.where(i >= n, period - 1 - i, i)
    if mode == "reflect101":
        period = 2 * (n - 1)
        i = torch.remainder(i, period)
        return torch.where(i >= n, period - i, i)
    return i.clamp(0, n - 1)


def bilinear_sample(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, mode: str) -> torch.Tensor:
    """Sample every image of (N, C, H, W) ``x`` at fractional (row, col) positions, bilinear.

    Parameters
    ----------
    x : torch.Tensor
        float (N, C, H, W).
    rows, cols : torch.Tensor
        float (N, H', W') positions in pixels (0 = the first pixel's centre).
    mode : str
        How positions outside the image read: ``reflect`` (half-sample mirror, as
        ``scipy.ndimage.map_coordinates(order=1, mode='reflect')``), ``reflect101`` (OpenCV's
        default border) or ``nearest``. Interpolating the mirrored signal equals mirroring the
        position first, so the neighbours are mirrored instead.

    Returns
    -------
    torch.Tensor
        (N, C, H', W'), ``x``'s dtype.
    """
    n, c, h, w = x.shape
    out_shape = rows.shape[1:]
    fy, fx = torch.floor(rows), torch.floor(cols)
    wy1, wx1 = (rows - fy).to(x.dtype), (cols - fx).to(x.dtype)
    wy0, wx0 = 1 - wy1, 1 - wx1
    y0 = fy.long()
    x0 = fx.long()
    y1 = _border_positions(y0 + 1, h, mode)
    x1 = _border_positions(x0 + 1, w, mode)
    y0 = _border_positions(y0, h, mode)
    x0 = _border_positions(x0, w, mode)
    flat = x.reshape(n, c, h * w)
    size = int(np.prod(out_shape))

    def tap(yy: torch.Tensor, xx: torch.Tensor) -> torch.Tensor:
        index = (yy * w + xx).reshape(n, 1, size).expand(n, c, size)
        return flat.gather(2, index).reshape(n, c, *out_shape)

    return ((tap(y0, x0) * (wy0 * wx0)[:, None] + tap(y0, x1) * (wy0 * wx1)[:, None])
            + (tap(y1, x0) * (wy1 * wx0)[:, None] + tap(y1, x1) * (wy1 * wx1)[:, None]))
