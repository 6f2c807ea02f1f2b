"""Benchmark ``imagenet-c-bar``: the released ImageNet-C-bar folders or CIFAR-10-C-bar arrays
(or ImageNet-C-bar made in memory from clean ImageNet val), with the paper's mean error, CE-bar
and mCE-bar (:mod:`robustlab.metrics.corruption_bar`).

Settings are ``"<corruption>/<severity 1..5>"`` and ``"clean"``; units ``"<setting>/shard-NNNN"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..corruptions.cbar.released import CBarLayout, discover_cbar
from ..corruptions.cbar.tables import SETS, severity_folder
from ..corruptions.checks import parse_severities
from ..corruptions.registry import resolve_corruptions
from ..corruptions.released import read_cifar_c
from ..data.classification import class_folders, read_image_folder, resolve_class_map
from ..data.releases.consistency import check_released_settings, layout_notes, layout_summary, subset_record
from ..engine.benchmark import Benchmark, MetricRow, Unit, register_benchmark
from ..engine.classification import add_setting_counts, error_rows, setting_counts
from ..engine.options import (ALLOW_INCOMPLETE, BASELINE_RUN, CLASS_MAP, CLASSES_PER_UNIT, CLEAN_DATA, CLEAN_RUN,
                              LIMIT, LIMIT_ORDER, SAVE_LOGITS, SEVERITIES, TOP_K, Option, baseline_option,
                              check_positive, check_seed, class_map_config, limit_config, seed_option,
                              shard_size_option)
from ..engine.presentation import HeadlineMetric, Presentation
from ..engine.setting import setting_of
from ..errors import DataError, InputError
from ..metrics.corruption import CorruptionBaseline, corruption_errors
from ..metrics.corruption_bar import CBAR_SETS, get_cbar_baseline
from .corruption import baseline_from_run
from .corruption_config import (CLEAN, CLEAN_SETTING, KEEP_INPUT_SIZE, SELF, ReleasedConfig, check_keep_input_size,
                                related_corruption_runs)
from .corruption_units import (cifar_clean_data, cifar_units, classes_per_unit, corruption_unit_samples, folder_units,
                               on_the_fly_shared_reads, on_the_fly_units)

N_SEVERITIES = 5
#: ``corruptions`` of imagenet-c-bar: the set's own names (ImageNet-C's subsets are not in it).
CBAR_CORRUPTIONS = Option("corruptions", "str", help="Corruptions of the -bar set, comma-separated (default: the "
                          "set's 10: imagenet-c-bar's or cifar10-c-bar's, as the data holds; the set's name works too). "
                          "ImageNet-C's names and subsets (benchmark, noise...) are not in the -bar sets.",
                          flags=("-c",))


@dataclass(frozen=True, kw_only=True)
class CBarConfig(ReleasedConfig):
    """An ``imagenet-c-bar`` run: a :class:`~robustlab.benchmarks.corruption_config.ReleasedConfig` over
    the -bar ``set`` (``imagenet-c-bar`` or ``cifar10-c-bar``), with the baseline CE-bar divides by."""

    set: str
    baseline: str
    baseline_run: str | None
    clean_run: str | None


def cbar_metrics(config: CBarConfig, predictions: Mapping[str, Mapping[str, np.ndarray]],
                 clean_predictions: Mapping[str, Mapping[str, np.ndarray]] | None = None,
                 baseline: CorruptionBaseline | None = None) -> list[MetricRow]:
    """Error per setting; per corruption its mean error and CE-bar; over the set the mean error
    (the paper's number), mCE-bar and the mean corruption accuracy (``_subset`` names when some of the
    set's corruptions are missing). Fractions / ratios."""
    counts = setting_counts(predictions, {u: setting_of(u) for u in predictions})
    if clean_predictions:
        add_setting_counts(counts, clean_predictions, CLEAN)
    rows = list(error_rows(counts))
    error = {s: e1 / n for s, (n, e1, _) in counts.items() if n}
    if CLEAN in error:
        rows.append(("clean_error", "", error[CLEAN]))
    means: dict[str, float] = {}
    for c in config.corruptions:
        errs = [error.get(f"{c}/{s}") for s in range(1, N_SEVERITIES + 1)]
        if all(e is not None for e in errs):
            means[c] = float(np.mean(errs))
            rows.append(("mean_error", c, means[c]))
    if not means:
        return rows
    base = baseline or get_cbar_baseline(config.set, config.baseline)
    ce = {c: corruption_errors({c: means[c]}, baseline=base)[c] for c in means if base.errors.get(c, 0) > 0}
    rows.extend(("ce_bar", c, v) for c, v in ce.items())
    members = CBAR_SETS[config.set]
    done = [c for c in members if c in means]
    suffix = "" if len(done) == len(members) else "_subset"
    rows.append((f"mean_error_bar{suffix}", "", float(np.mean([means[c] for c in done]))))
    rows.append((f"mean_corruption_accuracy{suffix}", "", float(np.mean([1 - means[c] for c in done]))))
    with_ce = [c for c in members if c in ce]
    if with_ce:
        rows.append((f"mce_bar{'' if len(with_ce) == len(members) else '_subset'}", "",
                     float(np.mean([ce[c] for c in with_ce]))))
    return rows


def first_present(mapping: Mapping[str, Any], *keys: str) -> Any:
    """The value of the first of ``keys`` in ``mapping`` (None if none)."""
    return next((mapping[k] for k in keys if mapping.get(k) is not None), None)


def cbar_baseline_text(config: CBarConfig) -> str:
    """What CE-bar divides by, for the summary and ``show``."""
    run = config.baseline_run
    if run == SELF:
        return "this run itself (CE-bar = 100 by construction)"
    if run:
        return f"stored run {run} on the same data"
    return get_cbar_baseline(config.set, config.baseline).source


@register_benchmark
class ImageNetCBar(Benchmark):
    """ImageNet-C-bar (``<root>/<corruption>/<severity parameter or 1..5>/<wnid>/<file>``) or
    CIFAR-10-C-bar (``<root>/<corruption>.npy`` + ``labels.npy``), see
    :mod:`robustlab.corruptions.cbar.released`.

    Its options are :attr:`options`; ``baseline`` ``paper-baseline`` is the paper's ResNet-50 /
    WRN-40-2 errors. ``on_the_fly=True``: the data is the clean ImageNet val folder and
    ImageNet-C-bar is made in memory as the reference's ``test_c_bar.py`` does (resize 256,
    centre crop 224, corrupt; no JPEG), each image with seed
    :func:`~robustlab.corruptions.items.item_seed` ``(seed, sample_id, corruption, severity)``,
    clean images evaluated as ``clean``.
    """

    name = "imagenet-c-bar"
    config_class = CBarConfig
    presentation = "imagenet-c-bar"
    options = (
        CBAR_CORRUPTIONS, SEVERITIES, CLASS_MAP, CLEAN_DATA, CLEAN_RUN, LIMIT, LIMIT_ORDER, CLASSES_PER_UNIT,
        shard_size_option(10000),
        baseline_option("paper-baseline"), BASELINE_RUN, TOP_K, SAVE_LOGITS,
        Option("on_the_fly", "bool", False, help="--data is the clean ImageNet val folder: make ImageNet-C-bar in "
               "memory (resize 256, crop 224, corrupt), write no images."),
        seed_option(None, "With --on-the-fly: base seed of the per-image seeds (default 0)."), KEEP_INPUT_SIZE,
        ALLOW_INCOMPLETE,
    )

    worker_modules = ("robustlab.corruptions.kernels",)

    def __init__(self) -> None:
        self._layouts: dict[str, CBarLayout] = {}
        self._listings: dict[str, Any] = {}

    def _layout(self, root: str) -> CBarLayout:
        if root not in self._layouts:
            self._layouts[root] = discover_cbar(root)
        return self._layouts[root]

    def configure(self, data: str, *, corruptions, severities, class_map, clean_data, clean_run, limit, limit_order,
                  classes_per_unit, shard_size, baseline, baseline_run, top_k, save_logits, on_the_fly,
                  seed, allow_incomplete, keep_input_size) -> CBarConfig:
        root = Path(data).expanduser().resolve()
        check_keep_input_size(keep_input_size, on_the_fly)
        if on_the_fly and allow_incomplete:
            raise InputError("allow_incomplete applies to the released C-bar folders; --on-the-fly reads clean images "
                             "(leave it out).")
        sev = list(parse_severities(severities if severities is not None else "1-5"))
        common = {"severities": sev, **limit_config(limit, limit_order), "top_k": check_positive("top_k", top_k),
                  "save_logits": bool(save_logits), "baseline": baseline, "baseline_run": baseline_run}
        if on_the_fly:
            if clean_data is not None or clean_run is not None:
                raise InputError("with --on-the-fly the data folder holds the clean images and they are evaluated as "
                                 "setting 'clean': leave out --clean-data and --clean-run.")
            chosen = self._chosen("imagenet-c-bar", corruptions, list(SETS["imagenet-c-bar"]))
            get_cbar_baseline("imagenet-c-bar", baseline)
            mapping = class_map_config(class_map)
            _, names = resolve_class_map(class_folders(root), mapping)
            return _with_limit_stats(CBarConfig(
                data=str(root), layout="on-the-fly", set="imagenet-c-bar", corruptions=chosen,
                seed=check_seed(0 if seed is None else seed), profile="imagenet-c", class_map=mapping, clean_data=None,
                clean_run=None, classes_per_unit=check_positive("classes_per_unit", classes_per_unit), **common,
                keep_input_size=bool(keep_input_size), num_classes=len(names)), root)
        if seed is not None:
            raise InputError("seed applies to --on-the-fly evaluation; the released C-bar files are already corrupted.")
        layout = self._layout(str(root))
        chosen = self._chosen(layout.set_name, corruptions, list(layout.folders))
        for c in chosen:
            missing = [s for s in sev if s not in layout.folders.get(c, {})]
            if missing:
                param = SETS[layout.set_name][c][missing[0] - 1]
                raise DataError(f"{layout.root} has no {c} at severity {missing[0]} (folder "
                                f"{c}/{severity_folder(param)}); download it or leave it out with --corruptions/"
                                "--severities.")
        if clean_data is not None and clean_run is not None:
            raise InputError("give either clean_data (a folder) or clean_run (a stored run id), not both.")
        get_cbar_baseline(layout.set_name, baseline)
        common.update(data=str(layout.root), layout=layout.kind, set=layout.set_name, corruptions=chosen,
                      clean_run=clean_run)
        if layout.kind == "cifar":
            return self._configure_cifar(layout, common, clean_data=clean_data, shard_size=shard_size)
        return self._configure_folders(layout, common, clean_data=clean_data, class_map=class_map,
                                       classes_per_unit=classes_per_unit, allow_incomplete=allow_incomplete)

    @staticmethod
    def _configure_cifar(layout: CBarLayout, common: dict[str, Any], *, clean_data, shard_size) -> CBarConfig:
        """CIFAR-10-C-bar arrays: the shard size, the CIFAR-10 test set as the clean data, and what the
        arrays hold when they are a subset of the release."""
        corruption, severity = common["corruptions"][0], common["severities"][0]
        first = read_cifar_c(layout.root, corruption, severity)
        limits = {}
        if common["limit"]:
            limits = limit_config(common["limit"], common["limit_order"], read_cifar_c(
                layout.root, corruption, severity, limit=common["limit"], limit_order=common["limit_order"]))
        return CBarConfig(**{**common, **limits}, clean_data=cifar_clean_data(clean_data),
                          shard_size=check_positive("shard_size", shard_size), num_classes=10,
                          subset=subset_record(len(np.unique(first.labels)), len(first), "cifar-10-c-bar"))

    @staticmethod
    def _configure_folders(layout: CBarLayout, common: dict[str, Any], *, clean_data, class_map, classes_per_unit,
                           allow_incomplete) -> CBarConfig:
        """Released folders: the class map, checked to hold the same classes and files in every setting
        (or evaluated incomplete, recorded)."""
        folders = {str(layout.folders[c][s].relative_to(layout.root)): layout.folders[c][s]
                   for c in common["corruptions"] for s in common["severities"]}
        checked = check_released_settings(folders, class_map_config(class_map),
                                          allow_incomplete=bool(allow_incomplete), release="imagenet-c-bar",
                                          what=f"the ImageNet-C-bar tree {layout.root}")
        _, names = resolve_class_map(list(checked.report.classes), checked.class_map)
        config = CBarConfig(**common, clean_data=str(Path(clean_data).expanduser().resolve()) if clean_data is not None
                            else None, class_map=checked.class_map,
                            classes_per_unit=check_positive("classes_per_unit", classes_per_unit),
                            num_classes=len(names), incomplete=checked.incomplete, subset=checked.subset)
        return _with_limit_stats(config, layout.folders[common["corruptions"][0]][common["severities"][0]])

    @staticmethod
    def _chosen(set_name: str, corruptions, available: list[str]) -> list[str]:
        members = SETS[set_name]
        if corruptions is None:
            return [c for c in CBAR_SETS[set_name] if c in available]
        chosen = resolve_corruptions(corruptions)
        foreign = [c for c in chosen if c not in members]
        if foreign:
            raise InputError(f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} not in {set_name} "
                             f"({', '.join(members)}).")
        absent = [c for c in chosen if c not in available]
        if absent:
            raise DataError(f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not in the data "
                            f"(found: {', '.join(available)}); download or leave out with --corruptions.")
        return chosen

    def related_runs(self, config: CBarConfig) -> dict[str, str]:
        return related_corruption_runs(config.clean_run, config.baseline_run)

    def plan(self, config: CBarConfig):
        settings = config.settings()
        if config.layout == "cifar":
            yield from cifar_units(config, settings, self._layout(config.data).root)
            return
        per_unit = classes_per_unit(config.limit, config.classes_per_unit)
        if config.on_the_fly:
            yield from on_the_fly_units(config.data, [CLEAN_SETTING] + settings, per_unit)
            return
        layout = self._layout(config.data)
        yield from folder_units(((s, layout.folders[s.shift][s.level]) for s in settings), per_unit, config.clean_data)

    def samples(self, config: CBarConfig, unit: Unit):
        return corruption_unit_samples(config, unit, self._listings)

    def shared_reads(self, config: CBarConfig, unit: Unit) -> str | None:
        return on_the_fly_shared_reads(config, unit)

    def reads_files(self, config: CBarConfig) -> bool:
        return config.layout not in ("cifar", "on-the-fly")

    def metrics(self, config: CBarConfig, predictions, related=None) -> list[MetricRow]:
        clean = None
        if related and "clean_run" in related:
            clean = {u: cols for u, cols in related["clean_run"].items() if setting_of(u) == CLEAN}
            if not clean:
                raise DataError(f"stored run {config.clean_run} has no clean units; give --clean-data instead.")
        baseline = None
        if config.baseline_run == SELF:
            baseline = baseline_from_run(predictions, config.corruptions, config.baseline_run)
        elif related and "baseline_run" in related:
            baseline = baseline_from_run(related["baseline_run"], config.corruptions, config.baseline_run)
        return cbar_metrics(config, predictions, clean, baseline)


