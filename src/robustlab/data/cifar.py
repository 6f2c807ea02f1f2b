"""The CIFAR-10 test set from its python version, without torchvision: the source of the CIFAR-10-C
and CIFAR-10-C-bar writer, and the clean data (``--clean-data``) of the benchmarks that read
their arrays.

The python version (``cifar-10-python.tar.gz``, what ``torchvision.datasets.CIFAR10`` downloads)
unpacks into ``cifar-10-batches-py/``; its ``test_batch`` holds the 10,000 test images and
labels as a pickle, read here by an unpickler that builds numpy arrays and nothing else
(:func:`robustlab.safeload.load_cifar_batch`). Sample ids are the row numbers, as for every
array sample set.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..safeload import load_cifar_batch
from .classification import CIFAR10_CLASSES, ArraySamples, limited_rows
from .limits import DEFAULT_LIMIT_ORDER

__all__ = ["SOURCE_HELP", "cifar_test_images", "find_test_batch", "read_cifar_test"]

#: What a CIFAR-10 source must be, for messages.
SOURCE_HELP = ("the CIFAR-10 python version as torchvision downloads it: a root holding cifar-10-batches-py/, "
               "that folder, or its test_batch file")


def find_test_batch(src: str | os.PathLike) -> Path:
    """The ``test_batch`` file of a CIFAR-10 root, of its ``cifar-10-batches-py`` folder, or ``src`` itself.

    >>> find_test_batch("/nowhere")
    Traceback (most recent call last):
    ...
    robustlab.errors.DataError: /nowhere does not exist; give the CIFAR-10 python version as torchvision downloads it: a root holding cifar-10-batches-py/, that folder, or its test_batch file.
    """
    base = Path(src).expanduser()
    for candidate in (base / "cifar-10-batches-py" / "test_batch", base / "test_batch", base):
        if candidate.is_file():
            return candidate.resolve()
    if not base.exists():
        raise DataError(f"{base} does not exist; give {SOURCE_HELP}.")
    raise DataError(f"{base} holds no CIFAR-10 test_batch; give {SOURCE_HELP} (download: "
                    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz, or torchvision.datasets.CIFAR10).")


@functools.lru_cache(maxsize=4)
def _cached(path: str, size: int, mtime_ns: int) -> tuple[np.ndarray, np.ndarray]:
    return load_cifar_batch(path)


def _batch(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """The batch file's (images, labels), read once per process and content stamp (a file replaced
    since is read again, never served from the cache)."""
    try:
        st = os.stat(path)
    except OSError:
        return load_cifar_batch(path)  # its own clear error
    return _cached(str(path), st.st_size, st.st_mtime_ns)


def cifar_test_images(path: str) -> np.ndarray:
    """The uint8 (N, 32, 32, 3) images of the batch file ``path``: the ``opener`` of the sample
    sets :func:`read_cifar_test` returns."""
    return _batch(path)[0]


def read_cifar_test(src: str | os.PathLike, *, classes: Sequence[str] = CIFAR10_CLASSES,
                    limit: int | None = None, limit_order: str = DEFAULT_LIMIT_ORDER) -> ArraySamples:
    """The CIFAR-10 test set (``src`` as :func:`find_test_batch` takes it) as a sample set: rows in
    the file's order; with ``limit``, the rows :func:`~robustlab.data.classification.limited_rows`
    keeps (the same rows a limited CIFAR-10-C severity takes)."""
    path = find_test_batch(src)
    images, labels = _batch(path)
    whole = ArraySamples(path, 0, len(images), labels.astype(np.int64), tuple(classes), opener=cifar_test_images)
    return limited_rows(whole, limit, limit_order)
