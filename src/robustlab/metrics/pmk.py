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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ._checks import format_examples, check_choice, check_nonempty_mapping, check_positive_int, to_builtin
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

_LABEL_MODES = ("frame", "anchor")
_FRAME_NUMBER = re.compile(r"(\d+)(?!.*\d)")
_FAST_KEY = re.compile(r"^(.+)/[^/]*?(\d+)[^/\d]*\.[A-Za-z]+$")


def frame_number(key: str) -> int:
    """The frame number in a key's file name: its last run of digits.

    ``val/ILSVRC2015_val_00007011/000123.JPEG`` -> 123 (ImageNet-Vid-Robust),
    ``KxDh7a8_AmU_44666/frame-1117.jpg`` -> 1117 (YTBB-Robust).

    Raises
    ------
    InputError
        When the file name holds no digits.
    """
    name = str(key).rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    match = _FRAME_NUMBER.search(stem)
    if match is None:
        raise InputError(
            f"frame key {key!r} has no frame number in its file name; frame files must be named "
            "like 000442.JPEG or frame-1117.jpg. Pass offsets={anchor: {neighbour: offset}} "
            "explicitly for other key formats."
        )
    return int(match.group(1))


def parse_frame_key(key: str) -> tuple[str, int]:
    """``(video folder, frame number)`` of a frame key: the folder part and the last run of
    digits in the file name.

    ``'val/ILSVRC2015_val_00007011/000123.JPEG'`` -> ``('val/ILSVRC2015_val_00007011', 123)``;
    ``'KxDh7a8_AmU_44666/frame-1117.jpg'`` -> ``('KxDh7a8_AmU_44666', 1117)``.
    """
    m = _FAST_KEY.match(key) if type(key) is str else None
    if m is not None:  # the common shape, one regex: <video>/<name><digits><non-digits>.<ext>
        return m.group(1), int(m.group(2))
    video, sep, _ = str(key).rpartition("/")
    if not sep or not video:
        raise InputError(
            f"cannot read a video and frame number from the frame key {key!r}; expected "
            "'<video folder>/<file with a frame number>' such as "
            "'val/ILSVRC2015_val_00007011/000123.JPEG' or 'KxDh7a8_AmU_44666/frame-1117.jpg'. "
            "Pass offsets={anchor: {neighbour: offset}} explicitly for other key formats."
        )
    return video, frame_number(key)


def _check_pmsets(pmsets: Any) -> dict[str, list[str]]:
    check_nonempty_mapping(pmsets, "pmsets")
    out = {}
    for anchor, neighbours in pmsets.items():
        if isinstance(neighbours, (str, bytes)) or not isinstance(neighbours, Iterable):
            raise InputError(
                f"pmsets[{anchor!r}] must be a list of neighbour keys, got {type(neighbours).__name__}."
            )
        nb = [str(n) for n in neighbours]
        if len(set(nb)) != len(nb):
            raise InputError(
                f"pmsets[{anchor!r}] lists a neighbour twice; each frame must appear once."
            )
        if str(anchor) in nb:
            raise InputError(f"pmsets[{anchor!r}] lists the anchor itself as a neighbour.")
        out[str(anchor)] = nb
    return out


def frame_offsets(pmsets: Mapping[str, Sequence[str]]) -> dict[str, dict[str, int]]:
    """``{anchor: {neighbour: frame offset}}`` parsed from the keys (neighbour - anchor).

    Raises :class:`InputError` when a key does not parse or a neighbour lies in another video.
    """
    return _offsets_of(_check_pmsets(pmsets))


def _offsets_of(sets: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for anchor, neighbours in sets.items():
        video, frame = parse_frame_key(anchor)
        row = {}
        for n in neighbours:
            v, f = parse_frame_key(n)
            if v != video:
                raise InputError(
                    f"neighbour {n!r} of anchor {anchor!r} is in another video ({v!r})."
                )
            row[n] = f - frame
        out[anchor] = row
    return out


def _resolve_offsets(
    sets: dict[str, list[str]], offsets: Any, *, required: bool
) -> dict[str, dict[str, int]] | None:
    if offsets is not None:
        check_nonempty_mapping(offsets, "offsets")
        out = {}
        for anchor, neighbours in sets.items():
            if not neighbours:
                out[anchor] = {}
                continue
            row = offsets.get(anchor)
            if not isinstance(row, Mapping):
                raise InputError(
                    f"offsets has no {{neighbour: offset}} mapping for anchor {anchor!r}."
                )
            missing = [n for n in neighbours if n not in row]
            if missing:
                raise InputError(f"offsets[{anchor!r}] lacks neighbour(s) {format_examples(missing)}.")
            vals = {}
            for n in neighbours:
                v = row[n]
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise InputError(
                        f"offsets[{anchor!r}][{n!r}] must be an integer frame offset, got {v!r}."
                    )
                vals[n] = int(v)
            out[anchor] = vals
        return out
    try:
        return _offsets_of(sets)
    except InputError:
        if required:
            raise
        return None


def _label_set(labels: Mapping, key: str) -> frozenset[int]:
    try:
        value = labels[key]
    except KeyError:
        raise InputError(
            f"labels has no entry for frame {key!r}; every evaluated frame needs labels."
        ) from None
    if type(value) is list and value and all(type(v) is int and v >= 0 for v in value):
        return frozenset(value)  # fast path: a JSON list of class indices
    items = [value] if isinstance(value, (int, np.integer)) else value
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InputError(f"labels[{key!r}] must be a class index or a list of them, got {value!r}.")
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 0:
            raise InputError(f"labels[{key!r}] must hold non-negative integer classes, got {v!r}.")
        out.append(int(v))
    if not out:
        raise InputError(f"labels[{key!r}] is empty; a frame needs at least one label.")
    return frozenset(out)


def _prediction(predictions: Mapping, key: str, name: str = "predictions") -> int:
    try:
        v = predictions[key]
    except KeyError:
        raise InputError(
            f"{name} has no prediction for frame {key!r}; predict every frame of every pm-k set."
        ) from None
    if type(v) is int and v >= 0:
        return v  # fast path
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v) or v != int(v):
            raise InputError(f"{name}[{key!r}] must be an integer class index, got {v!r}.")
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 0:
        raise InputError(f"{name}[{key!r}] must be a non-negative integer class index, got {v!r}.")
    return int(v)


