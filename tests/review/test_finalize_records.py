"""What finalize makes of the review app's answers: no answer counted twice, unreviewed pairs said.

- A folder that holds both the admin's download and the app's own export used to be finalized
  with every answer twice (508 records for 254), silently; now finalize refuses it, with the
  count, and says how to fix it.
- ``robustlab video finalize`` records how many candidate pairs had no review at all, and every
  pm-k run on the set reports it (the review app's incomplete rounds: ``test_round_change.py``).
- The app's finalize records how each round closed: who had answered how many of its tasks,
  when the round changed and who changed it (before: only the open round, so a round 1 closed
  with one annotator at 3 of 10 left no trace).
"""

from __future__ import annotations

import json

import robustlab
from robustlab.review.database import User
from robustlab.video.finalize import finalize
from robustlab.video.review import write_reviews

from .helpers import login

CLEO = User("cleo", "annotator")
from .test_bad_input import run_cli

ANA, BEN = User("ana", "annotator"), User("ben", "annotator")


def answer_everything(service, users=(ANA, BEN), skip=()):
    for user in users:
        for task in service.task_set.tasks:
            if task.index in skip:
                continue
            fields = {"label_correct": "yes"} if task.is_anchor_step else {"label_correct": "yes",
                                                                            "similarity": "similar"}
            service.submit(user, task.index, 1, fields)


def test_the_download_beside_the_apps_export_is_refused_with_a_count(app, service, task_dir, monkeypatch, capsys):
    answer_everything(service)
    boss = login(app, "boss")
    assert boss.post("/admin/finalize", data={"csrf_token": boss.csrf, "confirm": "yes"}).status_code == 200
    download = boss.get("/admin/export.jsonl").text
    (task_dir / "reviews" / "reviews.jsonl").write_text(download)      # the admin saved it there
    n = len(download.splitlines())
    code, out = run_cli(monkeypatch, capsys, "video", "finalize", str(task_dir), str(task_dir / "reviews"))
    assert code == 1 and f"{n} review record(s) repeat an answer already given" in out
    assert "reviews.jsonl" in out and "review-app.jsonl" in out and "remove the duplicate file" in out
    # one file of the two: fine
    (task_dir / "reviews" / "reviews.jsonl").unlink()
    code, out = run_cli(monkeypatch, capsys, "video", "finalize", str(task_dir), str(task_dir / "reviews"))
    assert code == 0, out


def test_cli_finalize_counts_unreviewed_pairs_and_pm_k_runs_report_them(service, task_dir, tmp_path):
    answer_everything(service, skip=(3, 4, 8))       # three candidate pairs nobody reviewed
    exported = write_reviews(tmp_path / "reviews.jsonl", service.records())
    summary = finalize(task_dir, exported)
    assert summary["pairs_unreviewed"] == 3 and summary["neighbours_dropped"] == {"unreviewed": 3}
    assert "review" not in json.loads((task_dir / "finalize_summary.json").read_text())
    result = robustlab.evaluate("demo:cnn", "video-pmk", task_dir, store=tmp_path / "store", class_map="none",
                                workers=0, progress=False)
    assert result.metric("n_pairs_unreviewed") == 3
    assert any(note.startswith("incomplete review: 3 pair(s) had no review answer") for note in result.notes)
    assert result.summary["review"] == {"pairs_unreviewed": 3, "pairs_partly_reviewed": 0}


def test_finalize_records_how_each_round_closed(service, task_dir):
    answer_everything(service)
    for task in (0, 1, 2):                            # cleo stopped at 3 of 10
        service.submit(CLEO, task, 1, {"label_correct": "yes"} if task == 0 else
                       {"label_correct": "yes", "similarity": "dissimilar", "reason": "motion"})
    assert service.open_round2(by="boss") == (True, 2)
    assert service.reopen_round1(by="lead") is True   # round 2 closed before anyone answered it
    assert service.open_round2(by="boss") == (True, 2)
    for user in (ANA, BEN, CLEO):
        for task in (1, 2):
            service.submit(user, task, 2, {"label_correct": "yes", "similarity": "similar"})
    summary = service.finalize(by="boss")
    rounds = json.loads((task_dir / "finalize_summary.json").read_text())["review"]["rounds"]
    assert summary["review"]["rounds"] == rounds
    assert [(r["round"], r["closed_when"], r["closed_by"]) for r in rounds] == [
        (1, "round 2 opened", "boss"), (2, "round 1 reopened", "lead"), (1, "round 2 opened", "boss"),
        (2, "open when finalized", None)]
    first = rounds[0]
    assert first["annotators"] == {"ana": 10, "ben": 10, "cleo": 3} and first["complete"] is False
    assert (first["tasks"], first["unreviewed"], first["partly_reviewed"], first["round2_pairs"]) == (10, 0, 7, 2)
    assert first["opened_at"] is None and first["closed_at"] == rounds[1]["opened_at"]
    assert rounds[1]["closed_at"] == rounds[2]["opened_at"] and rounds[2]["closed_at"] == rounds[3]["opened_at"]
    assert rounds[1]["answers"] == 0 and rounds[1]["tasks"] == 2
    assert rounds[3]["annotators"] == {"ana": 2, "ben": 2, "cleo": 2} and rounds[3]["complete"] is True
    assert all(r["closed_at"] is None or r["closed_at"].endswith("Z") for r in rounds)
