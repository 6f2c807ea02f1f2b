"""What the rounds and the admin page compute from saved answers (pure functions, no I/O).

- :func:`round2_pairs`: the pairs round 2 reviews: every pair that anyone marked dissimilar,
  mislabelled (label "no") or unsure (either question) in round 1, plus anchors whose added
  labels differ between annotators; in review order.
- :func:`joint_decisions`: the decision per pair, by :func:`robustlab.video.finalize.decide_pairs`
  itself (latest round wins; strict majority for similar and for a correct label; a tie is
  *not similar*), so what the app shows is what ``robustlab video finalize`` will decide.
- :func:`agreement`: percent agreement, the class balance, and Cohen's kappa for two annotators
  (Fleiss' kappa for more), per round, over the annotators who finished it (see
  :class:`Agreement`), on the items every one of them answered.
- :func:`completeness`: how far the open round is (what the admin confirms before a round
  change or finalize, and what an incomplete finalized set records).
- :func:`round_history`: how each round closed (who had answered how many of its tasks, when
  and by whom the round changed), as finalize records it.
- :func:`reason_counts`, :func:`disagreements`, :func:`progress`: the admin page's tables.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..metrics.agreement import cohen_kappa, fleiss_kappa, rating_counts
from ..video.finalize import PairDecision, decide_pairs
from ..video.review import LABEL_ANSWERS, REASONS, SIMILARITY_ANSWERS
from .answers import Answer, iso_time
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

    Kappa is computed over the *counted* annotators only, on the items every one of them
    answered: the annotators who finished the round, or, while fewer than two have, the two
    with the most answers. An annotator who has just started does not turn the statistic into
    noise over a handful of items; the page names who is not counted yet.

    Attributes
    ----------
    round : int
    raters : tuple of str
        Annotators with at least one answer in the round.
    counted : tuple of str
        The annotators the statistics are computed over (see above).
    not_counted : tuple of (str, int)
        The other raters and how many answers each gave in the round.
    round_items : int
        Items of the round (pairs and anchor steps), answered or not.
    method : str
        ``"Cohen's kappa"`` (2 counted), ``"Fleiss' kappa"`` (3 or more) or ``""`` (fewer than 2).
    similarity_items, label_items : int
        Items every counted annotator answered (pairs for similarity; pairs and anchor steps
        for labels).
    similarity_kappa, label_kappa : float
        NaN when undefined (fewer than 2 raters, no common items, or one category only).
    similarity_observed, label_observed : float
        Percent agreement, as a fraction: items on which every counted annotator gave the same
        answer (NaN if none).
    similarity_balance, label_balance : dict of str to float
        Share of each answer among the counted annotators' answers on those items (the class
        balance: with one dominant class, kappa is low even when nearly every answer agrees).
    """

    round: int
    raters: tuple[str, ...]
    method: str
    similarity_items: int
    similarity_kappa: float
    similarity_observed: float
    label_items: int
    label_kappa: float
    counted: tuple[str, ...] = ()
    not_counted: tuple[tuple[str, int], ...] = ()
    round_items: int = 0
    label_observed: float = math.nan
    similarity_balance: dict = field(default_factory=dict)
    label_balance: dict = field(default_factory=dict)


def _kappa(rows: list[list[str]], categories: Sequence[str]) -> float:
    if not rows or len(rows[0]) < 2:
        return math.nan
    if len(rows[0]) == 2:
        return cohen_kappa([r[0] for r in rows], [r[1] for r in rows], categories=categories)
    counts, _ = rating_counts(rows, categories=categories)
    return fleiss_kappa(counts)


def _observed(rows: list[list[str]]) -> float:
    return (sum(len(set(r)) == 1 for r in rows) / len(rows)) if rows else math.nan


def _balance(rows: list[list[str]], categories: Sequence[str]) -> dict[str, float]:
    given = Counter(v for r in rows for v in r)
    total = sum(given.values())
    return {c: given[c] / total for c in categories} if total else {}


