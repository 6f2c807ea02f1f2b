"""Atomic file output: nothing half-written is ever left under a final name.

Write to a temporary name in the destination folder, then ``os.replace`` it into place
(atomic on POSIX within one file system). A killed process leaves at most a ``*.tmp`` file,
which the next run ignores and overwrites.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import DataError

TMP_SUFFIX = ".tmp"


def _umask() -> int:
    mask = os.umask(0o022)  # read it (the only portable way), then put it back
    os.umask(mask)
    return mask


#: Permissions of finished files: what ``open()`` would give (mkstemp's 0600 is for secrets).
FILE_MODE = 0o666 & ~_umask()


def temporary_path(path: Path) -> Path:
    """A new empty file beside ``path`` (hidden, ending in TMP_SUFFIX) to write it under before
    renaming it to ``path``; a listing of finished outputs skips it, a later run removes it."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    os.fchmod(fd, FILE_MODE)
    os.close(fd)
    return Path(name)


def is_temporary_name(name: str) -> bool:
    """Whether a file or folder name is one :func:`temporary_path` (or a writer following its
    naming: hidden, ending in TMP_SUFFIX) gives: never a finished output, a killed run's leftover.

    >>> is_temporary_name(".fog.npy.k2j3.tmp"), is_temporary_name("fog.npy")
    (True, False)
    """
    return name.startswith(".") and name.endswith(TMP_SUFFIX)


