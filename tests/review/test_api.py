"""The review app over HTTP (FastAPI's TestClient): login, round 1, undo, round 2, admin, export, finalize."""

from __future__ import annotations

import json
import re

import pytest

from robustlab.metrics import cohen_kappa, fleiss_kappa, rating_counts
from robustlab.video.review import read_reviews

from .conftest import BACKENDS
from .helpers import answer, client, csrf_of, login, shown_task

# Tasks of the test set: 0 anchor of clip_00, 1-4 its pairs (offsets -1, +1, -2, +2); 5 anchor of
# clip_01, 6-9 its pairs.
ROUND1 = {
    "ana": {2: ("yes", "dissimilar", "motion")},
    "ben": {2: ("yes", "dissimilar", "blur_change"), 3: ("yes", "unsure", None), 7: ("no", "similar", None)},
}
BEN_ADDS_TO_ANCHOR_5 = [3]


def answer_round1(app, name: str):
    c = login(app, name)
    while (task := shown_task(c)) is not None:
        if task in (0, 5):
            answer(c, task, 1, added=BEN_ADDS_TO_ANCHOR_5 if (name == "ben" and task == 5) else None)
            continue
        label, similarity, reason = ROUND1.get(name, {}).get(task, ("yes", "similar", None))
        answer(c, task, 1, label=label, similarity=similarity, reason=reason)
    return c


