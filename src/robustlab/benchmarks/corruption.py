"""Benchmarks ``imagenet-c`` (the released ImageNet-C / CIFAR-10-C layouts) and ``corrupted``
(any labelled image folder, corrupted on the fly), with CE, mCE and relative mCE.

Settings are ``<corruption>/<severity>`` and ``clean``; units are a setting and a shard of its
samples (``"fog/3/shard-0002"``, ``"clean/shard-0000"``). The family is four modules:

- :mod:`.corruption_config` -- the configs (:class:`ImageNetCConfig`, :class:`CorruptedConfig`) and
  the options and checks the corruption benchmarks share;
- :mod:`.corruption_units` -- the units and samples of the layouts (released folders, CIFAR-C
  arrays, clean images corrupted on the fly);
- :mod:`.corruption_presentation` -- notes, summary and the ``robustlab show`` layout;
- this module -- the metrics (CE, relative CE, mCE) and the two benchmarks.

Their report section extends the presentations (:mod:`robustlab.report.section_corruption`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..corruptions.api import MIN_SIZE
from ..corruptions.checks import parse_severities
from ..corruptions.registry import corruption_baseline
from ..corruptions.released import imagenet_c_folder, imagenet_c_settings, read_cifar_c
from ..corruptions.views import corrupt_on_the_fly
from ..data.classification import SizeCheckedSamples, class_folders, read_image_folder, resolve_class_map
from ..data.images import is_image_file, read_image
from ..data.releases.consistency import check_released_settings, subset_record
from ..engine.benchmark import Benchmark, MetricRow, Unit, model_device, register_benchmark
from ..engine.classification import add_setting_counts, error_rows, setting_counts
from ..engine.options import (ALLOW_INCOMPLETE, BASELINE_RUN, CLASS_MAP, CLASSES_PER_UNIT, CLEAN_DATA, CLEAN_RUN,
                              CORRUPTIONS, LIMIT, LIMIT_ORDER, PROFILE, SAVE_LOGITS, SEVERITIES, TOP_K, Option,
                              baseline_option, check_positive, check_seed, class_map_config, limit_config, seed_option,
                              shard_size_option)
from ..engine.records import Sample, sample_id
from ..engine.setting import Setting, setting_of
from ..errors import DataError, InputError
from ..metrics.corruption import (
    BENCHMARK_CORRUPTIONS,
    N_SEVERITIES,
    CorruptionBaseline,
    corruption_error_terms,
    get_corruption_baseline,
    relative_ce_terms,
)
from ..metrics.ratios import mean_of_defined
from .corruption_config import (CLEAN, CLEAN_SETTING, CORRUPTION_BACKENDS, IMAGENET_C_SIZE, KEEP_INPUT_SIZE, SELF,
                                CorruptedConfig, ImageNetCConfig, ReleasedConfig, check_corruption_backend,
                                check_keep_input_size, corruption_settings, imagenet_c_geometry,
                                related_corruption_runs, select_corruptions)
from .corruption_presentation import (CE_LEGEND, CORRUPTION_FAMILY, CORRUPTION_HEADLINE, CORRUPTION_TITLE,
                                      NOT_COMPARABLE_LABEL, PUBLISHED_ALEXNET, ce_baseline_text, ce_reasons,
                                      corruption_notes, corruption_summary_dict, corruption_text, on_the_fly_note,
                                      own_data_label, own_data_note, relative_ce_direction_notes, relative_ce_reasons)
from .corruption_units import (CPU_CORRUPTIONS, DeviceCorruptedSamples, PendingCorruption, cifar_clean_data,
                               cifar_units, class_blocks, classes_per_unit, corruption_unit_samples, folder_units,
                               on_the_fly_shared_reads, on_the_fly_units)

__all__ = [  # this module's own names, and those of the family's other modules (where they were before the split)
    "CE_LEGEND", "CLEAN", "CLEAN_SETTING", "CORRUPTION_BACKENDS", "CORRUPTION_FAMILY", "CORRUPTION_HEADLINE",
    "CORRUPTION_TITLE", "CPU_CORRUPTIONS", "Corrupted", "CorruptedConfig", "DeviceCorruptedSamples",
    "IMAGENET_C_SIZE", "ImageNetC", "ImageNetCConfig", "KEEP_INPUT_SIZE", "NOT_COMPARABLE_LABEL", "PUBLISHED_ALEXNET",
    "PendingCorruption", "ReleasedConfig", "SELF", "baseline_from_run", "ce_baseline_text", "ce_reasons",
    "check_corruption_backend", "check_keep_input_size", "cifar_clean_data", "cifar_units", "class_blocks",
    "classes_per_unit", "corruption_metrics", "corruption_notes", "corruption_settings", "corruption_summary_dict",
    "corruption_text", "corruption_unit_samples", "folder_units", "imagenet_c_geometry", "on_the_fly_note",
    "on_the_fly_shared_reads", "on_the_fly_units", "own_data_label", "own_data_note", "related_corruption_runs",
    "relative_ce_direction_notes", "relative_ce_reasons", "run_baseline", "select_corruptions",
]


# --- metrics shared by both benchmarks -------------------------------------------------------------


def baseline_from_run(predictions: Mapping[str, Mapping[str, np.ndarray]], corruptions: Sequence[str],
                      run: str) -> CorruptionBaseline:
    """The mean error per corruption (and clean error) of the stored run ``run`` (its
    ``predictions``), as a CE baseline over ``corruptions``.

    This is how a model other than AlexNet normalises CE and relative CE (the demo's shipped
    baseline model, or any reference network evaluated on the same data and corruptions).

    The baseline carries its sample counts, so ratios whose denominator is within its sampling
    error come out undefined (:func:`robustlab.metrics.relative_ce_terms`).
    """
    counts = setting_counts(predictions, {u: setting_of(u) for u in predictions})
    error = {s: e1 / n for s, (n, e1, _) in counts.items() if n}
    errors, samples = {}, {}
    for c in corruptions:
        errs = [error.get(f"{c}/{s}") for s in range(1, N_SEVERITIES + 1)]
        if all(e is not None for e in errs):
            errors[c] = float(np.mean(errs))
            samples[c] = min(counts[f"{c}/{s}"][0] for s in range(1, N_SEVERITIES + 1))
    if not errors:
        raise DataError(f"baseline run {run} has none of the corruptions {', '.join(corruptions)} at all 5 "
                        "severities; evaluate the baseline model on the same corruptions first.")
    return CorruptionBaseline(f"run:{run}", errors, error.get(CLEAN), source=f"stored run {run}", samples=samples,
                              clean_samples=counts[CLEAN][0] if CLEAN in error else None)


def run_baseline(baseline_run: str | None, corruptions: Sequence[str], related,
                 predictions=None) -> CorruptionBaseline | None:
    """The baseline given by ``baseline_run``: another stored run (``related["baseline_run"]``), or
    this run (``self``: its ``predictions``)."""
    if baseline_run == SELF and predictions is not None:
        return baseline_from_run(predictions, corruptions, baseline_run)
    if related and "baseline_run" in related:
        return baseline_from_run(related["baseline_run"], corruptions, baseline_run)
    return None


def corruption_metrics(predictions: Mapping[str, Mapping[str, np.ndarray]], setting_of: Mapping[str, str], *,
                       corruptions: Sequence[str], baseline_name: str = "alexnet", cifar: bool = False,
                       clean_predictions: Mapping[str, Mapping[str, np.ndarray]] | None = None,
                       baseline: CorruptionBaseline | None = None) -> list[MetricRow]:
    """Errors per setting, CE / relative CE per corruption, mCE, relative mCE, clean error.

    CE needs a corruption's 5 severities; mCE the 15 benchmark corruptions (otherwise
    ``mce_subset`` over the complete benchmark corruptions evaluated is reported). All values
    are fractions/ratios (mCE 0.767 is the paper's 76.7). ``cifar``: errors only (CIFAR-10-C has no
    published baseline); ``baseline`` (e.g. :func:`baseline_from_run`) else the built-in ``baseline_name``.
    """
    counts = setting_counts(predictions, setting_of)
    if clean_predictions:
        add_setting_counts(counts, clean_predictions, CLEAN)
    rows = list(error_rows(counts))
    error = {s: e1 / n for s, (n, e1, _) in counts.items() if n}
    clean_error = error.get(CLEAN)
    if clean_error is not None:
        rows.append(("clean_error", "", clean_error))
    per_corruption: dict[str, np.ndarray] = {}
    for c in corruptions:
        errs = [error.get(f"{c}/{s}") for s in range(1, N_SEVERITIES + 1)]
        if all(e is not None for e in errs):
            per_corruption[c] = np.asarray(errs, dtype=float)
            rows.append(("mean_error", c, float(np.mean(errs))))
    if cifar or not per_corruption:
        return rows
    baseline = baseline or corruption_baseline(baseline_name)
    known = [c for c in per_corruption if c in baseline.errors]
    # Per corruption, so one undefined ratio (a baseline error within its sampling error on a
    # small set) drops that corruption only; the rows below let corruption_notes say why.
    ce_terms = {c: corruption_error_terms({c: per_corruption[c]}, baseline=baseline)[c] for c in known}
    ce = {c: t.value for c, t in ce_terms.items() if t.defined}
    rows.extend(("ce", c, v) for c, v in ce.items())
    for c, t in ce_terms.items():
        if not t.defined:
            rows += [("ce_baseline_error", c, t.denominator), ("ce_baseline_margin", c, t.margin)]
    rce_terms = {}
    if clean_error is not None and known and baseline.clean_error is not None:
        samples = {c: min(counts[s][0] for s in (CLEAN, *(f"{c}/{v}" for v in range(1, N_SEVERITIES + 1))))
                   for c in known}
        rce_terms = {c: relative_ce_terms({c: per_corruption[c]}, clean_error, baseline=baseline,
                                          samples=samples[c])[c] for c in known}
        rows.append(("relative_ce_baseline_clean_error", "", baseline.clean_error))
        for c, t in rce_terms.items():
            if t.defined:
                rows.append(("relative_ce", c, t.value))
            elif t.why:  # the model's error does not move with severity: relative_ce_reasons says so
                rows.append(("relative_ce_model_flat", c, float(samples[c])))
            rows += [("relative_ce_baseline_change", c, t.denominator), ("relative_ce_baseline_margin", c, t.margin)]
    bench = [c for c in BENCHMARK_CORRUPTIONS if c in ce_terms]
    suffix = "" if len(bench) == len(BENCHMARK_CORRUPTIONS) else "_subset"
    mean_ce = mean_of_defined(ce_terms[c] for c in bench)
    if mean_ce.value is not None:
        rows.append((f"mce{suffix}", "", mean_ce.value))
        if mean_ce.undefined:
            rows.append((f"mce{suffix}_terms", "", float(mean_ce.n_used)))
    if bench:
        rows.append((f"mean_corruption_accuracy{suffix}", "", float(np.mean([1 - per_corruption[c].mean() for c in bench]))))
    rel_bench = [c for c in BENCHMARK_CORRUPTIONS if c in rce_terms]
    if rel_bench:
        rel_suffix = "" if len(rel_bench) == len(BENCHMARK_CORRUPTIONS) else "_subset"
        detail = mean_of_defined(rce_terms[c] for c in rel_bench)
        rows.append((f"relative_mce{rel_suffix}_terms", "", float(detail.n_used)))
        if detail.value is not None:
            rows.append((f"relative_mce{rel_suffix}", "", detail.value))
    return rows

# --- imagenet-c ------------------------------------------------------------------------------------


@register_benchmark
class ImageNetC(Benchmark):
    """The released ImageNet-C folders (``<root>/<corruption>/<severity>/<wnid>/<file>``) or
    CIFAR-10-C arrays (``<root>/<corruption>.npy`` + ``labels.npy``).

    Its options are :attr:`options` (``robustlab evaluate -b imagenet-c --help``). With
    ``on_the_fly=True`` the data is the clean ImageNet val folder and ImageNet-C is made in
    memory: resize 256, centre crop 224, corrupt (``imagenet-c`` profile, seed
    ``derive_seed(seed, sample_id, corruption, severity)``), clean images evaluated as
    ``clean``. ``corruption_backend``: ``numpy`` corrupts in the loading workers, ``torch`` after
    batching on the model's device (default: torch when the model runs on a GPU). Also
    ``seed`` (0) and ``clean`` (True); both and the backend are part of the run's identity.
    """

    name = "imagenet-c"
    config_class = ImageNetCConfig
    presentation = "imagenet-c"
    worker_modules = ("robustlab.corruptions.kernels",)
    options = (
        CORRUPTIONS, SEVERITIES, CLASS_MAP, CLEAN_DATA, CLEAN_RUN, LIMIT, LIMIT_ORDER, CLASSES_PER_UNIT,
        shard_size_option(10000), baseline_option("alexnet"), BASELINE_RUN, TOP_K, SAVE_LOGITS,
        Option("on_the_fly", "bool", False, help="--data is the clean ImageNet val folder: corrupt in memory "
               "(resize 256, crop 224, corrupt), write no images."),
        Option("corruption_backend", "str", help="With --on-the-fly: numpy (in the loading workers) or torch (on the "
               "model's device); default torch on a GPU, else numpy.", choices=CORRUPTION_BACKENDS),
        seed_option(None, "With --on-the-fly: base seed of the per-image seeds (default 0)."),
        Option("clean", "bool", help="With --on-the-fly: also evaluate the clean images (default true)."),
        ALLOW_INCOMPLETE,
        KEEP_INPUT_SIZE,
    )

    def __init__(self) -> None:
        self._listings: dict[str, Any] = {}

    def example(self, config: ImageNetCConfig, setting: Setting) -> np.ndarray | None:
        """The first file of a stored ``<corruption>/<severity>`` folder (released folders only)."""
        if config.layout != "folders" or setting == CLEAN_SETTING or not config.data:
            return None
        folder = Path(config.data, setting.shift, str(setting.level))
        first = next((p for p in sorted(folder.rglob("*")) if p.is_file() and is_image_file(p)), None)
        return None if first is None else read_image(first)

    def evaluation_options(self, options: dict[str, Any], device: str | None) -> dict[str, Any]:
        if options.get("on_the_fly") and options.get("corruption_backend") is None:
            from ..corruptions.api import torch_backend_by_default

            return {**options, "corruption_backend": "torch" if torch_backend_by_default(device) else "numpy"}
        return options

    def configure(self, data: str, *, corruptions, severities, class_map, clean_data, clean_run, limit, limit_order,
                  classes_per_unit, shard_size, baseline, baseline_run, top_k, save_logits, on_the_fly,
                  corruption_backend, seed, clean, allow_incomplete, keep_input_size) -> ImageNetCConfig:
        root = Path(data).expanduser().resolve()
        check_keep_input_size(keep_input_size, on_the_fly)
        if on_the_fly and allow_incomplete:
            raise InputError("allow_incomplete applies to the released ImageNet-C folders; --on-the-fly reads clean "
                             "images (leave it out).")
        if on_the_fly:
            if clean_data is not None or clean_run is not None:
                raise InputError("with --on-the-fly the data folder holds the clean images and they are evaluated "
                                 "as setting 'clean': leave out --clean-data and --clean-run.")
            return self._configure_on_the_fly(
                root, corruptions=corruptions, severities=severities, class_map=class_map, limit=limit,
                limit_order=limit_order, classes_per_unit=classes_per_unit, baseline=baseline,
                baseline_run=baseline_run, top_k=top_k, save_logits=save_logits,
                backend=corruption_backend or "numpy", seed=0 if seed is None else seed,
                clean=True if clean is None else clean, keep_input_size=bool(keep_input_size))
        for key, value in (("corruption_backend", corruption_backend), ("seed", seed), ("clean", clean)):
            if value is not None:
                raise InputError(f"{key} applies to --on-the-fly evaluation from clean images; the released "
                                 "ImageNet-C files are already corrupted (add --on-the-fly, or leave it out).")
        cifar = (root / "labels.npy").is_file()
        if cifar:
            available = {p.stem: list(range(1, 6)) for p in root.glob("*.npy") if p.stem != "labels"}
        else:
            available = imagenet_c_settings(root)
        chosen = select_corruptions(corruptions, available)
        sev = list(parse_severities(severities if severities is not None else "1-5"))
        for c in chosen:
            if c not in available:
                raise DataError(f"corruption {c!r} is not under {root} (found: {', '.join(sorted(available))}); "
                                "download it or leave it out with --corruptions.")
            for s in sev:
                if not cifar:
                    imagenet_c_folder(root, c, s)
        if clean_data is not None and clean_run is not None:
            raise InputError("give either clean_data (a folder) or clean_run (a stored run id), not both.")
        get_corruption_baseline(baseline)
        common = {"data": str(root), "corruptions": chosen, "severities": sev, **limit_config(limit, limit_order),
                  "top_k": check_positive("top_k", top_k), "save_logits": bool(save_logits), "baseline": baseline,
                  "clean_run": clean_run, "baseline_run": baseline_run}
        if cifar:
            return self._configure_cifar(root, common, clean_data=clean_data, shard_size=shard_size)
        return self._configure_folders(root, common, clean_data=clean_data, class_map=class_map,
                                       classes_per_unit=classes_per_unit, allow_incomplete=allow_incomplete)

    @staticmethod
    def _configure_cifar(root: Path, common: dict[str, Any], *, clean_data, shard_size) -> ImageNetCConfig:
        """CIFAR-10-C arrays: ``common`` with the shard size, the CIFAR-10 test set as the clean data,
        and what the arrays hold when they are a subset of the release."""
        corruption, severity = common["corruptions"][0], common["severities"][0]
        first = read_cifar_c(root, corruption, severity)
        limits = {}
        if common["limit"]:
            limits = limit_config(common["limit"], common["limit_order"], read_cifar_c(
                root, corruption, severity, limit=common["limit"], limit_order=common["limit_order"]))
        return ImageNetCConfig(**{**common, **limits}, layout="cifar", clean_data=cifar_clean_data(clean_data),
                               shard_size=check_positive("shard_size", shard_size), num_classes=10,
                               subset=subset_record(len(np.unique(first.labels)), len(first), "cifar-10-c"))

    @staticmethod
    def _configure_folders(root: Path, common: dict[str, Any], *, clean_data, class_map, classes_per_unit,
                           allow_incomplete) -> ImageNetCConfig:
        """Released folders: ``common`` with the class map, checked to hold the same classes and files
        in every setting (or evaluated incomplete, recorded), and the clean data's classes checked."""
        settings = corruption_settings(common["corruptions"], common["severities"])
        checked = check_released_settings({str(s): imagenet_c_folder(root, s.shift, s.level) for s in settings},
                                          class_map_config(class_map), allow_incomplete=bool(allow_incomplete),
                                          release="imagenet-c", what=f"the ImageNet-C tree {root}")
        _, names = resolve_class_map(list(checked.report.classes), checked.class_map)
        limits = {}
        if common["limit"]:
            first = imagenet_c_folder(root, settings[0].shift, settings[0].level)
            limits = limit_config(common["limit"], common["limit_order"], read_image_folder(
                first, checked.class_map, limit=common["limit"], limit_order=common["limit_order"]))
        clean = str(Path(clean_data).expanduser().resolve()) if clean_data is not None else None
        if clean is not None:
            _, clean_names = resolve_class_map(class_folders(clean), checked.class_map)
            if len(clean_names) != len(names):
                raise InputError(f"clean data {clean} has {len(clean_names)} classes but the ImageNet-C folders have "
                                 f"{len(names)}; give a class map covering both.")
        return ImageNetCConfig(**{**common, **limits}, layout="folders", clean_data=clean, class_map=checked.class_map,
                               classes_per_unit=check_positive("classes_per_unit", classes_per_unit),
                               num_classes=len(names), incomplete=checked.incomplete, subset=checked.subset)

    @staticmethod
    def _configure_on_the_fly(root: Path, *, corruptions, severities, class_map, limit, limit_order, classes_per_unit,
                              baseline, baseline_run, top_k, save_logits, backend, seed, clean,
                              keep_input_size) -> ImageNetCConfig:
        if (root / "labels.npy").is_file():
            raise InputError(f"{root} holds CIFAR arrays; --on-the-fly reads a clean ImageNet-style folder "
                             "(<root>/<wnid>/<image>). For CIFAR-10-C, evaluate the released arrays.")
        chosen = select_corruptions(corruptions)  # known names only
        get_corruption_baseline(baseline)
        limits = limit_config(limit, limit_order)
        fields = {"corruption_backend": check_corruption_backend(backend), "seed": check_seed(seed),
                  "clean": bool(clean), "corruptions": chosen,
                  "severities": list(parse_severities(severities if severities is not None else "1-5"))}
        mapping = class_map_config(class_map)
        _, names = resolve_class_map(class_folders(root), mapping)
        if limits["limit"]:
            limits = limit_config(limits["limit"], limits["limit_order"], read_image_folder(
                root, mapping, limit=limits["limit"], limit_order=limits["limit_order"]))
        return ImageNetCConfig(data=str(root), layout="on-the-fly", profile="imagenet-c", **fields, **limits,
                               top_k=check_positive("top_k", top_k), save_logits=bool(save_logits), baseline=baseline,
                               clean_data=None, clean_run=None, baseline_run=baseline_run, class_map=mapping,
                               classes_per_unit=check_positive("classes_per_unit", classes_per_unit),
                               num_classes=len(names), keep_input_size=keep_input_size)

    def related_runs(self, config: ImageNetCConfig) -> dict[str, str]:
        return related_corruption_runs(config.clean_run, config.baseline_run)

    def plan(self, config: ImageNetCConfig) -> list[Unit]:
        root = Path(config.data)
        if config.layout == "cifar":
            return cifar_units(config, config.settings(), root)
        per_unit = classes_per_unit(config.limit, config.classes_per_unit)
        if config.on_the_fly:
            return on_the_fly_units(str(root), ([CLEAN_SETTING] if config.clean else []) + config.settings(), per_unit)
        units: list[Unit] = []
        reference: list[str] | None = None
        for setting in config.settings():
            folder = imagenet_c_folder(root, setting.shift, setting.level)
            classes = class_folders(folder)
            if reference is None:
                reference, ref_setting = classes, setting
            elif classes != reference and not config.incomplete:
                missing = sorted(set(reference) - set(classes))
                extra = sorted(set(classes) - set(reference))
                detail = (f"class folder {folder / missing[0]} is missing ({len(missing)} missing)" if missing
                          else f"{folder / extra[0]} is not in {ref_setting}")
                raise DataError(f"ImageNet-C settings disagree: {detail}. The download is incomplete; "
                                "re-extract it or leave the setting out.")
            units += [Unit.of(setting, k, {"folder": str(folder), "classes": block})
                      for k, block in enumerate(class_blocks(classes, per_unit))]
        if config.clean_data:
            units += [Unit.of(CLEAN_SETTING, k, {"folder": config.clean_data, "classes": block})
                      for k, block in enumerate(class_blocks(class_folders(config.clean_data), per_unit))]
        return units

    def samples(self, config: ImageNetCConfig, unit: Unit):
        return corruption_unit_samples(config, unit, self._listings)

    def shared_reads(self, config: ImageNetCConfig, unit: Unit) -> str | None:
        return on_the_fly_shared_reads(config, unit)

    def reads_files(self, config: ImageNetCConfig) -> bool:
        return config.layout == "folders"

    def load(self, samples, i: int, prepare) -> Sample:
        if isinstance(samples, DeviceCorruptedSamples):  # corrupted in predict, then the model's own geometry
            return Sample(sample_id(samples, i), int(samples.labels[i]), samples.read(i),
                          PendingCorruption(samples.corruption, samples.severity))
        return super().load(samples, i, prepare)

    def predict(self, model, batch, config: ImageNetCConfig) -> dict[str, np.ndarray]:
        if "corruption" not in batch.context:
            return super().predict(model, batch, config)
        from ..corruptions import corrupt_batch
        from ..engine.records import to_float

        names = sorted(set(batch.context["corruption"].tolist()))
        if len(names) != 1:
            raise InputError(f"batch of unit {batch.unit} mixes corruptions {names}; a batch holds one unit.")
        device = model_device(model)
        corrupted = corrupt_batch(batch.stacked_pixels(device), names[0], batch.context["severity"].tolist(),
                                  seed=config.seed, ids=batch.ids.tolist(), profile=config.profile)
        return self.classify(model, to_float(corrupted, device), config)

    def metrics(self, config: ImageNetCConfig, predictions, related=None) -> list[MetricRow]:
        clean = None
        if related and "clean_run" in related:
            clean = {u: cols for u, cols in related["clean_run"].items() if setting_of(u) == CLEAN}
            if not clean:
                raise DataError(f"stored run {config.clean_run} has no clean units; evaluate clean data with "
                                "--benchmark corrupted (severity 0 is clean) or give --clean-data.")
        return corruption_metrics(predictions, {u: setting_of(u) for u in predictions}, corruptions=config.corruptions,
                                  baseline_name=config.baseline, cifar=config.layout == "cifar",
                                  clean_predictions=clean,
                                  baseline=run_baseline(config.baseline_run, config.corruptions, related, predictions))