def counted_raters(answered: dict[str, int], round_items: int | None) -> tuple[str, ...]:
    """The annotators agreement is computed over (see :class:`Agreement`).

    Parameters
    ----------
    answered : dict of str to int
        Answers each rater gave in the round.
    round_items : int or None
        Items in the round (None: count every rater).
    """
    if round_items is None:
        return tuple(sorted(answered))
    finished = sorted(n for n, done in answered.items() if done >= round_items)
    if len(finished) >= 2:
        return tuple(finished)
    most = sorted(answered, key=lambda n: (-answered[n], n))[:2]
    return tuple(sorted(most))


def agreement(answers: Iterable[Answer], round: int,
              round_pairs: Sequence[tuple[str, str]] | None = None) -> Agreement:
    """Agreement of the annotators of ``round`` (see :class:`Agreement`).

    Parameters
    ----------
    answers : iterable of Answer
    round : int
    round_pairs : sequence of (anchor, frame), optional
        The round's items; without them every rater is counted.
    """
    wanted = None if round_pairs is None else set(round_pairs)
    by_pair: dict[tuple[str, str], dict[str, Answer]] = defaultdict(dict)
    for a in answers:
        if a.round == round and (wanted is None or a.pair in wanted):
            by_pair[a.pair][a.annotator] = a
    answered = Counter(name for per in by_pair.values() for name in per)
    raters = tuple(sorted(answered))
    counted = counted_raters(dict(answered), None if wanted is None else len(wanted))
    full = {pair: per for pair, per in by_pair.items() if counted and all(r in per for r in counted)}
    sim_rows = [[per[r].similarity for r in counted] for (anchor, frame), per in sorted(full.items())
                if anchor != frame]
    label_rows = [[per[r].label_correct for r in counted] for _, per in sorted(full.items())]
    method = "" if len(counted) < 2 else "Cohen's kappa" if len(counted) == 2 else "Fleiss' kappa"
    return Agreement(round=round, raters=raters, method=method,
                     counted=counted if method else (),
                     not_counted=tuple((n, answered[n]) for n in raters if not method or n not in counted),
                     round_items=len(wanted) if wanted is not None else len(by_pair),
                     similarity_items=len(sim_rows) if method else 0,
                     similarity_kappa=_kappa(sim_rows, SIMILARITY_ANSWERS) if method else math.nan,
                     similarity_observed=_observed(sim_rows) if method else math.nan,
                     similarity_balance=_balance(sim_rows, SIMILARITY_ANSWERS) if method else {},
                     label_items=len(label_rows) if method else 0,
                     label_kappa=_kappa(label_rows, LABEL_ANSWERS) if method else math.nan,
                     label_observed=_observed(label_rows) if method else math.nan,
                     label_balance=_balance(label_rows, LABEL_ANSWERS) if method else {})


@dataclass(frozen=True)
class RoundCompleteness:
    """How far the open round is: what the admin confirms before changing rounds or finalizing.

    Attributes
    ----------
    round : int
        The round described (the open one).
    annotators : tuple of str
        The annotators expected to answer it: everyone who answered in round 1 (round 2 is
        everyone's; an account that never answered is not expected).
    not_started : tuple of str
        Annotator accounts without any answer (listed, not expected).
    tasks : int
        Tasks of the round (round 1: every pair and anchor step; round 2: its pairs).
    done : dict of str to int
        Per expected annotator, tasks of the round they answered.
    unreviewed : int
        Tasks of the round that nobody answered in it.
    partly_reviewed : int
        Tasks that some, but not all, expected annotators answered in it.
    """

    round: int
    annotators: tuple[str, ...]
    not_started: tuple[str, ...]
    tasks: int
    done: dict
    unreviewed: int
    partly_reviewed: int

    @property
    def complete(self) -> bool:
        """Every expected annotator answered every task of the round (and someone did)."""
        return bool(self.annotators) and self.unreviewed == 0 and self.partly_reviewed == 0

    @property
    def unfinished(self) -> tuple[tuple[str, int], ...]:
        """``(annotator, answered)`` of the expected annotators who have not finished."""
        return tuple((n, d) for n, d in sorted(self.done.items()) if d < self.tasks)

    def record(self) -> dict:
        """The JSON the finalized set keeps of an incomplete review (``finalize_summary.json``)."""
        return {"complete": self.complete, "open_round": self.round, "tasks": self.tasks,
                "unreviewed": self.unreviewed, "partly_reviewed": self.partly_reviewed,
                "annotators": {n: self.done[n] for n in sorted(self.done)}}


