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

The family's modules: :mod:`.detection_config` (the configs and shared options),
:mod:`.detection_inputs` (images, cache, per-image detections), :mod:`.detection_results` (scoring
and the tables), :mod:`.detection_presentation` (notes and the ``show`` layout), this module (the
four corrupted benchmarks), :mod:`.detection_mmdet` (``mmdet-results``, importing and exporting
mmdetection's results) and :mod:`.detection_pmk` (``imagenet-vid-robust-detection``).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..corruptions.checks import parse_severities
from ..data.detection import DetectionDataset, read_cityscapes, read_coco, read_voc
from ..data.limits import limit_positions
from ..engine.benchmark import Benchmark, MetricRow, Unit, register_benchmark
from ..engine.options import (CORRUPTIONS, LIMIT, LIMIT_ORDER, PROFILE, SEVERITIES, Option, check_positive,
                              limit_config, seed_option, shard_size_option)
from ..engine.records import Batch, Sample
from ..engine.setting import Setting, setting_of
from ..errors import DataError, InputError
from ..metrics.under_corruption import rmse_vs_rpc
from .corruption_config import CLEAN_SETTING, select_corruptions
from .detection_config import (LABEL_MAP, LABEL_OFFSET, MAX_DETECTIONS, NO_LOGITS, RPC_CONVENTIONS, UNKNOWN_LABELS,
                               CorruptedDetectionConfig, DetectionImagesConfig, choice_option, int_option,
                               label_map_option)
from .detection_inputs import DetectionImages, cache_root, detect_batch, unpad_detections, write_cache_settings
from .detection_mmdet import MmdetResults, check_covered, export_results, import_mmdet
from .detection_results import CLEAN, robustness_rows, score_setting

__all__ = ["CityscapesC", "CocoC", "CorruptedDetection", "DetectionCorrupted", "DetectionImagesBenchmark",
           "MmdetResults", "VocC", "check_covered", "export_results", "import_mmdet", "relative_paths"]


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


# --- the corrupted-detection family ------------------------------------------------------------------


class DetectionImagesBenchmark(Benchmark):
    """What the benchmarks that run a detector on a dataset's images share: the dataset read once (and
    limited), its images shard by shard in every setting, the detector's boxes per image; subclasses
    say how to read the dataset (:meth:`read_dataset`) and what ground truth it is scored against."""

    task = "detection"
    option_hints = NO_LOGITS

    def __init__(self) -> None:
        self._datasets: dict[str, tuple[DetectionDataset, tuple[str, ...], Any]] = {}
        self._cache: str | None = None

    def read_dataset(self, config: DetectionImagesConfig) -> DetectionDataset:  # pragma: no cover - abstract
        raise NotImplementedError

    def _dataset(self, config: DetectionImagesConfig) -> tuple[DetectionDataset, tuple[str, ...], Any]:
        """(dataset, relative paths, ground truth for scoring), read once per benchmark instance."""
        key = json.dumps([config.data, config.reader, config.limit, config.order, config.metric], sort_keys=True)
        if key not in self._datasets:
            ds = self.read_dataset(config)
            if config.limit:  # images have no one class: balanced is a spread by the seeded hash of their ids
                keep = limit_positions([str(s.image_id) for s in ds.samples], None, config.limit, config.order)
                ds = DetectionDataset(ds.name, [ds.samples[p] for p in keep], ds.categories)
            rel = relative_paths(ds, Path(config.data))
            self._datasets[key] = (ds, rel, self.ground_truth(config, ds))
        return self._datasets[key]

    def ground_truth(self, config: DetectionImagesConfig, ds: DetectionDataset) -> Any:
        """What :func:`score_setting` scores against (COCO dict, or the samples for VOC)."""
        from ..metrics.detection import to_coco_ground_truth

        if config.metric == "voc":
            return ds.samples
        return to_coco_ground_truth([_indexed(i, s) for i, s in enumerate(ds.samples)], ds.categories)

    def plan(self, config: DetectionImagesConfig) -> list[Unit]:
        n = len(self._dataset(config)[0])
        size = config.shard_size
        return [Unit.of(setting, k, {"start": start, "stop": min(n, start + size)})
                for setting in config.settings for k, start in enumerate(range(0, n, size))]

    def samples(self, config: DetectionImagesConfig, unit: Unit) -> DetectionImages:
        ds, rel, _ = self._dataset(config)
        a, b = unit.params["start"], unit.params["stop"]
        sizes = np.asarray([[s.height, s.width] for s in ds.samples[a:b]], np.int64).reshape(-1, 2)
        clean = unit.setting == CLEAN_SETTING
        return DetectionImages(root=config.data, relative=rel[a:b], indices=np.arange(a, b, dtype=np.int64),
                               sizes=sizes, setting_index=config.settings.index(str(unit.setting)),
                               corruption=None if clean else unit.setting.shift,
                               severity=0 if clean else int(unit.setting.level), seed=config.seed,
                               profile=config.profile, cache=self._cache)

    def load(self, samples: DetectionImages, i: int, prepare) -> Sample:
        return samples.load(i, prepare)

    def num_classes(self, config: DetectionImagesConfig) -> int | None:
        return None

    def predict(self, model, batch: Batch, config: DetectionImagesConfig) -> dict[str, np.ndarray]:
        ds, rel, _ = self._dataset(config)

        def lookup(setting_index: int, indices: np.ndarray):
            keys = [_lookup_keys(ds.samples[int(i)].image_id, rel[int(i)]) for i in indices]
            return model.lookup(config.settings[setting_index], keys)

        return detect_batch(model, batch, known_labels=list(ds.categories), max_detections=config.max_detections,
                            label_map=config.label_map, label_offset=config.label_offset,
                            unknown_labels=config.unknown_labels, lookup=lookup)


class CorruptedDetection(DetectionImagesBenchmark):
    """The corrupted sets; subclasses say how to read the dataset and which metric is the headline."""

    default_metric = "coco"
    headline_metric = "AP"
    config_class = CorruptedDetectionConfig
    presentation = "detection"
    options = (
        CORRUPTIONS, SEVERITIES, seed_option(0), PROFILE, LIMIT, LIMIT_ORDER, shard_size_option(500),
        Option("cache", "path", help="Folder for the corrupted images (PNG), reused by later runs and by robustlab "
               "corrupt."),
        MAX_DETECTIONS, LABEL_MAP, LABEL_OFFSET, UNKNOWN_LABELS,
        Option("rpc", "str", "ratio-of-means", help="rPC convention: ratio-of-means (published) or mean-of-ratios."),
        Option("metric", "str", help="coco (the AP family) or voc (AP50, VOC07); default: the benchmark's own."),
        Option("ap_method", "str", "11-point", help="VOC AP: 11-point (VOC07) or all-point."),
    )

    # subclass hooks ------------------------------------------------------------------------------

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    # engine hooks ------------------------------------------------------------------------------------

    def configure(self, data: str, *, corruptions, severities, seed, profile, limit, limit_order, shard_size, cache,
                  max_detections, label_map, label_offset, unknown_labels, rpc, metric, ap_method,
                  **reader_options: Any) -> CorruptedDetectionConfig:
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
        seed = int_option("seed", seed, minimum=0)
        if seed >= 2**32:
            raise InputError(f"seed must be below 2**32; got {seed}.")
        sev = list(parse_severities(severities if severities is not None else "1-5"))
        profile = check_profile(profile)
        metric = choice_option("metric", metric or self.default_metric, ("coco", "voc"))
        config = CorruptedDetectionConfig(
            data=str(root), reader=reader, corruptions=chosen, severities=sev, seed=seed, profile=profile,
            **limit_config(limit, limit_order), shard_size=check_positive("shard_size", shard_size),
            max_detections=check_positive("max_detections", max_detections), label_map=label_map_option(label_map),
            label_offset=int_option("label_offset", label_offset),
            unknown_labels=choice_option("unknown_labels", unknown_labels, ("error", "drop")),
            rpc=choice_option("rpc", rpc, RPC_CONVENTIONS), metric=metric,
            ap_method=choice_option("ap_method", ap_method, ("11-point", "all-point")),
            settings=[str(CLEAN_SETTING)] + [str(Setting(c, s)) for c in chosen for s in sev],
            headline=self.headline_metric if metric == self.default_metric else ("AP50" if metric == "voc" else "AP"))
        self._cache = cache_root(cache)
        if self._cache is not None:
            write_cache_settings(self._cache, {"seed": seed, "profile": profile, "corruptions": chosen,
                                               "severities": sev})
        ds, _, _ = self._dataset(config)
        if not len(ds):
            raise DataError(f"the {self.name} dataset under {root} has no images.")
        if config.limit:
            config = config.replace(limit_stats={"order": config.limit_order, "samples": len(ds),
                                                 "of": len(self.read_dataset(config).samples)})
        return config

    def image_ids(self, config: CorruptedDetectionConfig, ds: DetectionDataset) -> list[Any]:
        return list(range(len(ds)))

    def metrics(self, config: CorruptedDetectionConfig, predictions, related=None) -> list[MetricRow]:
        ds, _, gt = self._dataset(config)
        ids = self.image_ids(config, ds)
        n = len(ds)
        empty = {"boxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.zeros(0, np.int64)}
        per_setting: dict[str, list] = {}
        rmse: dict[str, list[float]] = {}
        for unit, cols in predictions.items():
            setting = setting_of(unit)
            dets = per_setting.setdefault(setting, [None] * n)
            for row, index in enumerate(cols["label"]):
                dets[int(index)] = unpad_detections(cols, row)
            values = cols["pixel_rmse"][np.isfinite(cols["pixel_rmse"])]
            rmse.setdefault(setting, []).extend(values.tolist())
        rows: list[MetricRow] = []
        nested: dict[str, dict[int, Any]] = {c: {} for c in config.corruptions}
        for setting, dets in per_setting.items():
            missing = sum(d is None for d in dets)
            if missing:
                rows.append(("images_without_predictions", setting, float(missing)))
            cell = score_setting(config.metric, gt, ids, [d if d is not None else empty for d in dets],
                                 ap_method=config.ap_method)
            if setting == CLEAN:
                for c in nested:
                    nested[c][0] = cell
            else:
                parsed = Setting.parse(setting)
                nested[parsed.shift][parsed.level] = cell
        cell_rows, perf = robustness_rows(nested, corruptions=config.corruptions, severities=config.severities,
                                          headline=config.headline, rpc=config.rpc, class_names=ds.categories)
        rows += cell_rows
        table = {}
        for setting, values in rmse.items():
            if setting != CLEAN and values:
                rows.append(("rmse", setting, float(np.mean(values))))
                parsed = Setting.parse(setting)
                table.setdefault(parsed.shift, {})[parsed.level] = float(np.mean(values))
        head = perf.get(config.headline)
        if head is not None and len([c for c in head.corruptions if c in table]) >= 2:
            try:
                analysis = rmse_vs_rpc(table, head, by="corruption")
            except InputError:
                analysis = None
            if analysis is not None:
                rows += [("rmse_vs_rpc:slope", "", analysis.slope), ("rmse_vs_rpc:intercept", "", analysis.intercept),
                         ("rmse_vs_rpc:pearson_r", "", analysis.pearson_r)]
        return rows


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


class _CocoFormat(CorruptedDetection):
    """Any COCO-format set: ``<data>/annotations/instances_*.json`` + its image folder."""

    options = (*CorruptedDetection.options,
               Option("annotations", "path", help="The COCO instances file (default: the one under "
                      "<data>/annotations/)."),
               Option("images", "path", help="The image folder (default: the one the annotations name)."))

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:
        ann, images = _coco_files(root, options["annotations"], options["images"])
        digest = hashlib.sha256(Path(ann).read_bytes()).hexdigest()[:16] if Path(ann).is_file() else "missing"
        return {"annotations": ann, "images": images, "annotations_sha256_16": digest}

    def read_dataset(self, config: CorruptedDetectionConfig) -> DetectionDataset:
        return read_coco(config.reader["annotations"], config.reader["images"])

    def ground_truth(self, config: CorruptedDetectionConfig, ds: DetectionDataset) -> Any:
        if config.metric == "voc":
            return ds.samples
        data = json.loads(Path(config.reader["annotations"]).read_text())  # the original areas and flags
        keep = {s.image_id for s in ds.samples}
        return {"images": [i for i in data["images"] if i["id"] in keep], "categories": data["categories"],
                "annotations": [a for a in data["annotations"] if a["image_id"] in keep]}

    def image_ids(self, config: CorruptedDetectionConfig, ds: DetectionDataset) -> list[Any]:
        return [s.image_id for s in ds.samples] if config.metric == "coco" else list(range(len(ds)))


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
class VocC(CorruptedDetection):
    """Pascal-C: VOC2007 test corrupted on the fly; headline VOC07 AP50 (11-point; published
    Faster R-CNN: P 80.5, mPC 48.6, rPC 60.4 as the ratio of class means)."""

    name = "voc-c"
    default_metric = "voc"
    headline_metric = "AP50"
    options = (*CorruptedDetection.options, Option("year", "str", "2007", help="VOC year."),
               Option("split", "str", "test", help="VOC image set."))

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:
        return {"year": str(options["year"]), "split": str(options["split"])}

    def read_dataset(self, config: CorruptedDetectionConfig) -> DetectionDataset:
        return read_voc(config.data, year=config.reader["year"], split=config.reader["split"])


@register_benchmark
class CityscapesC(CorruptedDetection):
    """Cityscapes-C: the 8 instance classes of Cityscapes val, COCO-style AP (published Faster
    R-CNN: P 36.4, mPC 12.2, rPC 33.4)."""

    name = "cityscapes-c"
    options = (*CorruptedDetection.options, Option("split", "str", "val", help="Cityscapes split."))

    def reader_config(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:
        return {"split": str(options["split"])}

    def read_dataset(self, config: CorruptedDetectionConfig) -> DetectionDataset:
        return read_cityscapes(config.data, split=config.reader["split"])


# --- mmdetection results pickles --------------------------------------------------------------------------
