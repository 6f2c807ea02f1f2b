"""The 19 common corruptions of ImageNet-C, for any image.

>>> from robustlab.corruptions import corrupt, list_corruptions
>>> out = corrupt(image, "fog", 3, rng=0)          # uint8 HxWx3 in, uint8 HxWx3 out

Kernels live in :mod:`.noise`, :mod:`.blur`, :mod:`.weather` and :mod:`.digital`; each module
is imported (and registers its kernels) when one of its corruptions is first looked up, so
naming and listing corruptions stays fast.
"""

from .api import MIN_SIZE, check_severity, corrupt, corrupt_batch, corrupt_item, item_seed
from .checks import parse_severities
from .registry import (
    CANONICAL_ORDER,
    CORRUPTIONS,
    GROUPS,
    PROFILES,
    Corruption,
    get_corruption,
    list_corruptions,
    resolve_corruptions,
)
from .transforms import PAPER_NOISE_AUGMENTATION, RandomCorruption

__all__ = [
    "CANONICAL_ORDER", "CORRUPTIONS", "GROUPS", "MIN_SIZE", "PAPER_NOISE_AUGMENTATION", "PROFILES", "Corruption",
    "RandomCorruption",
    "check_severity", "corrupt", "corrupt_batch", "corrupt_item", "get_corruption", "item_seed", "list_corruptions",
    "parse_severities",
    "resolve_corruptions",
]
