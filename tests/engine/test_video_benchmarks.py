"""Video pm-k benchmarks (imagenet-vid-robust, ytbb-robust, video-pmk) on tiny generated sets.

Frames are flat-colour images whose red value encodes a "code" (red = 20 * code + 10); the
models below read the code back and return logits the test controls, so every pm-k number is
worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as hs
from torch import nn
from typer.testing import CliRunner

from robustlab.data.images import write_image
from robustlab.engine import evaluate
from robustlab.benchmarks.video import anchor_failures, static_set
from robustlab.errors import DataError, InputError
from robustlab.models import Detector
from robustlab.store import open_store

THIS_FILE = Path(__file__).resolve()
VIDEO = "val/ILSVRC2015_val_{:08d}"
ANCHOR_FRAME = 20

# video -> (anchor labels, anchor code, {offset: (labels, code)}); code = class a 3-way model predicts
SPEC = {
    0: ([0], 0, {-1: ([0], 0), 2: ([0], 0), 5: ([0], 1)}),          # broken by +5
    1: ([1], 1, {1: ([1], 2)}),                                     # broken by +1
    2: ([2], 0, {-3: ([2], 2)}),                                    # anchor wrong
    3: ([0, 1], 1, {-10: ([0], 0), 3: ([0, 1], 0)}),                # multi-label, never broken
    4: ([2], 2, {}),                                                # no neighbours
    5: ([1], 1, {-2: ([1], 1), -4: ([1], 1), 7: ([2], 2)}),          # own label at +7: anchor mode breaks
}
CURVE_FRAME = [5, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3]   # pm-k correct anchors, k = 0..10, frame labels
CURVE_ANCHOR = [5, 4, 4, 4, 4, 3, 3, 2, 2, 2, 2]  # the same judged by the anchor's labels


def code_image(code: int, size: int = 16) -> np.ndarray:
    img = np.zeros((size, size, 3), np.uint8)
    img[..., 0] = 20 * code + 10
    return img


def read_code(x: torch.Tensor) -> torch.Tensor:
    """(N,) codes from float NCHW [0, 1] images made by :func:`code_image`."""
    return torch.round((x[:, 0].mean(dim=(1, 2)) * 255 - 10) / 20).long().clamp(0, 12)


class CodeModel(nn.Module):
    """Logits = ``table[code]``; counts the images it has seen."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("table", table.float())
        self.seen = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen += x.shape[0]
        return self.table[read_code(x)]


def make_code_model3() -> CodeModel:
    """Predicts class ``code`` out of 3 (the sets' own classes: no projection needed)."""
    return CodeModel(torch.eye(13, 3) * 10)


def make_code_model24() -> CodeModel:
    return CodeModel(torch.eye(13, 24) * 10)


#: ImageNet-1k columns of the 3 VID classes used here (class_idx_map.json of the tiny set)
IMAGENET_MAP = {"10": 0, "11": 0, "12": 1, "13": 2, "14": 2}


def make_imagenet_model() -> CodeModel:
    """1000-way logits: with merge max, code c -> VID class c; with sum, every code -> class 2.

    Column 500 (no VID class) always scores highest: unmapped classes are never predicted.
    """
    table = torch.full((13, 1000), -100.0)
    table[:, 500] = 50.0
    table[0, [10, 11, 13, 14]] = torch.tensor([9.0, -9.0, 5.0, 5.0])  # max: 0 (9); sum: 2 (10)
    table[1, [12, 13, 14]] = torch.tensor([9.0, 5.0, 5.0])           # max: 1 (9); sum: 2 (10)
    table[2, [13, 14]] = torch.tensor([9.0, 5.0])                    # max and sum: 2
    return CodeModel(table)


