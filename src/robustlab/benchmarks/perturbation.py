"""Benchmarks ``imagenet-p`` (released ImageNet-P videos / CIFAR-10-P arrays) and ``perturbed``
(any labelled image folder, sequences generated on the fly), with FP, FR, mFR, T5D and mT5D.

A sample is one perturbation *sequence*; a unit is a perturbation folder and a shard of its
sequences (``"rotate/shard-0003"``); the setting is the folder name as released
(``"rotate"``, ``"gaussian_noise_2"``). Stored columns per sequence:

- ``sample_id`` (str), ``label`` (int64; -1 when the layout has no classes);
- ``n_frames`` (int16): frames T of the sequence;
- ``frame_top5`` (int32, N x T*k): the top-k classes (k = 5, fewer only for models with
  fewer classes) of every frame, best first, frame-major (reshape to (N, T, k)).

Every metric is computed from those columns (:mod:`.perturbation_metrics`): per folder
and stride ``d`` (``"rotate/stride-1"``) the flip probability and top-5 distance; for the
difficulty-1 folders of the ImageNet setting also FR and the T5D ratio against the built-in
AlexNet values, and mFR / mT5D over the 10 test perturbations (``"stride-1"``; the headline
``("mfr", "")`` and ``("mt5d", "")`` are stride 1, as in the paper). Per-sequence flip counts,
to see which sequences flip most: :func:`sequence_flips` / :func:`most_flipping_sequences`.

How frames travel through the engine: :meth:`load` applies the model's resize/crop to every
frame (a no-op for 224 px frames and ImageNet models) and returns the (T, H, W, 3) stack as
one sample; a batch stacks them to (B, T, H, W, 3) and :meth:`predict` runs the model on its
B*T frames, in chunks. Batch sizes count sequences (31-41 frames each): use
``--batch-size 4``-``8`` for 224 px models.

The family is four modules: :mod:`.perturbation_config` (the configs, options and folder names),
:mod:`.perturbation_metrics`, :mod:`.perturbation_presentation` (notes and the ``show`` layout) and
this one (the sample sets, the released layouts and the two benchmarks).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.classification import ArraySamples, ImageFolderSamples, SampleView, read_image_folder, resolve_class_map
from ..data.limits import limit_positions, limit_stats
from ..engine.benchmark import Benchmark, MetricRow, Unit, model_device, register_benchmark
from ..engine.classification import classify_batch
from ..engine.options import (BASELINE_RUN, CLASS_MAP, LIMIT, LIMIT_ORDER, Option, baseline_option, check_positive,
                              check_seed, class_map_config, limit_config, seed_option, shard_size_option)
from ..engine.records import Batch, Sample, sample_id
from ..engine.setting import Setting, setting_of
from ..errors import DataError, InputError, RobustlabError
from ..metrics.stability import get_stability_baseline
from ..safeload import as_integer_labels, load_npy
from ..perturbations import frame_count, generate, get_perturbation
from ..perturbations.dataset import recorded_setting, resolve_perturbations, sequence_seed
from ..perturbations.io import VIDEO_EXTENSIONS, is_sequence_entry, perturbation_folder, read_cifar_p, read_sequence
from .perturbation_config import (DEFAULT_STRIDES, FRAME_CHUNK, FRAMES_COLUMN, PERTURBATIONS_OPTION, SEQUENCE_HINTS,
                                  STRIDES_OPTION, ImageNetPConfig, PerturbedConfig, SequenceConfig, check_strides,
                                  parse_folder, parse_strides)
from .perturbation_metrics import (difficulty_applies, sequence_flips, sequence_rankings, setting_rankings,
                                   stability_baseline_from_run, stability_metrics)
from .perturbation_presentation import (STABILITY_LEGEND, ImageNetPShow, PerturbedShow, SequenceShow,
                                        difficulty_coverage, difficulty_coverage_notes, rate_reasons, stability_notes,
                                        stability_summary, stability_text)

__all__ = [  # this module's own names, and those of the family's other modules (where they were before the split)
    "DEFAULT_STRIDES", "FRAME_CHUNK", "FRAMES_COLUMN", "ImageNetP", "ImageNetPConfig", "ImageNetPShow",
    "PERTURBATIONS_OPTION", "Perturbed", "PerturbedConfig", "PerturbedSamples", "PerturbedShow", "SEQUENCE_HINTS",
    "STABILITY_LEGEND", "STRIDES_OPTION", "SequenceBenchmark", "SequenceConfig", "SequenceFolderSamples",
    "SequenceShow", "check_strides", "difficulty_applies", "difficulty_coverage", "difficulty_coverage_notes",
    "imagenet_p_layout", "list_sequences", "most_flipping_sequences", "open_cifar_p", "parse_folder", "parse_strides",
    "rate_reasons", "sequence_flips", "sequence_rankings", "setting_rankings", "stability_baseline_from_run",
    "stability_metrics", "stability_notes", "stability_summary", "stability_text",
]


# --- sample sets: one sample = one sequence ----------------------------------------------------




@dataclass(frozen=True, eq=False)
class SequenceFolderSamples(ImageFolderSamples):
    """Sequences (videos, ``.npy`` files or PNG frame folders) listed relative to ``root``: the files
    of :class:`~robustlab.data.classification.ImageFolderSamples`, each read as a (T, H, W, 3) stack."""

    frames: int | None = None
    stride: int = 1

    def read(self, i: int) -> np.ndarray:
        return read_sequence(self.root / self.files[i], expected_frames=self.frames, stride=self.stride)


@functools.lru_cache(maxsize=32)
def open_cifar_p(path: str, frames: int | None, stride: int) -> np.ndarray:
    """A CIFAR-10-P array (N, T, H, W, 3), checked and memory-mapped, opened once per process."""
    return read_cifar_p(path, expected_frames=frames, stride=stride)


@dataclass(frozen=True, eq=False)
class PerturbedSamples(SampleView):
    """Images of ``base`` turned into perturbation sequences when read (as ``robustlab perturb`` would)."""

    perturbation: str = ""
    setting: str = ""
    difficulty: int = 1
    seed: int = 0

    def read(self, i: int) -> np.ndarray:
        rng = sequence_seed(self.seed, self.base.ids[i], self.perturbation, self.difficulty)
        return generate(self.base.read(i), self.perturbation, setting=self.setting, difficulty=self.difficulty,
                        rng=rng)


# --- listing the released layouts -----------------------------------------------------------------


def imagenet_p_layout(root: Path) -> tuple[str, dict[str, Path]]:
    """``("cifar", {folder: <root>/<folder>.npy})`` or ``("folders", {folder: <root>/<folder>})``.

    Only names of perturbations (with ``_2``/``_3`` for noise difficulties) are picked up.
    """
    if not root.is_dir():
        raise DataError(f"ImageNet-P folder {root} does not exist; it must hold <perturbation>/<class>/<name>.mp4 "
                        "(or CIFAR-10-P <perturbation>.npy arrays).")
    arrays = {p.stem: p for p in sorted(root.glob("*.npy")) if parse_folder(p.stem)}
    if arrays:
        return "cifar", arrays
    folders = {e.name: Path(e.path) for e in sorted(os.scandir(root), key=lambda e: e.name)
               if e.is_dir() and parse_folder(e.name)}
    if not folders:
        raise DataError(f"{root} is not in the ImageNet-P layout: no perturbation folders (rotate/, "
                        "gaussian_noise/, ...) or CIFAR-10-P arrays (rotate.npy, ...) found.")
    return "folders", folders


def list_sequences(folder: Path) -> tuple[list[str], list[str | None]]:
    """Sequences under a perturbation folder: relative ids and their class folder (None when flat)."""
    files: list[str] = []
    classes: list[str | None] = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue
        if is_sequence_entry(entry):
            files.append(entry.name)
            classes.append(None)
        elif entry.is_dir():
            for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
                if is_sequence_entry(sub):
                    files.append(f"{entry.name}/{sub.name}")
                    classes.append(entry.name)
    if not files:
        raise DataError(f"no sequences found in {folder} (looked for {', '.join(VIDEO_EXTENSIONS)}, .npy files and "
                        "PNG frame folders, directly or in class folders).")
    return files, classes


def most_flipping_sequences(run: str, *, store: object = None, stride: int = 1, perturbation: str | None = None,
                            top: int | None = 20) -> list[dict[str, Any]]:
    """The sequences of a stored ``imagenet-p``/``perturbed`` run that flip most (see :func:`sequence_flips`).

    ``perturbation`` keeps one folder (``"rotate"``, ``"gaussian_noise_2"``); ``top=None`` keeps all.
    """
    from ..engine.benchmark import get_benchmark
    from ..engine.evaluation import opened_store

    with opened_store(store) as st:
        record = st.get_run(run)
        try:
            bench = get_benchmark(record.benchmark)
        except RobustlabError:
            bench = None
        if not isinstance(bench, SequenceBenchmark):
            raise InputError(f"run {record.id} is a {record.benchmark!r} run; per-sequence flips exist for "
                             "imagenet-p and perturbed runs.")
        predictions = st.read_predictions(record.id)
    if perturbation is not None:
        predictions = {u: c for u, c in predictions.items() if setting_of(u) == perturbation}
        if not predictions:
            raise InputError(f"run {record.id} has no sequences of {perturbation!r}.")
    rows = sequence_flips(predictions, stride=stride)
    return rows if top is None else rows[:top]


# --- the shared plugin behaviour ------------------------------------------------------------------


class SequenceBenchmark(Benchmark):
    """Frame stacks in, per-frame top-5 out, stability metrics from the stored columns."""

    option_hints = SEQUENCE_HINTS

    def load(self, samples, i: int, prepare) -> Sample:
        frames = samples.read(i)
        return Sample(sample_id(samples, i), int(samples.labels[i]), np.stack([prepare(f) for f in frames]))

    def predict(self, model: torch.nn.Module, batch: Batch, config: SequenceConfig) -> dict[str, np.ndarray]:
        model = self.for_data_classes(model, config)  # zero-shot and hf: models take the data's classes
        x = batch.inputs(model_device(model))  # (B, T, 3, H, W), or a list of (T, 3, H, W)
        stacks = [x] if not isinstance(x, list) else [s.unsqueeze(0) for s in x]
        columns = []
        for stack in stacks:
            b, t = stack.shape[:2]
            frames = stack.reshape(b * t, *stack.shape[2:])
            tops = [classify_batch(model, frames[s:s + FRAME_CHUNK], top_k=5, num_classes=self.num_classes(config))
                    ["top5_index"] for s in range(0, b * t, FRAME_CHUNK)]
            top = np.concatenate(tops)
            columns.append({"n_frames": np.full(b, t, dtype=np.int16), FRAMES_COLUMN: top.reshape(b, t * top.shape[1])})
        if len(columns) > 1 and len({c[FRAMES_COLUMN].shape[1] for c in columns}) > 1:
            raise InputError(f"sequences of unit {batch.unit} have different numbers of frames; a perturbation "
                             "folder's sequences must all have the same length.")
        return {k: np.concatenate([c[k] for c in columns]) for k in columns[0]}

    def related_runs(self, config: SequenceConfig) -> dict[str, str]:
        run = config.baseline_run
        return {"baseline_run": run} if run and run != "self" else {}

    def metrics(self, config: SequenceConfig, predictions, related=None) -> list[MetricRow]:
        if config.baseline_run == "self":  # the run is its own baseline: FR = 100
            base = stability_baseline_from_run(predictions, config.baseline_run)
        elif related and "baseline_run" in related:
            base = stability_baseline_from_run(related["baseline_run"], config.baseline_run)
        else:
            base = None
        return stability_metrics(predictions, strides=config.strides, setting=config.setting,
                                 baseline_name=config.baseline, baseline=base)


def _shards(folder: str, n: int, shard_size: int, **params: Any) -> list[Unit]:
    return [Unit.of(Setting(folder), k, {**params, "start": s, "stop": min(n, s + shard_size)})
            for k, s in enumerate(range(0, n, shard_size))]


# --- imagenet-p -------------------------------------------------------------------------------------


@register_benchmark
class ImageNetP(SequenceBenchmark):
    """Released ImageNet-P videos (``<root>/<perturbation>/<wnid>/<name>.mp4``; also ``.npy`` files and PNG
    frame folders as ``robustlab perturb`` writes them) or CIFAR-10-P arrays (``<root>/<perturbation>.npy``,
    optional ``labels.npy``).

    Its options are :attr:`options`; ``perturbations`` defaults to every perturbation folder present.
    """

    name = "imagenet-p"
    config_class = ImageNetPConfig
    presentation = "imagenet-p"
    options = (
        PERTURBATIONS_OPTION, STRIDES_OPTION,
        Option("setting", "str", help="Frame counts to expect: imagenet (default for folders) or cifar (default for "
               "arrays)."),
        Option("frames", "str", "released", help="released (every sequence has the released number of frames) or "
               "any (any length longer than the largest stride, the same within a folder)."),
        CLASS_MAP, Option("limit", "int", help="Only N sequences of each folder, the same number from each class "
                          "(see --limit-order)."), LIMIT_ORDER, shard_size_option(500),
        baseline_option("alexnet"), BASELINE_RUN,
    )

    def __init__(self) -> None:
        self._listing: dict[tuple[str, str, Any], tuple[list[str], list[str | None], list[str]]] = {}

    def configure(self, data: str, *, perturbations, strides, setting, frames, class_map, limit, limit_order,
                  shard_size, baseline, baseline_run) -> ImageNetPConfig:
        root = Path(data).expanduser().resolve()
        layout, found = imagenet_p_layout(root)
        if perturbations is not None:
            wanted = set(resolve_perturbations(perturbations))
            folders = [f for f in found if parse_folder(f)[0] in wanted]
            if not folders:
                raise DataError(f"none of {', '.join(sorted(wanted))} is under {root} (found: {', '.join(found)}).")
        else:
            folders = list(found)
        made_in = recorded_setting(root)  # a folder robustlab perturb wrote says which setting it used (default)
        setting = setting or made_in or ("cifar" if layout == "cifar" else "imagenet")
        if setting not in ("imagenet", "cifar"):
            raise InputError(f"setting must be imagenet or cifar; got {setting!r}.")
        if frames not in ("released", "any"):
            raise InputError(f"frames must be 'released' (the released frame counts) or 'any'; got {frames!r}.")
        get_stability_baseline(baseline)
        config = ImageNetPConfig(data=str(root), layout=layout, folders=folders, strides=parse_strides(strides),
                                 setting=setting, frames=frames, **limit_config(limit, limit_order),
                                 shard_size=check_positive("shard_size", shard_size), baseline=baseline,
                                 baseline_run=baseline_run, num_classes=None)
        if frames == "released":
            check_strides([parse_folder(f)[0] for f in folders], setting, config.strides)
        if layout == "cifar":
            labels = root / "labels.npy"
            config = config.replace(labels=str(labels) if labels.is_file() else None)
            config = config.replace(num_classes=10 if config.labels else None)
            if config.limit:
                config = config.replace(limit_stats=self._cifar_rows(config, folders[0])[1])
            return config
        config = config.replace(class_map=class_map_config(class_map))
        classes = sorted({c for f in folders for c in self._list(config, f)[2]})
        config = config.replace(num_classes=len(resolve_class_map(classes, config.class_map)[1]) if classes else None)
        if config.limit:
            config = config.replace(limit_stats=self._list(config, folders[0])[3])
        return config

    def _list(self, config: ImageNetPConfig, folder: str):
        """``(files, class folders, classes present, limit stats)`` of a sequence folder under the limit."""
        order = config.order
        key = (config.data, folder, config.limit, order)
        if key not in self._listing:
            files, classes = list_sequences(Path(config.data, folder))
            stats = None
            if config.limit:
                codes = [c if c is not None else "" for c in classes]
                keep = limit_positions(files, codes, config.limit, order)
                stats = limit_stats(codes, keep, len(files), order)
                files, classes = [files[p] for p in keep], [classes[p] for p in keep]
            self._listing[key] = (files, classes, sorted({c for c in classes if c is not None}), stats)
        return self._listing[key]

    def _labels(self, config: ImageNetPConfig) -> np.ndarray | None:
        """The CIFAR-10-P labels (``labels.npy``), None when the arrays have none."""
        if not config.labels:
            return None
        return as_integer_labels(load_npy(config.labels, what="CIFAR-10-P labels"), f"CIFAR-10-P labels {config.labels}")

    def _cifar_rows(self, config: ImageNetPConfig, folder: str) -> tuple[tuple[int, ...] | None, dict | None]:
        """``(rows taken, limit stats)`` of a CIFAR-10-P array under the limit (``(None, None)``: every row)."""
        if not config.limit:
            return None, None
        n = len(read_cifar_p(Path(config.data, f"{folder}.npy"), expected_frames=self._frames(config, folder),
                             stride=self._max_stride(config, folder)))
        labels = self._labels(config)
        if labels is not None and len(labels) < n:
            raise DataError(f"{config.labels} has {len(labels)} labels, fewer than the {n} sequences of {folder}.npy.")
        labels = None if labels is None else labels[:n]
        keep = limit_positions([str(i) for i in range(n)], labels, config.limit, config.order)
        return tuple(int(p) for p in keep), limit_stats(labels, keep, n, config.order)

    def _frames(self, config: ImageNetPConfig, folder: str) -> int | None:
        return frame_count(parse_folder(folder)[0], config.setting) if config.frames == "released" else None

    def _max_stride(self, config: ImageNetPConfig, folder: str) -> int | None:
        noise = get_perturbation(parse_folder(folder)[0]).noise
        return None if noise else max(config.strides)

    def plan(self, config: ImageNetPConfig) -> list[Unit]:
        units: list[Unit] = []
        for folder in config.folders:
            if config.layout == "cifar":
                arr = read_cifar_p(Path(config.data, f"{folder}.npy"), expected_frames=self._frames(config, folder),
                                   stride=self._max_stride(config, folder))
                n = len(arr) if not config.limit else len(self._cifar_rows(config, folder)[0])
            else:
                n = len(self._list(config, folder)[0])
            units.extend(_shards(folder, n, config.shard_size))
        return units

    def samples(self, config: ImageNetPConfig, unit: Unit):
        folder, start, stop = unit.setting.shift, unit.params["start"], unit.params["stop"]
        frames, stride = self._frames(config, folder), self._max_stride(config, folder) or 0
        if config.layout == "cifar":
            return self._cifar_samples(config, folder, start, stop, frames, stride)
        files, classes, _, _ = self._list(config, folder)
        names = sorted({c for c in classes if c is not None})
        index, class_names = resolve_class_map(names, config.class_map) if names else ({}, ())
        labels = np.asarray([index[c] if c is not None else -1 for c in classes[start:stop]], dtype=np.int64)
        return SequenceFolderSamples(Path(config.data, folder), tuple(files[start:stop]), labels, class_names,
                                     frames, stride)

    def _cifar_samples(self, config: ImageNetPConfig, folder: str, start: int, stop: int, frames: int | None,
                       stride: int) -> ArraySamples:
        """Rows ``start:stop`` of a CIFAR-10-P array (of the rows a balanced limit took)."""
        rows = self._cifar_rows(config, folder)[0] if config.order == "balanced" else None
        taken = list(range(start, stop)) if rows is None else [rows[i] for i in range(start, stop)]
        labels = self._labels(config)
        if labels is not None:
            if len(labels) <= max(taken, default=-1):
                raise DataError(f"{config.labels} has {len(labels)} labels, fewer than the {stop} sequences of "
                                f"{folder}.npy.")
            labels = labels[taken]
        else:
            labels = np.full(len(taken), -1, np.int64)
        return ArraySamples(Path(config.data, f"{folder}.npy"), start, stop, labels, rows=rows,
                            opener=functools.partial(open_cifar_p, frames=frames, stride=stride))


# --- perturbed --------------------------------------------------------------------------------------


@register_benchmark
class Perturbed(SequenceBenchmark):
    """Any labelled image folder (``<root>/<class>/<image>``), each image turned into perturbation
    sequences on the fly, with the seeds of ``robustlab perturb`` (identical sequences).

    Its options are :attr:`options`.
    """

    name = "perturbed"
    config_class = PerturbedConfig
    presentation = "perturbed"
    options = (
        PERTURBATIONS_OPTION,
        Option("setting", "str", "imagenet", help="imagenet (224 px frames from Resize 256) or cifar (square images "
               "as they are)."),
        Option("difficulty", "int", 1, help="Noise level of the noise sequences: 1, 2 or 3."),
        seed_option(0, "Base seed; each sequence gets its own derived seed (as robustlab perturb)."),
        STRIDES_OPTION, CLASS_MAP, LIMIT, LIMIT_ORDER, shard_size_option(500), baseline_option("alexnet"), BASELINE_RUN,
    )

    def __init__(self) -> None:
        self._base_cache: dict[str, ImageFolderSamples] = {}

    def configure(self, data: str, *, perturbations, setting, difficulty, seed, strides, class_map, limit, limit_order,
                  shard_size, baseline, baseline_run) -> PerturbedConfig:
        if setting not in ("imagenet", "cifar"):
            raise InputError(f"setting must be imagenet or cifar; got {setting!r}.")
        if difficulty not in (1, 2, 3) or isinstance(difficulty, bool):
            raise InputError(f"difficulty must be 1, 2 or 3; got {difficulty!r}.")
        get_stability_baseline(baseline)
        chosen = resolve_perturbations(perturbations if perturbations is not None else "test")
        config = PerturbedConfig(
            data=str(Path(data).expanduser().resolve()), perturbations=list(chosen),
            folders=[perturbation_folder(p, int(difficulty), noise=get_perturbation(p).noise) for p in chosen],
            setting=setting, difficulty=int(difficulty), seed=check_seed(seed), strides=parse_strides(strides),
            class_map=class_map_config(class_map), **limit_config(limit, limit_order),
            shard_size=check_positive("shard_size", shard_size), baseline=baseline, baseline_run=baseline_run,
            num_classes=None)
        check_strides(chosen, setting, config.strides)
        base = self._base(config)
        config = config.replace(num_classes=len(base.classes))
        if config.limit:
            config = config.replace(**limit_config(limit, limit_order, base))
        return config

    def _base(self, config: PerturbedConfig) -> ImageFolderSamples:
        key = repr((config.data, config.class_map, config.limit, config.order))
        if key not in self._base_cache:
            self._base_cache[key] = read_image_folder(config.data, config.class_map, limit=config.limit,
                                                      limit_order=config.order)
        return self._base_cache[key]

    def plan(self, config: PerturbedConfig) -> list[Unit]:
        n = len(self._base(config))
        return [u for p, folder in zip(config.perturbations, config.folders)
                for u in _shards(folder, n, config.shard_size, perturbation=p)]

    def samples(self, config: PerturbedConfig, unit: Unit):
        base = self._base(config).subset(unit.params["start"], unit.params["stop"])
        return PerturbedSamples(base, unit.params["perturbation"], config.setting, config.difficulty, config.seed)
