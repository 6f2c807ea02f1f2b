"""pm-k's inputs: frame keys parsed, pm-k sets, offsets, labels and predictions checked, and every
frame of every set scored once (:func:`score_sets`), for :mod:`.pmk`, :mod:`.pmk_static` and
:mod:`.pmk_pairs`. The formats are described in :mod:`.pmk`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ._checks import format_examples, check_choice, check_nonempty_mapping, check_positive_int

__all__ = ["LABEL_MODES", "ScoredSets", "check_frame_maps", "check_k", "check_pmsets", "frame_number", "frame_offsets",
           "frame_prediction", "label_set", "parse_frame_key", "resolve_offsets", "score_sets"]

#: How neighbours are judged: against their own labels (``frame``) or their anchor's (``anchor``).
LABEL_MODES = ("frame", "anchor")
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


def check_pmsets(pmsets: Any) -> dict[str, list[str]]:
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
    return _offsets_of(check_pmsets(pmsets))


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


def resolve_offsets(
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


def label_set(labels: Mapping, key: str) -> frozenset[int]:
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


def frame_prediction(predictions: Mapping, key: str, name: str = "predictions") -> int:
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


def check_frame_maps(predictions: Any, labels: Any, name: str = "predictions") -> None:
    """Validate every entry of ``predictions`` ({frame: class index}) and ``labels``
    ({frame: class index or list}) at entry, used or not: a bad value anywhere is an error,
    not something that passes because no pm-k set reaches it."""
    check_nonempty_mapping(predictions, name)
    check_nonempty_mapping(labels, "labels")
    for key in predictions:
        frame_prediction(predictions, key, name)
    for key in labels:
        label_set(labels, key)


_FAR = np.iinfo(np.int64).max  # "no misclassified neighbour"


@dataclass
class ScoredSets:
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


def score_sets(
    predictions, pmsets, labels, label_mode, offsets, *, need_offsets: bool, name="predictions"
) -> ScoredSets:
    check_choice(label_mode, "label_mode", LABEL_MODES)
    check_frame_maps(predictions, labels, name)
    sets = check_pmsets(pmsets)
    offs = resolve_offsets(sets, offsets, required=need_offsets)
    anchors = list(sets)
    a_ok = np.zeros(len(anchors), dtype=bool)
    sizes = np.fromiter((len(sets[a]) for a in anchors), dtype=np.int64, count=len(anchors))
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    keys: list[str] = []
    ok = np.zeros(int(start[-1]), dtype=bool)
    dist = np.zeros(int(start[-1]), dtype=np.int64) if offs is not None else None
    j = 0
    for i, anchor in enumerate(anchors):
        anchor_labels = label_set(labels, anchor)
        a_ok[i] = frame_prediction(predictions, anchor, name) in anchor_labels
        row = sets[anchor]
        keys.extend(row)
        for n in row:
            judge = anchor_labels if label_mode == "anchor" else label_set(labels, n)
            ok[j] = frame_prediction(predictions, n, name) in judge
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
    return ScoredSets(anchors, a_ok, start, keys, ok, dist, nearest, nearest_dist)


def check_k(k: Any) -> int | None:
    if k is None:
        return None
    return check_positive_int(k, "k", minimum=0)
