"""`robustlab show`: a text layout for every benchmark family, JSON complete, clear failures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from robustlab.engine import evaluate
from robustlab.store import open_store

from .conftest import make_folder
from .test_video_benchmarks import make_code_model3, make_vid_set
from .tiny_models import ChannelModel, TinyCNN

FIXTURES = Path(__file__).parents[1] / "fixtures" / "detection"


def show(store: Path, run: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robustlab.cli", "show", run, "--store", str(store), *extra],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, labelled_root):
    """One small stored run per family, in one store."""
    root = tmp_path_factory.mktemp("show")
    store = root / "store"
    common = {"store": store, "workers": 0, "progress": False}
    out = {
        "corrupted": evaluate(ChannelModel(3), "corrupted", labelled_root, corruptions="brightness,fog",
                              severities="1-5", limit=6, **common),
        "perturbed": evaluate(TinyCNN(3), "perturbed", make_folder(root / "square", ("cat", "dog", "fox"), 2),
                              setting="cifar", limit=2,
                              perturbations="rotate,gaussian_noise", strides="1,2", **common),
        "video": evaluate(make_code_model3(), "video-pmk", make_vid_set(root / "vid"), batch_size=4, **common),
        "adversarial": evaluate(TinyCNN(3), "adversarial-auc", labelled_root, limit=6, eps="0,0.05,0.1",
                                class_map="sorted", **common),
        "mmdet": evaluate("mmdet:voc", "mmdet-results", FIXTURES / "voc_faster_rcnn_r50_fpn_1x_voc0712_results.pkl",
                          **common),
    }
    return store, out


@pytest.mark.parametrize("family,expected", [
    ("corrupted", ["errors and corruption errors (%)", "brightness", "s5", "mCE"]),
    ("perturbed", ["flip probability FP", "rotate", "gaussian_noise", "difficulty"]),
    ("video", ["pm-k accuracy (%)", "Clopper-Pearson", "drop (points)", "per class"]),
    ("adversarial", ["FGSM (linf) accuracy f(eps)", "0.05", "R over [0, 0.1]"]),
    ("mmdet", ["P / mPC / rPC (AP50, %): 80.5 / 48.6 / 60.4", "gaussian_noise", "mPC", "rPC"]),
])
def test_every_family_has_a_text_layout(runs, family, expected):
    store, results = runs
    done = show(store, results[family].run_id[:8])
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, (text, done.stdout)
    assert "Traceback" not in done.stdout + done.stderr


def test_json_stays_complete(runs):
    store, results = runs
    done = show(store, results["video"].run_id, "--json")
    data = json.loads(done.stdout)
    assert data["summary"]["k"] == 10 and data["summary"]["curve"]["0"]["value"] is not None
    assert {m["name"] for m in data["metrics"]} >= {"accuracy_original", "accuracy_pmk"}


def test_unknown_run_and_partial_run_exit_non_zero(runs, labelled_root):
    store, results = runs
    missing = show(store, "ffffffffffff")
    assert missing.returncode != 0 and "no run" in missing.stderr and "Traceback" not in missing.stderr
    with open_store(store) as st:
        rid = results["corrupted"].run_id
        st.set_run_status(rid, "running")
        st.put_metrics(rid, [])
    try:
        partial = show(store, rid)
        assert partial.returncode == 1
        assert "no metrics yet" in partial.stdout + partial.stderr and "evaluate" in partial.stderr
    finally:
        evaluate(ChannelModel(3), "corrupted", labelled_root, corruptions="brightness,fog", severities="1-5",
                 limit=6, store=store, workers=0, progress=False)


def test_a_run_of_an_unknown_benchmark_is_shown_with_a_notice(runs):
    store, _ = runs
    with open_store(store) as st:
        rid = st.register_run("old-model", "retired-benchmark", "/somewhere", {"x": 1})
        st.put_metrics(rid, [("accuracy", "", 0.5)])
        st.set_run_status(rid, "complete")
    done = show(store, rid)
    assert done.returncode == 0, done.stderr
    assert "not known to this robustlab" in done.stdout and "accuracy" in done.stdout


def test_a_study_folder_is_shown_as_its_table(tmp_path):
    from robustlab.studies import StudyResult

    study = StudyResult(rows=[{"condition": "mnist-lenet", "architecture": "lenet", "dataset": "mnist",
                               "start": "scratch", "epoch": 3, "n": 2, "R_mean": 0.5, "R_sd": 0.01,
                               "clean_mean": 0.9, "clean_sd": 0.02}])
    (tmp_path / "study.json").write_text(json.dumps(study.to_dict()))
    done = subprocess.run([sys.executable, "-m", "robustlab.cli", "show", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "mnist-lenet" in done.stdout and "0.5" in done.stdout
    not_a_study = subprocess.run([sys.executable, "-m", "robustlab.cli", "show", str(tmp_path / "nothing")],
                                 capture_output=True, text=True, timeout=120)
    assert not_a_study.returncode != 0
