"""Fixtures of the review app tests: a small real task set (demo videos -> `video sample`), users, apps.

The task set is made once per session with the demo world's video generator (two H.264 clips
of 9 frames, 64 px) sampled with k=2: per video the anchor step and 4 pairs, 10 tasks in all.
Each test gets its own copy (finalize writes into the folder). The database runs on SQLite,
and (marked ``postgres``) on PostgreSQL through the shared ``postgres_url`` fixture.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from robustlab.review.database import ReviewDatabase, review_location
from robustlab.review.demo import build_demo_task_set
from robustlab.review.security import hash_password
from robustlab.video.sampling import TASKS

#: name -> (role, password)
USERS = {"ana": ("annotator", "ana-password-1"), "ben": ("annotator", "ben-password-2"),
         "cleo": ("annotator", "cleo-password-3"), "boss": ("admin", "boss-password-0")}
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="session")
def demo_set_source(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("review-demo")
    build_demo_task_set(root, n_videos=2, k=2, n_frames=9, size=64)
    return root / "set"


@pytest.fixture
def task_dir(demo_set_source, tmp_path) -> Path:
    """A fresh copy of the sampled set: frames/, sample.json, classes.json, review_tasks.jsonl."""
    return Path(shutil.copytree(demo_set_source, tmp_path / "set"))


@pytest.fixture
def tasks_file(task_dir) -> Path:
    return task_dir / TASKS


@pytest.fixture(scope="session")
def password_hashes() -> dict[str, str]:
    """argon2 hashes of the test users' passwords, made once (hashing is slow by design)."""
    return {name: hash_password(password) for name, (_, password) in USERS.items()}


@pytest.fixture
def db_url(request, tmp_path) -> str:
    """SQLite by default; a test that wants both backends says
    ``@pytest.mark.parametrize("db_url", BACKENDS, indirect=True)``."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return str(tmp_path / "review.db")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def users(db_url, password_hashes, task_dir) -> dict:
    """The USERS, added to the database."""
    with ReviewDatabase(review_location(db_url, task_dir)) as db:
        for name, (role, _) in USERS.items():
            db.add_user(name, role, password_hashes[name])
    return USERS


@pytest.fixture
def service(tasks_file, db_url, users):
    from robustlab.review.server import build_service

    svc = build_service(tasks_file, db_url)
    yield svc
    svc.db.close()


@pytest.fixture
def app(service):
    from robustlab.review.app import create_app

    return create_app(service)


@pytest.fixture
def serve():
    """Serve ASGI apps with uvicorn on 127.0.0.1 (a free port each) in threads: ``serve(app)``
    returns the base URL; every server stops at the end of the test."""
    import socket
    import threading
    import time

    import uvicorn

    running = []

    def start(asgi_app) -> str:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(asgi_app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        running.append((server, thread))
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in running:
        server.should_exit = True
    for server, thread in running:
        thread.join(timeout=30)


@pytest.fixture
def live_server(app, serve):
    """The app served by uvicorn on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    return serve(app)
