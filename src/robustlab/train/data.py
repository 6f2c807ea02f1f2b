"""Training data for fine-tuning: image folders, pm-k/video frame sets, listings, arrays.

:func:`read_training_set` turns what a user has into a :class:`TrainingSet` (a sample set
that reads uint8 HxWx3 images, one target per image, the class names and, for multi-label
frames, every class of each image):

- an **image folder** ``<root>/<class>/<image>`` (ImageNet's train or val folders; class
  indices as :func:`robustlab.data.classification.read_image_folder`);
- a **pm-k / video frame set** (a folder with ``pmsets.json`` + ``labels.json``, in the root or
  ``metadata/``: ImageNet-Vid-Robust, YTBB-Robust or a set built by ``robustlab video``): every
  labelled frame (anchors and neighbours) is a training image; frames with several labels
  train towards each of them equally;
- a **listing** ``*.txt`` of image paths, one per line (relative to the listing's folder),
  labelled by their parent folder's name (``robustlab stylize --combined`` writes one);
- an in-memory :class:`~robustlab.data.arrays.ArrayDataset` or any sample set (``len``,
  ``ids``, ``labels``, ``read(i)``, optionally ``classes``).

With a :class:`~robustlab.train.classes.ClassSubset` only the images of classes that map to a
target are kept, relabelled to target indices.

:class:`TrainingImages` is the DataLoader side: item ``(epoch, index)`` is image ``index``
cropped for training with a seed derived from ``(seed, epoch, index)``: a random resized crop
(torchvision's ``RandomResizedCrop`` algorithm: area 8-100%, aspect 3/4-4/3) and a horizontal
flip half the time, or the model's resize + centre crop (``crop="center"``).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..data.arrays import ArrayDataset, ArrayDatasetSamples
from ..data.classification import ClassMapLike, ImageFolderSamples, read_image_folder
from ..data.images import is_image_file
from ..errors import DataError, InputError
from ..fsutil import not_a_folder
from ..models.preprocessing import Preprocessing
from ..seeding import derive_seed
from .classes import ClassSubset, class_mapping, imagenet_rows

#: Training crops: a seeded random resized crop + flip; the model's own resize + centre crop; or the
#: model's resize and a random crop of its input size + flip (``resize-random``: torchvision's
#: Resize + RandomCrop + RandomHorizontalFlip, as the ImageNet-C paper's subtype experiment trains).
CROPS = ("random", "center", "resize-random")
#: RandomResizedCrop's area fraction and aspect-ratio ranges (torchvision's defaults).
CROP_SCALE = (0.08, 1.0)
CROP_RATIO = (3 / 4, 4 / 3)


@dataclass(frozen=True, eq=False)
class TrainingSet:
    """Images with their training targets.

    Attributes
    ----------
    samples : sample set
        ``len()``, ``ids`` and ``read(i)`` -> uint8 HxWx3 RGB.
    targets : np.ndarray
        int64 (N,): one target class per image (the smallest of a multi-label image's classes).
    classes : tuple of str
        Target class names, index order (the fine-tuned head has ``len(classes)`` outputs).
    label_sets : tuple of tuple of int, optional
        Every target class of each image, when some images have several (frame sets).
    imagenet_rows : dict, optional
        ``{target: [ImageNet-1k indices]}``: where a new head's rows start from when the model
        is a 1000-way ImageNet classifier (known for WordNet subsets and VID-style frame sets).
    source : dict
        JSON-able description (kind, path, number of images, class subset): part of a run's settings.
    """

    samples: Any
    targets: np.ndarray
    classes: tuple[str, ...]
    label_sets: tuple[tuple[int, ...], ...] | None = None
    imagenet_rows: dict[int, list[int]] | None = None
    source: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.targets)

    def fingerprint(self) -> str:
        """A short hash of the image ids and targets (changes when the data changes)."""
        h = hashlib.blake2b(digest_size=8)
        for sample_id, target in zip(self.samples.ids, self.targets.tolist()):
            h.update(f"{sample_id}\x1f{target}\x1e".encode())
        return h.hexdigest()


# --- readers ------------------------------------------------------------------------------------------


def _metadata_has(root: Path, name: str) -> bool:
    return (root / name).is_file() or (root / name).with_suffix(".json.gz").is_file() or \
        (root / "metadata" / name).is_file() or (root / "metadata" / name).with_suffix(".json.gz").is_file()


def read_training_set(data: object, *, classes: ClassSubset | None = None, class_map: ClassMapLike = "auto"
                      ) -> TrainingSet:
    """A :class:`TrainingSet` from a folder, frame set, listing, ArrayDataset or sample set.

    Parameters
    ----------
    data : path, TrainingSet, ArrayDataset or sample set
        See the module docstring for the layouts.
    classes : ClassSubset, optional
        Keep only images of classes that map to these targets (relabelled 0..K-1).
    class_map : see :func:`robustlab.data.classification.resolve_class_map` (image folders)

    Raises
    ------
    DataError
        Missing folder or files, no images, no image of the chosen classes.
    """
    if isinstance(data, TrainingSet):
        result = data
    elif isinstance(data, ArrayDataset):
        samples = ArrayDatasetSamples(data)
        result = TrainingSet(samples, np.asarray(samples.labels, np.int64), samples.classes,
                             source={"kind": "arrays", "name": data.name, "images": len(samples)})
    elif hasattr(data, "read") and hasattr(data, "labels") and not isinstance(data, (str, os.PathLike)):
        labels = np.asarray(data.labels, dtype=np.int64)
        names = tuple(getattr(data, "classes", None) or (str(i) for i in range(int(labels.max()) + 1)))
        result = TrainingSet(data, labels, names, source={"kind": type(data).__name__, "images": len(labels)})
    else:
        path = Path(data)
        if path.is_file() and path.suffix.lower() == ".txt":
            result = read_listing(path)
        elif not path.is_dir():
            raise not_a_folder(path, "training data", "give an image folder (<root>/<class>/<image>), a frame set "
                               "folder (pmsets.json + labels.json) or a listing .txt")
        elif _metadata_has(path, "pmsets.json") or _metadata_has(path, "anchor_labels.json"):
            result = read_frame_set(path)
        else:
            folder = read_image_folder(path, class_map)
            result = TrainingSet(folder, folder.labels, folder.classes,
                                 source={"kind": "image-folder", "path": str(path.resolve()), "images": len(folder)})
    if len(result) == 0:
        raise DataError(f"training data {data} holds no images.")
    return select_subset(result, classes) if classes is not None else result


def read_frame_set(root: Path) -> TrainingSet:
    """Every labelled frame of a pm-k set as a training image (see the module docstring)."""
    from ..video.readers import read_imagenet_vid_robust, read_pmk_set, read_ytbb_robust

    if _metadata_has(root, "anchor_labels.json"):
        pmk = read_ytbb_robust(root)
    else:
        pmk = read_pmk_set(root)
        if all(c.isdigit() for c in pmk.class_names) and len(pmk.class_names) <= 30:
            pmk = read_imagenet_vid_robust(root)  # released without classes.json: the 30 VID classes
    if pmk.label_mode == "anchor":
        labels = {}
        for anchor, neighbours in pmk.pmsets.items():
            for key in (anchor, *neighbours):
                labels[key] = pmk.labels[anchor]
    else:
        labels = {k: v for k, v in pmk.labels.items() if (root / k).is_file()}
    keys = sorted(labels)
    sets = tuple(tuple(labels[k]) for k in keys)
    targets = np.asarray([min(s) for s in sets], dtype=np.int64)
    rows: dict[int, list[int]] = {}
    for imagenet_index, target in pmk.class_idx_map.items():
        rows.setdefault(int(target), []).append(int(imagenet_index))
    samples = ImageFolderSamples(root, tuple(keys), targets, tuple(pmk.class_names))
    return TrainingSet(samples, targets, tuple(pmk.class_names),
                       label_sets=sets if any(len(s) > 1 for s in sets) else None,
                       imagenet_rows={t: sorted(v) for t, v in sorted(rows.items())} or None,
                       source={"kind": f"frames:{pmk.name}", "path": str(root.resolve()), "images": len(keys)})


def read_listing(path: Path) -> TrainingSet:
    """Images listed one per line (relative to the listing's folder), labelled by parent folder name."""
    try:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read listing {path}: {exc}.") from exc
    files = [ln for ln in lines if ln and not ln.startswith("#")]
    bad = [f for f in files if not is_image_file(f)]
    if bad:
        raise DataError(f"listing {path} names files without an image extension, e.g. {bad[0]!r}; "
                        "give one image path per line.")
    if not files:
        raise DataError(f"listing {path} names no images.")
    root = path.parent
    folders = [Path(f).parent.name for f in files]
    if any(not f for f in folders):
        raise DataError(f"listing {path}: every image must lie in a folder named by its class "
                        f"(<class>/<image>); {files[folders.index('')]!r} does not.")
    names = tuple(sorted(set(folders)))
    index = {n: i for i, n in enumerate(names)}
    targets = np.asarray([index[f] for f in folders], dtype=np.int64)
    samples = ImageFolderSamples(root, tuple(files), targets, names)  # absolute lines stay absolute when joined
    return TrainingSet(samples, targets, names, source={"kind": "listing", "path": str(path.resolve()),
                                                        "images": len(files)})


def select_subset(data: TrainingSet, subset: ClassSubset) -> TrainingSet:
    """Keep the images whose classes map to ``subset`` (see :func:`~robustlab.train.classes.class_mapping`)."""
    mapping = class_mapping(data.classes, subset)
    sets = data.label_sets or tuple((int(t),) for t in data.targets)
    keep, new_sets = [], []
    for i, labels in enumerate(sets):
        mapped = sorted({mapping[c] for c in labels if c in mapping})
        if mapped:
            keep.append(i)
            new_sets.append(tuple(mapped))
    if not keep:
        raise DataError(f"no training image belongs to the classes {', '.join(subset.names[:8])}"
                        f"{'...' if len(subset) > 8 else ''}: the data's classes ({', '.join(data.classes[:5])}...) "
                        "map to none of them. Check --classes against the class folders.")
    keep_arr = np.asarray(keep, dtype=np.int64)
    targets = np.asarray([min(s) for s in new_sets], dtype=np.int64)
    samples = take(data.samples, keep_arr, targets, subset.names)
    rows = imagenet_rows(subset)
    if data.imagenet_rows:  # e.g. VID frames: a target's rows are those of the classes mapped to it
        merged: dict[int, set[int]] = {}
        for source_class, target in mapping.items():
            merged.setdefault(target, set()).update(data.imagenet_rows.get(source_class, ()))
        rows = {t: sorted(v) for t, v in sorted(merged.items()) if v} or rows
    source = dict(data.source, classes=subset.spec, images=len(keep))
    return TrainingSet(samples, targets, subset.names,
                       label_sets=tuple(new_sets) if any(len(s) > 1 for s in new_sets) else None,
                       imagenet_rows=rows or None, source=source)


@dataclass(frozen=True, eq=False)
class SubsetSamples:
    """Images ``indices`` of another sample set, with new labels and class names."""

    base: Any
    indices: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def ids(self) -> tuple:
        base_ids = self.base.ids
        return tuple(base_ids[int(i)] for i in self.indices)

    def read(self, i: int) -> np.ndarray:
        return self.base.read(int(self.indices[i]))


def take(samples: Any, indices: np.ndarray, labels: np.ndarray, classes: tuple[str, ...]) -> Any:
    """The images ``indices`` of ``samples`` relabelled (an ImageFolderSamples stays one)."""
    if isinstance(samples, ImageFolderSamples):
        return ImageFolderSamples(samples.root, tuple(samples.files[int(i)] for i in indices), labels, classes)
    return SubsetSamples(samples, indices, labels, classes)


# --- the DataLoader side ---------------------------------------------------------------------------------


def random_resized_crop_box(height: int, width: int, rng: np.random.Generator,
                            scale: tuple[float, float] = CROP_SCALE,
                            ratio: tuple[float, float] = CROP_RATIO) -> tuple[int, int, int, int]:
    """(top, left, crop height, crop width) of a random resized crop (torchvision's algorithm).

    Up to ten draws of an area fraction in ``scale`` and a log-uniform aspect ratio in
    ``ratio``; the first box that fits is placed uniformly. When none fits, the central crop
    with the aspect ratio clamped to ``ratio``.
    """
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(*log_ratio))
        cw = int(round(math.sqrt(target * aspect)))
        ch = int(round(math.sqrt(target / aspect)))
        if 0 < cw <= width and 0 < ch <= height:
            return int(rng.integers(0, height - ch + 1)), int(rng.integers(0, width - cw + 1)), ch, cw
    in_ratio = width / height
    if in_ratio < min(ratio):
        cw, ch = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        ch, cw = height, int(round(height * max(ratio)))
    else:
        ch, cw = height, width
    return (height - ch) // 2, (width - cw) // 2, ch, cw


def resize_random_crop(image: np.ndarray, geometry: Preprocessing, rng: np.random.Generator) -> np.ndarray:
    """The model's resize (shorter side, its interpolation), a uniformly placed crop of its input size
    (``top`` in ``0..h - ch`` as torchvision's RandomCrop) and a horizontal flip half the time."""
    ch, cw = geometry.crop
    resized = Preprocessing(geometry.resize, None, geometry.interpolation).prepare_image(image)
    h, w = resized.shape[:2]
    if h < ch or w < cw:  # smaller than the crop: as large as needed first
        scale = max(ch / h, cw / w)
        size = (max(cw, int(round(w * scale))), max(ch, int(round(h * scale))))
        resized = np.asarray(Image.fromarray(resized).resize(size, Image.Resampling.BILINEAR))
        h, w = resized.shape[:2]
    top, left = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
    out = resized[top:top + ch, left:left + cw]
    return out[:, ::-1] if rng.random() < 0.5 else out


@dataclass(frozen=True)
class TrainingImages:
    """The DataLoader dataset: item ``(epoch, index)`` -> ``(index, uint8 HxWx3 at the model size)``.

    Parameters
    ----------
    samples : sample set
    geometry : Preprocessing
        The model's resize and crop; its crop size is the training size.
    crop : {"random", "center", "resize-random"}
    seed : int
        Base seed; image ``index`` in ``epoch`` uses ``derive_seed(seed, "crop", epoch, index)``.
    """

    samples: Any
    geometry: Preprocessing
    crop: str = "random"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.crop not in CROPS:
            raise InputError(f"unknown training crop {self.crop!r}; use one of {CROPS}.")
        if self.geometry.crop is None:
            raise InputError("fine-tuning needs a model with a fixed input size (a crop in its preprocessing, e.g. "
                             "224); give preprocessing={'resize': 256, 'crop': 224}.")

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, item: tuple[int, int]) -> tuple[int, np.ndarray]:
        epoch, index = item
        image = self.samples.read(index)
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise DataError(f"training image {self.samples.ids[index]!r} is not uint8 HxWx3 RGB "
                            f"({image.dtype} {image.shape}).")
        rng = np.random.default_rng(derive_seed(self.seed, "crop", epoch, index))
        ch, cw = self.geometry.crop
        if self.crop == "center":
            out = self.geometry.prepare_image(image)
            if out.shape[:2] != (ch, cw):
                out = np.asarray(Image.fromarray(out).resize((cw, ch), Image.Resampling.BILINEAR))
        elif self.crop == "resize-random":
            out = resize_random_crop(image, self.geometry, rng)
        else:
            top, left, h, w = random_resized_crop_box(image.shape[0], image.shape[1], rng)
            patch = Image.fromarray(np.ascontiguousarray(image[top:top + h, left:left + w]))
            out = np.asarray(patch.resize((cw, ch), Image.Resampling.BILINEAR))
            if rng.random() < 0.5:
                out = out[:, ::-1]
        return index, np.ascontiguousarray(out)


