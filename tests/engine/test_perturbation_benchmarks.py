"""Benchmarks imagenet-p and perturbed: stored per-frame top-5, FP / FR / mFR / T5D / mT5D, errors."""

from __future__ import annotations

import re

from pathlib import Path

import numpy as np
import pytest
import torch
from .conftest import WNIDS, make_folder
from tiny_models import ChannelModel, TinyCNN
from torch import nn

from robustlab.engine import evaluate
from robustlab.benchmarks.perturbation import (
    FRAMES_COLUMN,
    most_flipping_sequences,
    parse_folder,
    sequence_flips,
    stability_metrics,
    stability_summary,
)
from robustlab.errors import DataError, InputError
from robustlab.metrics.stability import TEST_PERTURBATIONS, get_stability_baseline
from robustlab.perturbations import frame_count, get_perturbation
from robustlab.perturbations.dataset import make_settings, perturb_dataset
from robustlab.perturbations.io import write_cifar_p, write_sequence

class ConstantModel(nn.Module):
    """The same logits for every input (6 classes, fixed order)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("logits", torch.arange(6, dtype=torch.float32).flip(0))

    def forward(self, x):
        return self.logits.expand(x.shape[0], 6).clone()


def columns(rankings: np.ndarray, labels=None) -> dict[str, np.ndarray]:
    """Stored columns of one unit for rankings (N, T, 5)."""
    n, t, k = rankings.shape
    return {"sample_id": np.asarray([f"s{i}" for i in range(n)]), "label": np.asarray(labels if labels is not None
                                                                                     else np.zeros(n), np.int64),
            "n_frames": np.full(n, t, np.int16), FRAMES_COLUMN: rankings.reshape(n, t * k).astype(np.int32)}


def rankings_of(top1: np.ndarray) -> np.ndarray:
    """Rankings (N, T, 5) whose top-1 is ``top1`` (classes 0/1) and then 1-top1, 2, 3, 4."""
    rest = np.broadcast_to(np.arange(2, 5), (*top1.shape, 3))
    return np.concatenate([top1[..., None], 1 - top1[..., None], rest], axis=-1)


def config(**kw):
    """The keyword arguments of :func:`stability_metrics` (setting, strides, the built-in baseline)."""
    return {"setting": "imagenet", "strides": [1, 2], "baseline_name": "alexnet", **kw}


# --- metrics from stored columns ----------------------------------------------------------------


def test_constant_predictions_have_fp_0_and_alternating_ones_fp_1():
    alternating = np.tile(np.arange(31) % 2, (3, 1))
    preds = {"rotate/shard-0000": columns(rankings_of(alternating)),
             "gaussian_noise/shard-0000": columns(rankings_of(np.zeros((3, 31), int)))}
    rows = {(m, s): v for m, s, v in stability_metrics(preds, **config())}
    assert rows[("flip_probability", "rotate/stride-1")] == 1.0
    assert rows[("flip_probability", "rotate/stride-2")] == 0.0  # period 2: frames j and j-2 agree
    assert rows[("top5_distance", "rotate/stride-1")] == 2.0      # ranks 1 and 2 swap: |0-1| + |1-0|
    assert rows[("flip_probability", "gaussian_noise/stride-1")] == 0.0
    assert rows[("top5_distance", "gaussian_noise/stride-1")] == 0.0
    assert rows[("flip_rate", "rotate/stride-1")] == pytest.approx(1 / 0.1310)
    assert ("mfr", "") not in rows and rows[("mfr_subset", "")] == pytest.approx((1 / 0.1310 + 0) / 2)


def flips_matching(fp: float, m: int, n: int, noise: bool, rng) -> np.ndarray:
    """Top-1 predictions (m, n) of classes 0/1 whose flip probability is exactly ``fp``."""
    pairs = n - 1
    total = round(fp * m * pairs)
    counts = np.full(m, total // m)
    counts[rng.choice(m, total % m, replace=False)] += 1
    preds = np.zeros((m, n), int)
    for i, c in enumerate(counts):
        where = rng.choice(np.arange(1, n), c, replace=False)
        if noise:
            preds[i, where] = 1
        else:
            flip = np.zeros(n, int)
            flip[where] = 1
            preds[i] = np.cumsum(flip) % 2
    return preds


def test_mfr_of_the_alexnet_flip_probabilities_is_100():
    rng = np.random.default_rng(0)
    base = get_stability_baseline("alexnet")
    preds = {}
    for p in TEST_PERTURBATIONS:
        n = frame_count(p)
        top1 = flips_matching(base.flip_probability[p], 1000, n, get_perturbation(p).noise, rng)
        preds[f"{p}/shard-0000"] = columns(rankings_of(top1))
    rows = {(m, s): v for m, s, v in stability_metrics(preds, **config(strides=[1]))}
    for p in TEST_PERTURBATIONS:
        assert rows[("flip_probability", f"{p}/stride-1")] == pytest.approx(base.flip_probability[p], abs=1e-12)
    assert 100 * rows[("mfr", "")] == pytest.approx(100.0, abs=1e-9)
    assert rows[("mfr", "stride-1")] == rows[("mfr", "")]
    assert "mt5d" in stability_summary(rows_list := [(m, s, v) for (m, s), v in rows.items()])
    assert stability_summary(rows_list)["perturbations"]["rotate"]["stride-1"]["fr"] == pytest.approx(1.0)


def test_sequence_flips_rank_sequences_by_flips():
    top1 = np.zeros((3, 31), int)
    top1[1, 10:] = 1           # one flip
    top1[2] = np.arange(31) % 2  # 30 flips
    flips = sequence_flips({"tilt/shard-0000": columns(rankings_of(top1), labels=[4, 5, 6])})
    assert [(r["sample_id"], r["flips"], r["pairs"], r["label"]) for r in flips] == [
        ("s2", 30, 30, 6), ("s1", 1, 30, 5), ("s0", 0, 30, 4)]
    assert sequence_flips({"tilt/shard-0000": columns(rankings_of(top1))}, stride=2)[0]["pairs"] == 29


def test_folder_names():
    assert parse_folder("rotate") == ("rotate", 1)
    assert parse_folder("gaussian_noise_3") == ("gaussian_noise", 3)
    assert parse_folder("rotate_2") is None and parse_folder("notes") is None


# --- end to end through robustlab.evaluate -----------------------------------------------------------


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    return make_folder(tmp_path_factory.mktemp("pimages"), WNIDS[:2], 2, size=(32, 32), seed=11)


def test_constant_model_end_to_end_on_perturbed(images, tmp_path):
    result = evaluate(ConstantModel(), "perturbed", images, store=tmp_path / "store", workers=0, batch_size=3,
                      setting="cifar", perturbations="rotate,shot_noise,translate", class_map=[*WNIDS[:2], "x2", "x3", "x4", "x5"], progress=False)
    assert result.status == "complete" and result.units_total == 3
    fp = {s: v for m, s, v in result.metrics if m == "flip_probability"}
    assert len(fp) == 6 and set(fp.values()) == {0.0}
    assert {v for m, _, v in result.metrics if m == "top5_distance"} == {0.0}
    assert any("cifar setting" in n for n in result.notes)


def test_alternating_frames_flip_every_frame_through_imagenet_p(tmp_path):
    red, green = np.zeros((32, 32, 3), np.uint8), np.zeros((32, 32, 3), np.uint8)
    red[..., 0], green[..., 1] = 200, 200
    alternating = np.stack([red if t % 2 == 0 else green for t in range(31)])
    for k in range(3):
        write_sequence(tmp_path / "data" / "rotate" / WNIDS[0] / f"v{k}.npy", alternating)
    write_sequence(tmp_path / "data" / "gaussian_noise" / WNIDS[1] / "v0.npy", alternating)
    result = evaluate(ChannelModel(1000), "imagenet-p", tmp_path / "data", store=tmp_path / "store", workers=0,
                      batch_size=2, progress=False)
    assert result.metric("flip_probability", "rotate/stride-1") == 1.0
    assert result.metric("flip_probability", "rotate/stride-2") == 0.0
    assert result.metric("flip_probability", "gaussian_noise/stride-1") == 0.5  # 15 of 30 frames differ from frame 0
    assert result.metric("flip_rate", "rotate/stride-1") == pytest.approx(1 / 0.1310)
    assert result.metric("n_sequences", "rotate") == 3
    top = most_flipping_sequences(result.run_id, store=tmp_path / "store", perturbation="rotate")
    assert [r["flips"] for r in top] == [30, 30, 30] and top[0]["sample_id"] == f"{WNIDS[0]}/v0.npy"
    assert top[0]["label"] == 0  # the wnid's ImageNet index


def test_perturbed_equals_perturb_then_imagenet_p(images, tmp_path):
    """On-the-fly sequences are the ones `robustlab perturb` writes (same seeds): identical predictions."""
    model = TinyCNN(2, seed=3)
    settings = make_settings("gaussian_noise,scale", setting="cifar", format="npy", seed=7)
    perturb_dataset(images, tmp_path / "seqs", settings, workers=1)
    store = tmp_path / "store"
    on_the_fly = evaluate(model, "perturbed", images, store=store, workers=0, batch_size=4, setting="cifar", seed=7,
                          perturbations="gaussian_noise,scale", class_map="sorted", progress=False)
    written = evaluate(model, "imagenet-p", tmp_path / "seqs", store=store, workers=0, batch_size=4, setting="cifar",
                       class_map="sorted", progress=False)
    assert on_the_fly.metrics == written.metrics
    from robustlab.store import open_store

    with open_store(store) as st:
        a = st.read_predictions(on_the_fly.run_id)
        b = st.read_predictions(written.run_id)
    for unit in a:
        np.testing.assert_array_equal(a[unit][FRAMES_COLUMN], b[unit][FRAMES_COLUMN])
        assert a[unit][FRAMES_COLUMN].shape == (4, 31 * 2)  # 2 classes: top-2 per frame
    # resume: nothing left to compute
    again = evaluate(model, "perturbed", images, store=store, workers=0, setting="cifar", seed=7,
                     perturbations="gaussian_noise,scale", class_map="sorted", progress=False)
    assert again.units_computed == 0 and again.metrics == on_the_fly.metrics


def test_cifar_p_arrays_with_labels(tmp_path):
    rng = np.random.default_rng(2)
    write_cifar_p(tmp_path / "translate.npy", rng.integers(0, 256, (5, 16, 32, 32, 3), dtype=np.uint8))
    write_cifar_p(tmp_path / "notes.npy", rng.integers(0, 256, (1, 2, 32, 32, 3), dtype=np.uint8))  # ignored
    np.save(tmp_path / "labels.npy", np.arange(5) % 10)
    result = evaluate(TinyCNN(10), "imagenet-p", tmp_path, store=tmp_path / "store", workers=0, shard_size=2,
                      progress=False)
    assert result.units_total == 3 and result.metric("n_sequences", "translate") == 5
    assert 0 <= result.metric("flip_probability", "translate/stride-2") <= 1
    assert result.config["setting"] == "cifar" and result.config["folders"] == ["translate"]


@pytest.mark.slow
def test_imagenet_setting_mp4_end_to_end(images, tmp_path):
    settings = make_settings("test", format="mp4")
    perturb_dataset(images, tmp_path / "p", settings, workers=2)
    result = evaluate(TinyCNN(1000), "imagenet-p", tmp_path / "p", store=tmp_path / "store", workers=1,
                      batch_size=2, progress=False)
    assert 0 <= result.metric("mfr") and 0 <= result.metric("mt5d")
    # difficulty 2 covers the 8 temporal perturbations (noise needs its difficulty-2 folders)
    assert result.metric("mfr_subset", "stride-2") >= 0 and not result.problems


# --- bad input -----------------------------------------------------------------------------------------


def test_bad_sequences_are_skipped_with_the_file_named(tmp_path):
    good = np.zeros((31, 32, 32, 3), np.uint8)
    write_sequence(tmp_path / "d" / "tilt" / WNIDS[0] / "good.npy", good)
    write_sequence(tmp_path / "d" / "tilt" / WNIDS[0] / "short.npy", good[:20])
    (tmp_path / "d" / "tilt" / WNIDS[0] / "broken.mp4").write_bytes(b"\x00" * 100)
    result = evaluate(ChannelModel(1000), "imagenet-p", tmp_path / "d", store=tmp_path / "store", workers=0,
                      progress=False)
    problems = {sid: msg for _, sid, msg in result.problems}
    assert set(problems) == {f"{WNIDS[0]}/short.npy", f"{WNIDS[0]}/broken.mp4"}
    assert "short.npy has 20 frames, expected 31" in problems[f"{WNIDS[0]}/short.npy"]
    assert "broken.mp4" in problems[f"{WNIDS[0]}/broken.mp4"]
    assert result.metric("n_sequences", "tilt") == 1


def test_sequences_shorter_than_the_stride(tmp_path, images):
    write_sequence(tmp_path / "d" / "scale" / WNIDS[0] / "two.npy", np.zeros((2, 32, 32, 3), np.uint8))
    # a long enough sequence beside it: a run in which every sample is skipped is an error
    write_sequence(tmp_path / "d" / "scale" / WNIDS[0] / "three.npy", np.zeros((3, 32, 32, 3), np.uint8))
    result = evaluate(ChannelModel(1000), "imagenet-p", tmp_path / "d", store=tmp_path / "store", workers=0,
                      frames="any", progress=False, strides="1,2")
    assert any("two.npy has 2 frame(s), too few for stride 2" in m for _, _, m in result.problems)
    with pytest.raises(InputError, match="stride 31 is too long for scale"):
        evaluate(ChannelModel(1000), "imagenet-p", tmp_path / "d", store=tmp_path / "store", strides="1,31")
    with pytest.raises(InputError, match="stride 16 is too long for translate"):
        evaluate(ChannelModel(1000), "perturbed", images, store=tmp_path / "s2", setting="cifar",
                 perturbations="translate", strides=[1, 16])


def test_bad_options_and_layouts(tmp_path, images):
    with pytest.raises(DataError, match="not in the ImageNet-P layout"):
        evaluate(ChannelModel(1000), "imagenet-p", images, store=tmp_path / "s")
    with pytest.raises(DataError, match="does not exist"):
        evaluate(ChannelModel(1000), "imagenet-p", tmp_path / "nothing", store=tmp_path / "s")
    with pytest.raises(InputError, match="perturbations"):
        evaluate(ChannelModel(1000), "perturbed", images, store=tmp_path / "s", corruptions="fog")
    with pytest.raises(InputError, match="Did you mean 'rotate'"):
        evaluate(ChannelModel(1000), "perturbed", images, store=tmp_path / "s", perturbations="rotat")
    with pytest.raises(InputError, match="strides"):
        evaluate(ChannelModel(1000), "perturbed", images, store=tmp_path / "s", strides="0")
    with pytest.raises(InputError, match="does not take"):
        evaluate(ChannelModel(1000), "perturbed", images, store=tmp_path / "s", severity_typo=3)


def test_cli_evaluate_imagenet_p(tmp_path):
    from .conftest import TINY_MODELS
    from typer.testing import CliRunner

    from robustlab.cli import app

    frames = np.zeros((31, 32, 32, 3), np.uint8)
    frames[::2, :, :, 0] = 200  # red on even frames, black on odd ones: the channel model flips
    frames[1::2, :, :, 2] = 200
    write_sequence(tmp_path / "d" / "scale" / WNIDS[2] / "v.npy", frames)
    args = ["evaluate", "--model", f"python:{TINY_MODELS}:make_channel1000", "--benchmark", "imagenet-p",
            "--data", str(tmp_path / "d"), "--store", str(tmp_path / "store"), "--workers", "0", "--no-progress",
            "-O", "strides=[1]"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.search(r"^scale\s+1\s+100\.00\s", result.output, re.M), result.output  # difficulty 1, FP 100%
    assert not re.search(r"^scale\s+2\s", result.output, re.M)