class CodeDetector(nn.Module):
    """A detector: per image a decoy box of label 7 (score .95) and a box of label ``code`` (.9);
    no box at all for code ``blind``."""

    def __init__(self, blind: int | None = None) -> None:
        super().__init__()
        self.blind = blind

    def forward(self, images):
        out = []
        for img in images:
            code = int(read_code(img[None])[0])
            if code == self.blind:
                out.append({"boxes": torch.zeros(0, 4), "scores": torch.zeros(0),
                            "labels": torch.zeros(0, dtype=torch.int64)})
                continue
            out.append({"boxes": torch.tensor([[0, 0, 8, 8], [2, 2, 9, 9]], dtype=torch.float32),
                        "scores": torch.tensor([0.95, 0.9]), "labels": torch.tensor([7, code])})
        return out


# --- tiny sets -------------------------------------------------------------------------------------


def frame_key(video: int, offset: int) -> str:
    return f"{VIDEO.format(video)}/{ANCHOR_FRAME + offset:06d}.JPEG"


def make_vid_set(root: Path, *, classes: list[str] | None = ("cat", "dog", "fox"), class_map: dict | None = None,
                 spec: dict = SPEC) -> Path:
    """ImageNet-Vid-Robust layout: frames, pmsets.json, labels.json (+ classes.json / class map)."""
    pmsets, labels = {}, {}
    for video, (a_labels, a_code, neighbours) in spec.items():
        anchor = frame_key(video, 0)
        pmsets[anchor] = [frame_key(video, o) for o in neighbours]
        labels[anchor] = a_labels
        write_image(root / anchor, code_image(a_code))
        for o, (n_labels, n_code) in neighbours.items():
            labels[frame_key(video, o)] = n_labels
            write_image(root / frame_key(video, o), code_image(n_code))
    (root / "pmsets.json").write_text(json.dumps(pmsets))
    (root / "labels.json").write_text(json.dumps(labels))
    if classes is not None:
        (root / "classes.json").write_text(json.dumps(list(classes)))
    if class_map is not None:
        (root / "class_idx_map.json").write_text(json.dumps(class_map))
    return root


@pytest.fixture(scope="module")
def vid_root(tmp_path_factory) -> Path:
    return make_vid_set(tmp_path_factory.mktemp("vid"))


@pytest.fixture(scope="module")
def vid_imagenet_root(tmp_path_factory) -> Path:
    return make_vid_set(tmp_path_factory.mktemp("vid-imagenet"), classes=None, class_map=IMAGENET_MAP)


def run(model, benchmark, data, store, **options):
    return evaluate(model, benchmark, data, store=store, workers=0, batch_size=4, progress=False, **options)


def curve(result) -> list[float]:
    return [result.metric("accuracy_pmk", f"k={k}") for k in range(11)]


# --- scoring -----------------------------------------------------------------------------------------


def test_video_pmk_hand_worked_numbers(vid_root, tmp_path):
    result = run(make_code_model3(), "video-pmk", vid_root, tmp_path / "store")
    assert result.status == "complete"
    assert result.metric("n_anchors") == 6 and result.metric("n_neighbours") == 10
    assert result.metric("accuracy_original") == pytest.approx(5 / 6)
    assert result.metric("accuracy_pmk") == pytest.approx(3 / 6)
    assert result.metric("accuracy_drop") == pytest.approx(2 / 6)
    assert curve(result) == pytest.approx([c / 6 for c in CURVE_FRAME])
    # Clopper-Pearson 95%: 3/6 -> [0.1181, 0.8819]; 5/6 -> [0.3588, 0.9958]
    assert result.metric("accuracy_pmk_low") == pytest.approx(0.11812, abs=1e-4)
    assert result.metric("accuracy_pmk_high") == pytest.approx(0.88188, abs=1e-4)
    assert result.metric("accuracy_original_low") == pytest.approx(0.35881, abs=1e-4)
    assert result.metric("accuracy_original_high") == pytest.approx(0.99579, abs=1e-4)
    # per class (anchors count for each of their labels): cat v0,v3; dog v1,v3,v5; fox v2,v4
    assert result.metric("class_accuracy_original", "class/cat") == 1.0
    assert result.metric("class_accuracy_pmk", "class/cat") == 0.5
    assert result.metric("class_accuracy_pmk", "class/dog") == pytest.approx(2 / 3)
    assert result.metric("class_accuracy_original", "class/fox") == 0.5
    assert result.metric("class_n_anchors", "class/dog") == 3
    # Gu et al.: P(neighbour correct | anchor correct) for pairs exactly d apart
    cond = {d: result.metric("conditional_accuracy", f"d={d}") for d in (1, 2, 3, 4, 5, 7, 10)}
    assert cond == {1: 0.5, 2: 1.0, 3: 1.0, 4: 1.0, 5: 0.0, 7: 1.0, 10: 1.0}
    assert result.metric("conditional_n_pairs", "d=3") == 2
    assert result.metric("n_broken_at_offset", "offset=1") == 1
    assert result.metric("n_broken_at_offset", "offset=5") == 1
    assert result.metric("n_broken_at_offset", "offset=2") == 0
    summary = result.summary
    assert summary["pm0"]["value"] == pytest.approx(5 / 6) and summary["pm10"]["value"] == pytest.approx(0.5)
    assert summary["curve"]["1"]["value"] == pytest.approx(4 / 6)
    text = result.table()
    assert "pm-0 (anchor accuracy) 83.3% [35.9, 99.6]" in text and "pm-10 50.0% [11.8, 88.2]" in text
    assert "k=1 66.7" in text


