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
- :func:`filter2d` - 2-D filters as a few separable terms (SVD), or one batched FFT product;
- :func:`fft_convolve`, :func:`fft_size` - circular convolution of a padded batch by FFT;
- :func:`gaussian_blur` - ``scipy.ndimage.gaussian_filter`` over the spatial axes;
- :func:`line_blur`, :func:`motion_taps` - imagecorruptions' motion blur (edge-replicated
  shifts), one angle per image, its taps computed on the device;
- :func:`clipped_zoom` - crop-and-zoom with ``scipy.ndimage.zoom(order=1)`` sampling positions;
- :func:`bilinear_sample` - sample at fractional positions with mirrored borders
  (``map_coordinates(order=1, mode='reflect')`` or OpenCV's ``BORDER_REFLECT_101``);
- :func:`rgb_to_grey` - OpenCV's ``COLOR_RGB2GRAY`` weights;
- :func:`per_image_loops`, :func:`batched_everywhere` - which formulation a device takes where
  a kernel has two (per-image loops on a CPU, batched on accelerators).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from .._gaussian import gaussian_weights
from ..ops import motion_blur_weights, zoom_window
from .draws import wide_float

__all__ = [
    "BORDER_MODES", "batched_everywhere", "bilinear_sample", "border_index", "clipped_zoom", "correlate_separable",
    "fft_convolve", "fft_size", "filter2d", "gaussian_blur", "line_blur", "motion_taps", "pad", "per_image_loops",
    "rgb_to_grey", "separable_terms", "to_levels", "zoom_outside",
]

#: Border rules: ``nearest`` (edge repeated: scipy ``nearest``, OpenCV ``REPLICATE``),
#: ``reflect`` (half-sample symmetric ``d c b a | a b c d``: scipy ``reflect``, OpenCV
#: ``REFLECT``), ``reflect101`` (``d c b | a b c d``: OpenCV's default ``REFLECT_101``).
BORDER_MODES = ("nearest", "reflect", "reflect101")

#: Singular values (relative to the largest) below which a 2-D kernel's separable terms are
#: dropped: the defocus disks have exact ranks 3-7, everything past them is float noise.
RANK_TOLERANCE = 1e-9
#: filter2d switches to an FFT product for kernels at least this wide on images of at least
#: this many pixels (measured on one CPU core: a 21x21 disk at 224 px is 5x faster by FFT; at
#: 64 px the separable terms are as fast or faster).
FFT_FROM_SIDE = 11
FFT_FROM_PIXELS = 128 * 128

#: Set by :func:`batched_everywhere`: the CPU takes the accelerators' batched formulations too.
_BATCHED = {"everywhere": False}

#: float32 products such as (k / 255) * 255 can land a hair below the integer k: values are
#: truncated to 256 levels after adding this many grey levels (far below any real difference).
LEVEL_TOLERANCE = 1e-3


def per_image_loops(device: torch.device) -> bool:
    """Whether the kernels with two formulations take their per-image one on ``device``: on a CPU
    (where an image's work stays in cache and a Python loop costs nothing next to it), unless
    :func:`batched_everywhere` is active. Accelerators always run the batched formulation: a
    fixed number of kernel launches whatever the batch size."""
    return torch.device(device).type == "cpu" and not _BATCHED["everywhere"]


@contextmanager
def batched_everywhere() -> Iterator[None]:
    """Within the block, CPU batches take the accelerators' batched formulations (to test and
    time them on a machine without an accelerator)."""
    previous = _BATCHED["everywhere"]
    _BATCHED["everywhere"] = True
    try:
        yield
    finally:
        _BATCHED["everywhere"] = previous


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


def fft_size(n: int) -> int:
    """The smallest even length >= ``n`` whose prime factors are 2, 3, 5 and 7 (fast FFT sizes:
    at 224 px a length of 244 = 4 x 61 takes 2.6x as long as 252 = 4 x 9 x 7 on a CPU)."""
    m = max(2, int(n) + (int(n) % 2))
    while True:
        k = m
        for f in (2, 3, 5, 7):
            while k % f == 0:
                k //= f
        if k == 1:
            return m
        m += 2


def fft_convolve(padded: torch.Tensor, kernels: torch.Tensor) -> torch.Tensor:
    """Circular convolution of every channel of (N, C, Hp, Wp) ``padded`` with (K, Hp, Wp)
    ``kernels`` (K = 1: one for all, K = N: one per image), as one batched FFT product:
    ``out[y, x] = sum_(dy, dx) kernels[dy, dx] * padded[(y - dy) mod Hp, (x - dx) mod Wp]``.

    The caller pads the images by at least the kernel's reach so that the part it keeps never
    wraps. On an accelerator: one batched transform each way. On a CPU: image by image (each
    image's buffers stay in cache: 1.2-1.6x faster than one batched call at 224 px; the same
    bits, as a batched call gives them too).
    """
    hp, wp = padded.shape[-2:]
    spectrum = torch.fft.rfft2(kernels.to(padded.dtype))[:, None]
    if not per_image_loops(padded.device):
        return torch.fft.irfft2(torch.fft.rfft2(padded) * spectrum, s=(hp, wp))
    out = torch.empty_like(padded)
    for i in range(padded.shape[0]):
        out[i] = torch.fft.irfft2(torch.fft.rfft2(padded[i]) * spectrum[i % spectrum.shape[0]], s=(hp, wp))
    return out


@lru_cache(maxsize=32)
def _filter_kernel(kernel_bytes: bytes, shape: tuple[int, int], hp: int, wp: int) -> np.ndarray:
    """A 2-D correlation kernel as the (hp, wp) convolution kernel of :func:`fft_convolve`: tap
    (a, b) of the correlation (offset (a - ry, b - rx)) at position (ry - a, rx - b) mod size."""
    kernel = np.frombuffer(kernel_bytes, np.float64).reshape(shape)
    placed = np.zeros((hp, wp))
    placed[:shape[0], :shape[1]] = kernel[::-1, ::-1]
    return np.roll(placed, (-(shape[0] // 2), -(shape[1] // 2)), axis=(0, 1))


def _fft_filter(x: torch.Tensor, kernel: np.ndarray, mode: str) -> torch.Tensor:
    """filter2d by FFT: the whole batch padded by ``mode`` to a fast size, one FFT product."""
    kh, kw = kernel.shape
    h, w = x.shape[-2:]
    ry, rx = kh // 2, kw // 2
    hp, wp = fft_size(h + 2 * ry), fft_size(w + 2 * rx)
    padded = pad(pad(x, 2, ry, hp - h - ry, mode), 3, rx, wp - w - rx, mode)
    placed = _filter_kernel(kernel.tobytes(), kernel.shape, hp, wp)
    spread = torch.as_tensor(placed, dtype=x.dtype, device=x.device)[None]
    return fft_convolve(padded, spread)[..., ry:ry + h, rx:rx + w]


def filter2d(x: torch.Tensor, kernel: np.ndarray, mode: str = "reflect101") -> torch.Tensor:
    """Correlate every channel of (N, C, H, W) ``x`` with an odd-sized 2-D ``kernel`` (anchor at
    its centre, borders by ``mode``), like ``cv2.filter2D``. Same shape and dtype.

    Small kernels or images: the kernel split into its few separable terms (SVD: the defocus
    disks have rank 3-7), each two banded matrix products (:func:`correlate_separable`).
    Kernels of :data:`FFT_FROM_SIDE` or more on images of :data:`FFT_FROM_PIXELS` or more: one
    FFT product for the whole batch, padded to a fast FFT size (2-5x faster there). Both agree
    with direct correlation to float rounding; on a CPU neither lets an image's result depend
    on the rest of the batch.
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


def rgb_to_grey(x: torch.Tensor) -> torch.Tensor:
    """(N, 3, H, W) RGB -> (N, 1, H, W) luma with OpenCV's ``COLOR_RGB2GRAY`` weights."""
    return 0.299 * x[:, 0:1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:3]


# --------------------------------------------------------------------------- motion blur

def motion_taps(radius: int, angles: torch.Tensor, shape: tuple[int, int]
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The taps of :func:`robustlab.corruptions.ops.motion_blur_kernel` for every image's angle,
    computed on ``angles``' device (no host round trip).

    Parameters
    ----------
    radius : int
        Line half-length: ``2 * radius + 1`` taps.
    angles : torch.Tensor
        (N,) degrees, float64 where the device has it (the numpy definition's precision).
    shape : (H, W)
        The image the line must stay inside.

    Returns
    -------
    (dy, dx, keep)
        int64 (N, T) offsets ``-ceil(i * (sin, cos) - 0.5)`` of tap i and bool (N, T): the taps
        before the first one that leaves the image (the numpy definition stops there).
    """
    width = 2 * int(radius) + 1
    taps = torch.arange(width, dtype=angles.dtype, device=angles.device)
    radians = angles * (math.pi / 180.0)                      # numpy.deg2rad's one multiplication
    py, px = width * torch.sin(radians), width * torch.cos(radians)
    hypot = torch.hypot(py, px)[:, None]
    dy = -torch.ceil(taps * py[:, None] / hypot - 0.5).long()
    dx = -torch.ceil(taps * px[:, None] / hypot - 0.5).long()
    inside = (dy.abs() < shape[0]) & (dx.abs() < shape[1])
    return dy, dx, torch.cumprod(inside.to(torch.uint8), dim=1).bool()


def line_blur(x: torch.Tensor, radius: int, sigma: float, angles: torch.Tensor | Sequence[float],
              out_hw: tuple[int, int] | None = None, *, method: str = "auto") -> torch.Tensor:
    """imagecorruptions' motion blur of each image along its own angle, edges replicated.

    Parameters
    ----------
    x : torch.Tensor
        float (N, C, H, W); values are not rescaled.
    radius, sigma : int, float
        Line half-length (2 radius + 1 taps) and Gaussian fall-off along it.
    angles : torch.Tensor or sequence of N floats
        Direction of each image's blur, in degrees (a tensor may stay on the device).
    out_hw : (rows, cols), optional
        Compute only this top-left window (snow); the edges still clamp at ``x``'s border.
    method : {"auto", "views", "fft"}
        ``views``: per image and tap, a shifted view added in place, in tap order (cheapest on
        a CPU: 1.4-2x faster than the FFT there); ``fft``: every image's line as a sparse
        kernel, one batched FFT product for the whole batch (a fixed number of kernel
        launches whatever the batch: for accelerators); ``auto`` picks by device.

    Returns
    -------
    torch.Tensor
        float (N, C, rows, cols), unclipped: the weighted sum of the taps of
        :func:`robustlab.corruptions.ops.motion_blur_kernel`. ``views`` adds them in tap order;
        ``fft`` agrees with it to float rounding (about 1e-7 of the value range in float32).
    """
    if method not in ("auto", "views", "fft"):
        raise ValueError(f"method must be auto, views or fft; got {method!r}")
    n, c, h, w = x.shape
    rows, cols = out_hw if out_hw is not None else (h, w)
    if not isinstance(angles, torch.Tensor):
        angles = torch.as_tensor(list(angles), dtype=torch.float64)
    angles = angles.to(device=x.device, dtype=wide_float(x.device))
    weights = motion_blur_weights(radius, sigma)
    dy, dx, keep = motion_taps(radius, angles, (h, w))
    if method == "views" or (method == "auto" and per_image_loops(x.device)):
        return _line_blur_views(x, weights, dy, dx, keep, rows, cols)
    reach_y, reach_x = min(2 * int(radius), h - 1), min(2 * int(radius), w - 1)   # largest |offset| kept
    hp, wp = fft_size(h + 2 * reach_y), fft_size(w + 2 * reach_x)
    padded = pad(pad(x, 2, reach_y, hp - h - reach_y, "nearest"), 3, reach_x, wp - w - reach_x, "nearest")
    tap_weights = torch.tensor(weights.tolist(), dtype=x.dtype, device=x.device)[None] * keep
    spots = torch.remainder(dy, hp) * wp + torch.remainder(dx, wp)
    # at most two taps share a pixel (the major axis advances >= 0.7 px a tap): adding is order-free
    kernels = torch.zeros((n, hp * wp), dtype=x.dtype, device=x.device).scatter_add_(1, spots, tap_weights)
    out = fft_convolve(padded, kernels.reshape(n, hp, wp))
    return out[..., reach_y:reach_y + rows, reach_x:reach_x + cols]


def _line_blur_views(x: torch.Tensor, weights: np.ndarray, dy: torch.Tensor, dx: torch.Tensor,
                     keep: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """line_blur's ``views`` method: shifted views of the edge-padded image added in tap order."""
    n, c = x.shape[:2]
    counts = keep.sum(dim=1).tolist()
    dys, dxs = dy.tolist(), dx.tolist()
    pad_px = max((max(abs(v) for v in dys[i][:k] + dxs[i][:k]) for i, k in enumerate(counts) if k), default=0)
    padded = pad(pad(x, 2, pad_px, pad_px, "nearest"), 3, pad_px, pad_px, "nearest")
    out = torch.zeros((n, c, rows, cols), dtype=x.dtype, device=x.device)
    for i, count in enumerate(counts):
        for weight, oy, ox in zip(weights[:count].tolist(), dys[i][:count], dxs[i][:count]):
            top, left = pad_px - oy, pad_px - ox
            out[i].add_(padded[i, :, top:top + rows, left:left + cols], alpha=weight)
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
        position first.

    Returns
    -------
    torch.Tensor
        (N, C, H', W'), ``x``'s dtype.

    Notes
    -----
    One ``grid_sample`` call (it reads the four neighbours and weighs them in one kernel):
    ``reflect`` is its ``reflection`` padding with ``align_corners=False`` (mirrors at the
    pixel edges -0.5 and n - 0.5), ``reflect101`` the same with ``align_corners=True`` (mirrors
    at the first and last pixel centres), ``nearest`` its ``border`` padding. The positions
    pass through grid_sample's [-1, 1] normalisation, which moves them by float rounding
    (about 1e-6 px in float32 at 224 px, more far outside the image).
    """
    if mode not in BORDER_MODES:
        raise ValueError(f"border mode must be one of {BORDER_MODES}; got {mode!r}")
    h, w = x.shape[-2:]
    corners = mode != "reflect"
    if corners:
        gx = cols * (2.0 / max(w - 1, 1)) - 1
        gy = rows * (2.0 / max(h - 1, 1)) - 1
    else:
        gx = (2 * cols + 1) / w - 1
        gy = (2 * rows + 1) / h - 1
    grid = torch.stack([gx, gy], dim=-1).to(x.dtype)
    padding = "border" if mode == "nearest" else "reflection"
    return F.grid_sample(x, grid, mode="bilinear", padding_mode=padding, align_corners=corners)
