"""Argument checks shared by the numpy and torch paths of the corruptions: one severity rule.

Severities are written the same way everywhere (``robustlab corrupt -s``, ``evaluate -s``,
:class:`~robustlab.corruptions.RandomCorruption`, ``finetune --severities``): a string lists
values and inclusive ranges (``"2-3,5"``), an int is one severity, and any other sequence is
the severities themselves (``(1, 3)`` is 1 and 3; write the range ``"1-3"`` or ``range(1, 4)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from ..errors import InputError
from ..suites import SEVERITIES  # noqa: F401  (the severities of every corruption, mildest first)

#: Smallest image side accepted (pixels). The references' kernels (plasma fractal, frost
#: crops, zoom, glass blur windows) assume at least this much; imagecorruptions documents 32.
MIN_SIZE = 32


def check_severity(severity: object) -> int:
    """``severity`` as an int in 1..5; InputError for anything else (bools and floats included)."""
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or not 1 <= int(severity) <= 5:
        raise InputError(f"severity must be an integer 1..5; got {severity!r}.")
    return int(severity)


def parse_severities(spec: str | int | Iterable[int]) -> tuple[int, ...]:
    """Severities from ``"1-5"``, ``"1,3,5"``, ``"2-3,5"``, an int or a sequence: sorted, unique.

    A sequence holds the severities themselves: ``(1, 3)`` is ``(1, 3)``, not a range.

    >>> parse_severities("2-3,5"), parse_severities((1, 3)), parse_severities(4)
    ((2, 3, 5), (1, 3), (4,))

    Raises
    ------
    InputError
        For anything outside 1..5, a backwards range, an empty selection or text that is not
        severities.
    """
    fix = "give severities in 1..5, e.g. '1,2,3' or '1-5'."
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        values = [int(spec)]
    elif isinstance(spec, str):
        values = []
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            match = re.fullmatch(r"(\d+)\s*-\s*(\d+)|(\d+)", part)
            if not match:
                raise InputError(f"cannot read severity {part!r} in {spec!r}: {fix}")
            lo, hi = (int(match[1]), int(match[2])) if match[1] else (int(match[3]), int(match[3]))
            if lo > hi:
                raise InputError(f"severity range {part!r} runs backwards: {fix}")
            values.extend(range(lo, hi + 1))
    else:
        try:
            values = list(spec)
        except TypeError:
            raise InputError(f"bad severities {spec!r}: {fix}") from None
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 5]
    if bad or not values:
        raise InputError(f"bad severities {spec!r}: {fix}")
    return tuple(sorted({int(v) for v in values}))
