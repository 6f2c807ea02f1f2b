"""Detection metrics: COCO AP family, VOC AP50, VID per-object thresholds, detection pm-k.

Conventions (every function here):

- Boxes are ``float`` arrays of shape (N, 4), ``x1, y1, x2, y2`` in pixels, continuous
  coordinates (a box covering pixel columns 0..9 is ``x1=0, x2=10``; its width is ``x2 - x1``).
  The readers of :mod:`robustlab.data.detection` convert the 1-based/inclusive pixel indices
  of VOC and ImageNet-VID XML to this convention, so the devkits' ``+1`` widths come out
  without any legacy flag.
- Ground truth of one image: a mapping or object with ``boxes`` (N, 4), ``labels`` (N,) int,
  and optionally ``ignore`` (N,) bool, or ``difficult`` / ``iscrowd`` flags (ignored objects
  neither count as positives nor make a matching detection a false positive).
- Detections of one image: ``boxes`` (M, 4), ``scores`` (M,) finite floats, ``labels`` (M,)
  int. An image with no detections is ``boxes`` of shape (0, 4).
- Bad input (NaN scores or boxes, inverted boxes, shape mismatches, unknown category ids)
  raises :class:`~robustlab.errors.InputError` naming the image and the value. Detector boxes
  reaching outside the image are clipped to it by :func:`sanitize_detections` (the documented
  handling; ground truth outside the image is an error of the reader instead).

Sources: COCO AP (Lin et al. 2014; computed by faster-coco-eval, checked against
pycocotools), VOC07 11-point and VOC2010+ all-point AP (Everingham et al. 2010), ImageNet-VID
per-object IoU threshold (Russakovsky et al. 2015), detection pm-k and localization pm-k
(Shankar et al. 2019, "Do image classifiers generalize across time?"; no public code).
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ._checks import (as_float_array, as_fraction_array, as_int_array, check_fraction, check_nonempty_mapping,
                      check_scalar, numbers_only)

__all__ = [
    "COCO_STAT_NAMES", "DetectionPmkResult", "ImageMatches", "ap_from_matches", "ap_per_class", "average_precision", "box_iou",
    "check_iou_threshold", "clip_boxes", "coco_metrics", "detection_arrays", "detection_pmk", "ground_truth_arrays",
    "localization_pmk", "match_detections", "match_image", "mean_ap", "per_image_ap", "sanitize_detections",
    "to_coco_ground_truth", "to_coco_results", "vid_iou_threshold", "voc_ap50",
]  # fmt: skip

#: The 12 numbers COCOeval.summarize() reports for bbox, in its order.
COCO_STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl",
                   "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")

APMethod = Literal["all-point", "11-point"]
IouThreshold = float | Literal["vid"]
MatchingRule = Literal["voc", "best-unmatched"]


# ---------------------------------------------------------------------------------------------
# input normalisation


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _boxes(value: Any, where: str) -> np.ndarray:
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


def _vector(value: Any, n: int, dtype: Any, name: str, where: str) -> np.ndarray:
    if value is None:
        value = np.zeros(0, dtype)
    elif dtype is bool:  # flags (difficult, iscrowd, ignore): booleans or 0/1
        value = np.asarray(value)
        if value.dtype.kind not in "biu" or (value.dtype.kind != "b" and np.any((value != 0) & (value != 1))):
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
    boxes = _boxes(_get(gt, "boxes"), where)
    n = len(boxes)
    labels = _vector(_get(gt, "labels"), n, np.int64, "labels", where)
    ignore = _get(gt, "ignore")
    if ignore is None:
        ignore = np.zeros(n, bool)
        for flag in ("difficult", "iscrowd"):
            value = _get(gt, flag)
            if value is not None:
                ignore = ignore | _vector(value, n, bool, flag, where)
    return boxes, labels, _vector(ignore, n, bool, "ignore", where)


def detection_arrays(det: Any, where: str = "detections") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(boxes float64 (M,4), scores float64 (M,), labels int64 (M,))`` of one image's detections.

    Raises InputError for NaN/inf scores or boxes, inverted boxes and length mismatches.
    """
    boxes = _boxes(_get(det, "boxes"), where)
    n = len(boxes)
    scores = _vector(_get(det, "scores"), n, np.float64, "scores", where)
    if not np.all(np.isfinite(scores)):
        bad = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise InputError(f"{where}: score {bad} is {scores[bad]}; detector scores must be finite "
                         "(check the model's output head for NaN).")
    labels = _vector(_get(det, "labels"), n, np.int64, "labels", where)
    return boxes, scores, labels


