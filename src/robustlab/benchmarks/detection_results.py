"""Scoring stored detections, P / mPC / rPC rows, and the results files users exchange.

- :func:`score_setting` -- COCO AP family (faster-coco-eval) or VOC AP50 of one setting.
- :func:`robustness_rows` -- metric rows (name, setting, value) from ``{corruption: {severity:
  metrics}}``: the cells, then P, mPC and rPC per metric, per corruption and per severity.
- :func:`nesting_from_rows` / :func:`write_mmdet_pickle` / :func:`write_json` / :func:`write_csv`
  -- export in mmdetection's ``test_robustness.py`` nesting ``{corruption: {severity: metrics}}``
  (severity 0 = clean; COCO cells ``{'bbox': {'AP': ..}}``, VOC cells a list of ``{'ap': ..}``
  per class), as plain dicts/lists/floats.
- :func:`format_robustness_table` -- the P/mPC/rPC table printed by ``robustlab import-mmdet``.

Metric row names (all values fractions, 0.363 = 36.3):

- ``<metric>`` per setting ``clean`` / ``<corruption>/<severity>``: ``AP``, ``AP50``, ... (COCO)
  or ``AP50`` (VOC); ``AP50:<class>`` per VOC class;
- ``P:<metric>``, ``mPC:<metric>``, ``rPC:<metric>`` for the whole run (setting ``""``), per
  corruption (setting ``<corruption>``) and per severity (setting ``severity/<s>``);
- ``P``, ``mPC``, ``rPC`` (setting ``""``): the benchmark's headline metric (COCO AP,
  VOC AP50, Cityscapes AP).
"""

from __future__ import annotations

import csv
import io
import json
import math
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.setting import Setting
from ..errors import InputError
from ..fsutil import atomic_write_bytes, atomic_write_text
from ..metrics.detection import COCO_STAT_NAMES, coco_metrics, to_coco_results, voc_ap50
from ..metrics.under_corruption import CorruptionPerformance, performance_under_corruption, rpc_undefined_reason

CLEAN = "clean"
MetricRow = tuple[str, str, float]


# --- scoring one setting ---------------------------------------------------------------------------


