"""ImageNet-C-bar / CIFAR-10-C-bar end to end: `robustlab corrupt --set imagenet-c-bar` writes the
released layout, the `imagenet-c-bar` benchmark reads it (and the preprocessed 1..5 layout and the
CIFAR-10-C-bar arrays), with the paper's mean error, CE-bar and mCE-bar."""

from __future__ import annotations

import numpy as np
import pytest
from .conftest import WNIDS, make_folder
from tiny_models import ChannelModel
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.corruptions import corrupt
from robustlab.corruptions.cbar import CIFAR10_C_BAR, IMAGENET_C_BAR, severity_folder
from robustlab.corruptions.cbar.released import discover_cbar
from robustlab.corruptions.dataset import make_settings
from robustlab.data.images import read_image
from robustlab.engine import evaluate
from robustlab.errors import DataError, InputError
from robustlab.metrics.corruption_bar import PUBLISHED_CBAR_ERRORS, cbar_summary, mce_bar
from robustlab.models.preprocessing import Preprocessing
from robustlab.seeding import derive_seed

TWO = ("caustic_refraction", "sparkles")


@pytest.fixture(scope="module")
def val_root(tmp_path_factory):
    return make_folder(tmp_path_factory.mktemp("val"), WNIDS, 2, size=(60, 80), seed=5)


@pytest.fixture(scope="module")
def released(val_root, tmp_path_factory):
    dst = tmp_path_factory.mktemp("imagenet-c-bar")
    result = CliRunner().invoke(app, ["corrupt", str(val_root), str(dst), "--set", "imagenet-c-bar", "-c",
                                      ",".join(TWO), "--format", "png", "--seed", "4", "-j", "1", "--no-progress"])
    assert result.exit_code == 0, result.output
    return dst


def test_corrupt_writes_the_released_layout(val_root, released):
    for c in TWO:
        assert sorted(p.name for p in (released / c).iterdir()) == [severity_folder(p) for p in IMAGENET_C_BAR[c]]
    out = released / "caustic_refraction" / "4.90" / WNIDS[0] / "img_000.png"
    geometry = Preprocessing(resize=256, crop=224, interpolation="bilinear").prepare_image
    src = geometry(read_image(val_root / WNIDS[0] / "img_000.JPEG"))
    rel = f"{WNIDS[0]}/img_000.JPEG"
    want = corrupt(src, "caustic_refraction", 3, rng=np.random.RandomState(derive_seed(4, rel, "caustic_refraction", 3)),
                   profile="imagenet-c")
    assert np.array_equal(read_image(out), want)
    # rerunning resumes: nothing left to write
    again = CliRunner().invoke(app, ["corrupt", str(val_root), str(released), "--set", "imagenet-c-bar", "-c",
                                     ",".join(TWO), "--format", "png", "--seed", "4", "-j", "1", "--no-progress"])
    assert again.exit_code == 0 and "written 0" in again.output
    # the ImageNet-C layout into the same folder would mix two datasets
    mixed = CliRunner().invoke(app, ["corrupt", str(val_root), str(released), "-c", "sparkles", "--profile", "imagenet-c",
                                     "--format", "png", "--seed", "4", "-j", "1", "--no-progress"])
    assert mixed.exit_code != 0 and "release 'imagenet-c-bar' (asked: None)" in str(mixed.exception)


def test_corrupt_set_refuses_foreign_corruptions_and_profiles():
    with pytest.raises(InputError, match="only its own corruptions"):
        make_settings("ripple", release="imagenet-c-bar")
    with pytest.raises(InputError, match="leave out --profile cifar"):
        make_settings(None, profile="cifar", release="imagenet-c-bar")
    assert len(make_settings(None, release="imagenet-c-bar").corruptions) == 10
    assert make_settings(None).corruptions == make_settings("benchmark").corruptions


