"""``mmdet-results``: an mmdetection robustness results pickle filed as a run (no model runs), and the
import and export of mmdetection's results (:func:`import_mmdet`, :func:`export_results`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..corruptions.checks import parse_severities
from ..engine.benchmark import Benchmark, MetricRow, Unit, get_benchmark, register_benchmark
from ..engine.options import Option
from ..engine.setting import Setting
from ..errors import DataError, InputError
from ..metrics.corruption import BENCHMARK_CORRUPTIONS
from ..metrics.importers import read_mmdet_robustness_results
from .corruption_config import CLEAN_SETTING, select_corruptions
from .detection_config import RPC_CONVENTIONS, CorruptedDetectionConfig, MmdetResultsConfig, choice_option
from .detection_results import (CLEAN, format_robustness_table, nesting_from_rows, robustness_rows, write_csv,
                                write_json, write_mmdet_pickle)


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
    config_class = MmdetResultsConfig
    presentation = "detection"
    options = (
        Option("corruptions", "str", help="Corruption names or subsets (default: the 15 benchmark ones when all are "
               "present, else all in the file).", flags=("-c",)),
        Option("severities", "str", help="Severities (default: those present for every chosen corruption).",
               flags=("-s",)),
        Option("rpc", "str", "ratio-of-means", help="rPC convention: ratio-of-means (published) or mean-of-ratios."),
        Option("task", "str", "bbox", help="bbox or segm (COCO-style files)."),
    )

    def configure(self, data: str, *, corruptions, severities, rpc, task) -> MmdetResultsConfig:
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
        return MmdetResultsConfig(data=str(path), sha256_16=hashlib.sha256(path.read_bytes()).hexdigest()[:16],
                                  results=_jsonable_cells(nested), corruptions=chosen, severities=sev,
                                  rpc=choice_option("rpc", rpc, RPC_CONVENTIONS), task=task, headline=headline,
                                  metric="voc" if headline == "AP50" else "coco",
                                  settings=[str(CLEAN_SETTING)] + [str(Setting(c, s)) for c in chosen for s in sev])

    def plan(self, config: MmdetResultsConfig) -> list[Unit]:
        return []

    def metrics(self, config: MmdetResultsConfig, predictions, related=None) -> list[MetricRow]:
        nested = {c: {int(s): cell for s, cell in by_s.items()} for c, by_s in config.results.items()}
        rows, _ = robustness_rows(nested, corruptions=config.corruptions, severities=config.severities,
                                  headline=config.headline, rpc=config.rpc)
        return rows


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
    try:
        task = getattr(get_benchmark(result.benchmark), "task", None)
    except InputError:  # a benchmark this installation does not know (a plugin that is gone)
        task = None
    config = result.run_config if task == "detection" else None
    has_cells = any(setting == CLEAN for _, setting, _ in result.metrics)
    if not has_cells or not isinstance(config, (CorruptedDetectionConfig, MmdetResultsConfig)):
        raise InputError(f"run {result.run_id} is a {result.benchmark} run, not a detection run under corruption: "
                         "export-detection exports runs of coco-c, voc-c, cityscapes-c, detection-corrupted and "
                         "mmdet-results (see `robustlab runs`).")
    if path.suffix == ".csv":
        return write_csv(result.metrics, path)
    nested = nesting_from_rows(result.metrics, kind=config.metric, corruptions=config.corruptions,
                               severities=config.severities)
    if path.suffix in (".pkl", ".pickle"):
        return write_mmdet_pickle(nested, path)
    if path.suffix == ".json":
        return write_json(nested, path)
    raise InputError(f"export to {path.name}: use a .pkl, .json or .csv file name.")
