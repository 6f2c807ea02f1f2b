"""Only given answers are saved, judged with the keyboard alone: the review app in headless Chromium.

The four ways an answer nobody gave used to be saved, each tried as it happened:

1. typing ahead on a slow network (Chromium's network emulation, 400 ms round trips);
2. Back (and the back/forward cache) showing another task's answer on an unanswered task;
3. answering before the candidate frame is shown (the server delays the frames);
4. (admin) finalizing an incomplete round 2 without saying so: see ``test_admin_...`` here and
   ``test_round_change.py``.

Also: the layout at 1366x768 (everything needed to judge is visible without scrolling) and at
390 px, focus and Tab, every key, the history and undo, a lost session, and the round notice.
"""

from __future__ import annotations

import pytest
from report.browser_checks import browser  # noqa: F401  (the shared Chromium fixture)
from sqlalchemy import create_engine, update

from robustlab.review.app import create_app
from robustlab.review.database import User, sessions

from .pages import (
    LAPTOP,
    PHONE,
    SlowDown,
    answer,
    checked,
    fill_login,
    keys,
    log_in,
    review_round,
    shown,
    throttle,
    wait_ready,
)

pytestmark = pytest.mark.browser

ANA, BEN = User("ana", "annotator"), User("ben", "annotator")


def saved(service, name: str, task: int):
    """The saved round-1/2 answer of ``name`` to task ``task`` in the open round, or None."""
    rnd = service.current_round()
    pair = service.task_set.tasks[task].pair
    found = [a for a in service.db.answers(round=rnd, annotator=name) if a.pair == pair]
    return found[0] if found else None


def shown_matches_saved(page, service, name: str) -> None:
    """The form shows exactly the saved answer of its task (or, unanswered, at most the label
    taken from the anchor step), and says which."""
    task = shown(page)
    answer_ = saved(service, name, task)
    got = checked(page)
    if answer_ is None:
        assert page.locator("#saved-note").count() == 0
        assert got in ({}, {"label_correct": ["yes"]}), (task, got)
        if got:
            assert page.locator("#preset-note").count() == 1
        return
    assert page.locator("#saved-note").count() == 1
    expected = {"label_correct": [answer_.label_correct]}
    if answer_.similarity and answer_.anchor != answer_.frame:
        expected["similarity"] = [answer_.similarity]
    if answer_.reason:
        expected["reason"] = [answer_.reason]
    if answer_.added_labels:
        expected["added_labels"] = [str(c) for c in answer_.added_labels]
    assert got == expected, (task, got, expected)


@pytest.fixture
def slow_app(service):
    return SlowDown(create_app(service))


@pytest.mark.slow  # 400 ms round trips
def test_type_ahead_on_a_slow_network_never_answers_the_next_task(browser, service, serve, slow_app):  # noqa: F811
    """On task A, ``y s Enter y d 1 Enter`` with 80 ms between keys, over a link with 400 ms round
    trips: A is saved as similar, and the keys typed while the next task loads are ignored, so
    A+1 stays unanswered (before, A was overwritten as dissimilar/motion)."""
    base = serve(slow_app)
    page = log_in(browser, base, "ana")
    answer(page, "y")                                 # the anchor step; A is the first pair
    a = shown(page)
    throttle(page, latency_ms=400)
    keys(page, "y s Enter y d 1 Enter", delay=80)
    page.wait_for_url(f"**/review?task={a + 1}", timeout=30_000)
    wait_ready(page)
    page.wait_for_timeout(300)
    assert saved(service, "ana", a).similarity == "similar" and saved(service, "ana", a).reason is None
    assert saved(service, "ana", a + 1) is None
    assert shown(page) == a + 1 and checked(page) == {"label_correct": ["yes"]}   # the label, from the anchor
    # from Enter on, the page says it is saving (the server answers late here), and takes no key:
    # the "d" typed meanwhile changes nothing
    # (what the page showed last is copied to window.name, which outlives the page in this tab:
    # Playwright cannot read a page whose navigation is pending)
    page.evaluate("""() => new MutationObserver(() => { window.name = document.getElementById('page-state')
        .textContent + '|' + document.getElementById('keys-pressed').textContent; })
        .observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true})""")
    slow_app.page_delay = 1.0
    keys(page, "s Enter d")
    page.wait_for_url(f"**/review?task={a + 2}", timeout=30_000)
    slow_app.page_delay = 0
    last_state, last_keys = page.evaluate("window.name").split("|")
    assert last_state.startswith("Saving") and last_keys.split(":")[1].split()[:2] == ["S", "\u23ce"], last_keys
    page.wait_for_url(f"**/review?task={a + 2}", timeout=30_000)
    wait_ready(page)
    assert saved(service, "ana", a + 1).similarity == "similar" and saved(service, "ana", a + 1).reason is None
    assert saved(service, "ana", a + 2) is None
    assert page.errors == []


