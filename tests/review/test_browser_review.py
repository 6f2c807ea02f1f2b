"""The whole review in headless Chromium (Debian's package, through Playwright), as people do it.

Two annotators log in at 1366x768 and review every task of a small set (two demo videos, k=2)
with the keyboard alone, one of them undoes an answer; the admin confirms opening round 2;
both review its pairs seeing each other's round-1 answers; the admin downloads the export and
confirms finalize; the finalized pm-k set is then evaluated with
``robustlab.evaluate(..., "video-pmk", ...)`` on the demo's tiny CNN. A screenshot of the
annotator page is kept under the test's tmp folder (and written to
``$ROBUSTLAB_REVIEW_SCREENSHOT`` when set: that is how docs/images/review-annotator.png is made).
"""

from __future__ import annotations

import json
import os

import pytest
from report.browser_checks import browser  # noqa: F401  (the shared Chromium fixture)

import robustlab
from robustlab.video.review import read_reviews

from .pages import answer, log_in, review_round, shown, wait_ready

pytestmark = pytest.mark.browser

# Keys per task index (0 and 5 are anchor steps; pairs of clip_00 are 1-4, of clip_01 6-9). The label
# of a pair is answered "yes" at its anchor step already (asked once per video).
ROUND1_KEYS = {"ana": {2: "d 1"}, "ben": {2: "3", 3: "k"}}
ROUND2_KEYS = {"ana": {2: "y d 1", 3: "y s"}, "ben": {2: "y d 1", 3: "y s"}}


def test_two_annotators_two_rounds_export_finalize_evaluate(browser, live_server, service, task_dir,  # noqa: F811
                                                            tmp_path):
    base = live_server
    ana = log_in(browser, base, "ana")
    assert shown(ana) == 0 and ana.locator("#q-added").count() == 1   # the anchor step comes first
    answer(ana, "y a:5")                                               # A: type the classes to add
    (anchor_answer,) = service.db.answers(annotator="ana")
    assert anchor_answer.added_labels == (5,)
    assert ana.locator("#preset-note").count() == 1                    # the label, from the anchor step
    answer(ana, "s")
    assert ana.locator("#progress").get_attribute("value") == "2"
    with ana.expect_navigation():
        ana.keyboard.press("z")                                         # undo the last answer
    wait_ready(ana)
    assert shown(ana) == 1 and ana.locator("#progress").get_attribute("value") == "1"
    assert ana.locator("#undone-note").count() == 1                     # shown again, unsaved
    shot = tmp_path / "review-annotator.png"
    ana.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000
    if os.environ.get("ROBUSTLAB_REVIEW_SCREENSHOT"):
        ana.screenshot(path=os.environ["ROBUSTLAB_REVIEW_SCREENSHOT"])
    assert review_round(ana, ROUND1_KEYS["ana"]) == list(range(1, 10))
    assert ana.locator("#round-done").count() == 1

    ben = log_in(browser, base, "ben")
    # pressing a reason key marks the pair dissimilar (JavaScript), so "3" saves dissimilar/blur
    assert review_round(ben, ROUND1_KEYS["ben"]) == list(range(10))
    saved = {(a.annotator, service.task_set.task(a.anchor, a.frame).index): (a.similarity, a.reason)
             for a in service.db.answers(round=1)}
    assert saved[("ana", 2)] == ("dissimilar", "motion") and saved[("ben", 2)] == ("dissimilar", "blur_change")
    assert saved[("ben", 3)] == ("unsure", None) and saved[("ana", 1)] == ("similar", None)
    assert len(saved) == 20

    boss = log_in(browser, base, "boss")
    assert "Cohen" in boss.locator("#agreement").inner_text()
    with boss.expect_navigation():
        boss.click("#open-round2")                                      # asks first
    assert "Nothing: every annotator" in boss.locator("#confirm").inner_text()
    with boss.expect_navigation():
        boss.click("#confirm-button")
    # round 2: the pairs someone doubted (2, 3) and the anchor where the added labels differ (0)
    assert "Round 2 is open on 3 pair(s)" in boss.locator("#message").inner_text()

    for name, page in (("ana", ana), ("ben", ben)):
        page.goto(base + "/review")
        wait_ready(page)
        assert shown(page) == 0 and "5" in page.locator("#round1-answers").inner_text()
        answer(page, "y")                                                 # nobody adds a label now
        table = page.locator("#round1-answers").inner_text()
        assert "ana" in table and "ben" in table and "blur change" in table   # everyone's round-1 answers
        assert review_round(page, ROUND2_KEYS[name]) == [2, 3]
    ana.goto(base + "/review?task=3")
    assert "similar" in ana.locator("#joint-decision").inner_text()

    boss.goto(base + "/admin")
    with boss.expect_download() as download:
        boss.click("#export-link")
    exported = tmp_path / "export.jsonl"
    download.value.save_as(exported)
    records = read_reviews(exported)
    assert len(records) == 20 + 6 and {r.round for r in records} == {1, 2}
    with boss.expect_navigation():
        boss.click("#finalize")
    assert boss.locator("#complete").count() == 1 and boss.locator("#accept-incomplete").count() == 0
    with boss.expect_navigation():
        boss.click("#confirm-button")
    summary = boss.locator("#finalize-summary").inner_text()
    assert "Kept 2 of 2 anchors and 7 neighbours" in summary
    for page in (ana, ben, boss):
        assert page.errors == []
        page.context.close()

    pmsets = json.loads((task_dir / "pmsets.json").read_text())
    labels = json.loads((task_dir / "labels.json").read_text())
    tasks = service.task_set.tasks
    assert labels[tasks[0].anchor] == list(tasks[0].labels)          # the added label lost in round 2
    assert tasks[2].frame not in pmsets[tasks[0].anchor] and tasks[3].frame in pmsets[tasks[0].anchor]
    result = robustlab.evaluate("demo:cnn", "video-pmk", task_dir, store=tmp_path / "store", class_map="none",
                                workers=0, progress=False)
    assert result.status == "complete"
    assert result.metric("n_anchors") == 2 and result.metric("n_neighbours") == 7
    assert 0.0 <= result.metric("accuracy_pmk") <= result.metric("accuracy_original") <= 1.0