def clip_boxes(boxes: np.ndarray, width: float, height: float) -> np.ndarray:
    """Clip xyxy boxes (N, 4) to the image ``[0, width] x [0, height]`` (pixels)."""
    out = np.array(_boxes(boxes, "clip_boxes"), dtype=np.float64, copy=True).reshape(-1, 4)
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


# ---------------------------------------------------------------------------------------------
# IoU, thresholds, matching, AP


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


def _gt_thresholds(gt_boxes: np.ndarray, iou_threshold: IouThreshold) -> np.ndarray:
    threshold = check_iou_threshold(iou_threshold)
    if threshold == "vid":
        return vid_iou_threshold(gt_boxes[:, 2] - gt_boxes[:, 0], gt_boxes[:, 3] - gt_boxes[:, 1])
    return np.full(len(gt_boxes), threshold)


def match_detections(det_boxes: np.ndarray, det_scores: np.ndarray, gt_boxes: np.ndarray,
                     gt_ignore: np.ndarray, thresholds: np.ndarray, *,
                     rule: MatchingRule = "best-unmatched",
                     iou: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Greedy matching of one image's detections (one class) to its ground truth.

    Detections are visited by descending score (stable for ties). ``rule="voc"`` is the
    VOC matching of mmdetection's ``eval_map`` (what the Robust Detection Benchmark's numbers
    come from): take the ground truth of highest IoU;
    it is a hit if IoU >= its threshold and it is still free, a duplicate (false positive) if
    already taken. (py-faster-rcnn's ``voc_eval.py`` needs IoU > threshold; the two differ
    only for a detection at exactly the threshold.)
    ``rule="best-unmatched"`` is the ImageNet-VID devkit: take the still-free ground truth of
    highest IoU among those with IoU >= their own threshold. A detection matched to an ignored
    object is neither a true nor a false positive.

    ``iou``: the (M, N) IoU matrix when the caller has it already.

    Returns
    -------
    tp, fp : bool arrays (M,) aligned with the input detections.

    Raises
    ------
    InputError
        Boxes that are not (K, 4) finite numbers, scores, ignore flags or thresholds not one per
        box, thresholds outside (0, 1].
    """
    det_boxes = _boxes(det_boxes, "det_boxes")
    gt_boxes = _boxes(gt_boxes, "gt_boxes")
    det_scores = _vector(det_scores, len(det_boxes), np.float64, "det_scores", "match_detections")
    if not np.all(np.isfinite(det_scores)):
        raise InputError("match_detections: det_scores must be finite.")
    gt_ignore = _vector(gt_ignore, len(gt_boxes), bool, "gt_ignore", "match_detections")
    thresholds = _vector(thresholds, len(gt_boxes), np.float64, "thresholds", "match_detections")
    if np.any(~(thresholds > 0) | (thresholds > 1)):
        raise InputError("match_detections: thresholds must be IoU thresholds in (0, 1], one per ground-truth box.")
    return _match_detections(det_boxes, det_scores, gt_boxes, gt_ignore, thresholds, rule=rule, iou=iou)


def _match_detections(det_boxes: np.ndarray, det_scores: np.ndarray, gt_boxes: np.ndarray,
                      gt_ignore: np.ndarray, thresholds: np.ndarray, *, rule: MatchingRule,
                      iou: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`match_detections` on validated arrays (the per-class inner loop of :func:`match_image`)."""
    m = len(det_boxes)
    tp = np.zeros(m, bool)
    fp = np.zeros(m, bool)
    if m == 0:
        return tp, fp
    if len(gt_boxes) == 0:
        fp[:] = True
        return tp, fp
    if iou is None:
        iou = box_iou(det_boxes, gt_boxes)
    taken = np.zeros(len(gt_boxes), bool)
    for d in np.argsort(-np.asarray(det_scores), kind="stable"):
        if rule == "voc":
            j = int(np.argmax(iou[d]))
            if iou[d, j] >= thresholds[j]:
                if gt_ignore[j]:
                    continue
                if not taken[j]:
                    tp[d] = taken[j] = True
                else:
                    fp[d] = True
            else:
                fp[d] = True
        elif rule == "best-unmatched":
            ok = (iou[d] >= thresholds) & ~taken
            if not ok.any():
                fp[d] = True
                continue
            j = int(np.argmax(np.where(ok, iou[d], -1.0)))
            if gt_ignore[j]:
                continue
            tp[d] = taken[j] = True
        else:
            raise InputError(f"matching rule {rule!r}: use 'voc' or 'best-unmatched'.")
    return tp, fp


