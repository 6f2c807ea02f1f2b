"""Noise corruptions on a torch device: gaussian, shot, impulse (benchmark) and speckle noise.

Same formulas and severity tables as :mod:`robustlab.corruptions.noise`; the noise comes from
each image's torch generator (see :mod:`.draws`), so it has the reference's distribution, not
its numbers.
"""

from __future__ import annotations

import torch

from .. import noise as numpy_noise
from ..ops import severity_param
from .draws import normal, uniform


def gaussian_noise(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """x + N(0, sigma^2) per value; one (3, H, W) normal draw per image."""
    sigma = severity_param(numpy_noise.GAUSSIAN_SIGMA, profile, severity)
    return x + normal(generators, x.shape[1:], std=sigma, device=x.device, dtype=x.dtype)


def shot_noise(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Poisson(x * rate) / rate per value; one (3, H, W) Poisson draw per image."""
    rate = float(severity_param(numpy_noise.SHOT_RATE, profile, severity))
    means = x * rate                                  # one product for the batch, one draw per image
    counts = torch.stack([torch.poisson(m, generator=g) for m, g in zip(means.unbind(0), generators)])
    return counts / rate


def impulse_noise(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """Salt (u < amount/2) and pepper (amount/2 <= u < amount) per value; one (3, H, W) uniform draw."""
    amount = float(severity_param(numpy_noise.IMPULSE_AMOUNT, profile, severity))
    u = uniform(generators, 0.0, 1.0, tuple(x.shape[1:]), device=x.device, dtype=x.dtype)
    return torch.where(u < amount / 2, torch.ones_like(x), torch.where(u < amount, torch.zeros_like(x), x))


def speckle_noise(x: torch.Tensor, severity: int, generators: list, profile: str) -> torch.Tensor:
    """x + x * N(0, sigma^2) per value; one (3, H, W) normal draw per image."""
    sigma = severity_param(numpy_noise.SPECKLE_SIGMA, profile, severity)
    return x + x * normal(generators, x.shape[1:], std=sigma, device=x.device, dtype=x.dtype)
