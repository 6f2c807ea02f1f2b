"""Driving the review app over HTTP in tests: log in, read the page's task, answer, undo."""

from __future__ import annotations

import re
import secrets

from fastapi import FastAPI
from fastapi.testclient import TestClient

from robustlab.review.web import BROWSER_HEADER

from .conftest import USERS

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
TASK = re.compile(r'name="task" value="(\d+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF token in the page"
    return found.group(1)


def client(app, address: str = "testclient") -> TestClient:
    return TestClient(app, client=(address, 50000))


def browser_key() -> str:
    """A new browser's key, as the page's script makes one (session.js): 32 hex digits."""
    return secrets.token_hex(16)


def login(app_or_client, name: str, password: str | None = None, *, expect: int = 303,
          browser: str | None = None) -> TestClient:
    """A client (a TestClient for an app; or the httpx client given) logged in as ``name`` from a
    browser of its own: its key (``browser`` attribute) goes with the login and, as the
    ``X-Review-Browser`` header, with every later request, as the page's script sends it. Its
    ``csrf`` attribute holds the session's token."""
    c = client(app_or_client) if isinstance(app_or_client, FastAPI) else app_or_client
    c.browser = browser or getattr(c, "browser", None) or browser_key()
    c.headers[BROWSER_HEADER] = c.browser
    page = c.get("/")
    assert page.status_code == 200, page.text
    response = c.post("/login", data={"username": name, "password": password or USERS[name][1],
                                      "csrf_token": csrf_of(page.text), "browser": c.browser},
                      follow_redirects=False)
    assert response.status_code == expect, response.text
    if expect == 303:
        home = c.get(response.headers["location"], follow_redirects=True)
        c.csrf = csrf_of(home.text)
    return c


def shown_task(c: TestClient, **params) -> int | None:
    """The task index the annotator page shows (None when the round is done)."""
    page = c.get("/review", params=params, follow_redirects=True)
    assert page.status_code == 200, page.text
    found = TASK.search(page.text)
    return int(found.group(1)) if found else None


def answer(c: TestClient, task: int, round: int = 1, *, label: str = "yes", similarity: str | None = None,
           reason: str | None = None, added: list[int] | None = None, expect: int = 303):
    data = {"csrf_token": c.csrf, "task": str(task), "round": str(round), "label_correct": label}
    if similarity:
        data["similarity"] = similarity
    if reason:
        data["reason"] = reason
    if added:
        data["added_labels"] = [str(a) for a in added]
    response = c.post("/answer", data=data, follow_redirects=False)
    assert response.status_code == expect, response.text
    return response
