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

__all__ = ["as_integer_labels", "load_checkpoint", "load_cifar_batch", "load_npy"]


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


#: The only globals a CIFAR batch file may name: numpy's array reconstruction (numpy 1 and 2
#: spellings), and ``_codecs.encode``, which a protocol-2 pickle written by Python 3 uses for bytes.
_CIFAR_GLOBALS = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                  ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}


class _Refused(pickle.UnpicklingError):
    """A pickle named a class or function beyond numpy arrays (refused, never called)."""


class _ArraysOnly(pickle.Unpickler):
    """An unpickler that builds plain containers and numpy arrays, and refuses every other class
    or function a pickle names (which is how a pickle runs code)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _CIFAR_GLOBALS:
            with warnings.catch_warnings():  # numpy 2 warns about the numpy.core spelling of old files
                warnings.simplefilter("ignore", DeprecationWarning)
                return super().find_class(module, name)
        raise _Refused(f"the pickle names {module}.{name}")


def load_cifar_batch(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a batch file of CIFAR-10's python version (``cifar-10-batches-py/test_batch``) without
    running code: the pickle may hold plain containers and numpy arrays only.

    Returns
    -------
    (images, labels)
        uint8 (N, 32, 32, 3) and int64 (N,), in the file's order.

    Raises
    ------
    DataError
        Naming the file: missing or unreadable, not a pickle, a pickle naming anything beyond
        numpy arrays (refused, never run), or lacking ``data``/``labels`` of matching sizes.
    """
    p = Path(path)
    what = "CIFAR-10 batch file"
    try:
        with open(p, "rb") as fh:
            batch = _ArraysOnly(fh, encoding="bytes").load()
    except FileNotFoundError:
        raise DataError(f"{what} {p} does not exist; give the CIFAR-10 root (holding cifar-10-batches-py/, as "
                        "torchvision downloads it) or that folder itself.") from None
    except OSError as exc:
        raise DataError(explain_os_error(exc, p, f"read the {what}")) from None
    except _Refused as exc:
        raise DataError(f"{what} {p} holds objects beyond numpy arrays and plain containers ({exc}: a pickle "
                        "that could run code when loaded), so robustlab refuses to load it; download the "
                        "official CIFAR-10 python version again.") from None
    except pickle.UnpicklingError as exc:
        raise DataError(f"{what} {p} is not a CIFAR-10 batch (not a complete pickle: {exc}); download the official "
                        "CIFAR-10 python version again.") from None
    except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
        raise DataError(f"{what} {p} is truncated or damaged ({type(exc).__name__}: {exc}); download the official "
                        "CIFAR-10 python version again.") from None
    if not isinstance(batch, dict):
        raise DataError(f"{what} {p} holds a {type(batch).__name__}, not the dict of a CIFAR-10 batch.")
    data, labels = batch.get(b"data", batch.get("data")), batch.get(b"labels", batch.get("labels"))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DataError(f"{what} {p} has no uint8 (N, 3072) 'data' array (CIFAR-10's rows of 32x32 RGB planes).")
    labels = as_integer_labels(labels if labels is not None else [], f"the 'labels' of {what} {p}")
    if len(labels) != len(data):
        raise DataError(f"{what} {p} has {len(data)} images but {len(labels)} labels.")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DataError(f"{what} {p} has labels outside 0..9: it is not a CIFAR-10 batch.")
    return np.ascontiguousarray(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)), labels


def as_integer_labels(values: Any, what: str) -> np.ndarray:
    """Class labels as int64 (N,), refusing what is not a list of whole numbers instead of
    truncating it (``2.7`` is not class 2).

    Whole-valued floats (``2.0``) are accepted; fractions, NaN, booleans, text, a dict and other
    objects are a DataError naming ``what``.

    >>> as_integer_labels([0, 2.0, 9], "labels").tolist()
    [0, 2, 9]
    >>> as_integer_labels([0, 2.7], "labels")
    Traceback (most recent call last):
    ...
    robustlab.errors.DataError: labels must be whole class indices; 1 of 2 are not (e.g. 2.7 at position 1): they would be truncated to other classes. Write the labels as integers.
    """
    if isinstance(values, (dict, str, bytes)) or not isinstance(values, (list, tuple, np.ndarray)):
        raise DataError(f"{what} must be a list or array of class indices (integers); it is a "
                        f"{type(values).__name__}.")
    try:
        array = np.asarray(values).reshape(-1)
    except (ValueError, TypeError):
        array = np.asarray([None])
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind != "f" or array.dtype == np.bool_:
        kinds = sorted({type(v).__name__ for v in array.tolist()}) if array.size else [str(array.dtype)]
        raise DataError(f"{what} must be class indices (integers); they hold {', '.join(kinds)} values.")
    bad = np.flatnonzero(~np.isfinite(array) | (array != np.round(array)))
    if bad.size:
        raise DataError(f"{what} must be whole class indices; {bad.size} of {array.size} are not (e.g. "
                        f"{array[bad[0]].item()!r} at position {int(bad[0])}): they would be truncated to other classes. "
                        "Write the labels as integers.")
    return array.astype(np.int64)
