"""Readers of the released ImageNet-C-bar and CIFAR-10-C-bar layouts.

- **ImageNet-C-bar** (``make_imagenet_c_bar.py``): ``<root>/<corruption>/<severity>/<wnid>/<file>``
  where ``<severity>`` is the severity *parameter* formatted ``"{:.2f}"`` (``caustic_refraction/2.35``,
  ``sparkles/10.00``; :data:`.tables.IMAGENET_C_BAR`); the preprocessed download
  (``imagenet_c_bar.tar.gz``) numbers them ``1``..``5`` instead, like ImageNet-C. Both are read.
  The script writes under ``<out>/ImageNet-C-Bar/``: a root holding only that folder is entered.
- **CIFAR-10-C-bar** (``make_cifar10_c_bar.py``): ``<root>/<corruption>.npy`` (5 x 10,000 images,
  severity-major, uint8 32x32x3) and ``<root>/labels.npy``: the CIFAR-10-C layout
  (:func:`robustlab.corruptions.released.read_cifar_c`); also entered from ``<out>/CIFAR-10-C-Bar/``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...data.classification import ClassMapLike, ImageFolderSamples, read_image_folder
from ...errors import DataError
from .tables import SETS, severity_folder, severity_of_folder

__all__ = ["IMAGENET_LAYOUT", "CIFAR_LAYOUT", "CBarLayout", "discover_cbar", "read_imagenet_c_bar"]

IMAGENET_LAYOUT = ("<root>/<corruption>/<severity parameter, e.g. 2.35, or 1..5>/<wnid>/<image> (ImageNet-C-bar: "
                   + ", ".join(SETS["imagenet-c-bar"]) + ")")
CIFAR_LAYOUT = ("<root>/<corruption>.npy (50,000 x 32 x 32 x 3, severity-major) + <root>/labels.npy (CIFAR-10-C-bar: "
                + ", ".join(SETS["cifar10-c-bar"]) + ")")
#: Folder names the reference's scripts write their set into.
SCRIPT_FOLDERS = {"ImageNet-C-Bar": "imagenet-c-bar", "CIFAR-10-C-Bar": "cifar10-c-bar"}


@dataclass(frozen=True)
class CBarLayout:
    """A released -bar set found on disk.

    Attributes
    ----------
    root : Path
        The folder holding the corruption folders or arrays.
    set_name : str
        ``imagenet-c-bar`` or ``cifar10-c-bar``.
    kind : str
        ``folders`` (ImageNet-C-bar) or ``cifar`` (arrays).
    folders : dict
        ``{corruption: {severity 1..5: folder}}`` for ``folders``; ``{corruption: {1..5: npy path}}`` for arrays.
    """

    root: Path
    set_name: str
    kind: str
    folders: dict[str, dict[int, Path]]


def _entered(root: Path) -> Path:
    for name in SCRIPT_FOLDERS:
        if (root / name).is_dir() and not any((root / c).exists() for table in SETS.values() for c in table):
            return root / name
    return root


def discover_cbar(root: str | os.PathLike) -> CBarLayout:
    """Find the released -bar set under ``root`` (see the module docstring).

    Raises
    ------
    DataError
        Naming the two layouts when ``root`` holds neither, a folder that is not a C-bar
        corruption of the set, or severity folders that are not the set's.
    """
    base = Path(root).expanduser()
    if not base.is_dir():
        raise DataError(f"C-bar folder {base} does not exist; it must be {IMAGENET_LAYOUT}, or {CIFAR_LAYOUT}.")
    base = _entered(base)
    if (base / "labels.npy").is_file():
        arrays = {p.stem: p for p in base.glob("*.npy") if p.stem != "labels"}
        table = SETS["cifar10-c-bar"]
        foreign = sorted(set(arrays) - set(table))
        if foreign or not arrays:
            what = f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} not" if foreign else "no corruption is"
            raise DataError(f"{base} is not in the CIFAR-10-C-bar layout: {what} among its corruptions. Expected "
                            f"{CIFAR_LAYOUT}. (For CIFAR-10-C use the imagenet-c benchmark.)")
        return CBarLayout(base, "cifar10-c-bar", "cifar", {c: {s: p for s in range(1, 6)} for c, p in arrays.items()})
    corruption_dirs = sorted(e.name for e in os.scandir(base) if e.is_dir() and not e.name.startswith("."))
    table = SETS["imagenet-c-bar"]
    found: dict[str, dict[int, Path]] = {}
    for name in corruption_dirs:
        if name not in table:
            continue
        sev: dict[int, Path] = {}
        for entry in os.scandir(base / name):
            if not entry.is_dir() or entry.name.startswith("."):
                continue
            level = severity_of_folder("imagenet-c-bar", name, entry.name)
            if level is None:
                raise DataError(f"{base / name / entry.name} is not a severity folder of {name}: expected "
                                f"{', '.join(severity_folder(p) for p in table[name])} (or 1..5). Layout: "
                                f"{IMAGENET_LAYOUT}.")
            if level in sev:
                raise DataError(f"{name} has two folders for severity {level} ({sev[level].name} and {entry.name}); "
                                "keep one.")
            sev[level] = Path(entry.path)
        if sev:
            found[name] = dict(sorted(sev.items()))
    if not found:
        others = [n for n in corruption_dirs if n not in table]
        hint = (f" (found {', '.join(others[:5])}: CIFAR-10-C-bar's own corruptions come as .npy arrays)"
                if any(n in SETS["cifar10-c-bar"] for n in others) else
                (f" (found {', '.join(others[:5])})" if others else ""))
        raise DataError(f"{base} is not in a released C-bar layout{hint}. Expected {IMAGENET_LAYOUT}, or {CIFAR_LAYOUT}.")
    return CBarLayout(base, "imagenet-c-bar", "folders", found)


def read_imagenet_c_bar(layout: CBarLayout, corruption: str, severity: int, class_map: ClassMapLike = "auto", *,
                        classes: Sequence[str] | None = None, limit: int | None = None,
                        limit_order: str = "balanced") -> ImageFolderSamples:
    """One corruption and severity (1..5) of an ImageNet-C-bar layout, as an image folder."""
    try:
        folder = layout.folders[corruption][int(severity)]
    except KeyError:
        raise DataError(f"{layout.root} has no {corruption} at severity {severity} (folder "
                        f"{severity_folder(SETS[layout.set_name][corruption][int(severity) - 1]) if corruption in SETS[layout.set_name] else '?'}); "
                        "download or extract it, or leave it out with --corruptions/--severities.") from None
    return read_image_folder(folder, class_map, classes=classes, limit=limit, limit_order=limit_order)
