"""Gather the stored runs a report shows: complete runs, with metrics, summaries and notes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..metrics.stats import clopper_pearson


def collect_results(store, runs: Iterable[str] | None = None, benchmarks: Iterable[str] | None = None) -> list:
    """:class:`~robustlab.engine.EvaluationResult` of the chosen runs (default: every complete run).

    ``runs`` are ids or unique prefixes; ``benchmarks`` filters by benchmark name. Runs that
    are not complete are skipped (a report never shows half a run); when ``runs`` is given
    explicitly an incomplete one is an error.
    """
    from ..engine.evaluation import load_result

    chosen = list(runs) if runs else None
    wanted = set(benchmarks) if benchmarks else None
    if chosen:
        records = [store.get_run(r) for r in chosen]
        for rec in records:
            if rec.status != "complete":
                raise InputError(f"run {rec.id} is {rec.status}: finish it (evaluate again) before reporting it.")
    else:
        records = [r for r in store.list_runs() if r.status == "complete"]
    results = []
    for rec in records:
        if wanted and rec.benchmark not in wanted:
            continue
        try:
            results.append(load_result(store, rec.id))
        except InputError:
            continue  # a benchmark plugin that is not installed here
    results.sort(key=lambda r: (r.benchmark, r.model, r.run_id))
    return results


@dataclass(frozen=True)
class Estimate:
    """A fraction with its exact 95% Clopper-Pearson interval (None bounds when n is unknown)."""

    value: float
    low: float | None = None
    high: float | None = None
    n: int | None = None

    @classmethod
    def from_fraction(cls, value: float, n: float | None, alpha: float = 0.05) -> "Estimate":
        if n is None or not n or not np.isfinite(value):
            return cls(float(value))
        k = int(round(value * n))
        lo, hi = clopper_pearson(k, int(n), alpha=alpha)
        return cls(float(value), float(lo), float(hi), int(n))

    def percent(self, digits: int = 1) -> str:
        text = f"{100 * self.value:.{digits}f}"
        if self.low is not None and self.high is not None:
            text += f" [{100 * self.low:.{digits}f}, {100 * self.high:.{digits}f}]"
        return text


def metric_table(result) -> Mapping[tuple[str, str], float]:
    """``{(name, setting): value}`` of a result's metric rows."""
    return {(m, s): v for m, s, v in result.metrics}


def short_model(name: str, width: int = 28) -> str:
    """A model name short enough for a legend, shortened in the middle: its source prefix and its
    end (the file, the callable, the options) stay, so ``python:…/models/net.py:build`` is not cut
    to ``…/models/net.py:build`` (or to a path's middle).

    >>> short_model("python:/home/me/experiments/2024/models/resnet_variant.py:build")
    'python:…net_variant.py:build'
    >>> short_model("timm:resnet18")
    'timm:resnet18'
    """
    if len(name) <= width:
        return name
    prefix = name.split(":", 1)[0] + ":" if ":" in name and len(name.split(":", 1)[0]) < width // 2 else ""
    return prefix + "…" + name[-(width - len(prefix) - 1):]
