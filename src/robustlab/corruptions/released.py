"""Readers of the released corrupted sets: ImageNet-C folders and CIFAR-10-C arrays.

- the **ImageNet-C** layout: ``<root>/<corruption>/<severity>/<wnid>/<file>`` (one image
  folder per corruption and severity);
- **CIFAR-10-C**: ``<root>/<corruption>.npy`` (N x 32 x 32 x 3 uint8, severity-major: the
  first N/5 rows are severity 1, ...) with ``<root>/labels.npy``.

Both return the sample sets of :mod:`robustlab.data.classification`. ImageNet-C-bar and
CIFAR-10-C-bar have their own layouts (:mod:`robustlab.corruptions.cbar.released`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..data.classification import (CIFAR10_CLASSES, ArraySamples, ClassMapLike, ImageFolderSamples, limited_rows,
                                   open_npy, read_image_folder)
from ..data.limits import DEFAULT_LIMIT_ORDER
from ..errors import DataError, InputError
from ..safeload import as_integer_labels, load_npy
from .checks import SEVERITIES

__all__ = ["imagenet_c_folder", "imagenet_c_settings", "read_cifar_c", "read_imagenet_c"]


def imagenet_c_settings(root: str | os.PathLike) -> dict[str, list[int]]:
    """The (corruption -> severities) folders present under an ImageNet-C root."""
    base = Path(root)
    if not base.is_dir():
        raise DataError(f"ImageNet-C folder {base} does not exist; it must hold <corruption>/<severity>/<wnid>/.")
    found: dict[str, list[int]] = {}
    for entry in sorted(os.scandir(base), key=lambda e: e.name):
        if entry.is_dir() and not entry.name.startswith("."):
            sev = sorted(int(s.name) for s in os.scandir(entry.path) if s.is_dir() and s.name.isdigit())
            if sev:
                found[entry.name] = sev
    if not found:
        raise DataError(f"{base} is not in the ImageNet-C layout <corruption>/<severity 1..5>/<wnid>/<file>: "
                        "no corruption folders with severity subfolders found.")
    return found


def imagenet_c_folder(root: str | os.PathLike, corruption: str, severity: int) -> Path:
    """``<root>/<corruption>/<severity>``, checked to exist."""
    path = Path(root) / corruption / str(int(severity))
    if not path.is_dir():
        raise DataError(f"ImageNet-C folder {path} is missing; download or extract {corruption} "
                        f"(severity {severity}) or leave it out with --corruptions/--severities.")
    return path


def read_imagenet_c(root: str | os.PathLike, corruption: str, severity: int, class_map: ClassMapLike = "auto", *,
                    classes: Sequence[str] | None = None, limit: int | None = None,
                    limit_order: str = DEFAULT_LIMIT_ORDER) -> ImageFolderSamples:
    """Read one corruption/severity of an ImageNet-C layout as an image folder."""
    return read_image_folder(imagenet_c_folder(root, corruption, severity), class_map, classes=classes, limit=limit,
                             limit_order=limit_order)


def read_cifar_c(root: str | os.PathLike, corruption: str, severity: int, *,
                 classes: Sequence[str] = CIFAR10_CLASSES, limit: int | None = None,
                 limit_order: str = DEFAULT_LIMIT_ORDER) -> ArraySamples:
    """Read severity ``severity`` of ``<root>/<corruption>.npy`` (CIFAR-10-C, severity-major).

    The array has 5 x n rows (n = 10,000 in the release) and ``labels.npy`` the same number of
    labels; rows ``(severity-1)*n .. severity*n`` are the severity's images. A ``limit`` takes
    the same images in every severity (:func:`robustlab.data.classification.limited_rows`).
    """
    base = Path(root)
    if int(severity) not in SEVERITIES:
        raise InputError(f"severity must be 1..5; got {severity}.")
    path = base / f"{corruption}.npy"
    if not path.is_file():
        present = sorted(p.stem for p in base.glob("*.npy") if p.stem != "labels") if base.is_dir() else []
        raise DataError(f"CIFAR-10-C file {path} is missing (found: {', '.join(present) or 'none'}).")
    images = open_npy(str(path))
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8 or len(images) % 5:
        raise DataError(f"{path} must be uint8 (5*n, H, W, 3), severity-major; got {images.dtype} {images.shape}.")
    label_path = base / "labels.npy"
    if not label_path.is_file():
        raise DataError(f"CIFAR-10-C labels file {label_path} is missing.")
    labels = as_integer_labels(load_npy(label_path, what="CIFAR-10-C labels file"),
                               f"CIFAR-10-C labels file {label_path}")
    if len(labels) != len(images):
        raise DataError(f"{label_path} has {len(labels)} labels but {path} has {len(images)} images.")
    n = len(images) // 5
    start = (int(severity) - 1) * n
    if labels.size and (labels.min() < 0 or labels.max() >= len(classes)):
        raise DataError(f"{label_path} has labels outside 0..{len(classes) - 1}.")
    return limited_rows(ArraySamples(path, start, start + n, labels[start:start + n], tuple(classes)), limit,
                        limit_order)