def test_smaller_k_and_failures_from_the_stored_run(vid_root, tmp_path):
    store = tmp_path / "store"
    r4 = run(make_code_model3(), "video-pmk", vid_root, store, k=4)
    assert r4.metric("accuracy_pmk") == pytest.approx(4 / 6)
    assert curve_k(r4, 4) == pytest.approx([c / 6 for c in CURVE_FRAME[:5]])
    r10 = run(make_code_model3(), "video-pmk", vid_root, store)
    assert r10.run_id != r4.run_id
    with open_store(store) as st:
        failures = anchor_failures(st, r10.run_id)
        failures4 = anchor_failures(st, r10.run_id[:6], k=4)
    assert [(f.anchor, f.frame, f.offset, f.prediction) for f in failures] == [
        (frame_key(0, 0), frame_key(0, 5), 5, 1),
        (frame_key(1, 0), frame_key(1, 1), 1, 2),
        (frame_key(2, 0), frame_key(2, 0), 0, 0),
    ]
    assert failures[1].labels == (1,)
    assert [f.anchor for f in failures4] == [frame_key(1, 0), frame_key(2, 0)]


def curve_k(result, k):
    return [result.metric("accuracy_pmk", f"k={kk}") for kk in range(k + 1)]


def test_anchor_label_mode_and_ytbb_keys(tmp_path):
    """YTBB-style keys (<ytid>_<ms>/frame-<n>.jpg) judged by the anchor's labels."""
    root = tmp_path / "ytbb"
    pmsets, labels = {}, {}
    for video, (a_labels, a_code, neighbours) in SPEC.items():
        clip = f"yt{video}Xq_{1000 * video}"
        anchor = f"{clip}/frame-{300 + ANCHOR_FRAME}.jpg"
        pmsets[anchor] = [f"{clip}/frame-{300 + ANCHOR_FRAME + o}.jpg" for o in neighbours]
        labels[anchor] = a_labels
        write_image(root / anchor, code_image(a_code))
        for o, (_, n_code) in neighbours.items():
            write_image(root / f"{clip}/frame-{300 + ANCHOR_FRAME + o}.jpg", code_image(n_code))
    (root / "pmsets.json").write_text(json.dumps(pmsets))
    (root / "labels.json").write_text(json.dumps(labels))  # anchors only
    (root / "classes.json").write_text(json.dumps(["cat", "dog", "fox"]))
    result = run(make_code_model3(), "video-pmk", root, tmp_path / "store", label_mode="anchor")
    assert curve(result) == pytest.approx([c / 6 for c in CURVE_ANCHOR])
    with pytest.raises(DataError, match="have no labels"):
        run(make_code_model3(), "video-pmk", root, tmp_path / "store", label_mode="frame")


