"""Cheap checks that a file is whole, by its format's markers, and ``.npy`` headers.

A half-extracted archive leaves its last file truncated; a truncated JPEG lacks its end marker
(``FF D9``), a truncated PNG its ``IEND`` chunk, an ``.npy`` file the bytes its header promises.
:func:`quick_problem` reads a file's first and last bytes only (two reads), so ``robustlab data
check`` can look at millions of files; ``full`` decoding is :func:`robustlab.data.images.read_image`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

TAIL = 1024


def _ends(path: Path, head: int = 16) -> tuple[bytes, bytes, int]:
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        first = fh.read(head)
        fh.seek(max(0, size - TAIL))
        return first, fh.read(TAIL), size


def quick_problem(path: Path) -> str | None:
    """Why a file is not whole (by its markers), or None. Reads at most ~1 KiB."""
    try:
        first, last, size = _ends(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if size == 0:
        return "is empty"
    suffix = path.suffix.lower()
    if suffix in (".jpg", ".jpeg"):
        if not first.startswith(b"\xff\xd8"):
            return "is not a JPEG (no start marker)"
        if b"\xff\xd9" not in last:
            return "is truncated (no JPEG end marker)"
    elif suffix == ".png":
        if not first.startswith(b"\x89PNG\r\n\x1a\n"):
            return "is not a PNG (no signature)"
        if b"IEND" not in last:
            return "is truncated (no PNG IEND chunk)"
    elif suffix == ".mp4":
        if b"ftyp" not in first[:16]:
            return "is not an MP4 file (no ftyp box)"
    return None


def full_problem(path: Path) -> str | None:
    """Why an image cannot be decoded (decoding it whole), or None; other files get :func:`quick_problem`."""
    from ...errors import DataError
    from ..images import is_image_file, read_image

    if not is_image_file(path):
        return quick_problem(path)
    try:
        read_image(path)
    except DataError as exc:
        return f"does not decode ({exc})"
    except Exception as exc:  # noqa: BLE001 - any decoder failure is the finding
        return f"does not decode ({type(exc).__name__}: {exc})"
    return None


def npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype, int]:
    """``(shape, dtype, data offset)`` of an ``.npy`` file, read from its header only.

    Raises
    ------
    ValueError
        The file is not an ``.npy`` file.
    """
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = reader(fh)
        return tuple(shape), np.dtype(dtype), fh.tell()


def npy_problem(path: Path, shape: tuple[int | None, ...] | None) -> str | None:
    """Why an ``.npy`` file does not hold the expected array (``shape``: None entries match any
    length; None: any shape), or None."""
    try:
        found, dtype, offset = npy_header(path)
    except (OSError, ValueError) as exc:
        return f"is not a readable .npy file ({exc})"
    size = path.stat().st_size
    need = offset + int(np.prod(found, dtype=np.int64)) * dtype.itemsize
    if size < need:
        return f"is truncated ({size:,} of {need:,} bytes for {dtype} {found})"
    if shape is not None and (len(found) != len(shape) or any(w is not None and w != f for w, f in zip(shape, found))):
        want = "(" + ", ".join("N" if w is None else str(w) for w in shape) + ")"
        return f"holds {dtype} {found}, not the release's {want}"
    if path.name != "labels.npy" and dtype != np.uint8:
        return f"holds {dtype}, not uint8 images"
    return None