def completeness(answers: Iterable[Answer], round: int, round_pairs: Sequence[tuple[str, str]],
                 accounts: Iterable[str] = ()) -> RoundCompleteness:
    """How complete ``round`` is (see :class:`RoundCompleteness`).

    Parameters
    ----------
    answers : iterable of Answer
        Every saved answer (both rounds).
    round : int
    round_pairs : sequence of (anchor, frame)
        The tasks of the round.
    accounts : iterable of str
        Annotator accounts (those without any answer are listed as not started).
    """
    given = list(answers)
    wanted = set(round_pairs)
    expected = sorted({a.annotator for a in given if a.round == 1 or a.round == round})
    by_pair: dict[tuple[str, str], set] = defaultdict(set)
    done = Counter()
    for a in given:
        if a.round == round and a.pair in wanted:
            by_pair[a.pair].add(a.annotator)
            done[a.annotator] += 1
    unreviewed = sum(1 for p in wanted if not by_pair.get(p))
    partly = sum(1 for p in wanted if by_pair.get(p) and not set(expected) <= by_pair[p])
    not_started = tuple(sorted(set(accounts) - {a.annotator for a in given}))
    return RoundCompleteness(round=round, annotators=tuple(expected), not_started=not_started,
                             tasks=len(wanted), done={n: done[n] for n in expected},
                             unreviewed=unreviewed, partly_reviewed=partly)


#: Per logged change of round (``review_round_changes``): the round it closed, and in words.
ROUND_CHANGES = {"round2_opened": (1, "round 2 opened"), "round1_reopened": (2, "round 1 reopened")}


def round_history(changes: Sequence[dict], open_state: RoundCompleteness, answers: Iterable[Answer],
                  round1_pairs: Sequence[tuple[str, str]]) -> list[dict]:
    """Each round as it closed, oldest first, then the open one as it stands: what finalize records.

    Parameters
    ----------
    changes : sequence of dict
        The logged round changes (:meth:`robustlab.review.database.ReviewDatabase.round_changes`).
    open_state : RoundCompleteness
        The open round now.
    answers : iterable of Answer
        Every saved answer (for a round 1 closed before changes were logged).
    round1_pairs : sequence of (anchor, frame)
        Every task of the set (round 1's).

    Returns
    -------
    list of dict
        Per closed round: its :meth:`RoundCompleteness.record` as logged when it closed (who had
        answered how many of its tasks), ``opened_at``, ``closed_at`` (ISO 8601 UTC),
        ``closed_by`` and ``closed_when`` (``"round 2 opened"`` or ``"round 1 reopened"``);
        last, the open round with ``closed_at`` None.
    """
    def entry(round: int, record: dict, opened_at, closed_at, by, when: str) -> dict:
        kept = {k: v for k, v in record.items() if k != "open_round"}
        return {"round": round, **kept, "opened_at": opened_at, "closed_at": closed_at, "closed_by": by,
                "closed_when": when}

    history, opened_at = [], None
    if open_state.round == 2 and not any(c["change"] == "round2_opened" for c in changes):
        # round 2 was opened before changes were logged: round 1's answers are as it closed
        closed = completeness([a for a in answers if a.round == 1], 1, round1_pairs).record()
        history.append(entry(1, closed, None, None, None, "round 2 opened (before round changes were logged)"))
    for change in changes:
        at = iso_time(change["at"])
        if change["change"] in ROUND_CHANGES:
            closed_round, when = ROUND_CHANGES[change["change"]]
            history.append(entry(closed_round, change["record"], opened_at, at, change["by"], when))
        opened_at = at
    history.append(entry(open_state.round, open_state.record(), opened_at, None, None, "open when finalized"))
    return history


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


def disagreements(task_set: TaskSet, answers: Iterable[Answer], *, round: int = 1) -> list[Disagreement]:
    """Every pair with split answers in ``round``, most split first (by the number of minority
    answers, then the number of distinct answers, then review order)."""
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
    return found


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