def test_login_page_then_login_and_logout(app, service):
    c = client(app)
    page = c.get("/")
    assert page.status_code == 200 and 'name="password"' in page.text and 'type="password"' in page.text
    assert c.get("/review", follow_redirects=False).headers["location"] == "/?next=%2Freview"
    ana = login(c, "ana")
    assert c.get("/", follow_redirects=False).headers["location"] == "/review"
    cookie = c.cookies.get("robustlab_review_session")
    response = c.post("/logout", data={"csrf_token": ana.csrf}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/"
    # the old cookie no longer opens a session: logout ended it on the server
    replay = client(app)
    replay.cookies.set("robustlab_review_session", cookie)
    assert replay.get("/review", follow_redirects=False).headers["location"].startswith("/?")
    assert "robustlab_review_session" not in replay.get("/review").text
    assert login(app, "boss").get("/", follow_redirects=False).headers["location"] == "/admin"


def test_round1_anchor_step_first_then_pairs_saved_when_given(app, service):
    c = login(app, "ana")
    assert shown_task(c) == 0  # the anchor step comes first
    page = c.get("/review").text
    assert "the anchor of video" in page and "Missing labels" in page and 'id="frame-img"' not in page
    answer(c, 0, added=[4])
    assert shown_task(c) == 1
    page = c.get("/review").text
    assert 'id="anchor-img"' in page and 'id="frame-img"' in page and "1 / 10 answered" in page
    answer(c, 1, similarity="dissimilar", reason="background_change")
    saved = {(a.anchor == a.frame, a.similarity, a.reason, a.added_labels)
             for a in service.db.answers(annotator="ana")}
    assert saved == {(True, None, None, (4,)), (False, "dissimilar", "background_change", ())}
    assert shown_task(c) == 2


@pytest.mark.parametrize("db_url", BACKENDS, indirect=True)
def test_resubmitting_the_same_answer_changes_nothing(app, service):
    c = login(app, "ana")
    answer(c, 1, similarity="similar")
    first = service.db.answers(annotator="ana")
    answer(c, 1, similarity="similar")
    assert service.db.answers(annotator="ana") == first  # same row, same time
    answer(c, 1, similarity="dissimilar", reason="other")
    (changed,) = service.db.answers(annotator="ana")
    assert (changed.similarity, changed.reason) == ("dissimilar", "other")
    assert changed.answered_at >= first[0].answered_at
    # a revisited task shows the saved answer
    page = c.get("/review", params={"task": 1}).text
    assert 'value="dissimilar" data-key="d" checked' in page.replace("\n", " ")


def test_undo_removes_the_last_answer_and_shows_it_unsaved(app, service):
    c = login(app, "ana")
    answer(c, 0)
    answer(c, 1, similarity="dissimilar", reason="blur_change")
    response = c.post("/undo", data={"csrf_token": c.csrf}, follow_redirects=False)
    assert response.status_code == 303
    # the undo page's address names the version the undo left (the answer saved once, then undone: v2)
    assert response.headers["location"] == ("/review?task=1&undone=1&base=v2&label_correct=yes&similarity=dissimilar"
                                            "&reason=blur_change")
    assert [a.frame == a.anchor for a in service.db.answers(annotator="ana")] == [True]
    page = c.get(response.headers["location"]).text
    assert 'id="undone-note"' in page and "not saved" in page and "1 / 10 answered" in page
    checked = set(re.findall(r'value="(\w+)" data-key="\w" (?:required)?\s*checked', page))
    assert checked == {"yes", "dissimilar", "blur_change"}          # the old answer, filled in
    assert 'name="base" value="v2"' in page                          # and not saved
    assert shown_task(c) == 1
    # Enter saves it again (redo)
    answer(c, 1, similarity="dissimilar", reason="blur_change")
    assert len(service.db.answers(annotator="ana")) == 2


@pytest.mark.parametrize("fields, message", [
    ({"similarity": "dissimilar"}, "needs a reason"),
    ({"similarity": "similar", "reason": "motion"}, "only for dissimilar"),
    ({"similarity": "maybe"}, "is not one of"),
    ({}, "similarity is required"),
    ({"similarity": "similar", "label": "perhaps"}, "label_correct"),
])
def test_invalid_answers_are_refused_and_not_saved(app, service, fields, message):
    c = login(app, "ana")
    label = fields.pop("label", "yes")
    page = answer(c, 1, label=label, expect=400, **fields)
    assert message in page.text
    assert service.db.answers() == []


def test_added_labels_must_be_classes_and_tasks_must_exist(app, service):
    c = login(app, "ana")
    assert "not classes of this set" in answer(c, 0, added=[10], expect=400).text
    answer(c, 99, similarity="similar", expect=409)
    answer(c, 1, 2, similarity="similar", expect=409)  # round 2 is not open
    assert c.get("/review", params={"task": 99}).status_code == 404
    assert service.db.answers() == []


@pytest.mark.parametrize("db_url", BACKENDS, indirect=True)
def test_round2_shows_round1_answers_and_finalize_applies_strict_majority(app, service, task_dir):
    answer_round1(app, "ana")
    ben = answer_round1(app, "ben")
    assert shown_task(ben) is None and "Round 1 is done" in ben.get("/review").text
    boss = login(app, "boss")
    overview = boss.get("/admin").text
    assert "Cohen&#39;s kappa" in overview or "Cohen's kappa" in overview
    response = boss.post("/admin/round2", data={"csrf_token": boss.csrf, "confirm": "yes"})
    assert response.status_code == 200 and "Round 2 is open on 4 pair(s)" in response.text
    assert service.db.round2_pairs() == [service.task_set.tasks[i].pair for i in (2, 3, 5, 7)]

    ana = login(app, "ana")
    assert shown_task(ana) == 2
    page = ana.get("/review").text
    assert 'id="together-answers"' in page and "blur change" in page and "significant motion" in page
    # the label is preset from ana's anchor step (round 1: she did not answer it in round 2), as in round 1
    assert re.search(r'value="yes" data-key="y" required\s*checked', page)
    assert "anchor step in round 1" in page
    answer(ana, 1, 1, similarity="similar", expect=409)  # round 1 is closed
    answer(ana, 2, 2, similarity="dissimilar", reason="motion")
    answer(ana, 3, 2, similarity="similar")
    answer(ana, 5, 2)
    answer(ana, 7, 2, similarity="similar")
    assert shown_task(ana) is None
    ben = login(app, "ben")
    answer(ben, 2, 2, similarity="dissimilar", reason="motion")
    answer(ben, 3, 2, similarity="dissimilar", reason="other")  # 1-1: a tie
    page = ben.get("/review", params={"task": 3}).text
    assert "not similar" in page.split('id="joint-decision"')[1][:400]
    answer(ben, 5, 2)
    answer(ben, 7, 2, similarity="similar")

    export = boss.get("/admin/export.jsonl")
    assert export.status_code == 200 and export.headers["content-type"].startswith("application/x-ndjson")
    (task_dir / "exported.jsonl").write_text(export.text)
    records = read_reviews(task_dir / "exported.jsonl")
    assert len(records) == 10 + 10 + 4 + 4
    result = boss.post("/admin/finalize", data={"csrf_token": boss.csrf, "confirm": "yes"})
    assert result.status_code == 200 and 'id="finalize-summary"' in result.text
    pmsets = json.loads((task_dir / "pmsets.json").read_text())
    labels = json.loads((task_dir / "labels.json").read_text())
    tasks = service.task_set.tasks
    assert pmsets == {tasks[0].anchor: sorted([tasks[1].frame, tasks[4].frame], key=_offset(tasks)),
                      tasks[5].anchor: sorted([tasks[i].frame for i in (6, 7, 8, 9)], key=_offset(tasks))}
    # ben's added label was not accepted (no majority in round 2)
    assert labels[tasks[5].anchor] == list(tasks[5].labels)
    summary = json.loads((task_dir / "finalize_summary.json").read_text())
    assert summary["neighbours_dropped"] == {"dissimilar": 2} and summary["pairs_decided_in_round_2"] == 4
    # how each round closed: round 1 by boss when round 2 opened, with who answered what; round 2 open
    closed, open_ = summary["review"]["rounds"]
    assert (closed["round"], closed["closed_by"], closed["closed_when"]) == (1, "boss", "round 2 opened")
    assert closed["annotators"] == {"ana": 10, "ben": 10} and closed["complete"] and closed["round2_pairs"] == 4
    assert closed["closed_at"] == open_["opened_at"] and closed["closed_at"].endswith("Z")
    assert (open_["round"], open_["closed_at"], open_["annotators"]) == (2, None, {"ana": 4, "ben": 4})


def _offset(tasks):
    offsets = {t.frame: t.offset for t in tasks}
    return lambda key: offsets[key]


def test_admin_overview_numbers(app, service):
    answer_round1(app, "ana")
    answer_round1(app, "ben")
    o = service.overview()
    assert [(p.annotator, p.round, p.done, p.total) for p in o["progress"]] == [
        ("ana", 1, 10, 10), ("ben", 1, 10, 10), ("cleo", 1, 0, 10)]
    (agree,) = o["agreement"]
    assert agree.method == "Cohen's kappa" and agree.raters == ("ana", "ben")
    assert agree.similarity_items == 8 and agree.label_items == 10
    # by hand: 7 of 8 agree; marginals ana (s 7, d 1), ben (s 6, d 1, u 1): P_e = 43/64
    assert agree.similarity_kappa == pytest.approx(13 / 21)
    sims = {n: [a.similarity for a in sorted(service.db.answers(round=1, annotator=n), key=lambda a: a.frame)
                if a.anchor != a.frame] for n in ("ana", "ben")}
    assert agree.similarity_kappa == pytest.approx(cohen_kappa(sims["ana"], sims["ben"]))
    assert o["reasons"][1] == {"motion": 1, "background_change": 0, "blur_change": 1, "other": 0,
                               "similarity unsure": 1, "label wrong": 1}
    assert sorted(d.task.index for d in o["disagreed"]) == [3, 5, 7]
    assert o["pending_round2"] == 4
    boss = login(app, "boss")
    page = boss.get("/admin").text
    assert "0.619" in page and "10 / 10" in page and "0 / 10" in page


def test_three_annotators_use_fleiss_kappa(app, service):
    for name in ("ana", "ben", "cleo"):
        answer_round1(app, name)
    (agree,) = service.overview()["agreement"]
    assert agree.method == "Fleiss' kappa" and len(agree.raters) == 3
    rows = {}
    for a in service.db.answers(round=1):
        if a.anchor != a.frame:
            rows.setdefault(a.pair, {})[a.annotator] = a.similarity
    counts, _ = rating_counts([[r[n] for n in ("ana", "ben", "cleo")] for r in rows.values()],
                              categories=["similar", "dissimilar", "unsure"])
    assert agree.similarity_kappa == pytest.approx(fleiss_kappa(counts))


def test_finalize_error_is_shown_not_raised(app, service, task_dir):
    (task_dir / "sample.json").write_text("{}")  # not a manifest any more
    boss = login(app, "boss")
    response = boss.post("/admin/finalize", data={"csrf_token": boss.csrf, "confirm": "yes",
                                                  "accept_incomplete": "on"})
    assert response.status_code == 400 and "not a robustlab sample manifest" in response.text
    assert not (task_dir / "pmsets.json").exists()


def test_login_form_token_is_needed(app):
    c = client(app)
    page = c.get("/")
    token = csrf_of(page.text)
    response = c.post("/login", data={"username": "ana", "password": "ana-password-1", "csrf_token": token + "x"},
                      follow_redirects=False)
    assert response.status_code == 403 and "robustlab_review_session" not in response.headers.get("set-cookie", "")


def test_anchor_labels_can_be_typed_when_the_set_names_no_classes(task_dir, tmp_path, password_hashes):
    from robustlab.review.app import create_app
    from robustlab.review.server import build_service
    from robustlab.video.sampling import TASKS

    (task_dir / "classes.json").unlink()
    manifest = json.loads((task_dir / "sample.json").read_text())
    manifest["class_names"] = None
    (task_dir / "sample.json").write_text(json.dumps(manifest))
    service = build_service(task_dir / TASKS, tmp_path / "plain.db")
    service.db.add_user("ana", "annotator", password_hashes["ana"])
    ana = login(create_app(service), "ana")
    page = ana.get("/review").text
    assert 'name="added_labels_text"' in page and 'type="checkbox"' not in page
    response = ana.post("/answer", data={"csrf_token": ana.csrf, "task": "0", "round": "1", "label_correct": "yes",
                                         "added_labels_text": "12, 3"}, follow_redirects=False)
    assert response.status_code == 303
    (saved,) = service.db.answers()
    assert saved.added_labels == (3, 12)
    bad = ana.post("/answer", data={"csrf_token": ana.csrf, "task": "0", "round": "1", "label_correct": "yes",
                                    "added_labels_text": "3, cat"}, follow_redirects=False)
    assert bad.status_code == 400 and "&#39;cat&#39; is not a class number of this set" in bad.text
    assert 'id="answer-form"' in bad.text and 'data-error="yes"' in bad.text   # the task again, with the message
    assert 'value="3, 12"' in ana.get("/review", params={"task": 0}).text
    service.db.close()
