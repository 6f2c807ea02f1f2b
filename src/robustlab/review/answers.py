"""What the review database hands out: users, answers, where an annotator stands, and why an
answer or a round change is refused (:mod:`robustlab.review.database` reads and writes them)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from ..errors import InputError
from ..video.review import ReviewRecord


@dataclass(frozen=True)
class User:
    """A user of the review app (the password hash stays in the database layer)."""

    name: str
    role: str


@dataclass(frozen=True)
class Answer:
    """One saved answer of one annotator in one round (the fields of a review record)."""

    round: int
    annotator: str
    anchor: str
    frame: str
    label_correct: str
    similarity: str | None
    reason: str | None
    added_labels: tuple[int, ...]
    answered_at: float
    task_index: int = -1

    @property
    def pair(self) -> tuple[str, str]:
        """``(anchor, frame)``."""
        return (self.anchor, self.frame)

    def to_record(self) -> ReviewRecord:
        """The answer as a :class:`~robustlab.video.review.ReviewRecord` (ISO 8601 UTC timestamp)."""
        stamp = iso_time(self.answered_at)
        return ReviewRecord(annotator=self.annotator, anchor=self.anchor, frame=self.frame,
                            label_correct=self.label_correct, round=self.round,
                            similarity=None if self.anchor == self.frame else self.similarity,
                            reason=self.reason, added_labels=self.added_labels, timestamp=stamp)


class RoundMismatch(InputError):
    """An answer for another round than the open one, or for a task outside the open round."""


class StaleAnswer(InputError):
    """A different answer was saved to the task after the page was shown: nothing was changed."""


class RoundChangeRefused(InputError):
    """A round change that would lose or hide answers (e.g. reopening round 1 after round-2 answers)."""


def iso_time(seconds: float) -> str:
    """A Unix time as ISO 8601 UTC (``2024-05-01T12:00:00Z``), as exports and records write times."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def version_token(version: int) -> str:
    """The token a page sends back with its answer: the version of the task's answer it showed
    (``"v0"`` for a task never answered by that annotator in that round)."""
    return f"v{int(version)}"


@dataclass(frozen=True)
class AnnotatorState:
    """Where one annotator stands in the open round (read in one transaction).

    Attributes
    ----------
    round : int
        The open round.
    task_index : int or None
        The task to show: the one asked for, else the first not answered (None: all done).
    position : int
        1-based position of that task in the round's list (0 when there is none).
    done, total : int
        Answers the annotator gave in the round; tasks in the round.
    answer : Answer or None
        The annotator's saved answer to that task.
    anchor_answer : Answer or None
        Their answer to the anchor step of that task's anchor, when asked for: of this round,
        or in round 2 (when they did not answer it there) of round 1.
    recent : tuple of Answer
        Their last answers of the round, newest first, when asked for.
    version : int
        The version of their answer to that task in this round (0: never changed).
    """

    round: int
    task_index: int | None
    position: int
    done: int
    total: int
    answer: Answer | None
    anchor_answer: Answer | None = None
    recent: tuple[Answer, ...] = ()
    version: int = 0


def answer_from_row(row) -> Answer:
    """An answer from a row of ``review_answers``."""
    return Answer(round=row.round, annotator=row.annotator, anchor=row.anchor, frame=row.frame,
                  label_correct=row.label_correct, similarity=row.similarity, reason=row.reason,
                  added_labels=tuple(json.loads(row.added_labels)), answered_at=row.answered_at,
                  task_index=row.task_index)