def score_setting(kind: str, ground_truth: Mapping[str, Any] | Sequence[Any], image_ids: Sequence[Any],
                  detections: Sequence[Mapping[str, np.ndarray]], *, ap_method: str = "11-point",
                  class_names: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Metrics of one setting: ``{name: float}`` (COCO) or ``{"AP50": per-class array}`` (VOC).

    Parameters
    ----------
    kind : ``"coco"`` (ground_truth: a COCO instances dict) or ``"voc"`` (ground_truth: the
        per-image samples, aligned with ``detections``).
    image_ids : the dataset's image ids, aligned with ``detections``.

    Notes
    -----
    COCO numbers COCOeval cannot define (-1, e.g. APs without small objects) are left out.
    VOC's per-class vector covers the classes with ground truth, in label order.
    """
    if kind == "coco":
        stats = coco_metrics(ground_truth, to_coco_results(list(image_ids), list(detections)))
        return {k: v for k, v in stats.items() if v >= 0}
    if kind == "voc":
        _, per_class = voc_ap50(list(ground_truth), list(detections), method=ap_method,  # type: ignore[arg-type]
                                image_ids=list(image_ids))
        labels = sorted(per_class)
        return {"AP50": np.asarray([per_class[k] for k in labels], np.float64), "_classes": labels}
    raise InputError(f"metric kind {kind!r}: use 'coco' or 'voc'.")


# --- rows ------------------------------------------------------------------------------------------------


def _cell_rows(setting: str, cell: Mapping[str, Any], class_names: Mapping[int, str] | None) -> list[MetricRow]:
    rows = []
    for name, value in cell.items():
        if name.startswith("_"):
            continue
        arr = np.atleast_1d(np.asarray(value, np.float64))
        rows.append((name, setting, float(arr.mean())))
        if arr.size > 1 or "_classes" in cell:
            for label, v in zip(cell.get("_classes", range(arr.size)), arr):
                cname = (class_names or {}).get(int(label), str(label))
                rows.append((f"{name}:{cname}", setting, float(v)))
    return rows


def robustness_rows(nested: Mapping[str, Mapping[int, Mapping[str, Any]]], *, corruptions: Sequence[str],
                    severities: Sequence[int], headline: str, rpc: str = "ratio-of-means",
                    class_names: Mapping[int, str] | None = None
                    ) -> tuple[list[MetricRow], dict[str, CorruptionPerformance]]:
    """Rows for every cell and P / mPC / rPC per metric (see module docstring), and the
    :class:`~robustlab.metrics.under_corruption.CorruptionPerformance` behind them."""
    rows: list[MetricRow] = []
    clean = next((by_s[0] for by_s in nested.values() if 0 in by_s), None)
    if clean is not None:
        rows += _cell_rows(CLEAN, clean, class_names)
    for c in corruptions:
        for s in severities:
            if s in nested.get(c, {}):
                rows += _cell_rows(f"{c}/{s}", nested[c][s], class_names)
    perf: dict[str, CorruptionPerformance] = {}
    if clean is None:
        return rows, perf
    complete = all(s in nested.get(c, {}) for c in corruptions for s in severities)
    if not complete:
        return rows, perf
    metric_names = [m for m in clean if not m.startswith("_")
                    and all(m in nested[c][s] for c in corruptions for s in severities)]
    plain = {c: {s: {m: v for m, v in cell.items() if m in metric_names} for s, cell in nested[c].items()}
             for c in corruptions}
    perf = performance_under_corruption(plain, metrics=metric_names, corruptions=list(corruptions),
                                        severities=list(severities), rpc=rpc)  # type: ignore[arg-type]
    for m, p in perf.items():
        rows += [(f"P:{m}", "", p.P), (f"mPC:{m}", "", p.mPC), (f"rPC:{m}", "", p.rPC)]
        rows += [(f"mPC:{m}", c, v) for c, v in p.per_corruption.items()]
        rows += [(f"rPC:{m}", c, v) for c, v in p.relative_per_corruption.items()]
        rows += [(f"mPC:{m}", f"severity/{s}", v) for s, v in p.per_severity.items()]
        rows += [(f"rPC:{m}", f"severity/{s}", v) for s, v in p.relative_per_severity.items()]
    if headline in perf:
        p = perf[headline]
        rows += [("P", "", p.P), ("mPC", "", p.mPC), ("rPC", "", p.rPC)]
    return rows, perf


# --- nesting (export) ---------------------------------------------------------------------------------


def nesting_from_rows(rows: Sequence[MetricRow], *, kind: str, corruptions: Sequence[str],
                      severities: Sequence[int], class_order: Sequence[str] | None = None
                      ) -> dict[str, dict[int, Any]]:
    """mmdetection's ``{corruption: {severity: metrics}}`` from stored rows (severity 0 = clean).

    COCO kind: ``{'bbox': {'AP': float, ...}}``; VOC kind: ``[{'ap': float}, ...]`` per class
    (``class_order``: the per-class row suffixes in order; default as stored).
    """
    table: dict[str, dict[str, float]] = {}
    for name, setting, value in rows:
        table.setdefault(setting, {})[name] = float(value)

    def cell(setting: str) -> Any:
        values = table.get(setting)
        if values is None:
            return None
        if kind == "voc":
            names = class_order or [n.split(":", 1)[1] for n in values if n.startswith("AP50:")]
            return [{"ap": values[f"AP50:{n}"]} for n in names if f"AP50:{n}" in values]
        return {"bbox": {k: values[k] for k in COCO_STAT_NAMES if k in values}}

    out: dict[str, dict[int, Any]] = {}
    clean = cell(CLEAN)
    for c in corruptions:
        by_s: dict[int, Any] = {}
        if clean is not None:
            by_s[0] = clean
        for s in severities:
            value = cell(f"{c}/{s}")
            if value is not None:
                by_s[int(s)] = value
        out[c] = by_s
    return out


def write_mmdet_pickle(nested: Mapping[str, Mapping[int, Any]], path: str | Path) -> Path:
    """Write the nesting as mmdetection's results pickle (plain dicts/lists/floats, protocol 2),
    readable by :func:`robustlab.metrics.importers.read_mmdet_robustness_results`."""
    return atomic_write_bytes(Path(path), pickle.dumps(_plain(nested), protocol=2))


def write_json(nested: Mapping[str, Mapping[int, Any]], path: str | Path) -> Path:
    """The nesting as JSON (severity keys become strings)."""
    return atomic_write_text(Path(path), json.dumps(_plain(nested), indent=1) + "\n")


def write_csv(rows: Sequence[MetricRow], path: str | Path) -> Path:
    """All metric rows as ``metric,setting,value`` CSV."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["metric", "setting", "value"])
    for name, setting, value in rows:
        writer.writerow([name, setting, "" if value is None or math.isnan(value) else repr(float(value))])
    return atomic_write_text(Path(path), buf.getvalue())


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {(int(k) if isinstance(k, (int, np.integer)) else str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, float, np.integer, int)) and not isinstance(value, bool):
        return float(value)
    raise InputError(f"cannot export {type(value).__name__} values; results hold numbers only.")


# --- table ------------------------------------------------------------------------------------------------


def format_robustness_table(perf: Mapping[str, CorruptionPerformance], *, headline: str | None = None) -> str:
    """P / mPC / rPC per metric and the per-corruption breakdown of the headline metric (percent)."""
    if not perf:
        return "no P/mPC/rPC: the results lack the clean setting or a complete corruption x severity grid."
    first = next(iter(perf.values()))
    lines = [f"P / mPC / rPC (%), mPC over {len(first.corruptions)} corruptions x severities "
             f"{','.join(map(str, first.severities))}; rPC = mPC / P ({first.rpc_convention})",
             f"{'metric':<10}{'P':>8}{'mPC':>8}{'rPC':>8}"]
    for name, p in perf.items():
        lines.append(f"{name:<10}{100 * p.P:>8.1f}{100 * p.mPC:>8.1f}{100 * p.rPC:>8.1f}")
    head = perf.get(headline or "") or first
    lines += ["", f"{head.metric} per corruption (%)", f"{'corruption':<20}" + "".join(f"{'s' + str(s):>7}"
              for s in head.severities) + f"{'mPC':>7}{'rPC':>7}"]
    for c in head.corruptions:
        cells = "".join(f"{100 * head.per_cell[(c, s)]:>7.1f}" for s in head.severities)
        lines.append(f"{c:<20}{cells}{100 * head.per_corruption[c]:>7.1f}{100 * head.relative_per_corruption[c]:>7.1f}")
    reasons = {name: rpc_undefined_reason(p.P, p.rPC) for name, p in perf.items()}
    lines += [f"{name}: {reason}" for name, reason in reasons.items() if reason]
    return "\n".join(lines)


# --- RMSE vs rPC --------------------------------------------------------------------------------------------


def rmse_from_folders(clean_root: str | Path, corrupted_root: str | Path, relative: Sequence[str],
                      corruptions: Sequence[str], severities: Sequence[int]) -> dict[str, dict[int, float]]:
    """Mean RMSE (0..255) per (corruption, severity) between clean images and a stored corrupted copy.

    ``corrupted_root`` is in the ImageNet-C layout ``<corruption>/<severity>/<relative path>``
    (``robustlab corrupt`` output or a detection run's ``cache``); a file stored under another
    extension (``.png`` cache, ``.jpg`` output) is found by its stem.
    """
    from ..data.images import read_image
    from ..errors import DataError
    from ..metrics.under_corruption import image_rmse

    out: dict[str, dict[int, float]] = {}
    clean = {rel: read_image(Path(clean_root, rel)) for rel in relative}
    for c in corruptions:
        for s in severities:
            values = []
            for rel in relative:
                base = Path(corrupted_root, c, str(s), rel)
                found = base if base.is_file() else next(iter(sorted(base.parent.glob(base.stem + ".*"))), None)
                if found is None:
                    raise DataError(f"{base} is missing: the corrupted copy lacks {c}/{s} of {rel}.")
                values.append(image_rmse(clean[rel], read_image(found)))
            out.setdefault(c, {})[int(s)] = float(np.mean(values))
    return out


def rmse_rpc_analysis(result, rmse: Mapping[str, Mapping[int, float]] | None = None, *, by: str = "corruption"):
    """The paper's RMSE-vs-rPC analysis of a detection run (:func:`~robustlab.metrics.under_corruption.rmse_vs_rpc`).

    ``rmse`` defaults to the per-setting ``rmse`` rows the run measured while corrupting; the
    relative performance is the run's headline metric per cell divided by P.
    """
    from ..metrics.under_corruption import rmse_vs_rpc

    table = {(m, s): v for m, s, v in result.metrics}
    head = getattr(result.run_config, "headline", "AP")
    p = table.get((head, CLEAN))
    if p is None or p == 0:
        raise InputError(f"run {result.run_id} has no non-zero clean {head}; rPC is undefined.")
    rel: dict[str, dict[int, float]] = {}
    measured: dict[str, dict[int, float]] = {}
    for (m, setting), v in table.items():
        cell = Setting.parse(setting) if setting else None
        if cell is not None and cell.level is not None and cell.shift not in ("severity", "k"):
            if m == head:
                rel.setdefault(cell.shift, {})[cell.level] = v / p
            elif m == "rmse":
                measured.setdefault(cell.shift, {})[cell.level] = v
    return rmse_vs_rpc(rmse if rmse is not None else measured, rel, by=by)  # type: ignore[arg-type]