def test_back_and_forward_show_only_the_saved_answer(browser, live_server, service):  # noqa: F811
    page = log_in(browser, live_server, "ana")
    answer(page, "y")
    visited = [shown(page)]
    for sequence in ("d 1", "s", "k"):                # three pairs, each its own address
        answer(page, sequence)
        visited.append(shown(page))
    # unanswered task 4 (the anchor's label only); Back walks through the saved answers
    for _ in range(3):
        page.go_back()
        wait_ready(page)
        shown_matches_saved(page, service, "ana")
    assert shown(page) == visited[0]
    for _ in range(3):
        page.go_forward()
        wait_ready(page)
        shown_matches_saved(page, service, "ana")
    assert shown(page) == visited[-1] and saved(service, "ana", visited[-1]) is None
    # a plain /review in the history (the old path of the bug) is the first unanswered task, empty
    page.goto(live_server + "/review")
    wait_ready(page)
    shown_matches_saved(page, service, "ana")
    assert page.errors == []


@pytest.mark.slow  # the frames arrive 1.5 s late on purpose
def test_the_form_is_inert_until_both_frames_are_shown(browser, service, serve, slow_app):  # noqa: F811
    base = serve(slow_app)
    page = log_in(browser, base, "ana")
    answer(page, "y")
    slow_app.frame_delay = 1.5                        # 1280x720 frames on a slow link
    # the next pair: its anchor frame is in the browser's cache already, its candidate is not
    page.goto(base + f"/review?task={shown(page) + 1}", wait_until="commit")
    page.wait_for_selector("#answer-form")
    task = shown(page)
    keys(page, "y s")
    page.keyboard.press("Enter")
    page.click("#answer-form input[value=similar]", force=True, no_wait_after=True)
    assert page.evaluate("document.getElementById('answer-form').inert") is True
    assert page.locator("#page-state").inner_text().startswith("Loading")
    assert saved(service, "ana", task) is None and shown(page) == task
    wait_ready(page)
    assert page.evaluate("document.getElementById('answer-form').inert") is False
    assert page.evaluate("[...document.querySelectorAll('#frames img')].every(i => i.complete && i.naturalWidth > 0)")
    assert saved(service, "ana", task) is None and checked(page) == {"label_correct": ["yes"]}
    slow_app.frame_delay = 0
    answer(page, "s")
    assert saved(service, "ana", task).similarity == "similar"


def visible_without_scrolling(page, selectors) -> None:
    height = page.viewport_size["height"]
    assert page.evaluate("window.scrollY") == 0
    for selector in selectors:
        box = page.locator(selector).bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height, (selector, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]


