"""The review database on SQLite and PostgreSQL: idempotent answers, undo, sessions, rounds, binding."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import update

from robustlab.errors import InputError, StoreError
from robustlab.review.database import ReviewDatabase, RoundMismatch, meta, review_location
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
    db.open_round2([(1, "f/0.jpg", "f/1.jpg")])
    save(db, record(round=2))
    assert len(db.answers()) == 3 and len(db.answers(round=1)) == 2 and len(db.answers(annotator="ben")) == 1


def test_answers_only_for_the_open_round_and_its_tasks(db):
    with pytest.raises(RoundMismatch, match="round 1 is open"):
        save(db, record(round=2))
    save(db, record(frame="f/3.jpg"))
    db.open_round2([(1, "f/0.jpg", "f/1.jpg")])
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
    db.open_round2([(4, "f/0.jpg", "f/4.jpg"), (2, "f/0.jpg", "f/2.jpg")])
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
    assert db.undo_last(1, "ana").frame == "f/2.jpg"
    assert db.undo_last(1, "ana").frame == "f/1.jpg"
    assert db.undo_last(1, "ana") is None
    assert db.undo_last(2, "ben") is None
    assert {a.frame for a in db.answers()} == {"f/3.jpg"}


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
    assert db.open_round2([(7, "a", "c"), (3, "a", "b")]) is True
    assert db.open_round2([(1, "x", "y")]) is False
    assert db.current_round() == 2 and db.round2_pairs() == [("a", "b"), ("a", "c")]


def test_reopening_keeps_everything_and_the_signing_key(db, db_url, tmp_path):
    save(db, record())
    db.open_round2([(1, "f/0.jpg", "f/1.jpg")])
    secret = db.secret()
    with ReviewDatabase(review_location(db_url, tmp_path)) as again:
        assert again.secret() == secret and again.current_round() == 2 and len(again.answers()) == 1


def test_a_newer_schema_is_refused(db, db_url, tmp_path):
    db._db.run(lambda c: c.execute(update(meta).where(meta.c.key == "schema").values(value="99")), write=True)
    with pytest.raises(StoreError, match="has schema '99'"):
        ReviewDatabase(review_location(db_url, tmp_path))
