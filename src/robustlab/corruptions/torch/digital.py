"""Digital corruptions on a torch device: brightness, contrast, elastic_transform, pixelate,
jpeg_compression (benchmark) and saturate (held-out).

Same definitions and tables as :mod:`robustlab.corruptions.digital`. brightness, saturate
(scikit-image's HSV formulas), contrast, pixelate (Pillow's BOX and NEAREST sampling
positions and weights) and jpeg_compression (a real JPEG round trip) draw nothing.
elastic_transform draws, per image, the displacement fields (and, in the hendrycks profiles,
the affine jitter first) and samples with mirrored borders.

JPEG: the round trip runs through torchvision's libjpeg-turbo on the CPU on every device (the
same bytes as the numpy path's OpenCV / Pillow encoders, so jpeg_compression is exact between
backends), with the images copied to the host and back and the images of a batch coded on a few
threads. nvJPEG on the GPU is faster but not the same codec: on an H200 its round trip differed
from libjpeg's by 2.1 to 2.6 grey levels on average (up to 112) at the five qualities
(perf/gpu_check.py), outside the backend's bound of 1; ``ROBUSTLAB_TORCH_JPEG=nvjpeg`` selects it
anyway, for speed over exactness.
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import cv2
import numpy as np
import torch

from ...errors import InputError
from .. import digital as numpy_digital
from .draws import uniform, wide_float
from .ops import bilinear_sample, gaussian_blur

__all__ = ["JPEG_CODECS", "JPEG_CODEC_ENV", "affine_inverse_maps", "box_weights", "hsv_adjust", "jpeg_codec",
           "jpeg_round_trip", "nearest_index"]


# --------------------------------------------------------------------------- HSV

def hsv_adjust(x: torch.Tensor, shift_value: float = 0.0, saturation_factor: float = 1.0,
               saturation_offset: float = 0.0) -> torch.Tensor:
    """RGB (N, 3, H, W) in [0, 1] -> HSV (scikit-image's ``rgb2hsv``), V + ``shift_value`` and
    S * ``saturation_factor`` + ``saturation_offset`` (each clipped to [0, 1]), -> RGB
    (``hsv2rgb``). Hue by the largest channel, blue winning ties over green over red."""
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    v = torch.maximum(torch.maximum(r, g), b)
    delta = v - torch.minimum(torch.minimum(r, g), b)
    grey = delta == 0
    safe = torch.where(grey, torch.ones_like(delta), delta)
    s = torch.where(grey, torch.zeros_like(delta), delta / torch.where(grey, torch.ones_like(v), v))
    h = (g - b) / safe
    h = torch.where(g == v, 2.0 + (b - r) / safe, h)
    h = torch.where(b == v, 4.0 + (r - g) / safe, h)
    h = torch.where(grey, torch.zeros_like(h), torch.remainder(h / 6.0, 1.0))
    v = (v + shift_value).clamp(0, 1)
    s = (s * saturation_factor + saturation_offset).clamp(0, 1)
    # hsv2rgb: channel = v - v s clip(min(k, 4 - k), 0, 1) with k = (n + 6h) mod 6, n = 5, 3, 1
    # for R, G, B: scikit-image's six sectors (p, q, t), in one expression per channel
    h6 = h * 6.0
    vs = v * s
    channels = [v - vs * torch.minimum(k, 4 - k).clamp(0, 1)
                for k in (torch.remainder(n + h6, 6.0) for n in (5.0, 3.0, 1.0))]
    return torch.stack(channels, dim=1)


def brightness(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """HSV value + c (clipped to 1). Draws nothing."""
    return hsv_adjust(x, shift_value=numpy_digital.BRIGHTNESS[profile][severity - 1])


def saturate(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """HSV saturation * a + b (clipped to [0, 1]). Draws nothing."""
    factor, offset = numpy_digital.SATURATE[profile][severity - 1]
    return hsv_adjust(x, saturation_factor=factor, saturation_offset=offset)


def contrast(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Each channel pulled towards its own mean by factor c. Draws nothing."""
    c = numpy_digital.CONTRAST[profile][severity - 1]
    means = x.mean(dim=(2, 3), keepdim=True, dtype=wide_float(x.device)).to(x.dtype)
    return (x - means) * c + means


# --------------------------------------------------------------------------- pixelate

def box_weights(n_in: int, n_out: int) -> np.ndarray:
    """Pillow's BOX resampling weights along one axis: (n_out, n_in) float64, rows sum to 1.

    Output pixel k covers ``[(k + 0.5) s - s/2, (k + 0.5) s + s/2)`` in input coordinates
    (``s = n_in / n_out``, at least a pixel wide when upsampling) and averages, with equal
    weights, the input pixels whose centre falls in that box (half-open on the left, as
    Pillow's ``-0.5 < t <= 0.5`` test).
    """
    scale = n_in / n_out
    support = 0.5 * max(scale, 1.0)
    centre = (np.arange(n_out) + 0.5) * scale
    lo = np.maximum((centre - support + 0.5).astype(np.int64), 0)
    hi = np.minimum((centre + support + 0.5).astype(np.int64), n_in)
    pixel = np.arange(n_in)[None, :]
    t = (pixel - centre[:, None] + 0.5) / max(scale, 1.0)
    weights = ((t > -0.5) & (t <= 0.5) & (pixel >= lo[:, None]) & (pixel < hi[:, None])).astype(np.float64)
    return weights / np.maximum(weights.sum(axis=1, keepdims=True), 1e-300)


def nearest_index(n_in: int, n_out: int) -> np.ndarray:
    """Pillow's NEAREST resize source index per output pixel, -1 where Pillow reads outside.

    Pillow (ImagingScaleAffine) starts at ``a / 2`` with ``a = float32(n_in) / n_out`` and adds
    ``a`` per pixel in float64, truncating; the running sum can reach ``n_in`` on the last
    pixels, which Pillow then fills with 0 (black). Same steps here, so the same pixels.
    """
    step = float(np.float32(n_in)) / n_out
    index = np.empty(n_out, np.int64)
    pos = step * 0.5
    for k in range(n_out):
        i = int(pos)
        index[k] = i if i < n_in else -1
        pos += step
    return index


def pixelate_matrices(n: int, fraction: float, nearest_up: bool) -> tuple[np.ndarray, np.ndarray]:
    """(down (m, n), up (n, m)) float64 matrices of one axis of pixelate, ``m = int(n * fraction)``.

    ``down``: Pillow's BOX downsampling; ``up``: NEAREST (a 0/1 selection) or BOX back to n.
    """
    small = int(n * fraction)
    down = box_weights(n, small)
    if nearest_up:
        up = np.zeros((n, small))
        index = nearest_index(small, n)
        inside = index >= 0
        up[np.flatnonzero(inside), index[inside]] = 1.0   # rows Pillow reads outside stay 0 (black)
    else:
        up = box_weights(small, n)
    return down, up


def pixelate(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """BOX downsampling by c, then NEAREST (imagecorruptions) or BOX (hendrycks) back up. Draws nothing.

    Each resize is a matrix product per axis, horizontal first as Pillow. Pillow rounds to 8 bits
    after each pass; here the passes stay in float (uint8 output is rounded once, at the end).
    """
    c = numpy_digital.PIXELATE[profile][severity - 1]
    h, w = x.shape[-2:]
    nearest = profile == "imagecorruptions"
    (down_r, up_r), (down_c, up_c) = (
        [torch.as_tensor(m, dtype=x.dtype, device=x.device) for m in pixelate_matrices(n, c, nearest)]
        for n in (h, w))
    small = torch.matmul(down_r, torch.matmul(x, down_c.T))
    return torch.matmul(up_r, torch.matmul(small, up_c.T))


# --------------------------------------------------------------------------- jpeg

def _torchvision_jpeg():
    """torchvision's (encode_jpeg, decode_jpeg), or None when its image ops are unavailable."""
    try:
        from torchvision.io import decode_jpeg, encode_jpeg
    except ImportError:  # pragma: no cover - torchvision is a dependency
        return None
    return encode_jpeg, decode_jpeg


#: Environment variable choosing the JPEG codec of the torch backend: ``libjpeg`` (default, exact)
#: or ``nvjpeg`` (CUDA tensors only: on the GPU, faster, not pixel-identical to the numpy path).
JPEG_CODEC_ENV = "ROBUSTLAB_TORCH_JPEG"
JPEG_CODECS = ("libjpeg", "nvjpeg")


def jpeg_codec() -> str:
    """The JPEG codec the torch backend uses (:data:`JPEG_CODEC_ENV`; default ``libjpeg``)."""
    codec = os.environ.get(JPEG_CODEC_ENV, "libjpeg").strip().lower() or "libjpeg"
    if codec not in JPEG_CODECS:
        raise InputError(f"{JPEG_CODEC_ENV}={codec!r}: use one of {', '.join(JPEG_CODECS)}.")
    return codec


def jpeg_round_trip(images: torch.Tensor, quality: int, *, codec: str | None = None) -> torch.Tensor:
    """Encode every uint8 (N, 3, H, W) image as a baseline JPEG at ``quality`` and decode it.

    ``codec`` (default :func:`jpeg_codec`): ``libjpeg`` -- torchvision's libjpeg-turbo on the CPU
    (OpenCV's when torchvision's image ops are missing), the numpy path's bytes, on a few threads;
    ``nvjpeg`` -- torchvision's nvJPEG encoder and decoder batched on the GPU (CUDA tensors only;
    other devices fall back to libjpeg).

    Returns
    -------
    torch.Tensor
        uint8 (N, 3, H, W) on ``images``' device.
    """
    codec = jpeg_codec() if codec is None else codec
    library = _torchvision_jpeg()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision 0.29 marks its image codecs deprecated
        if codec == "nvjpeg" and library is not None and images.device.type == "cuda":
            encode, decode = library
            encoded = encode(list(images.contiguous()), quality=int(quality))
            # the decoder reads its bytes from host memory (a few kB per image)
            return torch.stack(decode([e.cpu() for e in encoded], device=images.device))
        cpu = images.cpu().contiguous()
        if library is not None:
            encode, decode = library

            def one(img: torch.Tensor) -> torch.Tensor:
                return decode(encode(img, quality=int(quality)))
        else:  # pragma: no cover - torchvision without image ops
            def one(img: torch.Tensor) -> torch.Tensor:
                return torch.from_numpy(_cv2_round_trip(img.permute(1, 2, 0).numpy(), quality)).permute(2, 0, 1)
        if len(cpu) >= 8:  # libjpeg releases the GIL: a batch is coded on a few threads
            with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
                out = torch.stack(list(pool.map(one, cpu)))
        else:
            out = torch.stack([one(img) for img in cpu])
    return out.to(images.device)


def _cv2_round_trip(rgb: np.ndarray, quality: int) -> np.ndarray:  # pragma: no cover - fallback
    ok, encoded = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError("OpenCV could not encode a JPEG")
    return cv2.cvtColor(cv2.imdecode(encoded, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def jpeg_compression(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """A real JPEG round trip at the severity's quality (4:2:0, libjpeg's quality tables).

    Float values are rounded to 8 bits first (JPEG codes 8-bit samples). Draws nothing.
    """
    quality = numpy_digital.JPEG_QUALITY[profile][severity - 1]
    levels = torch.round(x.clamp(0, 1) * 255).to(torch.uint8)
    return jpeg_round_trip(levels, quality).to(x.dtype) / 255


# --------------------------------------------------------------------------- elastic

def _displacement(generators: list, shape: tuple[int, int], amplitude: float, sigma, alpha: float,
                  device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """alpha * Gaussian-smoothed (mirrored borders, radius 3 sigma) uniform(-amplitude, amplitude)
    noise: (N, H, W), one (H, W) draw per image."""
    noise = uniform(generators, -amplitude, amplitude, (1, *shape), device=device, dtype=dtype)
    return (gaussian_blur(noise, sigma, mode="reflect", truncate=3.0) * alpha)[:, 0]


@lru_cache(maxsize=32)
def _affine_anchors(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Hendrycks' three anchor points for an h x w image (float32, (row, col) used as (x, y)) and
    the inverse of their (3, 3) ``[x, y, 1]`` matrix (float64): the affine map that sends them to
    points ``dst`` is ``(inverse @ dst).T``, as ``cv2.getAffineTransform`` solves it."""
    centre = np.float32((h, w)) // 2
    half = min(h, w) // 3
    src = np.float32([centre + half, [centre[0] + half, centre[1] - half], centre - half])
    return src, np.linalg.inv(np.hstack([src.astype(np.float64), np.ones((3, 1))]))


def affine_inverse_maps(h: int, w: int, jitters: torch.Tensor) -> torch.Tensor:
    """Hendrycks' random affine maps for an h x w image, inverted (output pixel -> source pixel):
    (N, 2, 3) in ``jitters``' dtype, from the (N, 3, 2) anchor jitters.

    ``cv2.invertAffineTransform(cv2.getAffineTransform(src, src + jitter))`` per image, with the
    anchors moved in float32 as the reference does, solved with the anchors' fixed inverse
    matrix and inverted with OpenCV's formulas, for the whole batch on ``jitters``' device.
    """
    src, solver = _affine_anchors(h, w)
    dst = (torch.as_tensor(src, device=jitters.device) + jitters.to(torch.float32)).to(jitters.dtype)
    forward = (torch.as_tensor(solver, dtype=jitters.dtype, device=jitters.device) @ dst).transpose(1, 2)
    return _invert_affine(forward)


def _invert_affine(m: torch.Tensor) -> torch.Tensor:
    """``cv2.invertAffineTransform`` of (N, 2, 3) maps, batched, with OpenCV's operations."""
    a00, a01, b0 = m[:, 0, 0], m[:, 0, 1], m[:, 0, 2]
    a10, a11, b1 = m[:, 1, 0], m[:, 1, 1], m[:, 1, 2]
    det = a00 * a11 - a01 * a10
    det = torch.where(det != 0, 1.0 / det, 0.0)
    i00, i11, i01, i10 = a11 * det, a00 * det, -a01 * det, -a10 * det
    return torch.stack([torch.stack([i00, i01, -i00 * b0 - i01 * b1], dim=1),
                        torch.stack([i10, i11, -i10 * b0 - i11 * b1], dim=1)], dim=1)


def _random_affine(x: torch.Tensor, jitter: float, generators: list) -> torch.Tensor:
    """Hendrycks' random affine: three anchor points jittered by uniform(-jitter, jitter) (six
    draws per image), bilinear, ``BORDER_REFLECT_101``. The anchors are built in (row, col)
    order and handed to OpenCV as (x, y), as the reference does; the maps are solved and
    inverted for the whole batch on the device (float64 where it has it, as OpenCV:
    :func:`affine_inverse_maps`)."""
    h, w = x.shape[-2:]
    jitters = uniform(generators, -jitter, jitter, (3, 2), device=x.device, dtype=wide_float(x.device))
    m = affine_inverse_maps(h, w, jitters).to(x.dtype)
    ys = torch.arange(h, dtype=x.dtype, device=x.device)[None, :, None]
    xs = torch.arange(w, dtype=x.dtype, device=x.device)[None, None, :]
    src_x = m[:, 0, 0, None, None] * xs + m[:, 0, 1, None, None] * ys + m[:, 0, 2, None, None]
    src_y = m[:, 1, 0, None, None] * xs + m[:, 1, 1, None, None] * ys + m[:, 1, 2, None, None]
    return bilinear_sample(x, src_y, src_x, "reflect101")


def elastic_transform(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Pixels displaced along a smooth random field per image, bilinear, mirrored borders.

    imagecorruptions: field sigma 1 % of each side, uniform(+-0.5 % of the height) draws
    scaled by alpha; dx drawn, then dy. Hendrycks' profiles: the random affine first (6
    draws), then dx and dy from uniform(-1, 1).
    """
    h, w = x.shape[-2:]
    if profile == "imagecorruptions":
        sigma = (h * 0.01, w * 0.01)
        alpha = numpy_digital.ELASTIC_ALPHA[severity - 1]
        amplitude = h * 0.005
    else:
        alpha, sigma, jitter = numpy_digital.ELASTIC_HENDRYCKS[profile][severity - 1]
        amplitude = 1.0
        x = _random_affine(x, jitter, generators)
    dx = _displacement(generators, (h, w), amplitude, sigma, alpha, x.device, x.dtype)
    dy = _displacement(generators, (h, w), amplitude, sigma, alpha, x.device, x.dtype)
    rows = torch.arange(h, dtype=x.dtype, device=x.device)[None, :, None] + dy
    cols = torch.arange(w, dtype=x.dtype, device=x.device)[None, None, :] + dx
    return bilinear_sample(x, rows, cols, "reflect")