def _check_frame_maps(predictions: Any, labels: Any, name: str = "predictions") -> None:
    """Validate every entry of ``predictions`` ({frame: class index}) and ``labels``
    ({frame: class index or list}) at entry, used or not: a bad value anywhere is an error,
    not something that passes because no pm-k set reaches it."""
    check_nonempty_mapping(predictions, name)
    check_nonempty_mapping(labels, "labels")
    for key in predictions:
        _prediction(predictions, key, name)
    for key in labels:
        _label_set(labels, key)


_FAR = np.iinfo(np.int64).max  # "no misclassified neighbour"


@dataclass
class _Scored:
    """Correctness of every frame of every pm-k set, flattened for vectorised pm-k.

    Neighbours of all anchors are concatenated in list order: anchor ``i`` owns the flat
    positions ``start[i]:start[i + 1]``.
    """

    anchors: list[str]
    anchor_correct: np.ndarray  # (A,) bool
    start: np.ndarray  # (A + 1,) int64
    neighbour_keys: list[str]  # (M,)
    neighbour_correct: np.ndarray  # (M,) bool
    distance: np.ndarray | None  # (M,) int64 |offset|, or None when unknown
    nearest: np.ndarray  # (A,) flat index of the breaking neighbour (over all k), -1: none
    nearest_wrong_distance: np.ndarray  # (A,) its |offset| (_FAR when none or unknown)

    def neighbours(self, i: int) -> list[str]:
        return self.neighbour_keys[self.start[i]:self.start[i + 1]]

    def owner(self) -> np.ndarray:
        """(M,) index of each flat neighbour's anchor."""
        return np.repeat(np.arange(len(self.anchors)), np.diff(self.start))


def _score(
    predictions, pmsets, labels, label_mode, offsets, *, need_offsets: bool, name="predictions"
) -> _Scored:
    check_choice(label_mode, "label_mode", _LABEL_MODES)
    _check_frame_maps(predictions, labels, name)
    sets = _check_pmsets(pmsets)
    offs = _resolve_offsets(sets, offsets, required=need_offsets)
    anchors = list(sets)
    a_ok = np.zeros(len(anchors), dtype=bool)
    sizes = np.fromiter((len(sets[a]) for a in anchors), dtype=np.int64, count=len(anchors))
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    keys: list[str] = []
    ok = np.zeros(int(start[-1]), dtype=bool)
    dist = np.zeros(int(start[-1]), dtype=np.int64) if offs is not None else None
    j = 0
    for i, anchor in enumerate(anchors):
        anchor_labels = _label_set(labels, anchor)
        a_ok[i] = _prediction(predictions, anchor, name) in anchor_labels
        row = sets[anchor]
        keys.extend(row)
        for n in row:
            judge = anchor_labels if label_mode == "anchor" else _label_set(labels, n)
            ok[j] = _prediction(predictions, n, name) in judge
            if dist is not None:
                dist[j] = abs(offs[anchor][n])
            j += 1
    # the breaking neighbour of each anchor: the misclassified one nearest to it (then list order)
    owner = np.repeat(np.arange(len(anchors)), sizes)
    position = np.arange(ok.size)
    wrong = np.flatnonzero(~ok)
    order = np.lexsort((position[wrong], (dist[wrong] if dist is not None else position[wrong]),
                        owner[wrong]))
    wrong = wrong[order]
    first = wrong[np.r_[True, owner[wrong][1:] != owner[wrong][:-1]]] if wrong.size else wrong
    nearest = np.full(len(anchors), -1, dtype=np.int64)
    nearest[owner[first]] = first
    nearest_dist = np.full(len(anchors), _FAR, dtype=np.int64)
    if dist is not None:
        nearest_dist[owner[first]] = dist[first]
    return _Scored(anchors, a_ok, start, keys, ok, dist, nearest, nearest_dist)