# --- corrupted -------------------------------------------------------------------------------------


@register_benchmark
class Corrupted(Benchmark):
    """Any labelled image folder (``<root>/<class>/<image>``), corrupted on the fly.

    Each image is corrupted at its native resolution (before the model's resize and crop) with
    seed :func:`~robustlab.corruptions.items.item_seed` ``(seed, sample_id, corruption, severity)``;
    the clean images (severity 0) are evaluated once as setting ``clean``. CE is normalised by a
    built-in ``baseline`` (alexnet) or by ``baseline_run`` (a stored run of another model on the
    same data and corruptions; ``self``: this run is the baseline, CE = 100). Its options are
    :attr:`options`.
    """

    name = "corrupted"
    config_class = CorruptedConfig
    presentation = "corrupted"
    options = (
        CORRUPTIONS, SEVERITIES, seed_option(0), PROFILE, CLASS_MAP, LIMIT, LIMIT_ORDER, shard_size_option(5000),
        Option("clean", "bool", True, help="Also evaluate the clean images (setting clean)."),
        baseline_option("alexnet"), BASELINE_RUN, TOP_K, SAVE_LOGITS,
    )

    def __init__(self) -> None:
        self._listing: dict[str, Any] = {}

    def example(self, config: CorruptedConfig, setting: Setting) -> np.ndarray | None:
        """The folder's first image, clean or corrupted with the run's seed and profile as the run saw it."""
        if not config.data:
            return None
        base = read_image_folder(config.data, config.class_map, limit=config.limit,
                                 limit_order=config.order).subset(0, 1)
        if len(base) == 0:
            return None
        if setting == CLEAN_SETTING:
            return base.read(0)
        return corrupt_on_the_fly(base, setting.shift, setting.level, seed=config.seed, profile=config.profile).read(0)

    def configure(self, data: str, *, corruptions, severities, seed, profile, class_map, limit, limit_order,
                  shard_size, clean, baseline, baseline_run, top_k, save_logits) -> CorruptedConfig:
        from ..corruptions.registry import check_profile

        root = Path(data).expanduser().resolve()
        chosen = select_corruptions(corruptions if corruptions is not None else "benchmark")  # known names only
        check_seed(seed)
        get_corruption_baseline(baseline)
        limits = limit_config(limit, limit_order)
        fields = {"corruptions": chosen, "severities": list(parse_severities(severities if severities is not None
                                                                             else "1-5")),
                  "seed": int(seed), "profile": check_profile(profile), "class_map": class_map_config(class_map),
                  "shard_size": check_positive("shard_size", shard_size), "clean": bool(clean), "baseline": baseline,
                  "baseline_run": baseline_run, "top_k": check_positive("top_k", top_k),
                  "save_logits": bool(save_logits)}
        listing = self._base_of(str(root), fields["class_map"], limits["limit"], limits.get("limit_order"))
        if limits["limit"]:
            limits = limit_config(limit, limit_order, listing)
        return CorruptedConfig(data=str(root), **fields, **limits, num_classes=len(listing.classes))

    def _base_of(self, data: str, class_map: Any, limit: int | None, limit_order: str | None):
        order = str(limit_order or "path")
        key = json.dumps([data, class_map, limit, order], sort_keys=True)
        if key not in self._listing:
            self._listing[key] = read_image_folder(data, class_map, limit=limit, limit_order=order)
        return self._listing[key]

    def _base(self, config: CorruptedConfig):
        return self._base_of(config.data, config.class_map, config.limit, config.limit_order)

    def plan(self, config: CorruptedConfig) -> list[Unit]:
        n = len(self._base(config))
        settings = ([CLEAN_SETTING] if config.clean else []) + config.settings()
        size = config.shard_size
        return [Unit.of(setting, k, {"start": start, "stop": min(n, start + size)})
                for setting in settings for k, start in enumerate(range(0, n, size))]

    def samples(self, config: CorruptedConfig, unit: Unit):
        base = self._base(config).subset(unit.params["start"], unit.params["stop"])
        if unit.setting == CLEAN_SETTING:  # skip what the corrupted settings must skip: the same images everywhere
            return SizeCheckedSamples(base, MIN_SIZE)
        return corrupt_on_the_fly(base, unit.setting.shift, unit.setting.level, seed=config.seed, profile=config.profile)

    def related_runs(self, config: CorruptedConfig) -> dict[str, str]:
        return related_corruption_runs(None, config.baseline_run)

    def metrics(self, config: CorruptedConfig, predictions, related=None) -> list[MetricRow]:
        return corruption_metrics(predictions, {u: setting_of(u) for u in predictions}, corruptions=config.corruptions,
                                  baseline_name=config.baseline,
                                  baseline=run_baseline(config.baseline_run, config.corruptions, related, predictions))
