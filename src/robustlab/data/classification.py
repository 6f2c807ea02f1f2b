"""Labelled image sets for classification benchmarks.

- an **image folder** with one subfolder per class (the ImageNet val / torchvision
  ``ImageFolder`` layout): ``<root>/<class>/<file>`` (:func:`read_image_folder`);
- rows of a uint8 ``.npy`` array with labels (:class:`ArraySamples`);
- *views* of another sample set that change its images when read (:class:`SampleView`:
  size-checked, prepared by a fixed function).

The released corrupted sets (ImageNet-C folders, CIFAR-10-C arrays) are read by
:mod:`robustlab.corruptions.released`, and the on-the-fly corrupted view is
:func:`robustlab.corruptions.views.corrupt_on_the_fly`: this layer knows no corruption.

A reader returns a *sample set*: ``len()``, ``ids`` (stable sample ids: the path relative to
the root, or the row number), ``labels`` (int64), ``classes`` (class names in label order)
and ``read(i)`` -> uint8 HxWx3 RGB. Sample sets are small picklable descriptions (paths, not
pixels), so worker processes can read from them.

Class indices (``class_map``): ``"auto"`` (default) uses the ImageNet-1k index (0..999,
sorted wnids) when every class folder is an ImageNet wnid, else the sorted folder names
(0..K-1); ``"imagenet"`` insists on ImageNet wnids; ``"sorted"`` numbers the sorted folders;
a dict ``{folder: index}``, a list of folder names in index order, or a JSON file holding
either gives the map explicitly.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, InputError, did_you_mean
from ..fsutil import explain_os_error, not_a_folder
from ..safeload import load_npy
from .fingerprint import files_fingerprint
from .folders import skipped_subfolders
from .images import is_image_file, read_image, read_jpeg_bytes
from .limits import DEFAULT_LIMIT_ORDER, check_limit_order, limit_positions, limit_stats
from .wordnet import ilsvrc_wnids

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
#: Largest number of classes a class map may define (ImageNet-21k has 21,841).
MAX_CLASSES = 1_000_000

ClassMapLike = str | os.PathLike | Mapping[str, int] | Sequence[str] | None


@dataclass(frozen=True, eq=False)
class ImageFolderSamples:
    """Images listed by path relative to ``root``, with integer labels.

    Attributes
    ----------
    root : Path
    files : tuple of str
        Relative POSIX paths (``"n01440764/x.JPEG"``); they are the sample ids.
    labels : np.ndarray
        int64, shape (N,).
    classes : tuple of str
        Class names in label order (``len(classes)`` is the number of classes).
    """

    root: Path
    files: tuple[str, ...]
    labels: np.ndarray
    classes: tuple[str, ...]
    #: What a limit took (:func:`robustlab.data.limits.limit_stats`), None when not limited.
    limited: dict | None = field(default=None, kw_only=True)

    def __len__(self) -> int:
        return len(self.files)

    @property
    def ids(self) -> tuple[str, ...]:
        return self.files

    def read(self, i: int, prepare: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
        """Image ``i`` as uint8 HxWx3 RGB (DataError naming the file when unreadable), with
        ``prepare`` applied (see :func:`~robustlab.data.images.read_image`: a prepare function
        with a PIL form runs on the decoder's image)."""
        return read_image(os.path.join(self.root, self.files[i]), prepare=prepare)  # str join: cheaper than Path

    def fingerprint(self, mode: str = "stat") -> str:
        """The files' fingerprint (:func:`robustlab.data.fingerprint.files_fingerprint`) with the labels."""
        return files_fingerprint(((f, os.path.join(self.root, f)) for f in self.files), mode,
                                 extra=(self.labels.tolist(),))

    def subset(self, start: int, stop: int) -> ImageFolderSamples:
        """Samples ``start:stop`` (of the same kind: subclasses keep their other fields)."""
        return replace(self, files=self.files[start:stop], labels=self.labels[start:stop])


@dataclass(frozen=True, eq=False)
class ArraySamples:
    """Rows ``start..stop`` of an array file (memory-mapped), with labels: a sample is one row.

    By default the file is an (N, H, W, 3) uint8 ``.npy`` (:func:`open_npy`); ``opener``
    (picklable, ``opener(path) -> array``) reads other array files, e.g. CIFAR-10-P's
    (N, T, H, W, 3) sequences. Sample ids are the row numbers.
    """

    path: Path
    start: int
    stop: int
    labels: np.ndarray
    classes: tuple[str, ...] = ()
    opener: Callable[[str], np.ndarray] | None = None
    #: The file's rows this set takes, in order (a limited set's choice); ``start..stop`` then
    #: index this tuple instead of the file. None: the rows ``start..stop`` themselves.
    rows: tuple[int, ...] | None = field(default=None, kw_only=True)
    #: What a limit took (:func:`robustlab.data.limits.limit_stats`), None when not limited.
    limited: dict | None = field(default=None, kw_only=True)

    def __len__(self) -> int:
        return self.stop - self.start

    def _row(self, i: int) -> int:
        return self.start + i if self.rows is None else self.rows[self.start + i]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(str(self._row(i)) for i in range(len(self)))

    def id(self, i: int) -> str:
        return str(self._row(i))

    def read(self, i: int) -> np.ndarray:
        return np.ascontiguousarray((self.opener or open_npy)(str(self.path))[self._row(i)])

    def fingerprint(self, mode: str = "stat") -> str:
        """The array file's fingerprint, with the rows taken and their labels."""
        taken = (self.start, self.stop) if self.rows is None else tuple(self.rows[self.start:self.stop])
        return files_fingerprint([(self.path.name, self.path)], mode, extra=(*taken, self.labels.tolist()))

    def subset(self, start: int, stop: int) -> ArraySamples:
        n = len(self)
        start, stop = min(start, n), min(stop, n)
        return replace(self, start=self.start + start, stop=self.start + stop, labels=self.labels[start:stop])


def limited_rows(samples: ArraySamples, limit: int | None, order: str = DEFAULT_LIMIT_ORDER) -> ArraySamples:
    """The rows of ``samples`` (rows ``start..stop`` of its file) that a limit keeps, chosen by
    position in the block (ids ``"0"``, ``"1"``...: so every severity block of a CIFAR-10-C file,
    and the clean test set, take the same images) and label (:mod:`robustlab.data.limits`)."""
    if limit is None:
        return samples
    n = len(samples)
    positions = limit_positions([str(i) for i in range(n)], samples.labels, int(limit), order)
    stats = limit_stats(samples.labels, positions, n, check_limit_order(order))
    if order == "path":
        return replace(samples, stop=samples.start + len(positions), labels=samples.labels[positions], limited=stats)
    rows = tuple(samples.start + int(p) for p in positions) if samples.rows is None else \
        tuple(samples.rows[samples.start + int(p)] for p in positions)
    return replace(samples, start=0, stop=len(rows), rows=rows, labels=samples.labels[positions], limited=stats)


@dataclass(frozen=True, eq=False)
class SelectedSamples:
    """Some samples of another sample set, by position (what a limit kept of an in-memory set):
    ids, labels, classes and images are the base's at those positions."""

    base: Any
    positions: tuple[int, ...]
    limited: dict | None = None

    def __len__(self) -> int:
        return len(self.positions)

    def id(self, i: int) -> str:
        get = getattr(self.base, "id", None)
        p = self.positions[i]
        return str(get(p)) if callable(get) else str(self.base.ids[p])

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self.id(i) for i in range(len(self)))

    @property
    def labels(self) -> np.ndarray:
        return np.asarray(self.base.labels)[list(self.positions)].astype(np.int64)

    @property
    def classes(self) -> tuple[str, ...]:
        return self.base.classes

    def read(self, i: int) -> np.ndarray:
        return self.base.read(self.positions[i])

    def fingerprint(self, mode: str = "stat") -> str:
        """The base's fingerprint with the positions taken."""
        import hashlib

        own = getattr(self.base, "fingerprint", None)
        text = f"{own(mode) if callable(own) else ''}|{','.join(map(str, self.positions))}"
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    def subset(self, start: int, stop: int) -> SelectedSamples:
        return replace(self, positions=self.positions[start:stop])


