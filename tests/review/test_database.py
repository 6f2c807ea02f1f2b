"""The review database on SQLite and PostgreSQL: idempotent answers, undo, sessions, rounds, binding."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import update

from robustlab.errors import InputError, StoreError
from robustlab.review.database import (
    ReviewDatabase,
    RoundChangeRefused,
    RoundMismatch,
    StaleAnswer,
    meta,
    review_location,
    version_token,
)
from robustlab.video.review import ReviewRecord

from .conftest import BACKENDS

pytestmark = pytest.mark.parametrize("db_url", BACKENDS, indirect=True)


@pytest.fixture
def db(db_url, tmp_path):
    with ReviewDatabase(review_location(db_url, tmp_path)) as opened:
        yield opened


def record(annotator="ana", frame="f/1.jpg", round=1, **fields) -> ReviewRecord:
    values = {"label_correct": "yes", "similarity": "similar", **fields}
    return ReviewRecord(annotator=annotator, anchor="f/0.jpg", frame=frame, round=round, **values)


def save(db, rec: ReviewRecord) -> bool:
    """Save with the frame's number as its task index (f/N.jpg is task N)."""
    return db.save_answer(rec, int(rec.frame.split("/")[1].split(".")[0]))


def test_answers_are_upserted_idempotently(db):
    assert save(db, record()) is True
    first = db.answers()
    assert save(db, record()) is False and db.answers() == first
    assert save(db, record(similarity="dissimilar", reason="motion")) is True
    (only,) = db.answers()
    assert (only.similarity, only.reason, only.task_index) == ("dissimilar", "motion", 1)
    save(db, record(annotator="ben"))
    db.open_round2(lambda _: [(1, "f/0.jpg", "f/1.jpg")])
    save(db, record(round=2))
    assert len(db.answers()) == 3 and len(db.answers(round=1)) == 2 and len(db.answers(annotator="ben")) == 1


def test_answers_only_for_the_open_round_and_its_tasks(db):
    with pytest.raises(RoundMismatch, match="round 1 is open"):
        save(db, record(round=2))
    save(db, record(frame="f/3.jpg"))
    db.open_round2(lambda _: [(1, "f/0.jpg", "f/1.jpg")])
    with pytest.raises(RoundMismatch, match="round 2 is open"):
        save(db, record(frame="f/4.jpg"))
    with pytest.raises(RoundMismatch, match="task 3 is not reviewed in round 2"):
        save(db, record(round=2, frame="f/3.jpg"))
    assert [a.frame for a in db.answers()] == ["f/3.jpg"]


def test_annotator_state_finds_the_first_unanswered_task(db):
    state = db.annotator_state("ana", 6)
    assert (state.round, state.task_index, state.position, state.done, state.total) == (1, 0, 1, 0, 6)
    for i in (0, 1, 2, 4):
        save(db, record(frame=f"f/{i}.jpg"))
    state = db.annotator_state("ana", 6)
    assert (state.task_index, state.done, state.answer) == (3, 4, None)
    asked = db.annotator_state("ana", 6, 4)
    assert asked.task_index == 4 and asked.position == 5 and asked.answer.frame == "f/4.jpg"
    save(db, record(frame="f/3.jpg"))
    save(db, record(frame="f/5.jpg"))
    assert db.annotator_state("ana", 6).task_index is None and db.annotator_state("ben", 6).task_index == 0
    with pytest.raises(RoundMismatch, match="does not exist"):
        db.annotator_state("ana", 6, 6)
    db.open_round2(lambda _: [(4, "f/0.jpg", "f/4.jpg"), (2, "f/0.jpg", "f/2.jpg")])
    state = db.annotator_state("ana", 6)
    assert (state.round, state.task_index, state.position, state.done, state.total) == (2, 2, 1, 0, 2)
    save(db, record(round=2, frame="f/2.jpg"))
    state = db.annotator_state("ana", 6)
    assert (state.task_index, state.position, state.done) == (4, 2, 1)
    with pytest.raises(RoundMismatch, match="not reviewed in round 2"):
        db.annotator_state("ana", 6, 3)


