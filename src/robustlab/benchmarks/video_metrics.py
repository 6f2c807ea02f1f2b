"""The metrics of the video pm-k benchmarks, from the stored per-frame predictions
(:mod:`robustlab.metrics.pmk`): pm-0 and pm-k with intervals, the accuracy-vs-k curve, per class,
conditional accuracy, the offsets that broke anchors, the static set, and how completely the set was
reviewed (see :mod:`.video`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from ..engine.presentation import MetricRow
from ..errors import DataError
from ..metrics.pmk import (conditional_accuracy, frame_offsets, per_class_accuracy, pmk_accuracies, static_accuracy,
                           static_frames)
from ..metrics.stats import clopper_pearson

#: The headline pm-k (the papers' pm-10) and the end of the accuracy-vs-k curve.
DEFAULT_K = 10


def frame_predictions(predictions: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, int]:
    """``{frame key: top-1 class}`` from a run's stored units (all units merged)."""
    out: dict[str, int] = {}
    for columns in predictions.values():
        if "prediction" not in columns:
            raise DataError("stored units have no 'prediction' column; they were not written by a video "
                            "benchmark run.")
        out.update(zip(columns["sample_id"].tolist(), columns["prediction"].astype(np.int64).tolist()))
    return out


def judged_labels(pmk_set) -> dict[str, list[int]]:
    """The labels each frame is judged by: its own (``frame`` mode) or its anchor's (``anchor``)."""
    if pmk_set.label_mode == "frame":
        return pmk_set.labels
    out = dict(pmk_set.labels)
    for anchor, neighbours in pmk_set.pmsets.items():
        for n in neighbours:
            out[n] = pmk_set.labels[anchor]
    return out


def complete_predictions(preds: Mapping[str, int], frames: Iterable[str], no_class: int) -> tuple[dict[str, int], list[str]]:
    """Predictions for every frame; frames without one (unreadable) count as wrong (``no_class``)."""
    out = dict(preds)
    missing = [f for f in frames if f not in out]
    for f in missing:
        out[f] = no_class
    return out, missing


def _interval_rows(name: str, setting: str, n_correct: int, n: int, alpha: float) -> list[MetricRow]:
    lo, hi = clopper_pearson(n_correct, n, alpha=alpha)
    return [(name, setting, n_correct / n), (f"{name}_low", setting, lo), (f"{name}_high", setting, hi)]


def pmk_metric_rows(pmk_set, predictions: Mapping[str, int], *, k: int = DEFAULT_K, alpha: float = 0.05,
                    static_predictions: Mapping[str, Mapping[str, int]] | None = None) -> list[MetricRow]:
    """Every metric of a video benchmark run from per-frame predictions (see the module docstring).

    Parameters
    ----------
    pmk_set : robustlab.video.PmkSet
    predictions : {frame key: class}
        Top-1 class per frame; missing frames count as wrong.
    k : int
        The headline pm-k; the curve covers 0..k.
    alpha : float
        1 - confidence of the Clopper-Pearson intervals.
    static_predictions : {model: predictions}, optional
        Other models' predictions; with them, ``static_accuracy`` of this model on the
        model-independent set chosen by all of them and this one.
    """
    n_classes = len(pmk_set.class_names)
    preds, missing = complete_predictions(predictions, pmk_set.frame_keys, n_classes)
    labels = judged_labels(pmk_set)
    results = pmk_accuracies(preds, pmk_set.pmsets, labels, ks=range(k + 1), label_mode=pmk_set.label_mode)
    head = results[k]
    n = head.n_anchors
    rows: list[MetricRow] = [("n_anchors", "", float(n)), ("n_neighbours", "", float(head.n_neighbours)),
                             ("n_frames", "", float(len(pmk_set.frame_keys))),
                             ("n_frames_unreadable", "", float(len(missing))), ("k", "", float(k))]
    rows += _interval_rows("accuracy_original", "", head.n_anchor_correct, n, alpha)
    rows += _interval_rows("accuracy_pmk", "", head.n_pmk_correct, n, alpha)
    rows.append(("accuracy_drop", "", head.drop))
    for kk, r in results.items():
        rows += _interval_rows("accuracy_pmk", f"k={kk}", r.n_pmk_correct, n, alpha)
        rows.append(("n_neighbours", f"k={kk}", float(r.n_neighbours)))
    for c, acc in per_class_accuracy(head, pmk_set.labels).items():
        setting = f"class/{pmk_set.class_names[c] if c < n_classes else c}"
        rows += [("class_n_anchors", setting, float(acc.n_anchors)),
                 ("class_accuracy_original", setting, acc.accuracy_original),
                 ("class_accuracy_pmk", setting, acc.accuracy_pmk)]
    offsets = frame_offsets(pmk_set.pmsets)
    pairs_at: dict[int, list[tuple[str, str]]] = {}
    for anchor, row in offsets.items():
        for neighbour, offset in row.items():
            pairs_at.setdefault(abs(offset), []).append((anchor, neighbour))
    for d in range(1, k + 1):
        if d not in pairs_at:
            continue
        cond = conditional_accuracy(preds, labels, pairs_at[d])
        rows += [("conditional_n_pairs", f"d={d}", float(cond.n_pairs)),
                 ("conditional_accuracy", f"d={d}", cond.value)]
    broken = [abs(offsets[a][f]) for a, f in head.breaking_frame.items() if f is not None and f != a]
    for d in range(1, k + 1):
        rows.append(("n_broken_at_offset", f"offset={d}", float(broken.count(d))))
    if static_predictions:
        everyone = {"this run": preds}
        for model, other in static_predictions.items():
            everyone[model] = complete_predictions(other, pmk_set.frame_keys, n_classes)[0]
        frames = static_frames(everyone, pmk_set.pmsets, labels, k=k, label_mode="frame")
        acc = static_accuracy(preds, frames, labels, label_mode="frame")
        rows += _interval_rows("static_accuracy", "", acc.n_correct, acc.n, alpha)
        rows.append(("static_n_models", "", float(len(everyone))))
    return rows


#: Written beside pmsets.json by ``robustlab video finalize`` (and the review app's Finalize).
FINALIZE_SUMMARY = "finalize_summary.json"


def review_rows(pmk_set) -> list[MetricRow]:
    """How completely the set was reviewed, from the ``finalize_summary.json`` beside its
    ``pmsets.json`` (none for a set without one, e.g. the published ImageNet-Vid-Robust).

    ``n_pairs_unreviewed``: the review app's count of tasks of the open round without any
    answer when the set was finalized (else finalize's count of candidate pairs without any
    review); ``n_pairs_partly_reviewed`` (review app only): tasks answered by only some
    annotators; ``review_open_round``: the round that was open.
    """
    pmsets_file = (getattr(pmk_set, "info", None) or {}).get("pmsets_file")
    if not pmsets_file:
        return []
    path = Path(pmsets_file).with_name(FINALIZE_SUMMARY)
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    if not isinstance(summary, dict):
        return []
    review = summary.get("review") if isinstance(summary.get("review"), dict) else {}
    counts = {"n_pairs_unreviewed": review.get("unreviewed", summary.get("pairs_unreviewed")),
              "n_pairs_partly_reviewed": review.get("partly_reviewed"), "review_open_round": review.get("open_round")}
    return [(name, "", float(v)) for name, v in counts.items()
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0]
