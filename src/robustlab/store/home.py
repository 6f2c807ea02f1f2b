"""One home for a store's predictions: the catalog records the folder, every process uses it.

A store's catalog (``store_info``) records, when the store is created, its id and the folder its
Parquet predictions live in. For an SQLite store the folder is kept relative to the catalog's
folder when it is inside it (so a store folder can be moved or copied as a whole), else as an
absolute path; for PostgreSQL it is an absolute path that every driver must see at the same
place (a shared filesystem). The folder holds a marker file (:data:`MARKER_FILE`) with the
store's id, so a process can tell the store's folder from an empty mount point, or from another
store's folder, before it reads or writes anything.

When a store is opened (:func:`settle_home`):

- no folder given (``predictions_dir=None`` and no ``$ROBUSTLAB_PREDICTIONS_DIR``): the recorded
  folder is used;
- a folder given that is not the recorded one: refused (:class:`~robustlab.errors.StoreError`
  naming both), so a driver can never write predictions where the catalog does not expect them;
- the recorded folder missing, or without this store's marker: every use of the predictions is
  refused, naming the folder (reading the catalog alone, e.g. ``robustlab runs``, still works).

Stores created before the catalog recorded a folder adopt the one they are opened with, unless
the catalog lists units none of whose files are there (then it is refused: it is not their folder).
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

from sqlalchemy import Connection, func, select, text

from ..errors import StoreError
from ..fsutil import atomic_write_bytes, ensure_dir
from .catalog import store_info, units
from .database import Database
from .location import PREDICTIONS_ENV, StoreLocation

STORE_ID_KEY = "store_id"
HOME_KEY = "predictions_dir"
#: The marker file in a store's predictions folder; it holds the store's id.
MARKER_FILE = ".robustlab-store"
#: PostgreSQL advisory lock serialising the recording of a store's id and folder.
_RECORD_LOCK_KEY = 0x726F6268  # "robh"
#: Unit files sampled to decide whether a folder holds a legacy store's predictions.
_SAMPLE = 20


@dataclasses.dataclass(frozen=True)
class Home:
    """Where a store's predictions live, as settled when it was opened.

    Attributes
    ----------
    location : StoreLocation
        The location to use (its ``predictions_dir`` is the recorded folder when one is recorded).
    store_id : str or None
        The store's id (None for a read-only store that predates ids).
    recorded : str or None
        The folder as the catalog records it (relative for an SQLite store's own folder).
    problem : str or None
        Why the predictions cannot be used from this process (the folder is missing or belongs
        to another store), else None.
    """

    location: StoreLocation
    store_id: str | None
    recorded: str | None
    problem: str | None


def read_info(conn: Connection) -> dict[str, str]:
    """The ``store_info`` rows as a dict."""
    return {key: value for key, value in conn.execute(select(store_info.c.key, store_info.c.value))}


def recorded_form(location: StoreLocation, folder: Path) -> str:
    """How ``folder`` is recorded: relative to an SQLite catalog's folder when inside it, else absolute."""
    folder = Path(os.path.abspath(folder))
    if location.sqlite_path is not None:
        base = Path(os.path.abspath(location.sqlite_path.parent))
        try:
            return folder.relative_to(base).as_posix() or "."
        except ValueError:
            pass
    return str(folder)


def resolve_recorded(location: StoreLocation, recorded: str) -> Path:
    """The absolute folder that ``recorded`` names for this store."""
    path = Path(recorded)
    if not path.is_absolute() and location.sqlite_path is not None:
        path = location.sqlite_path.parent / path
    return Path(os.path.abspath(path))


def same_folder(a: Path, b: Path) -> bool:
    """Whether two paths name the same folder (symbolic links resolved)."""
    return os.path.realpath(a) == os.path.realpath(b)


def _marker_lines(folder: Path) -> list[str]:
    try:
        return [line.strip() for line in (folder / MARKER_FILE).read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError):
        return []


def read_marker(folder: Path) -> str | None:
    """The store id in ``folder``'s marker file, or None when there is none."""
    lines = _marker_lines(folder)
    return lines[0] if lines else None


def marker_owner(folder: Path) -> tuple[str | None, str | None]:
    """``(catalog, folder)`` an SQLite store's marker records: the catalog file that claimed the
    folder and where the folder was then (real paths), or ``(None, None)``."""
    fields = dict(line.partition(" ")[::2] for line in _marker_lines(folder)[1:])
    return fields.get("catalog") or None, fields.get("folder") or None


def write_marker(folder: Path, store_id: str, owner: Path | None = None) -> None:
    """Create ``folder`` (when missing) and write its marker file: the store id and, for an SQLite
    store, the catalog file that owns the folder (see :func:`sharing_catalog`)."""
    ensure_dir(folder)
    lines = [store_id]
    if owner is not None:
        lines += [f"catalog {os.path.realpath(owner)}", f"folder {os.path.realpath(folder)}"]
    atomic_write_bytes(folder / MARKER_FILE, ("\n".join(lines) + "\n").encode("ascii", "backslashreplace"))


def sharing_catalog(location: StoreLocation, folder: Path) -> str | None:
    """Another SQLite catalog that owns ``folder`` (its marker names it, the folder has not moved
    since, and that catalog still exists), or None.

    A copied store folder holds a copied catalog with the same store id; bound to the original's
    predictions folder (``store relocate``), both catalogs would write there and a ``store check
    --repair`` of one would delete the other's units as orphans. The marker records which catalog
    owns the folder, so that is refused."""
    if location.sqlite_path is None:
        return None
    catalog, marked = marker_owner(folder)
    if catalog is None or marked != os.path.realpath(folder) or not os.path.isfile(catalog):
        return None  # no owner recorded, the folder was copied or moved since, or its catalog is gone
    return None if os.path.realpath(location.sqlite_path) == catalog else catalog


def _claim(location: StoreLocation, folder: Path, store_id: str) -> None:
    """Record this SQLite catalog as the owner of its own predictions folder, when no other
    existing catalog owns it (a copy's folder, or a marker written before owners were recorded)."""
    if location.sqlite_path is None or read_marker(folder) != store_id:
        return
    catalog, marked = marker_owner(folder)
    if catalog == os.path.realpath(location.sqlite_path) and marked == os.path.realpath(folder):
        return
    if sharing_catalog(location, folder) is None:
        try:
            write_marker(folder, store_id, location.sqlite_path)
        except OSError:  # a folder this process may read but not write: the claim waits for a writer
            pass


def _source(location: StoreLocation) -> str:
    return {"argument": "given as predictions_dir", "environment": f"from ${PREDICTIONS_ENV}",
            "default": "the default", "catalog": "recorded by the catalog"}.get(location.predictions_source,
                                                                              location.predictions_source)


def settle_home(db: Database, location: StoreLocation, *, relocate: bool = False) -> Home:
    """Record or check the store's predictions folder (see the module docstring).

    Parameters
    ----------
    db : Database
        The open catalog (schema already current).
    location : StoreLocation
        What this process was given.
    relocate : bool
        Record ``location.predictions_dir`` as the store's new folder (after a move): its marker
        must carry this store's id, unless the store has no units yet.

    Raises
    ------
    StoreError
        When an explicitly given folder differs from the recorded one, or a legacy store's units
        are not in the folder given, or ``relocate`` names a folder of another store.
    """
    where = location.describe()
    info = db.run(read_info, write=False)
    writable = not db.read_only
    if writable and (STORE_ID_KEY not in info or HOME_KEY not in info):
        info = db.run(lambda conn: _record(conn, location, where), write=True)
    store_id, recorded = info.get(STORE_ID_KEY), info.get(HOME_KEY)
    if recorded is None:  # a read-only store from before homes were recorded: as given
        return Home(location, store_id, None, None)
    expected = resolve_recorded(location, recorded)
    if relocate:
        if location.predictions_source != "argument":
            raise StoreError("relocating a store's predictions needs the new folder (predictions_dir=...).")
        new = location.predictions_dir
        has_units = db.run(lambda conn: conn.execute(select(units.c.unit).limit(1)).first() is not None, write=False)
        other = sharing_catalog(location, new)
        if other is not None:
            raise StoreError(
                f"{new} is the predictions folder of the store {other}; the store {where} is a copy of it (they share "
                f"the id {store_id}). Two catalogs must not share one predictions folder: both would write there, and "
                "a `store check --repair` of one would delete the other's units. Relocate this store onto a copy of "
                f"the folder (cp -r {new} NEW_FOLDER), or use the store {other} itself.")
        if has_units and read_marker(new) != store_id:
            raise StoreError(
                f"{new} does not hold the predictions of the store {where} (its {MARKER_FILE} is "
                f"{'missing' if read_marker(new) is None else 'of another store'}): move or copy the whole folder "
                f"{expected} there first, then relocate.")
        if not writable:
            raise StoreError(f"the store {where} is read-only: its predictions folder cannot be changed.")
        recorded = recorded_form(location, new)
        db.run(lambda conn: conn.execute(store_info.update().where(store_info.c.key == HOME_KEY)
                                         .values(value=recorded)), write=True)
        expected = resolve_recorded(location, recorded)
        write_marker(expected, store_id, location.sqlite_path)
    elif location.predictions_source in ("default", "catalog"):
        pass
    elif not same_folder(location.predictions_dir, expected):
        raise StoreError(
            f"the store {where} keeps its predictions in {expected} (recorded when the store was created), but "
            f"this process was told to use {location.predictions_dir} ({_source(location)}). Every driver must "
            f"use the store's folder: unset ${PREDICTIONS_ENV} / predictions_dir, or set it to {expected}. If the "
            f"folder was moved, record its new place with `robustlab store relocate NEW_FOLDER --store ...`.")
    location = dataclasses.replace(location, predictions_dir=expected, predictions_source="catalog")
    if writable and store_id is not None:
        _claim(location, expected, store_id)
    return Home(location, store_id, recorded, visibility_problem(location, store_id))


def _record(conn: Connection, location: StoreLocation, where: str) -> dict[str, str]:
    """Record the store's id and folder when missing (in the caller's write transaction,
    serialised with other processes doing the same), marking the folder first, so that no process
    ever sees a recorded folder without its marker."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _RECORD_LOCK_KEY})
    info = read_info(conn)
    if STORE_ID_KEY not in info:
        info[STORE_ID_KEY] = uuid.uuid4().hex
        conn.execute(store_info.insert().values(key=STORE_ID_KEY, value=info[STORE_ID_KEY]))
    if HOME_KEY not in info:
        folder = location.predictions_dir
        files = conn.execute(select(units.c.file).limit(_SAMPLE)).scalars().all()
        if files and not any((folder / f).is_file() for f in files):
            total = conn.execute(select(func.count()).select_from(units)).scalar()
            raise StoreError(
                f"the store {where} lists {total} stored unit(s), but none of their files is under {folder} "
                f"({_source(location)}), so that is not the folder they were written to. Point predictions_dir (or "
                f"${PREDICTIONS_ENV}) at the folder that holds them (it has a sub-folder per run id, e.g. "
                f"{Path(files[0]).parent}/); the store then records it as its one predictions folder.")
        marker = read_marker(folder)
        if marker is not None and marker != info[STORE_ID_KEY] and not files:
            raise StoreError(
                f"the predictions folder {folder} ({_source(location)}) belongs to another store (its {MARKER_FILE} "
                f"names store {marker}): give the new store {where} a folder of its own.")
        write_marker(folder, info[STORE_ID_KEY], location.sqlite_path)
        conn.execute(store_info.insert().values(key=HOME_KEY, value=recorded_form(location, folder)))
    return info


def visibility_problem(location: StoreLocation, store_id: str | None) -> str | None:
    """Why this process cannot use the store's predictions folder (missing, or another store's),
    or None when its marker names this store."""
    where = location.describe()
    folder = location.predictions_dir
    marker = read_marker(folder)
    other = sharing_catalog(location, folder) if marker == store_id else None
    if other is not None:
        return (f"the predictions folder {folder} of the store {where} belongs to the store {other}, of which this one "
                "is a copy: two catalogs must not share a predictions folder (a `store check --repair` of one would "
                "delete the other's units). Copy the folder (cp -r) and record the copy for this store with "
                "`robustlab store relocate COPY --store ...`.")
    if store_id is None or marker == store_id:
        return None
    if marker is not None:
        return (f"the predictions folder {folder} of the store {where} holds another store's predictions (its "
                f"{MARKER_FILE} names store {marker}, this store is {store_id}): two stores must not share a "
                "predictions folder. Give this store its own folder (robustlab store relocate).")
    state = "does not exist" if not folder.is_dir() else f"exists but is not that store's folder (no {MARKER_FILE} in it)"
    return (f"this process cannot see the predictions folder of the store {where}: the catalog records {folder} as "
            f"the one place its predictions live, and here {folder} {state}. Every driver and worker reads and "
            "writes there: mount the shared folder at that path on this machine, or, if it was moved, record its "
            "new place with `robustlab store relocate NEW_FOLDER --store ...`.")