def average_precision(recall: np.ndarray, precision: np.ndarray, *,
                      method: APMethod = "all-point") -> float:
    """Area under a precision/recall curve given in descending-score order.

    ``method="11-point"``: VOC2007, mean over t in {0, 0.1, ..., 1} of the highest precision
    at recall >= t (0 when none). ``"all-point"``: VOC2010+/ILSVRC, the area under the
    monotone (right-maximum) precision envelope, summed where recall changes.
    """
    rec = as_fraction_array(recall, "recall").reshape(-1)
    prec = as_fraction_array(precision, "precision").reshape(-1)
    if rec.shape != prec.shape:
        raise InputError(f"recall {rec.shape} and precision {prec.shape} differ in length.")
    falls = np.flatnonzero(np.diff(rec) < 0)
    if falls.size:
        i = int(falls[0])
        raise InputError(f"recall must not decrease along the curve (descending-score order): {rec[i]:g} at "
                         f"position {i} is followed by {rec[i + 1]:g}. Sort the detections by score, highest first.")
    if method == "11-point":
        total = 0.0
        for t in np.linspace(0.0, 1.0, 11):
            above = prec[rec >= t]
            total += float(above.max()) if above.size else 0.0
        return total / 11.0
    if method == "all-point":
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        mpre = np.maximum.accumulate(mpre[::-1])[::-1]
        steps = np.flatnonzero(mrec[1:] != mrec[:-1])
        return float(np.sum((mrec[steps + 1] - mrec[steps]) * mpre[steps + 1]))
    raise InputError(f"AP method {method!r}: use 'all-point' or '11-point'.")


@dataclass(frozen=True)
class ImageMatches:
    """Matching outcome of one image: what dataset-level AP needs from it.

    ``labels``, ``scores``, ``tp``: the counted detections (ignored matches dropped), with
    whether each is a true positive; ``positives``: ``{label: non-ignored objects}``.
    """

    labels: np.ndarray
    scores: np.ndarray
    tp: np.ndarray
    positives: dict[int, int]


def match_image(gt: Any, det: Any, *, iou_threshold: IouThreshold = 0.5,
                rule: MatchingRule | None = None, class_agnostic: bool = False,
                image_id: Hashable = None) -> ImageMatches:
    """Match one image's detections to its ground truth, per class (see :func:`ap_per_class`)."""
    iou_threshold = check_iou_threshold(iou_threshold)
    if rule is None:
        rule = "best-unmatched" if iou_threshold == "vid" else "voc"
    g_boxes, g_labels, g_ignore = ground_truth_arrays(gt, f"ground truth of image {image_id!r}")
    d_boxes, d_scores, d_labels = detection_arrays(det, f"detections of image {image_id!r}")
    if class_agnostic:
        g_labels, d_labels = np.zeros_like(g_labels), np.zeros_like(d_labels)
    thresholds = _gt_thresholds(g_boxes, iou_threshold)
    positives: dict[int, int] = {}
    for label, ignored in zip(g_labels.tolist(), g_ignore.tolist()):
        positives[label] = positives.get(label, 0) + (not ignored)
    keep = np.zeros(len(d_boxes), bool)
    tp = np.zeros(len(d_boxes), bool)
    iou = box_iou(d_boxes, g_boxes) if len(d_boxes) and len(g_boxes) else None
    for label in set(d_labels.tolist()):
        dsel = np.flatnonzero(d_labels == label)
        gsel = np.flatnonzero(g_labels == label)
        t, f = _match_detections(d_boxes[dsel], d_scores[dsel], g_boxes[gsel], g_ignore[gsel],
                                thresholds[gsel], rule=rule,
                                iou=None if iou is None else iou[np.ix_(dsel, gsel)])
        tp[dsel] = t
        keep[dsel] = t | f
    return ImageMatches(d_labels[keep], d_scores[keep], tp[keep], positives)


