"""Detection benchmarks end to end on generated sets (coco-c, voc-c, cityscapes-c, results files,
detection pm-k, mmdetection export/import)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from detection_data import BOX_A, BOX_B, TemplateDetector, make_cityscapes, make_coco, make_vid, make_voc, template

from robustlab.corruptions import corrupt
from robustlab.data.images import read_image
from robustlab.engine import evaluate, get_benchmark, opened_store
from robustlab.benchmarks.detection import export_results, import_mmdet
from robustlab.errors import InputError, ModelError
from robustlab.metrics.detection import coco_metrics, to_coco_results
from robustlab.metrics.corruption import ALL_CORRUPTIONS, BENCHMARK_CORRUPTIONS
from robustlab.metrics.importers import read_mmdet_robustness_results
from robustlab.metrics.under_corruption import performance_under_corruption
from robustlab.seeding import derive_seed

RUN = dict(workers=0, batch_size=2, device="cpu", progress=False)


@pytest.fixture()
def coco(tmp_path):
    return make_coco(tmp_path / "coco", n=4)


def test_coco_c_hand_values_and_clean_once(coco, tmp_path):
    det = TemplateDetector()
    r = evaluate(det, "coco-c", coco, store=tmp_path / "s", corruptions="gaussian_noise,fog", severities="1,2", **RUN)
    # clean: both boxes exact -> AP 1; corrupted: box B misses at every IoU threshold -> AP (1 + 0) / 2
    assert r.metric("AP", "clean") == pytest.approx(1.0)
    for setting in ("gaussian_noise/1", "gaussian_noise/2", "fog/1", "fog/2"):
        assert r.metric("AP", setting) == pytest.approx(0.5)
    assert (r.metric("P"), r.metric("mPC"), r.metric("rPC")) == pytest.approx((1.0, 0.5, 0.5))
    assert r.metric("rPC:AP50") == pytest.approx(0.5)
    assert det.calls == 4 * 5  # clean (severity 0) once + 4 corrupted settings
    assert sum(k.startswith("clean/") for k in _units(tmp_path / "s", r.run_id)) == 1
    assert any("ratio-of-means" in n for n in r.notes)
    assert r.summary["P"] == pytest.approx(1.0) and r.summary["headline"] == "AP"


def _units(store, run_id):
    with opened_store(store) as st:
        return st.completed_units(run_id)


def test_stored_columns_match_pycocotools(coco, tmp_path):
    r = evaluate(TemplateDetector(), "coco-c", coco, store=tmp_path / "s", corruptions="fog", severities="3", **RUN)
    with opened_store(tmp_path / "s") as st:
        cols = st.read_unit(r.run_id, "fog/3/shard-0000")
    assert cols["det_boxes"].shape == (4, 100, 4) and cols["det_count"].tolist() == [2] * 4
    assert np.all(cols["det_labels"][:, 2:] == -1) and np.all(cols["pixel_rmse"] > 0)
    gt = json.loads((coco / "annotations" / "instances_val2017.json").read_text())
    dets = [{"boxes": cols["det_boxes"][i, :2], "scores": cols["det_scores"][i, :2], "labels": cols["det_labels"][i, :2]}
            for i in range(4)]
    ids = [100 + int(i) for i in cols["label"]]
    expected = coco_metrics(gt, to_coco_results(ids, dets), backend="pycocotools")["AP"]
    assert r.metric("AP", "fog/3") == pytest.approx(expected, abs=1e-12)
    assert r.metric("rmse", "fog/3") == pytest.approx(float(cols["pixel_rmse"].mean()), rel=1e-6)


def test_resume_recomputes_only_deleted_unit(coco, tmp_path):
    store = tmp_path / "s"
    kw = dict(store=store, corruptions="fog", severities="1,2", shard_size=2, **RUN)
    first = evaluate(TemplateDetector(), "coco-c", coco, **kw)
    assert first.units_total == 6 and first.units_computed == 6
    with opened_store(store) as st:
        st.delete_unit(first.run_id, "fog/2/shard-0001")
    det = TemplateDetector()
    again = evaluate(det, "coco-c", coco, **kw)
    assert again.run_id == first.run_id and again.units_computed == 1 and det.calls == 2
    assert again.metric("mPC") == pytest.approx(first.metric("mPC"))
    assert evaluate(TemplateDetector(), "coco-c", coco, **kw).units_computed == 0


@pytest.mark.parametrize(("spec", "expected"), [
    ("noise", ["gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise"]),
    ("holdout", ["speckle_noise", "gaussian_blur", "spatter", "saturate"]),
    ("weather", ["snow", "frost", "fog", "spatter"]),
])
def test_corruption_subsets(coco, spec, expected):
    config = get_benchmark("coco-c").config_for(str(coco), corruptions=spec, severities=None)
    assert sorted(config.corruptions) == sorted(expected)
    assert config.settings[0] == "clean" and len(config.settings) == 1 + 5 * len(expected)
    assert get_benchmark("coco-c").config_for(str(coco), corruptions="all").corruptions == list(ALL_CORRUPTIONS)
    assert get_benchmark("coco-c").config_for(str(coco)).corruptions == list(BENCHMARK_CORRUPTIONS)
    with pytest.raises(InputError, match="option"):
        get_benchmark("coco-c").config_for(str(coco), bogus=1)


def test_voc_c_11_point_hand_values(tmp_path):
    root = make_voc(tmp_path / "voc")
    r = evaluate(TemplateDetector(labels=(6, 11)), "voc-c", root, store=tmp_path / "s",
                 corruptions="contrast", severities="1", **RUN)  # car = 6, dog = 11
    assert r.metric("AP50:car", "clean") == 1.0 and r.metric("AP50:dog", "clean") == 1.0
    assert r.metric("AP50:dog", "contrast/1") == 0.0
    assert (r.metric("P"), r.metric("mPC"), r.metric("rPC")) == pytest.approx((1.0, 0.5, 0.5))
    out = export_results(r, tmp_path / "voc.pkl")
    nested = read_mmdet_robustness_results(out)
    assert nested["contrast"][1]["AP50"].tolist() == [1.0, 0.0] and nested["contrast"][0]["AP50"].tolist() == [1.0, 1.0]


def test_cityscapes_c(tmp_path):
    root = make_cityscapes(tmp_path / "cs")
    r = evaluate(TemplateDetector(labels=(2, 0)), "cityscapes-c", root, store=tmp_path / "s",
                 corruptions="brightness", severities="2", **RUN)  # car = 2, person = 0
    assert (r.metric("P"), r.metric("mPC")) == pytest.approx((1.0, 0.5))


def test_export_import_round_trip(coco, tmp_path):
    r = evaluate(TemplateDetector(), "coco-c", coco, store=tmp_path / "s", corruptions="fog,contrast",
                 severities="1-5", **RUN)
    pkl = export_results(r, tmp_path / "out.pkl")
    raw = pickle.loads(pkl.read_bytes())  # plain data only
    assert set(raw["fog"]) == {0, 1, 2, 3, 4, 5} and isinstance(raw["fog"][3]["bbox"]["AP"], float)
    nested = read_mmdet_robustness_results(pkl)
    perf = performance_under_corruption(nested, corruptions=["fog", "contrast"])
    assert perf["AP"].mPC == pytest.approx(r.metric("mPC")) and perf["AP"].rPC == pytest.approx(r.metric("rPC"))
    table, perf2, stored = import_mmdet(pkl, corruptions="fog,contrast", store=tmp_path / "s2", model="mine")
    assert "rPC" in table and stored.metric("rPC") == pytest.approx(r.metric("rPC"))
    assert json.loads(export_results(r, tmp_path / "out.json").read_text())["fog"]["0"]["bbox"]["AP"] == 1.0
    assert "metric,setting,value" in export_results(r, tmp_path / "out.csv").read_text()


def test_import_reference_pickle_published_pascal_row(tmp_path):
    from pathlib import Path

    path = Path(__file__).parents[1] / "fixtures" / "detection" / "voc_faster_rcnn_r50_fpn_1x_voc0712_results.pkl"
    table, perf, stored = import_mmdet(path, store=tmp_path / "s", model="faster-rcnn")
    assert perf["AP50"].rounded() == (80.5, 48.6, 60.4)
    assert stored.metric("rPC") == pytest.approx(perf["AP50"].rPC) and "60.4" in table


def test_results_file_model_hand_values(coco, tmp_path):
    def entries(image_ids, shift):
        out = []
        for i in image_ids:
            out.append({"image_id": i, "category_id": 1, "bbox": [8, 8, 16, 16], "score": 0.9})
            out.append({"image_id": i, "category_id": 3, "bbox": [32 + shift, 30, 28, 26], "score": 0.8})
        return out

    res = tmp_path / "res"
    (res / "fog").mkdir(parents=True)
    (res / "clean.json").write_text(json.dumps(entries([100, 101, 102, 103], 0)))
    (res / "fog" / "1.json").write_text(json.dumps(entries([100, 101], 0) + entries([102, 103], -12)))
    (res / "fog" / "2.json").write_text(json.dumps(entries([100, 101, 102, 103], -12)))
    r = evaluate(f"results:{res}", "coco-c", coco, store=tmp_path / "s", corruptions="fog", severities="1,2", **RUN)
    assert r.metric("AP", "fog/2") == pytest.approx(0.5)
    assert r.metric("AP", "fog/1") == pytest.approx(
        coco_metrics(json.loads((coco / "annotations" / "instances_val2017.json").read_text()),
                     json.loads((res / "fog" / "1.json").read_text()))["AP"])
    assert r.metric("mPC") == pytest.approx((r.metric("AP", "fog/1") + 0.5) / 2)
    with pytest.raises(Exception, match="setting 'fog/3'"):
        evaluate(f"results:{res}", "coco-c", coco, store=tmp_path / "s", corruptions="fog", severities="3", **RUN)


def test_cache_matches_per_image_seed_and_is_reused(coco, tmp_path):
    cache = tmp_path / "cache"
    a = evaluate(TemplateDetector(), "coco-c", coco, store=tmp_path / "s1", corruptions="gaussian_noise",
                 severities="2", cache=str(cache), **RUN)
    cached = cache / "gaussian_noise" / "2" / "val2017" / "000001.png"
    expected = corrupt(template(), "gaussian_noise", 2,
                       rng=np.random.RandomState(derive_seed(0, "val2017/000001.png", "gaussian_noise", 2)))
    assert np.array_equal(read_image(cached), expected)
    b = evaluate(TemplateDetector(), "coco-c", coco, store=tmp_path / "s2", corruptions="gaussian_noise",
                 severities="2", cache=str(cache), **RUN)
    assert a.run_id == b.run_id and a.metrics == b.metrics
    with pytest.raises(InputError, match="seed"):
        evaluate(TemplateDetector(), "coco-c", coco, store=tmp_path / "s3", corruptions="gaussian_noise",
                 severities="2", cache=str(cache), seed=1, **RUN)


# --- bad detector outputs --------------------------------------------------------------------------


def _const(**out):
    def detector(images):
        return [{k: np.asarray(v) for k, v in out.items()} for _ in images]
    return detector


def test_detector_without_boxes_gives_zero(coco, tmp_path):
    r = evaluate(_const(boxes=np.zeros((0, 4)), scores=np.zeros(0), labels=np.zeros(0, int)), "coco-c", coco,
                 store=tmp_path / "s", corruptions="fog", severities="1", **RUN)
    assert r.metric("AP", "clean") == 0.0 and r.metric("P") == 0.0
    assert np.isnan(r.metric("rPC"))


def test_boxes_outside_image_are_clipped(coco, tmp_path):
    boxes = [BOX_A, (BOX_B[0], BOX_B[1], 90.0, 80.0), (-50.0, -50.0, -10.0, -10.0)]
    r = evaluate(_const(boxes=boxes, scores=[0.9, 0.8, 0.5], labels=[1, 3, 3]), "coco-c", coco,
                 store=tmp_path / "s", corruptions="fog", severities="1", **RUN)
    with opened_store(tmp_path / "s") as st:
        cols = st.read_unit(r.run_id, "clean/shard-0000")
    assert cols["det_boxes"].max() <= 64 and cols["det_boxes"].min() >= 0
    assert cols["det_boxes"][0, 1].tolist() == [BOX_B[0], BOX_B[1], 64.0, 64.0]


def test_nan_scores_raise_model_error(coco, tmp_path):
    with pytest.raises(ModelError, match="NaN"):
        evaluate(_const(boxes=[BOX_A], scores=[np.nan], labels=[1]), "coco-c", coco, store=tmp_path / "s",
                 corruptions="fog", severities="1", **RUN)


def test_unknown_category_ids_error_or_drop(coco, tmp_path):
    det = _const(boxes=[BOX_A, BOX_B], scores=[0.9, 0.8], labels=[1, 77])
    with pytest.raises(InputError, match=r"category ids \[77\]"):
        evaluate(det, "coco-c", coco, store=tmp_path / "s", corruptions="fog", severities="1", **RUN)
    r = evaluate(det, "coco-c", coco, store=tmp_path / "s2", corruptions="fog", severities="1",
                 unknown_labels="drop", **RUN)
    assert r.metric("AP", "clean") == pytest.approx(0.5)
    mapped = evaluate(det, "coco-c", coco, store=tmp_path / "s3", corruptions="fog", severities="1",
                      label_map={"1": 1, "77": 3}, **RUN)
    assert mapped.metric("AP", "clean") == pytest.approx(1.0)


# --- detection pm-k -------------------------------------------------------------------------------------


def test_detection_pmk_hand_values(tmp_path):
    root, _ = make_vid(tmp_path / "ILSVRC")
    r = evaluate(TemplateDetector(labels=(0, 6)), "imagenet-vid-robust-detection", root, store=tmp_path / "s", **RUN)
    # anchors are clean frames: AP 1. a/1's worst neighbour is the altered a/2 (car box missed),
    # so pm-k scores frames {a/2, b/1}: airplane AP 1, car AP 0.5 (TP .8 before FP .7) -> 0.75;
    # class-agnostic: TP .9, TP .9, TP .8, FP .7 over 4 objects -> 0.75.
    assert r.metric("map_anchor") == 1.0 and r.metric("loc_map_anchor") == 1.0
    assert r.metric("map_pmk") == pytest.approx(0.75) and r.metric("loc_map_pmk") == pytest.approx(0.75)
    assert r.metric("map_pmk", "k/1") == pytest.approx(0.75) and r.metric("n_anchors") == 2


def test_rmse_vs_rpc_from_run_and_stored_copy(coco, tmp_path):
    from robustlab.benchmarks.detection_results import rmse_from_folders, rmse_rpc_analysis

    cache = tmp_path / "cache"
    r = evaluate(TemplateDetector(), "coco-c", coco, store=tmp_path / "s", corruptions="gaussian_noise,contrast",
                 severities="1,3", cache=str(cache), **RUN)
    rel = [f"val2017/{i:06d}.png" for i in range(4)]
    stored = rmse_from_folders(coco, cache, rel, ["gaussian_noise", "contrast"], [1, 3])
    assert stored["contrast"][3] == pytest.approx(r.metric("rmse", "contrast/3"), rel=1e-5)
    analysis = rmse_rpc_analysis(r, by="cell")
    assert len(analysis.rows) == 4 and all(row["rpc"] == pytest.approx(0.5) for row in analysis.rows)
    assert r.metric("rmse_vs_rpc:slope") == pytest.approx(rmse_rpc_analysis(r).slope, abs=1e-9)


def test_cli_evaluate_export_and_import(coco, tmp_path):
    from typer.testing import CliRunner

    from robustlab.cli import app

    model_file = tmp_path / "det.py"
    model_file.write_text("import sys\nsys.path.insert(0, %r)\nfrom detection_data import TemplateDetector\n"
                          "def make():\n    return TemplateDetector()\n" % str(__import__("pathlib").Path(__file__).parent))
    runner = CliRunner()
    store = str(tmp_path / "s")
    out = runner.invoke(app, ["evaluate", "-b", "coco-c", "-d", str(coco), "-m", f"python:{model_file}:make",
                              "-c", "fog", "-s", "1", "--store", store, "--workers", "0", "--device", "cpu",
                              "--json", "--no-progress"])
    assert out.exit_code == 0, out.output
    run_id = json.loads(out.stdout)["run_id"]
    pkl = tmp_path / "r.pkl"
    assert runner.invoke(app, ["export-detection", run_id, str(pkl), "--store", store]).exit_code == 0
    shown = runner.invoke(app, ["import-mmdet", str(pkl), "-c", "fog", "--rpc", "mean-of-ratios"])
    assert shown.exit_code == 0 and "mean-of-ratios" in shown.stdout
    assert "100.0" in shown.stdout and "50.0" in shown.stdout


def test_detection_corrupted_any_coco_folder_with_voc_metric(tmp_path):
    root = make_coco(tmp_path / "any", n=2)
    r = evaluate(TemplateDetector(), "detection-corrupted", root, store=tmp_path / "s", corruptions="pixelate",
                 severities="4", metric="voc", **RUN)
    assert r.config["headline"] == "AP50" and r.metric("AP50:red", "pixelate/4") == 1.0
    assert (r.metric("P"), r.metric("mPC")) == pytest.approx((1.0, 0.5))


def test_detector_resize_maps_boxes_back_and_crop_is_refused(coco, tmp_path):
    from robustlab.models import Preprocessing
    from robustlab.models.detection import as_detector

    def scaled(images):  # the truth at the 128-px input the resize makes: exact after mapping back
        assert images[0].shape[-2:] == (128, 128)
        return [{"boxes": 2 * np.array([BOX_A, BOX_B]), "scores": [0.9, 0.8], "labels": [1, 3]} for _ in images]

    r = evaluate(as_detector(scaled, preprocessing=Preprocessing(resize=128)), "coco-c", coco,
                 store=tmp_path / "s", corruptions="fog", severities="1", **RUN)
    assert r.metric("AP", "clean") == pytest.approx(1.0)
    with pytest.raises(InputError, match="crops"):
        evaluate(as_detector(scaled, preprocessing=Preprocessing(resize=128, crop=100)), "coco-c", coco,
                 store=tmp_path / "s2", corruptions="fog", severities="1", **RUN)


