"""Blur corruptions on a torch device: defocus, glass, motion, zoom (benchmark) and gaussian blur.

Same definitions and tables as :mod:`robustlab.corruptions.blur`. gaussian, defocus and zoom
blur draw nothing and match the numpy path to float rounding. Motion blur draws one angle per
image; glass blur one offset pair per pixel and iteration, and performs the reference's
sequential pixel "swaps" (in fact copies, each reading pixels the earlier ones may already
have overwritten) as a parallel pointer-jumping pass that gives exactly the sequential result
for the same offsets (:func:`glass_shuffle`).
"""

from __future__ import annotations

import torch

from .. import blur as numpy_blur
from ..ops import disk_kernel, severity_param
from .draws import integers, uniform, wide_float
from .ops import clipped_zoom, filter2d, line_blur, to_levels
from .ops import gaussian_blur as smooth

__all__ = ["JUMP_ROUNDS", "glass_blur_offsets", "glass_shuffle", "glass_sources"]

#: Pointer-jumping rounds between two checks that every chain is resolved. Each round doubles
#: the links followed: four follow 16, and four were enough for every severity at 224 px.
JUMP_ROUNDS = 4

def gaussian_blur(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Gaussian blur, edges replicated, radius 4 sigma (scikit-image's ``gaussian``). Draws nothing."""
    sigma = severity_param(numpy_blur.GAUSSIAN_SIGMA, profile, severity)
    return smooth(x, sigma, mode="nearest")


def defocus_blur(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Correlation with the numpy path's anti-aliased disk, ``BORDER_REFLECT_101``. Draws nothing."""
    radius, alias_blur = severity_param(numpy_blur.DEFOCUS, profile, severity)
    return filter2d(x, disk_kernel(radius, alias_blur), "reflect101")


def motion_blur(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Line blur at an angle U(-45, 45) degrees per image (one uniform draw), edges replicated."""
    radius, sigma = severity_param(numpy_blur.MOTION, profile, severity)
    angles = uniform(generators, -45.0, 45.0, device=x.device, dtype=wide_float(x.device))
    return line_blur(x, radius, sigma, angles)


def zoom_blur(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Mean of the image and its zooms into the centre (bilinear). Draws nothing.

    imagecorruptions keeps the top-left of each zoomed crop, the hendrycks profiles its centre.
    """
    factors = numpy_blur.zoom_factors(profile, severity)
    centred = profile != "imagecorruptions"
    total = torch.zeros_like(x)
    for factor in factors:
        total += clipped_zoom(x, float(factor), centred=centred)
    return (x + total) / (len(factors) + 1)


# --------------------------------------------------------------------------- glass blur

def glass_sources(offsets: torch.Tensor, height: int, width: int, max_delta: int) -> torch.Tensor:
    """Where each pixel's value comes from after one glass-blur shuffle iteration.

    The reference visits rows h = H-d .. d+1 and, in each, columns w = W-d .. d+1 (both
    descending) and copies pixel (h + dy, w + dx) onto (h, w). A pixel therefore ends with the
    *original* value of the first pixel along its chain of copies that had not been overwritten
    yet when it was read. The chain links point to strictly earlier visits, so pointer jumping
    (each round doubles how far every pointer has followed its chain, a few rounds in all)
    finds every chain's end in parallel: the result equals the sequential loop's exactly. The
    rounds run in blocks of :data:`JUMP_ROUNDS` with one check after each block.

    Parameters
    ----------
    offsets : torch.Tensor
        int64 (N, H - 2d, W - 2d, 2): (dx, dy) per visited pixel, in [-d, d-1], ordered as the
        reference visits them (row a is h = H-d-a, column b is w = W-d-b).
    height, width, max_delta : int
        Image size and d.

    Returns
    -------
    torch.Tensor
        int64 (N, H * W): the flat index of the original pixel each pixel's value is copied from.
    """
    n = offsets.shape[0]
    d = int(max_delta)
    device = offsets.device
    hs = (height - d - torch.arange(height - 2 * d, device=device))[:, None]   # visited rows, visit order
    ws = (width - d - torch.arange(width - 2 * d, device=device))[None, :]
    dx, dy = offsets[..., 0], offsets[..., 1]
    ph, pw = hs + dy, ws + dx                                                   # (N, rows, cols) sources
    visited = (ph >= d + 1) & (ph <= height - d) & (pw >= d + 1) & (pw <= width - d)
    earlier = visited & ((ph > hs) | ((ph == hs) & (pw > ws)))                 # source already overwritten
    target = (hs * width + ws).expand(n, -1, -1).reshape(n, -1)
    pointer = torch.arange(height * width, device=device).repeat(n, 1)
    done = torch.ones((n, height * width), dtype=torch.bool, device=device)
    pointer.scatter_(1, target, (ph * width + pw).reshape(n, -1))
    done.scatter_(1, target, ~earlier.reshape(n, -1))
    if d <= 1:      # offsets in [-1, 0] only read pixels not visited yet: no chains
        return pointer
    # invariant: value(q) = original(pointer[q]) if done[q] else value(pointer[q]); a round on a
    # finished pointer changes nothing, so rounds run in blocks with one check (one wait) after each
    while True:
        for _ in range(JUMP_ROUNDS):
            ahead = pointer.gather(1, pointer)
            ahead_done = done.gather(1, pointer)
            pointer = torch.where(done, pointer, ahead)
            done = done | ahead_done
        if bool(done.all()):
            return pointer


def glass_shuffle(x: torch.Tensor, offsets: torch.Tensor, max_delta: int) -> torch.Tensor:
    """One shuffle iteration of glass blur on (N, C, H, W) ``x`` with the given ``offsets``.

    Equal to the reference's sequential loop (:func:`robustlab.corruptions.ops.glass_shuffle`)
    given the same offsets; see :func:`glass_sources`.
    """
    n, c, h, w = x.shape
    sources = glass_sources(offsets, h, w, max_delta)
    return x.reshape(n, c, h * w).gather(2, sources[:, None, :].expand(n, c, h * w)).reshape(n, c, h, w)


def glass_blur_offsets(x: torch.Tensor, sigma: float, max_delta: int, offsets: list[torch.Tensor]) -> torch.Tensor:
    """Glass blur of (N, C, H, W) ``x`` with given shuffle ``offsets`` (one tensor per iteration,
    as :func:`glass_shuffle` takes them): blur, truncate to 256 levels, shuffle, blur again.

    With the offsets the numpy path draws from a RandomState, this gives the numpy path's
    result up to float rounding (``perf/parity_torch.py`` measures it).
    """
    levels = to_levels(smooth(x, sigma, mode="nearest"))
    for step in offsets:
        levels = glass_shuffle(levels, step, max_delta)
    return smooth(levels / 255, sigma, mode="nearest")


def glass_blur(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Blur, truncate to 256 levels, shuffle pixels locally, blur again.

    Draws per image: ``iterations`` x (H - 2d) x (W - 2d) x 2 integers in [-d, d) (dx, dy per
    visited pixel, in visit order), as one tensor.
    """
    sigma, max_delta, iterations = severity_param(numpy_blur.GLASS, profile, severity)
    h, w = x.shape[-2:]
    d = int(max_delta)
    offsets = []
    if h > 2 * d and w > 2 * d:
        drawn = integers(generators, -d, d, (int(iterations), h - 2 * d, w - 2 * d, 2), device=x.device)
        offsets = [drawn[:, it] for it in range(int(iterations))]
    return glass_blur_offsets(x, sigma, d, offsets)
