"""Fingerprints of the files a run measured, so stored numbers stay tied to their data.

A fingerprint is a short string ``"<mode>:<hash>"`` over a list of (name, file) pairs:

- ``stat`` (default, cheap): each name with its file's size and modification time (ns);
- ``content``: each name with a hash of its file's bytes (reads every file).

A missing file counts as such (it changes the fingerprint); a special file (a FIFO, a socket,
a device) is fingerprinted by its kind, never opened (reading a FIFO would block). The engine
stores one fingerprint
per work unit and refuses to resume or reuse a run whose files changed since.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable

from ..errors import InputError

MODES = ("stat", "content")


def files_fingerprint(files: Iterable[tuple[str, str | os.PathLike]], mode: str = "stat",
                      extra: Iterable[object] = ()) -> str:
    """Fingerprint of ``(name, path)`` pairs (see the module docstring); ``extra`` values
    (labels, ranges, settings) are hashed too."""
    if mode not in MODES:
        raise InputError(f"fingerprint mode must be one of {', '.join(MODES)}; got {mode!r}.")
    h = hashlib.blake2b(digest_size=16)
    for name, path in files:
        h.update(str(name).encode())
        h.update(b"\x1f")
        for member in _members(path):
            try:
                st = os.stat(member)
                if mode == "stat":
                    h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
                elif not stat.S_ISREG(st.st_mode):  # a FIFO, socket or device: opening it could block
                    h.update(f"<special:{stat.S_IFMT(st.st_mode)}>".encode())
                else:
                    h.update(file_digest(member).encode())
            except OSError:
                h.update(b"<missing>")
            h.update(b"\x1e")
    for value in extra:
        h.update(repr(value).encode())
        h.update(b"\x1d")
    return f"{mode}:{h.hexdigest()}"


def _members(path: str | os.PathLike) -> list[str]:
    """The file itself, or every file under a folder (e.g. a sequence's PNG frames), sorted."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return [path]
    return sorted(os.path.join(d, f) for d, _, names in os.walk(path) for f in names) or [path]


def array_fingerprint(array, extra: Iterable[object] = ()) -> str:
    """Fingerprint of in-memory pixels (their bytes; the mode is always ``content``)."""
    import numpy as np

    h = hashlib.blake2b(digest_size=16)
    arr = np.ascontiguousarray(array)
    h.update(repr((arr.dtype.str, arr.shape)).encode())
    h.update(memoryview(arr).cast("B"))
    for value in extra:
        h.update(repr(value).encode())
    return f"content:{h.hexdigest()}"


def file_digest(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """blake2b hex digest of a regular file's bytes (InputError for a special file, which is
    never opened: reading a FIFO blocks)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise InputError(f"{path} is not a regular file; its content cannot be fingerprinted.")
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
