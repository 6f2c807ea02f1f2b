"""ImageNet-P's 14 perturbation sequences, declared: the 10 test ones then the 4 validation ones.

Their names, noise or temporal, test or validation, and AlexNet's published flip probability and
top-5 distance (Hendrycks & Dietterich, ICLR 2019: the denominators of FR and T5D) come from the
plain table :data:`robustlab.suites.IMAGENET_P_PERTURBATIONS`, which the metrics read too. This
module adds what only the registry knows: the generators in :mod:`.sequences` (imported on first
use) and the frame counts that are not 31.
"""

from __future__ import annotations

from ..suites import IMAGENET_P_PERTURBATIONS
from .registry import declare

__all__: list[str] = []

#: Generators not named like their perturbation.
GENERATORS = {"motion_blur": "motion_blur_sequence"}
#: Frame counts other than 31, by setting.
FRAMES = {"motion_blur": {"cifar": 21}, "translate": {"imagenet": 41, "cifar": 16}}

for _p in IMAGENET_P_PERTURBATIONS:
    declare(_p.name, noise=_p.noise, test=_p.test, frames=FRAMES.get(_p.name),
            baselines={"alexnet": (_p.flip_probability, _p.top5_distance)},
            generate=f".sequences:{GENERATORS.get(_p.name, _p.name)}")
