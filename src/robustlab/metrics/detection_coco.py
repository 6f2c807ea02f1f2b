"""COCO bbox evaluation: ground truth and detections in COCO's formats, the inputs checked, and the
12 numbers of COCOeval (computed by faster-coco-eval, or pycocotools; imported when called).
"""

from __future__ import annotations

import contextlib
import copy
import io
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ._checks import as_float_array, check_nonempty_mapping, check_scalar
from .detection_boxes import detection_arrays, field_of, ground_truth_arrays

__all__ = ["COCO_STAT_NAMES", "coco_metrics", "to_coco_ground_truth", "to_coco_results"]

#: The 12 numbers COCOeval.summarize() reports for bbox, in its order.
COCO_STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl",
                   "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


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
        image_id = field_of(sample, "image_id")
        boxes, labels, _ = ground_truth_arrays(sample, f"ground truth of image {image_id!r}")
        crowd = field_of(sample, "iscrowd")
        crowd = np.zeros(len(boxes), bool) if crowd is None else np.asarray(crowd, bool).reshape(-1)
        images.append({"id": image_id, "width": int(field_of(sample, "width")),
                       "height": int(field_of(sample, "height"))})
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
