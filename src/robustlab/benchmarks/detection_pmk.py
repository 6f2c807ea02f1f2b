"""``imagenet-vid-robust-detection``: detection and localization pm-k on ImageNet-Vid-Robust-format sets
(Shankar et al. 2019). Its runs are shown by :class:`~robustlab.benchmarks.detection_presentation.DetectionPmkShow`
(the report's generic section)."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..data.detection import DetectionDataset, read_imagenet_vid
from ..engine.benchmark import MetricRow, register_benchmark
from ..engine.options import Option, check_positive, shard_size_option
from ..errors import DataError
from ..metrics.detection import check_iou_threshold, detection_pmk, localization_pmk
from .detection import DetectionImagesBenchmark
from .detection_config import (LABEL_MAP, LABEL_OFFSET, MAX_DETECTIONS, UNKNOWN_LABELS, DetectionPmkConfig,
                               choice_option, int_option, label_map_option)
from .detection_inputs import unpad_detections
from .detection_results import CLEAN


def read_pmsets(path: Path) -> dict[str, list[str]]:
    """``{anchor key: [neighbour keys]}`` from ``pmsets.json`` (optionally gzipped)."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read pm-k sets {path}: {exc}.") from None
    if not isinstance(data, Mapping) or not all(isinstance(v, list) for v in data.values()):
        raise DataError(f"{path} must map anchor frame keys to lists of neighbour keys.")
    return {str(k): [str(n) for n in v] for k, v in data.items()}


def _frame_number(key: str) -> int:
    try:
        return int(key.rsplit("/", 1)[-1].split(".")[0])
    except ValueError:
        raise DataError(f"frame key {key!r} does not end in a frame number (<video>/<NNNNNN>.JPEG).") from None


@register_benchmark
class ImageNetVidRobustDetection(DetectionImagesBenchmark):
    """Detection pm-k on ImageNet-Vid-Robust-format sets (Shankar et al. 2019).

    ``data``: the ILSVRC folder (``Annotations/VID/<split>/`` XML and ``Data/VID/<split>/``
    frames). ``pmsets``: ``pmsets.json`` (default ``<data>/pmsets.json``). Every anchor and
    neighbour frame is detected once; per-frame AP is computed at a fixed IoU threshold of 0.5
    (the papers' "mAP at a fixed IoU threshold"; option ``iou_threshold``: another number in
    (0, 1], or ``"vid"`` for ImageNet-VID's own per-object thresholds); each anchor is replaced
    by its worst frame (lowest per-image AP) and the mAP over those frames is pm-k mAP; the same
    with class-agnostic matching gives localization pm-k mAP. Also reported per k (neighbours
    within +-k frames). Options: ``pmsets``, ``split`` (val), ``limit`` (anchors),
    ``shard_size``, ``max_detections``, ``label_map``, ``label_offset``, ``unknown_labels``,
    ``ap_method`` (all-point), ``iou_threshold`` (0.5).
    """

    name = "imagenet-vid-robust-detection"
    config_class = DetectionPmkConfig
    presentation = "detection-pmk"  # its own metrics: the report's generic section
    options = (
        Option("limit", "int", help="Only the first N anchors."), shard_size_option(500), MAX_DETECTIONS, LABEL_MAP,
        LABEL_OFFSET, UNKNOWN_LABELS, Option("ap_method", "str", "all-point", help="AP: all-point or 11-point."),
        Option("pmsets", "path", help="The pmsets.json file (default: <data>/pmsets.json)."),
        Option("split", "str", "val", help="The ILSVRC VID split."),
        Option("iou_threshold", "value", 0.5, help="IoU threshold of a match: a number in (0, 1], or vid (ImageNet-VID's "
               "per-object thresholds)."),
    )

    def configure(self, data: str, *, limit, shard_size, max_detections, label_map, label_offset, unknown_labels,
                  ap_method, pmsets, split, iou_threshold) -> DetectionPmkConfig:
        iou_threshold = check_iou_threshold(iou_threshold)
        root = Path(data).expanduser().resolve()
        pm_path = Path(pmsets).expanduser().resolve() if pmsets else root / "pmsets.json"
        sets = read_pmsets(pm_path)
        anchors = sorted(sets)
        if limit is not None:
            anchors = anchors[: check_positive("limit", limit)]
        chosen = {a: sets[a] for a in anchors}
        config = DetectionPmkConfig(
            data=str(root), pmsets=str(pm_path), pm_sets=chosen, split=str(split), reader={"split": str(split)},
            limit=None, shard_size=check_positive("shard_size", shard_size),
            max_detections=check_positive("max_detections", max_detections), label_map=label_map_option(label_map),
            label_offset=int_option("label_offset", label_offset),
            unknown_labels=choice_option("unknown_labels", unknown_labels, ("error", "drop")),
            ap_method=choice_option("ap_method", ap_method, ("11-point", "all-point")), metric="vid",
            iou_threshold=iou_threshold, settings=[CLEAN], corruptions=[], severities=[], seed=0,
            profile="imagecorruptions")
        self._cache = None
        self._dataset(config)
        return config

    def read_dataset(self, config: DetectionPmkConfig) -> DetectionDataset:
        keys = list(dict.fromkeys(k for a, ns in config.pm_sets.items() for k in (a, *ns)))
        return read_imagenet_vid(config.data, split=config.split, keys=keys)

    def ground_truth(self, config: DetectionPmkConfig, ds: DetectionDataset) -> Any:
        return {s.image_id: s for s in ds.samples}

    def metrics(self, config: DetectionPmkConfig, predictions, related=None) -> list[MetricRow]:
        ds, _, gt = self._dataset(config)
        dets = {}
        for cols in predictions.values():
            for row, index in enumerate(cols["label"]):
                dets[ds.samples[int(index)].image_id] = unpad_detections(cols, row)
        sets = config.pm_sets
        rows: list[MetricRow] = [("frames_without_predictions", "", float(len(ds) - len(dets)))]
        offsets = sorted({abs(_frame_number(n) - _frame_number(a)) for a, ns in sets.items() for n in ns})
        for agnostic, prefix in ((False, "map"), (True, "loc_map")):
            run = localization_pmk if agnostic else detection_pmk
            res = run(gt, dets, sets, method=config.ap_method, iou_threshold=config.iou_threshold)
            rows += [(f"{prefix}_anchor", "", res.anchor_map), (f"{prefix}_pmk", "", res.pmk_map),
                     (f"{prefix}_drop", "", res.anchor_map - res.pmk_map)]
            if not agnostic:
                names = ds.categories
                rows += [(f"ap_anchor:{names.get(k, k)}", "", v) for k, v in sorted(res.anchor_per_class.items())]
                rows += [(f"ap_pmk:{names.get(k, k)}", "", v) for k, v in sorted(res.pmk_per_class.items())]
            for k in offsets:
                within = {a: [n for n in ns if abs(_frame_number(n) - _frame_number(a)) <= k] for a, ns in sets.items()}
                rows.append((f"{prefix}_pmk", f"k/{k}", run(gt, dets, within, method=config.ap_method,
                                                             iou_threshold=config.iou_threshold).pmk_map))
        rows.append(("n_anchors", "", float(len(sets))))
        return [(n, s, v) for n, s, v in rows if not (isinstance(v, float) and math.isnan(v) and n.startswith("ap_"))]