def limit_samples(samples: Any, limit: int | None, order: str = DEFAULT_LIMIT_ORDER) -> Any:
    """Any labelled sample set (``ids``, ``labels``, ``read``) under a limit: ``samples`` itself
    without one, its first ``limit`` under ``path`` order, else a :class:`SelectedSamples` of the
    balanced choice (:mod:`robustlab.data.limits`)."""
    if limit is None:
        return samples
    labels = np.asarray(samples.labels)
    positions = limit_positions([str(i) for i in samples.ids], labels, int(limit), order)
    stats = limit_stats(labels, positions, len(samples), check_limit_order(order))
    if order == "path" and hasattr(samples, "subset"):  # the first N, as the set itself takes them
        return samples.subset(0, len(positions))
    return SelectedSamples(samples, tuple(int(p) for p in positions), stats)


@dataclass(frozen=True, eq=False)
class SampleView:
    """Another sample set seen through a change of its images (``read``); ids, labels, classes
    and fingerprint are the base's. Subclasses override :meth:`read`."""

    base: ImageFolderSamples | ArraySamples | SampleView
    #: True when ``read(i)`` is a function of ``base.read(i)`` and ``i`` alone (a subclass that
    #: says so lets the engine read the base's image once for several views of one base).
    per_image: ClassVar[bool] = False

    def __len__(self) -> int:
        return len(self.base)

    @property
    def ids(self) -> tuple[str, ...]:
        return self.base.ids

    @property
    def labels(self) -> np.ndarray:
        return self.base.labels

    @property
    def classes(self) -> tuple[str, ...]:
        return self.base.classes

    def id(self, i: int) -> str:
        get = getattr(self.base, "id", None)
        return get(i) if callable(get) else self.base.ids[i]

    def read(self, i: int) -> np.ndarray:
        return self.base.read(i)

    def fingerprint(self, mode: str = "stat") -> str:
        return self.base.fingerprint(mode)

    def subset(self, start: int, stop: int) -> SampleView:
        """The same view of the base's samples ``start:stop``."""
        return replace(self, base=self.base.subset(start, stop))