def _ytbb_release(root: Path) -> Path:
    """A minimal YTBB-Robust release: review files, anchors CSV, class index, frames."""
    root.mkdir(parents=True)
    names = [f"class{i}" for i in range(22)] + ["none", "extra"]
    (root / "ytbb_class_index.json").write_text(json.dumps({str(i): n for i, n in enumerate(names)}))
    rows, anchor_ann, pair_ann = ["ytid,time_ms,label"], [], []
    review_names = ["good", "bad", "unsure", *names]
    pair_names = ["similar", "dissimilar", "bad-anchor"]
    for video, (a_labels, a_code, neighbours) in SPEC.items():
        clip = f"yt{video}Xq_{1000 * video}"
        anchor = f"{clip}/frame-{300 + ANCHOR_FRAME}.jpg"
        rows.append(f"yt{video}Xq,{1000 * video},{a_labels[0]}")
        extra = [review_names.index(names[c]) for c in a_labels[1:]]
        anchor_ann.append({"key": f"/data/frames/{anchor}", "notes": "", "labels": [0, *extra]})
        write_image(root / anchor, code_image(a_code))
        for o in range(-10, 11):
            if o == 0:
                continue
            key = f"{clip}/frame-{300 + ANCHOR_FRAME + o}.jpg"
            reviewed = o in neighbours
            pair_ann.append({"key": f"/data/frames/{anchor},/data/frames/{key}", "notes": "",
                             "labels": [0] if reviewed else [1]})
            write_image(root / key, code_image(neighbours[o][1] if reviewed else 12))
    # an anchor rejected by its reviewer: not part of the set
    rows.append("ytZZ,5,3")
    anchor_ann.append({"key": "ytZZ_5/frame-1.jpg", "notes": "", "labels": [1]})
    (root / "ytbb_robustness_test_anchors_full.csv").write_text("\n".join(rows) + "\n")
    (root / "anchor_labels.json").write_text(json.dumps({"labels": review_names, "annotations": anchor_ann}))
    (root / "pmk_labels.json").write_text(json.dumps({"labels": pair_names, "annotations": pair_ann}))
    return root


def test_ytbb_robust_release_layout(tmp_path):
    root = _ytbb_release(tmp_path / "ytbb")
    result = run(make_code_model24(), "ytbb-robust", root, tmp_path / "store", class_map="none")
    assert result.metric("n_anchors") == 6 and result.metric("n_neighbours") == 10
    assert curve(result) == pytest.approx([c / 6 for c in CURVE_ANCHOR])
    assert result.config["label_mode"] == "anchor"
    with pytest.raises(InputError, match="label_mode"):
        run(make_code_model24(), "ytbb-robust", root, tmp_path / "store", label_mode="frame")


# --- projection ------------------------------------------------------------------------------------


def test_imagenet_projection_merge_modes(vid_imagenet_root, tmp_path):
    store = tmp_path / "store"
    by_max = run(make_imagenet_model(), "imagenet-vid-robust", vid_imagenet_root, store)
    assert by_max.config["projection"]["source"] == "set" and by_max.config["n_classes"] == 30
    assert curve(by_max) == pytest.approx([c / 6 for c in CURVE_FRAME])  # same as the 3-way model
    by_sum = run(make_imagenet_model(), "imagenet-vid-robust", vid_imagenet_root, store, merge="sum")
    # sum: every frame -> class 2; only the class-2 anchors (v2 with its class-2 neighbour, v4) pass
    assert by_sum.metric("accuracy_original") == pytest.approx(2 / 6)
    assert by_sum.metric("accuracy_pmk") == pytest.approx(2 / 6)
    assert by_sum.run_id != by_max.run_id
    with open_store(store) as st:
        cols = st.read_predictions(by_max.run_id)
    logits = np.concatenate([c["logits"] for c in cols.values()])
    assert logits.shape == (16, 30) and np.isneginf(logits[:, 3:]).all()
    assert "source_logits" not in next(iter(cols.values()))


