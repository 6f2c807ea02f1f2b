"""Driving the review app in headless Chromium (Playwright): log in, wait for a task, press keys.

Also :class:`SlowDown`, an ASGI wrapper that delays the server's answers (frames, pages), and
:func:`throttle`, Chromium's own network emulation through the DevTools protocol (CDP).
"""

from __future__ import annotations

import asyncio
import re

from .conftest import USERS

LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


class SlowDown:
    """ASGI middleware for tests: delay responses to frame requests (``frame_delay``) or to
    everything else (``page_delay``), in seconds; change the attributes at any time."""

    def __init__(self, app) -> None:
        self.app = app
        self.frame_delay = 0.0
        self.page_delay = 0.0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/static/"):
            delay = self.frame_delay if scope["path"].startswith("/frame/") else self.page_delay
            if delay:
                await asyncio.sleep(delay)
        await self.app(scope, receive, send)


def new_page(browser, viewport=LAPTOP):
    """A fresh browser context (own cookies) and page, collecting console and page errors."""
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    return watched(context.new_page())


def another_tab(page):
    """A second tab of the same browser (same cookies and local storage, its own session storage)."""
    return watched(page.context.new_page())


def watched(page):
    """``page``, collecting its console and page errors in ``page.errors``."""
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "status of 4" not in m.text
            else None)
    page.errors = errors
    return page


def log_in(browser, base: str, name: str, viewport=LAPTOP, page=None):
    """Log ``name`` in (a new context unless ``page`` is given); waits for the first page to be ready."""
    page = page or new_page(browser, viewport)
    if not page.url.startswith(base):
        page.goto(base + "/")
    fill_login(page, name)
    if USERS[name][0] == "annotator":
        wait_ready(page)
    return page


def fill_login(page, name: str) -> None:
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", USERS[name][1])
    with page.expect_navigation():
        page.click("#login-form button[type=submit]")


def wait_ready(page, timeout: float = 30_000) -> None:
    """Until the task's frames are shown and the form takes keys (or the round-done page is up)."""
    page.wait_for_selector("#page-state.ready, #round-done", timeout=timeout)


def shown(page) -> int | None:
    """The task index the page shows (None: the round is done)."""
    form = page.locator("#answer-form")
    return int(form.get_attribute("data-task")) if form.count() else None


def checked(page) -> dict[str, list[str]]:
    """The answer the form shows: checked radios and boxes by name (disabled ones left out)."""
    return page.evaluate("""() => {
        const out = {};
        document.querySelectorAll('#answer-form input:checked:not([disabled])').forEach(el => {
            (out[el.name] = out[el.name] || []).push(el.value); });
        return out; }""")


def keys(page, sequence: str, delay: float = 0) -> None:
    """Press space-separated keys (``a:5,3`` presses A, types "5,3" and leaves the field with Enter)."""
    for key in sequence.split():
        if key.startswith("a:"):
            page.keyboard.press("a")
            page.keyboard.type(key[2:])
            page.keyboard.press("Enter")
        else:
            page.keyboard.press({"enter": "Enter", "esc": "Escape"}.get(key, key))
        if delay:
            page.wait_for_timeout(delay)


def answer(page, sequence: str) -> None:
    """Press the keys, then Enter (save), and wait until the next page is ready."""
    keys(page, sequence)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    wait_ready(page)


def review_round(page, answers: dict[int, str], default_pair: str = "s") -> list[int]:
    """Answer every task of the round (anchor steps "y"; pairs ``default_pair``); returns the tasks."""
    done = []
    while (task := shown(page)) is not None:
        anchor = page.locator("#answer-form").get_attribute("data-anchor-step") == "yes"
        answer(page, answers.get(task, "y" if anchor else default_pair))
        done.append(task)
    return done


def throttle(page, latency_ms: float, kbps: float = 2000) -> None:
    """Chromium's network emulation (DevTools ``Network.emulateNetworkConditions``) for this page."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    rate = kbps * 1000 / 8
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": latency_ms,
                                                  "downloadThroughput": rate, "uploadThroughput": rate})
    page.cdp = cdp


def task_of(page) -> int:
    found = re.search(r"task=(\d+)", page.url)
    assert found, page.url
    return int(found.group(1))
