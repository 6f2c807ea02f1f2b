"""`robustlab video sample` and `robustlab video finalize` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from robustlab.cli import app, main

from .conftest import make_video

RUNNER = CliRunner()


def test_sample_then_finalize(tmp_path):
    videos = tmp_path / "videos"
    make_video(videos / "a.mp4", 20)
    (videos / "broken.mov").write_bytes(b"nope")
    (tmp_path / "labels.json").write_text(json.dumps({"a.mp4": 1}))
    (tmp_path / "classes.json").write_text(json.dumps(["cat", "dog"]))
    result = RUNNER.invoke(app, ["video", "sample", str(videos), str(tmp_path / "out"), "--k", "2",
                                 "--seed", "5", "--labels", str(tmp_path / "labels.json"),
                                 "--classes", str(tmp_path / "classes.json")])
    assert result.exit_code == 0, result.output
    assert "sampled 1 of 2 videos (5 frames)" in result.output and "broken.mov" in result.output
    tasks = [json.loads(x) for x in (tmp_path / "out" / "review_tasks.jsonl").read_text().splitlines()]
    answers = [{"annotator": "ana", "anchor": t["anchor"], "frame": t["frame"], "label_correct": "yes",
                "round": 1, **({"similarity": "similar"} if t["offset"] else {})} for t in tasks]
    (tmp_path / "reviews").mkdir()
    (tmp_path / "reviews" / "ana.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    result = RUNNER.invoke(app, ["video", "finalize", str(tmp_path / "out"), str(tmp_path / "reviews")])
    assert result.exit_code == 0, result.output
    assert "kept 1 of 1 anchors and 4 neighbours" in result.output
    pmsets = json.loads((tmp_path / "out" / "pmsets.json").read_text())
    assert [len(v) for v in pmsets.values()] == [4]
    labels = json.loads((tmp_path / "out" / "labels.json").read_text())
    assert set(map(tuple, labels.values())) == {(1,)}


def test_errors_are_one_line(tmp_path):
    cmd = [sys.executable, "-c", "from robustlab.cli import main; main()", "video", "sample",
           str(tmp_path / "missing"), str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1  # a data error (2 is for unparseable command lines)
    assert "error:" in proc.stderr and "missing does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sample_over_a_review_with_answers_is_a_clear_error(tmp_path, monkeypatch, capsys):
    videos = tmp_path / "videos"
    make_video(videos / "a.mp4", 20)
    out = tmp_path / "out"
    assert RUNNER.invoke(app, ["video", "sample", str(videos), str(out), "--k", "2"]).exit_code == 0
    (out / "reviews").mkdir()
    (out / "reviews" / "review-app.jsonl").write_text(json.dumps({"annotator": "ana"}) + "\n")
    before = (out / "review_tasks.jsonl").read_bytes()
    monkeypatch.setattr(sys, "argv", ["robustlab", "video", "sample", str(videos), str(out), "--k", "3"])
    with pytest.raises(SystemExit) as exited:
        main()
    output = capsys.readouterr().err
    assert exited.value.code == 1 and "holds answers to the review" in output and "Traceback" not in output
    assert (out / "review_tasks.jsonl").read_bytes() == before
