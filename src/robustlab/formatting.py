"""How robustlab writes a number that may be missing (None or NaN): in a JSON document (as null),
in a table (fixed decimals, a dash when missing) and in a short label (``%g``: ``4`` for 4.0).

The one home of these small helpers, shared by the engine, the studies and the reports; plain
Python, no imports.

>>> json_number(float("nan")) is None, json_number(0.25)
(True, 0.25)
>>> number_text(0.12345), number_text(None), number_text(0.5, 1)
('0.123', '–', '0.5')
>>> compact_number(4.0), compact_number(0.0125)
('4', '0.0125')
"""

from __future__ import annotations

import math

__all__ = ["compact_number", "is_missing", "json_number", "number_text"]


def is_missing(value: object) -> bool:
    """True for None and a float NaN (a number that was not measured or is undefined)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def json_number(value: float | None) -> float | None:
    """``value`` for a JSON document: None (null) where it is missing, since JSON has no NaN."""
    return None if is_missing(value) else value


def number_text(value: float | None, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals, or ``–`` where it is missing."""
    return "–" if is_missing(value) else f"{value:.{digits}f}"


def compact_number(value: float) -> str:
    """``value`` in its shortest form (``%g``): ``4`` for 4.0, ``0.5`` for 0.5."""
    return f"{value:g}"
