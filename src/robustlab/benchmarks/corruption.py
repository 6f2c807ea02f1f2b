"""Benchmarks ``imagenet-c`` (the released ImageNet-C / CIFAR-10-C layouts) and ``corrupted``
(any labelled image folder, corrupted on the fly), with CE, mCE and relative mCE.

Settings are ``"<corruption>/<severity>"`` and ``"clean"``; units are a setting and a shard
of its samples (``"fog/3/shard-0002"``, ``"clean/shard-0000"``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..corruptions import resolve_corruptions
from ..corruptions.checks import parse_severities
from ..corruptions.api import MIN_SIZE
from ..corruptions.registry import corruption_baseline
from ..corruptions.released import imagenet_c_folder, imagenet_c_settings, read_cifar_c
from ..corruptions.views import corrupt_on_the_fly
from ..data.cifar import find_test_batch, read_cifar_test
from ..data.images import is_image_file, read_image
from ..data.classification import (
    PreparedSamples,
    SampleView,
    SizeCheckedSamples,
    class_folders,
    read_image_folder,
    resolve_class_map,
)
from ..errors import DataError, InputError
from ..metrics.corruption import (
    BENCHMARK_CORRUPTIONS,
    N_SEVERITIES,
    CorruptionBaseline,
    corruption_error_terms,
    flat_error,
    get_corruption_baseline,
    relative_ce_terms,
)
from ..metrics.ratios import mean_of_defined
from ..engine.benchmark import Benchmark, HeadlineMetric, MetricRow, Unit, model_device, register_benchmark
from ..engine.records import Sample, sample_id
from ..data.limits import config_limit_order
from ..data.releases.consistency import check_released_settings, layout_notes, layout_summary, record_array_subset
from ..engine.options import (ALLOW_INCOMPLETE, BASELINE_RUN, CLASS_MAP, CLASSES_PER_UNIT, CLEAN_DATA, CLEAN_RUN,
                              CORRUPTIONS, LIMIT, LIMIT_ORDER, PROFILE, SAVE_LOGITS, SEVERITIES, TOP_K, baseline_option,
                              check_positive, check_seed, class_map_config, limit_config, seed_option,
                              shard_size_option)
from ..engine.schema import Option
from ..engine.classification import add_setting_counts, error_rows, setting_counts

CLEAN = "clean"

#: Where ``imagenet-c --on-the-fly`` corrupts: ``numpy`` in the loading workers (the faithful
#: kernels), ``torch`` after batching on the model's device.
CORRUPTION_BACKENDS = ("numpy", "torch")

#: The geometry that made the released ImageNet-C (make_imagenet_c.py: Resize(256),
#: CenterCrop(224) on PIL images, bilinear), applied before the corruption.
IMAGENET_C_SIZE = (256, 224)


def imagenet_c_geometry(keep_input_size: bool = False):
    """A picklable uint8 HxWx3 -> 224x224 function: ImageNet-C's resize and centre crop, applied to
    every image as make_imagenet_c.py does (``keep_input_size``: a 224x224 image passes through;
    see :class:`robustlab.corruptions.dataset.ReferenceGeometry`)."""
    from ..corruptions.dataset import ReferenceGeometry

    return ReferenceGeometry(*IMAGENET_C_SIZE, keep_input_size=keep_input_size)


#: ``keep_input_size`` of the benchmarks that make ImageNet-C(-bar) in memory (see
#: :class:`robustlab.corruptions.dataset.ReferenceGeometry`).
KEEP_INPUT_SIZE = Option("keep_input_size", "bool", False, help="With --on-the-fly: corrupt a clean image that is "
                         "already 224x224 as it is, instead of the reference's resize 256 + centre crop 224 of every "
                         "image (recorded in the run).")


def check_keep_input_size(keep_input_size: Any, on_the_fly: Any) -> None:
    """``keep_input_size`` only with ``on_the_fly`` (released files are already 224x224 crops)."""
    if keep_input_size and not on_the_fly:
        raise InputError("keep_input_size applies to --on-the-fly evaluation from clean images; the released files "
                         "are already 224x224 (add --on-the-fly, or leave it out).")


def keep_input_size_config(keep_input_size: Any) -> dict[str, Any]:
    """The config entry of ``keep_input_size``: only when set (runs that follow the reference keep
    the config, and so the run id, they always had)."""
    return {"keep_input_size": True} if keep_input_size else {}


def check_corruption_backend(backend: str) -> str:
    from ..errors import unknown_name

    if backend not in CORRUPTION_BACKENDS:
        raise unknown_name("corruption backend", backend, CORRUPTION_BACKENDS)
    return backend


@dataclass(frozen=True)
class PendingCorruption:
    """A sample's corruption still to apply on the model's device (the ``torch`` backend)."""

    corruption: str
    severity: int


@dataclass(frozen=True, eq=False)
class DeviceCorruptedSamples(SampleView):
    """Clean images to be corrupted after batching, on the model's device: reading returns the
    clean image, and each loaded sample carries its :class:`PendingCorruption` as context."""

    corruption: str = ""
    severity: int = 0
    per_image: ClassVar[bool] = True


#: Corruptions the ``torch`` backend makes on the CPU (the exact libjpeg round trip): they are
#: made in the loading workers, in parallel and overlapped with the device, by the numpy kernel,
#: whose pixels are the torch backend's (tested).
CPU_CORRUPTIONS = ("jpeg_compression",)


def select_corruptions(spec: str | Iterable[str] | None, available: Iterable[str] | None = None) -> list[str]:
    """Corruption names from names/subsets (``"benchmark"``, ``"noise,fog"``, a list).

    ``None`` selects the 15 benchmark corruptions (only those in ``available`` when given).
    Subset and group names are those of :func:`robustlab.corruptions.resolve_corruptions`.
    """
    if spec is None:
        chosen = [c for c in BENCHMARK_CORRUPTIONS if available is None or c in set(available)]
        if not chosen:
            raise DataError("none of the 15 benchmark corruptions was found; give --corruptions.")
        return chosen
    return resolve_corruptions(spec)


def class_blocks(classes: list[str], per_unit: int | None) -> list[list[str]]:
    """``classes`` in blocks of ``per_unit`` (one unit each), or one block when ``per_unit`` is falsy."""
    if not per_unit:
        return [classes]
    return [classes[i:i + per_unit] for i in range(0, len(classes), per_unit)]


def folder_units(folders: Iterable[tuple[str, Any]], config: Mapping[str, Any]) -> Iterator[Unit]:
    """The units of released image folders: for each ``(setting, folder)`` one unit per block of
    ``classes_per_unit`` class folders (one block with ``limit``), then those of ``clean_data`` (when
    the config has it) as setting ``clean``. A generator: folders are listed as units are reached."""
    per_unit = None if config["limit"] else config["classes_per_unit"]
    clean = [(CLEAN, config["clean_data"])] if config.get("clean_data") else []
    for setting, folder in itertools.chain(folders, clean):
        for k, block in enumerate(class_blocks(class_folders(folder), per_unit)):
            yield Unit(f"{setting}/shard-{k:04d}", setting, {"folder": str(folder), "classes": block})


def on_the_fly_units(root: str, settings: list[str], per_unit: int | None) -> list[Unit]:
    """The units of an on-the-fly run over the clean folder ``root``: every setting of a block of
    classes, block after block, so that the units made from one block's images come together
    (the local executor then decodes each image once for all of them, :meth:`shared_reads`).
    Keys are ``<setting>/shard-<block>`` as before; only the order is by block."""
    blocks = class_blocks(class_folders(root), per_unit)
    return [Unit(f"{setting}/shard-{k:04d}", setting, {"folder": str(root), "classes": block})
            for k, block in enumerate(blocks) for setting in settings]


def on_the_fly_shared_reads(config: Mapping[str, Any], unit: Unit) -> str | None:
    """The block of clean images an on-the-fly unit is made from (its shard), None for other layouts."""
    return unit.key.rsplit("/", 1)[1] if config.get("layout") == "on-the-fly" else None


def corruption_unit_samples(config: Mapping[str, Any], unit: Unit, listings: dict | None = None):
    """The samples of one unit of a corruption benchmark (ImageNet-C, ImageNet-C-bar): a CIFAR-C
    array slice, a class block of a released folder, or a block of clean images corrupted on the
    fly (by the ``corruption_backend`` of ``config``, numpy when it has none; the torch backend's
    :data:`CPU_CORRUPTIONS` by the numpy kernel in the loading workers, the same pixels).
    ``listings`` (a run's dict) keeps each folder block's listing, which every setting reads."""
    if config["layout"] == "cifar":
        if unit.setting == CLEAN:  # the CIFAR-10 test set given as --clean-data
            samples = read_cifar_test(config["clean_data"], limit=config["limit"],
                                      limit_order=config_limit_order(config))
        else:
            c, s = unit.setting.split("/")
            samples = read_cifar_c(config["data"], c, int(s), limit=config["limit"],
                                   limit_order=config_limit_order(config))
        return samples.subset(unit.params["start"], unit.params["stop"])
    limit_order = config_limit_order(config)
    key = json.dumps([unit.params["folder"], config["class_map"], unit.params["classes"], config["limit"], limit_order])
    images = None if listings is None else listings.get(key)
    if images is None:
        images = read_image_folder(unit.params["folder"], config["class_map"], classes=unit.params["classes"],
                                   limit=config["limit"], limit_order=limit_order)
        if listings is not None and config["layout"] == "on-the-fly":
            listings.clear()  # one block at a time: the units of a block come together
            listings[key] = images
    if config["layout"] != "on-the-fly":
        return images
    images = PreparedSamples(images, imagenet_c_geometry(bool(config.get("keep_input_size"))))
    if unit.setting == CLEAN:
        return images
    c, s = unit.setting.split("/")
    if config.get("corruption_backend", "numpy") == "torch" and c not in CPU_CORRUPTIONS:
        return DeviceCorruptedSamples(images, c, int(s))
    return corrupt_on_the_fly(images, c, int(s), seed=config["seed"], profile=config["profile"])


def cifar_clean_data(clean_data: str | None) -> str | None:
    """``--clean-data`` next to CIFAR-C arrays: the CIFAR-10 test set's ``test_batch`` (its path),
    checked; None when not given."""
    if clean_data is None:
        return None
    try:
        return str(find_test_batch(clean_data))
    except DataError as exc:
        raise DataError(f"--clean-data next to CIFAR-10-C(-bar) arrays is the clean CIFAR-10 test set: {exc}") from None


def cifar_units(config: Mapping[str, Any], settings: Iterable[str], root: Path) -> list[Unit]:
    """The units of a CIFAR-C array layout: shards of ``shard_size`` rows of each setting's
    severity block, then of the clean test set when ``clean_data`` is given."""
    sizes = {}
    for setting in settings:
        c, s = setting.split("/")
        sizes[setting] = len(read_cifar_c(root, c, int(s), limit=config["limit"],
                                          limit_order=config_limit_order(config)))
    if config.get("clean_data"):
        sizes[CLEAN] = len(read_cifar_test(config["clean_data"], limit=config["limit"],
                                           limit_order=config_limit_order(config)))
    return [Unit(f"{setting}/shard-{k:04d}", setting, {"start": start, "stop": min(n, start + config["shard_size"])})
            for setting, n in sizes.items() for k, start in enumerate(range(0, n, config["shard_size"]))]


def baseline_from_run(config: Mapping[str, Any], predictions: Mapping[str, Mapping[str, np.ndarray]]) -> CorruptionBaseline:
    """The mean error per corruption (and clean error) of another stored run, as a CE baseline.

    This is how a model other than AlexNet normalises CE and relative CE (the demo's shipped
    baseline model, or any reference network evaluated on the same data and corruptions).

    The baseline carries its sample counts, so ratios whose denominator is within its sampling
    error come out undefined (:func:`robustlab.metrics.relative_ce_terms`).
    """
    setting_of = {u: u.rsplit("/", 1)[0] for u in predictions}
    counts = setting_counts(predictions, setting_of)
    error = {s: e1 / n for s, (n, e1, _) in counts.items() if n}
    errors, samples = {}, {}
    for c in config["corruptions"]:
        errs = [error.get(f"{c}/{s}") for s in range(1, N_SEVERITIES + 1)]
        if all(e is not None for e in errs):
            errors[c] = float(np.mean(errs))
            samples[c] = min(counts[f"{c}/{s}"][0] for s in range(1, N_SEVERITIES + 1))
    if not errors:
        raise DataError(f"baseline run {config['baseline_run']} has none of the corruptions "
                        f"{', '.join(config['corruptions'])} at all 5 severities; evaluate the baseline model on "
                        "the same corruptions first.")
    return CorruptionBaseline(f"run:{config['baseline_run']}", errors, error.get(CLEAN),
                              source=f"stored run {config['baseline_run']}", samples=samples,
                              clean_samples=counts[CLEAN][0] if CLEAN in error else None)


#: How ratios are labelled when a benchmark on a user's own data (``corrupted``, ``perturbed``)
#: divides by a built-in published baseline: AlexNet's ImageNet-C / ImageNet-P numbers.
NOT_COMPARABLE_LABEL = "vs published AlexNet (ImageNet), not comparable"
#: What the ratios of the ImageNet-C and ImageNet-P families divide by without a baseline run.
PUBLISHED_ALEXNET = "published AlexNet"


def own_data_label(config: Mapping[str, Any]) -> str | None:
    """:data:`NOT_COMPARABLE_LABEL` for a run on the user's own data (``corrupted``, ``perturbed``:
    their :meth:`~robustlab.engine.Benchmark.comparability`) whose CE / FR / T5D ratios divide by
    the published AlexNet (ImageNet) numbers, else None.

    That is a run without ``baseline_run`` (and, for sequences, in the ImageNet setting):
    AlexNet never saw that data, so the ratio is not the paper's mCE / mFR and compares with
    nothing published. A baseline model evaluated on the same data (``--baseline-run``) makes
    the ratios comparable across models.
    """
    if config.get("baseline_run"):
        return None
    if config.get("setting", "imagenet") != "imagenet":
        return None  # the cifar setting reports no ratios
    return NOT_COMPARABLE_LABEL


#: The ImageNet-C family's presentation (``imagenet-c``, ``corrupted``).
CORRUPTION_FAMILY = "corruption"
CORRUPTION_TITLE = "Common corruptions (ImageNet-C)"
CORRUPTION_HEADLINE = (
    HeadlineMetric("clean_error", "clean error", compare=True),
    HeadlineMetric("mce", "mCE", "mce_subset", compare=True),
    HeadlineMetric("relative_mce", "rel. mCE", "relative_mce_subset"),
)


def own_data_note(kind: str, data: str) -> str:
    """The note explaining :data:`NOT_COMPARABLE_LABEL` for ``kind`` (e.g. "CE, mCE and relative mCE")."""
    return (f"{kind} are {NOT_COMPARABLE_LABEL}: the errors on {data} are divided by AlexNet's published "
            "ImageNet numbers, which measure other images. Evaluate a baseline model on the same data and give "
            "--baseline-run <its run id> (or -O baseline_run=self) for ratios that compare models.")


#: ``baseline_run=SELF``: the run is its own baseline (CE = 100 by construction), the role AlexNet
#: plays in the paper for a reference model you ship yourself.
SELF = "self"


def ce_baseline_text(own: str | None, config: Mapping[str, Any]) -> str:
    """What a corruption run's CE divides by, for ``summary["ce_baseline"]`` (JSON, ``show``)."""
    run = config.get("baseline_run")
    if run == SELF:
        return "this run itself (CE = 100 by construction)"
    if run:
        return f"stored run {run} on the same data"
    if config.get("layout") == "cifar":
        return "none: CE is not reported for CIFAR-10-C"
    return own or f"published {config.get('baseline', 'alexnet')} errors on ImageNet-C"


