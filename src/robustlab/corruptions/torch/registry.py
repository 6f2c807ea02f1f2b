"""Registry of the torch kernels: corruption name -> batched kernel and its rounding rule.

A torch kernel is ``kernel(x, severity, generators, profile) -> torch.Tensor`` where ``x`` is a
float (N, 3, H, W) batch in [0, 1] on any device, ``severity`` an int in 1..5 (the same for
the whole batch: :func:`~robustlab.corruptions.torch.batch.corrupt_tensor` groups images by
severity), ``generators`` one seeded :class:`torch.Generator` per image on ``x``'s device (a
kernel draws image i's randomness from ``generators[i]`` only), and ``profile`` one of
:data:`robustlab.corruptions.PROFILES`. It returns the unclipped float result (N, 3, H, W);
the caller clips it to [0, 1] and, for uint8 output, converts it to 256 levels by
``rounding``: ``floor`` (the references' ``np.uint8`` truncation) or ``round`` (Pillow's and
libjpeg's 8-bit output).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..registry import get_corruption

TorchKernelFn = Callable[[torch.Tensor, int, list, str], torch.Tensor]
ROUNDINGS = ("floor", "round")


@dataclass(frozen=True)
class TorchKernel:
    """One registered torch kernel."""

    name: str
    fn: TorchKernelFn
    rounding: str = "floor"


TORCH_KERNELS: dict[str, TorchKernel] = {}


def register_torch(name: str, *, rounding: str = "floor") -> Callable[[TorchKernelFn], TorchKernelFn]:
    """Decorator registering a torch kernel for the (numpy-registered) corruption ``name``."""
    get_corruption(name)  # only corruptions the numpy path defines
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}; got {rounding!r}")

    def deco(fn: TorchKernelFn) -> TorchKernelFn:
        TORCH_KERNELS[name] = TorchKernel(name, fn, rounding)
        return fn

    return deco


def get_torch_kernel(name: str) -> TorchKernel:
    """The torch kernel of corruption ``name`` (the registry's InputError for unknown names)."""
    corruption = get_corruption(name)
    return TORCH_KERNELS[corruption.name]
