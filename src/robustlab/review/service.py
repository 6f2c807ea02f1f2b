"""The review's rules between the web routes and the database: whose turn, which round, what is saved.

:class:`ReviewService` holds a checked :class:`~robustlab.review.tasks.TaskSet` and an open
:class:`~robustlab.review.database.ReviewDatabase`. It decides the next task of an annotator
(each anchor's own step before its pairs), validates and saves answers with
:func:`robustlab.video.review.parse_review` (the format ``robustlab video finalize`` reads),
opens round 2, and exports and finalizes. It knows nothing of HTTP.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError, InputError
from ..video.finalize import PairDecision, finalize
from ..video.review import ReviewRecord, parse_review, write_reviews
from . import rounds
from .database import Answer, ReviewDatabase, RoundMismatch, User
from .tasks import ReviewTask, TaskSet

EXPORT_FILE = "review-app.jsonl"
__all__ = ["EXPORT_FILE", "ReviewService", "RoundMismatch", "TaskView", "open_service"]


@dataclass(frozen=True)
class TaskView:
    """What the annotator page needs about one task in one round (``task`` None: round done)."""

    task: ReviewTask | None
    round: int
    position: int           # 1-based position in the round's list
    done: int               # answers this annotator gave in the round
    total: int              # tasks in the round
    answer: Answer | None   # this annotator's saved answer to it, if any
    round1: tuple[Answer, ...]   # everyone's round-1 answers (round 2 only; empty in round 1)
    round2: tuple[Answer, ...]   # everyone's round-2 answers so far (round 2 only)
    decision: PairDecision | None  # the joint decision so far (round 2 only)


class ReviewService:
    """The review of one task set in one database (see the module docstring)."""

    def __init__(self, task_set: TaskSet, db: ReviewDatabase) -> None:
        self.task_set = task_set
        self.db = db

    # --- rounds ---------------------------------------------------------------------------------

    def current_round(self) -> int:
        """1, or 2 once an admin opened it."""
        return self.db.current_round()

    def pending_round2(self) -> list[tuple[str, str]]:
        """The pairs round 2 would review if it opened now."""
        return rounds.round2_pairs(self.task_set, self.db.answers(round=1))

    def open_round2(self) -> tuple[bool, int]:
        """Close round 1 and open round 2. Returns (opened now, number of pairs)."""
        pairs = self.pending_round2()
        opened = self.db.open_round2([(self.task_set.task(*p).index, *p) for p in pairs])
        return opened, len(self.db.round2_pairs())

    # --- the annotator's page -------------------------------------------------------------------

    def view(self, user: User, index: int | None = None) -> TaskView:
        """The task to show: ``index`` when given (a task of the open round), else the first
        the annotator has not answered (``task`` None when the round is done).

        Raises
        ------
        RoundMismatch
            ``index`` is not a task of the open round.
        """
        state = self.db.annotator_state(user.name, len(self.task_set), index)
        task = None if state.task_index is None else self.task_set.tasks[state.task_index]
        r1 = r2 = ()
        decision = None
        if task is not None and state.round == 2:
            given = self.db.answers_to_pair(*task.pair)
            r1 = tuple(a for a in given if a.round == 1)
            r2 = tuple(a for a in given if a.round == 2)
            decision = rounds.joint_decisions(r2).get(task.pair) if r2 else None
        return TaskView(task=task, round=state.round, position=state.position, done=state.done,
                        total=state.total, answer=state.answer, round1=r1, round2=r2, decision=decision)

    def submit(self, user: User, index: int, round: int, fields: Mapping[str, object]) -> bool:
        """Validate and save an answer; returns False when the same answer was saved already.

        Parameters
        ----------
        user : User
            The annotator answering.
        index : int
            Task index (position in the task set's review order).
        round : int
            The round the page was shown for (must be the open round).
        fields : mapping
            ``label_correct``, and for pairs ``similarity`` and (dissimilar) ``reason``; for an
            anchor step, optional ``added_labels`` (class indices).

        Raises
        ------
        RoundMismatch
            The round is not the open one, or the task is not in it.
        DataError
            The answer is not a valid review record (message says which field and why).
        InputError
            An added label is not a class of the set.
        """
        if not 0 <= index < len(self.task_set):
            raise RoundMismatch(f"task {index} does not exist; the set has {len(self.task_set)} tasks.")
        task = self.task_set.tasks[index]
        added = list(fields.get("added_labels") or []) if task.is_anchor_step else []
        n_classes = len(self.task_set.class_names)
        bad = [v for v in added if not isinstance(v, int) or v < 0 or (n_classes and v >= n_classes)]
        if bad:
            raise InputError(f"added labels {bad} are not classes of this set (0..{n_classes - 1}).")
        obj = {"annotator": user.name, "anchor": task.anchor, "frame": task.frame,
               "label_correct": fields.get("label_correct"), "round": round,
               "added_labels": sorted(set(added) - set(task.labels))}
        if not task.is_anchor_step:
            obj["similarity"] = fields.get("similarity")
            obj["reason"] = fields.get("reason")
        record = parse_review({k: v for k, v in obj.items() if v not in (None, "")},
                              f"answer to task {index}")
        return self.db.save_answer(record, task.index)

    def undo(self, user: User) -> ReviewTask | None:
        """Remove the annotator's last answer of the open round; returns its task (or None)."""
        removed = self.db.undo_last(self.current_round(), user.name)
        return None if removed is None else self.task_set.task(removed.anchor, removed.frame)

    # --- admin -----------------------------------------------------------------------------------

    def overview(self) -> dict:
        """Everything the admin page shows (progress, agreement, reasons, disagreements, rounds)."""
        everything = self.db.answers()
        annotators = {u.name for u in self.db.list_users("annotator")} | {a.annotator for a in everything}
        rnd = self.current_round()
        round_pairs = {1: [t.pair for t in self.task_set.tasks]}
        if rnd == 2:
            round_pairs[2] = self.db.round2_pairs()
        round2 = [a for a in everything if a.round == 2]
        decisions = rounds.joint_decisions(round2)
        return {
            "round": rnd,
            "tasks": len(self.task_set),
            "annotators": sorted(annotators),
            "progress": rounds.progress(annotators, everything, round_pairs),
            "agreement": [rounds.agreement(everything, r) for r in sorted(round_pairs)],
            "reasons": {r: rounds.reason_counts(everything, r) for r in sorted(round_pairs)},
            "disagreed": rounds.most_disagreed(self.task_set, everything),
            "pending_round2": len(self.pending_round2()) if rnd == 1 else None,
            "round2_pairs": len(round_pairs.get(2, [])),
            "round2_decided": sum(1 for p in round_pairs.get(2, []) if p in decisions),
            "answers": len(everything),
            "finalizable": self.task_set.finalizable,
        }

    def records(self) -> list[ReviewRecord]:
        """Every answer as a review record (what the export writes)."""
        return self.db.records()

    def export(self, path: str | os.PathLike | None = None) -> Path:
        """Write every answer as review JSON Lines (default ``TASKS folder/reviews/review-app.jsonl``)."""
        target = Path(path) if path is not None else self.task_set.root / "reviews" / EXPORT_FILE
        return write_reviews(target, self.records())

    def finalize(self, *, require_anchor_review: bool = False) -> dict:
        """Export, then run :func:`robustlab.video.finalize.finalize` on the task set's folder:
        writes ``pmsets.json``, ``labels.json`` and ``finalize_summary.json`` there.

        Raises
        ------
        DataError
            The folder has no ``sample.json`` (not written by ``robustlab video sample``), or
            finalize refuses the answers (e.g. an anchor left without any class label).
        """
        if not self.task_set.finalizable:
            raise DataError(f"{self.task_set.root} has no sample.json: finalize needs the folder written by "
                            "`robustlab video sample`. Export the answers and finalize elsewhere.")
        exported = self.export()
        summary = finalize(self.task_set.root, [exported], require_anchor_review=require_anchor_review)
        summary["export"] = str(exported)
        return summary


def open_service(task_set: TaskSet, db: ReviewDatabase) -> ReviewService:
    """Tie the database to the task set and return the service (check the frames first with
    :func:`robustlab.review.tasks.check_frames_present`; :func:`robustlab.review.server.build_service`
    does both).

    Raises
    ------
    StoreError
        The database holds answers to another task set.
    """
    db.bind_task_set(task_set.digest, str(task_set.path))
    return ReviewService(task_set, db)
