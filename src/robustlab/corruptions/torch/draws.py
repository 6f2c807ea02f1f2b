"""Per-image random draws for the torch kernels.

Each image has its own :class:`torch.Generator` on the batch's device, seeded with
``derive_seed(seed, id, corruption, severity)``; a kernel draws image i's numbers from
generator i only, in a fixed order per kernel, so an image's result depends on its seed and
never on the other images of the batch. Draws are reproducible for a seed on a given device
type (CPU generators are Mersenne Twister, CUDA ones Philox): the same seed gives different
numbers on a CPU and on a GPU.

A generator holds one image's stream, so a draw is one call per image: the helpers here fill
image i's row of one preallocated batch tensor in place (``row.normal_(generator=g)``: the
numbers ``torch.randn(shape, generator=g)`` gives, without a per-image tensor and a copy into
the batch). Everything a kernel computes from the draws is batched.
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


def _rows(generators: Sequence[torch.Generator], shape: tuple[int, ...], device: torch.device,
          dtype: torch.dtype) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    out = torch.empty((len(generators), *shape), device=device, dtype=dtype)
    return out, out.unbind(0)


def normal(generators: Sequence[torch.Generator], shape: tuple[int, ...], *, mean: float = 0.0,
           std: float = 1.0, device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(N, *shape): image i's ``mean + std * N(0, 1)`` draws from ``generators[i]``
    (``torch.randn(shape, generator=generators[i])``, then scaled for the whole batch)."""
    out, rows = _rows(generators, tuple(shape), device, dtype)
    for row, g in zip(rows, generators):
        row.normal_(generator=g)
    return out * std + mean


def uniform(generators: Sequence[torch.Generator], low: float, high: float, shape: tuple[int, ...] = (), *,
            device: torch.device, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(N, *shape): image i's uniform draws in [low, high) from ``generators[i]``
    (``torch.rand(shape, generator=generators[i])``, then mapped for the whole batch)."""
    out, rows = _rows(generators, tuple(shape), device, dtype)
    for row, g in zip(rows, generators):
        row.uniform_(generator=g)
    return low + (high - low) * out


def integers(generators: Sequence[torch.Generator], low: int, high: int, shape: tuple[int, ...] = (), *,
             device: torch.device) -> torch.Tensor:
    """(N, *shape) int64: image i's integers in [low, high) from ``generators[i]``
    (``torch.randint(low, high, shape, generator=generators[i])``)."""
    out, rows = _rows(generators, tuple(shape), device, torch.int64)
    for row, g in zip(rows, generators):
        row.random_(int(low), int(high), generator=g)
    return out
