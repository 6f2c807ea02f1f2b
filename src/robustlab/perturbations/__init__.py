"""Perturbation sequences of ImageNet-P / CIFAR-10-P, and any a plugin registers.

>>> import numpy as np
>>> from robustlab.perturbations import generate, list_perturbations
>>> generate(np.full((64, 64, 3), 128, np.uint8), "rotate", setting="imagenet", rng=0).shape
(31, 224, 224, 3)
>>> list_perturbations("test")[:3]
['gaussian_noise', 'shot_noise', 'motion_blur']

Each perturbation is declared once in the registry (:mod:`.registry`; ImageNet-P's in
:mod:`.catalog`); the generators (:mod:`.sequences`) load on first use.
"""

from . import catalog  # noqa: F401  (declares ImageNet-P's 14)
from .api import MIN_SIZE, generate
from .registry import (
    PERTURBATIONS,
    SETTINGS,
    Perturbation,
    declare,
    frame_count,
    get_perturbation,
    list_perturbations,
    register,
)

__all__ = ["MIN_SIZE", "PERTURBATIONS", "SETTINGS", "Perturbation", "declare", "frame_count", "generate",
           "get_perturbation", "list_perturbations", "register"]