@pytest.mark.slow  # three pages and two viewports
def test_layout_at_1366x768_and_390px(browser, live_server, service, tmp_path):  # noqa: F811
    page = log_in(browser, live_server, "ana")
    # the anchor step: question, classes, the keys pressed and Save, beside the frame
    keys(page, "y")
    visible_without_scrolling(page, ["#anchor-img", "#q-label", "#q-added", "#keys-pressed", "#save"])
    assert "Y" in page.locator("#keys").inner_text()
    answer(page, "")
    # a pair: both frames, the similarity question, the reasons, the keys pressed and Save
    keys(page, "d 1")
    visible_without_scrolling(page, ["#anchor-img", "#frame-img", "#q-label", "#q-similar", "#q-reason",
                                     "#keys-pressed", "#save"])
    assert page.locator("#keys").inner_text().split() == ["D", "1"]
    frame = page.locator("#frame-img").bounding_box()
    assert frame["width"] > 350 and frame["height"] > 350             # frames scale up to the viewport
    page.screenshot(path=str(tmp_path / "pair-1366.png"))
    # round 2: the round-1 answers come first, and everything still fits
    for user, sim in ((ANA, "dissimilar"), (BEN, "similar")):
        service.submit(user, 2, 1, {"label_correct": "yes", "similarity": sim,
                                    "reason": "motion" if sim == "dissimilar" else None})
    for user in (ANA, BEN):
        service.submit(user, 3, 1, {"label_correct": "no", "similarity": "unsure"})
    service.open_round2()
    page.goto(live_server + "/review?task=2")
    wait_ready(page)
    service.submit(BEN, 2, 2, {"label_correct": "yes", "similarity": "similar"})
    page.reload()
    wait_ready(page)
    order = page.evaluate("""[...document.querySelectorAll('#answer-form > *')].map(e => e.id).filter(Boolean)""")
    assert order.index("round1-answers") < order.index("q-label")
    visible_without_scrolling(page, ["#round1-answers", "#joint-decision", "#q-label", "#q-similar", "#q-reason",
                                     "#keys-pressed", "#save"])
    page.screenshot(path=str(tmp_path / "round2-1366.png"))
    page.context.close()

    phone = log_in(browser, live_server, "ben", viewport=PHONE)
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    boxes = [phone.locator(s).bounding_box() for s in ("#anchor-img", "#frame-img")]
    assert all(b["width"] > 120 and b["x"] + b["width"] <= PHONE["width"] for b in boxes)
    task = shown(phone)
    answer(phone, "y d 2")                            # judged with the keys there too
    assert saved(service, "ben", task).reason == "background_change"
    assert phone.errors == []


def test_focus_stays_in_the_form_and_enter_never_logs_out(browser, live_server, service):  # noqa: F811
    page = log_in(browser, live_server, "ana")
    answer(page, "y")
    inside = "(() => { const f = document.getElementById('answer-form'); return f.contains(document.activeElement); })()"
    for _ in range(14):
        page.keyboard.press("Tab")
        assert page.evaluate(inside), page.evaluate("document.activeElement.outerHTML")
    for _ in range(6):
        page.keyboard.press("Shift+Tab")
        assert page.evaluate(inside)
    # focus moved to "Log out" (a click, a script): it comes back, and Enter saves instead
    page.evaluate("document.getElementById('logout').focus()")
    assert page.evaluate(inside)
    keys(page, "s")
    task = shown(page)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    wait_ready(page)
    assert saved(service, "ana", task).similarity == "similar"
    assert shown(page) == task + 1 and "/review" in page.url     # still logged in
    # Enter with nothing chosen saves nothing and stays
    page.keyboard.press("Enter")
    page.wait_for_timeout(200)
    assert shown(page) == task + 1 and "Answer every question" in page.locator("#page-state").inner_text()


def test_keys_digits_history_undo_and_full_size(browser, live_server, service):  # noqa: F811
    page = log_in(browser, live_server, "ana")
    # digits mean a reason, on every step: on the anchor step they do nothing (and say so)
    keys(page, "y 1 2")
    assert checked(page) == {"label_correct": ["yes"]}
    assert "reason, on pairs only" in page.locator("#keys-pressed").inner_text()
    # classes are added by number or name (A), the anchor's own label is shown and numbered
    own = service.task_set.tasks[0].labels
    assert page.locator(f"#class-boxes input[value='{own[0]}']").is_disabled()
    first, second = [c for c in range(len(service.task_set.class_names)) if c not in own][:2]
    answer(page, f"a:{first},{service.task_set.class_names[second]}")
    assert saved(service, "ana", 0).added_labels == (first, second)
    answer(page, "d 4")
    answer(page, "s")
    # H: the history, newest first, each a link to edit; Enter follows it
    keys(page, "h")
    assert page.evaluate("document.activeElement.closest('#history') !== null")
    page.keyboard.press("Tab")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    wait_ready(page)
    assert shown(page) == 1 and checked(page)["reason"] == ["other"] and page.locator("#saved-note").count() == 1
    answer(page, "d 3")                               # corrected
    assert saved(service, "ana", 1).reason == "blur_change"
    # Z: the last answer is removed and shown again, unsaved; Enter saves it again
    last = max(service.db.answers(annotator="ana"), key=lambda a: a.answered_at)
    with page.expect_navigation():
        page.keyboard.press("z")
    wait_ready(page)
    assert shown(page) == last.task_index and page.locator("#undone-note").count() == 1
    assert saved(service, "ana", last.task_index) is None
    assert checked(page)["reason"] == ["blur_change"]
    answer(page, "")
    assert saved(service, "ana", last.task_index).reason == "blur_change"
    # F: both frames full size (the larger image), Esc closes
    keys(page, "f")
    assert page.evaluate("document.body.classList.contains('full-view')")
    assert page.locator("#frame-img").get_attribute("src").endswith("?size=full")
    keys(page, "esc")
    assert not page.evaluate("document.body.classList.contains('full-view')")
    assert page.errors == []