def related_corruption_runs(config: Mapping[str, Any]) -> dict[str, str]:
    """``clean_run`` and ``baseline_run`` (unless ``self``) of a corruption benchmark's config."""
    return {alias: config[alias] for alias in ("clean_run", "baseline_run")
            if config.get(alias) and config[alias] != SELF}


def run_baseline(config: Mapping[str, Any], related, predictions=None) -> CorruptionBaseline | None:
    """The baseline given by ``baseline_run``: another stored run, or this run (``self``)."""
    if config.get("baseline_run") == SELF and predictions is not None:
        return baseline_from_run(config, predictions)
    return baseline_from_run(config, related["baseline_run"]) if related and "baseline_run" in related else None


# --- metrics shared by both benchmarks -------------------------------------------------------------


def corruption_metrics(config: Mapping[str, Any], predictions: Mapping[str, Mapping[str, np.ndarray]],
                       setting_of: Mapping[str, str], clean_predictions: Mapping[str, Mapping[str, np.ndarray]] | None = None,
                       baseline: CorruptionBaseline | None = None) -> list[MetricRow]:
    """Errors per setting, CE / relative CE per corruption, mCE, relative mCE, clean error.

    CE needs a corruption's 5 severities; mCE the 15 benchmark corruptions (otherwise
    ``mce_subset`` over the complete benchmark corruptions evaluated is reported). All values
    are fractions/ratios (mCE 0.767 is the paper's 76.7).
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
    for c in config["corruptions"]:
        errs = [error.get(f"{c}/{s}") for s in range(1, N_SEVERITIES + 1)]
        if all(e is not None for e in errs):
            per_corruption[c] = np.asarray(errs, dtype=float)
            rows.append(("mean_error", c, float(np.mean(errs))))
    if config.get("layout") == "cifar" or not per_corruption:
        return rows
    baseline = baseline or corruption_baseline(config.get("baseline", "alexnet"))
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


def on_the_fly_note(config: Mapping[str, Any]) -> str:
    """What an ``imagenet-c --on-the-fly`` run measured and how it differs from the released files."""
    where = ("after batching, on the model's device (torch backend; within the parity bounds of the numpy "
             "kernels, see docs/torch-backend.md)" if config["corruption_backend"] == "torch"
             else "in the loading workers (numpy backend, the faithful kernels)")
    geometry = ("resize 256 and centre crop 224 (images already 224x224 kept as they are: --keep-input-size, "
                "not the reference)" if config.get("keep_input_size") else "resize 256, centre crop 224")
    return (f"ImageNet-C made on the fly from the clean images in {config['data']}: {geometry}, "
            f"then each corruption {where}, seed {config['seed']}. Unlike the released files, the images are not "
            "JPEG-compressed (quality 85) and each image's noise comes from its own seed: errors are close to those on "
            "the released files, not bit-identical.")


def _points(before: float, after: float) -> str:
    """``"37.3 -> 36.1 %"``: an error before and after, in percent."""
    return f"{100 * before:.1f} → {100 * after:.1f} %"


def relative_ce_reasons(metrics: Iterable[MetricRow]) -> dict[str, str]:
    """``{corruption: why its relative CE is n/a}`` from a run's stored rows (corruptions with a
    stored baseline change and no relative CE). The reason names the baseline's error before
    and after, and its sampling margin."""
    table = {(m, s): v for m, s, v in metrics}
    base_clean = table.get(("relative_ce_baseline_clean_error", ""))
    out = {}
    for (m, c), change in table.items():
        if m != "relative_ce_baseline_change" or ("relative_ce", c) in table or base_clean is None:
            continue
        if ("relative_ce_model_flat", c) in table:
            errors = [table.get(("error", f"{c}/{s}")) for s in range(1, N_SEVERITIES + 1)]
            why = flat_error(errors, table[("clean_error", "")], int(table[("relative_ce_model_flat", c)])) \
                if None not in errors and ("clean_error", "") in table else None
            out[c] = why or "this model's error does not move with severity"
            continue
        margin = table.get(("relative_ce_baseline_margin", c), 0.0)
        moved = _points(base_clean, base_clean + change)
        if change < 0:
            out[c] = f"the baseline's error falls under it ({moved}), so there is no rise to divide by"
        elif change == 0:
            out[c] = f"the baseline's error does not change under it ({moved})"
        else:
            out[c] = (f"the baseline's error rises only {100 * change:.1f} points ({moved}), within its sampling "
                      f"error (±{100 * margin:.1f} points, 95 %)")
    return dict(sorted(out.items(), key=lambda kv: _corruption_order(kv[0])))


def _corruption_order(name: str) -> tuple[int, str]:
    from ..metrics.corruption import ALL_CORRUPTIONS

    return (ALL_CORRUPTIONS.index(name) if name in ALL_CORRUPTIONS else len(ALL_CORRUPTIONS), name)


def ce_reasons(metrics: Iterable[MetricRow]) -> dict[str, str]:
    """``{corruption: why its CE is n/a}``: the baseline's error there is within its sampling error."""
    table = {(m, s): v for m, s, v in metrics}
    return {c: ("the baseline makes no errors there" if v <= 0 else
                f"the baseline's error there ({100 * v:.1f} %) is within its sampling error "
                f"(±{100 * table.get(('ce_baseline_margin', c), 0.0):.1f} points, 95 %)")
            for (m, c), v in sorted(table.items(), key=lambda kv: _corruption_order(kv[0][1]))
            if m == "ce_baseline_error"}


