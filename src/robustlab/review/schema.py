"""The review database's tables, and the statements of the annotator's hot path (built once).

Every table is prefixed ``review_`` (a PostgreSQL database can hold them beside a results
catalog). :mod:`robustlab.review.database` runs the statements; nothing here touches a database.

- ``review_meta``: the schema version, the open round, the cookie-signing key, the task set.
- ``review_users``, ``review_sessions``: accounts (argon2 hashes) and sessions (by the
  SHA-256 of their id).
- ``review_answers``: one row per (round, annotator, anchor, frame).
- ``review_round2_pairs``: the pairs round 2 reviews.
- ``review_task_versions``: per (round, annotator, task) a counter raised by every change of
  that answer (saved, replaced or undone). A page carries the version it showed; an answer
  made on an older version is refused. A missing row is version 0.
- ``review_round_changes``: every change of round, when and by whom, with how the closed
  round stood (who had answered how many of its tasks).

Tables added after schema ``1`` (versions, round changes) are created on opening, so an older
database gains them without losing anything.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Index, Integer, MetaData, PrimaryKeyConstraint, String
from sqlalchemy import Table, Text, bindparam, func, select

from ..video.review import REVIEW_ANSWERS_TABLE

MAX_NAME = 64
#: The fields of an answer (besides its key, task index and time).
ANSWER_FIELDS = ("label_correct", "similarity", "reason", "added_labels")

metadata = MetaData()

meta = Table(
    "review_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

users = Table(
    "review_users", metadata,
    Column("name", String(MAX_NAME), primary_key=True),
    Column("role", String(16), nullable=False),
    Column("password_hash", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

sessions = Table(
    "review_sessions", metadata,
    # SHA-256 of the session id: the cookie's secret is never stored.
    Column("id_hash", String(64), primary_key=True),
    Column("user_name", String(MAX_NAME), ForeignKey("review_users.name", ondelete="CASCADE"),
           nullable=False),
    Column("csrf_token", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

answers = Table(
    REVIEW_ANSWERS_TABLE, metadata,
    Column("round", Integer, nullable=False),
    Column("annotator", String(MAX_NAME), nullable=False),
    Column("anchor", Text, nullable=False),
    Column("frame", Text, nullable=False),
    Column("label_correct", String(16), nullable=False),
    Column("similarity", String(16), nullable=True),
    Column("reason", String(32), nullable=True),
    Column("added_labels", Text, nullable=False),  # JSON list of class indices
    # Position of the pair in the task set's review order (the database is tied to one task
    # set by its digest, so the index is stable): lets SQL find an annotator's next task.
    Column("task_index", Integer, nullable=False),
    Column("answered_at", Float, nullable=False),
    PrimaryKeyConstraint("round", "annotator", "anchor", "frame"),
    Index("ix_review_answers_progress", "round", "annotator", "task_index"),
    Index("ix_review_answers_recent", "annotator", "round", "answered_at"),
)

round2_pairs = Table(
    "review_round2_pairs", metadata,
    Column("task_index", Integer, primary_key=True),
    Column("anchor", Text, nullable=False),
    Column("frame", Text, nullable=False),
)

task_versions = Table(
    "review_task_versions", metadata,
    Column("round", Integer, nullable=False),
    Column("annotator", String(MAX_NAME), nullable=False),
    Column("task_index", Integer, nullable=False),
    Column("version", Integer, nullable=False),
    Column("changed_at", Float, nullable=False),
    PrimaryKeyConstraint("round", "annotator", "task_index"),
)

round_changes = Table(
    "review_round_changes", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("change", String(32), nullable=False),   # "round2_opened" or "round1_reopened"
    Column("by", String(MAX_NAME), nullable=True),
    Column("record", Text, nullable=False),         # JSON: how the closed round stood
)

# --- statements of the annotator's hot path (SQLAlchemy reuses their compiled SQL) --------------
ROUND = select(meta.c.value).where(meta.c.key == "round")
#: The round read by a write that must not interleave with a round change (PostgreSQL row
#: locks; SQLite renders no clause: its write transactions are serial).
ROUND_SHARED = ROUND.with_for_update(read=True)
ROUND_EXCLUSIVE = ROUND.with_for_update()
MINE = (answers.c.round == bindparam("round"), answers.c.annotator == bindparam("annotator"))
DONE = select(func.count()).select_from(answers).where(*MINE)
ANSWER_AT = select(answers).where(*MINE, answers.c.task_index == bindparam("task"))
_after = answers.alias("after")
#: The smallest answered index whose successor is unanswered, plus one: the first gap after 0.
GAP = select(func.min(answers.c.task_index + 1)).where(*MINE, ~select(_after.c.task_index).where(
    _after.c.round == bindparam("round"), _after.c.annotator == bindparam("annotator"),
    _after.c.task_index == answers.c.task_index + 1).exists())
R2_TOTAL = select(func.count()).select_from(round2_pairs)
R2_HAS = select(round2_pairs.c.task_index).where(round2_pairs.c.task_index == bindparam("task"))
R2_NEXT = select(func.min(round2_pairs.c.task_index)).where(~select(answers.c.task_index).where(
    *MINE, answers.c.task_index == round2_pairs.c.task_index).exists())
R2_BEFORE = select(func.count()).select_from(round2_pairs).where(round2_pairs.c.task_index < bindparam("task"))
SESSION = (select(users.c.name, users.c.role, sessions.c.csrf_token)
           .join(users, users.c.name == sessions.c.user_name)
           .where(sessions.c.id_hash == bindparam("id_hash"), sessions.c.expires_at > bindparam("now")))
SAVED = select(*[answers.c[f] for f in ANSWER_FIELDS], answers.c.answered_at).where(
    *MINE, answers.c.anchor == bindparam("anchor"), answers.c.frame == bindparam("frame"))
RECENT = select(answers).where(*MINE).order_by(answers.c.answered_at.desc()).limit(bindparam("limit"))
VERSION = select(task_versions.c.version).where(
    task_versions.c.round == bindparam("round"), task_versions.c.annotator == bindparam("annotator"),
    task_versions.c.task_index == bindparam("task"))
