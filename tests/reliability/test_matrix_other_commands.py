"""The bad-input matrix for `import-mmdet`, `video sample`, `video finalize`, `study adversarial`,
`list` and (its quick cases) `demo`."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import av
import numpy as np
import torch

from robustlab.metrics.importers import read_mmdet_robustness_results

from .helpers import assert_error, assert_ok, files_under, run, run_process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COCO_RESULTS = FIXTURES / "detection" / "coco_faster_rcnn_r50_fpn_1x_results.pkl"


class _RunsCode:
    """Unpickling this creates the file MARKER: the proof that a loader ran a pickle's code."""

    marker: Path | None = None

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


# --- import-mmdet ---------------------------------------------------------------------------------


def test_import_mmdet_bad_files(tmp_path):
    assert_error(run("import-mmdet", tmp_path / "nope.pkl"), "nope.pkl does not exist")
    (tmp_path / "text.pkl").write_text("not a pickle\n")
    assert_error(run("import-mmdet", tmp_path / "text.pkl"), "not a readable pickle")
    (tmp_path / "cut.pkl").write_bytes(COCO_RESULTS.read_bytes()[:300])
    assert_error(run("import-mmdet", tmp_path / "cut.pkl"), "not a readable pickle")
    payload = _RunsCode()
    payload.marker = tmp_path / "code-ran"
    (tmp_path / "hostile.pkl").write_bytes(pickle.dumps({"fog": payload}))
    assert_error(run("import-mmdet", tmp_path / "hostile.pkl"), "refused to unpickle global")
    assert not payload.marker.exists()


def test_import_mmdet_corruptions_the_pickle_lacks(tmp_path):
    """-c naming corruptions the pickle lacks was a KeyError traceback (fails on the old code)."""
    nested = read_mmdet_robustness_results(COCO_RESULTS)
    partial = {c: {s: {"bbox": dict(cell)} for s, cell in nested[c].items()} for c in ("gaussian_noise", "fog")}
    (tmp_path / "partial.pkl").write_bytes(pickle.dumps(partial, protocol=2))
    line = assert_error(run("import-mmdet", tmp_path / "partial.pkl", "-c", "fog,snow"), "no results for snow")
    assert "fog, gaussian_noise" in line
    assert_ok(run("import-mmdet", tmp_path / "partial.pkl", "-c", "fog"))


def test_import_mmdet_unknown_names():
    assert "Did you mean 'fog'" in assert_error(run("import-mmdet", COCO_RESULTS, "-c", "fogg"))
    assert_error(run("import-mmdet", COCO_RESULTS, "--rpc", "ratio"), "'ratio'")
    assert_error(run("import-mmdet", COCO_RESULTS, "--task", "segm"), "no 'segm' results")


# --- video sample / finalize ----------------------------------------------------------------------


