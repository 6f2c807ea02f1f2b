"""The 15 corruptions of ImageNet-C-bar and CIFAR-10-C-bar, declared from :mod:`.tables` (their sets
and severity tables): group ``c-bar``, the released sets they belong to, and their kernels in
:mod:`.kernels` (imported on first use)."""

from __future__ import annotations

from ..registry import declare
from .tables import CBAR_ORDER, GROUP, sets_of

__all__: list[str] = []

for _name in CBAR_ORDER:
    declare(_name, group=GROUP, sets=tuple(sets_of(_name)), kernel=f".cbar.kernels:{_name}")
