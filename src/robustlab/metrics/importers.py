"""Importers for detection robustness results users already have.

:func:`read_mmdet_robustness_results` opens the results pickle written by mmdetection's
``tools/analysis_tools/test_robustness.py`` (and kept as raw data by the Robust Detection
Benchmark) through a *restricted* unpickler: a pickle can run arbitrary code when loaded with
``pickle.load``, so only the globals these files need are allowed -- ``collections.OrderedDict``,
``set``/``frozenset``, numeric numpy dtypes, numpy scalars and numeric numpy arrays, and
``_codecs.encode`` with the latin-1 codec (how protocol-2 pickles store bytes). Any other
global is refused with an :class:`~robustlab.errors.InputError` naming it; nothing is called.

:func:`read_rmse_csv` reads the per (corruption, severity) RMSE table of the benchmark's
``data-analysis/calc_rmse.py`` (``corruption,severity,RMSE``).
"""

from __future__ import annotations

import collections
import csv
import io
import os
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, InputError
from ..fsutil import check_input_file

__all__ = ["RestrictedUnpickler", "normalise_robustness_results", "read_mmdet_robustness_results",
           "read_rmse_csv", "restricted_loads"]

#: dtype kinds a results pickle may build: bool, signed/unsigned int, float, complex.
_NUMERIC_KINDS = "biufc"


def _safe_dtype(spec: Any, align: bool = False, copy: bool = False) -> np.dtype:
    dtype = np.dtype(spec)
    if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None:
        raise InputError(f"the pickle asks for numpy dtype {spec!r}; only numeric dtypes are allowed.")
    return np.dtype(spec, bool(align), bool(copy))


def _numpy_scalar_function() -> Any:
    try:
        from numpy._core.multiarray import scalar  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core.multiarray import scalar
    return scalar


def _numpy_reconstruct_function() -> Any:
    try:
        from numpy._core.multiarray import _reconstruct  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core.multiarray import _reconstruct
    return _reconstruct


def _safe_scalar(dtype: Any, *args: Any) -> Any:
    if not isinstance(dtype, np.dtype) or dtype.kind not in _NUMERIC_KINDS:
        raise InputError(f"the pickle asks for a numpy scalar of dtype {dtype!r}; only numeric "
                         "scalars are allowed.")
    if args and not isinstance(args[0], (bytes, bytearray)):
        raise InputError("the pickle builds a numpy scalar from a non-bytes payload; refused.")
    return _numpy_scalar_function()(dtype, *args)


def _safe_reconstruct(subtype: Any, shape: Any, dtype_code: Any) -> Any:
    if subtype is not np.ndarray:
        raise InputError(f"the pickle asks to build an array of type {subtype!r}; only plain "
                         "numpy.ndarray is allowed.")
    return _numpy_reconstruct_function()(np.ndarray, shape, dtype_code)


def _safe_frombuffer(buffer: Any, dtype: Any, shape: Any, order: Any) -> np.ndarray:
    if not isinstance(dtype, np.dtype) or dtype.kind not in _NUMERIC_KINDS:
        raise InputError(f"the pickle asks for an array of dtype {dtype!r}; only numeric arrays are allowed.")
    if not isinstance(buffer, (bytes, bytearray, pickle.PickleBuffer)):
        raise InputError("the pickle builds an array from a non-bytes payload; refused.")
    flat = np.frombuffer(buffer, dtype=dtype)
    return flat.reshape(shape, order=order).copy()