def relative_ce_direction_notes(metrics: Iterable[MetricRow]) -> list[str]:
    """For defined relative CE terms outside 0-1000 %: which model's error moved, and which way."""
    table = {(m, s): v for m, s, v in metrics}
    clean, base_clean = table.get(("clean_error", "")), table.get(("relative_ce_baseline_clean_error", ""))
    notes = []
    for (m, c), value in sorted(table.items()):
        if m != "relative_ce" or 0 <= value <= 10:
            continue
        mine, base = table.get(("mean_error", c)), table.get(("relative_ce_baseline_change", c))
        if mine is None or clean is None or base is None or base_clean is None:
            notes.append(f"relative CE of {c} is {100 * value:.1f} %, outside 0-1000 %.")
            continue
        theirs = _points(base_clean, base_clean + base)
        if value < 0:
            notes.append(f"relative CE of {c} is {100 * value:.1f} %: this model's error falls under it "
                         f"({_points(clean, mine)}) while the baseline's rises ({theirs}); below 0 means the "
                         "corruption helps this model.")
        else:
            notes.append(f"relative CE of {c} is {100 * value:.0f} %: this model's error rises "
                         f"{100 * (mine - clean):.1f} points ({_points(clean, mine)}) while the baseline's rises only "
                         f"{100 * base:.1f} ({theirs}).")
    return notes


