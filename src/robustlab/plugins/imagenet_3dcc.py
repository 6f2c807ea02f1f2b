"""Benchmark ``imagenet-3dcc`` in one plugin file: ImageNet-3DCC (Kar, Yeo, Atanov & Zamir, *3D Common
Corruptions and Data Augmentation*, CVPR 2022), read from its released layout, with its report
section.

- **Data**: the release (``robustlab data fetch imagenet-3dcc``; the authors'
  ``tools/download_imagenet_3dcc.sh``) in ImageNet-C's layout,
  ``<root>/<corruption>/<severity 1..5>/<wnid>/<image>``, for 12 corruptions: near_focus,
  far_focus, bit_error, color_quant, flash, fog_3d, h265_abr, h265_crf, iso_noise, low_light,
  xy_motion_blur, z_motion_blur. The settings are checked for the same classes and files before the
  run (``--allow-incomplete`` to evaluate a tree that is not, recorded).
- **Metrics**, as the paper and RobustBench report them (``robustbench/eval.py``,
  ``corruptions_evaluation`` for the ``corruptions_3d`` threat model): top-1 error per corruption
  and severity; per corruption the mean error over the 5 severities; the mean accuracy over the 60
  (corruption, severity) cells (RobustBench's ``corruptions_acc_3d``) and the mean error (the
  paper's); CE = a corruption's mean error / AlexNet's, and mCE their mean over the 12 (RobustBench's
  ``corruptions_mce_3d``), normalised by AlexNet's accuracies as RobustBench publishes them
  (``model_info/imagenet/corruptions/unaggregated_results_3d.csv``, measured on its 5,000-image
  evaluation subset). Clean error with ``--clean-data`` (the ImageNet val folder).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robustlab.benchmarks.corruption_config import CLEAN, ReleasedConfig
from robustlab.benchmarks.corruption_units import classes_per_unit, corruption_unit_samples, folder_units
from robustlab.corruptions.checks import parse_severities
from robustlab.data.classification import resolve_class_map
from robustlab.data.releases.consistency import check_released_settings, layout_notes, layout_summary
from robustlab.engine.benchmark import Benchmark, MetricRow, Unit, register_benchmark
from robustlab.engine.classification import error_rows, setting_counts
from robustlab.engine.options import (ALLOW_INCOMPLETE, CLASS_MAP, CLASSES_PER_UNIT, CLEAN_DATA, LIMIT, SAVE_LOGITS,
                                      SEVERITIES, TOP_K, Option, check_positive, class_map_config)
from robustlab.engine.presentation import HeadlineMetric, Presentation, register_presentation
from robustlab.engine.result_text import text_table
from robustlab.engine.setting import Setting, setting_of
from robustlab.errors import DataError, unknown_name
from robustlab.report import figures as F
from robustlab.report.collect import Estimate, metric_table
from robustlab.report.section_base import ReportContext, Section, first_value, label, pct, short_path

#: The 12 corruptions, in RobustBench's order (``CORRUPTIONS_3DCC``).
CORRUPTIONS_3DCC = ("near_focus", "far_focus", "bit_error", "color_quant", "flash", "fog_3d", "h265_abr", "h265_crf",
                    "iso_noise", "low_light", "xy_motion_blur", "z_motion_blur")
#: AlexNet's top-1 accuracy per corruption at severities 1..5, as RobustBench publishes it
#: (model_info/imagenet/corruptions/unaggregated_results_3d.csv, row AlexNet): the CE denominators.
ALEXNET_ACCURACY = {
    "near_focus": (0.4616, 0.4192, 0.3822, 0.3554, 0.3282), "far_focus": (0.4722, 0.3902, 0.3314, 0.29, 0.2586),
    "bit_error": (0.4432, 0.4, 0.3272, 0.263, 0.1498), "color_quant": (0.551, 0.5388, 0.5018, 0.3306, 0.0968),
    "flash": (0.2858, 0.248, 0.2082, 0.156, 0.0958), "fog_3d": (0.4374, 0.2808, 0.1852, 0.1328, 0.096),
    "h265_abr": (0.498, 0.4836, 0.4494, 0.3626, 0.3694), "h265_crf": (0.5028, 0.5012, 0.4886, 0.4496, 0.4318),
    "iso_noise": (0.1308, 0.1052, 0.0658, 0.0286, 0.012), "low_light": (0.2832, 0.2364, 0.1874, 0.1246, 0.056),
    "xy_motion_blur": (0.3028, 0.209, 0.153, 0.1156, 0.0954), "z_motion_blur": (0.2792, 0.2308, 0.193, 0.166, 0.1516),
}
BASELINE_SOURCE = ("AlexNet's accuracies on ImageNet-3DCC as RobustBench publishes them (model_info/imagenet/corruptions/"
                   "unaggregated_results_3d.csv, its 5,000-image evaluation subset)")
FAMILY = "imagenet-3dcc"
LAYOUT = "<root>/<corruption>/<severity 1..5>/<wnid>/<image> (ImageNet-3DCC, ImageNet-C's layout)"


def summarize_3dcc(errors: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """The 3DCC numbers from top-1 errors per corruption at severities 1..5 (fractions).

    Returns ``mean_error`` per corruption, ``ce`` per corruption (its mean error / AlexNet's),
    ``mce`` (mean CE), ``mean_accuracy`` over every (corruption, severity) cell and ``mean_error``
    over them, and ``complete`` (all 12 corruptions): RobustBench's ``corruptions_mce_3d`` and
    ``corruptions_acc_3d`` for a complete set.

    >>> rb = {c: [1 - a for a in accs] for c, accs in ALEXNET_ACCURACY.items()}
    >>> s = summarize_3dcc(rb); round(s["mce"], 6), round(100 * s["mean_accuracy"], 2)
    (1.0, 28.47)
    """
    unknown = sorted(set(errors) - set(CORRUPTIONS_3DCC))
    if unknown:
        raise unknown_name("3DCC corruption", unknown[0], CORRUPTIONS_3DCC)
    per = {c: float(np.mean(e)) for c, e in errors.items()}
    ce = {c: per[c] / float(np.mean([1 - a for a in ALEXNET_ACCURACY[c]])) for c in per}
    cells = [v for e in errors.values() for v in e]
    return {"mean_errors": per, "ce": ce, "mce": float(np.mean(list(ce.values()))) if ce else None,
            "mean_accuracy": 1 - float(np.mean(cells)) if cells else None,
            "mean_error": float(np.mean(cells)) if cells else None, "complete": set(per) == set(CORRUPTIONS_3DCC)}


def parse_corruptions(spec: str | Sequence[str] | None, available: Sequence[str]) -> list[str]:
    """3DCC corruption names (comma-separated or a list; ``all``; None: every one ``available``), in
    RobustBench's order; an unknown name gets a did-you-mean."""
    if spec is None:
        chosen = [c for c in CORRUPTIONS_3DCC if c in available]
        if not chosen:
            raise DataError(f"none of the 12 ImageNet-3DCC corruption folders is here; the layout is {LAYOUT}. "
                            "Fetch it with: robustlab data fetch imagenet-3dcc")
        return chosen
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if names == ["all"]:
        return list(CORRUPTIONS_3DCC)
    for name in names:
        if name not in CORRUPTIONS_3DCC:
            raise unknown_name("3DCC corruption", name, CORRUPTIONS_3DCC)
    return [c for c in CORRUPTIONS_3DCC if c in names]


@dataclass(frozen=True, kw_only=True)
class ImageNet3DCCConfig(ReleasedConfig):
    """An ``imagenet-3dcc`` run: the released folders (layout ``folders``) of the chosen corruptions and
    severities, with the class map, the clean ImageNet val folder and what is stored per sample."""


@register_benchmark
class ImageNet3DCC(Benchmark):
    """ImageNet-3DCC's released folders (see the module docstring); its options are :attr:`options`."""

    name = "imagenet-3dcc"
    config_class = ImageNet3DCCConfig
    presentation = FAMILY
    options = (
        Option("corruptions", "str", help="3DCC corruptions, comma-separated, or all (default: each of the 12 the data "
               "holds): " + ", ".join(CORRUPTIONS_3DCC) + ".", flags=("-c",)),
        SEVERITIES, CLASS_MAP, CLEAN_DATA, LIMIT, CLASSES_PER_UNIT, TOP_K, SAVE_LOGITS, ALLOW_INCOMPLETE,
    )

    def configure(self, data: str, *, corruptions, severities, class_map, clean_data, limit, classes_per_unit, top_k,
                  save_logits, allow_incomplete) -> ImageNet3DCCConfig:
        root = Path(data).expanduser().resolve()
        if not root.is_dir():
            raise DataError(f"ImageNet-3DCC folder {root} does not exist; the layout is {LAYOUT}. Fetch it with: "
                            "robustlab data fetch imagenet-3dcc")
        chosen = parse_corruptions(corruptions, [p.name for p in root.iterdir() if p.is_dir()])
        sev = list(parse_severities(severities if severities is not None else "1-5"))
        folders = {str(Setting(c, s)): root / c / str(s) for c in chosen for s in sev}
        for setting, folder in folders.items():
            if not folder.is_dir():
                raise DataError(f"ImageNet-3DCC folder {folder} is missing; fetch it (robustlab data fetch imagenet-3dcc "
                                f"--parts {Setting.parse(setting).shift}) or leave it out with --corruptions/--severities.")
        mapping = class_map_config(class_map)
        limit = check_positive("limit", limit)
        per_unit = check_positive("classes_per_unit", classes_per_unit)
        checked = check_released_settings(folders, mapping, allow_incomplete=bool(allow_incomplete),
                                          release="imagenet-3dcc", what=f"the ImageNet-3DCC tree {root}")
        return ImageNet3DCCConfig(
            data=str(root), layout="folders", corruptions=chosen, severities=sev, class_map=checked.class_map,
            limit=limit, classes_per_unit=per_unit, top_k=check_positive("top_k", top_k),
            save_logits=bool(save_logits),
            clean_data=str(Path(clean_data).expanduser().resolve()) if clean_data is not None else None,
            num_classes=len(resolve_class_map(list(checked.report.classes), checked.class_map)[1]),
            incomplete=checked.incomplete, subset=checked.subset)

    def plan(self, config: ImageNet3DCCConfig):
        return folder_units(((s, Path(config.data, s.shift, str(s.level))) for s in config.settings()),
                            classes_per_unit(config.limit, config.classes_per_unit), config.clean_data)

    def samples(self, config: ImageNet3DCCConfig, unit: Unit):
        return corruption_unit_samples(config, unit)

    def metrics(self, config: ImageNet3DCCConfig, predictions, related=None) -> list[MetricRow]:
        counts = setting_counts(predictions, {u: setting_of(u) for u in predictions})
        rows = list(error_rows(counts))
        error = {s: e1 / n for s, (n, e1, _) in counts.items() if n}
        if CLEAN in error:
            rows.append(("clean_error", "", error[CLEAN]))
        complete = {c: [error[f"{c}/{s}"] for s in range(1, 6)] for c in config.corruptions
                    if all(f"{c}/{s}" in error for s in range(1, 6))}
        summary = summarize_3dcc(complete)
        rows += [("mean_error", c, v) for c, v in summary["mean_errors"].items()]
        rows += [("ce", c, v) for c, v in summary["ce"].items()]
        suffix = "" if summary["complete"] else "_subset"
        for key in ("mce", "mean_accuracy", "mean_error"):
            if summary[key] is not None:
                rows.append((f"{key}{suffix}", "", summary[key]))
        return rows


# --- its report section ------------------------------------------------------------------------------------


def section_3dcc(results: Sequence, context: ReportContext | None = None) -> Section:
    """One row per run (clean accuracy, RobustBench's mean accuracy, the paper's mean error, mCE) and the
    mean error per corruption of every model."""
    sec = Section(FAMILY, "ImageNet-3DCC (3D common corruptions)",
                  "Top-1 accuracy under the 12 corruptions of 3D Common Corruptions (Kar et al., CVPR 2022) at 5 "
                  "severities: corruptions that follow the scene's geometry (depth of field, 3D motion blur, fog "
                  "thickening with depth, flash, low light) and video compression. Mean accuracy over the 60 cells "
                  "is RobustBench's headline (higher is better); mCE divides each corruption's mean error by "
                  "AlexNet's, as RobustBench publishes it (lower is better, AlexNet = 100).",
                  ["model", "dataset", "clean accuracy % [95% CI]", "mean accuracy %", "mean error %", "mCE", "run"],
                  legend="[a, b] = exact 95 % Clopper-Pearson interval; (subset) = not all 12 corruptions at "
                         "severities 1-5.")
    series: dict[str, dict[str, float]] = {}
    for r in results:
        t, s = metric_table(r), r.summary or {}
        clean = (Estimate.from_fraction(1 - s["clean_error"], t.get(("n_samples", CLEAN))).percent()
                 if s.get("clean_error") is not None else "–")
        subset = " (subset)" if s.get("mean_accuracy") is None and s.get("mean_accuracy_subset") is not None else ""
        sec.rows.append([r.model, short_path(r.dataset), clean,
                         pct(first_value(s, "mean_accuracy", "mean_accuracy_subset")) + subset,
                         pct(first_value(s, "mean_error", "mean_error_subset")) + subset,
                         pct(first_value(s, "mce", "mce_subset")) + subset, r.run_id[:10]])
        errs = {c: v["mean_error"] for c, v in (s.get("corruptions") or {}).items() if v.get("mean_error") is not None}
        if errs:
            series[label(r)] = errs
        sec.notes += [f"{label(r)}: {n}" for n in r.notes]
    categories = [c for c in CORRUPTIONS_3DCC if any(c in v for v in series.values())]
    if series:
        sec.figures.append(F.bar_groups(
            "3dcc-error-per-corruption", "Mean error per 3DCC corruption",
            "Top-1 error (%) per corruption, averaged over severities 1-5; the dashed line is AlexNet's mean error over "
            "the 12 (RobustBench).", categories,
            {m: [100 * v.get(c, np.nan) for c in categories] for m, v in series.items()}, ylabel="top-1 error (%)",
            reference=100 * (1 - float(np.mean([a for accs in ALEXNET_ACCURACY.values() for a in accs]))),
            reference_label="AlexNet"))
    return sec


def headline_3dcc(result, results: Sequence = (), store=None) -> list[str]:
    """``mean acc 47.1 · mCE 73.2`` (percent; "(subset)" when not all 12 corruptions were evaluated)."""
    s = result.summary or {}
    parts = []
    for keys, text in ((("mean_accuracy", "mean_accuracy_subset"), "mean acc"), (("mce", "mce_subset"), "mCE")):
        value = first_value(s, *keys)
        if value is not None:
            parts.append(f"{text}{' (subset)' if s.get(keys[0]) is None else ''} {pct(value)}")
    return parts


# --- its presentation: show text, report section and headline in one registered object ----------------------


@register_presentation
class ImageNet3DCCPresentation(Presentation):
    """How ``imagenet-3dcc`` runs are shown: errors and CE per corruption, RobustBench's mean accuracy and the
    paper's mean error; in the report, :func:`section_3dcc` and :func:`headline_3dcc`."""

    name = FAMILY
    title = "ImageNet-3DCC (3D common corruptions)"
    section_builder = staticmethod(section_3dcc)
    headline_builder = staticmethod(headline_3dcc)
    headline = (HeadlineMetric("mean_accuracy", "mean acc.", "mean_accuracy_subset"),
                HeadlineMetric("mce", "mCE", "mce_subset"))

    def notes(self, config: ImageNet3DCCConfig, metrics: Iterable[MetricRow]) -> list[str]:
        names = {(m, s) for m, s, _ in metrics}
        notes = layout_notes(config.subset, config.incomplete)
        missing = [c for c in CORRUPTIONS_3DCC if ("ce", c) not in names]
        if missing and any(m == "error" for m, _, _ in metrics):
            notes.append(f"mCE and the mean accuracy need the 12 corruptions at severities 1-5; missing "
                         f"{', '.join(missing)}: the _subset values average the complete ones.")
        notes.append(f"CE and mCE divide by {BASELINE_SOURCE}; the mean accuracy over the 60 cells is RobustBench's "
                     "headline number, the mean error the paper's.")
        if ("clean_error", "") not in names:
            notes.append("no clean error: give --clean-data <ImageNet val folder>.")
        return notes

    def summary(self, config: ImageNet3DCCConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        t = {(m, s): v for m, s, v in metrics}
        out: dict[str, Any] = {"clean_error": t.get(("clean_error", "")), **layout_summary(config.subset, config.incomplete),
                               "corruptions": {
            c: {"errors": {str(s): t.get(("error", f"{c}/{s}")) for s in config.severities},
                "mean_error": t.get(("mean_error", c)), "ce": t.get(("ce", c))} for c in config.corruptions}}
        for key in ("mean_accuracy", "mean_error", "mce"):
            for name in (key, f"{key}_subset"):
                if t.get((name, "")) is not None:
                    out[name] = t[(name, "")]
        return out

    def text(self, config: ImageNet3DCCConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        sev = list(config.severities)
        rows = [[c, pct(row.get("ce"))] + [pct(row["errors"].get(str(s))) for s in sev] + [pct(row.get("mean_error"))]
                for c, row in (summary.get("corruptions") or {}).items()]
        lines = ["ImageNet-3DCC: top-1 errors and CE (%, CE vs AlexNet as RobustBench publishes it)"]
        lines += text_table(["corruption", "CE"] + [f"s{s}" for s in sev] + ["mean"], rows, first_width=16)
        lines.append("")
        labels = {"clean_error": "clean error", "mean_accuracy": "mean accuracy (RobustBench)",
                  "mean_accuracy_subset": "mean accuracy (subset)", "mean_error": "mean error (paper)",
                  "mean_error_subset": "mean error (subset)", "mce": "mCE", "mce_subset": "mCE (subset)"}
        lines += [f"{text:<34}{pct(summary[key]):>7}" for key, text in labels.items() if summary.get(key) is not None]
        return lines
