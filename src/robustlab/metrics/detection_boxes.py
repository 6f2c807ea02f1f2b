"""One image's boxes for the detection metrics: ground truth and detections read and checked,
detector boxes clipped to the image, IoU, and the IoU thresholds (a number or ImageNet-VID's
per-object rule). The conventions are those of :mod:`.detection`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ._checks import as_float_array, as_int_array, check_scalar, numbers_only

__all__ = ["IouThreshold", "box_array", "box_iou", "check_iou_threshold", "clip_boxes", "detection_arrays",
           "field_of", "ground_truth_arrays", "per_box_vector", "sanitize_detections", "vid_iou_threshold"]

#: An IoU threshold: a number in (0, 1] or ``"vid"`` (ImageNet-VID's per-object thresholds).
IouThreshold = float | Literal["vid"]


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` of a mapping, ``obj.name`` of any other object (``default`` when absent)."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def box_array(value: Any, where: str) -> np.ndarray:
    """``value`` as float64 xyxy boxes (N, 4), checked: finite, x2 >= x1, y2 >= y1 (``where`` names them)."""
    arr = numbers_only(value if value is not None else np.zeros((0, 4)), f"{where}: boxes").astype(np.float64)
    if arr.size == 0:
        return arr.reshape(0, 4)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise InputError(f"{where}: boxes must have shape (N, 4) as x1, y1, x2, y2; got {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0][0]
        raise InputError(f"{where}: box {bad} is not finite ({arr[bad].tolist()}); "
                         "drop or fix NaN/inf boxes before evaluating.")
    inverted = (arr[:, 2] < arr[:, 0]) | (arr[:, 3] < arr[:, 1])
    if inverted.any():
        bad = int(np.flatnonzero(inverted)[0])
        raise InputError(f"{where}: box {bad} has x2 < x1 or y2 < y1 ({arr[bad].tolist()}); "
                         "boxes are x1, y1, x2, y2 (convert x, y, w, h first).")
    return arr


def per_box_vector(value: Any, n: int, dtype: Any, name: str, where: str) -> np.ndarray:
    """``value`` as one ``dtype`` entry per box (``n``), checked (flags: booleans or 0/1)."""
    if value is None:
        value = np.zeros(0, dtype)
    elif dtype is bool:  # flags (difficult, iscrowd, ignore): booleans or 0/1; [] (JSON's, float) for no box
        value = np.asarray(value)
        if value.size and (value.dtype.kind not in "biu"
                           or (value.dtype.kind != "b" and np.any((value != 0) & (value != 1)))):
            raise InputError(f"{where}: {name} must be booleans (or 0/1), one per box; got {value.tolist()[:6]}.")
    elif np.dtype(dtype).kind == "i":
        value = as_int_array(value, f"{where}: {name}", min_value=None) if np.size(value) else np.zeros(0, dtype)
    else:
        value = numbers_only(value, f"{where}: {name}")
    arr = np.asarray(value, dtype=dtype).reshape(-1)
    if arr.shape[0] != n:
        raise InputError(f"{where}: {name} has {arr.shape[0]} entries for {n} boxes; give one per box.")
    return arr


def ground_truth_arrays(gt: Any, where: str = "ground truth") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(boxes float64 (N,4), labels int64 (N,), ignore bool (N,))`` of one image's ground truth.

    ``ignore`` is taken from an ``ignore`` field, else ``difficult | iscrowd`` (all False when
    none is given).
    """
    boxes = box_array(field_of(gt, "boxes"), where)
    n = len(boxes)
    labels = per_box_vector(field_of(gt, "labels"), n, np.int64, "labels", where)
    ignore = field_of(gt, "ignore")
    if ignore is None:
        ignore = np.zeros(n, bool)
        for flag in ("difficult", "iscrowd"):
            value = field_of(gt, flag)
            if value is not None:
                ignore = ignore | per_box_vector(value, n, bool, flag, where)
    return boxes, labels, per_box_vector(ignore, n, bool, "ignore", where)