def corruption_notes(config: Mapping[str, Any], metrics: Iterable[MetricRow], *, clean_hint: str) -> list[str]:
    metrics = list(metrics)
    names = {(m, s) for m, s, _ in metrics}
    table = {(m, s): v for m, s, v in metrics}
    notes = []
    if config.get("layout") == "cifar":
        return ["CE and mCE use ImageNet's AlexNet baseline and are not reported for CIFAR-10-C; "
                "compare the per-severity errors and their mean instead."]
    have = [c for c in BENCHMARK_CORRUPTIONS if ("ce", c) in names or ("ce_baseline_error", c) in names]
    if ("mce", "") not in names and ("mce_terms", "") not in names:
        missing = [c for c in BENCHMARK_CORRUPTIONS if c not in have]
        if missing:
            notes.append(f"mCE needs the 15 benchmark corruptions at severities 1-5; {len(have)} complete, missing "
                         f"{', '.join(missing)}. mce_subset is the mean CE over the complete ones.")
    ce_na = ce_reasons(metrics)
    if ce_na:
        notes.append("CE n/a for " + "; ".join(f"{c}: {why}" for c, why in ce_na.items())
                     + ". mCE averages the defined terms only.")
    rel_na = relative_ce_reasons(metrics)
    if rel_na:
        key = "relative_mce" if ("relative_mce_terms", "") in names else "relative_mce_subset"
        used = table.get((f"{key}_terms", ""))
        evaluated = len([c for c in BENCHMARK_CORRUPTIONS if ("relative_ce_baseline_change", c) in names])
        notes.append("relative CE n/a for " + "; ".join(f"{c}: {why}" for c, why in rel_na.items()) + "."
                     + (f" Relative mCE averages the other {int(used)} of {evaluated} benchmark corruptions."
                        if used is not None and used > 0 else " No benchmark corruption has a defined relative CE."))
    notes += relative_ce_direction_notes(metrics)
    if ("clean_error", "") not in names:
        notes.append(f"relative mCE unavailable: no clean error for this run ({clean_hint}).")
    return notes


