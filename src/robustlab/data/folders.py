"""Finding the images of a dataset on disk: an image folder or a COCO dataset.

An *image folder* is any folder holding image files, flat (``root/x.jpg``) or in class
subfolders (``root/n01440764/x.JPEG``, the ImageNet / torchvision ``ImageFolder`` layout), at
any depth. A *COCO dataset* is an images folder plus one or more ``instances_*.json``
annotation files; its images are the ones the annotation files list.

Every image is named by its path relative to the dataset root, with ``/`` separators (a
:class:`~pathlib.PurePosixPath`). That relative path is the image's stable identity: outputs
mirror it and per-image seeds are derived from it, so it must not depend on the machine.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import DataError
from ..fsutil import not_a_folder
from .images import IMAGE_EXTENSIONS, is_image_file

#: Where COCO annotation files are looked for when none is given: ``<root>/annotations/``.
COCO_ANNOTATION_GLOB = "annotations/instances_*.json"
#: Files that mark a folder as robustlab's own output, with what writes each: the summaries
#: ``robustlab corrupt``, ``perturb`` and ``stylize`` write at the root of their output, the
#: manifests of ``video sample`` and ``finetune``, and a results store's catalog. Such a folder
#: inside a dataset is never read as part of it, and no builder writes into another's (kept
#: equal to the writers' constants, e.g. ``corruptions.dataset.SUMMARY_NAME`` and
#: ``store.location.CATALOG_FILE``; a test checks).
OUTPUT_RECORDS = {"robustlab-corrupt.json": "robustlab corrupt", "robustlab-perturb.json": "robustlab perturb",
                  "robustlab-stylize.json": "robustlab stylize", "sample.json": "robustlab video sample",
                  "finetuned.json": "robustlab finetune", "catalog.db": "a results store"}
#: Records with a common file name count only with robustlab's format inside (a JSON ``format``
#: starting so), so a user's own ``sample.json`` does not hide their folder.
RECORD_FORMATS = {"sample.json": "robustlab-video-sample/", "finetuned.json": "robustlab-finetuned/"}
OUTPUT_MARKERS = tuple(OUTPUT_RECORDS)
#: A store given as a ``.db`` file keeps its predictions in ``predictions/`` beside it.
STORE_PREDICTIONS_FOLDER = "predictions"
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


@dataclass(frozen=True)
class CocoAnnotations:
    """One COCO annotation file and where its images live.

    Attributes
    ----------
    path : Path
        The ``instances_*.json`` file.
    image_dir : PurePosixPath
        Folder of its images, relative to the dataset root (``.`` for the root itself).
    file_names : tuple of str
        ``images[*].file_name`` in file order.
    """

    path: Path
    image_dir: PurePosixPath
    file_names: tuple[str, ...]


@dataclass(frozen=True)
class ImageDataset:
    """The images of a dataset, as paths relative to ``root``.

    Attributes
    ----------
    root : Path
        Dataset root (the ``SRC`` of ``robustlab corrupt``).
    images : tuple of PurePosixPath
        Relative image paths, sorted, unique.
    layout : str
        ``"flat"`` (all images directly in root), ``"class-folders"`` (one level of
        subfolders, e.g. ImageNet synsets), ``"nested"`` (deeper or mixed) or ``"coco"``.
    coco : tuple of CocoAnnotations
        The annotation files of a COCO dataset (empty for an image folder).
    missing : tuple of PurePosixPath
        Images a COCO annotation file lists that do not exist on disk.
    """

    root: Path
    images: tuple[PurePosixPath, ...]
    layout: str
    coco: tuple[CocoAnnotations, ...] = field(default=())
    missing: tuple[PurePosixPath, ...] = field(default=())

    def path_of(self, relative: PurePosixPath | str) -> Path:
        """Absolute path of the image called ``relative``."""
        return self.root.joinpath(*PurePosixPath(relative).parts)


def _check_root(root: str | os.PathLike) -> Path:
    path = Path(root)
    if not path.is_dir():
        raise not_a_folder(path, "source folder", "give the folder that holds the images")
    return path


def is_robustlab_output(folder: str | os.PathLike) -> bool:
    """True when ``folder`` holds one of :data:`OUTPUT_MARKERS`: an output tree of a robustlab
    builder or a results store, which a dataset listing must not read as data."""
    return output_owner(folder) is not None


def output_owner(folder: str | os.PathLike, *, ignore: Iterable[str] = ()) -> tuple[str, str] | None:
    """``(record file name, what writes it)`` when ``folder`` is the root of a robustlab output
    tree or a results store (see :data:`OUTPUT_RECORDS`), else None; records named in
    ``ignore`` are not looked for."""
    for name, owner in OUTPUT_RECORDS.items():
        if name in ignore:
            continue
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        prefix = RECORD_FORMATS.get(name)
        if prefix is not None and not _has_format(path, prefix):
            continue
        return name, owner
    return None


def _has_format(path: str, prefix: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and str(data.get("format", "")).startswith(prefix)


def skipped_subfolders(parent: str | os.PathLike, subfolders: list[str], files: list[str],
                       exclude: frozenset[str] = frozenset()) -> set[str]:
    """Which of ``parent``'s ``subfolders`` a dataset listing skips.

    Hidden folders (``.name``), robustlab output trees and stores (:func:`is_robustlab_output`),
    a store's ``predictions/`` beside its SQLite catalog file (one of ``files``), symbolic links
    back to ``parent`` or an ancestor (loops), and any folder whose real path is in ``exclude``
    (e.g. the output folder of the running command).

    Parameters
    ----------
    parent : path
        The folder being listed.
    subfolders, files : list of str
        Names of its subfolders and files (as ``os.walk`` gives them).
    exclude : frozenset of str
        Real paths (``os.path.realpath``) of folders to leave out.
    """
    beside_catalog = any(f.lower().endswith(_SQLITE_SUFFIXES) for f in files)
    skipped = set()
    for name in subfolders:
        path = os.path.join(parent, name)
        if (name.startswith(".") or (beside_catalog and name == STORE_PREDICTIONS_FOLDER)
                or (exclude and os.path.realpath(path) in exclude) or _is_link_loop(parent, path)
                or is_robustlab_output(path)):
            skipped.add(name)
    return skipped


def _is_link_loop(parent: str | os.PathLike, path: str) -> bool:
    """A symbolic link to ``parent`` itself or to one of its ancestors (listing it would loop)."""
    if not os.path.islink(path):
        return False
    target, here = os.path.realpath(path), os.path.realpath(parent)
    return here == target or here.startswith(target.rstrip(os.sep) + os.sep)


def real_paths(paths: Iterable[str | os.PathLike]) -> frozenset[str]:
    """``os.path.realpath`` of each path, for the ``exclude`` arguments of the listings."""
    return frozenset(os.path.realpath(p) for p in paths)


def find_images(root: str | os.PathLike, *, exclude: Iterable[str | os.PathLike] = ()) -> list[PurePosixPath]:
    """All image files under ``root`` (recursively), as sorted paths relative to it.

    Hidden files and folders (name starting with ``.``) are skipped, as are files without
    an image extension (see :data:`robustlab.data.images.IMAGE_EXTENSIONS`), robustlab's own
    output trees and stores inside ``root`` (see :func:`skipped_subfolders`), and the folders
    in ``exclude``. Symbolic links to folders are not followed (no cycles).
    """
    base = _check_root(root)
    excluded = real_paths(exclude)
    found: list[PurePosixPath] = []
    for dirpath, dirnames, filenames in os.walk(base):
        skipped = skipped_subfolders(dirpath, dirnames, filenames, excluded)
        dirnames[:] = [d for d in dirnames if d not in skipped]
        rel_dir = Path(dirpath).relative_to(base)
        for name in filenames:
            if not name.startswith(".") and is_image_file(name):
                found.append(PurePosixPath(*rel_dir.parts, name))
    return sorted(found)


def folder_layout(images: list[PurePosixPath] | tuple[PurePosixPath, ...]) -> str:
    """``"flat"``, ``"class-folders"`` or ``"nested"`` for a list of relative image paths."""
    depths = {len(p.parts) for p in images}
    if depths <= {1}:
        return "flat"
    if depths == {2}:
        return "class-folders"
    return "nested"


def find_coco_annotations(root: str | os.PathLike) -> list[Path]:
    """The ``annotations/instances_*.json`` files of a COCO dataset root (sorted; may be empty).

    When some ``instances_<split>.json`` have a ``<root>/<split>/`` image folder, only those are
    returned: COCO's annotation archive holds train and val files, while users often have only
    the val images (and the train file is large to read for nothing).
    """
    base = _check_root(root)
    files = sorted(base.glob(COCO_ANNOTATION_GLOB))
    paired = [f for f in files if (base / f.stem.removeprefix("instances_")).is_dir()]
    return paired or files


def _load_coco_file_names(path: Path) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise DataError(f"COCO annotation file {path} does not exist; check --coco-annotations.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read COCO annotation file {path}: {exc}. "
                        "Re-download it or give another file with --coco-annotations.") from exc
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list) or not all(isinstance(i, dict) and isinstance(i.get("file_name"), str)
                                               for i in images):
        raise DataError(f"{path} is not a COCO annotation file: it needs an 'images' list whose entries "
                        "have a 'file_name'. Give an instances_*.json file.")
    return tuple(i["file_name"] for i in images)


def _coco_image_dir(root: Path, annotation: Path, file_names: tuple[str, ...]) -> PurePosixPath:
    """Where the images of ``annotation`` live: the root itself, ``<root>/<split>`` for
    ``instances_<split>.json`` (the COCO layout ``val2017/`` + ``annotations/instances_val2017.json``),
    or ``<root>/images`` (another common layout); the candidate holding most of its files wins.
    """
    split = annotation.stem.removeprefix("instances_")
    candidates = [PurePosixPath(".")]
    if (root / "images").is_dir():
        candidates.insert(0, PurePosixPath("images"))
    if split and split != annotation.stem and (root / split).is_dir():
        candidates.insert(0, PurePosixPath(split))
    probe = file_names[: min(len(file_names), 20)]
    best = max(candidates, key=lambda c: sum(root.joinpath(*c.parts, f).is_file() for f in probe))
    return best


def coco_annotations(root: str | os.PathLike, annotation: str | os.PathLike) -> CocoAnnotations:
    """Read the image list of COCO ``annotation`` and locate its images under ``root``."""
    base = _check_root(root)
    path = Path(annotation)
    file_names = _load_coco_file_names(path)
    return CocoAnnotations(path, _coco_image_dir(base, path, file_names), file_names)


def discover_dataset(root: str | os.PathLike,
                     coco_annotation_files: list[str | os.PathLike] | None = None,
                     *, autodetect_coco: bool = True,
                     exclude: Iterable[str | os.PathLike] = ()) -> ImageDataset:
    """Find the images of the dataset at ``root``.

    Parameters
    ----------
    root : path
        An image folder (flat or class subfolders) or a COCO dataset root.
    coco_annotation_files : list of paths, optional
        COCO ``instances_*.json`` files. When given (or, with ``autodetect_coco``, when
        ``<root>/annotations/instances_*.json`` exist) the dataset is COCO: its images are those
        the files list, found in ``<root>`` or ``<root>/<split>`` for ``instances_<split>.json``.
        Autodetected files none of whose images exist are ignored (e.g. the train annotations
        next to val-only images); given files are always used, their absent images reported.
    autodetect_coco : bool
        Look for ``annotations/instances_*.json`` when no file is given.
    exclude : paths
        Folders under ``root`` to leave out of an image folder's listing (the running
        command's output folder); robustlab output trees and stores are always left out.

    Returns
    -------
    ImageDataset

    Raises
    ------
    DataError
        ``root`` is missing, not a folder, holds no images, or an annotation file is unreadable.
    """
    base = _check_root(root)
    files = list(coco_annotation_files or [])
    autodetected = not files and autodetect_coco
    if autodetected:
        files = list(find_coco_annotations(base))
    if not files:
        images = find_images(base, exclude=exclude)
        if not images:
            raise DataError(f"no images found in {base} (looked for {', '.join(IMAGE_EXTENSIONS)} files, "
                            "recursively); check the path.")
        return ImageDataset(base, tuple(images), folder_layout(images))

    annotations = tuple(coco_annotations(base, f) for f in files)
    present: set[PurePosixPath] = set()
    missing: set[PurePosixPath] = set()
    used = []
    for ann in annotations:
        here, gone = set(), set()
        for name in ann.file_names:
            rel = PurePosixPath(posixpath.normpath(str(ann.image_dir / name)))
            if rel.is_absolute() or rel.parts[0] == "..":
                raise DataError(f"{ann.path} lists image {name!r}, which lies outside {base}; "
                                "give the dataset root that contains all its images as SRC.")
            (here if base.joinpath(*rel.parts).is_file() else gone).add(rel)
        if here or not autodetected:  # an autodetected file none of whose images is here: not this dataset
            present |= here
            missing |= gone
            used.append(ann)
    if not present:
        raise DataError(f"none of the {sum(len(a.file_names) for a in annotations)} images listed in "
                        f"{', '.join(str(a.path) for a in annotations)} exist under {base} "
                        f"(looked in {', '.join(sorted({str(base / a.image_dir) for a in annotations}))}); "
                        "give the COCO dataset root or the folder of its images as SRC.")
    return ImageDataset(base, tuple(sorted(present)), "coco", tuple(used), tuple(sorted(missing - present)))