def ap_from_matches(matches: Iterable[ImageMatches], *, method: APMethod = "all-point") -> dict[int, float]:
    """``{label: AP}`` pooled over images, for every label with at least one positive."""
    matches = list(matches)
    positives: dict[int, int] = {}
    for m in matches:
        for label, n in m.positives.items():
            positives[label] = positives.get(label, 0) + n
    labels = np.concatenate([m.labels for m in matches]) if matches else np.zeros(0, np.int64)
    scores = np.concatenate([m.scores for m in matches]) if matches else np.zeros(0)
    tps = np.concatenate([m.tp for m in matches]) if matches else np.zeros(0, bool)
    result: dict[int, float] = {}
    for label in sorted(positives):
        npos = positives[label]
        if npos == 0:
            continue
        sel = labels == label
        if not sel.any():
            result[label] = 0.0
            continue
        order = np.argsort(-scores[sel], kind="stable")
        hits = tps[sel][order]
        ctp = np.cumsum(hits)
        cfp = np.cumsum(~hits)
        result[label] = average_precision(ctp / npos, ctp / (ctp + cfp), method=method)
    return result


def ap_per_class(ground_truth: Sequence[Any], detections: Sequence[Any], *,
                 iou_threshold: IouThreshold = 0.5, method: APMethod = "all-point",
                 rule: MatchingRule | None = None, class_agnostic: bool = False,
                 image_ids: Sequence[Hashable] | None = None) -> dict[int, float]:
    """AP of every class that has at least one non-ignored ground-truth object.

    Parameters
    ----------
    ground_truth, detections : one entry per image, same order (see module docstring).
    iou_threshold : a number (0.5 = VOC AP50) or ``"vid"`` for the per-object VID threshold.
    method : ``"11-point"`` (VOC07) or ``"all-point"`` (VOC2010+, ILSVRC).
    rule : matching rule (see :func:`match_detections`); default ``"voc"`` for a numeric
        threshold and ``"best-unmatched"`` for ``"vid"``.
    class_agnostic : merge all labels into one (localization AP).
    image_ids : names used in error messages.

    Returns
    -------
    ``{label: AP in [0, 1]}``. Detections of a class without ground truth are not scored
    (VOC reports no AP for such a class).
    """
    if len(ground_truth) != len(detections):
        raise InputError(f"{len(ground_truth)} ground-truth images but {len(detections)} detection "
                         "entries; give one detection entry (possibly empty) per image.")
    ids = list(image_ids) if image_ids is not None else list(range(len(ground_truth)))
    return ap_from_matches((match_image(g, d, iou_threshold=iou_threshold, rule=rule,
                                        class_agnostic=class_agnostic, image_id=i)
                            for i, g, d in zip(ids, ground_truth, detections)), method=method)


def mean_ap(per_class: Mapping[int, float]) -> float:
    """Mean of per-class APs (fractions in [0, 1]).

    Raises
    ------
    InputError
        ``per_class`` is empty (no class has ground truth: the mean is undefined) or holds a
        value that is not an AP.
    """
    check_nonempty_mapping(per_class, "per_class")
    return _mean_or_nan(per_class)


def _mean_or_nan(per_class: Mapping[int, float]) -> float:
    """The mean AP, NaN for no class (an image without ground truth: see :func:`per_image_ap`)."""
    values = [check_fraction(value, f"per_class[{label!r}]") for label, value in per_class.items()]
    return float(np.mean(values)) if values else math.nan


