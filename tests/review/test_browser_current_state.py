"""Only an answer given on the current state of its task is saved: the review app in headless Chromium.

The four paths by which an answer nobody gave was saved, or a given one lost, each tried as it
happened (issue 37); each test fails on the code before the fix:

1. Back to an undo page, then Enter: the undone answer was saved over the newer one.
2. A reload of a second tab restored an old draft as "Saved answer shown"; Enter saved it over
   the answer saved in the first tab.
3. Back during a slow save: the answer was lost without a word.
4. A logout and a new login in another tab: Enter got 403, the reload 403 again, and the
   choice was gone.

Also: a network failure keeps the answer (and a save that arrived is not reported lost); an
answer given after the session ended is not saved over one given meanwhile; a planted session
cookie is not used (the visitor is asked to log in); and round 2 keeps Save in view at
1366x768 with 3 + 3 and 8 + 8 answers shown, its label preset from the anchor step as in
round 1.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Error as PlaywrightError
from report.browser_checks import browser  # noqa: F401  (the shared Chromium fixture)

from robustlab.review.database import User

from .conftest import USERS
from .pages import LAPTOP, another_tab, answer, checked, fill_login, keys, log_in, new_page, shown, wait_ready
from .test_browser_safety import saved, visible_without_scrolling

pytestmark = pytest.mark.browser

ANA = User("ana", "annotator")
DISSIMILAR_BACKGROUND = {"label_correct": ["yes"], "similarity": ["dissimilar"], "reason": ["background_change"]}
SIMILAR = {"label_correct": ["yes"], "similarity": ["similar"]}
#: How long to wait for what the fixed page shows at once (the old code never shows it).
SHORT = 10_000


def is_saved(service, task: int, similarity: str, reason: str | None = None, name: str = "ana") -> bool:
    found = saved(service, name, task)
    return found is not None and (found.similarity, found.reason) == (similarity, reason)


def test_back_to_an_undo_page_then_enter_keeps_the_newer_answer(browser, live_server, service):  # noqa: F811
    """Save S, Z, change to 2 and save; Back to the undo page: it shows the task as it is now
    (dissimilar, background change), says why, and Enter keeps that answer. A second tab left on
    the undo page gets 409 and a link to the task as it is now."""
    page = log_in(browser, live_server, "ana")
    answer(page, "y")                                  # the anchor step
    task = shown(page)
    answer(page, "s")
    with page.expect_navigation():
        page.keyboard.press("z")                       # undo: S filled in, not saved
    wait_ready(page)
    assert shown(page) == task and page.locator("#undone-note").is_visible()
    assert checked(page) == SIMILAR and saved(service, "ana", task) is None
    second = another_tab(page)                   # the same undo page in a second tab
    second.goto(page.url)
    wait_ready(second)
    answer(page, "2")                                  # a reason marks it dissimilar: saved
    assert is_saved(service, task, "dissimilar", "background_change")

    page.go_back()                                     # Back to the undo page's address
    wait_ready(page)
    assert "undone=1" in page.url and shown(page) == task
    assert checked(page) == DISSIMILAR_BACKGROUND, checked(page)
    assert page.locator("#stale-undo-note").is_visible() and page.locator("#undone-note").count() == 0
    with page.expect_navigation():
        page.keyboard.press("Enter")
    wait_ready(page)
    assert is_saved(service, task, "dissimilar", "background_change")

    second.keyboard.press("Enter")                     # the old tab: refused, with the way to the task now
    second.wait_for_selector("#message:not([hidden])", timeout=SHORT)
    assert "was answered again" in second.locator("#message").inner_text()
    assert second.locator(f"#message a[href='/review?task={task}']").count() == 1
    assert is_saved(service, task, "dissimilar", "background_change")
    assert page.errors == []


def test_a_reloaded_second_tab_never_shows_an_old_draft_as_saved(browser, live_server, service):  # noqa: F811
    """Tab B chose D/1 on a task (not saved); tab A saved S there; tab B reloads: it shows S as
    saved and offers its draft, not filled in; Enter keeps S. A draft used on purpose (R) is
    labelled a draft, never "saved"."""
    a = log_in(browser, live_server, "ana")
    answer(a, "y")
    task = shown(a)
    b = another_tab(a)
    b.goto(f"{live_server}/review?task={task}")
    wait_ready(b)
    keys(b, "d 1")                                     # tab B's unsaved choices
    answer(a, "s")                                     # tab A saves S
    b.reload()
    wait_ready(b)
    assert checked(b) == SIMILAR, checked(b)
    assert b.locator("#saved-note").is_visible()
    offer = b.locator("#restored-note").inner_text()
    assert "changed since your draft was made" in offer and "not filled in" in offer
    with b.expect_navigation():
        b.keyboard.press("Enter")
    wait_ready(b)
    assert is_saved(service, task, "similar")

    # the next task: tab B's choices again, tab A saves, tab B reloads and uses its draft on purpose
    nxt = shown(b)
    keys(b, "d 1")
    a.goto(f"{live_server}/review?task={nxt}")
    wait_ready(a)
    answer(a, "s")
    b.reload()
    wait_ready(b)
    keys(b, "r")                                       # "Use my draft": seen the saved S, chose D/1
    assert checked(b) == {"label_correct": ["yes"], "similarity": ["dissimilar"], "reason": ["motion"]}
    assert b.locator("#saved-note").is_hidden() and "not saved" in b.locator("#restored-note").inner_text()
    answer(b, "")
    assert is_saved(service, nxt, "dissimilar", "motion")
    assert a.errors == [] and b.errors == []


def test_back_during_a_slow_save_keeps_the_answer_and_says_so(browser, live_server, service):  # noqa: F811
    """Enter, and Back before the save reaches the server: the page Back shows says the answer
    was not saved and links to its task, which shows it filled in as a draft; Enter saves it."""
    page = log_in(browser, live_server, "ana")
    answer(page, "y")
    first = shown(page)
    answer(page, "s")
    task = shown(page)
    held = []

    def hold(route) -> None:                           # the save never reaches the server
        held.append(route)

    page.route("**/answer", hold)
    keys(page, "d 2")
    page.keyboard.press("Enter")
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the save was not sent"
    try:
        page.go_back(timeout=SHORT)                    # Back, while the save is on its way
    except PlaywrightError:                            # a form's pending navigation was cut off (the old page)
        pass
    page.wait_for_url(f"**/review?task={first}", timeout=SHORT)
    wait_ready(page)
    assert shown(page) == first and saved(service, "ana", task) is None
    page.wait_for_selector("#lost-answers:not([hidden]) a", timeout=SHORT)
    notice = page.locator("#lost-answers").inner_text()
    assert f"task {task}" in notice and "was not saved" in notice
    page.unroute("**/answer")
    with page.expect_navigation():
        page.click("#lost-answers a")
    wait_ready(page)
    assert shown(page) == task and checked(page) == DISSIMILAR_BACKGROUND
    note = page.locator("#restored-note").inner_text()
    assert "Not saved" in note and "draft" in note and page.locator("#saved-note").count() == 0
    answer(page, "")
    assert is_saved(service, task, "dissimilar", "background_change")
    # saved: no notice any more
    page.go_back()
    wait_ready(page)
    page.wait_for_timeout(300)
    assert page.locator("#lost-answers").is_hidden() and page.errors == []


def test_a_network_failure_keeps_the_answer_and_a_save_that_arrived_is_not_reported(browser, live_server,  # noqa: F811
                                                                                    service):
    """The network fails on Enter: the page says "Not saved", keeps the choices, and Enter tries
    again. A save that reached the server although the page saw the network fail is not reported
    as lost on the next pages (the page asks the server)."""
    page = log_in(browser, live_server, "ana")
    answer(page, "y")
    task = shown(page)
    page.route("**/answer", lambda route: route.abort())
    keys(page, "d 2")
    page.keyboard.press("Enter")
    page.wait_for_selector("#page-state.failed", timeout=SHORT)
    assert "Not saved: the network failed" in page.locator("#page-state").inner_text()
    assert shown(page) == task and checked(page) == DISSIMILAR_BACKGROUND and saved(service, "ana", task) is None
    page.unroute("**/answer")
    with page.expect_navigation():
        page.keyboard.press("Enter")                   # tries again
    wait_ready(page)
    assert is_saved(service, task, "dissimilar", "background_change")

    nxt = shown(page)

    def arrives_but_the_reply_is_lost(route) -> None:
        route.fetch()                                  # the server saves it ...
        route.abort()                                  # ... and the page sees the network fail

    page.route("**/answer", arrives_but_the_reply_is_lost)
    keys(page, "s")
    page.keyboard.press("Enter")
    page.wait_for_selector("#page-state.failed", timeout=SHORT)
    assert is_saved(service, nxt, "similar")
    page.unroute("**/answer")
    page.goto(f"{live_server}/review?task={task}")     # elsewhere: nothing reported as lost
    wait_ready(page)
    page.wait_for_timeout(500)
    assert page.locator("#lost-answers").is_hidden()
    page.goto(f"{live_server}/review?task={nxt}")      # and the task shows its saved answer, no draft
    wait_ready(page)
    assert checked(page) == SIMILAR and page.locator("#restored-note").count() == 0
    assert [e for e in page.errors if "net::ERR_FAILED" not in e] == []   # only the two cut requests


def test_an_answer_given_after_the_session_ended_is_offered_when_the_task_changed_meanwhile(  # noqa: F811
        browser, live_server, service, db_url):
    """The session ends; Enter sends the annotator to the login. When the task was answered
    meanwhile (another tab, another browser), the login does not save over it: the task shows
    its answer now and offers the one given before the login."""
    from sqlalchemy import create_engine, update

    from robustlab.review.database import sessions

    page = log_in(browser, live_server, "ana")
    answer(page, "y")
    task = shown(page)
    engine = create_engine(f"sqlite:///{db_url}")
    with engine.begin() as conn:
        conn.execute(update(sessions).values(expires_at=0.0))
    engine.dispose()
    service.submit(ANA, task, 1, {"label_correct": "yes", "similarity": "similar"})   # answered meanwhile
    keys(page, "d 2")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_selector("#login-form")
    fill_login(page, "ana")
    wait_ready(page)
    assert shown(page) == task and checked(page) == SIMILAR
    assert "changed since your draft was made" in page.locator("#restored-note").inner_text()
    assert is_saved(service, task, "similar") and page.errors == []


def test_a_logout_and_new_login_in_another_tab_lose_nothing(browser, live_server, service):  # noqa: F811
    """Tab A has D/2 chosen; tab B logs out and in again; Enter in tab A: nothing saved yet (its
    token is out of date), the task comes back with the answer filled in and a notice; Enter saves."""
    a = log_in(browser, live_server, "ana")
    answer(a, "y")
    task = shown(a)
    keys(a, "d 2")
    b = another_tab(a)
    b.goto(f"{live_server}/review")
    wait_ready(b)
    with b.expect_navigation():
        b.click("#logout")
    fill_login(b, "ana")
    wait_ready(b)
    a.keyboard.press("Enter")
    a.wait_for_selector("#restored-note", timeout=SHORT)
    wait_ready(a)
    assert shown(a) == task and checked(a) == DISSIMILAR_BACKGROUND
    assert "session changed" in a.locator("#restored-note").inner_text()
    assert saved(service, "ana", task) is None
    answer(a, "")
    assert is_saved(service, task, "dissimilar", "background_change")
    assert a.errors == []


def test_a_planted_session_cookie_asks_the_visitor_to_log_in(browser, live_server, service):  # noqa: F811
    """ben's session cookie in another browser: the visitor is not taken into ben's account but
    to the login, told why; their own login then ends ben's planted session."""
    ben = log_in(browser, live_server, "ben")
    cookie = next(c for c in ben.context.cookies() if c["name"] == "robustlab_review_session")
    visitor = new_page(browser)
    visitor.context.add_cookies([cookie])
    visitor.goto(live_server + "/")
    visitor.wait_for_selector("#login-form", timeout=SHORT)
    assert "did not log in to" in visitor.locator("#notice").inner_text()
    assert "/?unknown=1" in visitor.url and visitor.locator(".who").count() == 0
    fill_login(visitor, "ana")
    wait_ready(visitor)
    assert visitor.locator(".who").inner_text().startswith("ana")
    ben.reload()                                       # the planted session ended with ana's login
    ben.wait_for_selector("#login-form")
    assert service.db.answers() == [] and visitor.errors == []