def corruption_summary_dict(config: Mapping[str, Any], metrics: Iterable[MetricRow]) -> dict[str, Any]:
    """The run's summary (``--json``, ``show``): per corruption the errors, CE and relative CE
    (None with ``ce_na`` / ``relative_ce_na`` saying why where undefined), and the means, with
    ``relative_mce_terms`` (and ``mce_terms`` when a CE is undefined): how many terms they average."""
    metrics = list(metrics)
    table: dict[tuple[str, str], float] = {(m, s): v for m, s, v in metrics}
    rel_na, ce_na = relative_ce_reasons(metrics), ce_reasons(metrics)
    corruptions = {}
    for c in config["corruptions"]:
        sev = {s: table.get(("error", f"{c}/{s}")) for s in config["severities"]}
        corruptions[c] = {"errors": {str(s): v for s, v in sev.items()}, "mean_error": table.get(("mean_error", c)),
                          "ce": table.get(("ce", c)), "relative_ce": table.get(("relative_ce", c))}
        if c in ce_na:
            corruptions[c]["ce_na"] = ce_na[c]
        if c in rel_na:
            corruptions[c]["relative_ce_na"] = rel_na[c]
    out = {"clean_error": table.get(("clean_error", "")), "corruptions": corruptions}
    for key in ("mce", "relative_mce", "mean_corruption_accuracy"):
        out[key] = table.get((key, ""))
        if table.get((f"{key}_subset", "")) is not None:
            out[f"{key}_subset"] = table[(f"{key}_subset", "")]
    for key in ("mce", "relative_mce"):
        for form in (key, f"{key}_subset"):
            if (f"{form}_terms", "") in table:
                out[f"{form}_terms"] = int(table[(f"{form}_terms", "")])
                out[f"{form}_of"] = len([c for c in BENCHMARK_CORRUPTIONS if c in corruptions and (
                    ("relative_ce_baseline_change", c) in table if key == "relative_mce"
                    else (("ce", c) in table or ("ce_baseline_error", c) in table))])
    if rel_na and out.get("relative_mce") is None and out.get("relative_mce_subset") is None:
        out["relative_mce_na"] = "no benchmark corruption has a defined relative CE"
    return out


#: The legend of ``show``'s corruption table and the report's: what the columns divide by.
CE_LEGEND = ("CE = the model's mean error under a corruption / the baseline's; relCE = the model's rise in error "
             "over its clean error / the baseline's rise; both in %, 100 = the baseline; n/a = undefined (the "
             "baseline's number is within its sampling error; the notes say why); s1-s5 = top-1 error (%) per severity.")