def test_undo_removes_the_latest_answer_of_that_annotator_and_round(db):
    save(db, record(frame="f/1.jpg"))
    time.sleep(0.01)
    save(db, record(frame="f/2.jpg"))
    time.sleep(0.01)
    save(db, record(annotator="ben", frame="f/3.jpg"))
    assert db.undo_last("ana")[0].frame == "f/2.jpg"
    assert db.undo_last("ana")[0].frame == "f/1.jpg"
    assert db.undo_last("ana") is None
    assert {a.frame for a in db.answers()} == {"f/3.jpg"}
    # only the open round's answers: once round 2 is open, a round-1 answer cannot be undone
    db.open_round2(lambda _: [(3, "f/0.jpg", "f/3.jpg")])
    assert db.undo_last("ben") is None and {a.frame for a in db.answers()} == {"f/3.jpg"}


def test_sessions_expire_and_end(db):
    db.add_user("ana", "annotator", "$argon2id$fake")
    db.create_session("ana", "a" * 64, "csrf-1")
    db.create_session("ana", "b" * 64, "csrf-2", lifetime=-1)  # already expired
    user, csrf = db.session("a" * 64)
    assert (user.name, user.role, csrf) == ("ana", "annotator", "csrf-1")
    assert db.session("b" * 64) is None and db.session("c" * 64) is None
    db.delete_session("a" * 64)
    assert db.session("a" * 64) is None


def test_users_are_unique_and_roles_checked(db):
    db.add_user("ana", "annotator", "h")
    with pytest.raises(InputError, match="already exists"):
        db.add_user("ana", "admin", "h")
    with pytest.raises(InputError, match="unknown"):
        db.add_user("ben", "owner", "h")
    assert [(u.name, u.role) for u in db.list_users()] == [("ana", "annotator")]
    assert db.user_with_hash("nobody") is None


def test_round2_opens_once_with_its_pairs(db):
    assert db.current_round() == 1 and db.round2_pairs() == []
    assert db.open_round2(lambda _: [(7, "a", "c"), (3, "a", "b")]) == (True, 2)
    assert db.open_round2(lambda _: [(1, "x", "y")]) == (False, 2)
    assert db.current_round() == 2 and db.round2_pairs() == [("a", "b"), ("a", "c")]


def test_reopening_keeps_everything_and_the_signing_key(db, db_url, tmp_path):
    save(db, record())
    db.open_round2(lambda _: [(1, "f/0.jpg", "f/1.jpg")])
    secret = db.secret()
    with ReviewDatabase(review_location(db_url, tmp_path)) as again:
        assert again.secret() == secret and again.current_round() == 2 and len(again.answers()) == 1


def test_a_newer_schema_is_refused(db, db_url, tmp_path):
    db._db.run(lambda c: c.execute(update(meta).where(meta.c.key == "schema").values(value="99")), write=True)
    with pytest.raises(StoreError, match="has schema '99'"):
        ReviewDatabase(review_location(db_url, tmp_path))


def version(db, task: int, annotator: str = "ana") -> str:
    return version_token(db.annotator_state(annotator, 10, task).version)


def test_a_different_answer_against_a_stale_version_is_refused(db):
    """The page names the version of the answer it showed (its base): an answer made on an
    outdated page never silently replaces one saved since (type-ahead on a slow network, a
    second tab, Back to an undo page, a draft restored in the browser)."""
    assert version(db, 1) == "v0"
    assert save_based(db, record(), "v0") is True
    (saved,) = db.answers()
    assert version(db, 1) == "v1"
    # the same page posted again (a retried request): same answer, nothing changes, no error
    assert save_based(db, record(), "v0") is False and version(db, 1) == "v1"
    # a different answer from a page that showed the task unanswered: refused
    with pytest.raises(StaleAnswer, match="was answered again"):
        save_based(db, record(similarity="dissimilar", reason="motion"), "v0")
    assert db.answers() == [saved] and version(db, 1) == "v1"
    # from a page that showed the saved answer: replaces it
    assert save_based(db, record(similarity="dissimilar", reason="motion"), "v1") is True
    (changed,) = db.answers()
    assert changed.similarity == "dissimilar"
    # the old base is stale now
    with pytest.raises(StaleAnswer):
        save_based(db, record(similarity="unsure"), "v1")
    # undone since the page was shown: refused too (the page showed an answer that is gone)
    removed, after_undo = db.undo_last("ana")
    assert removed == changed and version_token(after_undo) == version(db, 1) == "v3"
    with pytest.raises(StaleAnswer, match="cleared by an undo"):
        save_based(db, record(similarity="unsure"), "v2")
    assert db.answers() == []