def _with_limit_stats(config: CBarConfig, folder: Path) -> CBarConfig:
    """``config`` with the ``limit_stats`` of its limit over the image folder ``folder`` (unchanged
    without a limit)."""
    if config.limit:
        return config.replace(**limit_config(config.limit, config.limit_order, read_image_folder(
            folder, config.class_map, limit=config.limit, limit_order=config.limit_order)))
    return config


class CBarShow(Presentation):
    """How ``imagenet-c-bar`` runs are shown: the set's mean error (the paper's number), CE-bar and
    mCE-bar. The report's section extends it (:mod:`robustlab.report.section_shifts`)."""

    name = "imagenet-c-bar"
    family = "corruption-bar"
    title = "ImageNet-C-bar / CIFAR-10-C-bar"
    headline = (HeadlineMetric("mean_error_bar", "mean error", "mean_error_bar_subset"),
                HeadlineMetric("mce_bar", "mCE-bar", "mce_bar_subset"))

    def notes(self, config: CBarConfig, metrics: Iterable[MetricRow]) -> list[str]:
        names = {(m, s) for m, s, _ in metrics}
        notes = layout_notes(config.subset, config.incomplete)
        if config.on_the_fly:
            notes.append(f"ImageNet-C-bar made in memory from {config.data} (resize 256, centre crop 224, corrupt, "
                         f"seed {config.seed}), as the reference's test_c_bar.py: unlike the released files the "
                         "images are not JPEG-compressed and each has its own seed, so errors are close to, not "
                         "identical with, those on the released set.")
        if ("mce_bar", "") not in names and any(m == "mean_error" for m, _, _ in metrics):
            members = CBAR_SETS[config.set]
            missing = [c for c in members if ("mean_error", c) not in names]
            notes.append(f"the {config.set} numbers need its 10 corruptions at severities 1-5; missing "
                         f"{', '.join(missing)}: the _subset values average the complete ones.")
        if config.baseline_run is None and config.baseline == "paper-baseline":
            notes.append("CE-bar and mCE-bar divide by the per-corruption errors of the paper's plainly trained "
                         "baseline (Mintun et al. 2021, Table 2); the paper publishes no AlexNet errors on the -bar "
                         "sets. Its headline number is the mean error.")
        if ("clean_error", "") not in names:
            clean_data = "<CIFAR-10 root>" if config.layout == "cifar" else "<clean val folder>"
            notes.append(f"no clean error: give --clean-data {clean_data} or --clean-run <run id> "
                         "(needed for the clean-vs-shifted and effective-robustness figures).")
        return notes

    def summary(self, config: CBarConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        table = {(m, s): v for m, s, v in metrics}
        corruptions = {c: {"errors": {str(s): table.get(("error", f"{c}/{s}")) for s in config.severities},
                           "mean_error": table.get(("mean_error", c)), "ce_bar": table.get(("ce_bar", c))}
                       for c in config.corruptions}
        out: dict[str, Any] = {"set": config.set, "clean_error": table.get(("clean_error", "")),
                               "corruptions": corruptions, "ce_baseline": cbar_baseline_text(config),
                               **layout_summary(config.subset, config.incomplete)}
        for key in ("mean_error_bar", "mce_bar", "mean_corruption_accuracy"):
            for name in (key, f"{key}_subset"):
                if table.get((name, "")) is not None:
                    out[name] = table[(name, "")]
        shifted = first_present(out, "mean_corruption_accuracy", "mean_corruption_accuracy_subset")
        if out["clean_error"] is not None and shifted is not None:
            subset = "mean_corruption_accuracy" not in out  # only runs of the same corruptions share a trend
            shift = config.set + (f" [{', '.join(config.corruptions)}]" if subset else "")
            out["accuracy_pair"] = {"shift": shift, "original_set": "clean images", "original":
                                    1 - out["clean_error"], "original_n": int(table.get(("n_samples", CLEAN), 0)) or None,
                                    "shifted": shifted, "shifted_n": None}
        return out

    def text(self, config: CBarConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        from ..engine.result_text import pct, text_table

        sev = list(config.severities)
        rows = [[name, pct(row.get("ce_bar"))] + [pct(row["errors"].get(str(s))) for s in sev]
                + [pct(row.get("mean_error"))] for name, row in (summary.get("corruptions") or {}).items()]
        lines = [f"{summary.get('set', config.set)}: errors and CE-bar (%)"]
        lines += text_table(["corruption", "CE-bar"] + [f"s{s}" for s in sev] + ["mean"], rows, first_width=32)
        lines.append("")
        labels = {"clean_error": "clean error", "mean_error_bar": "mean error (paper's number)",
                  "mean_error_bar_subset": "mean error (subset)", "mce_bar": "mCE-bar", "mce_bar_subset": "mCE-bar (subset)",
                  "mean_corruption_accuracy": "mean corruption accuracy",
                  "mean_corruption_accuracy_subset": "mean corruption accuracy (subset)"}
        for key, text in labels.items():
            if summary.get(key) is not None:
                lines.append(f"{text:<34}{pct(summary[key]):>7}")
        if summary.get("ce_baseline"):
            lines.append(f"{'CE-bar normalised by':<34}{summary['ce_baseline']}")
        return lines