def voc_ap50(ground_truth: Sequence[Any], detections: Sequence[Any], *,
             method: APMethod = "11-point", image_ids: Sequence[Hashable] | None = None
             ) -> tuple[float, dict[int, float]]:
    """Pascal VOC AP50: ``(mAP, {label: AP})`` with VOC matching (a hit at IoU >= 0.5).

    ``method="11-point"`` is VOC2007 test (what the Robust Detection Benchmark and
    mmdetection report for Pascal-C); ``"all-point"`` is VOC2010+. Difficult objects are
    ignored. The match counts IoU >= 0.5, as mmdetection's ``eval_map`` does (the
    reference for the published Pascal-C numbers); py-faster-rcnn's ``voc_eval.py`` needs
    IoU > 0.5, which differs only for a detection at exactly IoU 0.5.
    """
    per_class = ap_per_class(ground_truth, detections, iou_threshold=0.5, method=method,
                             rule="voc", image_ids=image_ids)
    return mean_ap(per_class), per_class


def per_image_ap(gt: Any, det: Any, *, iou_threshold: IouThreshold = 0.5,
                 method: APMethod = "all-point", class_agnostic: bool = False) -> float:
    """AP of one image: mean over the categories present in its ground truth.

    ``iou_threshold``: 0.5 (default, the papers' "mAP at a fixed IoU threshold"), another
    number in (0, 1], or ``"vid"`` for ImageNet-VID's per-object thresholds.
    Returns NaN for an image without (non-ignored) ground truth: its AP is undefined.
    Used by detection pm-k (Shankar et al. 2019) to find the worst frame of a neighbourhood.
    """
    return _mean_or_nan(ap_per_class([gt], [det], iou_threshold=iou_threshold, method=method,
                                     class_agnostic=class_agnostic))


# ---------------------------------------------------------------------------------------------
# detection pm-k


@dataclass(frozen=True)
class DetectionPmkResult:
    """Detection (or localization) pm-k on a set of anchors with neighbour sets.

    Attributes
    ----------
    anchor_map : mAP over the anchor frames (the "original" number), in [0, 1].
    pmk_map : mAP over the worst frame of each neighbourhood, in [0, 1].
    anchor_per_class, pmk_per_class : ``{label: AP}`` behind the two means.
    worst_frame : ``{anchor: frame}`` chosen for pm-k (the anchor itself when no neighbour
        has a strictly lower per-image AP).
    frame_ap : per-image AP of every scored frame (NaN for frames without ground truth, which
        are never chosen).
    class_agnostic : True for localization pm-k.
    """

    anchor_map: float
    pmk_map: float
    anchor_per_class: dict[int, float]
    pmk_per_class: dict[int, float]
    worst_frame: dict[str, str]
    frame_ap: dict[str, float]
    class_agnostic: bool = False
    n_anchors: int = field(default=0)


