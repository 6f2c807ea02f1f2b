"""Per-sample predictions as Parquet files: numpy columns in, the same numpy columns out.

One work unit is one Parquet file (zstd). A column is a numpy array whose first axis is the
sample axis: 1-D arrays become plain Parquet columns; N-D arrays (top-5 indices ``(N, 5)``,
logits ``(N, C)``) become fixed-size-list columns of width ``prod(shape[1:])``. The exact
numpy dtype and trailing shape of every column are kept in the file's schema metadata, so
:func:`decode_columns` returns arrays with the same dtypes (``int64``, ``float32``, ``bool``,
``<U12``...) and shapes as were written.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import DataError, InputError
from ..fsutil import atomic_path, atomic_write_bytes

METADATA_KEY = b"robustlab"
FORMAT_VERSION = 1
COMPRESSION = "zstd"
#: numpy dtype kinds a column may have: bool, signed/unsigned int, float, str, bytes, object (str).
_SUPPORTED_KINDS = "biufUSO"
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def unit_file_name(unit: str) -> str:
    """A safe, unique file name for a unit name such as ``"fog/3/shard-0007"``.

    The readable part keeps letters, digits, ``.``, ``_`` and ``-`` (others become ``_``,
    truncated to 80 characters); a hash of the exact name keeps distinct names distinct, also
    on case-insensitive file systems.

    Examples
    --------
    >>> unit_file_name("fog/3/shard-0007")
    'fog_3_shard-0007-0df44e097c.parquet'
    """
    readable = _UNSAFE_CHARS.sub("_", unit).strip("._")[:80] or "unit"
    digest = hashlib.sha256(unit.encode("utf-8")).hexdigest()[:10]
    return f"{readable}-{digest}.parquet"


def check_columns(columns: Mapping[str, np.ndarray]) -> int:
    """Validate a unit's columns and return the number of rows (samples).

    Raises
    ------
    InputError
        When there are no columns, a column is not an array with a sample axis, the lengths
        differ, or a dtype cannot be stored.
    """
    if not isinstance(columns, Mapping) or not columns:
        raise InputError(
            "a unit needs at least one column: pass a dict like {'sample_id': ids, 'label': labels}."
        )
    n_rows = None
    for name, array in columns.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"column names must be non-empty strings, got {name!r}.")
        if not isinstance(array, np.ndarray):
            raise InputError(
                f"column {name!r} is a {type(array).__name__}, not a numpy array: wrap it with np.asarray."
            )
        if array.ndim == 0:
            raise InputError(
                f"column {name!r} is a scalar: columns need a sample axis (shape (N,) or (N, K))."
            )
        if array.dtype.kind not in _SUPPORTED_KINDS:
            raise InputError(
                f"column {name!r} has dtype {array.dtype}, which the store cannot keep: use bool, "
                "integer, float or string columns."
            )
        if array.dtype.kind == "O" and array.ndim != 1:
            raise InputError(
                f"column {name!r}: object (string) columns must be 1-D, got shape {array.shape}."
            )
        if 0 in array.shape[1:]:
            raise InputError(
                f"column {name!r} has shape {array.shape}: per-sample values must not be empty."
            )
        if n_rows is None:
            n_rows = len(array)
        elif len(array) != n_rows:
            lengths = {k: len(v) for k, v in columns.items()}
            raise InputError(
                f"columns have different lengths {lengths}: every column needs one row per sample."
            )
    return int(n_rows)


def encode_columns(columns: Mapping[str, np.ndarray], meta: Mapping | None = None) -> pa.Table:
    """Turn numpy columns into an Arrow table whose metadata records dtypes and shapes.

    Parameters
    ----------
    columns : mapping of str to np.ndarray
        Equal-length arrays, sample axis first.
    meta : mapping, optional
        JSON-serialisable extra information kept in the file (e.g. timing, model version).
    """
    check_columns(columns)
    arrays, layout = [], {}
    for name, array in columns.items():
        arrays.append(_to_arrow(name, array))
        layout[name] = {"dtype": array.dtype.str, "shape": list(array.shape[1:])}
    metadata = {"format": FORMAT_VERSION, "columns": layout, "meta": dict(meta or {})}
    schema = pa.schema([pa.field(name, arr.type) for name, arr in zip(columns, arrays, strict=True)])
    schema = schema.with_metadata({METADATA_KEY: json.dumps(metadata).encode("utf-8")})
    return pa.Table.from_arrays(arrays, schema=schema)


def decode_columns(table: pa.Table) -> dict[str, np.ndarray]:
    """Inverse of :func:`encode_columns`: the exact numpy arrays that were written."""
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    layout = json.loads(raw)["columns"] if raw else {}
    result = {}
    for name in table.column_names:
        info = layout.get(name)
        column = table.column(name).combine_chunks()
        if info is None:  # a file written by another tool: best effort
            result[name] = column.to_numpy(zero_copy_only=False)
            continue
        result[name] = _from_arrow(
            column, np.dtype(info["dtype"]), tuple(info["shape"]), len(table)
        )
    return result


def write_unit_file(
    path: Path,
    columns: Mapping[str, np.ndarray],
    meta: Mapping | None = None,
    *,
    fsync: bool = False,
) -> int:
    """Write one unit's columns to ``path`` atomically (temporary name, then rename).

    Parameters
    ----------
    fsync : bool
        Also flush the file to the disk before the rename (survives power loss, not just a
        killed process; costs a few milliseconds per file).

    Returns
    -------
    int
        Number of rows written.
    """
    table = encode_columns(columns, meta)
    # Dictionary encoding pays for repetitive 1-D columns (labels) but makes wide columns
    # (logits) five times slower to write for no gain.
    plain_columns = [f.name for f in table.schema if not pa.types.is_fixed_size_list(f.type)]
    options = {"compression": COMPRESSION, "use_dictionary": plain_columns}
    if fsync:
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, **options)
        atomic_write_bytes(path, sink.getvalue().to_pybytes())
    else:
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, **options)
    return table.num_rows


class PredictionsChangedError(DataError):
    """A unit's predictions file is not the file the catalog recorded (its content hash differs)."""


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_unit_file(path: Path, sha256: str | None = None) -> dict[str, np.ndarray]:
    """Read the columns of one unit file written by :func:`write_unit_file`.

    Parameters
    ----------
    sha256 : str, optional
        The SHA-256 (hex) the file had when it was written: the file is checked against it
        before it is decoded.

    Raises
    ------
    DataError
        When the file is missing or not a readable Parquet file;
        :class:`PredictionsChangedError` when its bytes are not the ones recorded.
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"prediction file {path} is missing.") from exc
    except OSError as exc:
        raise DataError(f"prediction file {path} is unreadable ({exc}): delete it and re-run its unit.") from exc
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise PredictionsChangedError(
            f"prediction file {path} is not the file that was stored (its content hash differs from the one the "
            "catalog recorded): it was replaced, swapped with another unit's file or modified outside robustlab.")
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        raise DataError(
            f"prediction file {path} is unreadable ({exc}): delete it and re-run its unit."
        ) from exc
    return decode_columns(table)


def read_unit_meta(path: Path) -> dict:
    """The ``meta`` dictionary stored in a unit file (without reading its columns)."""
    raw = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
    return json.loads(raw).get("meta", {}) if raw else {}


def _to_arrow(name: str, array: np.ndarray) -> pa.Array:
    if array.dtype.kind in "US":
        # Through Python objects: pyarrow's direct conversion of fixed-width numpy strings stops
        # at the first NUL character.
        flat = pa.array(
            array.reshape(-1).tolist(), type=pa.string() if array.dtype.kind == "U" else pa.binary()
        )
    elif array.dtype.kind == "O":
        bad = next((v for v in array if v is not None and not isinstance(v, str)), None)
        if bad is not None:
            raise InputError(
                f"column {name!r} is an object array holding {type(bad).__name__}: only strings can be stored."
            )
        return pa.array(array, type=pa.string())
    else:
        flat = pa.array(
            np.ascontiguousarray(array.reshape(-1)).astype(
                array.dtype.newbyteorder("="), copy=False
            )
        )
    if array.ndim == 1:
        return flat
    return pa.FixedSizeListArray.from_arrays(flat, int(np.prod(array.shape[1:])))


def _from_arrow(
    column: pa.Array, dtype: np.dtype, tail: tuple[int, ...], n_rows: int
) -> np.ndarray:
    if tail:
        return _plain_to_numpy(column.flatten(), dtype).reshape((n_rows, *tail))
    return _plain_to_numpy(column, dtype)


def _plain_to_numpy(column: pa.Array, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "O":
        values = np.empty(len(column), dtype=object)
        values[:] = column.to_pylist()
        return values
    if dtype.kind in "US":
        return np.array(column.to_pylist(), dtype=dtype).reshape(-1)
    return column.to_numpy(zero_copy_only=False).astype(dtype, copy=False)
