"""The 19 corruptions of ImageNet-C, declared in the ImageNet-C order (the paper's 15 benchmark
corruptions by group, then the 4 held-out ones).

Their names, groups, benchmark or held-out membership and AlexNet's published mean errors
(Hendrycks & Dietterich, ICLR 2019: the denominator of CE) come from the plain table
:data:`robustlab.suites.IMAGENET_C_CORRUPTIONS`, which the metrics read too. This module adds what
only the registry knows: where each numpy and torch kernel lives (``module:function``, imported on
first use, so naming and listing corruptions never loads numba), whether it seeds faithfully and
how its torch kernel rounds.
"""

from __future__ import annotations

from ..suites import IMAGENET_C_CORRUPTIONS
from .registry import IMAGENET_C, declare

__all__: list[str] = []

#: impulse_noise's reference draws from scikit-image's own unseeded generator.
NOT_SEEDABLE = frozenset({"impulse_noise"})
#: Torch kernels whose uint8 output is rounded (every other one is floored, as its reference).
ROUNDED = frozenset({"pixelate", "jpeg_compression"})

for _c in IMAGENET_C_CORRUPTIONS:
    declare(_c.name, group=_c.group, benchmark=_c.benchmark, sets=(IMAGENET_C,), baselines={"alexnet": _c.alexnet},
            seedable=_c.name not in NOT_SEEDABLE, kernel=f".{_c.group}:{_c.name}",
            torch_kernel=f".torch.{_c.group}:{_c.name}", torch_rounding="round" if _c.name in ROUNDED else "floor")
