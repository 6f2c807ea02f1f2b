"""Small file helpers shared by the video modules: finding a metadata file, reading JSON (plain or
gzipped: :func:`robustlab.fsutil.read_json`), writing JSON atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import DataError
from ..fsutil import atomic_write_text


def find_file(name: str, folders: list[Path], *, what: str) -> Path:
    """First of ``folder/name`` or ``folder/name.gz`` that exists; DataError listing the tries."""
    tried = []
    for folder in folders:
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                return candidate
            tried.append(str(candidate))
    raise DataError(f"{what}: {name} not found (looked for {', '.join(tried)}). Pass the folder "
                    "that holds the benchmark's metadata files.")


#: What to do about a damaged metadata file.
FIX = "Re-download or regenerate it."


def write_json(path: str | os.PathLike, obj: object, *, indent: int | None = 1) -> Path:
    """Write ``obj`` as JSON (UTF-8) atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, sort_keys=False) + "\n")