def test_class_map_none_and_file(vid_imagenet_root, tmp_path):
    store = tmp_path / "store"
    thirty = CodeModel(torch.eye(13, 30) * 10)
    r = run(thirty, "imagenet-vid-robust", vid_imagenet_root, store, class_map="none")
    assert r.metric("accuracy_original") == pytest.approx(5 / 6)
    # a 3-way model cannot be projected with the 1000-class map
    with pytest.raises(InputError, match="class-map none"):
        run(make_code_model3(), "imagenet-vid-robust", vid_imagenet_root, store)
    # a map file {set class: [model classes]}: model class 0 -> set class 2, so code 0 frames turn into "2"
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"0": [1], "1": [2], "2": [0]}))
    r = run(make_code_model3(), "imagenet-vid-robust", vid_imagenet_root, store, class_map=str(path))
    assert r.config["projection"]["groups"][:3] == [[1], [2], [0]]
    assert r.metric("accuracy_original") == pytest.approx(2 / 6)  # predicted (code+2)%3: v2 (0->2), v3 (1->0)
    with pytest.raises(InputError, match="merge"):
        run(make_imagenet_model(), "imagenet-vid-robust", vid_imagenet_root, store, merge="vote")


# --- one pass, resume, static set, detectors ---------------------------------------------------------


def test_each_frame_inferred_once_and_resume(tmp_path):
    # two anchors of one video share neighbours 21 and 22
    root = tmp_path / "shared"
    pmsets = {frame_key(0, 0): [frame_key(0, 1), frame_key(0, 2)],
              frame_key(0, 3): [frame_key(0, 1), frame_key(0, 2), frame_key(0, 4)],
              frame_key(1, 0): [frame_key(1, -1)]}
    frames = sorted({k for a, ns in pmsets.items() for k in (a, *ns)})
    for key in frames:
        write_image(root / key, code_image(0 if key != frame_key(0, 2) else 1))
    (root / "pmsets.json").write_text(json.dumps(pmsets))
    (root / "labels.json").write_text(json.dumps({k: [0] for k in frames}))
    (root / "classes.json").write_text(json.dumps(["cat", "dog", "fox"]))
    store = tmp_path / "store"
    model = make_code_model3()
    result = run(model, "video-pmk", root, store, shard_size=3)
    assert model.seen == len(frames) == 7 and result.units_total == 3
    assert result.metric("accuracy_original") == 1.0 and result.metric("accuracy_pmk") == pytest.approx(1 / 3)
    with open_store(store) as st:
        ids = np.concatenate([c["sample_id"] for c in st.read_predictions(result.run_id).values()])
        assert sorted(ids.tolist()) == frames
        st.delete_unit(result.run_id, "frames/shard-0001")
    again = run(model, "video-pmk", root, store, shard_size=3)
    assert model.seen == 7 + 3 and again.units_computed == 1
    assert again.metrics == result.metrics
    done = run(model, "video-pmk", root, store, shard_size=3)
    assert done.units_computed == 0 and model.seen == 10


def test_static_set_across_stored_runs(vid_root, tmp_path):
    store = tmp_path / "store"
    a = run(make_code_model3(), "video-pmk", vid_root, store)
    # a run on another copy of the set (another data folder) is not comparable
    b = run(make_code_model3(), "video-pmk", make_vid_set(tmp_path / "copy"), store)
    with open_store(store) as st:
        with pytest.raises(InputError, match="same set"):
            static_set(st, a.run_id, runs=[b.run_id])
    # a third model on the real set: always predicts class 0
    c = run(CodeModel(torch.zeros(13, 3) + torch.tensor([5.0, 0, 0])), "video-pmk", vid_root, store)
    with open_store(store) as st:
        res = static_set(st, a.run_id)
    # A misses v0:+5, v1:+1; C misses every frame not labelled 0 (ties -> nearest, then list order)
    assert set(res.accuracy) == {a.run_id, c.run_id}
    assert res.frames == {frame_key(0, 0): frame_key(0, 5), frame_key(1, 0): frame_key(1, 1),
                          frame_key(2, 0): frame_key(2, -3), frame_key(3, 0): frame_key(3, 3),
                          frame_key(4, 0): frame_key(4, 0), frame_key(5, 0): frame_key(5, -2)}
    assert res.accuracy[a.run_id].n_correct == 4  # wrong on v0:+5, v1:+1
    assert res.accuracy[c.run_id].n_correct == 2  # right only on v0:+5 ([0]) and v3:+3 ([0, 1])
    # the same through the benchmark option static_runs (related runs)
    with_static = run(make_code_model3(), "video-pmk", vid_root, store, static_runs=[c.run_id])
    assert with_static.metric("static_accuracy") == pytest.approx(4 / 6)
    assert with_static.metric("static_n_models") == 2
    assert "static (model-independent) set accuracy 66.7%" in with_static.table()
    part = run(make_code_model3(), "video-pmk", vid_root, store, limit=2)  # only v0 and v1's frames
    with pytest.raises(DataError, match="no prediction for frame"):
        run(make_code_model3(), "video-pmk", vid_root, store, static_runs=[part.run_id])


