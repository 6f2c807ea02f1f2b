"""Import the numpy kernel of every registered corruption (built-in and plugins').

Naming corruptions never needs this (the registry knows them without their kernels); work that
is about to corrupt imports it first, or lists it in a worker pool's preload, so that the
kernels and their compiled helpers load once, before the first image, rather than in the middle
of a run (where an interrupt could land inside numba's loading).
"""

from __future__ import annotations

from .registry import registered

__all__ = ["preload"]


def preload() -> int:
    """Import every registered corruption's kernel module; returns how many corruptions there are."""
    every = registered()
    for corruption in every:
        corruption.kernel  # noqa: B018  (the attribute imports the kernel's module)
    return len(every)


preload()