def write_video(path: Path, frames: int = 12) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for i in range(frames):
            img = np.full((32, 32, 3), (i * 20) % 256, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def sample(videos: Path, out: Path, *extra) -> list[str]:
    return ["video", "sample", str(videos), str(out), "--k", "2", *map(str, extra)]


def test_video_sample_missing_empty_and_non_video(tmp_path):
    assert_error(run(*sample(tmp_path / "nowhere", tmp_path / "out")), "does not exist")
    (tmp_path / "empty").mkdir()
    assert_error(run(*sample(tmp_path / "empty", tmp_path / "out")), "no video files")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("x")
    assert_error(run(*sample(tmp_path / "docs", tmp_path / "out")), "no video files")
    assert not (tmp_path / "out").exists()


def test_video_sample_truncated_video(tmp_path):
    videos = tmp_path / "videos"
    good = write_video(videos / "good.mp4")
    (videos / "cut.mp4").write_bytes(good.read_bytes()[:400])
    result = run(*sample(videos, tmp_path / "out"))
    assert_ok(result)
    assert "sampled 1 of 2 videos" in result.out and "cut.mp4" in result.out
    (videos / "good.mp4").unlink()
    assert_error(run(*sample(videos, tmp_path / "out2")), "none of the 1 videos")


def test_video_sample_bad_labels(tmp_path):
    """Labels that match no class were accepted (fails on the old code)."""
    videos = tmp_path / "videos"
    write_video(videos / "a.mp4")
    (tmp_path / "classes.json").write_text(json.dumps(["cat", "dog"]))
    for text, message in (("{bad", "not valid JSON"), ("[1, 2]", "expected a JSON object"),
                          ('{"a.mp4": 5}', "label 5 of video 'a.mp4' matches no class"),
                          ('{"a.mp4": ["cow"]}', "label 'cow' of video 'a.mp4' matches no class")):
        (tmp_path / "labels.json").write_text(text)
        result = run(*sample(videos, tmp_path / "out", "--labels", tmp_path / "labels.json",
                             "--classes", tmp_path / "classes.json"))
        assert_error(result, message)
        assert not (tmp_path / "out").exists()
    (tmp_path / "labels.json").write_text('{"a.mp4": ["dog"], "b.mp4": 0}')
    result = run(*sample(videos, tmp_path / "out", "--labels", tmp_path / "labels.json",
                         "--classes", tmp_path / "classes.json"))
    assert_ok(result)
    assert "1 entries of the labels file match no sampled video: b.mp4" in result.out
    assert json.loads((tmp_path / "out" / "sample.json").read_text())["videos"][0]["labels"] == [1]


def test_video_sample_unknown_names_and_output_inside_input(tmp_path):
    videos = tmp_path / "videos"
    write_video(videos / "a.mp4")
    assert_error(run(*sample(videos, tmp_path / "out", "--format", "bmp")), "'bmp'")
    for _ in range(2):  # frames written inside the videos folder are not read back as videos
        result = run(*sample(videos, videos / "sampled"))
        assert_ok(result)
        assert "sampled 1 of 1 videos" in result.out


def test_video_finalize_bad_inputs(tmp_path):
    assert_error(run("video", "finalize", tmp_path / "nowhere", tmp_path / "reviews"), "sample.json not found")
    videos = tmp_path / "videos"
    write_video(videos / "a.mp4")
    assert_ok(run(*sample(videos, tmp_path / "out")))
    before = files_under(tmp_path / "out")
    reviews = tmp_path / "reviews"
    reviews.mkdir()
    (reviews / "ana.jsonl").write_text('{"annotator": "ana", bad\n')
    assert_error(run("video", "finalize", tmp_path / "out", reviews), "ana.jsonl, line 1", "not valid JSON")
    assert_error(run("video", "finalize", tmp_path / "out", tmp_path / "missing.jsonl"), "missing.jsonl")
    assert files_under(tmp_path / "out") == before  # nothing written by the failed runs


# --- study ----------------------------------------------------------------------------------------


STUDY = """[study]
seeds = 1
epochs = 1
checkpoints = [1]
eval_samples = 16
eps = [0.0, 0.1]
device = "cpu"
[[conditions]]
name = "a"
architecture = "{architecture}"
dataset = "digits"
"""


def test_study_bad_config(tmp_path):
    assert_error(run("study", "adversarial", "--config", tmp_path / "none.toml"), "does not exist")
    (tmp_path / "bad.toml").write_text("this is not toml [")
    assert_error(run("study", "adversarial", "--config", tmp_path / "bad.toml"), "not valid TOML")
    (tmp_path / "typo.toml").write_text(STUDY.format(architecture="lenett"))
    assert_error(run("study", "adversarial", "--config", tmp_path / "typo.toml"), "unknown architecture 'lenett'")


def test_study_hostile_or_truncated_checkpoint(tmp_path):
    """A hostile or truncated checkpoint gave a raw UnpicklingError advising weights_only=False
    (fails on the old code)."""
    config = tmp_path / "study.toml"
    config.write_text(STUDY.format(architecture="lenet"))
    checkpoint = tmp_path / "out" / "runs" / "a" / "seed-0" / "checkpoint.pt"
    checkpoint.parent.mkdir(parents=True)
    payload = _RunsCode()
    payload.marker = tmp_path / "code-ran"
    checkpoint.write_bytes(pickle.dumps({"model": payload}))
    result = run("study", "adversarial", "--config", config, "--out", tmp_path / "out")
    line = assert_error(result, str(checkpoint), "refuses to load it")
    assert "weights_only" not in result.err and "allow_pickle" not in result.err
    assert not payload.marker.exists()
    torch.save({"model": {}}, checkpoint)
    checkpoint.write_bytes(checkpoint.read_bytes()[:200])
    result = run("study", "adversarial", "--config", config, "--out", tmp_path / "out")
    assert_error(result, str(checkpoint), "truncated or corrupt")
    assert "weights_only" not in result.err and line


# --- list, demo -----------------------------------------------------------------------------------


def test_list_unknown_names():
    assert_error(run("list", "corruptionz"), "unknown list 'corruptionz'")
    assert "Did you mean 'noise'" in assert_error(run("list", "--subset", "noize"))


def test_demo_output_that_cannot_be_written(tmp_path):
    (tmp_path / "file").write_text("x")
    assert_error(run("demo", "--quick", "--no-progress", "--out", tmp_path / "file"), "is a file")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        result = run_process("demo", "gallery", "--quick", "--out", ro / "gallery", obey_permissions=True)
    finally:
        ro.chmod(0o755)
    assert_error(result, str(ro))
    assert files_under(ro) == {}
