"""Argument checks shared by the numpy and torch paths of the corruptions."""

from __future__ import annotations

import numpy as np

from ..errors import InputError

#: Smallest image side accepted (pixels). The references' kernels (plasma fractal, frost
#: crops, zoom, glass blur windows) assume at least this much; imagecorruptions documents 32.
MIN_SIZE = 32


def check_severity(severity: object) -> int:
    """``severity`` as an int in 1..5; InputError for anything else (bools and floats included)."""
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or not 1 <= int(severity) <= 5:
        raise InputError(f"severity must be an integer 1..5; got {severity!r}.")
    return int(severity)
