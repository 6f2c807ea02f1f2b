"""The results store: a catalog of runs, units, metrics and problems, plus Parquet predictions.

A *run* is (model, benchmark, dataset, config); its id is a hash of those, so registering the
same run twice gives the same id. A run is done as *work units* (e.g. ``"fog/3/shard-0007"``);
each finished unit's per-sample predictions go to one Parquet file (written atomically), then
one catalog row marks the unit done. A killed run therefore resumes with
:meth:`Store.completed_units`, and re-writing a unit replaces it (never double-counts).

Each process opens its own :class:`Store` (a Store pickles as its location, so handing one
to a worker process reopens it there).

:class:`Store` is made of parts, one module each, whose methods each run one transaction, a
named function of ``conn`` (and the resolved run id) beside them:

- :mod:`~robustlab.store.lifecycle`: opening (schema creation and migration, the predictions
  folder's home) and closing;
- :mod:`~robustlab.store.runs`: registering, reading, listing, changing and deleting runs;
- :mod:`~robustlab.store.units`: each finished unit's predictions (a Parquet file and a row);
- :mod:`~robustlab.store.holders`: the processes working on a run and the units they claim;
- :mod:`~robustlab.store.results`: a run's metrics and the samples it skipped.
"""

from __future__ import annotations

import os

from .database import upsert_statement
from .holders import StoreHolders
from .identity import RunNotFoundError
from .lifecycle import check_not_truncated
from .location import StoreLocation, resolve_location
from .results import StoreResults
from .runs import RUN_STATUSES, RunRecord, StoreRuns
from .units import StoreUnits, UnitPredictions

__all__ = [
    "RUN_STATUSES",
    "RunNotFoundError",
    "RunRecord",
    "Store",
    "UnitPredictions",
    "check_not_truncated",
    "open_store",
    "upsert_statement",
]


class Store(StoreRuns, StoreUnits, StoreHolders, StoreResults):
    """Catalog (SQLite or PostgreSQL) plus per-sample predictions (Parquet files).

    Use :func:`open_store` to make one; close it with :meth:`close` or a ``with`` block.

    Attributes
    ----------
    location : StoreLocation
        The catalog URL/file and the predictions folder.
    migrated_from : int or None
        The schema version the catalog was migrated from when opening it, else None.
    backup_path : Path or None
        Copy of an SQLite catalog taken before migrating it, else None.
    durable : bool
        Whether each write is flushed to the disk before it counts (see :func:`open_store`).
    store_id : str or None
        The store's id, recorded in its catalog and in its predictions folder's marker file.
    """

    def __reduce__(self):
        return (_reopen, (self.location, self._options))


def open_store(
    location: str | os.PathLike | None = None,
    *,
    predictions_dir: str | os.PathLike | None = None,
    busy_timeout: float = 15.0,
    lock_retries: int = 3,
    durable: bool = False,
    must_exist: bool = False,
    relocate: bool = False,
) -> Store:
    """Open (creating or migrating as needed) the results store at ``location``.

    Parameters
    ----------
    location : str, path-like or None
        None: ``$ROBUSTLAB_STORE`` or ``./.robustlab/``. A folder: ``<folder>/catalog.db`` and
        ``<folder>/predictions/``. A ``.db``/``.sqlite`` file or ``sqlite:///file.db``: that
        SQLite catalog, predictions beside it. ``postgresql://user@host/db``: the catalog on
        PostgreSQL (psycopg 3).
    predictions_dir : str or path-like, optional
        Folder for the Parquet predictions (default: beside an SQLite catalog; for PostgreSQL
        ``$ROBUSTLAB_PREDICTIONS_DIR`` or ``./.robustlab/predictions``).
    busy_timeout : float
        Seconds one SQLite transaction waits for another writer's lock.
    lock_retries : int
        Further attempts after a lock timeout before a StoreError.
    durable : bool
        False (default): writes survive a killed or crashed process (files are renamed into
        place only when complete; SQLite ``synchronous=NORMAL``), and after a power loss at
        worst the last units are redone. True: also flush every Parquet file and SQLite commit
        to the disk (``fsync``; about 10 ms more per unit on a slow disk).
    must_exist : bool
        Refuse a location that holds no store yet instead of creating one (what reading
        commands do: a typo in ``--store`` must not silently give an empty store).
    relocate : bool
        Record ``predictions_dir`` as the store's predictions folder after the folder was moved
        (it must hold the store's marker file).

    Notes
    -----
    A catalog this process cannot write (read-only file, folder or mount) is opened read-only:
    reading works, writing raises a StoreError saying so.

    The catalog records its predictions folder when the store is created; later opens use it
    (``predictions_dir`` may be left out) and refuse a different one (see
    :mod:`robustlab.store.home`).

    Raises
    ------
    StoreError
        When the location is not a store (another kind of file), is locked, has a newer schema,
        or (``must_exist``) holds no store.
    InputError
        When the location is malformed (unsupported URL scheme, in-memory SQLite).
    """
    resolved = resolve_location(location, predictions_dir)
    check_not_truncated(resolved)
    return Store(
        resolved,
        busy_timeout=busy_timeout,
        lock_retries=lock_retries,
        durable=durable,
        must_exist=must_exist,
        relocate=relocate,
    )


def _reopen(location: StoreLocation, options: dict) -> Store:
    return Store(location, **options)
