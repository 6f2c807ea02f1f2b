"""The review record: one human judgement of one (anchor, frame) pair, as JSON Lines.

A review file holds one JSON object per line (blank lines and lines starting with ``#`` are
ignored). Fields:

==================  =============  ============================================================
field               required       meaning
==================  =============  ============================================================
``annotator``       yes            who answered (any non-empty string, e.g. a user name)
``anchor``          yes            anchor frame key, as in ``review_tasks.jsonl``
``frame``           yes            the frame judged; ``anchor`` itself for the anchor's review
``label_correct``   yes            is the frame correctly labelled: ``"yes"``, ``"no"``,
                                   ``"unsure"``
``similarity``      for pairs      ``"similar"``, ``"dissimilar"`` or ``"unsure"`` (don't
                                   know); ignored for the anchor's own review
``reason``          if dissimilar  ``"motion"``, ``"background_change"``, ``"blur_change"``
                                   or ``"other"``
``round``           yes            ``1`` (each annotator alone) or ``2`` (together, on every
                                   pair anyone marked dissimilar, mislabelled or unsure)
``added_labels``    no             class indices the annotator adds (weakly labelled sources:
                                   missing labels of anchors); default ``[]``
``note``            no             free text
``timestamp``       no             when the answer was given (ISO 8601 string)
==================  =============  ============================================================

Example::

    {"annotator": "ana", "anchor": "frames/clip01/000120.jpg", "frame": "frames/clip01/000118.jpg",
     "label_correct": "yes", "similarity": "dissimilar", "reason": "motion", "round": 1}

Spellings accepted on input and normalized: ``"don't know"``/``"dont know"`` -> ``"unsure"``;
``"background change"``/``"background-change"`` -> ``"background_change"`` (same for blur);
``true``/``false`` for ``label_correct``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import DataError
from ..fsutil import atomic_write_text, read_jsonl

LABEL_ANSWERS = ("yes", "no", "unsure")
SIMILARITY_ANSWERS = ("similar", "dissimilar", "unsure")
REASONS = ("motion", "background_change", "blur_change", "other")
ROUNDS = (1, 2)
REQUIRED_FIELDS = ("annotator", "anchor", "frame", "label_correct", "round")
OPTIONAL_FIELDS = ("similarity", "reason", "added_labels", "note", "timestamp")
#: Where a review's answers live beside its task file: the review app's database (SQLite, the
#: default ``--db``), its table of answers, and the folder of exported review files.
REVIEW_DB = "review.db"
REVIEW_ANSWERS_TABLE = "review_answers"
REVIEWS_DIR = "reviews"

_SYNONYMS = {"don't know": "unsure", "dont know": "unsure", "dont_know": "unsure",
             "unknown": "unsure", "true": "yes", "false": "no"}


@dataclass(frozen=True)
class ReviewRecord:
    """One validated answer; see the module docstring for the fields."""

    annotator: str
    anchor: str
    frame: str
    label_correct: str
    round: int
    similarity: str | None = None
    reason: str | None = None
    added_labels: tuple[int, ...] = ()
    note: str = ""
    timestamp: str | None = None
    source: str = field(default="", compare=False)

    @property
    def is_anchor_review(self) -> bool:
        """True for the anchor's own review (``frame == anchor``)."""
        return self.frame == self.anchor

    def to_json(self) -> dict:
        """The record as a JSON-ready dict (without ``source``; empty optional fields dropped)."""
        out = {k: v for k, v in asdict(self).items() if k != "source"}
        out["added_labels"] = list(self.added_labels)
        return {k: v for k, v in out.items()
                if k in REQUIRED_FIELDS or v not in (None, "", [])}


def _norm(value: object) -> object:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        v = value.strip().lower()
        return _SYNONYMS.get(v, v).replace(" ", "_").replace("-", "_")
    return value


