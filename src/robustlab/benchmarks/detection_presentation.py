"""How the detection runs are shown: P / mPC / rPC with their convention and the headline metric per
corruption and severity (the corrupted sets and imported mmdetection results), and detection and
localization pm-k mAP (``imagenet-vid-robust-detection``, shown in the report's generic section).
The report's section extends the first (:mod:`robustlab.report.section_detection`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..engine.presentation import HeadlineMetric, MetricRow, Presentation
from ..metrics.corruption import BENCHMARK_CORRUPTIONS
from ..metrics.under_corruption import rpc_undefined_reason
from .detection_config import CorruptedDetectionConfig, DetectionPmkConfig, MmdetResultsConfig
from .detection_results import CLEAN


def detection_notes(config: CorruptedDetectionConfig | MmdetResultsConfig, metrics: Iterable[MetricRow]) -> list[str]:
    """The headline P / mPC / rPC line with its convention, and warnings."""
    table = {(m, s): v for m, s, v in metrics}
    head = config.headline
    notes = []
    if ("P", "") in table:
        notes.append(f"P / mPC / rPC ({head}, %): {100 * table[('P', '')]:.1f} / {100 * table[('mPC', '')]:.1f} / "
                     f"{100 * table[('rPC', '')]:.1f}; mPC = mean over {len(config.corruptions)} corruptions x "
                     f"severities {','.join(map(str, config.severities))}; rPC = mPC / P ({config.rpc}).")
        reason = rpc_undefined_reason(table[("P", "")], table[("rPC", "")])
        if reason:
            notes.append(reason)
        per = [f"{c} {100 * table[(f'rPC:{head}', c)]:.1f}" for c in config.corruptions
               if (f"rPC:{head}", c) in table]
        if per:
            notes.append(f"rPC per corruption ({head}, %): {', '.join(per)}.")
    else:
        notes.append("P / mPC / rPC unavailable: the clean setting or a corruption x severity cell has no score.")
    if list(config.corruptions) != list(BENCHMARK_CORRUPTIONS) or list(config.severities) != [1, 2, 3, 4, 5]:
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


def detection_summary(config: CorruptedDetectionConfig | MmdetResultsConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
    """P / mPC / rPC, per metric, the cells (per setting its scores) and the RMSE-vs-rPC fit."""
    rows = list(metrics)
    table = {(m, s): v for m, s, v in rows}
    per_metric: dict[str, dict[str, Any]] = {}
    for (m, s), v in table.items():
        if ":" in m and m.split(":", 1)[0] in ("P", "mPC", "rPC") and s == "":
            kind, name = m.split(":", 1)
            per_metric.setdefault(name, {})[kind] = v
    cells: dict[str, dict[str, float]] = {}
    for setting in config.settings:
        cells[setting] = {m: v for (m, s), v in table.items() if s == setting and ":" not in m}
    return {"task": "detection", "headline": config.headline, "rpc_convention": config.rpc,
            "P": table.get(("P", "")), "mPC": table.get(("mPC", "")), "rPC": table.get(("rPC", "")),
            "per_metric": per_metric, "cells": cells,
            "rmse_vs_rpc": {k.split(":", 1)[1]: v for (k, s), v in table.items() if k.startswith("rmse_vs_rpc:")}}


def detection_text(config: CorruptedDetectionConfig | MmdetResultsConfig, summary: Mapping[str, Any],
                   metrics: Iterable[MetricRow]) -> list[str]:
    """``robustlab show`` layout: P / mPC / rPC, then the headline metric per corruption and
    severity with each corruption's mPC and rPC (percent)."""
    from ..engine.result_text import pct, text_table

    table = {(m, s): v for m, s, v in metrics}
    head = summary.get("headline") or config.headline
    lines = [f"P / mPC / rPC ({head}, %): {pct(summary.get('P'))} / {pct(summary.get('mPC'))} / "
             f"{pct(summary.get('rPC'))}  (rPC {summary.get('rpc_convention') or config.rpc})"]
    cells = summary.get("cells") or {}
    sev = list(config.severities)
    rows = []
    for c in config.corruptions:
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


def iou_threshold_text(threshold: float | str) -> str:
    """``"IoU >= 0.5"`` or ``"ImageNet-VID per-object IoU thresholds"``, for notes."""
    return "ImageNet-VID per-object IoU thresholds" if threshold == "vid" else f"IoU >= {threshold:g}"


class DetectionShow(Presentation):
    """The corrupted detection sets and imported mmdetection results."""

    name = "detection"
    title = "Detection under corruption (Robust Detection Benchmark)"
    headline = (HeadlineMetric("P", "P"), HeadlineMetric("mPC", "mPC"), HeadlineMetric("rPC", "rPC"))

    def notes(self, config: CorruptedDetectionConfig | MmdetResultsConfig, metrics: Iterable[MetricRow]) -> list[str]:
        return detection_notes(config, metrics)

    def summary(self, config: CorruptedDetectionConfig | MmdetResultsConfig,
                metrics: Iterable[MetricRow]) -> dict[str, Any]:
        return detection_summary(config, metrics)

    def text(self, config: CorruptedDetectionConfig | MmdetResultsConfig, summary: dict[str, Any],
             metrics: Iterable[MetricRow]) -> list[str]:
        return detection_text(config, summary, metrics)


class DetectionPmkShow(Presentation):
    """Detection pm-k: its own metrics, in the report's generic section (family "")."""

    name = "detection-pmk"
    family = ""

    def notes(self, config: DetectionPmkConfig, metrics: Iterable[MetricRow]) -> list[str]:
        t = {(m, s): v for m, s, v in metrics}
        if ("map_pmk", "") not in t:
            return []
        return [f"detection mAP anchor {100 * t[('map_anchor', '')]:.1f} -> pm-k {100 * t[('map_pmk', '')]:.1f}; "
                f"localization mAP {100 * t[('loc_map_anchor', '')]:.1f} -> pm-k {100 * t[('loc_map_pmk', '')]:.1f} "
                f"({int(t[('n_anchors', '')])} anchors, {iou_threshold_text(config.iou_threshold)}, "
                "worst frame = lowest per-image AP)."]

    def text(self, config: DetectionPmkConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        from ..engine.result_text import pct, text_table

        t = {(m, s): v for m, s, v in metrics}
        if ("map_pmk", "") not in t:
            return super().text(config, summary, metrics)
        lines = [f"mAP (%) at {iou_threshold_text(config.iou_threshold)}, {int(t[('n_anchors', '')])} anchors; "
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

    def summary(self, config: DetectionPmkConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        t = {(m, s): v for m, s, v in metrics}
        return {"task": "detection-pmk", "iou_threshold": config.iou_threshold,
                **{m: v for (m, s), v in t.items() if s == ""},
                "pmk_by_k": {s: v for (m, s), v in t.items() if m == "map_pmk" and s.startswith("k/")}}
