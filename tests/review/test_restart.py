"""A review survives a server restart (and a closed browser): every saved answer is found again.

Fast: a new app instance on the same database. Slow (``-m slow``): ``robustlab review serve`` in
its own process, killed with SIGKILL mid-review, started again.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from robustlab.review.app import create_app
from robustlab.review.server import build_service

from .conftest import BACKENDS
from .helpers import answer, login, shown_task

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize("db_url", BACKENDS, indirect=True)
def test_a_new_app_on_the_same_database_finds_every_answer(tasks_file, db_url, users):
    first = build_service(tasks_file, db_url)
    ana = login(create_app(first), "ana")
    answer(ana, 0, added=[2])
    answer(ana, 1, similarity="dissimilar", reason="blur_change")
    answer(ana, 2, similarity="similar")
    saved = first.db.answers()
    first.db.close()  # the server goes away

    second = build_service(tasks_file, db_url)
    app = create_app(second)
    ana_again = login(app, "ana")  # a new browser: log in again
    assert second.db.answers() == saved
    assert [(a["frame"], a["similarity"], a["reason"]) for a in ana_again.get("/api/answers/ana").json()] == [
        (a.frame, a.similarity, a.reason) for a in saved]
    assert shown_task(ana_again) == 3 and "3 / 10 answered" in ana_again.get("/review").text
    second.db.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tasks: Path, db: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen([sys.executable, "-m", "robustlab.cli", "review", "serve", str(tasks), "--db", str(db),
                             "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def wait_until_up(process: subprocess.Popen, url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {process.stdout.read().decode(errors='replace')}")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError("the server did not start in time")


@pytest.mark.slow  # two server processes start (imports take seconds); the in-process restart above is fast
def test_killing_the_server_mid_review_loses_nothing(tasks_file, tmp_path, users, db_url):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(tasks_file, Path(db_url), port)
    try:
        wait_until_up(server, url)
        with httpx.Client(base_url=url) as browser:
            ana = login(browser, "ana")
            answer(ana, 0)
            answer(ana, 1, similarity="similar")
            answer(ana, 2, similarity="dissimilar", reason="motion")
            answer(ana, 2, similarity="dissimilar", reason="motion")  # a resubmitted form
            cookie = browser.cookies.get("robustlab_review_session")
        os.killpg(server.pid, signal.SIGKILL)  # no clean shutdown
        server.wait(timeout=30)
        server = start_server(tasks_file, Path(db_url), port)
        wait_until_up(server, url)
        with httpx.Client(base_url=url) as same_browser:  # the open tab, same cookie
            same_browser.cookies.set("robustlab_review_session", cookie)
            assert shown_task(same_browser) == 3
        with httpx.Client(base_url=url) as new_browser:  # a closed browser, logging in again
            ana = login(new_browser, "ana")
            answers = ana.get("/api/answers/ana").json()
            assert [(a["frame"] == a["anchor"], a["similarity"], a["reason"]) for a in answers] == [
                (True, None, None), (False, "similar", None), (False, "dissimilar", "motion")]
            assert "3 / 10 answered" in ana.get("/review", follow_redirects=True).text
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        server.stdout.close()