def test_detector_as_classifier(vid_root, vid_imagenet_root, tmp_path):
    store = tmp_path / "store"
    det = Detector(CodeDetector(), name="code-detector")
    r = run(det, "video-pmk", vid_root, store)  # label 7 is no set class: the most confident *set* box wins
    assert curve(r) == pytest.approx([c / 6 for c in CURVE_FRAME])
    blind = Detector(CodeDetector(blind=2), name="blind-detector")
    r = run(blind, "video-pmk", vid_root, store)  # nothing found on code-2 frames -> wrong (v1:+1 still wrong)
    assert r.metric("accuracy_original") == pytest.approx(4 / 6)  # v4's anchor (code 2) is now wrong
    assert r.metric("accuracy_pmk") == pytest.approx(1 / 6)  # v0 (+5), v1 (+1), v5 (+7) broken: v3 left
    with open_store(store) as st:
        cols = next(iter(st.read_predictions(r.run_id).values()))
    assert cols["class_scores"].shape[1] == 3 and set(cols["prediction"].tolist()) <= {0, 1, 3}
    with pytest.raises(InputError, match="detector"):
        run(det, "imagenet-vid-robust", vid_imagenet_root, store)


# --- CLI and bad input ------------------------------------------------------------------------------


def test_cli_evaluate_and_show(vid_root, tmp_path):
    from robustlab.cli import app

    runner = CliRunner()
    store = str(tmp_path / "store")
    out = runner.invoke(app, ["evaluate", "--benchmark", "video-pmk", "--data", str(vid_root), "--model",
                              f"python:{THIS_FILE}:make_code_model3", "--store", store, "--workers", "0",
                              "--json", "--class-map", "none"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["summary"]["pm0"]["value"] == pytest.approx(5 / 6)
    assert [data["summary"]["curve"][str(k)]["value"] for k in range(11)] == pytest.approx(
        [c / 6 for c in CURVE_FRAME])
    shown = runner.invoke(app, ["show", data["run_id"], "--store", store])
    assert shown.exit_code == 0 and "pm-10 50.0% [11.8, 88.2]" in shown.stdout
    assert "accuracy vs k (%): k=0 83.3, k=1 66.7" in shown.stdout


def test_bad_input_gives_clear_errors(tmp_path):
    root = make_vid_set(tmp_path / "missing-frame")
    (root / frame_key(0, 5)).unlink()
    with pytest.raises(DataError, match="missing under"):
        run(make_code_model3(), "video-pmk", root, tmp_path / "store")
    root = make_vid_set(tmp_path / "unlabelled")
    labels = json.loads((root / "labels.json").read_text())
    del labels[frame_key(1, 1)]
    (root / "labels.json").write_text(json.dumps(labels))
    with pytest.raises(DataError, match="have no labels"):
        run(make_code_model3(), "video-pmk", root, tmp_path / "store")
    with pytest.raises(DataError, match="does not exist"):
        run(make_code_model3(), "video-pmk", tmp_path / "nowhere", tmp_path / "store")
    ok = make_vid_set(tmp_path / "ok")
    with pytest.raises(InputError, match="does not take"):
        run(make_code_model3(), "video-pmk", ok, tmp_path / "store", corruptions="fog")
    with pytest.raises(InputError, match="k must be"):
        run(make_code_model3(), "video-pmk", ok, tmp_path / "store", k=-1)


def test_unreadable_frame_counts_as_wrong(tmp_path):
    root = make_vid_set(tmp_path / "broken")
    (root / frame_key(3, 3)).write_bytes(b"not a jpeg")
    r = run(make_code_model3(), "video-pmk", root, tmp_path / "store")
    assert r.metric("n_frames_unreadable") == 1
    assert r.metric("accuracy_pmk") == pytest.approx(2 / 6)  # v3 now broken at +3
    assert any("could not be read" in n for n in r.notes) and len(r.problems) == 1


def test_limit_and_save_logits(vid_root, tmp_path):
    r = run(make_code_model3(), "video-pmk", vid_root, tmp_path / "store", limit=2, save_logits=True)
    # the first two anchors (v0, v1) and their 4 neighbours
    assert r.metric("n_anchors") == 2 and r.metric("n_frames") == 6
    assert r.metric("accuracy_original") == 1.0 and r.metric("accuracy_pmk") == 0.0
    with open_store(tmp_path / "store") as st:
        cols = next(iter(st.read_predictions(r.run_id).values()))
    assert cols["source_logits"].shape == (6, 3)


# --- the pm-k metrics the benchmark relies on (fast paths of robustlab.metrics.pmk) -------------------


def test_frame_keys_parse_by_last_digits():
    from robustlab.metrics.pmk import frame_number, parse_frame_key
    from robustlab.video.keys import frame_number as video_frame_number

    assert video_frame_number is frame_number
    assert parse_frame_key("KxDh7a8_AmU_44666/frame-1117.jpg") == ("KxDh7a8_AmU_44666", 1117)
    assert parse_frame_key("a/b7/c12x.png") == ("a/b7", 12)
    assert parse_frame_key("clip9/frame_0003_final.jpeg") == ("clip9", 3)
    with pytest.raises(InputError, match="no frame number"):
        parse_frame_key("clip9/anchor.jpg")


def test_pmk_accuracies_equal_single_k_on_the_released_metadata():
    from robustlab.metrics.pmk import pmk_accuracies, pmk_accuracy
    from robustlab.video import read_imagenet_vid_robust

    fixtures = Path(__file__).parent.parent / "fixtures" / "video" / "imagenet-vid-robust"
    s = read_imagenet_vid_robust(metadata=fixtures, check_frames=False)
    rng = np.random.default_rng(1)
    preds = {k: s.labels[k][0] if rng.random() < 0.95 else (s.labels[k][0] + 1) % 30 for k in s.frame_keys}
    many = pmk_accuracies(preds, s.pmsets, s.labels, ks=[*range(11), None])
    for k in (0, 1, 4, 10, None):
        one = pmk_accuracy(preds, s.pmsets, s.labels, k=k)
        assert many[k] == one
    assert many[10].n_anchors == 1109 and many[None].n_neighbours == 21070
    counts = [many[k].n_pmk_correct for k in range(11)]
    assert counts == sorted(counts, reverse=True) and counts[0] == many[0].n_anchor_correct


def _brute_breaking(preds, pmsets, labels, k, mode):
    from robustlab.metrics.pmk import parse_frame_key

    out = {}
    for anchor, nbs in pmsets.items():
        judge = (lambda n: labels[anchor]) if mode == "anchor" else (lambda n: labels[n])
        if preds[anchor] not in labels[anchor]:
            out[anchor] = anchor
            continue
        a_frame = parse_frame_key(anchor)[1]
        wrong = [(abs(parse_frame_key(n)[1] - a_frame), i, n) for i, n in enumerate(nbs)
                 if preds[n] not in judge(n) and (k is None or abs(parse_frame_key(n)[1] - a_frame) <= k)]
        out[anchor] = min(wrong)[2] if wrong else None
    return out


def _brute_static(by_model, pmsets, labels, k):
    from robustlab.metrics.pmk import parse_frame_key

    out = {}
    for anchor, nbs in pmsets.items():
        a_frame = parse_frame_key(anchor)[1]
        cands = []
        for i, n in enumerate(nbs):
            d = abs(parse_frame_key(n)[1] - a_frame)
            if k is None or d <= k:
                misses = sum(p[n] not in labels[n] for p in by_model.values())
                cands.append((-misses, d, i, n))
        out[anchor] = min(cands)[3] if cands else anchor
    return out


@settings(max_examples=30, deadline=None)
@given(hs.integers(1, 5), hs.integers(0, 2**31 - 1), hs.sampled_from(["frame", "anchor"]),
       hs.sampled_from([None, 0, 1, 2, 4]))
def test_breaking_frames_and_static_set_match_brute_force(n_anchors, seed, mode, k):
    from robustlab.metrics.pmk import pmk_accuracy, static_frames

    rng = np.random.default_rng(seed)
    pmsets, labels, preds_a, preds_b = {}, {}, {}, {}
    for a in range(n_anchors):
        anchor = f"clip{a}_500/frame-{100:d}.jpg"
        offs = [o for o in rng.permutation(np.arange(-4, 5)).tolist() if o and rng.random() < 0.6]
        pmsets[anchor] = [f"clip{a}_500/frame-{100 + o}.jpg" for o in offs]
        for key in [anchor, *pmsets[anchor]]:
            labels[key] = sorted(set(rng.integers(0, 3, size=rng.integers(1, 3)).tolist()))
            preds_a[key], preds_b[key] = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    r = pmk_accuracy(preds_a, pmsets, labels, k=k, label_mode=mode)
    assert dict(r.breaking_frame) == _brute_breaking(preds_a, pmsets, labels, k, mode)
    by_model = {"a": preds_a, "b": preds_b}
    assert static_frames(by_model, pmsets, labels, k=k) == _brute_static(by_model, pmsets, labels, k)


# --- the full released metadata, end to end (slow) -------------------------------------------------


class VidClassModel(nn.Module):
    """1000-way logits: an image with red = 8 c + 4 scores 10 on the first ImageNet class of VID class c."""

    def __init__(self, first_imagenet: list[int]) -> None:
        super().__init__()
        self.register_buffer("columns", torch.tensor(first_imagenet))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.round((x[:, 0].mean(dim=(1, 2)) * 255 - 4) / 8).long().clamp(0, 29)
        out = torch.zeros(x.shape[0], 1000)
        out[torch.arange(x.shape[0]), self.columns[c]] = 10.0
        return out


@pytest.mark.slow
def test_full_imagenet_vid_robust_metadata_end_to_end(tmp_path):
    """All 22,179 frames of the released metadata as 8x8 stand-ins: one pass, the 288-class map, pm-k."""
    import shutil

    from robustlab.metrics.pmk import pmk_accuracies
    from robustlab.video import read_imagenet_vid_robust

    fixtures = Path(__file__).parent.parent / "fixtures" / "video" / "imagenet-vid-robust"
    root = tmp_path / "vid"
    root.mkdir()
    for name in ("pmsets.json.gz", "labels.json.gz", "class_idx_map.json"):
        shutil.copy(fixtures / name, root / name)
    s = read_imagenet_vid_robust(metadata=root, check_frames=False)
    rng = np.random.default_rng(0)
    intended = {}
    for key in s.frame_keys:
        c = s.labels[key][0] if rng.random() < 0.97 else int(rng.integers(0, 30))
        intended[key] = c
        img = np.zeros((8, 8, 3), np.uint8)
        img[..., 0] = 8 * c + 4
        write_image(root / key, img)
    first = [min(i for i, t in s.class_idx_map.items() if t == c) for c in range(30)]
    model = VidClassModel(first)
    result = evaluate(model, "imagenet-vid-robust", root, store=tmp_path / "store", workers=2, batch_size=256,
                      progress=False)
    assert result.metric("n_anchors") == 1109 and result.metric("n_neighbours") == 21070
    assert result.metric("n_frames") == 22179
    expected = pmk_accuracies(intended, s.pmsets, s.labels, ks=range(11))
    assert [result.metric("accuracy_pmk", f"k={k}") for k in range(11)] == pytest.approx(
        [expected[k].accuracy_pmk for k in range(11)])
    assert result.metric("accuracy_original") == pytest.approx(expected[10].accuracy_original)
