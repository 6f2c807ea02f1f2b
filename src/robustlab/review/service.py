"""The review's rules between the web routes and the database: whose turn, which round, what is saved.

:class:`ReviewService` holds a checked :class:`~robustlab.review.tasks.TaskSet` and an open
:class:`~robustlab.review.database.ReviewDatabase`. It decides the next task of an annotator
(each anchor's own step before its pairs), validates and saves answers with
:func:`robustlab.video.review.parse_review` (the format ``robustlab video finalize`` reads),
opens round 2 (and reopens round 1 while round 2 has no answer), and exports and finalizes:
an incomplete review is finalized only when the admin accepts it, and the set then records
how incomplete it was. It knows nothing of HTTP.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError, InputError
from ..video.finalize import PairDecision, finalize
from ..video.review import ReviewRecord, parse_review, write_reviews
from . import rounds
from .answers import Answer, RoundChangeRefused, RoundMismatch, StaleAnswer, User, iso_time, version_token
from .database import ReviewDatabase
from .tasks import ReviewTask, TaskSet

EXPORT_FILE = "review-app.jsonl"
SUMMARY_FILE = "finalize_summary.json"
#: Answers listed in the annotator's history (each a link to edit it).
HISTORY = 8
__all__ = ["EXPORT_FILE", "IncompleteReview", "ReviewService", "RoundChangeRefused", "RoundMismatch",
           "StaleAnswer", "TaskView", "open_service"]


class IncompleteReview(DataError):
    """Finalize was asked for while the open round is incomplete, without accepting it."""


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
    base: str = "v0"        # the version of the answer the page shows (database.version_token)
    label_preset: str | None = None  # a pair's label answer, taken from the anchor step ("yes")
    label_preset_round: int = 0      # the round of the anchor-step answer it came from
    recent: tuple[tuple[Answer, ReviewTask], ...] = ()  # the annotator's last answers, newest first


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

    def open_round2(self, by: str | None = None) -> tuple[bool, int]:
        """Close round 1 and open round 2 on the pairs someone doubted. The pairs are chosen
        inside the transaction that changes the round, so an answer saved meanwhile is either
        seen or refused, never lost. The change is logged with how round 1 stood (who answered
        how many of its tasks) and ``by``. Returns (opened now, number of pairs)."""
        def choose(round1: list[Answer]) -> list[tuple[int, str, str]]:
            return [(self.task_set.task(*p).index, *p) for p in rounds.round2_pairs(self.task_set, round1)]

        accounts = [u.name for u in self.db.list_users("annotator")]
        pairs = [t.pair for t in self.task_set.tasks]

        def closing(round1: list[Answer]) -> dict:
            return rounds.completeness(round1, 1, pairs, accounts).record()

        return self.db.open_round2(choose, closing=closing, by=by)

    def reopen_round1(self, by: str | None = None) -> bool:
        """Close round 2 and open round 1 again (only while round 2 has no answer).

        Raises
        ------
        RoundChangeRefused
            Round 2 has answers.
        """
        return self.db.reopen_round1(by=by)

    def round_pairs(self, round: int | None = None) -> list[tuple[str, str]]:
        """The tasks of a round (default: the open one) as (anchor, frame) pairs."""
        rnd = self.current_round() if round is None else round
        return [t.pair for t in self.task_set.tasks] if rnd == 1 else self.db.round2_pairs()

    def completeness(self, answers: list[Answer] | None = None) -> rounds.RoundCompleteness:
        """How far the open round is (:func:`robustlab.review.rounds.completeness`)."""
        rnd = self.current_round()
        given = self.db.answers() if answers is None else answers
        return rounds.completeness(given, rnd, self.round_pairs(rnd),
                                   [u.name for u in self.db.list_users("annotator")])

    # --- the annotator's page -------------------------------------------------------------------

    def check_index(self, index: int) -> None:
        """Refuse a task index outside the set (before any database query sees it).

        Raises
        ------
        RoundMismatch
        """
        if not 0 <= index < len(self.task_set):
            raise RoundMismatch(f"task {index} does not exist; the set has {len(self.task_set)} tasks "
                                f"(0 to {len(self.task_set) - 1}).")

    def view(self, user: User, index: int | None = None) -> TaskView:
        """The task to show: ``index`` when given (a task of the open round), else the first
        the annotator has not answered (``task`` None when the round is done).

        A pair's label question is answered in advance ("yes") when this annotator found the
        anchor correctly labelled at its own step: the label is per video, so it is asked once
        per video (the page marks it, and one key changes it). The answer of the open round
        counts; in round 2, when they did not answer the anchor's step there, their round-1
        answer to it.

        Raises
        ------
        RoundMismatch
            ``index`` is not a task of the open round.
        """
        if index is not None:
            self.check_index(index)
        state = self.db.annotator_state(user.name, len(self.task_set), index, history=HISTORY,
                                        anchor_step_of=self.anchor_step_index)
        task = None if state.task_index is None else self.task_set.tasks[state.task_index]
        r1 = r2 = ()
        decision = None
        if task is not None and state.round == 2:
            given = self.db.answers_to_pair(*task.pair)
            r1 = tuple(a for a in given if a.round == 1)
            r2 = tuple(a for a in given if a.round == 2)
            decision = rounds.joint_decisions(r2).get(task.pair) if r2 else None
        anchor = state.anchor_answer
        preset = "yes" if task is not None and not task.is_anchor_step and anchor is not None \
            and anchor.label_correct == "yes" else None
        recent = tuple((a, t) for a in state.recent if (t := self.task_set.task(a.anchor, a.frame)) is not None)
        return TaskView(task=task, round=state.round, position=state.position, done=state.done,
                        total=state.total, answer=state.answer, round1=r1, round2=r2, decision=decision,
                        base=version_token(state.version), label_preset=preset,
                        label_preset_round=anchor.round if preset else 0, recent=recent)

    def saved(self, user: User, index: int) -> tuple[int, Answer | None, str]:
        """``(open round, the annotator's saved answer to task index or None, its version token)``.

        Raises
        ------
        RoundMismatch
            ``index`` is not a task of the open round.
        """
        self.check_index(index)
        state = self.db.annotator_state(user.name, len(self.task_set), index)
        return state.round, state.answer, version_token(state.version)

    def anchor_step_index(self, index: int) -> int:
        """Index of the anchor step of task ``index``'s anchor (``index`` itself when the set has none)."""
        task = self.task_set.tasks[index]
        step = self.task_set.task(task.anchor, task.anchor)
        return index if step is None else step.index

    def next_task(self, user: User) -> int | None:
        """Index of the first task of the open round the annotator has not answered (None: done)."""
        return self.db.annotator_state(user.name, len(self.task_set)).task_index

    def submit(self, user: User, index: int, round: int, fields: Mapping[str, object],
               base: str | None = None) -> bool:
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
        base : str, optional
            The version of the answer the page showed (:func:`robustlab.review.answers.version_token`).

        Raises
        ------
        RoundMismatch
            The round is not the open one, or the task is not in it.
        StaleAnswer
            The task's answer changed (saved, replaced or undone) after the page showed ``base``,
            and this answer differs from the one saved now.
        DataError
            The answer is not a valid review record (message says which field and why).
        InputError
            An added label is not a class of the set.
        """
        self.check_index(index)
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
        return self.db.save_answer(record, task.index, base)

    def undo(self, user: User) -> tuple[ReviewTask, Answer, str] | None:
        """Remove the annotator's last answer of the open round; returns its task, the removed
        answer (the page shows it again, unsaved) and the task's version token after the undo,
        or None when there is none."""
        removed = self.db.undo_last(user.name)
        if removed is None:
            return None
        answer, version = removed
        task = self.task_set.task(answer.anchor, answer.frame)
        return None if task is None else (task, answer, version_token(version))

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
        disagreed = rounds.disagreements(self.task_set, everything)
        return {
            "round": rnd,
            "tasks": len(self.task_set),
            "annotators": sorted(annotators),
            "progress": rounds.progress(annotators, everything, round_pairs),
            "agreement": [rounds.agreement(everything, r, round_pairs[r]) for r in sorted(round_pairs)],
            "reasons": {r: rounds.reason_counts(everything, r) for r in sorted(round_pairs)},
            "disagreed": disagreed[:10],
            "disagreed_total": len(disagreed),
            "pending_round2": len(self.pending_round2()) if rnd == 1 else None,
            "round2_pairs": len(round_pairs.get(2, [])),
            "round2_decided": sum(1 for p in round_pairs.get(2, []) if p in decisions),
            "round2_answers": len(round2),
            "completeness": rounds.completeness(everything, rnd, round_pairs[rnd],
                                                [u.name for u in self.db.list_users("annotator")]),
            "answers": len(everything),
            "finalizable": self.task_set.finalizable,
            "finalized": self.last_finalize(),
        }

    def last_finalize(self) -> dict | None:
        """The summary of the last finalize of this task set (``finalize_summary.json``), if any."""
        path = self.task_set.root / SUMMARY_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        return data if isinstance(data, dict) and "anchors_kept" in data else None

    def records(self) -> list[ReviewRecord]:
        """Every answer as a review record (what the export writes)."""
        return self.db.records()

    def export(self, path: str | os.PathLike | None = None, records: list[ReviewRecord] | None = None) -> Path:
        """Write every answer (or ``records``) as review JSON Lines (default
        ``TASKS folder/reviews/review-app.jsonl``)."""
        target = Path(path) if path is not None else self.task_set.root / "reviews" / EXPORT_FILE
        return write_reviews(target, self.records() if records is None else records)

    def finalize(self, *, require_anchor_review: bool = False, accept_incomplete: bool = False,
                 by: str | None = None) -> dict:
        """Export, then run :func:`robustlab.video.finalize.finalize` on the task set's folder:
        writes ``pmsets.json``, ``labels.json`` and ``finalize_summary.json`` there.

        The summary's ``review`` block records how complete the open round was
        (:meth:`robustlab.review.rounds.RoundCompleteness.record`), who finalized and when;
        the ``video-pmk`` benchmark repeats its counts in every run on the set.

        Parameters
        ----------
        require_anchor_review : bool
            Drop anchors without a review of their own step.
        accept_incomplete : bool
            Finalize even though tasks of the open round lack answers (the admin's explicit
            choice; without it an incomplete review is refused).
        by : str, optional
            Who finalized (recorded).

        Raises
        ------
        IncompleteReview
            The open round is incomplete and ``accept_incomplete`` is False (nothing is written).
        DataError
            The folder has no ``sample.json`` (not written by ``robustlab video sample``), or
            finalize refuses the answers (e.g. an anchor left without any class label).
        """
        if not self.task_set.finalizable:
            raise DataError(f"{self.task_set.root} has no sample.json: finalize needs the folder written by "
                            "`robustlab video sample`. Export the answers and finalize elsewhere.")
        answers = self.db.answers()
        state = self.completeness(answers)
        if not state.complete and not accept_incomplete:
            raise IncompleteReview(f"round {state.round} is incomplete: {describe_incomplete(state)}. Finalize "
                                   "only after every annotator has finished, or accept the incomplete review "
                                   "explicitly (the set then records it).")
        records = [a.to_record() for a in sorted(answers, key=lambda a: (a.round, a.annotator, a.anchor, a.frame))]
        exported = self.export(records=records)
        review = {**state.record(), "finalized_by": by, "finalized_at": iso_time(time.time()),
                  "rounds": rounds.round_history(self.db.round_changes(), state, answers,
                                                 [t.pair for t in self.task_set.tasks])}
        summary = finalize(self.task_set.root, [exported], require_anchor_review=require_anchor_review,
                           review=review)
        summary["export"] = str(exported)
        return summary


def describe_incomplete(state: rounds.RoundCompleteness) -> str:
    """One line: what is missing in the open round (for messages and the confirmation pages)."""
    if not state.annotators:
        return "nobody has answered yet"
    parts = [f"{state.unreviewed} of {state.tasks} task(s) have no answer",
             f"{state.partly_reviewed} have answers from only some annotators"]
    if state.unfinished:
        parts.append("unfinished: " + ", ".join(f"{n} {d}/{state.tasks}" for n, d in state.unfinished))
    return "; ".join(parts)


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
