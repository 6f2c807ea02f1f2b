"""Detection images through the engine: corrupted reads, per-image context, detector columns.

Detection images keep their native sizes (the detector resizes them itself, after the
corruption), so a worker loads each image as one :class:`~robustlab.engine.records.Sample`
whose pixels are the image as the model's preprocessing leaves it, with a typed
:class:`DetectionContext`: native and input size, dataset index, setting and the RMSE between
the clean and the corrupted image. A batch keeps the images as a list when their sizes differ;
:func:`detect_batch` runs the detector on it, maps boxes back to native pixels and returns
padded fixed-width columns (the stored per-sample predictions of a detection unit):

- ``det_boxes`` float32 (N, K, 4) x1, y1, x2, y2 in native pixels (rows >= count are 0);
- ``det_scores`` float32 (N, K) (0 beyond count); ``det_labels`` int32 (N, K) (-1 beyond);
- ``det_count`` int32 (N,): the number of real detections, at most K (the K best by score);
- ``pixel_rmse`` float32 (N,): RMSE (0..255) between the clean and the corrupted image;
- ``label`` int64 (N,) (added by the engine): the image's index in the dataset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import torch

from ..corruptions.api import corrupt_item
from ..corruptions.dataset import output_relative
from ..data.images import encode_image, read_image
from ..errors import InputError
from ..fsutil import atomic_path
from ..metrics.detection import sanitize_detections
from ..metrics.under_corruption import image_rmse
from ..models.detection import ensure_detector
from ..data.fingerprint import files_fingerprint
from ..engine.benchmark import model_device
from ..engine.records import Batch, Sample

@dataclass(frozen=True)
class DetectionContext:
    """What the main process needs to know of one detection image besides its pixels."""

    native_hw: tuple[int, int]
    input_hw: tuple[int, int]
    index: int
    setting: int
    rmse: float


@dataclass(frozen=True, eq=False)
class DetectionImages:
    """One unit's images (picklable: paths, not pixels), corrupted on the fly when asked.

    Image ``i`` is ``corrupt_item(read(path_i), corruption, severity, seed=seed, item=relative path)``
    (:func:`robustlab.corruptions.items.item_seed`), the seed
    ``robustlab corrupt`` gives the same file, so a cache made either way holds the same
    pixels. With ``cache``, corrupted images are read from (or written losslessly as PNG to)
    ``<cache>/<corruption>/<severity>/<relative path>``.

    Attributes
    ----------
    root : dataset root (relative paths and seeds are taken from it).
    relative : relative POSIX paths of the images (the sample ids).
    indices : int64 (N,) positions in the dataset (stored as ``label``).
    sizes : int64 (N, 2) native (height, width) from the annotations.
    setting_index : 0 for clean, else the position of the setting in the run's settings + 1.
    """

    root: str
    relative: tuple[str, ...]
    indices: np.ndarray
    sizes: np.ndarray
    setting_index: int = 0
    corruption: str | None = None
    severity: int = 0
    seed: int = 0
    profile: str = "imagecorruptions"
    cache: str | None = None

    def __len__(self) -> int:
        return len(self.relative)

    @property
    def ids(self) -> tuple[str, ...]:
        return self.relative

    @property
    def labels(self) -> np.ndarray:
        return self.indices

    def _path(self, i: int) -> Path:
        return Path(self.root).joinpath(*PurePosixPath(self.relative[i]).parts)

    def cache_path(self, i: int) -> Path | None:
        if self.cache is None or self.corruption is None:
            return None
        rel = output_relative(self.relative[i], "png")
        return Path(self.cache, self.corruption, str(self.severity), *rel.parts)

    def read_pair(self, i: int) -> tuple[np.ndarray, float]:
        """(image as the model sees it before its resize, RMSE to the clean image or NaN)."""
        clean = read_image(self._path(i))
        if self.corruption is None:
            return clean, float("nan")
        cached = self.cache_path(i)
        if cached is not None and cached.is_file():
            image = read_image(cached)
        else:
            image = corrupt_item(clean, self.corruption, self.severity, seed=self.seed, item=self.relative[i],
                                 profile=self.profile)
            if cached is not None:
                with atomic_path(cached) as tmp:
                    tmp.write_bytes(encode_image(image, "png"))
        return image, image_rmse(clean, image) if image.shape == clean.shape else float("nan")

    def read(self, i: int) -> np.ndarray:
        return self.read_pair(i)[0]

    def fingerprint(self, mode: str = "stat") -> str:
        """The images' fingerprint, plus the cached corrupted files' when a cache is used."""
        return files_fingerprint(((r, self._path(i)) for i, r in enumerate(self.relative)), mode,
                                 extra=(self.indices.tolist(), self.sizes.tolist()))

    def load(self, i: int, prepare) -> Sample:
        """Worker side: the image as the model's preprocessing leaves it, with its context.

        ``prepare`` is the engine's :class:`~robustlab.engine.executor.ImagePreparer` (a
        ``precomputed`` model, a results file, needs no pixels)."""
        h, w = (int(v) for v in self.sizes[i])
        index = int(self.indices[i])
        if getattr(prepare, "precomputed", False):  # a results file: no pixels needed
            return Sample(self.relative[i], index, None, DetectionContext((h, w), (h, w), index, self.setting_index,
                                                                          float("nan")))
        image, rmse = self.read_pair(i)
        if image.shape[:2] != (h, w):
            raise InputError(f"image {self._path(i)} is {image.shape[1]}x{image.shape[0]} but its annotation says "
                             f"{w}x{h}; fix the annotation's width/height.")
        prepared = prepare(image)
        context = DetectionContext((h, w), tuple(int(v) for v in prepared.shape[:2]), index, self.setting_index,
                                   float(rmse))
        return Sample(self.relative[i], index, prepared, context)


# --- detector columns --------------------------------------------------------------------------------


def apply_label_map(labels: np.ndarray, label_map: Mapping[str, int] | None, offset: int) -> np.ndarray:
    """Detector labels -> dataset labels: ``label_map[str(label)]`` when given, then ``+ offset``.
    Labels absent from a given map become -1 (unknown)."""
    labels = np.asarray(labels, np.int64)
    if label_map:
        labels = np.asarray([label_map.get(str(int(v)), -1) for v in labels], np.int64)
        return np.where(labels >= 0, labels + offset, -1)
    return labels + offset


def pad_detections(dets: Sequence[Mapping[str, np.ndarray]], k: int) -> dict[str, np.ndarray]:
    """Padded fixed-width columns of a batch (the ``k`` best detections by score per image)."""
    n = len(dets)
    boxes = np.zeros((n, k, 4), np.float32)
    scores = np.zeros((n, k), np.float32)
    labels = np.full((n, k), -1, np.int32)
    count = np.zeros(n, np.int32)
    for i, d in enumerate(dets):
        order = np.argsort(-np.asarray(d["scores"]), kind="stable")[:k]
        m = len(order)
        boxes[i, :m] = d["boxes"][order]
        scores[i, :m] = d["scores"][order]
        labels[i, :m] = d["labels"][order]
        count[i] = m
    return {"det_boxes": boxes, "det_scores": scores, "det_labels": labels, "det_count": count}


def unpad_detections(columns: Mapping[str, np.ndarray], row: int) -> dict[str, np.ndarray]:
    """The real detections of stored row ``row`` (boxes float64 xyxy, scores, labels)."""
    m = int(columns["det_count"][row])
    return {"boxes": columns["det_boxes"][row, :m].astype(np.float64),
            "scores": columns["det_scores"][row, :m].astype(np.float64),
            "labels": columns["det_labels"][row, :m].astype(np.int64)}


def detect_batch(model: torch.nn.Module, batch: Batch, *, known_labels: Sequence[int], max_detections: int,
                 label_map: Mapping[str, int] | None = None, label_offset: int = 0,
                 unknown_labels: str = "error", lookup=None) -> dict[str, np.ndarray]:
    """Run a detector on a batch of images and return the padded columns (module docstring).

    ``lookup(setting_index, dataset_indices) -> detections`` serves precomputed models.
    Boxes are mapped back to native pixels and clipped to the image; detections with labels
    outside ``known_labels`` (after ``label_map`` / ``label_offset``) raise InputError, or are
    dropped with ``unknown_labels="drop"``. NaN/inf boxes or scores raise ModelError.
    """
    prep = getattr(model, "preprocessing", None)
    if prep is not None and prep.crop is not None:
        raise InputError(f"the detector's preprocessing crops images to {prep.crop}: boxes outside the crop would be "
                         "lost. Give a detector only a resize (or none: torchvision's detectors resize themselves).")
    ctx = batch.context
    native_hw, input_hw = np.asarray(ctx["native_hw"]).reshape(-1, 2), np.asarray(ctx["input_hw"]).reshape(-1, 2)
    if getattr(model, "precomputed", False):
        if len(set(np.asarray(ctx["setting"]).tolist())) > 1:
            raise InputError("a batch mixes settings; the engine never does this.")
        raw = lookup(int(ctx["setting"][0]), ctx["index"])
        scale = np.ones((len(raw), 2))
    else:
        detector = ensure_detector(model)
        images = batch.inputs(model_device(model))
        with torch.inference_mode():
            outputs = detector(list(images))
        raw = [{k: v.detach().float().cpu().numpy() if k != "labels" else v.cpu().numpy()
                for k, v in out.items()} for out in outputs]
        scale = native_hw[:, ::-1] / np.maximum(input_hw[:, ::-1], 1)  # (sx, sy)
    known = np.asarray(sorted(set(int(v) for v in known_labels)), np.int64)
    dets = []
    for i, d in enumerate(raw):
        h, w = (int(v) for v in native_hw[i])
        where = f"detections of image {int(ctx['index'][i])} (native {w}x{h})"
        boxes = np.asarray(d["boxes"], np.float64).reshape(-1, 4) * np.tile(scale[i], 2)
        labels = apply_label_map(np.asarray(d["labels"]).reshape(-1), label_map, label_offset)
        if unknown_labels == "drop":
            keep = np.isin(labels, known)
            d = {"boxes": boxes[keep], "scores": np.asarray(d["scores"]).reshape(-1)[keep], "labels": labels[keep]}
        else:
            d = {"boxes": boxes, "scores": d["scores"], "labels": labels}
        try:
            dets.append(sanitize_detections(d, width=w, height=h, known_labels=known, where=where))
        except InputError as exc:
            if "category ids" not in str(exc):
                raise
            raise InputError(f"{exc} Or leave them out with the option unknown_labels=drop "
                             "(-O unknown_labels=drop), or map them with label_map / label_offset.") from None
    columns = pad_detections(dets, max_detections)
    columns["pixel_rmse"] = np.asarray(ctx["rmse"], dtype=np.float32)
    return columns


def cache_root(cache: str | os.PathLike | None) -> str | None:
    return None if cache in (None, "", False) else str(Path(cache).expanduser().resolve())


def write_cache_settings(cache: str, settings: Mapping[str, Any]) -> None:
    """Record (or check) the settings of a corrupted-image cache in ``<cache>/robustlab-corrupt.json``,
    the file ``robustlab corrupt`` keeps, so either tool can resume the other's cache."""
    import json
    from ..corruptions.dataset import SUMMARY_NAME, RESUME_KEYS
    from ..errors import DataError
    from ..fsutil import atomic_write_text

    path = Path(cache) / SUMMARY_NAME
    wanted = {"seed": settings["seed"], "profile": settings["profile"], "format": "png", "quality": None}
    if path.is_file():
        try:
            old = json.loads(path.read_text())["settings"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{path} is unreadable ({exc}); delete it or choose another cache folder.") from exc
        diff = [f"{k} {old.get(k)!r} (asked: {wanted[k]!r})" for k in RESUME_KEYS if old.get(k) != wanted[k]]
        if diff:
            raise InputError(f"cache {cache} holds images made with {', '.join(diff)}; use another cache folder.")
        return
    Path(cache).mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"tool": "robustlab evaluate (detection cache)",
                                        "settings": {**wanted, "corruptions": settings["corruptions"],
                                                     "severities": settings["severities"]}}, indent=1) + "\n")
