"""What the rounds and the admin page compute from saved answers (pure functions, no I/O).

- :func:`round2_pairs`: the pairs round 2 reviews: every pair that anyone marked dissimilar,
  mislabelled (label "no") or unsure (either question) in round 1, plus anchors whose added
  labels differ between annotators; in review order.
- :func:`joint_decisions`: the decision per pair, by :func:`robustlab.video.finalize.decide_pairs`
  itself (latest round wins; strict majority for similar and for a correct label; a tie is
  *not similar*), so what the app shows is what ``robustlab video finalize`` will decide.
- :func:`agreement`: Cohen's kappa for two annotators, Fleiss' kappa for more, per round, on
  the items every annotator of that round answered.
- :func:`reason_counts`, :func:`most_disagreed`, :func:`progress`: the admin page's tables.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..metrics.agreement import cohen_kappa, fleiss_kappa, rating_counts
from ..video.finalize import PairDecision, decide_pairs
from ..video.review import LABEL_ANSWERS, REASONS, SIMILARITY_ANSWERS
from .database import Answer
from .tasks import ReviewTask, TaskSet


def needs_round2(pair_answers: Sequence[Answer]) -> bool:
    """True when any round-1 answer to the pair is dissimilar, mislabelled or unsure, or (anchor
    step) the annotators added different labels."""
    for a in pair_answers:
        if a.label_correct != "yes":
            return True
        if a.anchor != a.frame and a.similarity != "similar":
            return True
    return len({a.added_labels for a in pair_answers}) > 1


def round2_pairs(task_set: TaskSet, round1: Iterable[Answer]) -> list[tuple[str, str]]:
    """The pairs round 2 reviews, in review order (see the module docstring)."""
    by_pair: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for a in round1:
        if a.round == 1:
            by_pair[a.pair].append(a)
    return [t.pair for t in task_set.tasks if t.pair in by_pair and needs_round2(by_pair[t.pair])]


def joint_decisions(answers: Iterable[Answer]) -> dict[tuple[str, str], PairDecision]:
    """Per pair, the decision ``robustlab video finalize`` takes from these answers."""
    return decide_pairs([a.to_record() for a in answers])


@dataclass(frozen=True)
class Agreement:
    """Agreement among the annotators of one round.

    Attributes
    ----------
    round : int
    raters : tuple of str
        Annotators with at least one answer in the round.
    method : str
        ``"Cohen's kappa"`` (2 raters), ``"Fleiss' kappa"`` (3 or more) or ``""`` (fewer than 2).
    similarity_items, label_items : int
        Items every rater answered (pairs for similarity; pairs and anchor steps for labels).
    similarity_kappa, label_kappa : float
        NaN when undefined (fewer than 2 raters, no common items, or one category only).
    similarity_observed : float
        Fraction of the similarity items on which every rater gave the same answer (NaN if none).
    """

    round: int
    raters: tuple[str, ...]
    method: str
    similarity_items: int
    similarity_kappa: float
    similarity_observed: float
    label_items: int
    label_kappa: float


def _kappa(rows: list[list[str]], categories: Sequence[str]) -> float:
    if not rows or len(rows[0]) < 2:
        return math.nan
    if len(rows[0]) == 2:
        return cohen_kappa([r[0] for r in rows], [r[1] for r in rows], categories=categories)
    counts, _ = rating_counts(rows, categories=categories)
    return fleiss_kappa(counts)


def agreement(answers: Iterable[Answer], round: int) -> Agreement:
    """Agreement of the annotators of ``round`` (see :class:`Agreement`)."""
    by_pair: dict[tuple[str, str], dict[str, Answer]] = defaultdict(dict)
    for a in answers:
        if a.round == round:
            by_pair[a.pair][a.annotator] = a
    raters = tuple(sorted({name for per in by_pair.values() for name in per}))
    full = {pair: per for pair, per in by_pair.items() if len(per) == len(raters)}
    sim_rows = [[per[r].similarity for r in raters] for (anchor, frame), per in sorted(full.items())
                if anchor != frame]
    label_rows = [[per[r].label_correct for r in raters] for _, per in sorted(full.items())]
    method = "" if len(raters) < 2 else "Cohen's kappa" if len(raters) == 2 else "Fleiss' kappa"
    observed = (sum(len(set(r)) == 1 for r in sim_rows) / len(sim_rows)) if sim_rows else math.nan
    return Agreement(round=round, raters=raters, method=method,
                     similarity_items=len(sim_rows) if method else 0,
                     similarity_kappa=_kappa(sim_rows, SIMILARITY_ANSWERS) if method else math.nan,
                     similarity_observed=observed if method else math.nan,
                     label_items=len(label_rows) if method else 0,
                     label_kappa=_kappa(label_rows, LABEL_ANSWERS) if method else math.nan)


def reason_counts(answers: Iterable[Answer], round: int) -> dict[str, int]:
    """Counts of a round's answers by outcome: each dissimilar reason, "don't know" (similarity),
    label "no" and label "unsure"."""
    counts = Counter({r: 0 for r in REASONS})
    for a in answers:
        if a.round != round:
            continue
        if a.reason:
            counts[a.reason] += 1
        if a.anchor != a.frame and a.similarity == "unsure":
            counts["similarity unsure"] += 1
        if a.label_correct == "no":
            counts["label wrong"] += 1
        elif a.label_correct == "unsure":
            counts["label unsure"] += 1
    return dict(counts)


@dataclass(frozen=True)
class Disagreement:
    """A pair whose round-1 answers split: ``minority`` answers differ from the commonest one."""

    task: ReviewTask
    minority: int
    answers: tuple[Answer, ...]


def most_disagreed(task_set: TaskSet, answers: Iterable[Answer], *, round: int = 1,
                   limit: int = 10) -> list[Disagreement]:
    """The pairs with the most split answers in ``round`` (by the number of minority answers,
    then the number of distinct answers), at most ``limit``."""
    by_pair: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for a in answers:
        if a.round == round:
            by_pair[a.pair].append(a)
    found = []
    for pair, given in by_pair.items():
        task = task_set.task(*pair)
        if task is None or len(given) < 2:
            continue
        kinds = Counter((a.label_correct, a.similarity, tuple(a.added_labels)) for a in given)
        minority = len(given) - max(kinds.values())
        if minority:
            found.append(Disagreement(task, minority, tuple(sorted(given, key=lambda a: a.annotator))))
    found.sort(key=lambda d: (-d.minority, -len({(a.label_correct, a.similarity) for a in d.answers}),
                              d.task.index))
    return found[:limit]


@dataclass(frozen=True)
class Progress:
    """Answers given by one annotator in one round, out of the round's tasks."""

    annotator: str
    round: int
    done: int
    total: int

    @property
    def percent(self) -> float:
        """``100 * done / total`` (100 when the round has no tasks)."""
        return 100.0 * self.done / self.total if self.total else 100.0


def progress(annotators: Iterable[str], answers: Iterable[Answer], round_pairs: dict[int, Sequence[tuple[str, str]]]
             ) -> list[Progress]:
    """Per annotator and round, answers given to the round's pairs (``round_pairs[round]``)."""
    answered: dict[tuple[str, int], set] = defaultdict(set)
    for a in answers:
        answered[(a.annotator, a.round)].add(a.pair)
    rows = []
    for name in sorted(set(annotators)):
        for rnd, pairs in sorted(round_pairs.items()):
            wanted = set(pairs)
            rows.append(Progress(name, rnd, len(answered[(name, rnd)] & wanted), len(wanted)))
    return rows