@dataclass(frozen=True, eq=False)
class SizeCheckedSamples(SampleView):
    """Another sample set whose images smaller than ``min_size`` pixels on a side are refused.

    The clean setting of a run that corrupts on the fly reads its images through this, so an
    image too small to corrupt is skipped in every setting, clean included, and every setting's
    error is measured on the same images (not 10 clean against 9 corrupted)."""

    min_size: int = 1
    per_image: ClassVar[bool] = True

    def read(self, i: int) -> np.ndarray:
        image = self.base.read(i)
        h, w = image.shape[:2]
        if min(h, w) < self.min_size:
            raise DataError(f"image {self.id(i)} is {w}x{h} pixels, smaller than the {self.min_size} px the "
                            "corruptions need: it is skipped in every setting, clean included, so that every "
                            "setting measures the same images.")
        return image


@dataclass(frozen=True, eq=False)
class PreparedSamples(SampleView):
    """Another sample set with ``prepare`` (a picklable uint8 HxWx3 -> uint8 function, e.g. a
    fixed resize and crop) applied to each image when it is read."""

    prepare: Callable[[np.ndarray], np.ndarray] | None = None
    per_image: ClassVar[bool] = True

    def read(self, i: int) -> np.ndarray:
        return read_prepared(self.base, i, self.prepare)


Samples = ImageFolderSamples | ArraySamples | SampleView


def read_prepared(samples, i: int, prepare: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
    """``prepare(samples.read(i))`` (``samples.read(i)`` when ``prepare`` is None), with the
    prepare step fused into the decoder when the sample set reads files itself
    (:class:`ImageFolderSamples`: its ``read`` takes ``prepare``); the pixels are the same.

    When ``prepare.decode`` is ``"gpu"`` and the file is a JPEG, its bytes are returned instead
    (a 1-D uint8 array, decoded on the model's device: ``--decode gpu``)."""
    if prepare is None:
        return samples.read(i)
    if type(samples) is ImageFolderSamples:
        if getattr(prepare, "decode", "cpu") == "gpu":
            encoded = read_jpeg_bytes(os.path.join(samples.root, samples.files[i]))
            if encoded is not None:
                return encoded
        return samples.read(i, prepare)
    return prepare(samples.read(i))


@functools.lru_cache(maxsize=64)
def open_npy(path: str) -> np.ndarray:
    """The ``.npy`` file at ``path``, memory-mapped read-only (opened once per process)."""
    return load_npy(path, what="array file", mmap_mode="r")


# --- class maps -------------------------------------------------------------------------------------


def class_folders(root: str | os.PathLike) -> list[str]:
    """Sorted names of the class subfolders of ``root`` (DataError when there are none).

    Hidden folders, robustlab output trees and results stores inside ``root`` are not classes
    (see :func:`robustlab.data.folders.skipped_subfolders`).
    """
    base = Path(root)
    if not base.is_dir():
        raise not_a_folder(base, "dataset folder")
    try:
        entries = list(os.scandir(base))
    except OSError as exc:
        raise DataError(explain_os_error(exc, base, "list the folder")) from exc
    folders = [e.name for e in entries if e.is_dir()]
    skipped = skipped_subfolders(str(base), folders, [e.name for e in entries if e.is_file()])
    names = sorted(n for n in folders if n not in skipped)
    if not names:
        raise DataError(f"dataset folder {base} has no class subfolders; the layout must be "
                        "<root>/<class>/<image> (e.g. ImageNet val sorted into wnid folders).")
    return names


def load_class_map(path: str | os.PathLike) -> dict | list:
    """Read a class map JSON file: a list of class names in index order, or ``{class: index}``.

    Raises
    ------
    DataError
        Naming the file when it is missing (with a suggestion when the name looks like a
        misspelt ``auto``/``imagenet``/``sorted``), unreadable, not JSON, or neither a list nor
        an object. The entries themselves are checked by :func:`resolve_class_map`.
    """
    p = Path(path).expanduser()
    try:
        value = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"class map file {p} does not exist; a class map is auto, imagenet, sorted or a "
                        f"JSON file.{did_you_mean(str(path), ('auto', 'imagenet', 'sorted'))}") from None
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read class map {p}: {exc}. It must be JSON: a list of class names "
                        "in index order or an object {class: index}.") from None
    if not isinstance(value, (dict, list)):
        raise DataError(f"class map {p} holds a {type(value).__name__}; it must be a JSON list of class names in "
                        "index order or an object {class: index}.")
    return value