def test_benchmark_on_the_released_layout(released, val_root, tmp_path):
    result = evaluate(ChannelModel(1000), "imagenet-c-bar", released, store=tmp_path / "store", workers=0,
                      device="cpu", progress=False, clean_data=str(val_root))
    errors = {c: [result.metric("error", f"{c}/{s}") for s in range(1, 6)] for c in TWO}
    for c in TWO:
        assert result.metric("mean_error", c) == pytest.approx(np.mean(errors[c]))
        baseline = PUBLISHED_CBAR_ERRORS["imagenet-c-bar"]["baseline"][c] / 100
        assert result.metric("ce_bar", c) == pytest.approx(np.mean(errors[c]) / baseline)
    assert result.metric("mean_error_bar_subset") == pytest.approx(np.mean([np.mean(e) for e in errors.values()]))
    assert "clean_error" in result.summary and result.summary["clean_error"] is not None
    assert any("missing" in n for n in result.notes)
    assert "CE-bar" in result.table() or "ce_bar" in result.table()


def test_the_preprocessed_layout_numbers_severities(released, tmp_path):
    """The preprocessed download names severity folders 1..5: the same images read the same way."""
    import shutil

    alt = tmp_path / "preprocessed"
    for c in TWO:
        for s, p in enumerate(IMAGENET_C_BAR[c], start=1):
            shutil.copytree(released / c / severity_folder(p), alt / c / str(s))
    layout = discover_cbar(alt)
    assert layout.set_name == "imagenet-c-bar" and sorted(layout.folders) == sorted(TWO)
    assert layout.folders["sparkles"][3].name == "3"


def test_bad_layouts_name_the_expected_one(tmp_path):
    (tmp_path / "fog" / "3").mkdir(parents=True)
    with pytest.raises(DataError, match="released C-bar layout.*<corruption>/<severity parameter"):
        discover_cbar(tmp_path)
    bad = tmp_path / "bad"
    (bad / "sparkles" / "2.50").mkdir(parents=True)
    with pytest.raises(DataError, match="not a severity folder of sparkles: expected 1.00, 2.00, 3.00, 5.00, 6.00"):
        discover_cbar(bad)


def test_cifar10_c_bar_arrays(tmp_path):
    rng = np.random.default_rng(0)
    n = 6
    labels = np.tile(rng.integers(0, 3, n), 5)
    for c in CIFAR10_C_BAR:
        base = rng.integers(0, 256, (5 * n, 32, 32, 3), dtype=np.uint8)
        base[np.arange(5 * n), :, :, labels] = 255  # the dominant channel is the class: ChannelModel is mostly right
        np.save(tmp_path / f"{c}.npy", base)
    np.save(tmp_path / "labels.npy", labels)
    result = evaluate(ChannelModel(10), "imagenet-c-bar", tmp_path, store=tmp_path / "store", workers=0,
                      device="cpu", progress=False)
    assert result.summary["set"] == "cifar10-c-bar"
    means = {c: result.metric("mean_error", c) for c in CIFAR10_C_BAR}
    assert result.metric("mce_bar") == pytest.approx(mce_bar(means, "cifar10-c-bar"))
    assert result.metric("mean_error_bar") == pytest.approx(np.mean(list(means.values())))
    with pytest.raises(InputError, match="not in cifar10-c-bar"):
        evaluate(ChannelModel(10), "imagenet-c-bar", tmp_path, store=tmp_path / "store", corruptions="perlin_noise",
                 workers=0, device="cpu", progress=False)


def test_metrics_against_the_papers_table():
    for set_name, rows in PUBLISHED_CBAR_ERRORS.items():
        base = rows["baseline"]
        errors = {c: v / 100 for c, v in base.items() if c not in ("mean", "c_error")}
        assert mce_bar(errors, set_name) == pytest.approx(1.0)
        for method, row in rows.items():
            summary = cbar_summary({c: row[c] / 100 for c in errors}, set_name)
            assert 100 * summary.mean_error == pytest.approx(row["mean"], abs=0.1), (set_name, method)
    with pytest.raises(InputError, match="missing"):
        cbar_summary({"sparkles": 0.3}, "imagenet-c-bar")