def ensure_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` (and parents); raise a DataError saying why when that is impossible."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(explain_os_error(exc, p, "create the folder")) from exc
    if not os.access(p, os.W_OK):
        raise DataError(f"output folder {p} is not writable: choose another output folder or fix its permissions.")
    return p


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it to ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    final = Path(path)
    ensure_dir(final.parent)
    tmp = temporary_path(final)
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise DataError(explain_os_error(exc, final, "write")) from exc
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return the path."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def atomic_write_npy(path: str | os.PathLike, array: Any) -> Path:
    """Write ``array`` (any shape and dtype, stored C-contiguous) as a ``.npy`` file without
    pickles, atomically (renamed into place when complete, no fsync); return the path."""
    import numpy as np

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(array), allow_pickle=False)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically and return the path."""
    return atomic_write_bytes(path, text.encode("utf-8"))


#: errno values that mean "no room to write": a full disk, a quota, a file-size limit (RLIMIT_FSIZE).
NO_SPACE_ERRNOS = frozenset(e for e in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None)) if e is not None)
#: errno values that mean "not allowed to write here".
NO_PERMISSION_ERRNOS = frozenset((errno.EACCES, errno.EPERM, errno.EROFS))


def read_json(path: str | os.PathLike, *, fix: str = "") -> Any:
    """The JSON value in ``path`` (UTF-8; gzip-compressed when it ends in ``.gz``).

    Raises
    ------
    DataError
        Naming the file, what is wrong (missing, unreadable, not JSON: with the line and column)
        and ``fix``, what to do about it.
    """
    import gzip

    p = Path(path)
    hint = f" {fix}" if fix else ""
    check_input_file(p, "JSON file")
    try:
        raw = p.read_bytes()
        if p.suffix == ".gz":
            raw = gzip.decompress(raw)
        return json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise DataError(f"cannot read {p}: it does not exist; check the path.{hint}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).{hint}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{p} is not valid JSON (not UTF-8 text: {exc.reason} at byte {exc.start}).{hint}") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read {p}: {getattr(exc, 'strerror', None) or exc}.{hint}") from None


def read_jsonl(path: str | os.PathLike, *, what: str = "file", item: str = "one JSON object",
               data: bytes | None = None) -> Iterator[tuple[int, str, Any]]:
    """``(line number, where, value)`` of every line of a JSON Lines file that is not blank or a
    ``#`` comment; ``where`` is ``"<path>, line <n>"``, for the caller's own messages about the value.
    ``data``: the file's bytes, when the caller has read them already (e.g. to hash them).

    Raises
    ------
    DataError
        When the file cannot be read (``what`` names it: "task file", "review file") or a line is
        not valid JSON (naming the line and column; ``item``: what each line must be).
    """
    p = Path(path)
    if data is None:
        check_input_file(p, what)
    try:
        text = (p.read_bytes() if data is None else data).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read {what} {p}: {exc}.") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{p}, line {number}"
        try:
            yield number, where, json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not valid JSON ({exc.msg}, column {exc.colno}); each line must be "
                            f"{item}.") from exc


def explain_os_error(exc: OSError, path: str | os.PathLike | None = None, action: str = "use") -> str:
    """One line saying why ``action`` on ``path`` failed with ``exc`` and what to do about it.

    Parameters
    ----------
    exc : OSError
        The error (its ``errno`` decides the advice; pyarrow's errors without an errno are
        recognised by their text).
    path : path, optional
        The file or folder concerned (default: the error's own ``filename``).
    action : str
        What was being done, e.g. ``"write"`` or ``"create the folder"``.

    Returns
    -------
    str
        E.g. ``"cannot write /out/x.jpg: the disk is full (or a file size limit was reached).
        Free some space or choose another output folder."``
    """
    where = path if path is not None else (exc.filename or "a file")
    text = str(exc).lower()
    short_write = "requested and" in text and "written" in text  # numpy's tofile/save on a full disk
    if exc.errno in NO_SPACE_ERRNOS or "no space left" in text or "file too large" in text or short_write:
        return (f"cannot {action} {where}: the disk is full (or a disk quota or file size limit was reached). "
                "Free some space or choose another output folder.")
    if exc.errno in NO_PERMISSION_ERRNOS:
        if action.startswith("read"):
            return f"cannot {action} {where}: permission denied. Fix its permissions or remove it from the dataset."
        return (f"cannot {action} {where}: permission denied or read-only file system. "
                "Choose a writable location or fix its permissions.")
    if exc.errno == errno.ELOOP:
        return f"cannot {action} {where}: too many levels of symbolic links (a symlink loop); remove the loop."
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        return f"cannot {action} {where}: a file is in the way where a folder is needed; choose another path."
    if exc.errno == errno.ENOENT:
        return f"cannot {action} {where}: no such file or folder; check the path."
    return f"cannot {action} {where}: {exc.strerror or exc}."


def special_file_kind(mode: int) -> str | None:
    """What a non-regular file is, from its ``st_mode`` (``"FIFO (named pipe)"``, ``"socket"``,
    a device, ``"folder"``), or None for a regular file."""
    import stat

    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "folder")):
        if test(mode):
            return name
    return "special file"


def open_regular(path: str | os.PathLike, what: str = "file"):
    """Open ``path`` for binary reading, refusing anything but a regular file, with one ``open``
    and one ``fstat`` (a reader's hot path: no separate ``stat``). The file is opened
    non-blocking, so a FIFO without a writer is refused at once instead of blocking the reader;
    the messages are :func:`require_regular_file`'s. Returns a binary file object."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise DataError(f"{what} {path} does not exist (a broken link, or removed while robustlab ran); check "
                        "the data folder.") from None
    except IsADirectoryError:
        fd = None
    if fd is None:
        raise DataError(f"{path} is a folder, not a regular file ({what}s must be regular files). Remove it from "
                        "the data folder.")
    kind = special_file_kind(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise DataError(f"{path} is a {kind}, not a regular file ({what}s must be regular files: reading a "
                        f"{kind} could block or never end). Remove it from the data folder.")
    return os.fdopen(fd, "rb")
def check_input_file(path: str | os.PathLike, what: str = "file", *, max_bytes: int | None = None) -> Path:
    """``path`` when it is a regular file a command may read whole (following links), before it
    is opened; else a :class:`DataError` that says what it is instead. A FIFO given on the command
    line would block the reader forever and ``/dev/zero`` would be read until memory runs out, so
    both are refused unopened, by kind ("is a FIFO (named pipe), not a regular file"), never called
    missing. ``max_bytes``: the largest file accepted (None: any)."""
    p = Path(path).expanduser()
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise DataError(f"{what} {p} does not exist; check the path.") from None
    except OSError as exc:
        raise DataError(explain_os_error(exc, p, f"read the {what}")) from None
    kind = special_file_kind(st.st_mode)
    if kind is not None:
        raise DataError(f"{what} {p} is a {kind}, not a regular file (reading a {kind} could block or never end); "
                        "give a regular file.")
    if max_bytes is not None and st.st_size > max_bytes:
        raise DataError(f"{what} {p} is {st.st_size:,} bytes, more than the {max_bytes:,} such a file can be; "
                        "check that this is the right file.")
    return p


def not_a_folder(path: str | os.PathLike, what: str = "folder", fix: str = "check the path") -> DataError:
    """The error for ``path`` given where a folder is needed, saying what it is instead: missing,
    a file, or a FIFO, socket or device (never "missing" for those), with ``fix``."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return DataError(f"{what} {p} does not exist; {fix}.")
    except OSError as exc:
        return DataError(explain_os_error(exc, p, f"open the {what}"))
    kind = special_file_kind(st.st_mode)
    return DataError(f"{what} {p} is a {kind or 'file'}, not a folder; {fix}.")


def require_regular_file(path: str | os.PathLike, what: str = "file") -> None:
    """Raise :class:`DataError` unless ``path`` is a regular file (following links), before it is
    opened: a FIFO in a data folder would block a reader forever, a device would be read without
    end. The message names the kind of file and the fix (or that it does not exist: a broken
    link, a file removed meanwhile)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DataError(f"{what} {path} does not exist (a broken link, or removed while robustlab ran); check "
                        "the data folder.") from None
    kind = special_file_kind(mode)
    if kind is not None:
        raise DataError(f"{path} is a {kind}, not a regular file ({what}s must be regular files: reading a "
                        f"{kind} could block or never end). Remove it from the data folder.")