def detection_arrays(det: Any, where: str = "detections") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(boxes float64 (M,4), scores float64 (M,), labels int64 (M,))`` of one image's detections.

    Raises InputError for NaN/inf scores or boxes, inverted boxes and length mismatches.
    """
    boxes = box_array(field_of(det, "boxes"), where)
    n = len(boxes)
    scores = per_box_vector(field_of(det, "scores"), n, np.float64, "scores", where)
    if not np.all(np.isfinite(scores)):
        bad = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise InputError(f"{where}: score {bad} is {scores[bad]}; detector scores must be finite "
                         "(check the model's output head for NaN).")
    labels = per_box_vector(field_of(det, "labels"), n, np.int64, "labels", where)
    return boxes, scores, labels


def clip_boxes(boxes: np.ndarray, width: float, height: float) -> np.ndarray:
    """Clip xyxy boxes (N, 4) to the image ``[0, width] x [0, height]`` (pixels)."""
    out = np.array(box_array(boxes, "clip_boxes"), dtype=np.float64, copy=True).reshape(-1, 4)
    for name, size in (("width", width), ("height", height)):
        if check_scalar(size, name) < 0:
            raise InputError(f"{name} must be >= 0 pixels, got {size}.")
    out[:, 0::2] = np.clip(out[:, 0::2], 0.0, float(width))
    out[:, 1::2] = np.clip(out[:, 1::2], 0.0, float(height))
    return out


def sanitize_detections(det: Any, *, width: float, height: float,
                        known_labels: Iterable[int] | None = None,
                        where: str = "detections") -> dict[str, np.ndarray]:
    """Validate one image's detector output and clip its boxes to the image.

    Parameters
    ----------
    det : mapping or object with ``boxes`` (M, 4) xyxy pixels, ``scores`` (M,), ``labels`` (M,).
    width, height : image size in pixels (the boxes' coordinate frame).
    known_labels : the dataset's category ids; a label outside them raises InputError.

    Returns
    -------
    dict with ``boxes`` float64 (M, 4) clipped to the image, ``scores`` float64 (M,),
    ``labels`` int64 (M,). No boxes in, no boxes out. Boxes wholly outside the image become
    zero-area boxes on its border: they stay (they are false positives), so recall and
    precision count every box the detector produced.
    """
    boxes, scores, labels = detection_arrays(det, where)
    if known_labels is not None:
        known = set(int(k) for k in known_labels)
        unknown = sorted(set(labels.tolist()) - known)
        if unknown:
            raise InputError(f"{where}: category ids {unknown} are not in the dataset "
                             f"(known: {sorted(known)}); map the detector's label space first.")
    return {"boxes": clip_boxes(boxes, width, height), "scores": scores, "labels": labels}


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix (N, M) of xyxy boxes ``a`` (N, 4) and ``b`` (M, 4); 0 where the union is 0."""
    a = numbers_only(a, "box_iou: a").astype(np.float64).reshape(-1, 4)
    b = numbers_only(b, "box_iou: b").astype(np.float64).reshape(-1, 4)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("box_iou: boxes must be finite (x1, y1, x2, y2) coordinates; got NaN or infinity.")
    iw = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    ih = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def vid_iou_threshold(widths: np.ndarray | float, heights: np.ndarray | float) -> np.ndarray:
    """ImageNet-VID per-object IoU threshold ``min(0.5, w*h / ((w+10)(h+10)))``.

    ``widths``, ``heights``: ground-truth box sizes in pixels (devkit convention: ``xmax - xmin
    + 1`` of the inclusive XML indices, i.e. ``x2 - x1`` here). Small objects get a lower
    threshold, which tolerates a fixed ~5 px localisation error around them.
    """
    w = as_float_array(widths, "widths", finite=False)
    h = as_float_array(heights, "heights", finite=False)
    if w.shape != h.shape:
        raise InputError(f"vid_iou_threshold: widths {w.shape} and heights {h.shape} must have the same shape.")
    if np.any(w < 0) or np.any(h < 0) or not (np.all(np.isfinite(w)) and np.all(np.isfinite(h))):
        raise InputError("vid_iou_threshold: widths and heights must be finite and >= 0.")
    return np.minimum(0.5, (w * h) / ((w + 10.0) * (h + 10.0)))


def check_iou_threshold(iou_threshold: Any) -> IouThreshold:
    """A valid IoU threshold: a number in (0, 1] (as float) or ``"vid"``; else InputError.

    ``"vid"`` selects ImageNet-VID's per-object thresholds (:func:`vid_iou_threshold`); the
    papers' detection pm-k uses the fixed 0.5.
    """
    if isinstance(iou_threshold, str):
        if iou_threshold.strip().lower() == "vid":
            return "vid"
        try:
            iou_threshold = float(iou_threshold)
        except ValueError:
            raise InputError(f"iou_threshold {iou_threshold!r}: give a number in (0, 1] (0.5 as in the papers) "
                             "or 'vid' (ImageNet-VID's per-object thresholds).") from None
    if isinstance(iou_threshold, bool) or not isinstance(iou_threshold, (int, float, np.integer, np.floating)):
        raise InputError(f"iou_threshold {iou_threshold!r}: give a number in (0, 1] or 'vid'.")
    t = float(iou_threshold)
    if not 0.0 < t <= 1.0:  # also refuses NaN
        raise InputError(f"iou_threshold {iou_threshold!r} is outside (0, 1]: an IoU threshold must be above 0 "
                         "and at most 1 (0.5 as in the papers), or 'vid'.")
    return t