def detection_pmk(ground_truth: Mapping[str, Any], detections: Mapping[str, Any],
                  pmsets: Mapping[str, Sequence[str]], *, iou_threshold: IouThreshold = 0.5,
                  method: APMethod = "all-point", class_agnostic: bool = False) -> DetectionPmkResult:
    """Detection pm-k (Shankar et al. 2019): mAP after replacing each anchor by its worst frame.

    For every anchor, the per-image AP (:func:`per_image_ap`, mean over the categories
    present in that frame, at a fixed IoU of 0.5 by default as in the papers) of the anchor and of each
    neighbour is computed; the frame with the lowest AP replaces the anchor (ties keep the
    anchor, then the first listed neighbour). The pm-k mAP is the dataset mAP over those
    frames; the anchor mAP the same over the anchors.

    Parameters
    ----------
    ground_truth : ``{frame key: ground truth}`` for every anchor and neighbour.
    detections : ``{frame key: detections}``; a frame missing here counts as no detections.
    pmsets : ``{anchor key: [neighbour keys]}`` (ImageNet-Vid-Robust ``pmsets.json``).
    iou_threshold : 0.5 (default: the papers' "mAP at a fixed IoU threshold"), another number
        in (0, 1], or ``"vid"`` for ImageNet-VID's own per-object thresholds
        ``min(0.5, w*h / ((w+10)(h+10)))``, matched by the VID devkit's rule.
    class_agnostic : True gives localization pm-k (all labels merged).
    """
    iou_threshold = check_iou_threshold(iou_threshold)
    if not pmsets:
        raise InputError("pmsets is empty; give {anchor: [neighbours]} with at least one anchor.")
    empty = {"boxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.zeros(0, np.int64)}
    unknown = [k for a, ns in pmsets.items() for k in (a, *ns) if k not in ground_truth]
    if unknown:
        raise InputError(f"{len(unknown)} frames of pmsets have no ground truth, e.g. {unknown[0]!r}; "
                         "read the annotations of every anchor and neighbour.")
    matches: dict[str, ImageMatches] = {}
    frame_ap: dict[str, float] = {}

    def ap_of(key: str) -> float:
        if key not in frame_ap:
            matches[key] = match_image(ground_truth[key], detections.get(key, empty),
                                       iou_threshold=iou_threshold, class_agnostic=class_agnostic,
                                       image_id=key)
            frame_ap[key] = _mean_or_nan(ap_from_matches([matches[key]], method=method))
        return frame_ap[key]

    worst: dict[str, str] = {}
    for anchor, neighbours in pmsets.items():
        best_key, best_ap = anchor, ap_of(anchor)
        for key in neighbours:
            value = ap_of(key)
            if not math.isnan(value) and (math.isnan(best_ap) or value < best_ap):
                best_key, best_ap = key, value
        worst[anchor] = best_key

    anchors = list(pmsets)
    anchor_pc = ap_from_matches([matches[a] for a in anchors], method=method)
    pmk_pc = ap_from_matches([matches[worst[a]] for a in anchors], method=method)
    return DetectionPmkResult(anchor_map=mean_ap(anchor_pc), pmk_map=mean_ap(pmk_pc),
                              anchor_per_class=anchor_pc, pmk_per_class=pmk_pc,
                              worst_frame=worst, frame_ap=frame_ap,
                              class_agnostic=class_agnostic, n_anchors=len(anchors))


def localization_pmk(ground_truth: Mapping[str, Any], detections: Mapping[str, Any],
                     pmsets: Mapping[str, Sequence[str]], **kwargs: Any) -> DetectionPmkResult:
    """Localization pm-k: :func:`detection_pmk` with class-agnostic matching."""
    return detection_pmk(ground_truth, detections, pmsets, class_agnostic=True, **kwargs)


# ---------------------------------------------------------------------------------------------
# COCO


def to_coco_ground_truth(samples: Sequence[Any], categories: Sequence[Mapping[str, Any]] | Mapping[int, str]
                         ) -> dict[str, Any]:
    """COCO instances dict from per-image ground truth.

    ``samples``: objects/mappings with ``image_id``, ``width``, ``height``, ``boxes`` (N, 4)
    xyxy, ``labels`` (category ids) and optional ``iscrowd``. ``categories``: COCO category
    dicts or ``{id: name}``. Areas are box areas (the bbox evaluation's convention when no
    segmentation area is known).
    """
    cats = ([{"id": int(k), "name": str(v)} for k, v in categories.items()]
            if isinstance(categories, Mapping) else [dict(c) for c in categories])
    images, annotations = [], []
    for sample in samples:
        image_id = _get(sample, "image_id")
        boxes, labels, _ = ground_truth_arrays(sample, f"ground truth of image {image_id!r}")
        crowd = _get(sample, "iscrowd")
        crowd = np.zeros(len(boxes), bool) if crowd is None else np.asarray(crowd, bool).reshape(-1)
        images.append({"id": image_id, "width": int(_get(sample, "width")),
                       "height": int(_get(sample, "height"))})
        for box, label, is_crowd in zip(boxes, labels, crowd):
            w, h = float(box[2] - box[0]), float(box[3] - box[1])
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": int(label), "iscrowd": int(bool(is_crowd)),
                                "bbox": [float(box[0]), float(box[1]), w, h], "area": w * h})
    return {"images": images, "annotations": annotations, "categories": cats}


