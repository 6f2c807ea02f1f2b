"""Where a store lives: turn what the user typed (``--store``) into a database URL and a folder.

A location is one of

- ``None``: the environment variable ``ROBUSTLAB_STORE`` when set, else the folder ``./.robustlab/``;
- a folder: ``<folder>/catalog.db`` (SQLite) and ``<folder>/predictions/``;
- a file ending ``.db``, ``.sqlite`` or ``.sqlite3`` (or any existing file): that SQLite file,
  predictions in ``predictions/`` beside it;
- ``sqlite:///path.db``: the same, written as a URL;
- ``postgresql://user@host/db`` (or ``postgresql+psycopg://``, ``postgres://``): the catalog
  on PostgreSQL through psycopg 3; predictions in ``predictions_dir``, else the environment
  variable ``ROBUSTLAB_PREDICTIONS_DIR``, else ``./.robustlab/predictions``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

DEFAULT_FOLDER = ".robustlab"
CATALOG_FILE = "catalog.db"
PREDICTIONS_FOLDER = "predictions"
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
STORE_ENV = "ROBUSTLAB_STORE"
PREDICTIONS_ENV = "ROBUSTLAB_PREDICTIONS_DIR"
_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


@dataclass(frozen=True)
class StoreLocation:
    """A resolved store location.

    Attributes
    ----------
    url : str
        SQLAlchemy URL of the catalog (``sqlite:////abs/path.db`` or ``postgresql+psycopg://...``).
    predictions_dir : Path
        Absolute folder holding the Parquet files of per-sample predictions.
    sqlite_path : Path or None
        Absolute path of the SQLite catalog file; None for PostgreSQL.
    predictions_source : str
        Where ``predictions_dir`` came from: ``"argument"`` (``predictions_dir=``),
        ``"environment"`` (``$ROBUSTLAB_PREDICTIONS_DIR``), ``"default"`` (beside an SQLite
        catalog, or ``./.robustlab/predictions``) or ``"catalog"`` (the folder the catalog
        records, see :mod:`robustlab.store.home`). A store adopts the folder its catalog
        records unless one was given explicitly, and refuses one that differs.
    """

    url: str
    predictions_dir: Path
    sqlite_path: Path | None
    predictions_source: str = "default"

    @property
    def is_sqlite(self) -> bool:
        """True when the catalog is an SQLite file."""
        return self.sqlite_path is not None

    def describe(self) -> str:
        """Human-readable name of the catalog for messages (the file, or the URL without password)."""
        if self.sqlite_path is not None:
            return str(self.sqlite_path)
        return hide_password(self.url)

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:  # never the URL's password, even in a traceback or a debugger
        return (f"StoreLocation(url={hide_password(self.url)!r}, predictions_dir={str(self.predictions_dir)!r}, "
                f"sqlite_path={None if self.sqlite_path is None else str(self.sqlite_path)!r}, "
                f"predictions_source={self.predictions_source!r})")


def resolve_location(
    location: str | os.PathLike | None = None, predictions_dir: str | os.PathLike | None = None
) -> StoreLocation:
    """Resolve a user-given store location (see the module docstring for the accepted forms).

    Parameters
    ----------
    location : str, path-like or None
        Folder, SQLite file, ``sqlite:///`` URL or ``postgresql://`` URL.
    predictions_dir : str, path-like or None
        Folder for the Parquet prediction files; overrides the default next to the catalog.

    Returns
    -------
    StoreLocation

    Raises
    ------
    InputError
        For an unsupported URL scheme or an in-memory SQLite database.
    """
    if location is None:
        location = os.environ.get(STORE_ENV) or DEFAULT_FOLDER
    text = os.fspath(location)
    if not text.strip():
        raise InputError("empty store location: give a folder, a .db file or a postgresql:// URL.")
    if "://" in text:
        return _resolve_url(text, predictions_dir)
    path = Path(text).expanduser().absolute()
    if path.suffix.lower() in SQLITE_SUFFIXES or path.is_file():
        return _sqlite_location(path, predictions_dir)
    return _sqlite_location(path / CATALOG_FILE, predictions_dir)


def _resolve_url(url: str, predictions_dir: str | os.PathLike | None) -> StoreLocation:
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme in ("sqlite", "sqlite+pysqlite"):
        # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy writes them.
        file_part = rest[1:] if rest.startswith("/") else rest
        file_part = file_part.split("?", 1)[0]
        if not file_part or file_part == ":memory:":
            raise InputError(
                f"store URL {url!r} is an in-memory SQLite database, which other processes cannot "
                "see and which is lost at exit: give a file, e.g. sqlite:///results.db."
            )
        return _sqlite_location(Path(file_part).expanduser().absolute(), predictions_dir)
    if scheme in _POSTGRES_SCHEMES:
        if predictions_dir:
            folder, source = predictions_dir, "argument"
        elif os.environ.get(PREDICTIONS_ENV):
            folder, source = os.environ[PREDICTIONS_ENV], "environment"
        else:
            folder, source = Path(DEFAULT_FOLDER) / PREDICTIONS_FOLDER, "default"
        return StoreLocation(
            url=f"postgresql+psycopg://{rest}",
            predictions_dir=Path(folder).expanduser().absolute(),
            sqlite_path=None,
            predictions_source=source,
        )
    raise InputError(
        f"unsupported store URL scheme {scheme!r} in {hide_password(url)!r}: use a folder, a .db "
        "file, sqlite:///file.db or postgresql://user@host/database."
    )


def _sqlite_location(db_path: Path, predictions_dir: str | os.PathLike | None) -> StoreLocation:
    if predictions_dir:
        folder, source = Path(predictions_dir).expanduser().absolute(), "argument"
    else:
        folder, source = db_path.parent / PREDICTIONS_FOLDER, "default"
    return StoreLocation(url=f"sqlite:///{db_path}", predictions_dir=folder, sqlite_path=db_path,
                         predictions_source=source)


def hide_password(url: str) -> str:
    """``url`` with its password replaced by ``***`` (``postgresql://user:***@host/db``).

    Both places a libpq URL can carry a password are covered: ``user:password@`` and the
    query parameter ``?password=...``.

    Parameters
    ----------
    url : str
        Any URL; one without a password is returned unchanged.
    """
    scheme, sep, rest = url.partition("://")
    head, question, query = rest.partition("?")
    query = re.sub(r"((?:^|&)password=)[^&]*", r"\1***", query, flags=re.IGNORECASE)
    credentials, at, host = head.rpartition("@")  # the last '@': a password may hold '@' or '/'
    if at and ":" in credentials:
        head = f"{credentials.split(':', 1)[0]}:***@{host}"
    return f"{scheme}{sep}{head}{question}{query}"
