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

The pieces: :mod:`.detection_boxes` (reading, checking and clipping boxes, IoU, thresholds) and
:mod:`.detection_coco` (COCO formats and COCOeval); matching, AP and detection pm-k live here, and
every name is importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ._checks import as_fraction_array, check_fraction, check_nonempty_mapping
from .detection_boxes import (IouThreshold, box_array, box_iou, check_iou_threshold, clip_boxes, detection_arrays,
                              ground_truth_arrays, per_box_vector, sanitize_detections, vid_iou_threshold)
from .detection_coco import COCO_STAT_NAMES, coco_metrics, to_coco_ground_truth, to_coco_results

__all__ = [
    "COCO_STAT_NAMES", "DetectionPmkResult", "ImageMatches", "ap_from_matches", "ap_per_class", "average_precision", "box_iou",
    "check_iou_threshold", "clip_boxes", "coco_metrics", "detection_arrays", "detection_pmk", "ground_truth_arrays",
    "localization_pmk", "match_detections", "match_image", "mean_ap", "per_image_ap", "sanitize_detections",
    "to_coco_ground_truth", "to_coco_results", "vid_iou_threshold", "voc_ap50",
]  # fmt: skip

APMethod = Literal["all-point", "11-point"]
MatchingRule = Literal["voc", "best-unmatched"]


# ---------------------------------------------------------------------------------------------
# matching, AP


def _gt_thresholds(gt_boxes: np.ndarray, iou_threshold: IouThreshold) -> np.ndarray:
    threshold = check_iou_threshold(iou_threshold)
    if threshold == "vid" and len(gt_boxes):  # an image without objects has no thresholds
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
    det_boxes = box_array(det_boxes, "det_boxes")
    gt_boxes = box_array(gt_boxes, "gt_boxes")
    det_scores = per_box_vector(det_scores, len(det_boxes), np.float64, "det_scores", "match_detections")
    if not np.all(np.isfinite(det_scores)):
        raise InputError("match_detections: det_scores must be finite.")
    gt_ignore = per_box_vector(gt_ignore, len(gt_boxes), bool, "gt_ignore", "match_detections")
    thresholds = per_box_vector(thresholds, len(gt_boxes), np.float64, "thresholds", "match_detections")
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
