"""Detection under corruption: P, mPC, rPC (Michaelis et al. 2019, Robust Detection Benchmark).

- P: performance on clean data (severity 0): COCO AP@[.5:.95], Pascal VOC07 AP50, Cityscapes AP.
- mPC: mean over the chosen corruptions (the 15 benchmark ones by default) and severities 1..5
  of the performance P_{c,s}.
- rPC: relative performance under corruption, with the convention explicit:

  ``"ratio-of-means"`` (default, published): rPC = mPC / P, where for per-class metrics (VOC)
  P and mPC are first averaged over classes. This is what the benchmark's own code computes
  (``np.mean(mPC) / np.mean(P)``) and what gives the published Pascal row
  80.5 / 48.6 / 60.4 from the reference pickle (rPC 0.6042).

  ``"mean-of-ratios"``: per class k, rPC_k = mPC_k / P_k, then the mean over classes
  (0.5993 for the same Pascal pickle, i.e. 59.9: *not* the published number). For scalar
  metrics (COCO AP) the two conventions coincide.

Input: ``{corruption: {severity: {metric: value}}}`` as returned by
:func:`robustlab.metrics.importers.read_mmdet_robustness_results`; ``value`` is a float or a
per-class array (class-mean is the dataset number). Values are fractions (0.363, not 36.3).

Also here: the RMSE-vs-rPC analysis of the paper (:func:`rmse_vs_rpc`, :func:`image_rmse`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..errors import InputError
from ._checks import as_bounded_array, check_nonempty_mapping, numbers_only
from .corruption import corruption_subset

__all__ = ["CorruptionPerformance", "RmseRpcAnalysis", "check_performance", "image_rmse",
           "performance_under_corruption", "rmse_vs_rpc", "rpc_undefined_reason"]

RpcConvention = Literal["ratio-of-means", "mean-of-ratios"]
SEVERITIES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class CorruptionPerformance:
    """P / mPC / rPC of one metric, with the breakdowns behind them (all fractions).

    Attributes
    ----------
    metric : metric name (``"AP"``, ``"AP50"``...).
    P, mPC, rPC : clean performance, mean performance under corruption, relative performance.
    rpc_convention : ``"ratio-of-means"`` or ``"mean-of-ratios"`` (see module docstring).
    corruptions, severities : the cells averaged.
    per_cell : ``{(corruption, severity): P_cs}`` (class-mean for per-class metrics).
    per_corruption : ``{corruption: mean over severities}``.
    per_severity : ``{severity: mean over corruptions}``.
    relative_per_cell, relative_per_corruption, relative_per_severity : the same divided by P
        under the chosen convention.
    P_per_class, mPC_per_class : per-class arrays for per-class metrics, else None.
    """

    metric: str
    P: float
    mPC: float
    rPC: float
    rpc_convention: str
    corruptions: tuple[str, ...]
    severities: tuple[int, ...]
    per_cell: dict[tuple[str, int], float]
    per_corruption: dict[str, float]
    per_severity: dict[int, float]
    relative_per_cell: dict[tuple[str, int], float]
    relative_per_corruption: dict[str, float]
    relative_per_severity: dict[int, float]
    P_per_class: np.ndarray | None = None
    mPC_per_class: np.ndarray | None = None

    def rounded(self, digits: int = 1) -> tuple[float, float, float]:
        """(P, mPC, rPC) in percent, rounded as papers print them (36.3 / 18.2 / 50.2)."""
        return tuple(round(100.0 * v, digits) for v in (self.P, self.mPC, self.rPC))  # type: ignore[return-value]


def _cell_array(results: Mapping[str, Any], corruption: str, severity: int, metric: str) -> np.ndarray:
    try:
        value = results[corruption][severity][metric]
    except KeyError:
        raise InputError(f"results have no {metric!r} for corruption {corruption!r} severity "
                         f"{severity}; the file covers {sorted(results)}.") from None
    try:
        arr = np.atleast_1d(numbers_only(value, f"{metric!r} of {corruption!r} severity {severity}").astype(np.float64))
    except InputError as exc:  # text, booleans, None...: not a performance number
        raise InputError(f"{metric!r} of {corruption!r} severity {severity} must be a finite number or per-class "
                         f"vector, got {value!r:.60} ({exc}).") from None
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise InputError(f"{metric!r} of {corruption!r} severity {severity} must be a finite "
                         f"number or per-class vector, got {value!r}.")
    check_performance(arr, f"{metric!r} of {corruption!r} severity {severity}")
    return arr


def rpc_undefined_reason(p: float, rpc: float) -> str | None:
    """Why rPC is NaN (one sentence), or None when it is a number.

    rPC = mPC / P has no value when the clean performance P is 0: the detector found nothing
    right on clean images, which usually means its labels do not match the dataset's categories.
    """
    if not (isinstance(rpc, float) and np.isnan(rpc)):
        return None
    if p == 0:
        return ("rPC is undefined (nan) because the clean performance P is 0: the detector found nothing right "
                "on clean images; check that its labels match the dataset's categories (label_map, label_offset).")
    return "rPC is undefined (nan): a per-class clean performance is 0 under the mean-of-ratios convention."


def check_performance(values: np.ndarray, name: str) -> None:
    """Raise InputError unless every value is a fraction in [0, 1] (AP, AR: 0.363, not 36.3).

    COCO's ``-1`` (a metric without ground truth, e.g. APs on an image set with no small
    objects) is named as such: it cannot be averaged into mPC.
    """
    if np.all((values >= 0) & (values <= 1)):
        return
    if np.any(values == -1):
        raise InputError(f"{name} is -1, COCO's marker of a metric with no ground truth: it cannot be averaged "
                         "into mPC. Leave this metric out (metrics=[...]).")
    hint = " They look like percentages: divide by 100." if np.all((values >= 0) & (values <= 100)) else ""
    raise InputError(f"{name} must be fractions in [0, 1]; got values in [{values.min():g}, {values.max():g}].{hint}")


def _clean_array(results: Mapping[str, Any], metric: str, corruptions: Sequence[str],
                 clean: Any) -> np.ndarray:
    if clean is not None:
        arr = np.atleast_1d(numbers_only(clean, "clean").astype(np.float64))
        if not np.all(np.isfinite(arr)) or arr.size == 0:
            raise InputError(f"clean performance {clean!r} must be finite.")
        check_performance(arr, "clean")
        return arr
    found = [_cell_array(results, c, 0, metric) for c in results
             if isinstance(results[c], Mapping) and 0 in results[c] and metric in results[c][0]]
    if not found:
        raise InputError(f"results have no severity-0 (clean) entry for {metric!r}; pass clean=P.")
    first = found[0]
    for other in found[1:]:
        if other.shape != first.shape or not np.allclose(other, first, rtol=0, atol=1e-12):
            raise InputError(f"the clean (severity 0) {metric!r} differs between corruptions "
                             f"({first.mean():.6f} vs {other.mean():.6f}); pass clean=P explicitly.")
    return first


def _metric_names(results: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for by_sev in results.values():
        for cell in by_sev.values():
            names.extend(k for k in cell if k not in names)
    return names


def performance_under_corruption(results: Mapping[str, Mapping[int, Mapping[str, Any]]], *,
                                 metrics: str | Sequence[str] | None = None,
                                 corruptions: str | Sequence[str] = "benchmark",
                                 severities: Sequence[int] = SEVERITIES,
                                 rpc: RpcConvention = "ratio-of-means",
                                 clean: Any = None) -> dict[str, CorruptionPerformance]:
    """P, mPC and rPC per metric, with per-corruption and per-severity breakdowns.

    Parameters
    ----------
    results : ``{corruption: {severity: {metric: value}}}``; severity 0 is clean. Values are
        fractions, scalars (COCO) or per-class vectors (VOC AP50 per class).
    metrics : metric name(s) to report; default all found.
    corruptions : ``"benchmark"`` (15, default: the published mPC), ``"holdout"`` (4),
        ``"all"`` (19) or a list of names.
    severities : severities averaged for mPC (1..5).
    rpc : ``"ratio-of-means"`` (published) or ``"mean-of-ratios"`` (per class, then mean).
    clean : clean performance to use instead of the severity-0 entries (scalar or per class).

    Returns
    -------
    ``{metric: CorruptionPerformance}``.
    """
    if not isinstance(results, Mapping) or not results:
        raise InputError("results must be a non-empty {corruption: {severity: {metric: value}}} mapping.")
    if rpc not in ("ratio-of-means", "mean-of-ratios"):
        raise InputError(f"rpc convention {rpc!r}: use 'ratio-of-means' or 'mean-of-ratios'.")
    names = corruption_subset(corruptions)
    missing = [c for c in names if c not in results]
    if missing:
        raise InputError(f"results lack corruptions {missing}; they cover {sorted(results)}. "
                         "Choose corruptions='all'/'holdout' or a list that matches.")
    sevs = tuple(int(s) for s in severities)
    if not sevs or any(s < 1 for s in sevs):
        raise InputError(f"severities {severities!r} must be a non-empty list of integers >= 1.")
    wanted = [metrics] if isinstance(metrics, str) else list(metrics or _metric_names(results))
    out: dict[str, CorruptionPerformance] = {}
    for metric in wanted:
        p_vec = _clean_array(results, metric, names, clean)
        cells = {(c, s): _cell_array(results, c, s, metric) for c in names for s in sevs}
        if any(v.shape != p_vec.shape for v in cells.values()):
            raise InputError(f"{metric!r}: per-class vectors differ in length from the clean one "
                             f"({p_vec.size} classes).")
        if rpc == "mean-of-ratios" and np.any(p_vec == 0):
            raise InputError(f"{metric!r}: a class has clean performance 0, so its ratio is undefined; "
                             "use rpc='ratio-of-means'.")

        def relative(vectors: list[np.ndarray]) -> float:
            mean_vec = np.mean(vectors, axis=0)
            if rpc == "ratio-of-means":
                return float(mean_vec.mean() / p_vec.mean()) if p_vec.mean() != 0 else float("nan")
            return float(np.mean(mean_vec / p_vec))

        all_vectors = list(cells.values())
        p = float(p_vec.mean())
        mpc_vec = np.mean(all_vectors, axis=0)
        out[metric] = CorruptionPerformance(
            metric=metric, P=p, mPC=float(mpc_vec.mean()), rPC=relative(all_vectors),
            rpc_convention=rpc, corruptions=tuple(names), severities=sevs,
            per_cell={k: float(v.mean()) for k, v in cells.items()},
            per_corruption={c: float(np.mean([cells[c, s] for s in sevs])) for c in names},
            per_severity={s: float(np.mean([cells[c, s] for c in names])) for s in sevs},
            relative_per_cell={k: relative([v]) for k, v in cells.items()},
            relative_per_corruption={c: relative([cells[c, s] for s in sevs]) for c in names},
            relative_per_severity={s: relative([cells[c, s] for c in names]) for s in sevs},
            P_per_class=p_vec.copy() if p_vec.size > 1 else None,
            mPC_per_class=mpc_vec if p_vec.size > 1 else None,
        )
    return out


# ---------------------------------------------------------------------------------------------
# RMSE vs rPC


def image_rmse(clean: np.ndarray, corrupted: np.ndarray) -> float:
    """Root mean squared pixel difference of two uint8 images of the same shape (0..255 units).

    Computed in float64. (The benchmark's ``calc_rmse.py`` subtracted the uint8 arrays
    directly, which wraps around modulo 256; its published RMSE table carries that artefact.)
    """
    a = as_bounded_array(clean, "clean", 0, 255, what="pixel values")
    b = as_bounded_array(corrupted, "corrupted", 0, 255, what="pixel values")
    if a.shape != b.shape or a.size == 0:
        raise InputError(f"image_rmse: the images must have the same non-empty shape, got {a.shape} and {b.shape}.")
    diff = a.astype(np.float64) - b.astype(np.float64)
    return float(np.sqrt(np.mean(diff * diff)))


@dataclass(frozen=True)
class RmseRpcAnalysis:
    """Perturbation size against relative performance, with a least-squares line.

    Attributes
    ----------
    rows : one dict per point: ``corruption``, ``severity`` (None when averaged over
        severities), ``rmse`` (0..255 pixel units) and ``rpc`` (fraction).
    slope, intercept : the fitted line rpc = slope * rmse + intercept.
    pearson_r : correlation of rmse and rpc (NaN when either is constant).
    by : ``"corruption"`` (one point per corruption, the paper's figure) or ``"cell"``.
    """

    rows: list[dict[str, Any]]
    slope: float
    intercept: float
    pearson_r: float
    by: str

    def predict(self, rmse: np.ndarray | float) -> np.ndarray:
        """rPC on the fitted line at ``rmse``."""
        return self.slope * np.asarray(rmse, np.float64) + self.intercept


def _table(table: Any, name: str, what: str, high: float = np.inf) -> dict[str, dict[int, float]]:
    """``{corruption: {severity: value}}`` with every value a finite number in [0, high]."""
    check_nonempty_mapping(table, name)
    out: dict[str, dict[int, float]] = {}
    for c, by_s in table.items():
        check_nonempty_mapping(by_s, f"{name}[{c!r}]")
        out[str(c)] = {}
        for s, v in by_s.items():
            if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
                raise InputError(f"{name}[{c!r}] has severity {s!r}; severities are integers.")
            out[str(c)][int(s)] = float(as_bounded_array(v, f"{name}[{c!r}][{s}]", 0, high, what=what, ndim=0))
    return out


def rmse_vs_rpc(rmse: Mapping[str, Mapping[int, float]],
                relative: CorruptionPerformance | Mapping[str, Mapping[int, float]], *,
                by: Literal["corruption", "cell"] = "corruption",
                corruptions: str | Sequence[str] | None = None) -> RmseRpcAnalysis:
    """The paper's RMSE-vs-rPC analysis: does a bigger pixel change mean a bigger drop?

    Parameters
    ----------
    rmse : ``{corruption: {severity: RMSE}}`` between clean and corrupted images (mean over
        the test set; :func:`image_rmse` per image, or :func:`~robustlab.metrics.importers.read_rmse_csv`).
    relative : a :class:`CorruptionPerformance` (its ``relative_per_cell`` is used) or
        ``{corruption: {severity: P_cs / P}}``.
    by : ``"corruption"``: one point per corruption, RMSE and rPC averaged over severities
        (the paper's figure); ``"cell"``: one point per (corruption, severity).
    corruptions : subset to use; default the corruptions of ``relative``.

    Returns
    -------
    :class:`RmseRpcAnalysis` with the table and the least-squares line.
    """
    if isinstance(relative, CorruptionPerformance):
        rel: dict[str, dict[int, float]] = {}
        for (c, s), v in relative.relative_per_cell.items():
            rel.setdefault(c, {})[s] = v
    else:
        rel = _table(relative, "relative", "relative performance")
    rmse = _table(rmse, "rmse", "an RMSE in 0..255 pixel units", high=255.0)
    names = corruption_subset(corruptions) if corruptions is not None else tuple(rel)
    if by not in ("corruption", "cell"):
        raise InputError(f"by={by!r}: use 'corruption' or 'cell'.")
    rows: list[dict[str, Any]] = []
    for c in names:
        if c not in rel or c not in rmse:
            raise InputError(f"corruption {c!r} is missing from the {'rmse' if c not in rmse else 'relative'} table.")
        sevs = sorted(s for s in rel[c] if s >= 1)
        absent = [s for s in sevs if s not in rmse[c]]
        if absent:
            raise InputError(f"rmse has no value for {c!r} severities {absent}.")
        pairs = [(float(rmse[c][s]), float(rel[c][s]), s) for s in sevs]
        if not all(np.isfinite(x) and np.isfinite(y) for x, y, _ in pairs):
            raise InputError(f"{c!r}: RMSE and rPC values must be finite.")
        if by == "cell":
            rows.extend({"corruption": c, "severity": s, "rmse": x, "rpc": y} for x, y, s in pairs)
        else:
            rows.append({"corruption": c, "severity": None,
                         "rmse": float(np.mean([p[0] for p in pairs])),
                         "rpc": float(np.mean([p[1] for p in pairs]))})
    x = np.array([r["rmse"] for r in rows])
    y = np.array([r["rpc"] for r in rows])
    if len(rows) < 2 or np.ptp(x) == 0:
        raise InputError("rmse_vs_rpc needs at least two points with different RMSE to fit a line.")
    slope, intercept = np.polyfit(x, y, 1)
    r = float(np.corrcoef(x, y)[0, 1]) if np.ptp(y) > 0 else float("nan")
    return RmseRpcAnalysis(rows=rows, slope=float(slope), intercept=float(intercept),
                           pearson_r=r, by=by)