def _safe_encode(text: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    if not isinstance(text, str) or encoding.replace("-", "").lower() != "latin1" or errors != "strict":
        raise InputError(f"the pickle calls _codecs.encode with encoding {encoding!r}; only "
                         "latin-1 (how protocol-2 pickles store bytes) is allowed.")
    return text.encode("latin-1")


_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("__builtin__", "set"): set,
    ("__builtin__", "frozenset"): frozenset,
    ("numpy", "dtype"): _safe_dtype,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy.core.multiarray", "scalar"): _safe_scalar,
    ("numpy._core.multiarray", "scalar"): _safe_scalar,
    ("numpy.core.multiarray", "_reconstruct"): _safe_reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _safe_reconstruct,
    ("numpy.core.numeric", "_frombuffer"): _safe_frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _safe_frombuffer,
    ("_codecs", "encode"): _safe_encode,
}


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that builds only plain data (see module docstring); all else is refused."""

    def __init__(self, file: Any, *, source: str = "pickle") -> None:
        super().__init__(file)
        self._source = source

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise InputError(
                f"{self._source}: refused to unpickle global '{module}.{name}'. A results pickle "
                "only needs containers, OrderedDict and numpy numbers; this file may be "
                "malicious or from another tool. Do not open it with pickle.load."
            ) from None

    def persistent_load(self, pid: Any) -> Any:
        raise InputError(f"{self._source}: refused persistent id {pid!r} in pickle.")


def restricted_loads(data: bytes, *, source: str = "pickle") -> Any:
    """Unpickle ``data`` with :class:`RestrictedUnpickler` (InputError on any other global)."""
    try:
        return RestrictedUnpickler(io.BytesIO(data), source=source).load()
    except InputError:
        raise
    except Exception as exc:  # truncated or corrupt pickles
        raise DataError(f"{source}: not a readable pickle ({type(exc).__name__}: {exc}).") from None


def _as_number(value: Any, where: str) -> float:
    """A performance number of the file: a fraction in [0, 1], or COCO's -1 (no ground truth)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DataError(f"{where}: expected a number, got {type(value).__name__}.")
    number = float(value)
    if not (0.0 <= number <= 1.0 or number == -1.0):  # also refuses NaN
        hint = " It looks like a percentage: mmdetection writes fractions." if 1 < number <= 100 else ""
        raise DataError(f"{where}: {number!r} is not a fraction in [0, 1] (nor COCO's -1 for a metric without "
                        f"ground truth).{hint}")
    return number


#: Severities of an mmdetection results file: 0 is clean, 1..5 the corruption severities (the
#: store's severities, robustlab.corruptions.parse_severities, are 1..5).
MMDET_SEVERITIES = range(0, 6)


def _severity(value: Any, where: str) -> int:
    """A severity key as the store takes it: an integer in 0..5, or its digits as text (a JSON
    file's keys); no bool, no fraction, nothing out of range."""
    text = value.strip() if isinstance(value, str) else None
    if text is not None and text.isdigit():
        value = int(text)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or int(value) not in MMDET_SEVERITIES:
        raise DataError(f"{where} has severity key {value!r}; severities are the integers 0..5 (0 = clean).")
    return int(value)


def _normalise_cell(cell: Any, task: str, where: str) -> dict[str, Any]:
    # VOC: a list with one {'ap': float, ...} per class -> per-class AP50 array.
    if isinstance(cell, (list, tuple)):
        if not cell or not all(isinstance(c, Mapping) and "ap" in c for c in cell):
            raise DataError(f"{where}: a list of per-class results needs an 'ap' entry in every item.")
        return {"AP50": np.array([_as_number(c["ap"], f"{where} class {i}")
                                  for i, c in enumerate(cell)], dtype=np.float64)}
    if not isinstance(cell, Mapping):
        raise DataError(f"{where}: expected a mapping of metrics or a list of per-class results, "
                        f"got {type(cell).__name__}.")
    # COCO: {'bbox': {'AP': ..}, 'segm': {...}} -> the chosen task; or already flat metrics.
    if task in cell and isinstance(cell[task], Mapping):
        cell = cell[task]
    elif any(isinstance(v, Mapping) for v in cell.values()):
        raise DataError(f"{where}: no {task!r} results (tasks here: "
                        f"{sorted(k for k, v in cell.items() if isinstance(v, Mapping))}).")
    return {str(k): _as_number(v, f"{where} metric {k!r}") for k, v in cell.items()}


