"""No silent partial success: a run that measured nothing is an error, and imported results are
checked as strictly as the store checks its own."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from robustlab.engine.benchmark import get_benchmark
from robustlab.metrics.importers import read_mmdet_robustness_results

from .helpers import EVALUATE, assert_error, assert_ok, image_folder, run, write_truncated_jpeg

FIXTURES = Path(__file__).parents[1] / "fixtures"
COCO_RESULTS = FIXTURES / "detection" / "coco_faster_rcnn_r50_fpn_1x_results.pkl"


def test_a_run_in_which_every_sample_was_skipped_is_an_error(tmp_path):
    """Silent partial success (fails on the old code): every image unreadable gave a "complete"
    run with an empty table, exit 0, and a note blaming clean=False."""
    data = tmp_path / "data"
    for name in ("cat", "dog"):
        (data / name).mkdir(parents=True)
        write_truncated_jpeg(data / name / "0.jpg")
        (data / name / "1.png").write_text("not an image")
    argv = [*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", tmp_path / "store", "-c", "fog",
            "-s", "1"]
    for _ in range(2):  # the rerun says the same, it does not turn the stored units into a result
        line = assert_error(run(*argv), "every sample of run", "was skipped", "8 of 8", "Nothing was measured")
        assert "clean=False" not in line
    runs = json.loads(run("runs", "--store", tmp_path / "store", "--json").out)
    assert [r["status"] for r in runs] == ["failed"]
    assert run("show", runs[0]["run_id"], "--store", tmp_path / "store").code != 0


def test_some_samples_skipped_is_still_a_result(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    (data / "cat" / "bad.png").write_text("not an image")
    result = run(*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", tmp_path / "store", "-c", "fog",
                 "-s", "1", "--json")
    assert_ok(result)
    out = json.loads(result.out)
    assert out["status"] == "complete" and len(out["problems"]) == 2  # clean and fog/1


def test_the_missing_clean_error_note_names_the_real_cause():
    from robustlab.engine.presentation import presentation_of

    bench = get_benchmark("corrupted")
    shown = presentation_of(bench)
    metrics = [("error", "fog/1", 0.4)]
    config = bench.config_class(data="/d", corruptions=["fog"], severities=[1], seed=0, profile="imagecorruptions",
                                class_map="auto", shard_size=10, clean=True, baseline="alexnet", baseline_run=None,
                                top_k=5, save_logits=False, num_classes=2)
    assert any("every clean sample was skipped" in n for n in shown.notes(config, metrics))
    assert any("clean=False" in n for n in shown.notes(config.replace(clean=False), metrics))


@pytest.mark.parametrize("bad", [7, -1, True, 2.5, "x", None])
def test_import_mmdet_validates_severities_as_the_store_does(tmp_path, bad):
    """Severity keys outside 0..5, booleans and fractions were read (int(2.5) == 2, True == 1)
    and printed as if they were severities (fails on the old code)."""
    nested = read_mmdet_robustness_results(COCO_RESULTS)
    results = {c: {s: {"bbox": dict(cell)} for s, cell in by_s.items()} for c, by_s in nested.items()}
    results["fog"] = {k: v for k, v in results["fog"].items() if k != 1}
    results["fog"][bad] = {"bbox": dict(nested["fog"][1])}
    path = tmp_path / "results.pkl"
    path.write_bytes(pickle.dumps(results, protocol=2))
    assert_error(run("import-mmdet", path), "severity key", "0..5")
    assert_error(run("import-mmdet", path, "--store", tmp_path / "store"), "severity key")
    assert not (tmp_path / "store").exists()


def test_import_mmdet_refuses_values_outside_fractions(tmp_path):
    nested = read_mmdet_robustness_results(COCO_RESULTS)
    results = {c: {s: {"bbox": dict(cell)} for s, cell in by_s.items()} for c, by_s in nested.items()}
    results["fog"][3]["bbox"]["AP"] = 36.3  # a percentage
    path = tmp_path / "results.pkl"
    path.write_bytes(pickle.dumps(results, protocol=2))
    assert_error(run("import-mmdet", path), "not a fraction", "percentage")
    assert_ok(run("import-mmdet", COCO_RESULTS))
