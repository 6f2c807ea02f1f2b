"""Detection images through the engine: corrupted reads, fixed-size canvases, detector columns.

The engine batches uint8 arrays of one shape, but detection images keep their native sizes
(the detector resizes them itself, after the corruption). So a worker places each image in
the top-left corner of a *canvas* as large as the biggest image of its unit, and writes what
the main process needs into one extra bottom row (a *header*, channel 0, one byte per pixel):

    native height, native width, input height, input width   (uint16 each)
    dataset index of the image                                (uint32)
    setting index (0 = clean)                                 (uint16)
    RMSE between clean and corrupted native image             (float32; NaN when clean)

The main process (:func:`detect_batch`) decodes the header, cuts every image back to its
own size, runs the detector on the list, maps boxes back to native pixels and returns
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
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import torch

from ..corruptions.api import corrupt
from ..corruptions.dataset import output_relative
from ..data.images import encode_image, read_image
from ..errors import InputError
from ..fsutil import atomic_path
from ..metrics.detection import sanitize_detections
from ..metrics.under_corruption import image_rmse
from ..models.detection import ensure_detector
from ..models.preprocessing import Preprocessing
from ..seeding import derive_seed

#: Bytes of the header row (see module docstring).
HEADER_BYTES = 18
#: Canvas of a model that never looks at pixels (a results file): header only.
_NO_PIXELS = (1, HEADER_BYTES)


# --- header ----------------------------------------------------------------------------------------


def encode_header(native_hw: tuple[int, int], input_hw: tuple[int, int], index: int, setting: int,
                  rmse: float) -> np.ndarray:
    """The header bytes (uint8, ``HEADER_BYTES``)."""
    parts = [np.asarray([*native_hw, *input_hw], ">u2").tobytes(), np.asarray([index], ">u4").tobytes(),
             np.asarray([setting], ">u2").tobytes(), np.asarray([rmse], ">f4").tobytes()]
    return np.frombuffer(b"".join(parts), np.uint8)


def decode_headers(x: torch.Tensor) -> dict[str, np.ndarray]:
    """Header fields of a batch ``x`` (float NCHW in [0, 1], as the engine hands it over)."""
    raw = (x[:, 0, -1, :HEADER_BYTES] * 255.0).round().to(torch.uint8).cpu().numpy()
    sizes = raw[:, :8].copy().view(">u2").astype(np.int64)
    return {"native_hw": sizes[:, :2], "input_hw": sizes[:, 2:4],
            "index": raw[:, 8:12].copy().view(">u4").astype(np.int64).reshape(-1),
            "setting": raw[:, 12:14].copy().view(">u2").astype(np.int64).reshape(-1),
            "rmse": raw[:, 14:18].copy().view(">f4").astype(np.float32).reshape(-1)}


# --- samples ---------------------------------------------------------------------------------------


def prepared_size(preprocessing: Preprocessing | None, h: int, w: int) -> tuple[int, int]:
    """(height, width) of an h x w image after the model's own resize/crop in the workers."""
    if preprocessing is None or (preprocessing.resize is None and preprocessing.crop is None):
        return h, w
    if preprocessing.crop is not None and (h, w) == tuple(preprocessing.crop):
        return h, w
    if preprocessing.resize is not None:
        h, w = preprocessing._resized_size(h, w)
    if preprocessing.crop is not None:
        return tuple(preprocessing.crop)  # type: ignore[return-value]
    return h, w


