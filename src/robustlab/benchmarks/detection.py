"""Detection benchmarks: ``coco-c``, ``voc-c``, ``cityscapes-c``, ``detection-corrupted``
(Robust Detection Benchmark: P, mPC, rPC), ``imagenet-vid-robust-detection`` (detection and
localization pm-k) and ``mmdet-results`` (importing mmdetection's results pickles).

Corrupted benchmarks
--------------------
Each image is corrupted at its native resolution (before the detector's own resize) with the
seed ``derive_seed(seed, relative path, corruption, severity)`` (what ``robustlab corrupt``
uses, so its output is a valid cache). The clean images (severity 0) are evaluated once, as
setting ``clean``; the corrupted settings are ``<corruption>/<severity>``. Units are a setting
and a shard of images (``fog/3/shard-0001``), so a stopped run resumes where it stopped.

Per-image detections are stored as padded columns (see
:mod:`robustlab.benchmarks.detection_inputs`) and scored after the run: COCO AP family with
faster-coco-eval (``coco-c``, ``detection-corrupted``, ``cityscapes-c`` on its 8 instance
classes), or VOC AP50 (``voc-c``: VOC07 11-point by default, ``ap_method=all-point``).
P is the clean performance, mPC the mean over the chosen corruptions and severities, and
rPC = mPC / P, by default the published *ratio of means* (for VOC: class-mean mPC over
class-mean P); ``rpc=mean-of-ratios`` gives the per-class ratios' mean.

Options (``robustlab evaluate ... -O KEY=VALUE``): ``corruptions`` (benchmark, all, holdout,
noise, blur, weather, digital or names), ``severities`` (1-5), ``seed`` (0), ``profile``
(imagecorruptions), ``limit`` (first N images), ``shard_size`` (500 images per unit),
``cache`` (folder for corrupted PNGs in ``<cache>/<corruption>/<severity>/<relative path>``;
reused when present; not part of the run's identity: the pixels are the same),
``max_detections`` (100 per image), ``label_map`` (JSON ``{detector label: dataset label}``),
``label_offset`` (added to detector labels), ``unknown_labels`` (``error`` or ``drop``),
``rpc``, ``metric`` (``coco`` or ``voc``), ``ap_method``; COCO: ``annotations`` (instances
json; default ``<data>/annotations/instances_*.json``), ``images`` (its image folder); VOC:
``year`` (2007), ``split`` (test); Cityscapes: ``split`` (val).

Handling of detector output: boxes are clipped to the image (boxes outside it become
zero-area false positives); an image without boxes is fine; NaN/inf boxes or scores raise
:class:`~robustlab.errors.ModelError`; labels outside the dataset's categories raise
:class:`~robustlab.errors.InputError` naming them (``unknown_labels=drop`` drops them).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..corruptions.checks import parse_severities
from ..data.detection import DetectionDataset, read_cityscapes, read_coco, read_imagenet_vid, read_voc
from ..errors import DataError, InputError
from ..metrics.corruption import BENCHMARK_CORRUPTIONS
from ..metrics.detection import check_iou_threshold, detection_pmk, localization_pmk
from ..metrics.importers import read_mmdet_robustness_results
from ..metrics.under_corruption import rmse_vs_rpc, rpc_undefined_reason
from ..engine.benchmark import Benchmark, HeadlineMetric, MetricRow, Unit, get_benchmark, register_benchmark
from ..engine.records import Batch, Sample
from .corruption import select_corruptions
from ..data.limits import config_limit_order, limit_positions
from ..engine.options import (CORRUPTIONS, LIMIT, LIMIT_ORDER, PROFILE, SEVERITIES, check_positive, limit_config,
                              seed_option, shard_size_option)
from ..engine.schema import Option
from .detection_inputs import DetectionImages, cache_root, detect_batch, unpad_detections, write_cache_settings
from .detection_results import (
    CLEAN,
    format_robustness_table,
    nesting_from_rows,
    robustness_rows,
    score_setting,
    write_csv,
    write_json,
    write_mmdet_pickle,
)

__all__ = ["CityscapesC", "CocoC", "DetectionCorrupted", "ImageNetVidRobustDetection", "MmdetResults", "VocC",
           "check_covered", "export_results", "import_mmdet", "relative_paths"]

RPC_CONVENTIONS = ("ratio-of-means", "mean-of-ratios")


def relative_paths(dataset: DetectionDataset, root: Path) -> tuple[str, ...]:
    """Image paths relative to ``root`` (POSIX), the images' stable ids and seed names."""
    out = []
    for s in dataset.samples:
        p = Path(s.path)
        try:
            out.append(p.resolve().relative_to(root).as_posix())
        except ValueError:
            raise DataError(f"image {p} lies outside the dataset folder {root}; give the folder that holds "
                            "both the annotations and the images as --data.") from None
    return tuple(out)


def _label_map_option(value: Any) -> dict[str, int] | None:
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