def test_a_lost_session_keeps_the_answer_and_saves_it_after_login(browser, live_server, service, db_url):  # noqa: F811
    page = log_in(browser, live_server, "ana")
    answer(page, "y")
    task = shown(page)
    engine = create_engine(f"sqlite:///{db_url}")
    with engine.begin() as conn:                      # the session ends (expired, or logged out elsewhere)
        conn.execute(update(sessions).values(expires_at=0.0))
    engine.dispose()
    keys(page, "d 2")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator("#login-form").count() == 1 and "log in again" in page.locator("#notice").inner_text()
    assert saved(service, "ana", task) is None
    fill_login(page, "ana")
    page.wait_for_url(f"**/review?task={task + 1}", timeout=30_000)   # back, saved, and on to the next
    wait_ready(page)
    assert saved(service, "ana", task).reason == "background_change"
    assert page.errors == []


def test_annotators_see_when_round2_opens(browser, live_server, service):  # noqa: F811
    page = log_in(browser, live_server, "ben")
    assert page.locator("#round-notice").is_hidden()
    service.submit(ANA, 1, 1, {"label_correct": "yes", "similarity": "dissimilar", "reason": "motion"})
    service.open_round2()
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")   # back to the tab (or 20 s)
    page.wait_for_selector("#round-notice:not([hidden])")
    assert "Round 2 is open (1 pairs" in page.locator("#round-notice").inner_text()
    # an answer to the closed round is refused, plainly, on the page, with the way on
    keys(page, "y")
    page.keyboard.press("Enter")
    page.wait_for_selector("#message:not([hidden])")
    assert "round 2 is open now" in page.locator("#message").inner_text()
    assert "Not saved" in page.locator("#page-state").inner_text()
    with page.expect_navigation():
        page.click("#message a")
    wait_ready(page)
    assert shown(page) == 1 and page.locator("#round1-answers").count() == 1
    assert service.db.answers(annotator="ben") == []


def test_admin_confirmations_and_redirect_after_post(browser, live_server, service, task_dir):  # noqa: F811
    for user in (ANA, BEN):
        service.submit(user, 0, 1, {"label_correct": "yes"})
        service.submit(user, 1, 1, {"label_correct": "yes", "similarity": "dissimilar", "reason": "motion"})
    boss = log_in(browser, live_server, "boss")
    boss.goto(live_server + "/admin/confirm/round2")
    assert "still answering" not in boss.content()
    assert "8 of 10 task(s) have no answer" in boss.locator("#incomplete").inner_text()
    with boss.expect_navigation():
        boss.click("#confirm-button")
    assert "Round 2 is open on 1 pair(s)" in boss.locator("#message").inner_text()
    assert "done=round2" in boss.url
    opened_at = service.db.get_meta("round2_opened_at")
    boss.reload()                                     # a reload is a GET: nothing is sent again
    assert service.db.get_meta("round2_opened_at") == opened_at
    # undo: reopen round 1 while nobody answered round 2
    with boss.expect_navigation():
        boss.click("#reopen-round1")
    with boss.expect_navigation():
        boss.click("#confirm-button")
    assert service.current_round() == 1 and "Round 1 is open again" in boss.locator("#message").inner_text()
    boss.goto(live_server + "/admin/confirm/round2")
    with boss.expect_navigation():
        boss.click("#confirm-button")
    service.submit(ANA, 1, 2, {"label_correct": "yes", "similarity": "similar"})
    boss.goto(live_server + "/admin")
    assert boss.locator("#reopen-round1").count() == 0
    assert "0 of 1 answered by every annotator" in boss.locator("#round2-state").inner_text()
    # finalize over an incomplete round 2 needs the explicit choice
    with boss.expect_navigation():
        boss.click("#finalize")
    assert "1 have answers from only some annotators" in boss.locator("#incomplete").inner_text()
    boss.click("#confirm-button")                     # the box is required: the browser stops here
    assert "/admin/confirm/finalize" in boss.url and not (task_dir / "pmsets.json").exists()
    boss.check("#accept-incomplete")
    with boss.expect_navigation():
        boss.click("#confirm-button")
    assert "done=finalized" in boss.url
    assert "Finalized with an incomplete round 2" in boss.locator("#finalized-incomplete").inner_text()
    assert boss.errors == []


