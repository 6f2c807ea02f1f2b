"""The torch kernels: a corruption's torch kernel and its rounding rule, as the corruption declares them.

A torch kernel is ``kernel(x, severity, generators, profile) -> torch.Tensor`` where ``x`` is a
float (N, 3, H, W) batch in [0, 1] on any device, ``severity`` an int in 1..5 (the same for
the whole batch: :func:`~robustlab.corruptions.torch.batch.corrupt_tensor` groups images by
severity), ``generators`` one seeded :class:`torch.Generator` per image on ``x``'s device (a
kernel draws image i's randomness from ``generators[i]`` only), and ``profile`` one of
:data:`robustlab.corruptions.PROFILES`. It returns the unclipped float result (N, 3, H, W);
the caller clips it to [0, 1] and, for uint8 output, converts it to 256 levels by
``rounding``: ``floor`` (the references' ``np.uint8`` truncation) or ``round`` (Pillow's and
libjpeg's 8-bit output).

A corruption names its torch kernel where it is registered
(:func:`robustlab.corruptions.registry.register` ``torch_kernel=``, ``torch_rounding=``); one
without a torch kernel is corrupted by the numpy path only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ...errors import InputError
from ..registry import ROUNDINGS, get_corruption, load_reference, registered

__all__ = ["ROUNDINGS", "TorchKernel", "get_torch_kernel", "torch_kernel_names"]

TorchKernelFn = Callable[[torch.Tensor, int, list, str], torch.Tensor]


@dataclass(frozen=True)
class TorchKernel:
    """One corruption's torch kernel."""

    name: str
    fn: TorchKernelFn
    rounding: str = "floor"


def get_torch_kernel(name: str) -> TorchKernel:
    """The torch kernel of corruption ``name`` (its module imported now).

    Raises
    ------
    InputError
        For an unknown name (with a suggestion), and for a corruption registered without a torch
        kernel (with the fix: the numpy backend).
    """
    corruption = get_corruption(name)
    ref = corruption.torch_ref
    if ref is None:
        raise InputError(f"corruption {name!r} has no torch kernel (it is registered for the numpy path only): "
                         "corrupt it with the numpy backend (--corruption-backend numpy, or numpy arrays), or "
                         "register it with torch_kernel=.")
    fn = load_reference(ref) if isinstance(ref, str) else ref
    return TorchKernel(corruption.name, fn, corruption.torch_rounding)


def torch_kernel_names() -> list[str]:
    """The registered corruptions that have a torch kernel, in registration order."""
    return [c.name for c in registered() if c.has_torch_kernel]
