"""Detector adapters: torchvision detection models, any callable, and results files.

Every adapter is a :class:`~robustlab.models.protocol.Detector`: called on float (3, H, W)
tensors in [0, 1] (pixel space, any size), it returns one dict per image with ``boxes``
(K, 4) float32 ``x1, y1, x2, y2`` in the input's pixels, ``scores`` (K,) float32 and
``labels`` (K,) int64.

- ``torchvision:<name>[:<weights>|:none]`` for the detection models of torchvision
  (``fasterrcnn_resnet50_fpn``, ``retinanet_resnet50_fpn``, ``fcos_resnet50_fpn``,
  ``ssdlite320_mobilenet_v3_large``...). ``:none`` builds random weights *and* a random
  backbone (no download at all, works offline); pretrained weights are fetched into torch's
  hub cache and raise :class:`~robustlab.errors.OfflineError` without network. The models
  resize and normalise internally and return boxes in the input's pixels; their labels are
  COCO category ids (1..90), the ids of COCO's own annotation files.
- :func:`as_detector` wraps any callable: it receives a list of (3, H, W) float tensors in
  [0, 1] (or uint8 HxWx3 numpy arrays with ``input_format="numpy"``) and returns per image a
  dict with boxes/scores/labels, or a ``(boxes, scores, labels)`` tuple (numpy or torch).
- ``results:<path>`` (:class:`ResultsDetector`) serves detections made earlier (COCO results
  json, as mmdetection's ``--format-only`` writes them), per setting, so predictions users
  already have are scored by the detection benchmarks without running a model.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import DataError, InputError, ModelError, unknown_name
from .preprocessing import Preprocessing
from .protocol import Classifier, Detector
from .registry import NO_WEIGHTS, CallableNet, absolute_path, model_source, object_name, seeded_init
from .weights import fetch_checkpoint, file_sha256, guard_download

__all__ = ["ResultsDetector", "as_detector", "ensure_detector", "load_torchvision_detector", "read_results_file"]

#: Setting name of the clean images (severity 0) in results files and benchmarks.
CLEAN = "clean"


# --- torchvision ---------------------------------------------------------------------------------


def load_torchvision_detector(name: str, weights_name: str | None, options: Mapping[str, Any]) -> Detector:
    """A torchvision detection model as a :class:`Detector`.

    Parameters
    ----------
    name : torchvision model name (``fasterrcnn_resnet50_fpn``...).
    weights_name : ``None``/``DEFAULT`` (pretrained COCO weights), a weights enum name
        (``COCO_V1``) or ``none`` (random weights and random backbone: nothing downloaded).
    options : ``pretrained`` (bool, overrides the spec), ``num_classes`` (outputs incl.
        background, random weights only), ``preprocessing`` (normally None: the model resizes
        and normalises itself; a resize given here is applied before it, in the engine's workers).

    Raises
    ------
    OfflineError : pretrained weights asked for and the download fails.
    """
    import torchvision.models as tvm

    if name not in tvm.list_models(module=tvm.detection):
        raise unknown_name("torchvision detection model", name, tvm.list_models(module=tvm.detection))
    pretrained = options.get("pretrained")
    wants = pretrained if pretrained is not None else not (weights_name and weights_name.lower() in NO_WEIGHTS)
    weights = None
    kwargs: dict[str, Any] = {}
    if wants:
        enum = tvm.get_model_weights(name)
        key = weights_name if weights_name and weights_name.lower() not in NO_WEIGHTS else "DEFAULT"
        try:
            weights = enum.DEFAULT if key.upper() == "DEFAULT" else enum[key]
        except KeyError:
            raise unknown_name(f"weights name for {name}", key, [w.name for w in enum]) from None
        fetch_checkpoint(weights.url, f"torchvision:{name}:{weights.name}")
    else:
        # torchvision's default for an untrained detector is an ImageNet backbone, which it
        # downloads; "none" means no pretrained numbers at all, so the backbone is random too.
        kwargs["weights_backbone"] = None
        if options.get("num_classes"):
            kwargs["num_classes"] = int(options["num_classes"])
    with seeded_init():  # random weights (':none') are the same on every call
        net = guard_download(f"torchvision:{name}", lambda: tvm.get_model(name, weights=weights, **kwargs))
    weights_label = weights.name if weights is not None else "none"
    categories = weights.meta.get("categories") if weights is not None else None
    return Detector(net, name=f"torchvision:{name}:{weights_label}", preprocessing=options.get("preprocessing"),
                    num_classes=len(categories) if categories else options.get("num_classes"),
                    source={"source": "torchvision", "weights": weights.name if weights is not None else None})


# --- callables -----------------------------------------------------------------------------------


def _per_image(out: Any, i: int, name: str) -> dict[str, Any]:
    if isinstance(out, Mapping):
        return dict(out)
    if isinstance(out, (tuple, list)) and len(out) == 3:
        return {"boxes": out[0], "scores": out[1], "labels": out[2]}
    raise ModelError(f"detector {name!r}: output {i} is a {type(out).__name__}; return a dict with boxes, "
                     "scores, labels (or a (boxes, scores, labels) tuple) per image.")


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    return torch.as_tensor(np.asarray(value))


class CallableDetectorNet(nn.Module):
    """A plain callable behind the detector module interface (outputs become tensors)."""

    def __init__(self, fn: Callable, *, input_format: str = "tensor", name: str = "callable") -> None:
        super().__init__()
        if input_format not in ("tensor", "numpy"):
            raise InputError(f"input_format {input_format!r}: use 'tensor' (float CHW in [0, 1]) or 'numpy' "
                             "(uint8 HxWx3).")
        self.fn = fn
        self.input_format = input_format
        self.label = name

    def forward(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        if self.input_format == "numpy":
            inputs: list[Any] = [(img.detach().clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()
                                 for img in images]
        else:
            inputs = list(images)
        outputs = self.fn(inputs)
        if not isinstance(outputs, (list, tuple)):
            raise ModelError(f"detector {self.label!r} returned {type(outputs).__name__}; it must return a list "
                             f"with one entry per image ({len(images)}).")
        result = []
        for i, out in enumerate(outputs):
            d = _per_image(out, i, self.label)
            missing = {"boxes", "scores", "labels"} - set(d)
            if missing:
                raise ModelError(f"detector {self.label!r}: output {i} lacks {sorted(missing)}.")
            result.append({k: _tensor(d[k]) for k in ("boxes", "scores", "labels")})
        return result


def as_detector(fn: Callable | nn.Module, *, name: str | None = None, preprocessing: Preprocessing | None = None,
                input_format: str = "tensor", num_classes: int | None = None) -> Detector:
    """Wrap a callable or module returning boxes/scores/labels as a :class:`Detector`.

    Parameters
    ----------
    fn : callable or nn.Module
        Called with a list of images -- float (3, H, W) tensors in [0, 1], or with
        ``input_format="numpy"`` uint8 HxWx3 arrays -- and returning one entry per image: a
        dict with ``boxes`` (K, 4) xyxy in that image's pixels, ``scores`` (K,), ``labels``
        (K,) (numpy or torch), or a ``(boxes, scores, labels)`` tuple. An ``nn.Module`` with
        torchvision's detection interface is used as is.
    name : stored with results (default ``python:<module>.<qualname>``).
    """
    if isinstance(fn, Detector):
        return fn
    label = name or object_name(fn)
    if isinstance(fn, nn.Module) and input_format == "tensor":
        net: nn.Module = fn
        differentiable = True
    else:
        net = CallableDetectorNet(fn, input_format=input_format, name=label)
        differentiable = False
    return Detector(net, name=label, preprocessing=preprocessing, num_classes=num_classes,
                    differentiable=differentiable, source={"source": "python-detector"})


def ensure_detector(model: nn.Module) -> Detector:
    """``model`` as a Detector: Detectors pass; a Classifier wrapping a plain callable or a
    module (what :func:`~robustlab.models.load_model` makes of objects it cannot tell apart)
    is re-wrapped with the same name and preprocessing."""
    if isinstance(model, Detector):
        return model
    if isinstance(model, Classifier):
        if not str(model.source.get("source", "python")).startswith("python"):
            raise ModelError(f"{model.name!r} is a classifier ({model.source.get('source')}); detection benchmarks "
                             "need a detector, e.g. torchvision:fasterrcnn_resnet50_fpn or a callable returning "
                             "boxes/scores/labels.")
        inner = model.net.fn if isinstance(model.net, CallableNet) else model.net
        return as_detector(inner, name=model.name, preprocessing=model.preprocessing)
    if callable(model):
        return as_detector(model)
    raise ModelError(f"{type(model).__name__} is not a detector; give a torchvision detection model, a Detector "
                     "or a callable returning boxes/scores/labels.")


# --- results files -------------------------------------------------------------------------------


def _coco_entries(entries: Any, source: str) -> list[Mapping[str, Any]]:
    if not isinstance(entries, list):
        raise DataError(f"{source}: expected a COCO results list [{{image_id, category_id, bbox, score}}], "
                        f"got {type(entries).__name__}.")
    for i, r in enumerate(entries):
        if not isinstance(r, Mapping) or not {"image_id", "category_id", "bbox", "score"} <= set(r):
            raise DataError(f"{source}: result {i} needs image_id, category_id, bbox [x, y, w, h] and score.")
        if not isinstance(r["bbox"], Sequence) or len(r["bbox"]) != 4:
            raise DataError(f"{source}: result {i} has bbox {r['bbox']!r}; COCO boxes are [x, y, width, height].")
    return entries


def _group(entries: list[Mapping[str, Any]]) -> dict[Hashable, dict[str, np.ndarray]]:
    grouped: dict[Hashable, list[Mapping[str, Any]]] = {}
    for r in entries:
        key = r["image_id"]
        grouped.setdefault(key if not isinstance(key, list) else tuple(key), []).append(r)
    out = {}
    for key, rs in grouped.items():
        xywh = np.asarray([r["bbox"] for r in rs], np.float64).reshape(-1, 4)
        boxes = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)
        out[key] = {"boxes": boxes, "scores": np.asarray([r["score"] for r in rs], np.float64),
                    "labels": np.asarray([r["category_id"] for r in rs], np.int64)}
    return out


def read_results_file(path: str | os.PathLike) -> dict[str, dict[Hashable, dict[str, np.ndarray]]]:
    """Detections made earlier, per setting: ``{setting: {image key: {boxes xyxy, scores, labels}}}``.

    Accepted layouts (``setting`` is ``clean`` or ``<corruption>/<severity>``):

    - a COCO results json list: the ``clean`` setting;
    - a json object ``{setting: results list}``;
    - a folder with ``clean.json`` (or ``clean.bbox.json``) and
      ``<corruption>/<severity>.json`` (or ``<corruption>/<severity>/results.bbox.json``...:
      any single ``*.json`` in ``<corruption>/<severity>/``).

    Image keys are the results' ``image_id`` values: COCO ids, or file names (relative paths
    or stems) for datasets without integer ids.
    """
    base = Path(path).expanduser()
    if base.is_file():
        try:
            data = json.loads(base.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read results file {base}: {exc}.") from None
        if isinstance(data, list):
            return {CLEAN: _group(_coco_entries(data, str(base)))}
        if isinstance(data, Mapping):
            return {str(k): _group(_coco_entries(v, f"{base} [{k!r}]")) for k, v in data.items()}
        raise DataError(f"{base}: expected a COCO results list or {{setting: results list}}.")
    if not base.is_dir():
        raise DataError(f"results {base} does not exist; give a COCO results json or a folder of them.")
    out: dict[str, dict[Hashable, dict[str, np.ndarray]]] = {}

    def load(file: Path, setting: str) -> None:
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read results file {file}: {exc}.") from None
        out[setting] = _group(_coco_entries(data, str(file)))

    for name in ("clean.json", "clean.bbox.json"):
        if (base / name).is_file():
            load(base / name, CLEAN)
            break
    for corruption_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        for entry in sorted(corruption_dir.iterdir()):
            stem = entry.name.split(".")[0]
            if not stem.isdigit():
                continue
            if entry.is_file() and entry.suffix == ".json":
                load(entry, f"{corruption_dir.name}/{int(stem)}")
            elif entry.is_dir():
                files = sorted(entry.glob("*.json"))
                if len(files) != 1:
                    raise DataError(f"{entry} must hold exactly one results json; found {len(files)}.")
                load(files[0], f"{corruption_dir.name}/{int(stem)}")
    if not out:
        raise DataError(f"no results files in {base}: expected clean.json and <corruption>/<severity>.json.")
    return out


_EMPTY = {"boxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.zeros(0, np.int64)}


class ResultsDetector(Detector):
    """Detections made earlier, served per (setting, image) instead of running a model.

    The detection benchmarks ask it with :meth:`lookup`; it never sees pixels (the engine
    skips reading and corrupting images for it). An image without entries has no detections;
    a setting absent from the files raises :class:`~robustlab.errors.DataError`.
    """

    precomputed = True

    def __init__(self, results: Mapping[str, Mapping[Hashable, Mapping[str, np.ndarray]]], *, name: str,
                 source: dict[str, Any] | None = None) -> None:
        super().__init__(nn.Identity(), name=name, differentiable=False, source=source)
        self.results = {str(k): dict(v) for k, v in results.items()}

    def forward(self, images):  # noqa: D401 - documented in the class
        raise ModelError(f"{self.name!r} holds precomputed detections; it can only be scored by a detection "
                         "benchmark (robustlab evaluate --benchmark coco-c ...), not run on images.")

    def settings(self) -> list[str]:
        return sorted(self.results)

    def lookup(self, setting: str, keys: Sequence[Sequence[Hashable]]) -> list[dict[str, np.ndarray]]:
        """Detections of each image in ``setting``; ``keys[i]`` lists the names image ``i`` may
        be filed under (its id, its file name...), first match wins."""
        if setting not in self.results:
            raise DataError(f"results {self.name!r} have no detections for setting {setting!r} (they cover "
                            f"{', '.join(self.settings())}); evaluate only those settings with --corruptions/"
                            "--severities or add the missing file.")
        table = self.results[setting]
        out = []
        for names in keys:
            found = next((table[k] for k in names if k in table), None)
            out.append(found if found is not None else _EMPTY)
        return out


def results_content(rest: str, options: dict[str, Any]) -> str:
    """SHA-256 over the results files (a file's bytes, or every ``*.json`` of a folder with its
    relative path): what decides a ``results:`` model's detections."""
    base = Path(rest).expanduser()
    if not base.exists():
        raise DataError(f"results {base} does not exist; give a COCO results json or a folder of them.")
    files = [base] if base.is_file() else sorted(p for p in base.rglob("*.json") if p.is_file())
    h = hashlib.sha256()
    for file in files:
        h.update(file.relative_to(base).as_posix().encode() if file != base else b"")
        h.update(bytes.fromhex(file_sha256(file)))
    return h.hexdigest()


@model_source("results", canonical=absolute_path, content=results_content)
def load_results(rest: str, options: dict[str, Any]) -> ResultsDetector:
    """``results:<file or folder>``: detections made earlier (see :func:`read_results_file`)."""
    path = Path(rest).expanduser().resolve()
    return ResultsDetector(read_results_file(path), name=f"results:{path}", source={"source": "results"})