def round2_with(service, password_hashes, names: list[str], task: int = 2) -> None:
    """``names`` answer task ``task`` in round 1 (dissimilar) and round 2 (similar); ana answered
    the anchor step "yes" in round 1."""
    for name in names:
        if name not in USERS:
            service.db.add_user(name, "annotator", password_hashes["ana"])
    service.submit(ANA, 0, 1, {"label_correct": "yes"})
    for name in names:
        service.submit(User(name, "annotator"), task, 1, {"label_correct": "yes", "similarity": "dissimilar",
                                                         "reason": "background_change"})
    service.submit(ANA, 3, 1, {"label_correct": "no", "similarity": "unsure"})
    service.open_round2()
    for name in names:
        service.submit(User(name, "annotator"), task, 2, {"label_correct": "yes", "similarity": "similar"})


@pytest.mark.parametrize("names", [["ana", "ben", "cleo"],
                                   ["ana", "ben", "cleo", "dan", "eve", "fay", "gus", "hal"]])
def test_round2_keeps_save_in_view_and_presets_the_label(browser, live_server, service, password_hashes,  # noqa: F811
                                                          names):
    round2_with(service, password_hashes, names)
    page = log_in(browser, live_server, "ana", viewport=LAPTOP)
    page.goto(live_server + "/review?task=2")          # 3 + 3 (or 8 + 8) answers shown, ana's own too
    wait_ready(page)
    visible_without_scrolling(page, ["#round1-answers", "#q-label", "#q-similar", "#q-reason", "#keys-pressed",
                                     "#save"])
    assert page.locator("#together-answers tr").count() == 1 + len(names)   # one row per annotator
    if len(names) > 3:                                 # the answers scroll inside their own box
        assert page.evaluate("(() => { const s = document.getElementById('round1-answers');"
                             " return s.scrollHeight > s.clientHeight; })()")
    # the next pair of round 2: the label is preset from the anchor step (round 1), as in round 1
    page.goto(live_server + "/review?task=3")
    wait_ready(page)
    assert checked(page) == {"label_correct": ["yes"]}
    assert "as you said at this video's anchor step in round 1" in page.locator("#preset-note").inner_text()
    visible_without_scrolling(page, ["#q-label", "#q-similar", "#save"])
    answer(page, "s")
    assert is_saved(service, 3, "similar") and saved(service, "ana", 3).label_correct == "yes"
    assert page.errors == []
