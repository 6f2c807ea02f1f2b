"""The review database: users, sessions, answers and the round state (SQLite or PostgreSQL).

Locations follow the store's conventions (:mod:`robustlab.store.location`): a ``.db`` file or
``sqlite:///file.db`` (SQLite, WAL mode, one writer at a time), a folder (its ``review.db``),
or a ``postgresql://user@host/db`` URL (psycopg 3). SQLite flushes every commit to the disk
(``synchronous=FULL``): answers are people's work. Tables are prefixed ``review_`` so a
PostgreSQL database can hold them beside a results catalog. Every statement is SQLAlchemy
Core with bound parameters.

Answers are keyed by ``(round, annotator, anchor, frame)``: saving an answer again replaces it,
and saving the same answer again changes nothing (not even its time), so a resubmitted form
or a retried request is harmless, and every saved answer survives a server restart. Every
change of an answer (saved, replaced, undone) raises that task's *version* for its annotator
and round, in the same transaction. A page names the version it showed (its *base*,
:func:`version_token`): a different answer made on an older version is refused
(:class:`StaleAnswer`), so a page left open, a page shown again by Back, an undo page or a
draft restored in the browser never overwrites an answer given since.

Every change of round is logged (``review_round_changes``) with who made it and how the
round it closed stood: finalize records it.

The round is one row of ``review_meta``. Every write that depends on it (saving and undoing an
answer, opening round 2, reopening round 1) reads it inside its own transaction with a row
lock (``FOR SHARE`` / ``FOR UPDATE`` on PostgreSQL; SQLite's write transactions are serial
already), so opening round 2 computes its pairs from exactly the round-1 answers it closes.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from ..errors import InputError, StoreError
from ..store.database import Database, upsert_statement
from ..store.location import StoreLocation, resolve_location
from ..video.review import REASONS, REVIEW_DB, ROUNDS, ReviewRecord
from .answers import (
    AnnotatorState,
    Answer,
    RoundChangeRefused,
    RoundMismatch,
    StaleAnswer,
    User,
    answer_from_row,
    version_token,
)
from .schema import (
    ANSWER_AT,
    ANSWER_FIELDS,
    DONE,
    GAP,
    MAX_NAME,
    R2_BEFORE,
    R2_HAS,
    R2_NEXT,
    R2_TOTAL,
    RECENT,
    ROUND,
    ROUND_EXCLUSIVE,
    ROUND_SHARED,
    SAVED,
    SESSION,
    VERSION,
    answers,
    meta,
    metadata,
    round2_pairs,
    round_changes,
    sessions,
    task_versions,
    users,
)

__all__ = ["DEFAULT_FILE", "ROLES", "SCHEMA_VERSION", "SESSION_SECONDS", "AnnotatorState", "Answer",
           "ReviewDatabase", "RoundChangeRefused", "RoundMismatch", "StaleAnswer", "User", "check_user_name",
           "open_review_database", "review_location", "version_token"]

SCHEMA_VERSION = "1"
DEFAULT_FILE = REVIEW_DB
ROLES = ("annotator", "admin")
#: Names a user may not take (the export uses none of them, but they read as system words).
RESERVED_NAMES = ("joint", "admin-export", "anonymous")
#: Sessions end this many seconds after login (the user logs in again).
SESSION_SECONDS = 12 * 3600


def review_location(db: str | os.PathLike | None, default_folder: str | os.PathLike) -> StoreLocation:
    """Resolve ``--db``: None -> ``default_folder/review.db``; a folder -> its ``review.db``;
    otherwise a ``.db`` file, ``sqlite:///`` or ``postgresql://`` URL as the store reads them."""
    if db is None:
        return resolve_location(Path(default_folder) / DEFAULT_FILE)
    text = os.fspath(db)
    if "://" not in text and Path(text).expanduser().is_dir():
        return resolve_location(Path(text).expanduser() / DEFAULT_FILE)
    return resolve_location(text)