def resolve_class_map(folders: Sequence[str], class_map: ClassMapLike = "auto") -> tuple[dict[str, int], tuple[str, ...]]:
    """Map class folder names to label indices.

    Returns ``(index of each folder, class names in index order)``; the number of classes is
    the length of the second (e.g. 1000 for ImageNet even when only some folders exist).
    See the module docstring for the accepted ``class_map`` values.
    """
    if class_map is None:
        class_map = "auto"
    if isinstance(class_map, (str, os.PathLike)) and str(class_map) in ("auto", "imagenet", "sorted"):
        mode = str(class_map)
        wnids = ilsvrc_wnids()
        if mode == "sorted" or (mode == "auto" and not set(folders) <= set(wnids)):
            names = tuple(sorted(folders))
            return {n: i for i, n in enumerate(names)}, names
        unknown = sorted(set(folders) - set(wnids))
        if unknown:
            raise DataError(f"class folders {unknown[:5]} are not ImageNet-1k wnids; use class_map='sorted' or "
                            "give a class map {folder: index}.")
        index = {w: i for i, w in enumerate(wnids)}
        return {f: index[f] for f in folders}, tuple(wnids)
    source = "class map"
    if isinstance(class_map, (str, os.PathLike)):
        source = f"class map {class_map}"
        class_map = load_class_map(class_map)
    if isinstance(class_map, Mapping):
        mapping = {}
        for name, i in class_map.items():
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < MAX_CLASSES:
                raise InputError(f"{source} gives {name!r} the index {i!r}; indices must be integers in "
                                 f"0..{MAX_CLASSES - 1}, e.g. {{\"cat\": 0, \"dog\": 1}}.")
            mapping[str(name)] = int(i)
        n = max(mapping.values()) + 1 if mapping else 0
        names_list = [f"class_{i}" for i in range(n)]
        for name, i in mapping.items():
            names_list[i] = name
        names = tuple(names_list)
    elif isinstance(class_map, Sequence) and not isinstance(class_map, (str, bytes)):
        if not all(isinstance(c, str) for c in class_map):
            raise InputError(f"{source} must list class names (strings) in index order; got "
                             f"{[c for c in class_map if not isinstance(c, str)][:3]!r} among them.")
        if len(set(class_map)) != len(class_map):
            twice = sorted({c for c in class_map if list(class_map).count(c) > 1})[:3]
            raise InputError(f"{source} lists {twice} more than once; give each class once, in index order.")
        names = tuple(class_map)
        mapping = {n: i for i, n in enumerate(names)}
    else:
        raise InputError(f"class_map must be 'auto', 'imagenet', 'sorted', a dict, a list or a JSON path; "
                         f"{source} is a {type(class_map).__name__}.")
    unknown = sorted(set(folders) - set(mapping))
    if unknown:
        raise DataError(f"class folders {unknown[:5]} are not in the class map ({len(mapping)} classes); "
                        "add them to the map or remove the folders.")
    return {f: mapping[f] for f in folders}, names


# --- readers ------------------------------------------------------------------------------------------


def _file_or_link(entry: os.DirEntry) -> bool:
    """Anything but a folder: a file, a symbolic link that does not lead to a folder (a broken
    link, a link loop) or a special file (a FIFO, a socket): such a sample is listed, and
    reading it records the problem (never blocking on a FIFO), instead of vanishing silently."""
    try:
        if entry.is_symlink():
            return not os.path.isdir(entry.path)
        return not entry.is_dir()
    except OSError:
        return True


