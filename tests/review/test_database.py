"""The review database on SQLite and PostgreSQL: idempotent answers, undo, sessions, rounds, binding."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import update

from robustlab.errors import InputError, StoreError
from robustlab.review.database import ReviewDatabase, meta, review_location
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


def test_answers_are_upserted_idempotently(db):
    assert db.save_answer(record()) is True
    first = db.answers()
    assert db.save_answer(record()) is False and db.answers() == first
    assert db.save_answer(record(similarity="dissimilar", reason="motion")) is True
    (only,) = db.answers()
    assert (only.similarity, only.reason) == ("dissimilar", "motion")
    db.save_answer(record(round=2))
    db.save_answer(record(annotator="ben"))
    assert len(db.answers()) == 3 and len(db.answers(round=1)) == 2 and len(db.answers(annotator="ben")) == 1
    assert db.answered_pairs(1, "ana") == {("f/0.jpg", "f/1.jpg")}


def test_undo_removes_the_latest_answer_of_that_annotator_and_round(db):
    db.save_answer(record(frame="f/1.jpg"))
    time.sleep(0.01)
    db.save_answer(record(frame="f/2.jpg"))
    time.sleep(0.01)
    db.save_answer(record(annotator="ben", frame="f/3.jpg"))
    db.save_answer(record(round=2, frame="f/4.jpg"))
    assert db.undo_last(1, "ana").frame == "f/2.jpg"
    assert db.undo_last(1, "ana").frame == "f/1.jpg"
    assert db.undo_last(1, "ana") is None
    assert {a.frame for a in db.answers()} == {"f/3.jpg", "f/4.jpg"}


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
    assert db.open_round2([("a", "b"), ("a", "c")]) is True
    assert db.open_round2([("x", "y")]) is False
    assert db.current_round() == 2 and db.round2_pairs() == [("a", "b"), ("a", "c")]


def test_reopening_keeps_everything_and_the_signing_key(db, db_url, tmp_path):
    db.save_answer(record())
    db.open_round2([("f/0.jpg", "f/1.jpg")])
    secret = db.secret()
    with ReviewDatabase(review_location(db_url, tmp_path)) as again:
        assert again.secret() == secret and again.current_round() == 2 and len(again.answers()) == 1


def test_a_newer_schema_is_refused(db, db_url, tmp_path):
    db._db.run(lambda c: c.execute(update(meta).where(meta.c.key == "schema").values(value="99")), write=True)
    with pytest.raises(StoreError, match="has schema '99'"):
        ReviewDatabase(review_location(db_url, tmp_path))
