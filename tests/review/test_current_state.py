"""Only an answer given on the current state of its task is saved: the review app over HTTP.

Pages carry the version of the answer they show (``base``); the undo page's address names the
version the undo left; the page's script gets JSON answers (where to go, or why nothing was
saved) and can ask the saved answer of a task; class names that are digits show once. The same
paths in Chromium: ``test_browser_current_state.py``.
"""

from __future__ import annotations

import re

from sqlalchemy import create_engine, text

from robustlab.review.database import ReviewDatabase, review_location
from robustlab.review.server import build_service

from .helpers import answer, client, csrf_of, login

JSON = {"Accept": "application/json"}
BASE = re.compile(r'name="base" value="(v\d+)"')


def base_of(page: str) -> str:
    found = BASE.search(page)
    assert found, "no base in the page"
    return found.group(1)


def post_answer(c, task: int, base: str, *, similarity: str = "similar", reason: str | None = None,
                headers: dict | None = None, csrf: str | None = None):
    data = {"csrf_token": csrf or c.csrf, "task": str(task), "round": "1", "label_correct": "yes",
            "similarity": similarity, "base": base}
    if reason:
        data["reason"] = reason
    return c.post("/answer", data=data, headers=headers or {}, follow_redirects=False)


def test_the_undo_page_carries_its_version_and_shows_the_task_as_it_is_now_later(app, service):
    c = login(app, "ana")
    answer(c, 0)
    answer(c, 1, similarity="similar")
    undo_url = c.post("/undo", data={"csrf_token": c.csrf}, follow_redirects=False).headers["location"]
    undo_page = c.get(undo_url).text
    assert 'id="undone-note"' in undo_page and base_of(undo_page) == "v2"
    # saved again, differently (the same tab after Z, or another tab)
    assert post_answer(c, 1, "v2", similarity="dissimilar", reason="background_change").status_code == 303
    # the undo page, asked for again (Back, a reload): the task as it is now, and why
    again = c.get(undo_url).text
    assert 'id="stale-undo-note"' in again and 'id="undone-note"' not in again and 'id="saved-note"' in again
    assert base_of(again) == "v3" and re.search(r'value="background_change" data-key="2"\s*checked', again)
    # the page of the undo (a second tab left on it) sends its version: refused, nothing changes
    refused = post_answer(c, 1, "v2", similarity="similar")
    assert refused.status_code == 409 and "answered again" in refused.text and "/review?task=1" in refused.text
    (saved,) = [a for a in service.db.answers(annotator="ana") if a.task_index == 1]
    assert (saved.similarity, saved.reason) == ("dissimilar", "background_change")


def test_the_page_script_gets_json_answers(app, service):
    c = login(app, "ana")
    ok = post_answer(c, 1, "v0", headers=JSON)
    assert ok.status_code == 200 and ok.json() == {"saved": True, "next": "/review?task=0"}
    assert post_answer(c, 1, "v0", headers=JSON).json()["saved"] is False          # the same answer again
    stale = post_answer(c, 1, "v0", similarity="unsure", headers=JSON)
    assert stale.status_code == 409 and {"href": "/review?task=1", "text": "this task, as it is now"} in \
        stale.json()["links"]
    bad = post_answer(c, 1, "v1", similarity="dissimilar", headers=JSON)           # no reason
    assert bad.status_code == 400 and "reason" in bad.json()["error"]
    # a logout and a new login (another tab): this page's token is out of date, and says so
    old_csrf = c.csrf
    c.post("/logout", data={"csrf_token": c.csrf})
    login(c, "ana")
    out_of_date = post_answer(c, 1, "v1", similarity="unsure", headers=JSON, csrf=old_csrf)
    assert out_of_date.status_code == 403 and out_of_date.json()["code"] == "csrf"
    # no session: where to log in, and back to the task
    c.post("/logout", data={"csrf_token": c.csrf})
    gone = post_answer(c, 1, "v1", similarity="unsure", headers=JSON, csrf=old_csrf)
    assert gone.status_code == 401 and gone.json()["login"].endswith("next=%2Freview%3Ftask%3D1")
    (saved,) = service.db.answers(annotator="ana")
    assert saved.similarity == "similar"


def test_the_saved_answer_and_its_version_for_the_page_script(app, service):
    c = login(app, "ana")
    assert c.get("/api/saved", params={"task": 1}).json() == {"task": 1, "round": 1, "base": "v0", "answer": None}
    answer(c, 1, similarity="dissimilar", reason="motion")
    assert c.get("/api/saved", params={"task": 1}).json() == {
        "task": 1, "round": 1, "base": "v1",
        "answer": {"label_correct": "yes", "similarity": "dissimilar", "reason": "motion", "added_labels": []}}
    assert c.get("/api/saved", params={"task": 99}).status_code == 404
    assert c.get("/api/saved").status_code == 400
    assert login(app, "boss").get("/api/saved", params={"task": 1}).status_code == 403
    assert client(app).get("/api/saved", params={"task": 1}).status_code == 401


def test_class_names_that_are_digits_show_once(app, service, task_dir, db_url, users):
    """The demo's classes are named 0..9: a class shows as "3", never "3 3"; names that are not
    the class's number still show beside it."""
    c = login(app, "ana")
    page = c.get("/review", params={"task": 0}).text
    boxes = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.split('id="class-boxes"')[1].split("</div>")[0]))
    assert not re.search(r"\b(\d) \1\b", boxes) and "9" in boxes, boxes
    tags = re.findall(r'<span class="tag">([^<]*)</span>', page)
    assert tags and all(not re.fullmatch(r"(\d) \1", t) for t in tags), tags
    boss = login(app, "boss")
    assert not re.findall(r'<span class="tag">(\d) \1</span>', boss.get("/admin/pair", params={"task": 0}).text)
    # named classes: number and name
    (task_dir / "classes.json").write_text('["cat", "dog", "7", "b", "c", "d", "e", "f", "g", "h"]')
    named = build_service(task_dir / "review_tasks.jsonl", db_url)
    try:
        from robustlab.review.app import create_app

        page = login(create_app(named), "ana").get("/review", params={"task": 0}).text
        boxes = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.split('id="class-boxes"')[1].split("</div>")[0]))
        assert "0 cat" in boxes and "1 dog" in boxes and "2 7" in boxes
    finally:
        named.db.close()


def test_a_database_made_before_versions_gains_them_and_keeps_its_answers(app, service, db_url, task_dir):
    answer(login(app, "ana"), 1, similarity="similar")
    service.db.close()
    engine = create_engine(f"sqlite:///{db_url}")
    with engine.begin() as conn:                       # as the previous version left it
        conn.execute(text("DROP TABLE review_task_versions"))
        conn.execute(text("DROP TABLE review_round_changes"))
    engine.dispose()
    with ReviewDatabase(review_location(db_url, task_dir)) as db:
        (kept,) = db.answers()
        assert kept.similarity == "similar" and db.annotator_state("ana", 10, 1).version == 0
        assert db.round_changes() == []


def test_the_login_needs_this_browsers_key(app):
    c = client(app)
    token = csrf_of(c.get("/").text)
    response = c.post("/login", data={"username": "ana", "password": "ana-password-1", "csrf_token": token},
                      follow_redirects=False)
    assert response.status_code == 400 and "needs JavaScript" in response.text
    assert "robustlab_review_session" not in response.headers.get("set-cookie", "")
