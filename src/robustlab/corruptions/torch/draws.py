"""Per-image random draws for the torch kernels.

Each image has its own :class:`torch.Generator` on the batch's device, seeded with
``derive_seed(seed, id, corruption, severity)``; a kernel draws image i's numbers from
generator i only, in a fixed order per kernel, so an image's result depends on its seed and
never on the other images of the batch. Draws are reproducible for a seed on a given device
type (CPU generators are Mersenne Twister, CUDA ones Philox): the same seed gives different
numbers on a CPU and on a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["image_generators", "integers", "normal", "uniform", "wide_float"]


def wide_float(device: torch.device) -> torch.dtype:
    """float64 where the device has it (for scalar draws such as angles, and means), else float32 (MPS)."""
    return torch.float32 if torch.device(device).type == "mps" else torch.float64


def image_generators(seeds: Sequence[int], device: torch.device) -> list[torch.Generator]:
    """One generator per seed on ``device``."""
    return [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]


def normal(generators: Sequence[torch.Generator], shape: tuple[int, ...], *, mean: float = 0.0,
           std: float = 1.0, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(N, *shape): image i's ``mean + std * N(0, 1)`` draws from ``generators[i]``."""
    draws = torch.stack([torch.randn(shape, generator=g, device=device, dtype=dtype) for g in generators])
    return draws * std + mean


def uniform(generators: Sequence[torch.Generator], low: float, high: float, shape: tuple[int, ...] = (), *,
            device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(N, *shape): image i's uniform draws in [low, high) from ``generators[i]``."""
    draws = torch.stack([torch.rand(shape, generator=g, device=device, dtype=dtype) for g in generators])
    return low + (high - low) * draws


def integers(generators: Sequence[torch.Generator], low: int, high: int, shape: tuple[int, ...] = (), *,
             device: torch.device) -> torch.Tensor:
    """(N, *shape) int64: image i's integers in [low, high) from ``generators[i]``."""
    return torch.stack([torch.randint(low, high, shape, generator=g, device=device) for g in generators])
