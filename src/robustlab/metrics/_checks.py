"""Shared input validation for the metric functions.

Every public metric validates its inputs through these helpers, so a malformed input (NaN,
wrong shape, empty, mismatched keys, out-of-range values) raises
:class:`robustlab.errors.InputError` with a message that names the argument, the bad value and
the fix, instead of silently producing a wrong number.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import InputError


def format_examples(items: Iterable[Any], limit: int = 3) -> str:
    items = list(items)
    shown = ", ".join(repr(i) for i in items[:limit])
    more = f" (and {len(items) - limit} more)" if len(items) > limit else ""
    return shown + more


def numbers_only(value: Any, name: str) -> np.ndarray:
    """``value`` as an array of real numbers, without converting it: text (``"0.5"``),
    booleans (``True``), ``None``, complex numbers and other objects are refused, so that
    nothing is silently read as a number (``float("0.5")`` and ``float(True)`` would be).

    Raises
    ------
    InputError
        Naming the argument and the first offending value.
    """
    if isinstance(value, Mapping):
        raise InputError(
            f"{name} must be an array of numbers, got a mapping ({type(value).__name__})."
        )
    if isinstance(value, (str, bytes)):
        raise InputError(f"{name} must be a number or an array of numbers, got the text {value!r}; "
                         "convert it with float() first if it is one.")
    if isinstance(value, (list, tuple)):  # numpy would turn [0.3, True] into [0.3, 1.0]: look first
        _refuse_non_numbers(value, name)
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a rectangular array of numbers; could not read it ({exc}).") from None
    kind = raw.dtype.kind
    if kind in "iuf":
        return raw
    if kind == "O":  # mixed Python objects: every element must be a real number (not a bool)
        flat = raw.reshape(-1)
        bad = next((v for v in flat if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real)), None)
        if bad is None:
            return raw.astype(np.float64)
        raise InputError(f"{name} must hold numbers only, got {type(bad).__name__} {bad!r:.40}.")
    what = {"b": "booleans (True/False)", "U": "text", "S": "bytes", "c": "complex numbers",
            "m": "time spans", "M": "dates"}.get(kind, f"values of dtype {raw.dtype}")
    example = raw.reshape(-1)[0].item() if raw.size else ""
    raise InputError(f"{name} must hold real numbers, got {what} (e.g. {example!r:.40}); give the numbers themselves.")


def _refuse_non_numbers(items: Any, name: str) -> None:
    """Raise on the first element of nested lists/tuples that is not a real number."""
    stack = [items]
    while stack:
        for v in stack.pop():
            if isinstance(v, (list, tuple)):
                stack.append(v)
            elif isinstance(v, np.ndarray):
                if v.dtype.kind not in "iuf":
                    numbers_only(v, name)
            elif isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise InputError(f"{name} must hold real numbers only, got {type(v).__name__} {v!r:.40}; "
                                 "give the numbers themselves.")


def as_float_array(
    value: Any,
    name: str,
    *,
    ndim: int | None = None,
    allow_empty: bool = False,
    finite: bool = True,
) -> np.ndarray:
    """``value`` as a float64 array, rejecting non-numbers (text, booleans, None: see
    :func:`numbers_only`), NaN/inf, wrong ndim and emptiness.

    Parameters
    ----------
    value : array_like
        The input.
    name : str
        Argument name used in error messages.
    ndim : int, optional
        Required number of dimensions.
    allow_empty : bool
        Accept a zero-size array.
    finite : bool
        Reject NaN and +-inf.
    """
    arr = numbers_only(value, name).astype(np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise InputError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}.")
    if arr.size == 0 and not allow_empty:
        raise InputError(f"{name} is empty: give at least one value.")
    if finite and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        where = tuple(int(i) for i in bad[0]) if arr.ndim else ()
        raise InputError(
            f"{name} contains NaN or infinite values (first at index {where}); "
            "remove or recompute them before computing the metric."
        )
    return arr


def as_int_array(
    value: Any, name: str, *, ndim: int | None = None, min_value: int | None = 0
) -> np.ndarray:
    """``value`` as an int64 array; floats are accepted only when integral (no NaN)."""
    if isinstance(value, Mapping):
        raise InputError(
            f"{name} must be an array of integers, got a mapping ({type(value).__name__})."
        )
    raw = numbers_only(value, name)
    if ndim is not None and raw.ndim != ndim:
        raise InputError(f"{name} must be {ndim}-dimensional, got shape {raw.shape}.")
    if raw.size == 0:
        raise InputError(f"{name} is empty: give at least one value.")
    if raw.dtype.kind == "f":
        if not np.all(np.isfinite(raw)):
            raise InputError(
                f"{name} contains NaN or infinite values; predictions must be class indices."
            )
        if not np.all(raw == np.round(raw)):
            raise InputError(
                f"{name} must hold integers, got non-integral floats such as {raw[raw != np.round(raw)][0]}."
            )
    arr = raw.astype(np.int64)
    if min_value is not None and np.any(arr < min_value):
        raise InputError(f"{name} must be >= {min_value}, got {int(arr.min())}.")
    return arr


def as_fraction_array(value: Any, name: str, *, ndim: int | None = None) -> np.ndarray:
    """A float array whose values are fractions in [0, 1] (not percent)."""
    arr = as_float_array(value, name, ndim=ndim)
    if np.any(arr < 0) or np.any(arr > 1):
        hint = (
            " They look like percentages: divide by 100."
            if np.all(arr >= 0) and np.any(arr > 1) and np.all(arr <= 100)
            else ""
        )
        raise InputError(
            f"{name} must be fractions in [0, 1], got values in [{arr.min():g}, {arr.max():g}].{hint}"
        )
    return arr


def as_bounded_array(value: Any, name: str, low: float, high: float, *, what: str,
                     ndim: int | None = None) -> np.ndarray:
    """A float array whose values lie in ``[low, high]`` (``what`` names the quantity in the
    message, e.g. "a top-5 distance")."""
    arr = as_float_array(value, name, ndim=ndim)
    if np.any(arr < low) or np.any(arr > high):
        raise InputError(f"{name} must lie in [{low:g}, {high:g}] ({what}); got values in "
                         f"[{arr.min():g}, {arr.max():g}].")
    return arr


def check_scalar(value: Any, name: str) -> float:
    """A finite Python float from a number (0-d input)."""
    arr = as_float_array(value, name)
    if arr.ndim != 0:
        raise InputError(f"{name} must be a single number, got shape {arr.shape}.")
    return float(arr)


def check_fraction(value: Any, name: str) -> float:
    """A single fraction in [0, 1]."""
    arr = as_fraction_array(value, name)
    if arr.ndim != 0:
        raise InputError(f"{name} must be a single number, got shape {arr.shape}.")
    return float(arr)


def check_alpha(alpha: Any) -> float:
    """A significance level strictly between 0 and 1."""
    a = check_scalar(alpha, "alpha")
    if not 0.0 < a < 1.0:
        raise InputError(f"alpha must be in (0, 1), e.g. 0.05 for a 95% interval; got {a}.")
    return a


def check_nonempty_mapping(value: Any, name: str) -> Mapping:
    """A non-empty mapping."""
    if not isinstance(value, Mapping):
        raise InputError(f"{name} must be a mapping (dict), got {type(value).__name__}.")
    if len(value) == 0:
        raise InputError(f"{name} is empty: give at least one entry.")
    return value


def require_keys(mapping: Mapping, keys: Collection, name: str, *, what: str = "key") -> None:
    """Raise when ``mapping`` lacks any of ``keys`` (listing a few of the missing ones)."""
    missing = [k for k in keys if k not in mapping]
    if missing:
        raise InputError(
            f"{name} has no entry for {len(missing)} {what}(s): {format_examples(missing)}. "
            f"Give a value for every {what}."
        )


def check_choice(value: Any, name: str, choices: Collection[str]) -> str:
    """``value`` if it is one of ``choices``."""
    if value not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}.")
    return value


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    if int(value) < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {value}.")
    return int(value)


def to_builtin(value: Any) -> Any:
    """Convert numpy scalars/arrays and nested containers to JSON-serialisable Python objects."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {
            str(k) if not isinstance(k, (str, int)) else k: to_builtin(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [to_builtin(v) for v in value]
    return value