def _check_k(k: Any) -> int | None:
    if k is None:
        return None
    return check_positive_int(k, "k", minimum=0)


def _evaluate(s: _Scored, k: int | None) -> tuple[np.ndarray, list[str | None], int]:
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


def _result(s: _Scored, k: int | None, label_mode: str) -> PmkResult:
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
    kk = _check_k(k)
    s = _score(predictions, pmsets, labels, label_mode, offsets, need_offsets=kk is not None)
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
    klist = [_check_k(k) for k in ks]
    if not klist:
        raise InputError("ks is empty: give at least one k.")
    s = _score(predictions, pmsets, labels, label_mode, offsets,
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
    s = _score(predictions, pmsets, labels, label_mode, offsets, need_offsets=True)
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
    kk = _check_k(k)
    wrong_counts: np.ndarray | None = None
    scored = None
    for model, preds in predictions_by_model.items():
        scored = _score(
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
    check_choice(label_mode, "label_mode", _LABEL_MODES)
    check_nonempty_mapping(frames, "frames")
    _check_frame_maps(predictions, labels)
    correct = 0
    for anchor, frame in frames.items():
        lab = _label_set(labels, anchor if label_mode == "anchor" else frame)
        correct += _prediction(predictions, frame) in lab
    return AccuracyCount(len(frames), int(correct))


def pairs_at_distance(frames: Iterable[str], distance: int) -> list[tuple[str, str]]:
    """All (earlier, later) pairs among ``frames`` in the same video exactly ``distance``
    frames apart (keys parsed by :func:`parse_frame_key`), sorted."""
    d = check_positive_int(distance, "distance")
    index: dict[tuple[str, int], str] = {}
    for key in frames:
        index[parse_frame_key(key)] = str(key)
    if not index:
        raise InputError("frames is empty: give at least two frame keys.")
    pairs = [(key, index[(v, f + d)]) for (v, f), key in index.items() if (v, f + d) in index]
    return sorted(pairs)


def pmset_pairs(
    pmsets: Mapping[str, Sequence[str]],
    distance: int,
    *,
    offsets: Mapping[str, Mapping[str, int]] | None = None,
) -> list[tuple[str, str]]:
    """(anchor, neighbour) pairs whose |offset| is exactly ``distance``."""
    d = check_positive_int(distance, "distance")
    sets = _check_pmsets(pmsets)
    offs = _resolve_offsets(sets, offsets, required=True)
    return [(a, n) for a, row in sets.items() for n in row if abs(offs[a][n]) == d]


@dataclass(frozen=True)
class ConditionalResult:
    """P(second correct | first correct) over frame pairs (Gu et al. 2019)."""

    n_pairs: int
    n_first_correct: int
    n_both_correct: int

    @property
    def value(self) -> float:
        """The conditional accuracy (fraction); NaN when no first frame is correct."""
        return self.n_both_correct / self.n_first_correct if self.n_first_correct else float("nan")

    def interval(self, alpha: float = 0.05) -> tuple[float, float]:
        if not self.n_first_correct:
            raise InputError(
                "no pair has a correct first frame; the conditional accuracy is undefined."
            )
        return clopper_pearson(self.n_both_correct, self.n_first_correct, alpha=alpha)

    def to_dict(self) -> dict:
        return {
            "n_pairs": self.n_pairs,
            "n_first_correct": self.n_first_correct,
            "n_both_correct": self.n_both_correct,
            "value": self.value,
        }


def conditional_accuracy(
    predictions: Mapping[str, int],
    labels: Mapping[str, Any],
    pairs: Iterable[tuple[str, str]],
) -> ConditionalResult:
    """Gu et al. (2019): P(f(I_1) correct | f(I_0) correct) over pairs (I_0, I_1), typically
    frames exactly k apart (:func:`pairs_at_distance`, :func:`pmset_pairs`). Each frame is
    judged against its own labels."""
    _check_frame_maps(predictions, labels)
    plist = [tuple(p) for p in pairs]
    if not plist:
        raise InputError("pairs is empty: no frame pairs at this distance.")
    first = both = 0
    for p in plist:
        if len(p) != 2:
            raise InputError(f"each pair must be (first key, second key), got {p!r}.")
        a, b = str(p[0]), str(p[1])
        if _prediction(predictions, a) in _label_set(labels, a):
            first += 1
            both += _prediction(predictions, b) in _label_set(labels, b)
    return ConditionalResult(len(plist), first, int(both))


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
        for c in _label_set(labels, anchor):
            by_class.setdefault(c, []).append((ok, result.pmk_correct[anchor]))
    out = {}
    for c in sorted(by_class):
        arr = np.array(by_class[c], dtype=bool)
        out[c] = ClassAccuracy(len(arr), float(arr[:, 0].mean()), float(arr[:, 1].mean()))
    return out