def test_versions_never_come_back_after_an_undo(db):
    """Saved, undone, saved again, undone again: the task is empty twice, but a page of the first
    empty state (an undo page shown again by Back, a second tab) is refused all the same."""
    save_based(db, record(), "v0")
    _, first_undo = db.undo_last("ana")
    save_based(db, record(similarity="dissimilar", reason="background_change"), version_token(first_undo))
    _, second_undo = db.undo_last("ana")
    assert second_undo > first_undo and db.answers() == []
    with pytest.raises(StaleAnswer):
        save_based(db, record(), version_token(first_undo))
    assert save_based(db, record(), version_token(second_undo)) is True


def test_versions_are_per_annotator_round_and_task(db):
    save_based(db, record(), "v0")
    save_based(db, record(frame="f/2.jpg"), "v0")
    save_based(db, record(annotator="ben"), "v0")
    assert (version(db, 1), version(db, 2), version(db, 1, "ben"), version(db, 3)) == ("v1", "v1", "v1", "v0")
    db.open_round2(lambda _: [(1, "f/0.jpg", "f/1.jpg")])
    assert version(db, 1) == "v0"                     # round 2's own count
    assert save_based(db, record(round=2, similarity="dissimilar", reason="motion"), "v0") is True


def test_round_changes_are_logged_with_who_and_how_the_round_stood(db):
    save(db, record())
    db.open_round2(lambda _: [], closing=lambda round1: {"answers": len(round1)}, by="boss")
    db.reopen_round1(by="lead")
    db.open_round2(lambda _: [(1, "f/0.jpg", "f/1.jpg")], by="boss")
    changes = db.round_changes()
    assert [(c["change"], c["by"]) for c in changes] == [("round2_opened", "boss"), ("round1_reopened", "lead"),
                                                         ("round2_opened", "boss")]
    assert changes[0]["record"] == {"answers": 1, "round2_pairs": 0}
    assert changes[1]["record"]["round"] == 2 and changes[2]["record"]["round2_pairs"] == 1
    assert changes[0]["at"] <= changes[1]["at"] <= changes[2]["at"]


def save_based(db, rec: ReviewRecord, base: str) -> bool:
    return db.save_answer(rec, int(rec.frame.split("/")[1].split(".")[0]), base)


def test_round1_reopens_only_while_round2_has_no_answer(db):
    save(db, record(similarity="dissimilar", reason="motion"))
    assert db.reopen_round1() is False                        # round 1 is open already
    assert db.open_round2(lambda _: [(1, "f/0.jpg", "f/1.jpg")]) == (True, 1)
    assert db.reopen_round1() is True
    assert db.current_round() == 1 and db.round2_pairs() == []
    save(db, record(frame="f/2.jpg"))                          # round 1 takes answers again
    assert db.open_round2(lambda _: [(1, "f/0.jpg", "f/1.jpg")]) == (True, 1)
    save(db, record(round=2))
    with pytest.raises(RoundChangeRefused, match="round 2 has 1 answer"):
        db.reopen_round1()
    assert db.current_round() == 2 and len(db.answers(round=2)) == 1


def test_opening_round2_sees_or_refuses_every_concurrent_round1_answer(db):
    """The doubted pairs are computed inside the transaction that opens round 2: an answer saved
    while round 2 opens is either seen by that computation or refused, never lost.

    The chooser waits for an annotator's concurrent "dissimilar" save (up to 1 s). Computed
    outside the round change (as before), the save goes through meanwhile and its pair is
    missing from round 2; computed inside, the save waits for the round change and is refused.
    """
    save(db, record(annotator="ben", frame="f/2.jpg"))
    outcome = {}
    started, saved = threading.Event(), threading.Event()

    def annotator():
        started.wait(10)
        try:
            save(db, record(similarity="dissimilar", reason="motion"))
            outcome["saved"] = True
        except RoundMismatch:
            outcome["saved"] = False
        saved.set()

    def choose(round1):
        started.set()
        saved.wait(1.0)          # today's race window, made wide: the answer arrives while choosing
        return [(a.task_index, a.anchor, a.frame) for a in round1 if a.similarity != "similar"]

    worker = threading.Thread(target=annotator)
    worker.start()
    db.open_round2(choose)
    worker.join(30)
    dissimilar = [a.pair for a in db.answers(round=1) if a.similarity == "dissimilar"]
    assert all(pair in db.round2_pairs() for pair in dissimilar), "a round-1 dissimilar answer was lost"
    assert outcome["saved"] is (("f/0.jpg", "f/1.jpg") in db.round2_pairs())