def _int_option(name: str, value: Any, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or (minimum is not None and value < minimum):
        raise InputError(f"{name} must be an integer{f' >= {minimum}' if minimum is not None else ''}; got {value!r}.")
    return int(value)


def _choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise InputError(f"{name} {value!r}: use one of {', '.join(choices)}.")
    return str(value)


# --- the corrupted-detection family ------------------------------------------------------------------

#: The detection options every corrupted-detection benchmark (and the pm-k one) takes.
MAX_DETECTIONS = Option("max_detections", "int", 100, help="Detections kept per image (highest scores).")
LABEL_MAP = Option("label_map", "value", help="The detector's label -> dataset category id, a JSON object or file.")
LABEL_OFFSET = Option("label_offset", "int", 0, help="Added to the detector's labels before matching.")
UNKNOWN_LABELS = Option("unknown_labels", "str", "error", help="A label outside the dataset's categories: error or "
                        "drop.")
NO_LOGITS = {"save_logits": "benchmark {name!r} stores detections, not logits; drop --save-logits."}


class _CorruptedDetection(Benchmark):
    """Shared machinery; subclasses say how to read the dataset and which metric is the headline."""

    task = "detection"
    default_metric = "coco"
    headline_metric = "AP"
    family, family_title = "detection", "Detection under corruption (Robust Detection Benchmark)"
    headline = (HeadlineMetric("P", "P"), HeadlineMetric("mPC", "mPC"), HeadlineMetric("rPC", "rPC"))
    options = (
        CORRUPTIONS, SEVERITIES, seed_option(0), PROFILE, LIMIT, LIMIT_ORDER, shard_size_option(500),
        Option("cache", "path", help="Folder for the corrupted images (PNG), reused by later runs and by robustlab "
               "corrupt."),
        MAX_DETECTIONS, LABEL_MAP, LABEL_OFFSET, UNKNOWN_LABELS,
        Option("rpc", "str", "ratio-of-means", help="rPC convention: ratio-of-means (published) or mean-of-ratios."),
        Option("metric", "str", help="coco (the AP family) or voc (AP50, VOC07); default: the benchmark's own."),
        Option("ap_method", "str", "11-point", help="VOC AP: 11-point (VOC07) or all-point."),
    )
    option_hints = NO_LOGITS

    def __init__(self) -> None:
        self._datasets: dict[str, tuple[DetectionDataset, tuple[str, ...], Any]] = {}
        self._cache: str | None = None

    # subclass hooks ------------------------------------------------------------------------------

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    def read_dataset(self, config: Mapping[str, Any]) -> DetectionDataset:  # pragma: no cover
        raise NotImplementedError

    # engine hooks ------------------------------------------------------------------------------------

    def configure(self, data: str, *, corruptions, severities, seed, profile, limit, limit_order, shard_size, cache,
                  max_detections, label_map, label_offset, unknown_labels, rpc, metric, ap_method,
                  **reader_options: Any) -> dict[str, Any]:
        """``reader_options``: the options a subclass adds to :attr:`options` for its reader."""
        from ..corruptions import get_corruption
        from ..corruptions.registry import check_profile

        root = Path(data).expanduser().resolve()
        if not root.is_dir():
            raise DataError(f"dataset folder {root} does not exist; give the {self.name} dataset root with --data.")
        reader = self.reader_config(root, dict(reader_options))
        chosen = select_corruptions(corruptions if corruptions is not None else "benchmark")
        for c in chosen:
            get_corruption(c)
        seed = _int_option("seed", seed, minimum=0)
        if seed >= 2**32:
            raise InputError(f"seed must be below 2**32; got {seed}.")
        sev = list(parse_severities(severities if severities is not None else "1-5"))
        config: dict[str, Any] = {
            "data": str(root), "reader": reader, "corruptions": chosen, "severities": sev, "seed": seed,
            "profile": check_profile(profile), **limit_config(limit, limit_order),
            "shard_size": check_positive("shard_size", shard_size),
            "max_detections": check_positive("max_detections", max_detections),
            "label_map": _label_map_option(label_map), "label_offset": _int_option("label_offset", label_offset),
            "unknown_labels": _choice("unknown_labels", unknown_labels, ("error", "drop")),
            "rpc": _choice("rpc", rpc, RPC_CONVENTIONS),
            "metric": _choice("metric", metric or self.default_metric, ("coco", "voc")),
            "ap_method": _choice("ap_method", ap_method, ("11-point", "all-point")),
        }
        config["settings"] = [CLEAN] + [f"{c}/{s}" for c in chosen for s in sev]
        config["headline"] = self.headline_metric if config["metric"] == self.default_metric else (
            "AP50" if config["metric"] == "voc" else "AP")
        self._cache = cache_root(cache)
        if self._cache is not None:
            write_cache_settings(self._cache, config)
        ds, _, _ = self._dataset(config)
        if not len(ds):
            raise DataError(f"the {self.name} dataset under {root} has no images.")
        if config["limit"]:
            config["limit_stats"] = {"order": config["limit_order"], "samples": len(ds),
                                     "of": len(self.read_dataset(config).samples)}
        return config

    def _dataset(self, config: Mapping[str, Any]) -> tuple[DetectionDataset, tuple[str, ...], Any]:
        """(dataset, relative paths, ground truth for scoring), read once per benchmark instance."""
        order = config_limit_order(config)
        key = json.dumps([config["data"], config["reader"], config["limit"], order, config["metric"]], sort_keys=True)
        if key not in self._datasets:
            ds = self.read_dataset(config)
            if config["limit"]:  # images have no one class: balanced is a spread by the seeded hash of their ids
                keep = limit_positions([str(s.image_id) for s in ds.samples], None, config["limit"], order)
                ds = DetectionDataset(ds.name, [ds.samples[p] for p in keep], ds.categories)
            rel = relative_paths(ds, Path(config["data"]))
            self._datasets[key] = (ds, rel, self.ground_truth(config, ds))
        return self._datasets[key]

    def ground_truth(self, config: Mapping[str, Any], ds: DetectionDataset) -> Any:
        """What :func:`score_setting` scores against (COCO dict, or the samples for VOC)."""
        from ..metrics.detection import to_coco_ground_truth

        if config["metric"] == "voc":
            return ds.samples
        return to_coco_ground_truth([_indexed(i, s) for i, s in enumerate(ds.samples)], ds.categories)

    def image_ids(self, config: Mapping[str, Any], ds: DetectionDataset) -> list[Any]:
        return list(range(len(ds)))

    def plan(self, config: Mapping[str, Any]) -> list[Unit]:
        n = len(self._dataset(config)[0])
        size = config["shard_size"]
        return [Unit(f"{setting}/shard-{k:04d}", setting, {"start": start, "stop": min(n, start + size)})
                for setting in config["settings"] for k, start in enumerate(range(0, n, size))]

    def samples(self, config: Mapping[str, Any], unit: Unit) -> DetectionImages:
        ds, rel, _ = self._dataset(config)
        a, b = unit.params["start"], unit.params["stop"]
        sizes = np.asarray([[s.height, s.width] for s in ds.samples[a:b]], np.int64).reshape(-1, 2)
        corruption, severity = (None, 0) if unit.setting == CLEAN else unit.setting.split("/")
        return DetectionImages(root=config["data"], relative=rel[a:b], indices=np.arange(a, b, dtype=np.int64),
                               sizes=sizes, setting_index=config["settings"].index(unit.setting),
                               corruption=corruption, severity=int(severity), seed=config["seed"],
                               profile=config["profile"], cache=self._cache)

    def load(self, samples: DetectionImages, i: int, prepare) -> Sample:
        return samples.load(i, prepare)

    def num_classes(self, config: Mapping[str, Any]) -> int | None:
        return None

    def predict(self, model, batch: Batch, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        ds, rel, _ = self._dataset(config)

        def lookup(setting_index: int, indices: np.ndarray):
            keys = [_lookup_keys(ds.samples[int(i)].image_id, rel[int(i)]) for i in indices]
            return model.lookup(config["settings"][setting_index], keys)

        return detect_batch(model, batch, known_labels=list(ds.categories), max_detections=config["max_detections"],
                            label_map=config["label_map"], label_offset=config["label_offset"],
                            unknown_labels=config["unknown_labels"], lookup=lookup)

    def metrics(self, config, predictions, related=None) -> list[MetricRow]:
        ds, _, gt = self._dataset(config)
        ids = self.image_ids(config, ds)
        n = len(ds)
        empty = {"boxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.zeros(0, np.int64)}
        per_setting: dict[str, list] = {}
        rmse: dict[str, list[float]] = {}
        for unit, cols in predictions.items():
            setting = unit.rsplit("/", 1)[0]
            dets = per_setting.setdefault(setting, [None] * n)
            for row, index in enumerate(cols["label"]):
                dets[int(index)] = unpad_detections(cols, row)
            values = cols["pixel_rmse"][np.isfinite(cols["pixel_rmse"])]
            rmse.setdefault(setting, []).extend(values.tolist())
        rows: list[MetricRow] = []
        nested: dict[str, dict[int, Any]] = {c: {} for c in config["corruptions"]}
        for setting, dets in per_setting.items():
            missing = sum(d is None for d in dets)
            if missing:
                rows.append(("images_without_predictions", setting, float(missing)))
            cell = score_setting(config["metric"], gt, ids, [d if d is not None else empty for d in dets],
                                 ap_method=config["ap_method"])
            if setting == CLEAN:
                for c in nested:
                    nested[c][0] = cell
            else:
                c, s = setting.split("/")
                nested[c][int(s)] = cell
        cell_rows, perf = robustness_rows(nested, corruptions=config["corruptions"], severities=config["severities"],
                                          headline=config["headline"], rpc=config["rpc"],
                                          class_names=ds.categories)
        rows += cell_rows
        table = {}
        for setting, values in rmse.items():
            if setting != CLEAN and values:
                rows.append(("rmse", setting, float(np.mean(values))))
                c, s = setting.split("/")
                table.setdefault(c, {})[int(s)] = float(np.mean(values))
        head = perf.get(config["headline"])
        if head is not None and len([c for c in head.corruptions if c in table]) >= 2:
            try:
                analysis = rmse_vs_rpc(table, head, by="corruption")
            except InputError:
                analysis = None
            if analysis is not None:
                rows += [("rmse_vs_rpc:slope", "", analysis.slope), ("rmse_vs_rpc:intercept", "", analysis.intercept),
                         ("rmse_vs_rpc:pearson_r", "", analysis.pearson_r)]
        return rows

    def notes(self, config, metrics) -> list[str]:
        return detection_notes(config, metrics)

    def summary(self, config, metrics) -> dict[str, Any]:
        return detection_summary(config, metrics)

    def text(self, config, summary, metrics) -> list[str]:
        return detection_text(config, summary, metrics)


def _indexed(i: int, sample) -> dict[str, Any]:
    return {"image_id": i, "width": sample.width, "height": sample.height, "boxes": sample.boxes,
            "labels": sample.labels, "iscrowd": sample.iscrowd}


def _lookup_keys(image_id: Any, relative: str) -> list[Any]:
    """Names an image may have in a results file: its id, relative path, file name and stem."""
    name = relative.rsplit("/", 1)[-1]
    keys = [image_id, relative, name, name.rsplit(".", 1)[0]]
    if isinstance(image_id, str) and image_id.isdigit():
        keys.append(int(image_id))
    return keys


def detection_notes(config: Mapping[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
    """The headline P / mPC / rPC line with its convention, and warnings."""
    table = {(m, s): v for m, s, v in metrics}
    head = config.get("headline", "AP")
    notes = []
    if ("P", "") in table:
        notes.append(f"P / mPC / rPC ({head}, %): {100 * table[('P', '')]:.1f} / {100 * table[('mPC', '')]:.1f} / "
                     f"{100 * table[('rPC', '')]:.1f}; mPC = mean over {len(config['corruptions'])} corruptions x "
                     f"severities {','.join(map(str, config['severities']))}; rPC = mPC / P ({config['rpc']}).")
        reason = rpc_undefined_reason(table[("P", "")], table[("rPC", "")])
        if reason:
            notes.append(reason)
        per = [f"{c} {100 * table[(f'rPC:{head}', c)]:.1f}" for c in config["corruptions"]
               if (f"rPC:{head}", c) in table]
        if per:
            notes.append(f"rPC per corruption ({head}, %): {', '.join(per)}.")
    else:
        notes.append("P / mPC / rPC unavailable: the clean setting or a corruption x severity cell has no score.")
    if list(config["corruptions"]) != list(BENCHMARK_CORRUPTIONS) or list(config["severities"]) != [1, 2, 3, 4, 5]:
        notes.append("mPC is not over the 15 benchmark corruptions x severities 1-5: not comparable with "
                     "published mPC/rPC.")
    skipped = {s: v for (m, s), v in table.items() if m == "images_without_predictions"}
    if skipped:
        notes.append(f"{int(sum(skipped.values()))} image evaluations had no predictions (unreadable or too small; "
                     "see the run's problems) and count as images without detections.")
    if ("rmse_vs_rpc:slope", "") in table:
        slope = table[("rmse_vs_rpc:slope", "")]
        notes.append(f"RMSE vs rPC over corruptions: slope {100 * slope:+.3g} points of rPC (%) per grey level of "
                     f"pixel RMSE (0-255 scale; {slope:.4g} as a fraction of P per grey level), Pearson r "
                     f"{table[('rmse_vs_rpc:pearson_r', '')]:.3f}.")
    return notes


def detection_summary(config: Mapping[str, Any], metrics: Iterable[MetricRow]) -> dict[str, Any]:
    rows = list(metrics)
    table = {(m, s): v for m, s, v in rows}
    per_metric: dict[str, dict[str, Any]] = {}
    for (m, s), v in table.items():
        if ":" in m and m.split(":", 1)[0] in ("P", "mPC", "rPC") and s == "":
            kind, name = m.split(":", 1)
            per_metric.setdefault(name, {})[kind] = v
    cells: dict[str, dict[str, float]] = {}
    for setting in config.get("settings", []):
        cells[setting] = {m: v for (m, s), v in table.items() if s == setting and ":" not in m}
    return {"task": "detection", "headline": config.get("headline"), "rpc_convention": config.get("rpc"),
            "P": table.get(("P", "")), "mPC": table.get(("mPC", "")), "rPC": table.get(("rPC", "")),
            "per_metric": per_metric, "cells": cells,
            "rmse_vs_rpc": {k.split(":", 1)[1]: v for (k, s), v in table.items() if k.startswith("rmse_vs_rpc:")}}


def detection_text(config: Mapping[str, Any], summary: Mapping[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
    """``robustlab show`` layout: P / mPC / rPC, then the headline metric per corruption and
    severity with each corruption's mPC and rPC (percent)."""
    from ..engine.result_text import pct, text_table

    table = {(m, s): v for m, s, v in metrics}
    head = summary.get("headline") or config.get("headline", "AP")
    lines = [f"P / mPC / rPC ({head}, %): {pct(summary.get('P'))} / {pct(summary.get('mPC'))} / "
             f"{pct(summary.get('rPC'))}  (rPC {summary.get('rpc_convention') or config.get('rpc', '')})"]
    cells = summary.get("cells") or {}
    sev = list(config.get("severities", []))
    rows = []
    for c in config.get("corruptions", []):
        values = [pct((cells.get(f"{c}/{s}") or {}).get(head)) for s in sev]
        rows.append([c, *values, pct(table.get((f"mPC:{head}", c))), pct(table.get((f"rPC:{head}", c)))])
    if rows:
        lines += ["", f"{head} (%) per corruption and severity; clean (P) {pct((cells.get(CLEAN) or {}).get(head))}"]
        lines += text_table(["corruption", *[f"s{s}" for s in sev], "mPC", "rPC"], rows, first_width=18)
    others = {m: v for m, v in (summary.get("per_metric") or {}).items() if m != head}
    if others:
        lines += ["", "other metrics, P / mPC / rPC (%): " + "; ".join(
            f"{m} {pct(v.get('P'))} / {pct(v.get('mPC'))} / {pct(v.get('rPC'))}" for m, v in sorted(others.items()))]
    return lines


# --- the four corrupted benchmarks ----------------------------------------------------------------------


def _coco_files(root: Path, annotations: Any, images: Any) -> tuple[str, str]:
    from ..data.folders import coco_annotations, find_coco_annotations

    if annotations is None:
        found = find_coco_annotations(root)
        if not found:
            raise DataError(f"no annotations/instances_*.json under {root}; give the COCO instances file with "
                            "-O annotations=PATH.")
        val = [f for f in found if "val" in f.name]
        if len(found) > 1 and len(val) != 1:
            raise DataError(f"several annotation files under {root} ({', '.join(f.name for f in found)}); choose one "
                            "with -O annotations=PATH.")
        ann = (val or found)[0]
    else:
        ann = Path(annotations).expanduser().resolve()
    if images is None:
        image_dir = root.joinpath(*coco_annotations(root, ann).image_dir.parts)
    else:
        image_dir = Path(images).expanduser().resolve()
    return str(Path(ann).resolve()), str(image_dir.resolve())


class _CocoFormat(_CorruptedDetection):
    """Any COCO-format set: ``<data>/annotations/instances_*.json`` + its image folder."""

    options = (*_CorruptedDetection.options,
               Option("annotations", "path", help="The COCO instances file (default: the one under "
                      "<data>/annotations/)."),
               Option("images", "path", help="The image folder (default: the one the annotations name)."))

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:
        ann, images = _coco_files(root, options["annotations"], options["images"])
        digest = hashlib.sha256(Path(ann).read_bytes()).hexdigest()[:16] if Path(ann).is_file() else "missing"
        return {"annotations": ann, "images": images, "annotations_sha256_16": digest}

    def read_dataset(self, config: Mapping[str, Any]) -> DetectionDataset:
        return read_coco(config["reader"]["annotations"], config["reader"]["images"])

    def ground_truth(self, config: Mapping[str, Any], ds: DetectionDataset) -> Any:
        if config["metric"] == "voc":
            return ds.samples
        data = json.loads(Path(config["reader"]["annotations"]).read_text())  # the original areas and flags
        keep = {s.image_id for s in ds.samples}
        return {"images": [i for i in data["images"] if i["id"] in keep], "categories": data["categories"],
                "annotations": [a for a in data["annotations"] if a["image_id"] in keep]}

    def image_ids(self, config: Mapping[str, Any], ds: DetectionDataset) -> list[Any]:
        return [s.image_id for s in ds.samples] if config["metric"] == "coco" else list(range(len(ds)))


@register_benchmark
class CocoC(_CocoFormat):
    """Coco-C: COCO val2017 corrupted on the fly; headline COCO AP@[.5:.95] (published Faster
    R-CNN R50-FPN: P 36.3, mPC 18.2, rPC 50.2)."""

    name = "coco-c"


@register_benchmark
class DetectionCorrupted(_CocoFormat):
    """Any COCO-format detection set corrupted on the fly (COCO AP family, or ``metric=voc``)."""

    name = "detection-corrupted"


@register_benchmark
class VocC(_CorruptedDetection):
    """Pascal-C: VOC2007 test corrupted on the fly; headline VOC07 AP50 (11-point; published
    Faster R-CNN: P 80.5, mPC 48.6, rPC 60.4 as the ratio of class means)."""

    name = "voc-c"
    default_metric = "voc"
    headline_metric = "AP50"
    options = (*_CorruptedDetection.options, Option("year", "str", "2007", help="VOC year."),
               Option("split", "str", "test", help="VOC image set."))

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:
        return {"year": str(options["year"]), "split": str(options["split"])}

    def read_dataset(self, config: Mapping[str, Any]) -> DetectionDataset:
        return read_voc(config["data"], year=config["reader"]["year"], split=config["reader"]["split"])


@register_benchmark
class CityscapesC(_CorruptedDetection):
    """Cityscapes-C: the 8 instance classes of Cityscapes val, COCO-style AP (published Faster
    R-CNN: P 36.4, mPC 12.2, rPC 33.4)."""

    name = "cityscapes-c"
    options = (*_CorruptedDetection.options, Option("split", "str", "val", help="Cityscapes split."))

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:
        return {"split": str(options["split"])}

    def read_dataset(self, config: Mapping[str, Any]) -> DetectionDataset:
        return read_cityscapes(config["data"], split=config["reader"]["split"])


# --- mmdetection results pickles --------------------------------------------------------------------------


def _jsonable_cells(nested: Mapping[str, Mapping[int, Mapping[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    return {c: {str(s): {m: (np.asarray(v).tolist() if np.ndim(v) else float(v)) for m, v in cell.items()}
                for s, cell in by_s.items()} for c, by_s in nested.items()}


@register_benchmark
class MmdetResults(Benchmark):
    """An mmdetection robustness results pickle (``test_robustness.py --out``) imported as a run.

    ``data`` is the pickle, read with the restricted unpickler; no model runs (give any model
    name). Options: ``corruptions`` (default: the 15 benchmark ones when all present, else all
    in the file), ``severities`` (default: those present for every chosen corruption), ``rpc``,
    ``task`` (bbox).
    """

    name = "mmdet-results"
    task = "detection"
    runs_model = False
    family, family_title, headline = _CorruptedDetection.family, _CorruptedDetection.family_title, \
        _CorruptedDetection.headline
    options = (
        Option("corruptions", "str", help="Corruption names or subsets (default: the 15 benchmark ones when all are "
               "present, else all in the file).", flags=("-c",)),
        Option("severities", "str", help="Severities (default: those present for every chosen corruption).",
               flags=("-s",)),
        Option("rpc", "str", "ratio-of-means", help="rPC convention: ratio-of-means (published) or mean-of-ratios."),
        Option("task", "str", "bbox", help="bbox or segm (COCO-style files)."),
    )

    def configure(self, data: str, *, corruptions, severities, rpc, task) -> dict[str, Any]:
        path = Path(data).expanduser().resolve()
        nested = read_mmdet_robustness_results(path, task=task)
        if corruptions is None:
            chosen = [c for c in BENCHMARK_CORRUPTIONS if c in nested]
            chosen = chosen if len(chosen) == len(BENCHMARK_CORRUPTIONS) else sorted(nested)
        else:
            chosen = select_corruptions(corruptions)
        check_covered(path, nested, chosen)
        sev = list(parse_severities(severities)) if severities is not None else _present_severities(nested, chosen)
        clean = next(iter(nested.values())).get(0, {})
        headline = "AP" if "AP" in clean else "AP50"
        return {"data": str(path), "sha256_16": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
                "results": _jsonable_cells(nested), "corruptions": chosen, "severities": sev,
                "rpc": _choice("rpc", rpc, RPC_CONVENTIONS), "task": task, "headline": headline,
                "metric": "voc" if headline == "AP50" else "coco",
                "settings": [CLEAN] + [f"{c}/{s}" for c in chosen for s in sev]}

    def plan(self, config: Mapping[str, Any]) -> list[Unit]:
        return []

    def metrics(self, config, predictions, related=None) -> list[MetricRow]:
        nested = {c: {int(s): cell for s, cell in by_s.items()} for c, by_s in config["results"].items()}
        rows, _ = robustness_rows(nested, corruptions=config["corruptions"], severities=config["severities"],
                                  headline=config["headline"], rpc=config["rpc"])
        return rows

    def notes(self, config, metrics) -> list[str]:
        return detection_notes(config, metrics)

    def summary(self, config, metrics) -> dict[str, Any]:
        return detection_summary(config, metrics)

    def text(self, config, summary, metrics) -> list[str]:
        return detection_text(config, summary, metrics)


def check_covered(path: str | Path, nested: Mapping[str, Any], corruptions: Sequence[str]) -> None:
    """Raise DataError when the results ``nested`` (``{corruption: ...}``, read from ``path``) lack
    any of ``corruptions``, naming the missing ones and those the file covers."""
    missing = [c for c in corruptions if c not in nested]
    if missing:
        raise DataError(f"{path} has no results for {', '.join(missing)}; it covers {', '.join(sorted(nested))}. "
                        "Choose corruptions it covers with --corruptions/-c.")


def _present_severities(nested: Mapping[str, Mapping[int, Any]], names: Sequence[str]) -> list[int]:
    """Severities >= 1 present for every one of ``names`` (1-5 in a complete file)."""
    common = set.intersection(*({s for s in nested[c] if s >= 1} for c in names)) if names else set()
    if not common:
        raise DataError(f"the results have no severity 1..5 shared by {', '.join(names)}.")
    return sorted(common)


def import_mmdet(path: str | Path, *, corruptions: str | Sequence[str] = "benchmark", rpc: str = "ratio-of-means",
                 task: str = "bbox", store: object = None, model: str | None = None,
                 severities: str | Sequence[int] | None = None):
    """Read an mmdetection results pickle safely; return ``(table text, {metric: CorruptionPerformance})``.

    With ``store`` (a folder, URL or Store), also file it as a run of ``mmdet-results`` under
    ``model`` (default ``mmdet:<file stem>``) and return its result as the third item.
    ``severities`` default: those present for every chosen corruption (1-5 in a full file).
    """
    from ..metrics.under_corruption import performance_under_corruption

    nested = read_mmdet_robustness_results(path, task=task)
    names = list(BENCHMARK_CORRUPTIONS) if corruptions == "benchmark" else select_corruptions(corruptions)
    if corruptions == "benchmark" and not all(c in nested for c in names):
        names = sorted(nested)
    check_covered(path, nested, names)
    sev = list(parse_severities(severities)) if severities is not None else _present_severities(nested, names)
    perf = performance_under_corruption(nested, corruptions=names, severities=sev, rpc=rpc)  # type: ignore[arg-type]
    headline = "AP" if "AP" in perf else "AP50"
    table = format_robustness_table(perf, headline=headline)
    if store is None:
        return table, perf, None
    from ..engine.evaluation import evaluate

    result = evaluate(model or f"mmdet:{Path(path).stem}", "mmdet-results", path, store=store,
                      corruptions=names, severities=sev, rpc=rpc, task=task, progress=False)
    return table, perf, result


def export_results(result, path: str | Path) -> Path:
    """Write a detection run's results by suffix: ``.pkl`` (mmdetection nesting, plain data),
    ``.json`` (the same nesting) or ``.csv`` (every metric row).

    Raises
    ------
    InputError
        When the run is not a detection-under-corruption run (its benchmark is named), or the
        file name has another suffix.
    """
    path = Path(path)
    config = result.config
    try:
        task = getattr(get_benchmark(result.benchmark), "task", None)
    except InputError:  # a benchmark this installation does not know (a plugin that is gone)
        task = None
    has_cells = any(setting == CLEAN for _, setting, _ in result.metrics)
    if task != "detection" or not has_cells or "corruptions" not in config or "severities" not in config:
        raise InputError(f"run {result.run_id} is a {result.benchmark} run, not a detection run under corruption: "
                         "export-detection exports runs of coco-c, voc-c, cityscapes-c, detection-corrupted and "
                         "mmdet-results (see `robustlab runs`).")
    if path.suffix == ".csv":
        return write_csv(result.metrics, path)
    nested = nesting_from_rows(result.metrics, kind=config.get("metric", "coco"), corruptions=config["corruptions"],
                               severities=config["severities"])
    if path.suffix in (".pkl", ".pickle"):
        return write_mmdet_pickle(nested, path)
    if path.suffix == ".json":
        return write_json(nested, path)
    raise InputError(f"export to {path.name}: use a .pkl, .json or .csv file name.")


# --- detection pm-k on ImageNet-Vid-Robust ------------------------------------------------------------


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


def pmk_iou_threshold(config: Mapping[str, Any]) -> float | str:
    """The IoU threshold of a detection pm-k run: its ``iou_threshold`` option; ``"vid"`` for runs
    stored before the option existed (they were scored with ImageNet-VID's per-object thresholds)."""
    return config.get("iou_threshold", "vid")


def iou_threshold_text(threshold: float | str) -> str:
    """``"IoU >= 0.5"`` or ``"ImageNet-VID per-object IoU thresholds"``, for notes."""
    return "ImageNet-VID per-object IoU thresholds" if threshold == "vid" else f"IoU >= {threshold:g}"


@register_benchmark
class ImageNetVidRobustDetection(_CorruptedDetection):
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
    family, family_title, headline = "", "", ()  # its own metrics: the report's generic section
    options = (
        Option("limit", "int", help="Only the first N anchors."), shard_size_option(500), MAX_DETECTIONS, LABEL_MAP,
        LABEL_OFFSET, UNKNOWN_LABELS, Option("ap_method", "str", "all-point", help="AP: all-point or 11-point."),
        Option("pmsets", "path", help="The pmsets.json file (default: <data>/pmsets.json)."),
        Option("split", "str", "val", help="The ILSVRC VID split."),
        Option("iou_threshold", "value", 0.5, help="IoU threshold of a match: a number in (0, 1], or vid (ImageNet-VID's "
               "per-object thresholds)."),
    )

    def configure(self, data: str, *, limit, shard_size, max_detections, label_map, label_offset, unknown_labels,
                  ap_method, pmsets, split, iou_threshold) -> dict[str, Any]:
        iou_threshold = check_iou_threshold(iou_threshold)
        root = Path(data).expanduser().resolve()
        pm_path = Path(pmsets).expanduser().resolve() if pmsets else root / "pmsets.json"
        sets = read_pmsets(pm_path)
        anchors = sorted(sets)
        if limit is not None:
            anchors = anchors[: check_positive("limit", limit)]
        chosen = {a: sets[a] for a in anchors}
        config = {"data": str(root), "pmsets": str(pm_path), "pm_sets": chosen, "split": str(split),
                  "reader": {"split": str(split)}, "limit": None, "shard_size": check_positive("shard_size", shard_size),
                  "max_detections": check_positive("max_detections", max_detections),
                  "label_map": _label_map_option(label_map), "label_offset": _int_option("label_offset", label_offset),
                  "unknown_labels": _choice("unknown_labels", unknown_labels, ("error", "drop")),
                  "ap_method": _choice("ap_method", ap_method, ("11-point", "all-point")), "metric": "vid",
                  "iou_threshold": iou_threshold,
                  "settings": [CLEAN], "corruptions": [], "severities": [], "seed": 0, "profile": "imagecorruptions"}
        self._cache = None
        self._dataset(config)
        return config

    def read_dataset(self, config: Mapping[str, Any]) -> DetectionDataset:
        keys = list(dict.fromkeys(k for a, ns in config["pm_sets"].items() for k in (a, *ns)))
        return read_imagenet_vid(config["data"], split=config["split"], keys=keys)

    def ground_truth(self, config: Mapping[str, Any], ds: DetectionDataset) -> Any:
        return {s.image_id: s for s in ds.samples}

    def metrics(self, config, predictions, related=None) -> list[MetricRow]:
        ds, _, gt = self._dataset(config)
        dets = {}
        for cols in predictions.values():
            for row, index in enumerate(cols["label"]):
                dets[ds.samples[int(index)].image_id] = unpad_detections(cols, row)
        sets = config["pm_sets"]
        rows: list[MetricRow] = [("frames_without_predictions", "", float(len(ds) - len(dets)))]
        offsets = sorted({abs(_frame_number(n) - _frame_number(a)) for a, ns in sets.items() for n in ns})
        for agnostic, prefix in ((False, "map"), (True, "loc_map")):
            run = localization_pmk if agnostic else detection_pmk
            res = run(gt, dets, sets, method=config["ap_method"], iou_threshold=pmk_iou_threshold(config))
            rows += [(f"{prefix}_anchor", "", res.anchor_map), (f"{prefix}_pmk", "", res.pmk_map),
                     (f"{prefix}_drop", "", res.anchor_map - res.pmk_map)]
            if not agnostic:
                names = ds.categories
                rows += [(f"ap_anchor:{names.get(k, k)}", "", v) for k, v in sorted(res.anchor_per_class.items())]
                rows += [(f"ap_pmk:{names.get(k, k)}", "", v) for k, v in sorted(res.pmk_per_class.items())]
            for k in offsets:
                within = {a: [n for n in ns if abs(_frame_number(n) - _frame_number(a)) <= k] for a, ns in sets.items()}
                rows.append((f"{prefix}_pmk", f"k/{k}", run(gt, dets, within, method=config["ap_method"],
                                                             iou_threshold=pmk_iou_threshold(config)).pmk_map))
        rows.append(("n_anchors", "", float(len(sets))))
        return [(n, s, v) for n, s, v in rows if not (isinstance(v, float) and math.isnan(v) and n.startswith("ap_"))]

    def notes(self, config, metrics) -> list[str]:
        t = {(m, s): v for m, s, v in metrics}
        if ("map_pmk", "") not in t:
            return []
        return [f"detection mAP anchor {100 * t[('map_anchor', '')]:.1f} -> pm-k {100 * t[('map_pmk', '')]:.1f}; "
                f"localization mAP {100 * t[('loc_map_anchor', '')]:.1f} -> pm-k {100 * t[('loc_map_pmk', '')]:.1f} "
                f"({int(t[('n_anchors', '')])} anchors, {iou_threshold_text(pmk_iou_threshold(config))}, "
                "worst frame = lowest per-image AP)."]

    def text(self, config, summary, metrics) -> list[str]:
        from ..engine.result_text import pct, text_table

        t = {(m, s): v for m, s, v in metrics}
        if ("map_pmk", "") not in t:
            return super().text(config, summary, metrics)
        lines = [f"mAP (%) at {iou_threshold_text(pmk_iou_threshold(config))}, {int(t[('n_anchors', '')])} anchors; "
                 "pm-k replaces each anchor by its worst frame (lowest per-image AP)"]
        lines += text_table(["", "anchors", "pm-k", "drop"],
                            [["detection", pct(t[("map_anchor", "")]), pct(t[("map_pmk", "")]), pct(t[("map_drop", "")])],
                             ["localization", pct(t[("loc_map_anchor", "")]), pct(t[("loc_map_pmk", "")]),
                              pct(t[("loc_map_drop", "")])]])
        ks = sorted({s for m, s in t if m == "map_pmk" and s.startswith("k/")}, key=lambda s: int(s[2:]))
        if ks:
            lines += ["", "pm-k mAP by k (%)"]
            lines += text_table(["k", "detection", "localization"],
                                [[s[2:], pct(t.get(("map_pmk", s))), pct(t.get(("loc_map_pmk", s)))] for s in ks])
        return lines

    def summary(self, config, metrics) -> dict[str, Any]:
        t = {(m, s): v for m, s, v in metrics}
        return {"task": "detection-pmk", "iou_threshold": pmk_iou_threshold(config),
                **{m: v for (m, s), v in t.items() if s == ""},
                "pmk_by_k": {s: v for (m, s), v in t.items() if m == "map_pmk" and s.startswith("k/")}}
