"""The random state of one item of a dataset under one corruption: the rule behind "the same
pixels everywhere".

``item`` identifies the image (its path relative to the dataset root, a sample id, a
position). Every path that corrupts an item of a dataset (``robustlab corrupt``, on-the-fly
evaluation, detection sets, :class:`~robustlab.corruptions.RandomCorruption`, the torch
backend) seeds it with :func:`item_seed`, so the same item gets the same pixels in any order,
in any process and on any number of workers.
"""

from __future__ import annotations

import numpy as np

from ..seeding import derive_seed

__all__ = ["item_random_state", "item_seed"]


def item_seed(seed: int, item: object, name: str, severity: int) -> int:
    """The seed of one item's corruption: ``derive_seed(seed, item, name, severity)`` (32 bits).

    >>> item_seed(0, "n01440764/x.JPEG", "fog", 3) == item_seed(0, "n01440764/x.JPEG", "fog", 3)
    True
    """
    return derive_seed(seed, item, name, int(severity))


def item_random_state(seed: int, item: object, name: str, severity: int) -> np.random.RandomState:
    """A fresh :class:`numpy.random.RandomState` seeded with :func:`item_seed` (what the numpy
    kernels draw from, in the references' order)."""
    return np.random.RandomState(item_seed(seed, item, name, severity))
