"""The model-independent ("static") pm-k set of Shankar et al. (2021): per anchor, the neighbour most
of the given models misclassify, and any model's accuracy on those frames. Inputs as in :mod:`.pmk`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import check_choice, check_nonempty_mapping
from .pmk_frames import LABEL_MODES, check_frame_maps, check_k, frame_prediction, label_set, score_sets
from .stats import clopper_pearson

__all__ = ["AccuracyCount", "static_accuracy", "static_frames"]


def static_frames(
    predictions_by_model: Mapping[str, Mapping[str, int]],
    pmsets: Mapping[str, Sequence[str]],
    labels: Mapping[str, Any],
    *,
    k: int | None = None,
    label_mode: str = "frame",
    offsets: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, str]:
    """The model-independent ("static") worst-case set: per anchor, the neighbour that most of
    the given models misclassify. Shankar et al. 2021, model-independent evaluation.

    Exactly which frame is scored for an anchor:

    1. The candidates are the anchor's neighbours (its ``pmsets`` list) with ``|offset| <= k``
       (every neighbour when ``k`` is None). The anchor itself is not a candidate.
    2. Each candidate's count is the number of models in ``predictions_by_model`` whose top-1
       prediction for it is wrong, judged against the frame's own labels
       (``label_mode="frame"``, ImageNet-Vid-Robust) or the anchor's (``"anchor"``, YTBB-Robust).
    3. The candidate with the highest count is chosen; ties go to the smallest ``|offset|``,
       then to the earliest position in the anchor's ``pmsets`` list (with ``k`` None and keys
       whose offsets cannot be parsed, list order alone).
    4. An anchor with no candidate (no neighbour, or none within ``k``) keeps itself.

    So a count of 0 still picks a neighbour (the nearest), and an anchor that every model gets
    wrong is not scored when it has a neighbour: the set holds one frame per anchor, the
    hardest neighbour for the given models, and a model's static accuracy
    (:func:`static_accuracy`) is its top-1 accuracy on those frames.

    Parameters
    ----------
    predictions_by_model : Mapping[str, Mapping[str, int]]
        ``{model name: predictions}``, each as in :func:`pmk_accuracy`.
    pmsets, labels, label_mode, offsets : as in :func:`pmk_accuracy`.
    k : int, optional
        Only neighbours with ``|offset| <= k`` are candidates (needs offsets, parsed from the
        frame keys when not given).

    Returns
    -------
    dict[str, str]
        ``{anchor: chosen frame key}``; score any model on it with :func:`static_accuracy`.
    """
    check_nonempty_mapping(predictions_by_model, "predictions_by_model")
    kk = check_k(k)
    wrong_counts: np.ndarray | None = None
    scored = None
    for model, preds in predictions_by_model.items():
        scored = score_sets(
            preds,
            pmsets,
            labels,
            label_mode,
            offsets,
            need_offsets=kk is not None,
            name=f"predictions_by_model[{model!r}]",
        )
        miss = (~scored.neighbour_correct).astype(np.int64)
        wrong_counts = miss if wrong_counts is None else wrong_counts + miss
    assert scored is not None and wrong_counts is not None
    owner = scored.owner()
    position = np.arange(owner.size)
    dist = scored.distance if scored.distance is not None else np.zeros(owner.size, np.int64)
    keep = position if kk is None else position[dist <= kk]
    # per anchor: most misclassifications first, then nearest, then list order
    order = keep[np.lexsort((keep, dist[keep], -wrong_counts[keep], owner[keep]))]
    first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]] if order.size else order
    chosen = dict(zip(owner[first].tolist(), first.tolist()))
    return {
        anchor: scored.neighbour_keys[chosen[i]] if i in chosen else anchor
        for i, anchor in enumerate(scored.anchors)
    }


@dataclass(frozen=True)
class AccuracyCount:
    """A plain accuracy with its counts (fraction)."""

    n: int
    n_correct: int

    @property
    def accuracy(self) -> float:
        return self.n_correct / self.n

    def interval(self, alpha: float = 0.05) -> tuple[float, float]:
        return clopper_pearson(self.n_correct, self.n, alpha=alpha)

    def to_dict(self) -> dict:
        return {"n": self.n, "n_correct": self.n_correct, "accuracy": self.accuracy}


def static_accuracy(
    predictions: Mapping[str, int],
    frames: Mapping[str, str],
    labels: Mapping[str, Any],
    *,
    label_mode: str = "frame",
) -> AccuracyCount:
    """Accuracy of one model on the static set ``{anchor: frame}`` of :func:`static_frames`."""
    check_choice(label_mode, "label_mode", LABEL_MODES)
    check_nonempty_mapping(frames, "frames")
    check_frame_maps(predictions, labels)
    correct = 0
    for anchor, frame in frames.items():
        lab = label_set(labels, anchor if label_mode == "anchor" else frame)
        correct += frame_prediction(predictions, frame) in lab
    return AccuracyCount(len(frames), int(correct))
