"""Natural perturbations from video: pm-k accuracy and its relatives.

From Shankar, Dave, Roelofs, Ramanan, Recht & Schmidt, *Do Image Classifiers Generalize Across
Time?* (ICCV 2021; ImageNet-Vid-Robust and YTBB-Robust), and Gu, Yang, D'Amour, Jia, Dean &
Gilmer, *Using Videos to Evaluate Image Model Robustness* (2019) for the conditional metric.

Inputs
------
``predictions``
    ``{frame key: predicted class}`` (int, in the label space of ``labels``; for
    ImageNet-Vid-Robust the 30 VID classes after projecting the 1000-way scores).
``pmsets``
    ``{anchor key: [neighbour keys]}``: the reviewed frames near each anchor (an empty list
    is allowed: the anchor alone). ImageNet-Vid-Robust's ``pmsets.json`` has this format.
``labels``
    ``{frame key: [class, ...]}`` (or a single int). A prediction is correct when it is *any*
    of the labels (multi-label frames).
``label_mode``
    ``"frame"`` judges every frame against its own labels (ImageNet-Vid-Robust);
    ``"anchor"`` judges neighbours against their anchor's labels (YTBB-Robust).
``offsets``
    Neighbour offsets in frames (neighbour - anchor), needed for ``k`` and for ordering
    neighbours by distance. By default they are parsed from keys like
    ``val/ILSVRC2015_val_00007011/000123.JPEG`` or ``KxDh7a8_AmU_44666/frame-1117.jpg``
    (video folder / file name whose last run of digits is the frame number); give
    ``{anchor: {neighbour: offset}}`` for other naming schemes.

Definitions
-----------
* accuracy_original: fraction of anchors classified correctly;
* accuracy_pmk: fraction of anchors for which the anchor **and** every neighbour with
  |offset| <= k are correct (the worst case over the set; k = None keeps every neighbour);
* the *breaking frame* of an anchor: the anchor itself when it is wrong, else the
  misclassified neighbour nearest to it (smallest |offset|, then list order), None when the
  anchor survives.

Units: accuracies are fractions.

The pieces: :mod:`.pmk_frames` (keys, input checks, scoring), :mod:`.pmk_static` (the
model-independent set) and :mod:`.pmk_pairs` (frame pairs, the conditional accuracy); every name
is importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ._checks import check_positive_int, to_builtin
from .pmk_frames import ScoredSets, check_k, frame_number, frame_offsets, label_set, parse_frame_key, score_sets
from .pmk_pairs import ConditionalResult, conditional_accuracy, pairs_at_distance, pmset_pairs
from .pmk_static import AccuracyCount, static_accuracy, static_frames
from .stats import clopper_pearson

__all__ = [
    "frame_number",
    "parse_frame_key",
    "frame_offsets",
    "PmkResult",
    "pmk_accuracy",
    "pmk_accuracies",
    "PmkCurve",
    "pmk_accuracy_curve",
    "static_frames",
    "AccuracyCount",
    "static_accuracy",
    "pairs_at_distance",
    "pmset_pairs",
    "ConditionalResult",
    "conditional_accuracy",
    "ClassAccuracy",
    "per_class_accuracy",
]


def _evaluate(s: ScoredSets, k: int | None) -> tuple[np.ndarray, list[str | None], int]:
    """pm-k correctness per anchor, breaking frame per anchor, number of neighbours used.

    O(anchors) per k: the nearest misclassified neighbour over all offsets is the breaking
    frame for every k at least its distance.
    """
    if k is None:
        broken = s.nearest >= 0
        used = len(s.neighbour_keys)
    else:
        broken = s.nearest_wrong_distance <= k
        used = int(np.count_nonzero(s.distance <= k))
    pmk_ok = s.anchor_correct & ~broken
    breaking: list[str | None] = [
        anchor if not a_ok else (s.neighbour_keys[nb] if b else None)
        for anchor, a_ok, b, nb in zip(s.anchors, s.anchor_correct.tolist(), broken.tolist(),
                                       s.nearest.tolist())
    ]
    return pmk_ok, breaking, used


def _result(s: ScoredSets, k: int | None, label_mode: str) -> PmkResult:
    pmk_ok, breaking, used = _evaluate(s, k)
    return PmkResult(
        k=k,
        label_mode=label_mode,
        n_anchors=len(s.anchors),
        n_anchor_correct=int(s.anchor_correct.sum()),
        n_pmk_correct=int(pmk_ok.sum()),
        n_neighbours=used,
        anchor_correct=dict(zip(s.anchors, s.anchor_correct.tolist())),
        pmk_correct=dict(zip(s.anchors, pmk_ok.tolist())),
        breaking_frame=dict(zip(s.anchors, breaking)),
    )


@dataclass(frozen=True)
class PmkResult:
    """Result of :func:`pmk_accuracy` (fractions; per-anchor details keyed by anchor)."""

    k: int | None
    label_mode: str
    n_anchors: int
    n_anchor_correct: int
    n_pmk_correct: int
    n_neighbours: int
    anchor_correct: Mapping[str, bool]
    pmk_correct: Mapping[str, bool]
    breaking_frame: Mapping[str, str | None]

    @property
    def accuracy_original(self) -> float:
        """Fraction of anchors classified correctly."""
        return self.n_anchor_correct / self.n_anchors

    @property
    def accuracy_pmk(self) -> float:
        """Fraction of anchors whose whole pm-k set is classified correctly."""
        return self.n_pmk_correct / self.n_anchors

    @property
    def drop(self) -> float:
        """accuracy_original - accuracy_pmk (fraction; the papers print percentage points)."""
        return self.accuracy_original - self.accuracy_pmk

    def intervals(self, alpha: float = 0.05) -> dict[str, tuple[float, float]]:
        """Clopper-Pearson intervals of both accuracies."""
        return {
            "accuracy_original": clopper_pearson(
                self.n_anchor_correct, self.n_anchors, alpha=alpha
            ),
            "accuracy_pmk": clopper_pearson(self.n_pmk_correct, self.n_anchors, alpha=alpha),
        }

    def to_dict(self, *, per_anchor: bool = False, alpha: float = 0.05) -> dict:
        d = {
            "k": self.k,
            "label_mode": self.label_mode,
            "n_anchors": self.n_anchors,
            "n_anchor_correct": self.n_anchor_correct,
            "n_pmk_correct": self.n_pmk_correct,
            "n_neighbours": self.n_neighbours,
            "accuracy_original": self.accuracy_original,
            "accuracy_pmk": self.accuracy_pmk,
            "drop": self.drop,
            "intervals": {k: list(v) for k, v in self.intervals(alpha).items()},
        }
        if per_anchor:
            d["anchor_correct"] = dict(self.anchor_correct)
            d["pmk_correct"] = dict(self.pmk_correct)
            d["breaking_frame"] = dict(self.breaking_frame)
        return to_builtin(d)


def pmk_accuracy(
    predictions: Mapping[str, int],
    pmsets: Mapping[str, Sequence[str]],
    labels: Mapping[str, Any],
    *,
    k: int | None = None,
    label_mode: str = "frame",
    offsets: Mapping[str, Mapping[str, int]] | None = None,
) -> PmkResult:
    """Anchor accuracy and pm-k accuracy (Shankar et al. 2021), with the breaking frame per anchor.

    Parameters
    ----------
    predictions : Mapping[str, int]
        Top-1 class per frame key (every anchor and neighbour).
    pmsets : Mapping[str, Sequence[str]]
        ``{anchor: [neighbour keys]}``.
    labels : Mapping[str, list[int] | int]
        Label set per frame (per anchor suffices with ``label_mode="anchor"``).
    k : int, optional
        Keep neighbours with |offset| <= k (None: all; 0: the anchors alone).
    label_mode : {"frame", "anchor"}
        Judge neighbours against their own labels or the anchor's.
    offsets : Mapping, optional
        ``{anchor: {neighbour: offset}}``; parsed from the keys when omitted.

    Returns
    -------
    PmkResult
    """
    kk = check_k(k)
    s = score_sets(predictions, pmsets, labels, label_mode, offsets, need_offsets=kk is not None)
    return _result(s, kk, label_mode)


def pmk_accuracies(
    predictions: Mapping[str, int],
    pmsets: Mapping[str, Sequence[str]],
    labels: Mapping[str, Any],
    *,
    ks: Iterable[int | None] = range(11),
    label_mode: str = "frame",
    offsets: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[int | None, PmkResult]:
    """:func:`pmk_accuracy` for several k at once (frames are scored once; each k is O(anchors)).

    Parameters
    ----------
    ks : iterable of int or None
        The k values (default 0..10, the papers' curve); None keeps every neighbour.
    predictions, pmsets, labels, label_mode, offsets
        As in :func:`pmk_accuracy`.

    Returns
    -------
    dict
        ``{k: PmkResult}`` in the order of ``ks``. The full ImageNet-Vid-Robust set (1,109
        anchors, 21,070 neighbours) takes well under a second for k = 0..10.
    """
    klist = [check_k(k) for k in ks]
    if not klist:
        raise InputError("ks is empty: give at least one k.")
    s = score_sets(predictions, pmsets, labels, label_mode, offsets,
               need_offsets=any(k is not None for k in klist))
    return {k: _result(s, k, label_mode) for k in klist}


@dataclass(frozen=True)
class PmkCurve:
    """pm-k accuracy as a function of k (fractions)."""

    ks: tuple[int, ...]
    accuracy_original: float
    accuracy_pmk: tuple[float, ...]
    n_anchors: int
    n_pmk_correct: tuple[int, ...]

    def to_dict(self) -> dict:
        return to_builtin(
            {
                "ks": list(self.ks),
                "accuracy_original": self.accuracy_original,
                "accuracy_pmk": list(self.accuracy_pmk),
                "n_anchors": self.n_anchors,
                "n_pmk_correct": list(self.n_pmk_correct),
            }
        )


def pmk_accuracy_curve(
    predictions: Mapping[str, int],
    pmsets: Mapping[str, Sequence[str]],
    labels: Mapping[str, Any],
    *,
    ks: Iterable[int] | None = None,
    label_mode: str = "frame",
    offsets: Mapping[str, Mapping[str, int]] | None = None,
) -> PmkCurve:
    """pm-k accuracy for each k in ``ks`` (default 0..max |offset|): neighbours with
    |offset| <= k; k = 0 gives the anchor accuracy. Arguments as in :func:`pmk_accuracy`."""
    s = score_sets(predictions, pmsets, labels, label_mode, offsets, need_offsets=True)
    nearest_wrong = s.nearest_wrong_distance
    if ks is None:
        max_off = int(s.distance.max()) if s.distance.size else 0
        klist = list(range(0, max_off + 1))
    else:
        klist = [check_positive_int(k, "ks[i]", minimum=0) for k in ks]
        if not klist:
            raise InputError("ks is empty: give at least one k.")
    counts = tuple(int(np.sum(s.anchor_correct & (nearest_wrong > k))) for k in klist)
    n = len(s.anchors)
    return PmkCurve(
        tuple(klist), float(s.anchor_correct.mean()), tuple(c / n for c in counts), n, counts
    )


@dataclass(frozen=True)
class ClassAccuracy:
    """Original and pm-k accuracy of the anchors of one class (fractions)."""

    n_anchors: int
    accuracy_original: float
    accuracy_pmk: float

    def to_dict(self) -> dict:
        return {
            "n_anchors": self.n_anchors,
            "accuracy_original": self.accuracy_original,
            "accuracy_pmk": self.accuracy_pmk,
        }


def per_class_accuracy(result: PmkResult, labels: Mapping[str, Any]) -> dict[int, ClassAccuracy]:
    """Original and perturbed (pm-k) accuracy per class; an anchor counts for every class in
    its label set. Returns ``{class: ClassAccuracy}`` sorted by class."""
    if not isinstance(result, PmkResult):
        raise InputError(
            f"result must be a PmkResult from pmk_accuracy, got {type(result).__name__}."
        )
    by_class: dict[int, list[tuple[bool, bool]]] = {}
    for anchor, ok in result.anchor_correct.items():
        for c in label_set(labels, anchor):
            by_class.setdefault(c, []).append((ok, result.pmk_correct[anchor]))
    out = {}
    for c in sorted(by_class):
        arr = np.array(by_class[c], dtype=bool)
        out[c] = ClassAccuracy(len(arr), float(arr[:, 0].mean()), float(arr[:, 1].mean()))
    return out