def test_admin_page_refreshes_by_itself_and_thumbnails_open_the_pair(browser, live_server, service):  # noqa: F811
    for user, sim in ((ANA, "similar"), (BEN, "dissimilar")):
        service.submit(user, 1, 1, {"label_correct": "yes", "similarity": sim,
                                    "reason": "motion" if sim == "dissimilar" else None})
    boss = log_in(browser, live_server, "boss")
    boss.goto(live_server + "/admin?refresh=1")
    assert boss.locator("#disagreed-count").inner_text() == "1 of 1"
    service.submit(ANA, 2, 1, {"label_correct": "yes", "similarity": "similar"})
    for _ in range(100):                               # no wait_for_function: the page's CSP forbids eval
        boss.wait_for_timeout(100)
        if "2 / 10" in boss.locator("#progress").inner_text():
            break
    assert "2 / 10" in boss.locator("#progress").inner_text()
    boss.goto(live_server + "/admin")                  # the default period (30 s): time to click
    with boss.expect_navigation():
        boss.click("#disagreed .pair-link")
    assert "/admin/pair?task=1" in boss.url
    text = boss.locator("#pair-answers").inner_text()
    assert "ana" in text and "ben" in text and "significant motion" in text
    assert boss.errors == []


def test_every_key_of_a_whole_round_at_1366x768(browser, live_server, service):  # noqa: F811
    """A full round judged with the keyboard alone at 1366x768, never scrolling."""
    page = log_in(browser, live_server, "cleo", viewport=LAPTOP)
    done = review_round(page, {2: "d 1", 3: "k", 7: "n s"})
    assert done == list(range(10)) and page.evaluate("window.scrollY") == 0
    answers = {a.task_index: a for a in service.db.answers(annotator="cleo")}
    assert len(answers) == 10 and answers[2].reason == "motion" and answers[3].similarity == "unsure"
    assert answers[7].label_correct == "no" and all(answers[i].label_correct == "yes" for i in (1, 4, 6, 8, 9))
    assert page.errors == []


def test_a_reload_keeps_the_unsaved_choices_of_that_task_only(browser, live_server, service):  # noqa: F811
    page = log_in(browser, live_server, "ana")
    answer(page, "y")
    task = shown(page)
    keys(page, "d 3")
    page.reload()
    wait_ready(page)
    assert shown(page) == task and checked(page) == {"label_correct": ["yes"], "similarity": ["dissimilar"],
                                                     "reason": ["blur_change"]}
    assert page.locator("#restored-note").count() == 1 and saved(service, "ana", task) is None
    # labelled as a draft, not saved; the note about the anchor step's label is gone with it
    assert "not saved" in page.locator("#restored-note").inner_text() and page.locator("#preset-note").is_hidden()
    # another task never gets them
    page.goto(live_server + f"/review?task={task + 1}")
    wait_ready(page)
    assert checked(page) == {"label_correct": ["yes"]} and page.locator("#restored-note").count() == 0
    page.goto(live_server + f"/review?task={task}")
    wait_ready(page)
    assert checked(page) == {"label_correct": ["yes"]}               # a new visit: the saved state (none)
