"""Frame pairs of pm-k sets and the conditional accuracy of Gu, Yang, D'Amour, Jia, Dean & Gilmer,
*Using Videos to Evaluate Image Model Robustness* (2019): P(second frame correct | first correct)
over pairs a fixed number of frames apart. Inputs as in :mod:`.pmk`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ._checks import check_positive_int
from .pmk_frames import check_frame_maps, check_pmsets, frame_prediction, label_set, parse_frame_key, resolve_offsets
from .stats import clopper_pearson

__all__ = ["ConditionalResult", "conditional_accuracy", "pairs_at_distance", "pmset_pairs"]


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
    sets = check_pmsets(pmsets)
    offs = resolve_offsets(sets, offsets, required=True)
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
    check_frame_maps(predictions, labels)
    plist = [tuple(p) for p in pairs]
    if not plist:
        raise InputError("pairs is empty: no frame pairs at this distance.")
    first = both = 0
    for p in plist:
        if len(p) != 2:
            raise InputError(f"each pair must be (first key, second key), got {p!r}.")
        a, b = str(p[0]), str(p[1])
        if frame_prediction(predictions, a) in label_set(labels, a):
            first += 1
            both += frame_prediction(predictions, b) in label_set(labels, b)
    return ConditionalResult(len(plist), first, int(both))
