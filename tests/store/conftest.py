"""Fixtures for the store tests: a store per backend (SQLite always; PostgreSQL when a server can be had).

The PostgreSQL server and the per-test schema (``postgres_url``) come from tests/postgres_server.py
through tests/conftest.py.
"""

from __future__ import annotations

import pytest

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def store_location(request, tmp_path) -> dict:
    """Arguments of open_store for a new, empty store on each backend (``location``, ``predictions_dir``)."""
    if request.param == "sqlite":
        return {"location": tmp_path / "store"}
    return {
        "location": request.getfixturevalue("postgres_url"),
        "predictions_dir": tmp_path / "predictions",
    }


@pytest.fixture
def store(store_location):
    """An open, empty store on each backend."""
    from robustlab.store import open_store

    with open_store(**store_location) as opened:
        yield opened