@dataclass(frozen=True, eq=False)
class DetectionImages:
    """One unit's images (picklable: paths, not pixels), corrupted on the fly when asked.

    Image ``i`` is ``corrupt(read(path_i), corruption, severity, rng=RandomState(seed_i))``
    with ``seed_i = derive_seed(seed, relative path, corruption, severity)``, the seed
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
    _canvas: dict = field(default_factory=dict, repr=False)

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
            rng = np.random.RandomState(derive_seed(self.seed, self.relative[i], self.corruption, self.severity))
            image = corrupt(clean, self.corruption, self.severity, rng=rng, profile=self.profile)
            if cached is not None:
                with atomic_path(cached) as tmp:
                    tmp.write_bytes(encode_image(image, "png"))
        return image, image_rmse(clean, image) if image.shape == clean.shape else float("nan")

    def read(self, i: int) -> np.ndarray:
        return self.read_pair(i)[0]

    def canvas_shape(self, preprocessing: Preprocessing | None) -> tuple[int, int]:
        key = None if preprocessing is None else repr(preprocessing)
        if key not in self._canvas:
            sizes = [prepared_size(preprocessing, int(h), int(w)) for h, w in self.sizes] or [(1, 1)]
            self._canvas[key] = (max(s[0] for s in sizes), max(max(s[1] for s in sizes), HEADER_BYTES))
        return self._canvas[key]

    def load(self, i: int, prepare) -> np.ndarray:
        """Worker side: the image (prepared by the model) on its canvas, with the header row.

        ``prepare`` is the engine's :class:`~robustlab.engine.executor.ImagePreparer` (its
        ``preprocessing`` sizes the canvas; ``precomputed`` models need no pixels)."""
        owner = prepare
        h, w = (int(v) for v in self.sizes[i])
        if getattr(owner, "precomputed", False):  # a results file: no pixels needed
            canvas = np.zeros((_NO_PIXELS[0] + 1, _NO_PIXELS[1], 3), np.uint8)
            canvas[-1, :HEADER_BYTES, 0] = encode_header((h, w), (h, w), int(self.indices[i]), self.setting_index,
                                                         float("nan"))
            return canvas
        image, rmse = self.read_pair(i)
        if image.shape[:2] != (h, w):
            raise InputError(f"image {self._path(i)} is {image.shape[1]}x{image.shape[0]} but its annotation says "
                             f"{w}x{h}; fix the annotation's width/height.")
        prepared = prepare(image)
        ch, cw = self.canvas_shape(getattr(owner, "preprocessing", None))
        ph, pw = prepared.shape[:2]
        if ph > ch or pw > cw:
            raise InputError(f"the model's preprocessing made image {self.relative[i]} {pw}x{ph}, larger than "
                             f"expected ({cw}x{ch}); give the detector no fixed resize/crop, or a Preprocessing.")
        canvas = np.zeros((ch + 1, cw, 3), np.uint8)
        canvas[:ph, :pw] = prepared
        canvas[-1, :HEADER_BYTES, 0] = encode_header((h, w), (ph, pw), int(self.indices[i]), self.setting_index, rmse)
        return canvas


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


def detect_batch(model: torch.nn.Module, x: torch.Tensor, *, known_labels: Sequence[int], max_detections: int,
                 label_map: Mapping[str, int] | None = None, label_offset: int = 0,
                 unknown_labels: str = "error", lookup=None) -> dict[str, np.ndarray]:
    """Run a detector on a batch of canvases and return the padded columns (module docstring).

    ``lookup(setting_index, dataset_indices) -> detections`` serves precomputed models.
    Boxes are mapped back to native pixels and clipped to the image; detections with labels
    outside ``known_labels`` (after ``label_map`` / ``label_offset``) raise InputError, or are
    dropped with ``unknown_labels="drop"``. NaN/inf boxes or scores raise ModelError.
    """
    prep = getattr(model, "preprocessing", None)
    if prep is not None and prep.crop is not None:
        raise InputError(f"the detector's preprocessing crops images to {prep.crop}: boxes outside the crop would be "
                         "lost. Give a detector only a resize (or none: torchvision's detectors resize themselves).")
    head = decode_headers(x)
    if getattr(model, "precomputed", False):
        if len(set(head["setting"].tolist())) > 1:
            raise InputError("a batch mixes settings; the engine never does this.")
        raw = lookup(int(head["setting"][0]), head["index"])
        scale = np.ones((len(raw), 2))
    else:
        detector = ensure_detector(model)
        images = [x[i, :, :int(ph), :int(pw)] for i, (ph, pw) in enumerate(head["input_hw"])]
        with torch.inference_mode():
            outputs = detector(images)
        raw = [{k: v.detach().float().cpu().numpy() if k != "labels" else v.cpu().numpy()
                for k, v in out.items()} for out in outputs]
        scale = head["native_hw"][:, ::-1] / np.maximum(head["input_hw"][:, ::-1], 1)  # (sx, sy)
    known = np.asarray(sorted(set(int(v) for v in known_labels)), np.int64)
    dets = []
    for i, d in enumerate(raw):
        h, w = (int(v) for v in head["native_hw"][i])
        where = f"detections of image {int(head['index'][i])} (native {w}x{h})"
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
                             "(-o unknown_labels=drop), or map them with label_map / label_offset.") from None
    columns = pad_detections(dets, max_detections)
    columns["pixel_rmse"] = head["rmse"].astype(np.float32)
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