def corruption_text(config: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
    """``robustlab show`` layout: per corruption CE, relative CE and the error per severity, then
    clean error, mCE, relative mCE and mean corruption accuracy (all in percent). Undefined
    ratios print ``n/a`` with the reason, never a number."""
    from ..engine.result_text import pct, text_table

    def ratio(row: Mapping[str, Any], key: str) -> str:
        return "n/a" if row.get(f"{key}_na") else pct(row.get(key))

    lines: list[str] = []
    corruptions = summary.get("corruptions") or {}
    if corruptions:
        sev = list(config.get("severities", []))
        rows = [[name, ratio(row, "ce"), ratio(row, "relative_ce")]
                + [pct(row["errors"].get(str(s))) for s in sev] + [pct(row.get("mean_error"))]
                for name, row in corruptions.items()]
        lines += ["errors and corruption errors (%)"]
        lines += text_table(["corruption", "CE", "relCE"] + [f"s{s}" for s in sev] + ["mean"], rows, first_width=18)
        lines += [f"legend: {CE_LEGEND}", ""]
    labels = {"clean_error": "clean error", "mce": "mCE", "mce_subset": "mCE (subset)",
              "relative_mce": "relative mCE", "relative_mce_subset": "relative mCE (subset)",
              "mean_corruption_accuracy": "mean corruption accuracy",
              "mean_corruption_accuracy_subset": "mean corruption accuracy (subset)"}
    for key, label in labels.items():
        if summary.get(key) is not None:
            terms = summary.get(f"{key}_terms")
            of = f"  ({terms} of {summary.get(f'{key}_of')} corruptions: the defined terms)" if (
                terms is not None and terms != summary.get(f"{key}_of")) else ""
            lines.append(f"{label:<34}{pct(summary[key]):>7}{of}")
    if summary.get("relative_mce_na"):
        lines.append(f"{'relative mCE':<34}{'n/a':>7}  ({summary['relative_mce_na']})")
    if summary.get("ce_baseline"):
        lines.append(f"{'CE normalised by':<34}{summary['ce_baseline'].removeprefix('vs ')}")
    return lines


def _settings(corruptions: list[str], severities: list[int]) -> list[str]:
    return [f"{c}/{s}" for c in corruptions for s in severities]


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
    family, family_title, headline = CORRUPTION_FAMILY, CORRUPTION_TITLE, CORRUPTION_HEADLINE
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

    def published_baseline(self, config: Mapping[str, Any]) -> str | None:
        return None if config.get("layout") == "cifar" else PUBLISHED_ALEXNET

    def example(self, config: Mapping[str, Any], setting: str) -> np.ndarray | None:
        """The first file of a stored ``<corruption>/<severity>`` folder (released folders only)."""
        if config.get("layout") != "folders" or setting == CLEAN or not config.get("data"):
            return None
        c, s = setting.split("/")
        folder = Path(config["data"], c, s)
        first = next((p for p in sorted(folder.rglob("*")) if p.is_file() and is_image_file(p)), None)
        return None if first is None else read_image(first)

    def evaluation_options(self, options: dict[str, Any], device: str | None) -> dict[str, Any]:
        if options.get("on_the_fly") and options.get("corruption_backend") is None:
            from ..corruptions.api import torch_backend_by_default

            return {**options, "corruption_backend": "torch" if torch_backend_by_default(device) else "numpy"}
        return options

    def configure(self, data: str, *, corruptions, severities, class_map, clean_data, clean_run, limit, limit_order,
                  classes_per_unit, shard_size, baseline, baseline_run, top_k, save_logits, on_the_fly,
                  corruption_backend, seed, clean, allow_incomplete, keep_input_size) -> dict[str, Any]:
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
                root, corruptions=corruptions, severities=severities, class_map=class_map,
                limits=limit_config(limit, limit_order), classes_per_unit=classes_per_unit, baseline=baseline,
                baseline_run=baseline_run, top_k=top_k,
                save_logits=save_logits, backend=corruption_backend or "numpy", seed=0 if seed is None else seed,
                clean=True if clean is None else clean) | keep_input_size_config(keep_input_size)
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
        config: dict[str, Any] = {
            "data": str(root), "layout": "cifar" if cifar else "folders", "corruptions": chosen, "severities": sev,
            **limit_config(limit, limit_order), "top_k": check_positive("top_k", top_k),
            "save_logits": bool(save_logits), "baseline": baseline,
            "clean_data": str(Path(clean_data).expanduser().resolve()) if clean_data is not None else None,
            "clean_run": clean_run, "baseline_run": baseline_run,
        }
        if cifar:
            config["shard_size"] = check_positive("shard_size", shard_size)
            config["num_classes"] = 10
            config["clean_data"] = cifar_clean_data(clean_data)
            first = read_cifar_c(root, chosen[0], sev[0])
            record_array_subset(config, len(first), len(np.unique(first.labels)), "cifar-10-c")
            if config["limit"]:
                config.update(limit_config(limit, limit_order, read_cifar_c(root, chosen[0], sev[0], limit=limit,
                                                                            limit_order=config["limit_order"])))
            return config
        config["class_map"] = class_map_config(class_map)
        config["classes_per_unit"] = check_positive("classes_per_unit", classes_per_unit)
        report = check_released_settings(config, {s: imagenet_c_folder(root, *s.split("/")) for s in _settings(chosen, sev)},
                                         allow_incomplete=bool(allow_incomplete), release="imagenet-c",
                                         what=f"the ImageNet-C tree {root}")
        _, names = resolve_class_map(list(report.classes), config["class_map"])
        config["num_classes"] = len(names)
        if config["limit"]:
            config.update(limit_config(limit, limit_order, read_image_folder(
                imagenet_c_folder(root, chosen[0], sev[0]), config["class_map"], limit=limit,
                limit_order=config["limit_order"])))
        if config["clean_data"] is not None:
            _, clean_names = resolve_class_map(class_folders(config["clean_data"]), config["class_map"])
            if len(clean_names) != len(names):
                raise InputError(f"clean data {config['clean_data']} has {len(clean_names)} classes but the "
                                 f"ImageNet-C folders have {len(names)}; give a class map covering both.")
        return config

    def _configure_on_the_fly(self, root: Path, *, corruptions, severities, class_map, limits, classes_per_unit,
                              baseline, baseline_run, top_k, save_logits, backend, seed, clean) -> dict[str, Any]:

        if (root / "labels.npy").is_file():
            raise InputError(f"{root} holds CIFAR arrays; --on-the-fly reads a clean ImageNet-style folder "
                             "(<root>/<wnid>/<image>). For CIFAR-10-C, evaluate the released arrays.")
        chosen = select_corruptions(corruptions)  # known names only
        get_corruption_baseline(baseline)
        config: dict[str, Any] = {
            "data": str(root), "layout": "on-the-fly", "corruption_backend": check_corruption_backend(backend),
            "seed": check_seed(seed), "profile": "imagenet-c", "clean": bool(clean), "corruptions": chosen,
            "severities": list(parse_severities(severities if severities is not None else "1-5")),
            **limits, "top_k": check_positive("top_k", top_k),
            "save_logits": bool(save_logits), "baseline": baseline, "clean_data": None, "clean_run": None,
            "baseline_run": baseline_run, "class_map": class_map_config(class_map),
            "classes_per_unit": check_positive("classes_per_unit", classes_per_unit),
        }
        _, names = resolve_class_map(class_folders(root), config["class_map"])
        config["num_classes"] = len(names)
        if config["limit"]:
            config.update(limit_config(config["limit"], config["limit_order"], read_image_folder(
                root, config["class_map"], limit=config["limit"], limit_order=config["limit_order"])))
        return config

    def related_runs(self, config: Mapping[str, Any]) -> dict[str, str]:
        return related_corruption_runs(config)

    def plan(self, config: Mapping[str, Any]) -> list[Unit]:
        units: list[Unit] = []
        root = Path(config["data"])
        if config["layout"] == "cifar":
            return cifar_units(config, _settings(config["corruptions"], config["severities"]), root)
        per_unit = None if config["limit"] else config["classes_per_unit"]
        if config["layout"] == "on-the-fly":
            settings = ([CLEAN] if config["clean"] else []) + _settings(config["corruptions"], config["severities"])
            return on_the_fly_units(str(root), settings, per_unit)
        reference: list[str] | None = None
        for setting in _settings(config["corruptions"], config["severities"]):
            c, s = setting.split("/")
            folder = imagenet_c_folder(root, c, int(s))
            classes = class_folders(folder)
            if reference is None:
                reference, ref_setting = classes, setting
            elif classes != reference and not config.get("incomplete"):
                missing = sorted(set(reference) - set(classes))
                extra = sorted(set(classes) - set(reference))
                detail = (f"class folder {folder / missing[0]} is missing ({len(missing)} missing)" if missing
                          else f"{folder / extra[0]} is not in {ref_setting}")
                raise DataError(f"ImageNet-C settings disagree: {detail}. The download is incomplete; "
                                "re-extract it or leave the setting out.")
            for k, block in enumerate(class_blocks(classes, per_unit)):
                units.append(Unit(f"{setting}/shard-{k:04d}", setting, {"folder": str(folder), "classes": block}))
        if config.get("clean_data"):
            for k, block in enumerate(class_blocks(class_folders(config["clean_data"]), per_unit)):
                units.append(Unit(f"{CLEAN}/shard-{k:04d}", CLEAN, {"folder": config["clean_data"], "classes": block}))
        return units

    def samples(self, config: Mapping[str, Any], unit: Unit):
        return corruption_unit_samples(config, unit, self._listings)

    def shared_reads(self, config: Mapping[str, Any], unit: Unit) -> str | None:
        return on_the_fly_shared_reads(config, unit)

    def reads_files(self, config: Mapping[str, Any]) -> bool:
        return config.get("layout") == "folders"

    def load(self, samples, i: int, prepare) -> Sample:
        if isinstance(samples, DeviceCorruptedSamples):  # corrupted in predict, then the model's own geometry
            return Sample(sample_id(samples, i), int(samples.labels[i]), samples.read(i),
                          PendingCorruption(samples.corruption, samples.severity))
        return super().load(samples, i, prepare)

    def predict(self, model, batch, config) -> dict[str, np.ndarray]:
        if "corruption" not in batch.context:
            return super().predict(model, batch, config)
        from ..corruptions import corrupt_batch
        from ..engine.records import to_float

        names = sorted(set(batch.context["corruption"].tolist()))
        if len(names) != 1:
            raise InputError(f"batch of unit {batch.unit} mixes corruptions {names}; a batch holds one unit.")
        device = model_device(model)
        corrupted = corrupt_batch(batch.stacked_pixels(device), names[0], batch.context["severity"].tolist(),
                                  seed=config["seed"], ids=batch.ids.tolist(), profile=config["profile"])
        return self.classify(model, to_float(corrupted, device), config)

    def metrics(self, config, predictions, related=None) -> list[MetricRow]:
        setting_of = {u: u.rsplit("/", 1)[0] for u in predictions}
        clean = None
        if related and "clean_run" in related:
            clean = {u: cols for u, cols in related["clean_run"].items() if u.startswith(f"{CLEAN}/")}
            if not clean:
                raise DataError(f"stored run {config['clean_run']} has no clean units; evaluate clean data with "
                                "--benchmark corrupted (severity 0 is clean) or give --clean-data.")
        return corruption_metrics(config, predictions, setting_of, clean, run_baseline(config, related, predictions))

    def notes(self, config, metrics) -> list[str]:
        clean_data = "<CIFAR-10 root>" if config.get("layout") == "cifar" else "<ImageNet val folder>"
        notes = corruption_notes(config, metrics, clean_hint="ImageNet-C has no clean split: give --clean-data "
                                 f"{clean_data} or --clean-run <run id>")
        if config.get("layout") == "on-the-fly":
            notes.insert(0, on_the_fly_note(config))
        return layout_notes(config) + notes

    def summary(self, config, metrics) -> dict[str, Any]:
        out = {**corruption_summary_dict(config, metrics), "ce_baseline": ce_baseline_text(self.comparability(config), config),
               **layout_summary(config)}
        if config.get("layout") == "on-the-fly":
            out["on_the_fly"] = {"corruption_backend": config["corruption_backend"], "seed": config["seed"],
                                 "profile": config["profile"]}
        return out

    def text(self, config, summary, metrics) -> list[str]:
        lines = corruption_text(config, summary)
        fly = summary.get("on_the_fly")
        if fly:
            lines.append(f"{'corrupted on the fly':<34}{fly['corruption_backend']} backend, seed {fly['seed']}")
        return lines


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
    family, family_title, headline = CORRUPTION_FAMILY, CORRUPTION_TITLE, CORRUPTION_HEADLINE
    options = (
        CORRUPTIONS, SEVERITIES, seed_option(0), PROFILE, CLASS_MAP, LIMIT, LIMIT_ORDER, shard_size_option(5000),
        Option("clean", "bool", True, help="Also evaluate the clean images (setting clean)."),
        baseline_option("alexnet"), BASELINE_RUN, TOP_K, SAVE_LOGITS,
    )

    def __init__(self) -> None:
        self._listing: dict[str, Any] = {}

    def comparability(self, config: Mapping[str, Any]) -> str | None:
        return own_data_label(config)

    def published_baseline(self, config: Mapping[str, Any]) -> str | None:
        return PUBLISHED_ALEXNET

    def example(self, config: Mapping[str, Any], setting: str) -> np.ndarray | None:
        """The folder's first image, clean or corrupted with the run's seed and profile as the run saw it."""
        if not config.get("data"):
            return None
        base = read_image_folder(config["data"], config.get("class_map", "auto"), limit=config.get("limit"),
                                 limit_order=config_limit_order(config)).subset(0, 1)
        if len(base) == 0:
            return None
        if setting == CLEAN:
            return base.read(0)
        c, s = setting.split("/")
        return corrupt_on_the_fly(base, c, int(s), seed=config.get("seed", 0),
                                  profile=config.get("profile", "imagecorruptions")).read(0)

    def configure(self, data: str, *, corruptions, severities, seed, profile, class_map, limit, limit_order,
                  shard_size, clean, baseline, baseline_run, top_k, save_logits) -> dict[str, Any]:
        from ..corruptions.registry import check_profile

        root = Path(data).expanduser().resolve()
        chosen = select_corruptions(corruptions if corruptions is not None else "benchmark")  # known names only
        check_seed(seed)
        get_corruption_baseline(baseline)
        config = {
            "data": str(root), "corruptions": chosen,
            "severities": list(parse_severities(severities if severities is not None else "1-5")),
            "seed": int(seed), "profile": check_profile(profile), "class_map": class_map_config(class_map),
            **limit_config(limit, limit_order), "shard_size": check_positive("shard_size", shard_size),
            "clean": bool(clean), "baseline": baseline, "baseline_run": baseline_run,
            "top_k": check_positive("top_k", top_k),
            "save_logits": bool(save_logits),
        }
        listing = self._base(config)
        config["num_classes"] = len(listing.classes)
        if config["limit"]:
            config.update(limit_config(limit, limit_order, listing))
        return config

    def _base(self, config: Mapping[str, Any]):
        order = config_limit_order(config)
        key = json.dumps([config["data"], config["class_map"], config["limit"], order], sort_keys=True)
        if key not in self._listing:
            self._listing[key] = read_image_folder(config["data"], config["class_map"], limit=config["limit"],
                                                   limit_order=order)
        return self._listing[key]

    def plan(self, config: Mapping[str, Any]) -> list[Unit]:
        n = len(self._base(config))
        settings = ([CLEAN] if config["clean"] else []) + _settings(config["corruptions"], config["severities"])
        return [Unit(f"{setting}/shard-{k:04d}", setting, {"start": start, "stop": min(n, start + config["shard_size"])})
                for setting in settings for k, start in enumerate(range(0, n, config["shard_size"]))]

    def samples(self, config: Mapping[str, Any], unit: Unit):
        base = self._base(config).subset(unit.params["start"], unit.params["stop"])
        if unit.setting == CLEAN:  # skip what the corrupted settings must skip: the same images everywhere
            return SizeCheckedSamples(base, MIN_SIZE)
        c, s = unit.setting.split("/")
        return corrupt_on_the_fly(base, c, int(s), seed=config["seed"], profile=config["profile"])

    def related_runs(self, config: Mapping[str, Any]) -> dict[str, str]:
        return related_corruption_runs(config)

    def metrics(self, config, predictions, related=None) -> list[MetricRow]:
        setting_of = {u: u.rsplit("/", 1)[0] for u in predictions}
        return corruption_metrics(config, predictions, setting_of, baseline=run_baseline(config, related, predictions))

    def notes(self, config, metrics) -> list[str]:
        metrics = list(metrics)
        clean_hint = ("every clean sample was skipped (see the skipped samples)" if config.get("clean", True)
                      else "the run was made with clean=False")
        notes = corruption_notes(config, metrics, clean_hint=clean_hint)
        if self.comparability(config) and any(m == "ce" for m, _, _ in metrics):
            notes.insert(0, own_data_note("CE, mCE and relative mCE", config["data"]))
        return notes

    def summary(self, config, metrics) -> dict[str, Any]:
        return {**corruption_summary_dict(config, metrics), "ce_baseline": ce_baseline_text(self.comparability(config), config)}

    def text(self, config, summary, metrics) -> list[str]:
        return corruption_text(config, summary)
