"""Common corruptions for any image: ImageNet-C's 19, ImageNet-C-bar's and CIFAR-10-C-bar's 15, and
any a plugin registers.

>>> import numpy as np
>>> from robustlab.corruptions import corrupt, list_corruptions
>>> image = np.full((64, 64, 3), 128, np.uint8)
>>> corrupt(image, "fog", 3, rng=0).shape          # uint8 HxWx3 in, uint8 HxWx3 out
(64, 64, 3)
>>> len(list_corruptions("benchmark")), list_corruptions("holdout")
(15, ['speckle_noise', 'gaussian_blur', 'spatter', 'saturate'])

Each corruption is declared once in the registry (:mod:`.registry`; the built-in ones in
:mod:`.catalog` and :mod:`.cbar.catalog`). Kernels live in :mod:`.noise`, :mod:`.blur`,
:mod:`.weather`, :mod:`.digital` and :mod:`.cbar.kernels`; each module is imported when one of
its corruptions first corrupts an image, so naming and listing corruptions stays fast.
"""

from . import catalog  # noqa: F401  (declares ImageNet-C's 19)
from .api import MIN_SIZE, check_severity, corrupt, corrupt_batch, corrupt_item, item_seed
from .cbar import catalog as cbar_catalog  # noqa: F401  (declares the C-bar 15)
from .checks import parse_severities
from .registry import (
    CORRUPTIONS,
    PROFILES,
    Corruption,
    declare,
    get_corruption,
    group_names,
    list_corruptions,
    register,
    resolve_corruptions,
)
from .transforms import PAPER_NOISE_AUGMENTATION, RandomCorruption

__all__ = [
    "CORRUPTIONS", "MIN_SIZE", "PAPER_NOISE_AUGMENTATION", "PROFILES", "Corruption", "RandomCorruption",
    "check_severity", "corrupt", "corrupt_batch", "corrupt_item", "declare", "get_corruption", "group_names",
    "item_seed", "list_corruptions", "parse_severities", "register", "resolve_corruptions",
]