def normalise_robustness_results(raw: Any, *, task: str = "bbox", source: str = "results"
                                 ) -> dict[str, dict[int, dict[str, Any]]]:
    """``{corruption: {severity: {metric: value}}}`` from mmdetection's nesting.

    COCO-style cells (``{'bbox': {'AP': .., 'AP50': .., ...}}``) give the 12 COCO numbers
    (floats, fractions) of ``task``; VOC-style cells (a list of ``{'ap': ..}`` per class) give
    ``{'AP50': float64 array of per-class AP}``. Severity 0 is clean. Severity keys become ints.
    """
    if not isinstance(raw, Mapping) or not raw:
        raise DataError(f"{source}: expected a non-empty mapping {{corruption: {{severity: metrics}}}}, "
                        f"got {type(raw).__name__}.")
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for corruption, by_severity in raw.items():
        if not isinstance(by_severity, Mapping) or not by_severity:
            raise DataError(f"{source}: entry {corruption!r} is not a non-empty mapping of severities.")
        cells: dict[int, dict[str, Any]] = {}
        for severity, cell in by_severity.items():
            sev = _severity(severity, f"{source}: {corruption!r}")
            if sev in cells:
                raise DataError(f"{source}: {corruption!r} has two entries for severity {sev} (keys written "
                                "differently, e.g. 1 and '1'); keep one.")
            cells[sev] = _normalise_cell(cell, task, f"{source} [{corruption!r}][{sev}]")
        out[str(corruption)] = dict(sorted(cells.items()))
    return out


#: The largest results pickle read (mmdetection's are a few KB: nested dicts of numbers).
MAX_RESULTS_BYTES = 64 * 2**20


def read_mmdet_robustness_results(path: str | os.PathLike, *, task: str = "bbox"
                                  ) -> dict[str, dict[int, dict[str, Any]]]:
    """Read an mmdetection robustness results pickle safely and normalise it.

    Parameters
    ----------
    path : the ``*_results.pkl`` written by ``test_robustness.py --out``.
    task : ``"bbox"`` (default) or ``"segm"`` for COCO-style files.

    Returns
    -------
    ``{corruption: {severity: {metric: value}}}`` (see :func:`normalise_robustness_results`);
    feed it to :func:`robustlab.metrics.performance_under_corruption`.

    Raises
    ------
    InputError : the pickle asks for any global beyond plain data (e.g. ``os.system``).
    DataError : the file is missing, truncated or not in the expected nesting.
    """
    path = check_input_file(path, "results pickle", max_bytes=MAX_RESULTS_BYTES)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read results pickle {path}: {exc.strerror or exc}.") from None
    raw = restricted_loads(data, source=str(path))
    return normalise_robustness_results(raw, task=task, source=str(path))


def read_rmse_csv(path: str | os.PathLike) -> dict[str, dict[int, float]]:
    """``{corruption: {severity: RMSE}}`` from a ``corruption,severity,RMSE`` CSV file."""
    path = check_input_file(path, "RMSE table")
    try:
        text = path.read_text()
    except OSError as exc:
        raise DataError(f"cannot read RMSE table {path}: {exc.strerror or exc}.") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = {"corruption", "severity", "RMSE"} - set(reader.fieldnames or ())
    if missing:
        raise DataError(f"{path}: missing columns {sorted(missing)}; expected corruption,severity,RMSE.")
    out: dict[str, dict[int, float]] = {}
    for line, row in enumerate(reader, start=2):
        try:
            out.setdefault(row["corruption"], {})[int(row["severity"])] = float(row["RMSE"])
        except (TypeError, ValueError):
            raise DataError(f"{path}, line {line}: severity must be an integer and RMSE a number, "
                            f"got {row['severity']!r}, {row['RMSE']!r}.") from None
    return out
