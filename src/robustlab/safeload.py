"""Loading files that may come from elsewhere without ever running their code.

A torch checkpoint or a ``.npy`` file can hold a pickle, and unpickling can run arbitrary code.
robustlab loads checkpoints with ``torch.load(weights_only=True)`` (tensors, numbers, strings,
plain containers only) and arrays with ``allow_pickle=False``. When such a file is refused, the
libraries' own messages advise turning the protection off (``weights_only=False``,
``allow_pickle=True``); these helpers replace them with one line that names the file, says
what is wrong with it and what to do, and never gives that advice.
"""

from __future__ import annotations

import os
import pickle
import warnings
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .errors import DataError
from .fsutil import explain_os_error

__all__ = ["load_checkpoint", "load_npy"]


def load_checkpoint(path: str | os.PathLike, *, what: str = "checkpoint", map_location: Any = "cpu",
                    required_keys: Iterable[str] = (), fix: str = "re-create it") -> Any:
    """Load a torch checkpoint safely (``weights_only=True``) with a clear error on any failure.

    Parameters
    ----------
    path : path
        The ``.pt``/``.pth`` file.
    what : str
        What the file is, for messages (``"study checkpoint"``).
    map_location : str or torch.device
        Where tensors go (``"cpu"`` by default).
    required_keys : iterable of str
        Keys the loaded object (then a dict) must have.
    fix : str
        What the user should do with a bad file, ending the message (``"delete it to train
        that seed again"``).

    Returns
    -------
    object
        What was saved (usually a dict of tensors and numbers).

    Raises
    ------
    DataError
        Naming the file: missing or unreadable, empty or truncated, holding objects beyond
        plain data (a pickle that could run code: refused), or lacking ``required_keys``.
    """
    import torch

    p = Path(path)
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols of files it then refuses anyway
            warnings.simplefilter("ignore", UserWarning)
            state = torch.load(p, map_location=map_location, weights_only=True)
    except FileNotFoundError:
        raise DataError(f"{what} {p} does not exist; check the path.") from None
    except pickle.UnpicklingError:
        # torch's message advises weights_only=False: never pass that on.
        if not _looks_like_checkpoint(p):  # bytes that are no pickle nor torch zip at all
            raise DataError(f"{what} {p} is not a torch checkpoint (damaged, or a file of another kind); "
                            f"{fix}.") from None
        raise DataError(f"{what} {p} holds objects beyond tensors, numbers and plain containers (a pickle that "
                        f"could run code when loaded), so robustlab refuses to load it; {fix}.") from None
    except (EOFError, zipfile.BadZipFile):
        raise DataError(f"{what} {p} is empty or truncated; {fix}.") from None
    except OSError as exc:
        raise DataError(f"{explain_os_error(exc, p, 'read the ' + what)}") from None
    except (RuntimeError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        # e.g. "PytorchStreamReader failed reading zip archive": a cut or damaged file
        raise DataError(f"{what} {p} is truncated or corrupt (not a complete torch checkpoint); {fix}.") from None
    keys = list(required_keys)
    if keys:
        missing = [k for k in keys if not isinstance(state, dict) or k not in state]
        if missing:
            raise DataError(f"{what} {p} lacks {', '.join(map(repr, missing))}: it is not a checkpoint of this kind "
                            f"or was written by another version; {fix}.")
    return state


def _looks_like_checkpoint(path: Path) -> bool:
    """A torch zip file or a pickle (protocol 2+ starts with the PROTO opcode), judged from its
    first bytes: what torch refused in it are objects, not garbage."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return True
    return head.startswith((b"PK\x03\x04", b"\x80"))


def load_npy(path: str | os.PathLike, *, what: str = "array file", mmap_mode: str | None = None) -> np.ndarray:
    """Load a ``.npy`` array without pickles (``allow_pickle=False``), with a clear error.

    Parameters
    ----------
    path : path
        The ``.npy`` file.
    what : str
        What the file is, for messages (``"CIFAR-10-P file"``).
    mmap_mode : str, optional
        ``"r"`` to memory-map it (large arrays), as :func:`numpy.load`.

    Returns
    -------
    np.ndarray

    Raises
    ------
    DataError
        Naming the file: missing or unreadable, not a ``.npy`` array, truncated, or an array of
        Python objects (a pickle: refused, never loaded).
    """
    p = Path(path)
    try:
        return np.load(p, mmap_mode=mmap_mode, allow_pickle=False)
    except FileNotFoundError:
        raise DataError(f"{what} {p} does not exist; check the path.") from None
    except ValueError as exc:
        if not _is_npy(p):
            raise DataError(f"{what} {p} is not a .npy array file; it must be written by numpy.save.") from None
        if any(sign in str(exc) for sign in ("allow_pickle", "Object arrays", "Python objects")):
            # numpy's message advises allow_pickle=True: never pass that on.
            raise DataError(f"{what} {p} holds Python objects (a pickle that could run code when loaded), so "
                            "robustlab refuses to load it; it must be a plain numeric .npy array.") from None
        raise DataError(f"cannot read {what} {p}: it is not a complete .npy array ({exc}); re-create or "
                        "re-download it.") from None
    except OSError as exc:
        if exc.errno is not None:
            raise DataError(explain_os_error(exc, p, f"read the {what}")) from None
        raise DataError(f"cannot read {what} {p}: it is not a complete .npy array ({exc}); re-create or "
                        "re-download it.") from None
    except EOFError:
        raise DataError(f"{what} {p} is empty or truncated; re-create or re-download it.") from None


def _is_npy(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(6) == b"\x93NUMPY"
    except OSError:
        return False
