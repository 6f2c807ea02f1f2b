"""Spatter's water-drop shading on a torch device: the reference's OpenCV chain, batched.

imagecorruptions shades the drops of its liquid layer with OpenCV: ``Canny(liquid8, 50, 150)``,
``distanceTransform(DIST_L2, 5)`` of the edge-free pixels capped at 20, a 3x3 mean truncated to
levels, ``equalizeHist``, an emboss-like 3x3 filter and a rounded 3x3 mean. Each step here keeps
OpenCV's definition and is computed for the whole batch with a fixed number of tensor
operations (no row loops):

- :func:`canny`: Sobel, OpenCV's fixed-point non-maximum suppression, hysteresis as repeated
  3x3 dilation of the strong edges into the weak ones, checked for convergence once per
  :data:`HYSTERESIS_STEPS` steps (one check for the drops of spatter's layers);
- :func:`distance_transform`: the 5x5 chamfer distance as eight 1-D passes, one per move of the
  mask, each a few doubling steps (see its docstring);
- :func:`equalize_hist`: the cumulative histogram by one ``bincount`` over the batch;
- :func:`filter3x3`: 3x3 correlations as nine shifted multiply-adds (exact on integer levels).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .ops import pad, to_levels

__all__ = ["CHAMFER", "HYSTERESIS_STEPS", "RIDGE_KERNEL", "box_blur3", "canny", "dilate3", "distance_transform",
           "equalize_hist", "filter3x3", "water_mask"]

#: OpenCV Canny's fixed-point tan(22.5 degrees) (CANNY_SHIFT = 15).
_TG22 = 13573
_SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)
#: The reference's emboss-like kernel that shades the drops.
RIDGE_KERNEL = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]], np.float32)
#: OpenCV's DIST_L2 5x5 chamfer costs: a step, a diagonal step, a knight's move.
CHAMFER = (1.0, 1.4, 2.1969)
#: Hysteresis dilation steps between two convergence checks (each check waits for the device;
#: spatter's layers at 224 px needed at most three steps).
HYSTERESIS_STEPS = 4


def filter3x3(x: torch.Tensor, kernel: np.ndarray, mode: str = "reflect101") -> torch.Tensor:
    """Correlate every channel of (N, C, H, W) ``x`` with a 3x3 ``kernel`` (anchor at its centre,
    borders by ``mode``) as nine shifted multiply-adds in row-major tap order; zero taps skipped."""
    h, w = x.shape[-2:]
    padded = pad(pad(x, 2, 1, 1, mode), 3, 1, 1, mode)
    out = torch.zeros_like(x)
    for a in range(3):
        for b in range(3):
            if kernel[a, b] != 0:
                out.add_(padded[..., a:a + h, b:b + w], alpha=float(kernel[a, b]))
    return out


def box_blur3(x: torch.Tensor) -> torch.Tensor:
    """``cv2.blur(x, (3, 3))``: the 3x3 sum (rows, then columns, as OpenCV's box filter) / 9,
    ``BORDER_REFLECT_101``."""
    h, w = x.shape[-2:]
    padded = pad(pad(x, 2, 1, 1, "reflect101"), 3, 1, 1, "reflect101")
    rows = padded[..., 0:w] + padded[..., 1:w + 1] + padded[..., 2:w + 2]
    return (rows[..., 0:h, :] + rows[..., 1:h + 1, :] + rows[..., 2:h + 2, :]) * (1 / 9)


def canny(levels: torch.Tensor, low: int, high: int) -> torch.Tensor:
    """OpenCV's ``Canny(image, low, high)`` (3x3 Sobel, L1 magnitude) of (N, 1, H, W) grey levels.

    Sobel with replicated edges; non-maximum suppression with OpenCV's fixed-point direction
    sectors and tie rules (strictly greater than one neighbour, at least the other);
    hysteresis: candidates above ``low`` joined (8-connected) to pixels above ``high``, by
    dilating the strong edges into the candidates until nothing changes (checked every
    :data:`HYSTERESIS_STEPS` steps).

    Returns
    -------
    torch.Tensor
        bool (N, 1, H, W), True on edges.
    """
    padded = pad(pad(levels, 2, 1, 1, "nearest"), 3, 1, 1, "nearest")
    sobel_x = torch.as_tensor(_SOBEL_X, dtype=levels.dtype, device=levels.device)
    kernels = torch.stack([sobel_x, sobel_x.T])[:, None]
    grad = F.conv2d(padded, kernels).round().to(torch.int32)  # exact small integers (|g| <= 1020)
    gx, gy = grad[:, 0:1], grad[:, 1:2]
    mag = gx.abs() + gy.abs()
    m = F.pad(mag, (1, 1, 1, 1))                               # zeros around, as OpenCV's buffer
    h, w = mag.shape[-2:]

    def at(dy: int, dx: int) -> torch.Tensor:
        return m[..., 1 + dy:1 + dy + h, 1 + dx:1 + dx + w]

    ax, ay = gx.abs(), gy.abs() << 15                          # int32 is enough: tg67x < 2**27
    tg22x = ax * _TG22
    tg67x = tg22x + (ax << 16)
    horizontal = ay < tg22x
    vertical = ~horizontal & (ay > tg67x)
    same_sign = (gx ^ gy) >= 0
    keep_h = (mag > at(0, -1)) & (mag >= at(0, 1))
    keep_v = (mag > at(-1, 0)) & (mag >= at(1, 0))
    keep_d = torch.where(same_sign, (mag > at(-1, -1)) & (mag > at(1, 1)), (mag > at(-1, 1)) & (mag > at(1, -1)))
    local_max = torch.where(horizontal, keep_h, torch.where(vertical, keep_v, keep_d)) & (mag > low)
    edges = local_max & (mag > high)
    weak = local_max & ~edges
    while True:
        for _ in range(HYSTERESIS_STEPS):
            before = edges
            edges = edges | (weak & dilate3(edges))
        if bool((edges == before).all()):        # the last step added nothing: done
            return edges


def dilate3(mask: torch.Tensor) -> torch.Tensor:
    """3x3 dilation of a bool (N, C, H, W) mask (outside is False): ORs of shifted views, rows
    then columns."""
    h, w = mask.shape[-2:]
    p = F.pad(mask, (1, 1, 1, 1))
    rows = p[..., 0:w] | p[..., 1:w + 1] | p[..., 2:w + 2]
    return rows[..., 0:h, :] | rows[..., 1:h + 1, :] | rows[..., 2:h + 2, :]


def _chamfer_pass(d: torch.Tensor, dy: int, dx: int, cost: float, reach: int) -> None:
    """In place: ``d[p] = min(d[p], d[p -+ k (dy, dx)] + k cost)`` for every ``|k| <= reach``
    whose pixel is inside the image, by doubling (after the step with jump j, offsets up to
    2j - 1 are covered)."""
    h, w = d.shape[-2:]
    jump = 1
    while jump <= reach:
        sy, sx = jump * dy, jump * dx
        if sy >= h or abs(sx) >= w:                          # no pixel has a pixel that far
            break
        ca, cb = max(sx, 0), w + min(sx, 0)                  # columns x whose x - sx is inside
        step = d + jump * cost
        forward = d[..., sy:, ca:cb]
        torch.minimum(forward, step[..., :h - sy, ca - sx:cb - sx], out=forward)
        backward = d[..., :h - sy, ca - sx:cb - sx]
        torch.minimum(backward, step[..., sy:, ca:cb], out=backward)
        jump *= 2


def distance_transform(features: torch.Tensor, cap: float) -> torch.Tensor:
    """OpenCV's ``distanceTransform(DIST_L2, 5)`` of (N, 1, H, W): chamfer distance to the
    nearest True pixel, then ``min(distance, cap)``.

    The 5x5 chamfer distance is the cheapest combination of its moves: steps (cost 1),
    diagonal steps (1.4) and knight's moves (2.1969), each either way. Moves commute, so the
    transform is one 1-D pass per move, in any order: a pixel takes the minimum of itself and
    of the pixels k moves away plus k times the cost. The best combination for any
    displacement uses two neighbouring moves with integer counts, and its corner lies between
    the two pixels, so no path needs to leave the image: the passes give OpenCV's two raster
    scans' distances (float rounding apart: about 1e-6). Only combinations costing at most
    ``cap`` are needed, so each pass looks at most ``cap / cost`` moves away, in a few
    doubling steps (five at most for spatter's cap of 20).
    """
    a, b, c = CHAMFER
    h, w = features.shape[-2:]
    d = torch.where(features[:, 0], 0.0, float("inf")).to(torch.float32)
    for dy, dx, cost in ((0, 1, a), (1, 0, a), (1, 1, b), (1, -1, b), (1, 2, c), (2, 1, c), (1, -2, c), (2, -1, c)):
        extent = min((h - 1) // dy if dy else h + w, (w - 1) // abs(dx) if dx else h + w)
        reach = extent if cap == float("inf") else min(extent, int(cap / cost))
        _chamfer_pass(d, dy, dx, cost, reach)
    return d[:, None].clamp(max=cap)


def equalize_hist(levels: torch.Tensor) -> torch.Tensor:
    """OpenCV's ``equalizeHist`` of each image of (N, 1, H, W) grey levels 0..255 (float).

    The histograms of the whole batch come from one ``bincount`` (integer counts: exact and
    deterministic on every device).
    """
    n = levels.shape[0]
    flat = levels.reshape(n, -1).long()
    total = flat.shape[1]
    grid = torch.arange(256, device=levels.device)
    shifted = flat + 256 * torch.arange(n, device=levels.device)[:, None]
    counts = torch.bincount(shifted.reshape(-1), minlength=256 * n).reshape(n, 256)
    cumulative = counts.cumsum(dim=1).to(torch.float32)                     # values <= level, per level
    first = torch.argmax((cumulative > 0).to(torch.uint8), dim=1, keepdim=True)   # lowest level present
    first_count = cumulative.gather(1, first)
    scale = 255.0 / (total - first_count).clamp(min=1)
    lut = torch.round((cumulative - first_count) * scale).clamp(0, 255)
    lut = torch.where(grid[None] <= first, 0.0, lut)
    constant = first_count == total                                         # OpenCV: the image stays as it is
    lut = torch.where(constant, grid[None].to(torch.float32), lut)
    return lut.gather(1, flat).reshape(levels.shape).to(levels.dtype)


def water_mask(liquid: torch.Tensor, intensity: float) -> torch.Tensor:
    """Shaded water drops from the thresholded liquid layer: (N, 1, H, W) in, (N, 1, H, W) out.

    The reference's OpenCV chain on ``liquid8 = uint8(liquid * 255)``: Canny(50, 150) edges,
    distance to them (capped at 20), 3x3 mean truncated to levels, histogram equalisation,
    the ridge kernel (rounded, saturated), a rounded 3x3 mean; then ``liquid8 * shading``
    scaled to a maximum of ``intensity``.
    """
    liquid8 = to_levels(liquid)
    dist = distance_transform(canny(liquid8, 50, 150), 20.0)
    dist = torch.floor(box_blur3(dist) + 1e-4)
    dist = equalize_hist(dist)
    dist = torch.round(filter3x3(dist, RIDGE_KERNEL, "reflect101")).clamp(0, 255)
    dist = torch.round(box_blur3(dist))
    mask = liquid8 * dist
    top = mask.amax(dim=(1, 2, 3), keepdim=True).clamp(min=1e-12)
    return mask / top * intensity