def test_on_the_fly_matches_the_written_set(val_root, released, tmp_path):
    """--on-the-fly makes the same pixels in memory (no JPEG: the released copy here is PNG)."""
    a = evaluate(ChannelModel(1000), "imagenet-c-bar", val_root, store=tmp_path / "s", on_the_fly=True, seed=4,
                 corruptions=",".join(TWO), workers=0, device="cpu", progress=False)
    b = evaluate(ChannelModel(1000), "imagenet-c-bar", released, store=tmp_path / "s", workers=0, device="cpu",
                 progress=False)
    for c in TWO:
        for s in range(1, 6):
            assert a.metric("error", f"{c}/{s}") == b.metric("error", f"{c}/{s}")
    assert a.summary["clean_error"] is not None


def test_show_prints_effective_robustness_against_the_stored_runs(released, val_root, tmp_path):
    """`show` lists the stored runs of the same shift with their accuracies; two runs are too few for a
    trend, and it says so (the trend itself: tests/report/test_report_shifts.py)."""
    from tiny_models import TinyCNN

    store = tmp_path / "store"
    runs = [evaluate(m, "imagenet-c-bar", released, store=store, workers=0, device="cpu", progress=False,
                     clean_data=str(val_root)) for m in (ChannelModel(1000), TinyCNN(1000, seed=1))]
    out = CliRunner().invoke(app, ["show", runs[0].run_id, "--store", str(store)])
    assert out.exit_code == 0, out.output
    assert "effective robustness on imagenet-c-bar [sparkles, caustic_refraction]" in out.output
    assert "no trend: a trend needs at least 3 runs (models) with both accuracies; got 2" in out.output
    pair = runs[0].summary["accuracy_pair"]
    assert pair["original"] == pytest.approx(1 - runs[0].summary["clean_error"]) and pair["original_n"] == 6


def test_clean_data_next_to_cifar_arrays_is_the_cifar10_test_set(tmp_path):
    """--clean-data next to CIFAR-10-C(-bar) arrays was recorded in the run and then ignored: no
    clean units, and the note asked for the --clean-data just given (fails on the old code)."""
    import pickle

    from robustlab.corruptions.cifar_writer import corrupt_cifar

    rng = np.random.default_rng(1)
    n = 9
    labels = rng.integers(0, 3, n)
    images = rng.integers(0, 120, (n, 32, 32, 3), dtype=np.uint8)
    images[np.arange(n), :, :, labels] = 250  # the class is the dominant channel: ChannelModel is right on clean
    images[0, :, :, :] = 0  # ... except on an all-black image (a tie: class 0)
    labels[0] = 2
    folder = tmp_path / "cifar" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    batch = {b"data": images.transpose(0, 3, 1, 2).reshape(n, 3072), b"labels": [int(v) for v in labels]}
    (folder / "test_batch").write_bytes(pickle.dumps(batch, protocol=2))
    for release, corruptions, benchmark in (("cifar10-c-bar", "ripple,lines", "imagenet-c-bar"),
                                            ("cifar10-c", "fog,contrast", "imagenet-c")):
        out = tmp_path / release
        corrupt_cifar(tmp_path / "cifar", out, make_settings(corruptions, release=release), workers=1)
        result = evaluate(ChannelModel(10), benchmark, out, store=tmp_path / "store", workers=0, device="cpu",
                          progress=False, clean_data=str(tmp_path / "cifar"), shard_size=4)
        assert result.metric("clean_error") == pytest.approx(1 / n), benchmark
        assert not any("no clean error" in note for note in result.notes), result.notes
        with pytest.raises(DataError, match="--clean-data next to CIFAR-10-C.-bar. arrays is the clean CIFAR-10 test "
                                            "set: .* holds no CIFAR-10 test_batch"):
            evaluate(ChannelModel(10), benchmark, out, store=tmp_path / "store", workers=0, device="cpu",
                     progress=False, clean_data=str(tmp_path))
