"""The evaluation engine: results equal a bare loop, resume, instant re-runs, model errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from .conftest import WNIDS, make_imagenet_c
from tiny_models import ChannelModel, NaNModel

import robustlab
from robustlab.data.classification import read_image_folder
from robustlab.engine import evaluate, get_benchmark, load_result
from robustlab.benchmarks.corruption import select_corruptions
from robustlab.errors import DataError, InputError, ModelError
from robustlab.store import open_store


def bare_loop(model, folder):
    """Top-1 predictions and labels of ``model`` on an image folder, with no engine."""
    samples = read_image_folder(folder)
    x = torch.stack([torch.from_numpy(samples.read(i)).permute(2, 0, 1) for i in range(len(samples))]).float() / 255
    with torch.no_grad():
        return model(x).argmax(1).numpy(), samples.labels


def test_results_equal_a_bare_loop(imagenet_c_root, tmp_path):
    model = ChannelModel()
    result = robustlab.evaluate(model, "imagenet-c", imagenet_c_root, store=tmp_path, batch_size=5, workers=0,
                                progress=False)
    assert result.status == "complete" and result.units_computed == result.units_total == 10
    for c in ("fog", "brightness"):
        for s in range(1, 6):
            pred, labels = bare_loop(model, imagenet_c_root / c / str(s))
            assert result.metric("error", f"{c}/{s}") == pytest.approx(np.mean(pred != labels))
            assert result.metric("n_samples", f"{c}/{s}") == 12
    with open_store(tmp_path) as store:
        cols = store.read_unit(result.run_id, "fog/2/shard-0000")
    pred, labels = bare_loop(model, imagenet_c_root / "fog" / "2")
    np.testing.assert_array_equal(cols["top5_index"][:, 0], pred)
    np.testing.assert_array_equal(cols["label"], labels)
    assert cols["sample_id"][0] == f"{WNIDS[0]}/img_000.JPEG" and cols["top5_index"].shape == (12, 5)
    np.testing.assert_allclose(cols["top5_score"].sum(1), 1.0, atol=1e-3)  # 3 classes carry the mass
    errors = [np.mean([result.metric("error", f"fog/{s}") for s in range(1, 6)])]
    assert result.metric("ce", "fog") == pytest.approx(errors[0] / 0.819324)
    assert result.metric("mce_subset") == pytest.approx(np.mean([result.metric("ce", "fog"),
                                                                  result.metric("ce", "brightness")]))
    assert any("relative mCE unavailable" in n for n in result.notes)
    assert result.to_dict()["summary"]["corruptions"]["fog"]["ce"] == pytest.approx(result.metric("ce", "fog"))


def test_rerun_is_instant_and_resume_does_only_missing_units(imagenet_c_root, tmp_path, monkeypatch):
    kwargs = dict(store=tmp_path, batch_size=4, workers=0, progress=False, corruptions="fog", severities="1-5")
    first = evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, **kwargs)
    with open_store(tmp_path) as store:
        before = store.read_predictions(first.run_id)
        store.delete_unit(first.run_id, "fog/4/shard-0000")

    from robustlab.engine.executor import ModelRef

    resumed = evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, **kwargs)
    assert resumed.run_id == first.run_id and resumed.units_computed == 1
    assert resumed.metrics == first.metrics

    def no_loading(*args, **kwargs):
        raise AssertionError("a finished run must not load the model")

    monkeypatch.setattr(ModelRef, "load", no_loading)
    again = evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, **kwargs)
    assert again.units_computed == 0 and again.metrics == first.metrics
    with open_store(tmp_path) as store:
        after = store.read_predictions(first.run_id)
    assert before.keys() == after.keys()
    for unit in before:
        for name in before[unit]:
            np.testing.assert_array_equal(before[unit][name], after[unit][name])


def test_nan_and_wrong_class_count_raise_model_errors(imagenet_c_root, tmp_path):
    with pytest.raises(ModelError, match="NaN"):
        evaluate(NaNModel(1000), "imagenet-c", imagenet_c_root, store=tmp_path, workers=0, progress=False,
                 corruptions="fog", severities="1")
    with pytest.raises(ModelError, match=r"'python:tiny_models.ChannelModel@\w+' returned 3 classes.*1000"):
        evaluate(ChannelModel(3), "imagenet-c", imagenet_c_root, store=tmp_path, workers=0, progress=False,
                 corruptions="fog", severities="1")
    with open_store(tmp_path) as store:  # nothing was computed: the failed runs leave nothing behind
        assert store.list_runs() == []


def test_corrupt_jpeg_is_recorded_and_skipped(tmp_path):
    root = make_imagenet_c(tmp_path / "ic", corruptions=("fog",), severities=(1,), per_class=2)
    bad = root / "fog" / "1" / WNIDS[1] / "img_001.JPEG"
    bad.write_bytes(b"\xff\xd8\xff garbage")
    result = evaluate(ChannelModel(), "imagenet-c", root, store=tmp_path / "s", workers=0, progress=False,
                      severities="1")
    assert result.metric("n_samples", "fog/1") == 5
    assert len(result.problems) == 1
    unit, sample, message = result.problems[0]
    assert unit == "fog/1/shard-0000" and sample == f"{WNIDS[1]}/img_001.JPEG" and "img_001.JPEG" in message


def test_missing_class_folder_in_one_setting(tmp_path):
    root = make_imagenet_c(tmp_path, corruptions=("fog",), severities=(1, 2), per_class=1)
    for f in (root / "fog" / "2" / WNIDS[2]).iterdir():
        f.unlink()
    (root / "fog" / "2" / WNIDS[2]).rmdir()
    with pytest.raises(DataError, match=rf"fog/2/{WNIDS[2]} is missing"):
        evaluate(ChannelModel(), "imagenet-c", root, store=tmp_path / "s", workers=0, progress=False,
                 severities="1-2")
    with pytest.raises(DataError, match="fog/3 is missing"):
        evaluate(ChannelModel(), "imagenet-c", root, store=tmp_path / "s", workers=0, progress=False)


def test_clean_error_from_clean_data_or_a_stored_clean_run(imagenet_c_root, clean_root, labelled_root, tmp_path):
    kwargs = dict(store=tmp_path, workers=0, progress=False, batch_size=8)
    with_clean = evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, clean_data=clean_root, **kwargs)
    pred, labels = bare_loop(ChannelModel(), clean_root)  # already 40x52: no model resize here
    assert with_clean.metric("clean_error") == pytest.approx(np.mean(pred != labels))
    clean = with_clean.metric("clean_error")
    fog = np.mean([with_clean.metric("error", f"fog/{s}") for s in range(1, 6)])
    assert with_clean.metric("relative_ce", "fog") == pytest.approx((fog - clean) / (0.819324 - 0.435))
    assert "relative_mce_subset" in {n for n, _, _ in with_clean.metrics}

    clean_run = evaluate(ChannelModel(), "corrupted", clean_root, corruptions="brightness", severities="1", **kwargs)
    from_run = evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, clean_run=clean_run.run_id[:6], **kwargs)
    assert from_run.config["clean_run"] == clean_run.run_id
    assert from_run.metric("clean_error") == pytest.approx(clean)
    assert from_run.metric("relative_ce", "fog") == pytest.approx(with_clean.metric("relative_ce", "fog"))
    with pytest.raises(Exception, match="ffffff"):
        evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, clean_run="ffffff", **kwargs)


def test_corrupted_benchmark_same_results_with_workers(labelled_root, tmp_path):
    kwargs = dict(corruptions="gaussian_noise,brightness", severities="1-5", progress=False, batch_size=4, seed=3,
                  shard_size=5)
    serial = evaluate(ChannelModel(3), "corrupted", labelled_root, store=tmp_path / "a", workers=0, **kwargs)
    parallel = evaluate(ChannelModel(3), "corrupted", labelled_root, store=tmp_path / "b", workers=2, **kwargs)
    assert serial.run_id == parallel.run_id  # workers and batch size are not part of the identity
    assert serial.metrics == parallel.metrics
    assert serial.units_total == 2 * (1 + 2 * 5)  # 9 images in shards of 5: clean + 10 settings
    assert serial.metric("n_samples", "clean") == 9
    assert "clean_error" in {n for n, _, _ in serial.metrics}
    assert "ce" in {n for n, s, _ in serial.metrics if s == "brightness"}
    # this model's error is 22.2 % clean and at every severity: no rise, so no relative CE (issue 37)
    assert serial.summary["corruptions"]["brightness"]["relative_ce_na"].startswith(
        "this model's error does not move with severity (22.2 % clean and at every severity)")
    other_seed = evaluate(ChannelModel(3), "corrupted", labelled_root, store=tmp_path / "a", workers=0,
                          **{**kwargs, "seed": 4})
    assert other_seed.run_id != serial.run_id


def test_options_are_validated(imagenet_c_root, labelled_root, tmp_path):
    with pytest.raises(InputError, match="seed applies to --on-the-fly evaluation"):
        evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, store=tmp_path, seed=3, progress=False)
    with pytest.raises(InputError, match="benchmark"):
        evaluate(ChannelModel(), "imagenet-d", imagenet_c_root, store=tmp_path)
    with pytest.raises(InputError, match="gaussian_noise"):
        evaluate(ChannelModel(3), "corrupted", labelled_root, store=tmp_path, corruptions="gaussian_nois")
    with pytest.raises(InputError, match="severit"):
        evaluate(ChannelModel(3), "corrupted", labelled_root, store=tmp_path, severities="0-6")


def test_select_corruptions():
    assert select_corruptions("noise,fog") == ["gaussian_noise", "shot_noise", "impulse_noise", "fog", "speckle_noise"]
    assert len(select_corruptions(None)) == 15
    assert select_corruptions(None, available=["fog", "saturate"]) == ["fog"]


def test_load_result_of_stored_run(imagenet_c_root, tmp_path):
    result = evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, store=tmp_path, workers=0, progress=False,
                      corruptions="brightness", limit=5)
    assert result.metric("n_samples", "brightness/3") == 5
    with open_store(tmp_path) as store:
        shown = load_result(store, result.run_id[:6])
    assert shown.metrics == result.metrics and "brightness" in shown.table()
    assert get_benchmark("corrupted").name == "corrupted"


def test_cifar10_c_layout(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.tile(np.arange(3), 2)  # 6 images per severity, classes 0..2
    from .conftest import class_image

    images = np.stack([class_image(int(label), rng, (32, 32)) for _ in range(5) for label in labels])
    np.save(tmp_path / "fog.npy", images)
    np.save(tmp_path / "labels.npy", np.tile(labels, 5))
    result = evaluate(ChannelModel(10), "imagenet-c", tmp_path, store=tmp_path / "s", workers=0, progress=False,
                      corruptions="fog")
    x = torch.from_numpy(images[12:18]).permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        expected = np.mean(ChannelModel(10)(x).argmax(1).numpy() != labels)
    assert result.metric("error", "fog/3") == pytest.approx(expected)
    assert result.metric("n_samples", "fog/5") == 6
    assert "ce" not in {n for n, _, _ in result.metrics}
    assert any("CIFAR-10-C" in n for n in result.notes)


def test_progress_bar_shows_throughput_and_units(capsys, monkeypatch):
    from robustlab.engine.progress import RunProgress

    monkeypatch.setenv("COLUMNS", "160")
    with RunProgress("imagenet-c abc123", enabled=True) as bar:
        for _ in range(2):
            bar.add_samples(12)
        bar.set_units_total(2)
        for _ in range(2):
            bar.advance(12)
            bar.unit_done()
    err = capsys.readouterr().err
    assert "[2/2 units]" in err and "img/s" in err and "24/24" in err


def test_progress_without_a_terminal_is_log_lines(imagenet_c_root, tmp_path, capsys):
    """progress=True (a bar) with stderr captured, not a terminal: plain log lines, with a note."""
    evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, store=tmp_path, workers=0, progress=True,
             corruptions="fog", severities="1,2")
    err = capsys.readouterr().err
    assert "not a terminal" in err and "done, 2/2 units, 24/24 samples (100 %)" in err


def test_mixed_sizes_need_a_model_input_size(tmp_path):
    from .conftest import make_folder

    root = make_folder(tmp_path / "mixed", ("a", "b"), 2, size=(40, 40))
    make_folder(tmp_path / "mixed", ("c",), 2, size=(48, 56))
    with pytest.raises(InputError, match="different sizes.*resize"):
        evaluate(ChannelModel(3), "corrupted", root, store=tmp_path / "s", workers=0, progress=False,
                 corruptions="brightness", severities="1", batch_size=8)
    from robustlab.models import Preprocessing

    ok = evaluate(ChannelModel(3), "corrupted", root, store=tmp_path / "s", workers=0, progress=False,
                  corruptions="brightness", severities="1", batch_size=8,
                  preprocessing=Preprocessing(resize=36, crop=32))
    assert ok.metric("n_samples", "brightness/1") == 6


def test_an_image_too_small_to_corrupt_is_skipped_in_every_setting(tmp_path):
    """Regression: a 1x1 image was skipped only under corruption, so CE compared 10 samples with 9."""
    from robustlab.data.images import write_image

    root = make_folder_of(tmp_path / "data")
    write_image(root / "cat" / "tiny.png", np.full((1, 1, 3), 200, np.uint8))
    result = evaluate(ChannelModel(3), "corrupted", root, store=tmp_path / "s", corruptions="brightness",
                      severities="1", class_map="sorted", workers=0, progress=False)
    assert result.metric("n_samples", "clean") == result.metric("n_samples", "brightness/1") == 6
    skipped = {(unit.split("/")[0], sid) for unit, sid, _ in result.problems}
    assert skipped == {("clean", "cat/tiny.png"), ("brightness", "cat/tiny.png")}
    assert any("every setting" in message for _, _, message in result.problems)


def make_folder_of(root):
    from robustlab.data.images import write_image

    rng = np.random.default_rng(0)
    for label, name in enumerate(("cat", "dog", "fox")):
        for k in range(2):
            write_image(root / name / f"img_{k}.png", rng.integers(0, 256, (40, 40, 3), dtype=np.uint8))
    return root
