"""Sample sets corrupted on the fly: another sample set whose images are corrupted when read.

:func:`corrupt_on_the_fly` wraps any sample set (an image folder, array rows, a view) so each
image is corrupted at its native resolution (before the model's resize) with its own random
state, :func:`robustlab.corruptions.items.item_seed` ``(seed, sample id, corruption, severity)``:
the same pixels in any order, in any process, and the same as ``robustlab corrupt`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..data.classification import SampleView
from .api import corrupt_item
from .checks import check_severity
from .registry import CORRUPTIONS, check_profile, get_corruption

__all__ = ["CorruptedSamples", "corrupt_on_the_fly"]


@dataclass(frozen=True, eq=False)
class CorruptedSamples(SampleView):
    """Another sample set, each image corrupted on the fly at its native resolution.

    Image ``i`` is ``corrupt_item(base.read(i), corruption, severity, seed=seed, item=base.ids[i])``.
    The base's fingerprint stands for it (the corruption and its seed are in the run's config).
    """

    corruption: str = ""
    severity: int = 0
    seed: int = 0
    profile: str = "imagecorruptions"
    _ids: tuple[str, ...] = field(default=(), repr=False)
    per_image: ClassVar[bool] = True

    def __post_init__(self) -> None:  # the ids once: every read derives its seed from one
        object.__setattr__(self, "_ids", tuple(self.base.ids))

    @property
    def ids(self) -> tuple[str, ...]:
        return self._ids

    def id(self, i: int) -> str:
        return self._ids[i]

    def read(self, i: int) -> np.ndarray:
        return corrupt_item(self.base.read(i), self.corruption, self.severity, seed=self.seed, item=self._ids[i],
                            profile=self.profile)


def corrupt_on_the_fly(samples, corruption: str, severity: int, *, seed: int = 0,
                       profile: str = "imagecorruptions") -> CorruptedSamples:
    """``samples`` (any sample set: ``len``, ``ids``, ``labels``, ``read(i)`` -> uint8 HxWx3) with
    ``corruption`` at ``severity`` applied to each image when it is read."""
    if corruption not in CORRUPTIONS:  # known names need no kernel import until an image is read
        get_corruption(corruption)
    return CorruptedSamples(samples, corruption, check_severity(severity), int(seed), check_profile(profile))