def parse_review(obj: object, where: str = "review") -> ReviewRecord:
    """Validate one decoded JSON object as a :class:`ReviewRecord`.

    Raises
    ------
    DataError
        Naming ``where`` (e.g. ``reviews.jsonl, line 7``), the field and the allowed values.
    """
    if not isinstance(obj, dict):
        raise DataError(f"{where}: a review record must be a JSON object; got {type(obj).__name__}.")
    unknown = sorted(set(obj) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        raise DataError(f"{where}: unknown field(s) {unknown}; allowed: "
                        f"{', '.join(REQUIRED_FIELDS + OPTIONAL_FIELDS)}.")
    missing = [f for f in REQUIRED_FIELDS if obj.get(f) in (None, "")]
    if missing:
        raise DataError(f"{where}: missing required field(s) {missing}.")
    for name in ("annotator", "anchor", "frame"):
        if not isinstance(obj[name], str):
            raise DataError(f"{where}: {name} must be a string; got {obj[name]!r}.")

    def choice(name: str, allowed: tuple, value: object) -> object:
        v = _norm(value)
        if v not in allowed:
            raise DataError(f"{where}: {name} {value!r} is not one of {', '.join(map(str, allowed))}.")
        return v

    label = choice("label_correct", LABEL_ANSWERS, obj["label_correct"])
    rnd = obj["round"]
    if isinstance(rnd, bool) or rnd not in ROUNDS:
        raise DataError(f"{where}: round {rnd!r} must be 1 or 2.")
    is_anchor = obj["frame"] == obj["anchor"]
    similarity = obj.get("similarity")
    if similarity is not None:
        similarity = choice("similarity", SIMILARITY_ANSWERS, similarity)
    elif not is_anchor:
        raise DataError(f"{where}: similarity is required for a pair (frame != anchor); answer "
                        f"{', '.join(SIMILARITY_ANSWERS)}.")
    reason = obj.get("reason")
    if reason is not None:
        reason = choice("reason", REASONS, reason)
        if similarity != "dissimilar":
            raise DataError(f"{where}: reason {reason!r} is given but similarity is "
                            f"{similarity!r}; a reason is only for dissimilar pairs.")
    elif similarity == "dissimilar" and not is_anchor:
        raise DataError(f"{where}: a dissimilar pair needs a reason: {', '.join(REASONS)}.")
    added = obj.get("added_labels", []) or []
    if not (isinstance(added, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                            and v >= 0 for v in added)):
        raise DataError(f"{where}: added_labels must be a list of class indices (non-negative "
                        f"integers); got {added!r}.")
    for name in ("note", "timestamp"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            raise DataError(f"{where}: {name} must be a string; got {obj[name]!r}.")
    return ReviewRecord(annotator=obj["annotator"], anchor=obj["anchor"], frame=obj["frame"],
                        label_correct=label, round=int(rnd),
                        similarity=None if is_anchor else similarity, reason=reason,
                        added_labels=tuple(sorted(set(added))), note=obj.get("note") or "",
                        timestamp=obj.get("timestamp"), source=where)


def review_files(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """Expand files and folders (every ``*.jsonl`` inside, sorted) into review files."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob("*.jsonl"))
            if not found:
                raise DataError(f"review folder {p} holds no *.jsonl files.")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise DataError(f"review file {p} does not exist.")
    return files


def read_reviews(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[ReviewRecord]:
    """Read and validate review records from JSON Lines files (or folders of ``*.jsonl``).

    Raises
    ------
    DataError
        On the first bad line, naming the file and line number and what is wrong.
    """
    return [parse_review(obj, where) for path in review_files(paths)
            for _, where, obj in read_jsonl(path, what="review file")]


def write_reviews(path: str | os.PathLike, records: Iterable[ReviewRecord | Mapping]) -> Path:
    """Write records as JSON Lines atomically (dicts are validated first)."""
    lines = []
    for i, rec in enumerate(records):
        if not isinstance(rec, ReviewRecord):
            rec = parse_review(dict(rec), f"record {i}")
        lines.append(json.dumps(rec.to_json()) + "\n")
    return atomic_write_text(path, "".join(lines))


def answers_kept_in(folder: str | os.PathLike) -> list[str]:
    """What in ``folder`` holds people's answers to its review tasks, one line each (empty: none).

    Looks at the review app's default database (``review.db``: its saved answers, counted
    read-only) and at the exported review files (``reviews/*.jsonl``: their records). A file
    that cannot be read, or is not a regular file, is listed too: it may hold answers. Used
    before anything would replace the task set those answers refer to.
    """
    root = Path(folder)
    found = []
    db = root / REVIEW_DB
    if db.exists() or db.is_symlink():
        n = _count_db_answers(db)
        if n is None:
            found.append(f"{db} (a review database that cannot be read here)")
        elif n:
            found.append(f"{db} ({n} saved answer(s))")
    exports = root / REVIEWS_DIR
    for path in sorted(exports.glob("*.jsonl")) if exports.is_dir() else []:
        n = _count_records(path)
        if n is None or n:
            found.append(f"{path} ({'cannot be read' if n is None else f'{n} review record(s)'})")
    return found


def _count_db_answers(path: Path) -> int | None:
    """Answers in the review app's SQLite database (read-only); None when it cannot be read."""
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return None
    try:
        return int(conn.execute(f"SELECT count(*) FROM {REVIEW_ANSWERS_TABLE}").fetchone()[0])
    except sqlite3.OperationalError as exc:
        return 0 if "no such table" in str(exc) else None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _count_records(path: Path) -> int | None:
    """Non-blank, non-comment lines of a review file; None when it is not a readable regular file."""
    if not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return sum(1 for line in f if line.strip() and not line.lstrip().startswith("#"))
    except OSError:
        return None
