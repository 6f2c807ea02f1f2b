""":func:`corrupt_tensor`: the 19 corruptions on a batch of torch tensors, on the batch's device."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ...errors import InputError
from ..items import item_seed
from ..checks import MIN_SIZE, check_severity
from ..registry import check_profile, get_corruption
from .draws import image_generators
from .ops import LEVEL_TOLERANCE
from .registry import get_torch_kernel

__all__ = ["check_tensor", "corrupt_tensor", "image_severities"]

#: What a tensor batch must look like, for error messages.
EXPECTED = "uint8 (N, H, W, 3) or float (N, 3, H, W) with values in [0, 1]"


def check_tensor(x: object, *, name: str = "images") -> str:
    """Validate a tensor batch; returns ``"uint8"`` (NHWC) or ``"float"`` (NCHW).

    Raises :class:`InputError` naming the expected form (:data:`EXPECTED`) and the fix, for a
    non-tensor, a wrong rank, dtype or channel count, a side below :data:`MIN_SIZE` pixels,
    and float values outside [0, 1] (NaN included).
    """
    if not isinstance(x, torch.Tensor):
        raise InputError(f"{name} must be a torch tensor, {EXPECTED}; got {type(x).__name__}.")
    if x.dim() != 4:
        hint = " Add the batch axis with x.unsqueeze(0)." if x.dim() == 3 else ""
        raise InputError(f"{name} must be a 4-D batch, {EXPECTED}; got shape {tuple(x.shape)}.{hint}")
    if x.dtype == torch.uint8:
        kind, channels, (h, w) = "uint8", x.shape[3], x.shape[1:3]
        if channels != 3:
            hint = (" It looks channels-first: use x.permute(0, 2, 3, 1)." if x.shape[1] == 3 else
                    " Repeat a grey channel with x.expand(-1, -1, -1, 3)." if channels == 1 else
                    " Drop an alpha channel with x[..., :3]." if channels == 4 else "")
            raise InputError(f"uint8 {name} must be channels-last (N, H, W, 3); got shape {tuple(x.shape)}.{hint}")
    elif x.is_floating_point():
        kind, channels, (h, w) = "float", x.shape[1], x.shape[2:4]
        if channels != 3:
            hint = (" It looks channels-last: use x.permute(0, 3, 1, 2)." if x.shape[3] == 3 else
                    " Repeat a grey channel with x.expand(-1, 3, -1, -1)." if channels == 1 else
                    " Drop an alpha channel with x[:, :3]." if channels == 4 else "")
            raise InputError(f"float {name} must be channels-first (N, 3, H, W); got shape {tuple(x.shape)}.{hint}")
    else:
        raise InputError(f"{name} must be {EXPECTED}; got dtype {x.dtype}. Convert integer images with "
                         "x.to(torch.uint8) (values 0..255, channels-last) or x.float() / 255 (channels-first).")
    if h < MIN_SIZE or w < MIN_SIZE:
        raise InputError(f"{name} are {h}x{w} pixels; they must be at least {MIN_SIZE}x{MIN_SIZE}. "
                         "Upscale them first (e.g. torch.nn.functional.interpolate).")
    if kind == "float" and x.numel():
        low, high = torch.stack(torch.aminmax(x)).tolist()   # one read from the device
        if not (0.0 <= low and high <= 1.0):  # NaN fails both comparisons
            raise InputError(f"float {name} (N, 3, H, W) must have values in [0, 1]; got values from {low} to {high}. "
                             "Scale 0..255 images with x / 255; clip with x.clamp(0, 1).")
    return kind


def image_severities(severity: object, n: int) -> list[int]:
    """One severity per image from an int, or a sequence / 1-D tensor of ``n`` ints (each 1..5)."""
    if isinstance(severity, torch.Tensor):
        if severity.dim() > 1:
            raise InputError(f"severity must be an int or one int per image; got a tensor of shape "
                             f"{tuple(severity.shape)}.")
        if severity.is_floating_point() or severity.is_complex():
            raise InputError(f"severity must be an integer 1..5; got a {severity.dtype} tensor.")
        severity = severity.tolist()
    if getattr(severity, "ndim", None) == 0:  # a 0-d numpy array
        severity = severity.item()
    if isinstance(severity, (str, bytes)) or not hasattr(severity, "__len__"):
        return [check_severity(severity)] * n
    values = list(severity)
    if len(values) != n:
        raise InputError(f"got {n} images but {len(values)} severities; give one severity, or one per image.")
    return [check_severity(v) for v in values]


def to_unit(x: torch.Tensor, kind: str) -> torch.Tensor:
    """The batch as contiguous float (N, 3, H, W) in [0, 1]: float32, or float64 for float64 input."""
    if kind == "uint8":
        return x.permute(0, 3, 1, 2).to(torch.float32) / 255
    return x.to(torch.float64 if x.dtype == torch.float64 else torch.float32).contiguous()


def from_unit(values: torch.Tensor, like: torch.Tensor, kind: str, rounding: str) -> torch.Tensor:
    """Clip kernel output to [0, 1] and return it in ``like``'s dtype and layout.

    uint8: 256 levels by truncation (the references' ``np.uint8``; a :data:`LEVEL_TOLERANCE`
    grey level absorbs float32 rounding) or by rounding (``rounding="round"``: Pillow and
    libjpeg output), channels-last. Float: the clipped values, not quantised, channels-first.
    """
    if kind == "float":
        return values.clamp(0, 1).to(like.dtype)
    levels = values.clamp(0, 1).mul_(255)
    levels = levels.round_() if rounding == "round" else levels.add_(LEVEL_TOLERANCE).floor_()
    return levels.to(torch.uint8).permute(0, 2, 3, 1).contiguous()


def corrupt_tensor(images: torch.Tensor, name: str, severity: int | Sequence[int] | torch.Tensor, *,
                   seed: int = 0, ids: Sequence[object] | None = None,
                   profile: str = "imagecorruptions") -> torch.Tensor:
    """Corrupt a batch of images on its own device (CPU, CUDA, MPS).

    Parameters
    ----------
    images : torch.Tensor
        uint8 (N, H, W, 3) (0..255, channels-last, as images at the edges) or float
        (N, 3, H, W) in [0, 1] (channels-first, as models take them; float16/bfloat16/float32
        computed in float32, float64 in float64). Every side at least :data:`MIN_SIZE`.
    name : str
        A corruption name (see :func:`robustlab.corruptions.list_corruptions`).
    severity : int, sequence of N ints or 1-D integer tensor
        1..5, for all images or per image.
    seed : int
        Base seed. Image i draws from a generator seeded with
        ``item_seed(seed, ids[i], name, severity_i)`` on the batch's device, so its result
        depends only on (seed, id, corruption, severity, profile), never on the batch.
    ids : sequence of N hashable values, optional
        Image identities (file names, sample indices); default: positions 0..N-1.
    profile : str
        Parameter profile (see :data:`robustlab.corruptions.PROFILES`).

    Returns
    -------
    torch.Tensor
        Same shape, dtype, layout and device as ``images``. uint8 values are truncated (or, for
        pixelate and jpeg_compression, rounded) to 256 levels as the numpy path's; float values
        are clipped to [0, 1] and not quantised.

    Notes
    -----
    Results are reproducible for a seed on a given device type; a CPU and a GPU draw
    different numbers from the same seed. Deterministic corruptions (no draws) agree with the
    numpy path to float rounding; the random ones agree in distribution (see
    ``docs/torch-backend.md`` for the measured parity).
    """
    corruption = get_corruption(name)
    profile = check_profile(profile)
    kind = check_tensor(images)
    n = images.shape[0]
    severities = image_severities(severity, n)
    keys = list(range(n)) if ids is None else list(ids)
    if len(keys) != n:
        raise InputError(f"got {n} images but {len(keys)} ids; give one id per image.")
    kernel = get_torch_kernel(corruption.name)
    if n == 0:
        return images.clone()
    with torch.no_grad():
        work = to_unit(images, kind)
        result = None
        for level in sorted(set(severities)):
            members = [i for i, s in enumerate(severities) if s == level]
            generators = image_generators([item_seed(seed, keys[i], name, level) for i in members], images.device)
            if len(members) == n:
                result = kernel.fn(work, level, generators, profile)
                break
            index = torch.as_tensor(members, device=images.device)
            part = kernel.fn(work.index_select(0, index), level, generators, profile)
            if result is None:
                result = torch.empty_like(work)
            result[index] = part.to(result.dtype)
        return from_unit(result, images, kind, kernel.rounding)