@dataclass(frozen=True)
class TrainingCollate:
    """Stack a batch (uint8 NHWC) and apply the augmentation, in the DataLoader worker.

    ``augment`` is called as ``augment(images, ids=[(epoch, index), ...])`` on the uint8 NHWC
    batch (the interface of :class:`robustlab.corruptions.transforms.RandomCorruption`, whose
    draws depend only on its seed and the ids), so the result does not depend on batching or
    on the worker.
    """

    augment: Any = None

    def __call__(self, items: list[tuple[tuple[int, int], tuple[int, np.ndarray]]]):
        import torch

        keys = [key for key, _ in items]
        images = np.stack([img for _, (_, img) in items])
        if self.augment is not None:
            images = np.asarray(self.augment(images, ids=keys))
        indices = np.asarray([index for _, (index, _) in items], dtype=np.int64)
        return torch.from_numpy(indices), torch.from_numpy(np.ascontiguousarray(images))


@dataclass(frozen=True)
class KeyedImages:
    """Wrap :class:`TrainingImages` so each item also carries its ``(epoch, index)`` key."""

    images: TrainingImages

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, item: tuple[int, int]):
        return (int(item[0]), int(item[1])), self.images[item]


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[tuple[int, int]]]:
    """The seeded batch order of one epoch: lists of ``(epoch, index)``.

    A permutation from ``derive_seed(seed, "order", epoch)``, cut into ``batch_size`` chunks; a
    last chunk of one image joins the one before (batch norm cannot train on a single image).
    """
    if batch_size < 1:
        raise InputError(f"batch size must be at least 1; got {batch_size}.")
    order = np.random.default_rng(derive_seed(seed, "order", epoch)).permutation(n)
    batches = [[(epoch, int(i)) for i in order[s:s + batch_size]] for s in range(0, n, batch_size)]
    if len(batches) > 1 and len(batches[-1]) == 1:
        batches[-2].extend(batches.pop())
    return batches