def check_user_name(name: str) -> str:
    """A user name: 1..64 characters of letters, digits, ``.``, ``_``, ``-`` (not a reserved word)."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME \
            or not all(c.isalnum() or c in "._-" for c in name) or not name.isascii():
        raise InputError(f"user name {name!r} is not allowed: use 1 to {MAX_NAME} ASCII letters, digits, "
                         "'.', '_' or '-'.")
    if name.lower() in RESERVED_NAMES:
        raise InputError(f"user name {name!r} is reserved; choose another.")
    return name


class ReviewDatabase:
    """Open (and create the tables of) the review database at a :class:`StoreLocation`.

    Raises
    ------
    StoreError
        When the database cannot be reached or is not usable (the message names it, never its
        password), or holds a newer schema.
    """

    def __init__(self, location: StoreLocation) -> None:
        self.location = location
        # durable: SQLite flushes each commit to the disk (an answer survives a power cut too)
        self._db = Database(location, durable=True)
        try:
            self._db.run(self._create, write=True)
        except BaseException:
            self._db.close()
            raise

    # --- life cycle --------------------------------------------------------------------------

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._db.dialect

    def describe(self) -> str:
        """The database for messages (file path, or URL without its password)."""
        return self.location.describe()

    def close(self) -> None:
        """Release the connections."""
        self._db.close()

    def __enter__(self) -> ReviewDatabase:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _create(self, conn: Connection) -> None:
        metadata.create_all(conn, checkfirst=True)
        found = conn.execute(select(meta.c.value).where(meta.c.key == "schema")).scalar()
        if found is None:
            conn.execute(meta.insert(), [{"key": "schema", "value": SCHEMA_VERSION},
                                         {"key": "round", "value": "1"},
                                         {"key": "secret", "value": secrets.token_hex(32)}])
        elif found != SCHEMA_VERSION:
            raise StoreError(f"the review database {self.describe()} has schema {found!r}; this robustlab "
                             f"reads schema {SCHEMA_VERSION!r}. Upgrade robustlab or use another --db.")

    # --- meta: secret, task set, round ---------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value of the ``review_meta`` table (None when unset)."""
        return self._db.run(lambda c: c.execute(select(meta.c.value).where(meta.c.key == key)).scalar(),
                            write=False)

    def _set_meta(self, conn: Connection, key: str, value: str) -> None:
        conn.execute(upsert_statement(self.dialect, meta, ("key",), ("value",)), {"key": key, "value": value})

    def secret(self) -> str:
        """The key that signs session cookies (made once, kept in the database across restarts)."""
        value = self.get_meta("secret")
        if not value:
            raise StoreError(f"the review database {self.describe()} has no signing key; it was damaged. "
                             "Use a new --db.")
        return value

    def bind_task_set(self, digest: str, path: str) -> None:
        """Tie the database to one task set; refuse another once answers exist.

        Raises
        ------
        StoreError
            When the database holds answers to a different task set.
        """
        def work(conn: Connection) -> None:
            bound = conn.execute(select(meta.c.value).where(meta.c.key == "task_digest")).scalar()
            if bound is not None and bound != digest:
                n = conn.execute(select(func.count()).select_from(answers)).scalar()
                if n:
                    where = conn.execute(select(meta.c.value).where(meta.c.key == "task_path")).scalar()
                    raise StoreError(
                        f"the review database {self.describe()} holds {n} answers to another task set "
                        f"({where}); the task file {path} differs from it. Serve that task set, or give "
                        "this one its own --db.")
            self._set_meta(conn, "task_digest", digest)
            self._set_meta(conn, "task_path", str(path))

        self._db.run(work, write=True)

    def current_round(self) -> int:
        """1 until an admin opens round 2, then 2."""
        return int(self._db.run(lambda c: c.execute(ROUND).scalar(), write=False) or 1)

    def open_round2(self, choose: Callable[[list[Answer]], Sequence[tuple[int, str, str]]], *,
                    closing: Callable[[list[Answer]], dict] | None = None,
                    by: str | None = None) -> tuple[bool, int]:
        """Close round 1 and open round 2 on the pairs ``choose(round-1 answers)`` returns, as
        ``(task index, anchor, frame)`` triples.

        ``choose`` runs inside the transaction that changes the round, after the round row is
        locked: every round-1 answer saved before the round changes is seen by it, and every
        later one is refused (:class:`RoundMismatch`), so none is lost. ``closing(round-1
        answers)`` (in the same transaction) says how round 1 stood: it is logged with the
        change, its time and ``by`` (:meth:`round_changes`).

        Returns
        -------
        (opened, pairs) : (bool, int)
            False (nothing changed) when round 2 was open already; the number of round-2 pairs.
        """
        def work(conn: Connection) -> tuple[bool, int]:
            current = conn.execute(ROUND_EXCLUSIVE).scalar()
            if current == "2":
                return False, int(conn.execute(R2_TOTAL).scalar())
            round1 = [answer_from_row(r) for r in conn.execute(
                select(answers).where(answers.c.round == 1).order_by(answers.c.answered_at, answers.c.annotator))]
            tasks = list(choose(round1))
            conn.execute(delete(round2_pairs))
            if tasks:
                conn.execute(round2_pairs.insert(), [{"task_index": int(i), "anchor": a, "frame": f}
                                                     for i, a, f in tasks])
            self._set_meta(conn, "round", "2")
            self._set_meta(conn, "round2_opened_at", repr(time.time()))
            record = {**(closing(round1) if closing else {}), "round2_pairs": len(tasks)}
            self._log_round_change(conn, "round2_opened", by, record)
            return True, len(tasks)

        return self._db.run(work, write=True)

    def reopen_round1(self, *, by: str | None = None) -> bool:
        """Close round 2 and open round 1 again, while nobody has answered round 2 (logged,
        with ``by``: :meth:`round_changes`).

        Returns False (nothing changed) when round 1 is open already.

        Raises
        ------
        RoundChangeRefused
            Round 2 has answers (they would be hidden from the round-2 decision).
        """
        def work(conn: Connection) -> bool:
            current = conn.execute(ROUND_EXCLUSIVE).scalar()
            if current != "2":
                return False
            n = conn.execute(select(func.count()).select_from(answers).where(answers.c.round == 2)).scalar()
            if n:
                raise RoundChangeRefused(
                    f"round 1 cannot be reopened: round 2 has {n} answer(s) already. Finish round 2, or "
                    "export the answers and start a new review database.")
            pairs = conn.execute(R2_TOTAL).scalar()
            conn.execute(delete(round2_pairs))
            self._set_meta(conn, "round", "1")
            self._set_meta(conn, "round1_reopened_at", repr(time.time()))
            self._log_round_change(conn, "round1_reopened", by,
                                   {"round": 2, "tasks": int(pairs), "answers": 0, "annotators": {}})
            return True

        return self._db.run(work, write=True)

    def _log_round_change(self, conn: Connection, change: str, by: str | None, record: dict) -> None:
        conn.execute(round_changes.insert().values(at=time.time(), change=change, by=by,
                                                   record=json.dumps(record, sort_keys=True)))

    def round_changes(self) -> list[dict]:
        """Every change of round, oldest first: ``at`` (Unix time), ``change``
        (``"round2_opened"`` or ``"round1_reopened"``), ``by`` (the admin, or None) and
        ``record`` (how the round it closed stood, as logged then)."""
        rows = self._db.run(lambda c: c.execute(select(round_changes).order_by(round_changes.c.seq)).all(),
                            write=False)
        return [{"at": r.at, "change": r.change, "by": r.by, "record": json.loads(r.record)} for r in rows]

    def round2_pairs(self) -> list[tuple[str, str]]:
        """The pairs of round 2, in review order (empty before it opens)."""
        rows = self._db.run(lambda c: c.execute(select(round2_pairs.c.anchor, round2_pairs.c.frame)
                                                .order_by(round2_pairs.c.task_index)).all(), write=False)
        return [(r.anchor, r.frame) for r in rows]

    # --- users --------------------------------------------------------------------------------

    def add_user(self, name: str, role: str, password_hash: str) -> User:
        """Add a user.

        Raises
        ------
        InputError
            Bad name or role, or a user of that name exists already.
        """
        check_user_name(name)
        if role not in ROLES:
            raise InputError(f"role {role!r} is unknown; use {' or '.join(ROLES)}.")

        def work(conn: Connection) -> None:
            if conn.execute(select(users.c.name).where(users.c.name == name)).first() is not None:
                raise InputError(f"user {name!r} already exists in {self.describe()}: choose another name "
                                 "(names are unique).")
            conn.execute(users.insert().values(name=name, role=role, password_hash=password_hash,
                                               created_at=time.time()))

        self._db.run(work, write=True)
        return User(name, role)

    def user_with_hash(self, name: str) -> tuple[User, str] | None:
        """The user and their password hash, or None when there is no such user."""
        row = self._db.run(lambda c: c.execute(select(users).where(users.c.name == name)).first(), write=False)
        return None if row is None else (User(row.name, row.role), row.password_hash)

    def set_password_hash(self, name: str, password_hash: str) -> None:
        """Replace a user's password hash (rehash on login when the parameters changed)."""
        self._db.run(lambda c: c.execute(update(users).where(users.c.name == name)
                                         .values(password_hash=password_hash)), write=True)

    def list_users(self, role: str | None = None) -> list[User]:
        """Users (of one role), by name."""
        query = select(users.c.name, users.c.role).order_by(users.c.name)
        if role is not None:
            query = query.where(users.c.role == role)
        return [User(r.name, r.role) for r in self._db.run(lambda c: c.execute(query).all(), write=False)]

    # --- sessions -------------------------------------------------------------------------------

    def create_session(self, user: str, id_hash: str, csrf_token: str, *,
                       lifetime: float = SESSION_SECONDS) -> None:
        """Store a new session (by the hash of its id); expired sessions are purged on the way."""
        now = time.time()

        def work(conn: Connection) -> None:
            conn.execute(delete(sessions).where(sessions.c.expires_at < now))
            conn.execute(sessions.insert().values(id_hash=id_hash, user_name=user, csrf_token=csrf_token,
                                                  created_at=now, expires_at=now + lifetime))

        self._db.run(work, write=True)

    def session(self, id_hash: str) -> tuple[User, str] | None:
        """``(user, csrf token)`` of a live session, or None (unknown or expired)."""
        params = {"id_hash": id_hash, "now": time.time()}
        row = self._db.run(lambda c: c.execute(SESSION, params).first(), write=False)
        return None if row is None else (User(row.name, row.role), row.csrf_token)

    def delete_session(self, id_hash: str) -> None:
        """End a session (logout)."""
        self._db.run(lambda c: c.execute(delete(sessions).where(sessions.c.id_hash == id_hash)), write=True)

    # --- answers --------------------------------------------------------------------------------

    def save_answer(self, record: ReviewRecord, task_index: int, base: str | None = None) -> bool:
        """Save a validated answer to task ``task_index`` of the open round.

        Returns False when the same answer was saved already (nothing changes then).

        Parameters
        ----------
        record : ReviewRecord
        task_index : int
        base : str, optional
            The version of the task's answer the page showed (:func:`version_token`). When
            given, a *different* answer is saved only if that is still the current version.

        Raises
        ------
        RoundMismatch
            ``record.round`` is not the open round, or (round 2) the task is not one of it.
        StaleAnswer
            The answer was changed (saved, replaced or undone) since version ``base``, and this
            answer differs from the one saved now.
        """
        if record.round not in ROUNDS or (record.reason is not None and record.reason not in REASONS):
            raise InputError(f"answer {record!r} is not a valid review record.")
        key = {"round": record.round, "annotator": record.annotator, "anchor": record.anchor,
               "frame": record.frame}
        values = {"label_correct": record.label_correct, "similarity": record.similarity,
                  "reason": record.reason, "added_labels": json.dumps(sorted(record.added_labels))}

        def work(conn: Connection) -> bool:
            current = int(conn.execute(ROUND_SHARED).scalar())
            if record.round != current:
                raise RoundMismatch(f"this page was for round {record.round}, but round {current} is open now: "
                                    "nothing was saved; reload the page.")
            if current == 2 and conn.execute(R2_HAS, {"task": int(task_index)}).first() is None:
                raise RoundMismatch(f"task {task_index} is not reviewed in round 2.")
            row = conn.execute(SAVED, key).first()
            if row is not None and {f: row._mapping[f] for f in ANSWER_FIELDS} == values:
                return False
            version = self._raise_version(conn, record.round, record.annotator, task_index)
            if base is not None and base != version_token(version - 1):
                what = (f"answered again (saved at {time.strftime('%H:%M:%S', time.localtime(row.answered_at))})"
                        if row is not None else "cleared by an undo")
                raise StaleAnswer(
                    f"task {task_index} was {what} after this page was shown, so this answer was not saved: "
                    "open the task to see its current state, and change it there.")
            statement = upsert_statement(self.dialect, answers, tuple(key),
                                         (*ANSWER_FIELDS, "task_index", "answered_at"))
            conn.execute(statement, {**key, **values, "task_index": int(task_index), "answered_at": time.time()})
            return True

        return self._db.run(work, write=True)

    def _raise_version(self, conn: Connection, round: int, annotator: str, task_index: int) -> int:
        """Raise the version of an annotator's answer to a task (in the caller's transaction);
        returns the new version. One statement (insert, or add 1 on conflict), which takes the
        row's lock on PostgreSQL: two changes of one answer never both see the same version."""
        dialect = postgresql if self.dialect == "postgresql" else sqlite
        statement = dialect.insert(task_versions).values(round=int(round), annotator=annotator,
                                                         task_index=int(task_index), version=1,
                                                         changed_at=time.time())
        statement = statement.on_conflict_do_update(
            index_elements=["round", "annotator", "task_index"],
            set_={"version": task_versions.c.version + 1, "changed_at": statement.excluded.changed_at},
        ).returning(task_versions.c.version)
        return int(conn.execute(statement).scalar())

    def annotator_state(self, annotator: str, n_tasks: int, task_index: int | None = None, *,
                        anchor_step_of: Callable[[int], int] | None = None, history: int = 0) -> AnnotatorState:
        """Where ``annotator`` stands in the open round, in one read transaction (a few indexed
        queries, however many answers there are).

        Parameters
        ----------
        annotator : str
        n_tasks : int
            Tasks in the task set (round 1 reviews all of them).
        task_index : int, optional
            The task asked for; default: the first one the annotator has not answered.
        anchor_step_of : callable, optional
            Task index -> index of its anchor's own step: also read the annotator's answer to it.
        history : int
            Also read the annotator's last ``history`` answers of the round.

        Raises
        ------
        RoundMismatch
            ``task_index`` is not a task of the open round.
        """
        def work(conn: Connection) -> AnnotatorState:
            rnd = int(conn.execute(ROUND).scalar())
            mine = {"round": rnd, "annotator": annotator}
            done = conn.execute(DONE, mine).scalar()
            if rnd == 1:
                total = int(n_tasks)
                chosen = task_index if task_index is not None else _first_gap(conn, annotator, total)
                if chosen is not None and not 0 <= chosen < total:
                    raise RoundMismatch(f"task {chosen} does not exist; the set has {total} tasks.")
                position = 0 if chosen is None else chosen + 1
            else:
                total = conn.execute(R2_TOTAL).scalar()
                if task_index is None:
                    chosen = conn.execute(R2_NEXT, mine).scalar()
                else:
                    if conn.execute(R2_HAS, {"task": int(task_index)}).first() is None:
                        raise RoundMismatch(f"task {task_index} is not reviewed in round 2.")
                    chosen = task_index
                position = 0 if chosen is None else 1 + conn.execute(R2_BEFORE, {"task": chosen}).scalar()
            row = None if chosen is None else conn.execute(ANSWER_AT, {**mine, "task": chosen}).first()
            version = 0 if chosen is None else conn.execute(VERSION, {**mine, "task": chosen}).scalar() or 0
            anchor_row = None
            if chosen is not None and anchor_step_of is not None:
                step = anchor_step_of(chosen)
                if step != chosen:
                    anchor_row = conn.execute(ANSWER_AT, {**mine, "task": step}).first()
                    if anchor_row is None and rnd == 2:   # not answered in round 2: round 1's answer
                        anchor_row = conn.execute(ANSWER_AT, {**mine, "round": 1, "task": step}).first()
            recent = conn.execute(RECENT, {**mine, "limit": int(history)}).all() if history else []
            return AnnotatorState(round=rnd, task_index=chosen, position=position, done=done, total=total,
                                  answer=None if row is None else answer_from_row(row),
                                  anchor_answer=None if anchor_row is None else answer_from_row(anchor_row),
                                  recent=tuple(answer_from_row(r) for r in recent), version=int(version))

        return self._db.run(work, write=False)

    def answers(self, *, round: int | None = None, annotator: str | None = None) -> list[Answer]:
        """Saved answers, optionally of one round and/or one annotator, oldest first."""
        query = select(answers).order_by(answers.c.answered_at, answers.c.annotator)
        if round is not None:
            query = query.where(answers.c.round == int(round))
        if annotator is not None:
            query = query.where(answers.c.annotator == annotator)
        return [answer_from_row(r) for r in self._db.run(lambda c: c.execute(query).all(), write=False)]

    def answers_to_pair(self, anchor: str, frame: str) -> list[Answer]:
        """Every saved answer to one pair (all rounds, all annotators)."""
        query = (select(answers).where(answers.c.anchor == anchor, answers.c.frame == frame)
                 .order_by(answers.c.round, answers.c.annotator))
        return [answer_from_row(r) for r in self._db.run(lambda c: c.execute(query).all(), write=False)]

    def undo_last(self, annotator: str) -> tuple[Answer, int] | None:
        """Delete an annotator's most recent answer of the open round (read in the same
        transaction); returns it and the task's new version (None when there is none)."""
        def work(conn: Connection) -> tuple[Answer, int] | None:
            rnd = int(conn.execute(ROUND_SHARED).scalar())
            row = conn.execute(select(answers).where(answers.c.round == rnd,
                                                     answers.c.annotator == annotator)
                               .order_by(answers.c.answered_at.desc()).limit(1)).first()
            if row is None:
                return None
            conn.execute(delete(answers).where(answers.c.round == row.round, answers.c.annotator == row.annotator,
                                               answers.c.anchor == row.anchor, answers.c.frame == row.frame))
            return answer_from_row(row), self._raise_version(conn, row.round, row.annotator, row.task_index)

        return self._db.run(work, write=True)

    def recent_answers(self, annotator: str, round: int, limit: int = 8) -> list[Answer]:
        """An annotator's last ``limit`` answers of a round, newest first."""
        params = {"round": int(round), "annotator": annotator, "limit": int(limit)}
        return [answer_from_row(r) for r in self._db.run(lambda c: c.execute(RECENT, params).all(), write=False)]

    def records(self) -> list[ReviewRecord]:
        """Every answer as a review record, in a stable order (round, annotator, anchor, frame)."""
        rows = sorted(self.answers(), key=lambda a: (a.round, a.annotator, a.anchor, a.frame))
        return [a.to_record() for a in rows]


def _first_gap(conn: Connection, annotator: str, n_tasks: int) -> int | None:
    """The smallest round-1 task index the annotator has not answered (None when all are)."""
    mine = {"round": 1, "annotator": annotator}
    if conn.execute(ANSWER_AT, {**mine, "task": 0}).first() is None:
        return 0 if n_tasks > 0 else None
    gap = conn.execute(GAP, mine).scalar()
    return None if gap is None or gap >= n_tasks else int(gap)


def open_review_database(db: str | os.PathLike | None = None, *,
                         default_folder: str | os.PathLike = ".") -> ReviewDatabase:
    """Open the review database named by ``--db`` (see :func:`review_location`).

    Raises
    ------
    StoreError
        When it cannot be reached or used; nothing is written then.
    InputError
        For a malformed location (unsupported URL scheme, in-memory SQLite).
    """
    return ReviewDatabase(review_location(db, default_folder))
