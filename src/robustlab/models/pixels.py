"""From uint8 pixels to a network's input: the conversions every batch goes through.

Images are uint8 channels-last at the edges and float [0, 1] channels-first inside models
(DESIGN.md's tensor convention). :func:`to_float` is that step. :func:`normalized_input` goes
straight from uint8 pixels to a normalised network input, in one pass on the CPU (a lookup
table of the 256 levels per channel, built with the very operations of the float path, so the
values are identical to ``preprocessing.normalize(to_float(pixels))``); on other devices it is
that composition.

Layout: both keep channels innermost in memory (a channels-first view of channels-last
memory), as the float path always has, so a network sees the same strides either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch


def to_float(pixels: Any, device: torch.device | str, *, channels_first: bool = True) -> torch.Tensor:
    """uint8 channels-last pixels (numpy or torch) -> float32 [0, 1] tensor on ``device``."""
    import torch

    t = pixels if isinstance(pixels, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(pixels))
    device = torch.device(device)
    if device.type == "cpu" and t.device.type == "cpu" and t.dtype == torch.uint8:
        # numpy's true division in float32: the same values as torch's below, in one pass and
        # several times faster on the CPU; the same layout (channels stay innermost in memory)
        out = np.empty(tuple(t.shape), np.float32)
        np.divide(t.numpy(), np.float32(255.0), out=out, casting="unsafe")
        t = torch.from_numpy(out)
        return t.movedim(-1, -3) if channels_first else t
    t = t.to(device, non_blocking=device.type == "cuda")
    if channels_first:
        t = t.movedim(-1, -3)
    return t.float().div_(255.0)


def level_table(normalize) -> np.ndarray:
    """float32 (3, 256): what ``normalize(to_float(level))`` gives for each level of each channel,
    computed by those very operations (elementwise, so every pixel of that level gets this value)."""
    import torch

    levels = torch.arange(256, dtype=torch.uint8).view(1, 1, 256, 1).expand(1, 1, 256, 3).contiguous()
    with torch.no_grad():
        table = normalize(to_float(levels, "cpu"))  # (1, 3, 1, 256)
    return np.ascontiguousarray(table[0, :, 0, :].numpy(), dtype=np.float32)


def normalized_input(pixels: torch.Tensor, normalize, table: np.ndarray | None = None,
                     out: np.ndarray | None = None) -> torch.Tensor:
    """uint8 (N, H, W, 3) pixels -> ``normalize(to_float(pixels))``: float32 (N, 3, H, W), channels
    innermost in memory. On the CPU one pass through ``table`` (:func:`level_table` of
    ``normalize``), the same values, into ``out`` when given (float32 (N, H, W, 3): a buffer
    reused from batch to batch, whose pages are already mapped); elsewhere the composition itself."""
    import torch

    if pixels.device.type != "cpu" or pixels.dtype != torch.uint8 or pixels.ndim != 4 or pixels.shape[-1] != 3:
        return normalize(to_float(pixels, pixels.device))
    table = level_table(normalize) if table is None else table
    n, h, w, _ = pixels.shape
    if out is None or out.shape != (n, h, w, 3) or out.dtype != np.float32:
        out = np.empty((n, h, w, 3), np.float32)
    src = np.ascontiguousarray(pixels.numpy())
    from .pixel_kernels import lookup_levels  # numba: imported when first needed

    lookup_levels(src.reshape(n, h * w, 3), table, out.reshape(n, h * w, 3))
    return torch.from_numpy(out).movedim(-1, -3)


# --- decoding on the device (--decode gpu) ------------------------------------------------------------


def is_encoded(pixels: Any) -> bool:
    """Whether a sample's pixels are still an encoded image file: a 1-D uint8 array of its bytes
    (``--decode gpu``: the loading workers send JPEG files undecoded)."""
    return getattr(pixels, "ndim", None) == 1


def gpu_decoder():
    """torchvision's batched JPEG decoder (``decode_jpeg``), or None when this torchvision has none."""
    try:
        from torchvision.io import decode_jpeg
    except ImportError:  # pragma: no cover - torchvision is a dependency
        return None
    return decode_jpeg


def decode_on_device(pixels: list, device: torch.device | str):
    """A batch's pixels with its encoded JPEG files decoded on ``device`` (nvJPEG on CUDA,
    libjpeg-turbo on the CPU), batched: uint8 (N, H, W, 3) when every image has one size, else a
    list of (H, W, 3). Pixels that are already decoded (other formats) are kept as they are."""
    import warnings

    import torch
    from torchvision.io import ImageReadMode

    decode = gpu_decoder()
    device = torch.device(device)
    coded = [i for i, p in enumerate(pixels) if is_encoded(p)]
    out: list[Any] = [p if isinstance(p, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(p))
                      for p in pixels]
    if coded:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchvision 0.29 marks its image codecs deprecated
            images = decode([out[i] for i in coded], mode=ImageReadMode.RGB, device=device)
        for i, image in zip(coded, images):
            out[i] = image.permute(1, 2, 0)
    out = [p.to(device) for p in out]
    if len({tuple(p.shape) for p in out}) == 1:
        return torch.stack(out)
    return out