def to_coco_results(image_ids: Sequence[Hashable], detections: Sequence[Any]) -> list[dict[str, Any]]:
    """COCO results list ``[{image_id, category_id, bbox [x, y, w, h], score}]`` from xyxy detections."""
    if len(image_ids) != len(detections):
        raise InputError(f"{len(image_ids)} image ids for {len(detections)} detection entries.")
    out = []
    for image_id, det in zip(image_ids, detections):
        boxes, scores, labels = detection_arrays(det, f"detections of image {image_id!r}")
        for box, score, label in zip(boxes, scores, labels):
            out.append({"image_id": image_id, "category_id": int(label), "score": float(score),
                        "bbox": [float(box[0]), float(box[1]), float(box[2] - box[0]),
                                 float(box[3] - box[1])]})
    return out


def _coco_id(value: Any, where: str) -> Any:
    """A COCO id: a non-negative integer (or a non-empty string, for datasets named by file)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or int(value) < 0:
        raise InputError(f"{where} is {value!r:.40}; COCO ids are non-negative integers (or file names).")
    return value


def _coco_box(box: Any, where: str, *, inside: bool = False) -> None:
    """``[x, y, w, h]``: 4 finite numbers, w and h >= 0 (and x, y >= 0 when ``inside``: a
    ground-truth box lies in its image)."""
    arr = as_float_array(box, where, ndim=1)
    if arr.size != 4 or arr[2] < 0 or arr[3] < 0 or (inside and (arr[0] < 0 or arr[1] < 0)):
        low = "x, y, w, h >= 0" if inside else "w, h >= 0"
        raise InputError(f"{where} is {box!r:.60}; give 4 finite numbers x, y, w, h with {low}.")


def _check_coco_inputs(gt: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    check_nonempty_mapping(gt, "ground_truth")
    for key in ("images", "annotations", "categories"):
        if key not in gt or not isinstance(gt[key], (list, tuple)):
            raise InputError(f"COCO ground truth lacks the list {key!r}; give an instances dict "
                             "(images, annotations, categories).")
    if not gt["images"] or not gt["categories"]:
        raise InputError("COCO ground truth has no images or no categories: there is nothing to evaluate.")
    if not isinstance(results, (list, tuple)):
        raise InputError(f"results must be a list of COCO results, got {type(results).__name__}.")
    gt = copy.deepcopy(dict(gt))
    image_ids, cat_ids = set(), set()
    for i, img in enumerate(gt["images"]):
        check_nonempty_mapping(img, f"images[{i}]")
        image_ids.add(_coco_id(img.get("id"), f"images[{i}].id"))
        for side in ("width", "height"):
            if side in img and not check_scalar(img[side], f"images[{i}].{side}") > 0:
                raise InputError(f"images[{i}].{side} is {img[side]}; an image size is a positive number of pixels.")
    for i, cat in enumerate(gt["categories"]):
        check_nonempty_mapping(cat, f"categories[{i}]")
        cat_ids.add(_coco_id(cat.get("id"), f"categories[{i}].id"))
    for i, ann in enumerate(gt["annotations"]):
        check_nonempty_mapping(ann, f"annotations[{i}]")
        missing = [k for k in ("image_id", "category_id", "bbox") if k not in ann]
        if missing:
            raise InputError(f"COCO annotation {ann.get('id')!r} lacks {missing}.")
        if "id" in ann and (isinstance(ann["id"], (bool, str)) or _coco_id(ann["id"], f"annotations[{i}].id") is None):
            raise InputError(f"annotations[{i}].id is {ann['id']!r:.40}; annotation ids are non-negative integers.")
        if _coco_id(ann["image_id"], f"annotations[{i}].image_id") not in image_ids:
            raise InputError(f"annotations[{i}] is on image {ann['image_id']!r}, which is not in images.")
        if _coco_id(ann["category_id"], f"annotations[{i}].category_id") not in cat_ids:
            raise InputError(f"annotations[{i}] has unknown category_id {ann['category_id']!r}.")
        _coco_box(ann["bbox"], f"annotations[{i}].bbox", inside=True)
        crowd = ann.setdefault("iscrowd", 0)
        if isinstance(crowd, (bool, np.bool_)) or not (isinstance(crowd, (int, np.integer)) and crowd in (0, 1)):
            raise InputError(f"annotations[{i}].iscrowd is {crowd!r}; give 0 or 1.")
        ann.setdefault("area", float(ann["bbox"][2]) * float(ann["bbox"][3]))
        if check_scalar(ann["area"], f"annotations[{i}].area") < 0:
            raise InputError(f"annotations[{i}].area is {ann['area']}; an area is >= 0.")
    for i, r in enumerate(results):
        check_nonempty_mapping(r, f"results[{i}]")
        missing = [k for k in ("image_id", "category_id", "bbox", "score") if k not in r]
        if missing:
            raise InputError(f"COCO result {i} lacks {missing}; each result needs image_id, "
                             "category_id, bbox [x, y, w, h] and score.")
        check_scalar(r["score"], f"results[{i}].score")
        _coco_box(r["bbox"], f"results[{i}].bbox")
        for key in ("image_id", "category_id"):
            _coco_id(r[key], f"results[{i}].{key}")  # a number or a name, never a dict, list or bool
        if r["category_id"] not in cat_ids or isinstance(r["category_id"], bool):
            raise InputError(f"COCO result {i} has unknown category_id {r['category_id']!r}; "
                             f"the ground truth has {sorted(cat_ids, key=str)}.")
        if r["image_id"] not in image_ids or isinstance(r["image_id"], bool):
            raise InputError(f"COCO result {i} has image_id {r['image_id']!r}, which is not in "
                             "the ground truth; evaluate against the annotation file it was made for.")
    return gt


def coco_metrics(ground_truth: Mapping[str, Any], results: Sequence[Mapping[str, Any]], *,
                 backend: Literal["faster-coco-eval", "pycocotools"] = "faster-coco-eval"
                 ) -> dict[str, float]:
    """The 12 COCO bbox numbers (AP, AP50, AP75, APs/m/l, AR1/10/100, ARs/m/l) in [0, 1].

    Parameters
    ----------
    ground_truth : COCO instances dict (``images``, ``annotations``, ``categories``).
    results : COCO results list (``image_id``, ``category_id``, ``bbox`` [x, y, w, h] in pixels,
        ``score``); may be empty (then AP is 0 wherever there is ground truth).
    backend : ``"faster-coco-eval"`` (default, C++; same numbers as pycocotools, checked in
        the tests) or ``"pycocotools"``.

    Returns
    -------
    ``{name: value}`` in the order of :data:`COCO_STAT_NAMES`; -1 marks a number COCOeval
    cannot define (e.g. APs with no small objects), as in pycocotools.
    """
    gt = _check_coco_inputs(ground_truth, results)
    results = copy.deepcopy(list(results))
    empty_dt = {"images": gt["images"], "categories": gt["categories"], "annotations": []}
    if backend == "faster-coco-eval":
        from faster_coco_eval import COCO, COCOeval_faster

        quiet = lambda *a, **k: None  # noqa: E731
        coco_gt = COCO(gt, print_function=quiet)
        coco_dt = coco_gt.loadRes(results) if results else COCO(copy.deepcopy(empty_dt), print_function=quiet)
        evaluator = COCOeval_faster(coco_gt, coco_dt, "bbox", print_function=quiet)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    elif backend == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval

        with contextlib.redirect_stdout(io.StringIO()):
            coco_gt = COCO()
            coco_gt.dataset = gt
            coco_gt.createIndex()
            if results:
                coco_dt = coco_gt.loadRes(results)
            else:
                coco_dt = COCO()
                coco_dt.dataset = copy.deepcopy(empty_dt)
                coco_dt.createIndex()
            evaluator = COCOeval(coco_gt, coco_dt, "bbox")
            evaluator.evaluate()
            evaluator.accumulate()
            evaluator.summarize()
    else:
        raise InputError(f"COCO backend {backend!r}: use 'faster-coco-eval' or 'pycocotools'.")
    return {name: float(v) for name, v in zip(COCO_STAT_NAMES, evaluator.stats)}
