"""The configs of the detection benchmarks and the options they share: the corrupted sets (``coco-c``,
``voc-c``, ``cityscapes-c``, ``detection-corrupted``), detection pm-k (``imagenet-vid-robust-detection``)
and imported mmdetection results (``mmdet-results``).

Settings are ``clean`` and ``<corruption>/<severity>``; a config records them as their texts
(``settings``), the order the stored detections' ``setting_index`` refers to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.config import LimitedConfig, RunConfig
from ..engine.options import Option
from ..errors import InputError

#: How rPC is computed: the published ratio of means, or the mean of per-class ratios.
RPC_CONVENTIONS = ("ratio-of-means", "mean-of-ratios")


def label_map_option(value: Any) -> dict[str, int] | None:
    """``label_map``: a JSON object (or file) ``{detector label: dataset label}`` as ``{str: int}``."""
    if value is None:
        return None
    if isinstance(value, str):
        path = Path(value).expanduser()
        try:
            value = json.loads(path.read_text()) if path.is_file() else json.loads(value)
        except ValueError as exc:
            raise InputError(f"label_map {value!r} is neither a JSON object nor a JSON file: {exc}.") from None
    if not isinstance(value, Mapping):
        raise InputError("label_map must be a JSON object {detector label: dataset label}.")
    try:
        return {str(int(k)): int(v) for k, v in value.items()}
    except (TypeError, ValueError):
        raise InputError("label_map keys and values must be integers (category ids).") from None


def int_option(name: str, value: Any, *, minimum: int | None = None) -> int:
    """An integer option (at least ``minimum``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or (minimum is not None and value < minimum):
        raise InputError(f"{name} must be an integer{f' >= {minimum}' if minimum is not None else ''}; got {value!r}.")
    return int(value)


def choice_option(name: str, value: Any, choices: Sequence[str]) -> str:
    """A text option that must be one of ``choices``."""
    if value not in choices:
        raise InputError(f"{name} {value!r}: use one of {', '.join(choices)}.")
    return str(value)


#: The detection options every corrupted-detection benchmark (and the pm-k one) takes.
MAX_DETECTIONS = Option("max_detections", "int", 100, help="Detections kept per image (highest scores).")
LABEL_MAP = Option("label_map", "value", help="The detector's label -> dataset category id, a JSON object or file.")
LABEL_OFFSET = Option("label_offset", "int", 0, help="Added to the detector's labels before matching.")
UNKNOWN_LABELS = Option("unknown_labels", "str", "error", help="A label outside the dataset's categories: error or "
                        "drop.")
NO_LOGITS = {"save_logits": "benchmark {name!r} stores detections, not logits; drop --save-logits."}


@dataclass(frozen=True, kw_only=True)
class DetectionImagesConfig(LimitedConfig):
    """What the detection benchmarks that run a detector share: how the dataset is read (``reader``),
    its settings (``settings``: ``clean`` and ``<corruption>/<severity>`` texts; ``corruptions``,
    ``severities``, ``seed``, ``profile``: how the images are corrupted), the shard size, what is kept
    of the detector's output and how its labels map to the dataset's, and how cells are scored
    (``metric``: coco, voc or vid; ``ap_method``)."""

    reader: dict[str, Any]
    corruptions: list[str]
    severities: list[int]
    seed: int
    profile: str
    shard_size: int
    max_detections: int
    label_map: dict[str, int] | None
    label_offset: int
    unknown_labels: str
    metric: str
    ap_method: str
    settings: list[str]


@dataclass(frozen=True, kw_only=True)
class CorruptedDetectionConfig(DetectionImagesConfig):
    """A corrupted-detection run (``coco-c``, ``voc-c``, ``cityscapes-c``, ``detection-corrupted``): also
    the rPC convention and the headline metric (AP, or AP50 for VOC's metric)."""

    rpc: str
    headline: str


@dataclass(frozen=True, kw_only=True)
class DetectionPmkConfig(DetectionImagesConfig):
    """An ``imagenet-vid-robust-detection`` run: its clean frames only (``settings`` ``["clean"]``, no
    corruption), the pm-k sets file and the sets themselves (``pm_sets``: ``{anchor: [neighbours]}``), the
    ILSVRC split and the IoU threshold of a match (a number, or ``"vid"``: ImageNet-VID's per-object
    thresholds, the score of runs stored before the option existed)."""

    pmsets: str
    pm_sets: dict[str, list[str]]
    split: str
    iou_threshold: float | str = "vid"


@dataclass(frozen=True, kw_only=True)
class MmdetResultsConfig(RunConfig):
    """An ``mmdet-results`` run: the results pickle (its SHA-256 prefix and the cells read from it), the
    corruptions and severities scored, the rPC convention, mmdetection's task and the headline."""

    sha256_16: str
    results: dict[str, Any]
    corruptions: list[str]
    severities: list[int]
    rpc: str
    task: str
    headline: str
    metric: str
    settings: list[str]
