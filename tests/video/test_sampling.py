"""sample_videos: anchors, offsets, timestamps, frame types, seeding, and bad videos."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from robustlab.data.images import read_image
from robustlab.errors import DataError, InputError
from robustlab.seeding import as_generator
from robustlab.video.sampling import (
    decode_anchor_window,
    find_videos,
    format_summary,
    sample_videos,
    video_ids,
)

from .conftest import make_video, pyav_truth, read_counter


def test_counter_survives_h264(h264_video):
    truth = pyav_truth(h264_video)
    assert [t["counter"] for t in truth] == list(range(40))
    types = Counter(t["pict_type"] for t in truth)
    assert types["B"] > 0 and types["I"] > 0 and types["P"] > 0, types


def test_sample_one_video_offsets_timestamps_types(h264_video, tmp_path):
    k = 5
    summary = sample_videos(h264_video.parent, tmp_path / "out", k=k, seed=3)
    assert summary["videos_sampled"] == 1 and summary["frames_written"] == 2 * k + 1
    manifest = json.loads((tmp_path / "out" / "sample.json").read_text())
    (video,) = manifest["videos"]
    truth = pyav_truth(h264_video)
    a = video["anchor_index"]
    assert k <= a <= 40 - 1 - k
    assert video["n_frames"] == 40 and video["fps"] == 25.0 and video["source"] == "clip.mp4"
    assert video["anchor"] == f"frames/clip/{a:06d}.jpg"
    assert [f["offset"] for f in video["frames"]] == list(range(-k, k + 1))
    for f in video["frames"]:
        t = truth[f["index"]]
        assert f["index"] == a + f["offset"]
        assert f["pts"] == t["pts"] and f["time_s"] == pytest.approx(t["time_s"])
        assert f["pict_type"] == t["pict_type"]
        # the written image shows the right frame
        assert read_counter(read_image(tmp_path / "out" / f["key"])) == f["index"]
    tasks = [json.loads(line) for line in (tmp_path / "out" / "review_tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 2 * k + 1
    assert tasks[0]["frame"] == tasks[0]["anchor"] == video["anchor"] and tasks[0]["offset"] == 0
    assert sorted(t["offset"] for t in tasks) == list(range(-k, k + 1))


def test_seeded_and_order_independent(h264_video, tmp_path):
    a1 = sample_videos(h264_video.parent, tmp_path / "a", k=3, seed=11)
    a2 = sample_videos(h264_video.parent, tmp_path / "b", k=3, seed=11)
    m1 = json.loads((tmp_path / "a" / "sample.json").read_text())["videos"][0]
    m2 = json.loads((tmp_path / "b" / "sample.json").read_text())["videos"][0]
    assert a1["videos_sampled"] == a2["videos_sampled"] == 1
    assert m1["anchor"] == m2["anchor"]


def test_anchor_choice_is_uniform_over_valid_positions(tmp_path):
    video = make_video(tmp_path / "short.mp4", 9, gop=4)
    k = 3  # valid anchors: 3, 4, 5
    counts = Counter(decode_anchor_window(video, k, as_generator(s))[0][k][1]["index"]
                     for s in range(150))
    assert set(counts) == {3, 4, 5}
    assert min(counts.values()) > 25  # ~50 each


def test_folder_skips_and_reports_bad_videos(tmp_path):
    videos = tmp_path / "videos"
    make_video(videos / "good.mp4", 30)
    make_video(videos / "sub" / "short.mp4", 6)  # < 2k+1 = 11
    (videos / "broken.mp4").write_bytes(b"this is not a video")
    (videos / "notes.txt").write_text("ignored: not a video extension")
    summary = sample_videos(videos, tmp_path / "out", k=5, seed=0)
    assert summary["videos_found"] == 3 and summary["videos_sampled"] == 1
    reasons = {s["source"]: s["reason"] for s in summary["skipped"]}
    assert set(reasons) == {"broken.mp4", "sub/short.mp4"}
    assert "broken.mp4" in reasons["broken.mp4"] and "cannot be decoded" in reasons["broken.mp4"]
    assert "has 6 frames" in reasons["sub/short.mp4"] and "11" in reasons["sub/short.mp4"]
    manifest = json.loads((tmp_path / "out" / "sample.json").read_text())
    assert [s["source"] for s in manifest["skipped"]] == ["broken.mp4", "sub/short.mp4"]
    text = format_summary(summary)
    assert "sampled 1 of 3" in text and "sub/short.mp4" in text


def test_other_container_and_png(tmp_path):
    make_video(tmp_path / "v" / "clip.avi", 15, codec="mpeg4")
    sample_videos(tmp_path / "v", tmp_path / "out", k=2, seed=0, image_format="png")
    (video,) = json.loads((tmp_path / "out" / "sample.json").read_text())["videos"]
    for f in video["frames"]:
        assert f["key"].endswith(".png")
        assert read_counter(read_image(tmp_path / "out" / f["key"])) == f["index"]


def test_labels_carried_into_manifest_and_tasks(h264_video, tmp_path):
    sample_videos(h264_video.parent, tmp_path / "out", k=2, labels={"clip.mp4": [3, 1]},
                  class_names=["a", "b", "c", "d"])
    (video,) = json.loads((tmp_path / "out" / "sample.json").read_text())["videos"]
    assert video["labels"] == [1, 3]
    task = json.loads((tmp_path / "out" / "review_tasks.jsonl").read_text().splitlines()[0])
    assert task["labels"] == [1, 3]
    assert json.loads((tmp_path / "out" / "classes.json").read_text()) == ["a", "b", "c", "d"]
    with pytest.raises(InputError, match="label 'cat' of video 'clip' matches no class"):
        sample_videos(h264_video.parent, tmp_path / "o2", k=2, labels={"clip": ["cat"]})
    assert not (tmp_path / "o2").exists()  # refused before anything is written


def test_bad_arguments(tmp_path, h264_video):
    with pytest.raises(DataError, match="does not exist"):
        sample_videos(tmp_path / "missing", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no video files"):
        sample_videos(tmp_path / "empty", tmp_path / "out")
    with pytest.raises(InputError, match="k=0"):
        sample_videos(h264_video.parent, tmp_path / "out", k=0)
    with pytest.raises(InputError, match="gif"):
        sample_videos(h264_video.parent, tmp_path / "out", image_format="gif")
    bad = tmp_path / "allbad"
    bad.mkdir()
    (bad / "x.mkv").write_bytes(b"\x00" * 100)
    with pytest.raises(DataError, match="none of the 1 videos"):
        sample_videos(bad, tmp_path / "out")


def test_video_ids_unique_and_safe(tmp_path):
    paths = [tmp_path / "a b.mp4", tmp_path / "a b.mkv", tmp_path / "d" / "x.mp4"]
    ids = video_ids(paths, tmp_path)
    assert list(ids.values()) == ["a_b", "a_b_mkv", "d__x"]
    (tmp_path / "d").mkdir()
    for p in paths:
        p.write_bytes(b"")
    assert find_videos(tmp_path) == sorted(paths)


def test_rerun_leaves_only_the_new_frames(h264_video, tmp_path):
    out = tmp_path / "out"
    sample_videos(h264_video.parent, out, k=2, seed=1)
    (out / "frames" / "clip" / "keep-me.txt").write_text("not ours")
    sample_videos(h264_video.parent, out, k=3, seed=2, image_format="png")
    (video,) = json.loads((out / "sample.json").read_text())["videos"]
    on_disk = {p.name for p in (out / "frames" / "clip").iterdir()}
    assert on_disk == {f["key"].split("/")[-1] for f in video["frames"]} | {"keep-me.txt"}


def test_audio_only_file_is_skipped(tmp_path, h264_video):
    import wave

    folder = tmp_path / "v"
    folder.mkdir()
    (folder / "clip.mp4").write_bytes(h264_video.read_bytes())
    with wave.open(str(folder / "sound.mkv"), "wb") as w:  # FFmpeg probes the content, not the name
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 800)
    summary = sample_videos(folder, tmp_path / "out", k=2)
    assert summary["videos_sampled"] == 1
    assert "no video stream" in summary["skipped"][0]["reason"]


def _tree(folder) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith("review.db")}


def test_sampling_again_over_a_review_with_answers_is_refused_and_loses_nothing(h264_video, tmp_path):
    """A folder whose review holds answers (the review app's review.db, or exported reviews/) is
    not sampled again: that would replace the task set and its frames under the answers (the
    server then refused the database, and finalize the export). The error names the fix."""
    from robustlab.review.database import ReviewDatabase, review_location
    from robustlab.video.review import ReviewRecord

    out = tmp_path / "out"
    sample_videos(h264_video.parent, out, k=2, seed=1)
    tasks = [json.loads(line) for line in (out / "review_tasks.jsonl").read_text().splitlines()]
    with ReviewDatabase(review_location(None, out)) as db:   # users only: nothing to lose yet
        db.add_user("ana", "annotator", "$argon2id$not-used-here")
    sample_videos(h264_video.parent, out, k=2, seed=3)
    tasks = [json.loads(line) for line in (out / "review_tasks.jsonl").read_text().splitlines()]
    with ReviewDatabase(review_location(None, out)) as db:
        db.save_answer(ReviewRecord(annotator="ana", anchor=tasks[1]["anchor"], frame=tasks[1]["frame"],
                                    label_correct="yes", similarity="similar", round=1), 1)
    before = _tree(out)
    with pytest.raises(InputError) as refused:
        sample_videos(h264_video.parent, out, k=3, seed=2)
    message = str(refused.value)
    assert "review.db (1 saved answer(s))" in message and "another folder (e.g. out-2)" in message
    assert "robustlab review export answers.jsonl --db" in message
    assert _tree(out) == before                        # frames, tasks and manifest untouched
    with ReviewDatabase(review_location(None, out)) as db:
        assert len(db.answers()) == 1
    # exported answers count too; once both are moved away, sampling again is allowed
    (out / "review.db").rename(tmp_path / "review.db")
    (out / "reviews").mkdir()
    (out / "reviews" / "ana.jsonl").write_text("# exported\n" + json.dumps({"annotator": "ana"}) + "\n\n")
    with pytest.raises(InputError, match=r"ana\.jsonl \(1 review record\(s\)\)"):
        sample_videos(h264_video.parent, out, k=3, seed=2)
    (out / "reviews" / "ana.jsonl").rename(tmp_path / "ana.jsonl")
    sample_videos(h264_video.parent, out, k=3, seed=2)
    assert json.loads((out / "sample.json").read_text())["k"] == 3


def test_a_review_db_that_cannot_be_read_is_refused_too(h264_video, tmp_path):
    out = tmp_path / "out"
    sample_videos(h264_video.parent, out, k=2, seed=1)
    (out / "review.db").write_bytes(b"not a database" * 100)
    with pytest.raises(InputError, match="review database that cannot be read"):
        sample_videos(h264_video.parent, out, k=2, seed=2)
