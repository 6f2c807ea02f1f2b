"""The pre-flight check of released layouts before evaluate (imagenet-c, imagenet-c-bar): a tree whose settings
do not hold the same classes and files is refused, naming what is missing, unless --allow-incomplete (recorded);
a consistent subset runs and says so in the run, `show` and the report. Also the C-bar bug it fixes: a class
folder missing from one severity folder shifted that severity's class indices (issue 37, finding 1)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from .conftest import WNIDS, make_folder, make_imagenet_c
from tiny_models import ChannelModel

from robustlab.cli import app
from robustlab.engine import evaluate
from robustlab.errors import DataError
from robustlab.store import open_store

FAST = dict(workers=0, device="cpu", progress=False)
TWO = dict(severities="1,2", **FAST)


def test_imagenet_c_refuses_a_setting_short_of_files_and_allow_incomplete_records_it(tmp_path):
    root = make_imagenet_c(tmp_path / "c", corruptions=("fog", "brightness"), severities=(1, 2), per_class=3)
    (root / "fog" / "2" / WNIDS[1] / "img_002.JPEG").unlink()
    with pytest.raises(DataError, match=rf"the ImageNet-C tree .* is incomplete: .*fog/2/{WNIDS[1]} lacks 1 of 3 files "
                                        r"\(e.g. img_002.JPEG\).*--allow-incomplete"):
        evaluate(ChannelModel(1000), "imagenet-c", root, store=tmp_path / "s", **TWO)
    result = evaluate(ChannelModel(1000), "imagenet-c", root, store=tmp_path / "s", allow_incomplete=True, **TWO)
    assert result.config["incomplete"] == {"settings_short": ["fog/2"], "files_missing": 1, "problems": 1,
                                           "examples": [f"fog/2/{WNIDS[1]} lacks 1 of 3 files (e.g. img_002.JPEG)"]}
    assert result.metric("n_samples", "fog/2") == 8 and result.metric("n_samples", "fog/1") == 9
    assert any(n.startswith("evaluated with --allow-incomplete") for n in result.notes)
    assert result.summary["incomplete"]["files_missing"] == 1


def test_a_consistent_subset_runs_and_says_so_in_the_run_show_and_the_report(tmp_path):
    from robustlab.report import write_report

    root = make_imagenet_c(tmp_path / "c", corruptions=("fog",), severities=(1, 2), per_class=4)
    store = tmp_path / "store"
    result = evaluate(ChannelModel(1000), "imagenet-c", root, store=store, **TWO)
    text = "subset: 3 of 1,000 classes, 12 of 50,000 images"
    assert result.config["subset"] == {"release": "imagenet-c", "classes": 3, "of_classes": 1000, "images": 12,
                                       "of_images": 50000}
    assert any(n.startswith(text) for n in result.notes) and text in result.table()
    shown = CliRunner().invoke(app, ["show", result.run_id, "--store", str(store)])
    assert text in shown.output
    with open_store(store) as st:
        html = write_report(st, tmp_path / "report.html").read_text()
    assert text in html


def test_cifar_c_arrays_smaller_than_the_release_are_a_subset(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.tile(rng.integers(0, 3, 6), 5)
    for c in ("fog", "snow"):
        np.save(tmp_path / f"{c}.npy", rng.integers(0, 256, (30, 32, 32, 3), dtype=np.uint8))
    np.save(tmp_path / "labels.npy", labels)
    result = evaluate(ChannelModel(10), "imagenet-c", tmp_path, store=tmp_path / "s", corruptions="fog,snow", **FAST)
    assert result.config["subset"]["images"] == 6 and result.config["subset"]["of_images"] == 10_000
    assert any("subset: 3 of 10 classes, 6 of 10,000 images" in n for n in result.notes)


def cbar_tree(root, classes=("cat", "dog", "fox")):
    """ImageNet-C-bar's preprocessed layout (severity folders 1..5) of one corruption, the same images in
    every severity: each image's dominant colour channel is its class (ChannelModel gets most right)."""
    for s in range(1, 6):
        make_folder(root / "sparkles" / str(s), classes, 3, seed=11)
    return root


def setting_error(store, run_id: str, setting: str, keep=lambda sample: True) -> float:
    with open_store(store) as st:
        units = {u: c for u, c in st.read_predictions(run_id).items() if u.startswith(f"{setting}/")}
    ids = np.concatenate([c["sample_id"] for c in units.values()])
    wrong = np.concatenate([c["top5_index"][:, 0] != c["label"] for c in units.values()])
    mask = np.array([keep(str(i)) for i in ids])
    return float(wrong[mask].mean())


def test_cbar_class_folder_missing_in_one_severity_no_longer_shifts_its_labels(tmp_path):
    """Issue 37, finding 1: with non-wnid class folders (numbered by sorted name), sparkles/2 without its `cat`
    folder was read with dog as class 0 and fox as class 1: error 72 % instead of 10 %, and no note. It is now
    refused like imagenet-c; with --allow-incomplete the other classes keep their indices."""
    intact = cbar_tree(tmp_path / "intact")
    broken = cbar_tree(tmp_path / "broken")
    shutil.rmtree(broken / "sparkles" / "2" / "cat")
    options = dict(corruptions="sparkles", **FAST)
    with pytest.raises(DataError, match="the ImageNet-C-bar tree .* is incomplete: .*class folder sparkles/2/cat is "
                                        "missing.*--allow-incomplete"):
        evaluate(ChannelModel(3), "imagenet-c-bar", broken, store=tmp_path / "s1", **options)
    good = evaluate(ChannelModel(3), "imagenet-c-bar", intact, store=tmp_path / "s0", **options)
    run = evaluate(ChannelModel(3), "imagenet-c-bar", broken, store=tmp_path / "s1", allow_incomplete=True, **options)
    assert run.config["class_map"] == ["cat", "dog", "fox"]  # pinned over every setting's classes
    same_images = setting_error(tmp_path / "s0", good.run_id, "sparkles/2", lambda i: not i.startswith("cat/"))
    assert run.metric("error", "sparkles/2") == pytest.approx(same_images)
    assert run.metric("error", "sparkles/2") < 0.5 and good.metric("error", "sparkles/1") == run.metric("error", "sparkles/1")
    assert any("class folder sparkles/2/cat is missing" in n for n in run.notes)
