"""Import every numpy kernel module (they register their corruptions on import).

Naming corruptions never needs this (see :data:`robustlab.corruptions.registry.BUILTIN`); work
that is about to corrupt imports it first, or lists it in a worker pool's preload, so that the
kernels and their compiled helpers load once, before the first image, rather than in the middle
of a run (where an interrupt could land inside numba's loading).
"""

from . import blur, digital, noise, weather  # noqa: F401  (registers the kernels)
from .cbar import kernels as cbar  # noqa: F401  (ImageNet-C-bar / CIFAR-10-C-bar)

__all__ = ["blur", "cbar", "digital", "noise", "weather"]