def image_names(folder: str | os.PathLike) -> list[str]:
    """The sorted names of the images in one class folder, as :func:`read_image_folder` lists them:
    visible entries with an image extension that are not folders (FileNotFoundError when the
    folder is missing)."""
    return sorted(e.name for e in os.scandir(folder) if not e.name.startswith(".") and is_image_file(e.name)
                  and _file_or_link(e))


def read_image_folder(root: str | os.PathLike, class_map: ClassMapLike = "auto", *,
                      classes: Sequence[str] | None = None, limit: int | None = None,
                      limit_order: str = DEFAULT_LIMIT_ORDER) -> ImageFolderSamples:
    """Read an image folder with one subfolder per class.

    Parameters
    ----------
    root : path
        ``<root>/<class>/<image>``; files without an image extension and hidden entries are
        ignored.
    class_map : see module docstring
    classes : sequence of str, optional
        Only these class folders (each must exist), e.g. one shard of a large set.
    limit : int, optional
        Keep only ``limit`` images, chosen by ``limit_order``.
    limit_order : ``"balanced"`` (default) or ``"path"``
        balanced: the same number from every class folder of ``root`` (``classes`` then keeps
        those of its folders), chosen by a seeded hash of each relative path
        (:mod:`robustlab.data.limits`); path: the first ``limit`` in sorted order (folders are
        listed lazily, so a small limit is fast on a huge set).

    Raises
    ------
    DataError
        Missing root, no class folders, a requested class folder missing, no images.
    """
    base = Path(root)
    folders = class_folders(base)
    index, names = resolve_class_map(folders, class_map)
    wanted = folders if classes is None else list(classes)
    if limit is not None and check_limit_order(limit_order) == "balanced":
        return _balanced_folder(base, folders, index, names, wanted, int(limit))
    files: list[str] = []
    labels: list[int] = []
    for cls in wanted:
        if cls not in index:
            raise DataError(f"class folder {base / cls} is missing; the dataset is incomplete "
                            "(re-extract it or evaluate fewer classes).")
        for name in _class_files(base, cls):
            if limit is not None and len(files) >= limit:
                break
            files.append(f"{cls}/{name}")
            labels.append(index[cls])
        if limit is not None and len(files) >= limit:
            break
    if not files and (limit is None or limit > 0):
        raise DataError(f"no images found under {base} (looked in {len(wanted)} class folders for "
                        ".jpg/.jpeg/.png/... files).")
    limited = None
    if limit is not None:  # the total is not known: path order lists lazily
        counts = [labels.count(index[cls]) for cls in wanted]
        limited = {"order": "path", "samples": len(files), "of": None, "classes": len(wanted),
                   "per_class": [min(counts), max(counts)] if counts else [0, 0]}
    return ImageFolderSamples(base, tuple(files), np.asarray(labels, dtype=np.int64), names, limited=limited)


def _class_files(base: Path, cls: str) -> list[str]:
    """The image files of one class folder (sorted names), DataError when it is missing."""
    try:
        return image_names(base / cls)
    except FileNotFoundError:
        raise DataError(f"class folder {base / cls} is missing; the dataset is incomplete.") from None


def _balanced_folder(base: Path, folders: list[str], index: Mapping[str, int], names: tuple[str, ...],
                     wanted: list[str], limit: int) -> ImageFolderSamples:
    """:func:`read_image_folder` under a balanced limit: chosen among every class folder, then
    the ``wanted`` ones kept (so a unit of some classes takes its part of the same choice)."""
    for cls in wanted:
        if cls not in index:
            raise DataError(f"class folder {base / cls} is missing; the dataset is incomplete "
                            "(re-extract it or evaluate fewer classes).")
    files = [f"{cls}/{name}" for cls in folders for name in _class_files(base, cls)]
    labels = np.asarray([index[f.split("/", 1)[0]] for f in files], dtype=np.int64)
    if not files and limit > 0:
        raise DataError(f"no images found under {base} (looked in {len(folders)} class folders for "
                        ".jpg/.jpeg/.png/... files).")
    positions = limit_positions(files, labels, limit, "balanced")
    stats = limit_stats(labels, positions, len(files), "balanced")
    keep = set(wanted)
    chosen = [int(p) for p in positions if files[p].split("/", 1)[0] in keep]
    return ImageFolderSamples(base, tuple(files[p] for p in chosen), labels[chosen], names, limited=stats)
