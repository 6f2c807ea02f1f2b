"""The detection-under-corruption section: figures and numbers recomputed from stored predictions."""

from __future__ import annotations

from pathlib import Path

import pytest

from robustlab.engine import evaluate, get_benchmark
from robustlab.models import Detector
from robustlab.report import collect_results, render_html, write_report
from robustlab.report.render import headline
from robustlab.report.section_detection import rmse_per_corruption, severity_curve
from robustlab.store import open_store

try:
    from ..engine.detection_data import TemplateDetector, make_coco
except ImportError:  # tests/ without __init__.py: its folders are top-level packages
    from engine.detection_data import TemplateDetector, make_coco

DETECTION_FIGURES = ("performance-per-corruption", "rpc-per-corruption", "performance-vs-severity", "rmse-vs-rpc")
#: Shifts of the second box under corruption: larger shifts lose it at more IoU thresholds.
SHIFTS = {"shift-12": -12.0, "shift-6": -6.0, "shift-3": -3.0}


def add_detection_runs(store: Path, root: Path) -> None:
    coco = make_coco(root / "coco", n=4)
    for name, shift in SHIFTS.items():
        evaluate(Detector(TemplateDetector(shift=shift), name=name), "coco-c", coco, store=store,
                 corruptions="gaussian_noise,fog,contrast", severities="1,2,3", workers=0, batch_size=4, device="cpu",
                 progress=False)


@pytest.fixture(scope="module")
def detection_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-detection")
    add_detection_runs(root / "store", root)
    return root / "store"


def test_every_detection_figure_is_there(detection_store, tmp_path):
    with open_store(detection_store) as st:
        html = write_report(st, tmp_path / "r.html").read_text()
    for key in DETECTION_FIGURES:
        assert f'id="fig-{key}"' in html, key
    assert "Object detection under corruption" in html and "<script" not in html


def test_numbers_equal_those_recomputed_from_stored_predictions(detection_store):
    with open_store(detection_store) as st:
        results = collect_results(st)
        recomputed = {}
        for r in results:
            rows = get_benchmark(r.benchmark).metrics(r.run_config, st.read_predictions(r.run_id))
            recomputed[r.model] = {(m, s): v for m, s, v in rows}
    assert sorted(r.model for r in results) == sorted(SHIFTS)
    html = render_html(results)
    aps = {}
    for r in results:
        t = recomputed[r.model]
        for metric in ("AP", "AP50", "AP75"):
            cells = "".join(f"<td>{100 * t[(f'{k}:{metric}', '')]:.1f}</td>" for k in ("P", "mPC", "rPC"))
            assert f"<td>{metric}</td>{cells}" in html, (r.model, metric)
        p, mpc, rpc = (t[(k, "")] for k in ("P", "mPC", "rPC"))
        assert headline(r) == f"AP: P {100 * p:.1f} / mPC {100 * mpc:.1f} / rPC {100 * rpc:.1f}"
        assert rpc == pytest.approx(mpc / p)
        xs, ys = severity_curve(r, "AP")
        assert xs == [0, 1, 2, 3] and ys[0] == t[("P:AP", "")]
        assert ys[1] == pytest.approx(sum(t[("AP", f"{c}/1")] for c in ("gaussian_noise", "fog", "contrast")) / 3)
        assert set(rmse_per_corruption(r)) == {"gaussian_noise", "fog", "contrast"}
        aps[r.model] = mpc
    assert aps["shift-12"] < aps["shift-3"]  # the figures compare different detectors


def test_published_mmdetection_rows_in_the_report(tmp_path):
    """mmdetection's robustness pickles imported and reported: the paper's Pascal VOC row comes out exactly."""
    from robustlab.benchmarks.detection import import_mmdet

    fixtures = Path(__file__).parents[1] / "fixtures" / "detection"
    _, coco, _ = import_mmdet(fixtures / "coco_faster_rcnn_r50_fpn_1x_results.pkl", store=tmp_path / "s",
                              model="faster-rcnn coco")
    import_mmdet(fixtures / "voc_faster_rcnn_r50_fpn_1x_voc0712_results.pkl", store=tmp_path / "s",
                 model="faster-rcnn voc")
    with open_store(tmp_path / "s") as st:
        results = {r.model: r for r in collect_results(st)}
        html = write_report(st, tmp_path / "r.html").read_text()
    p, mpc, rpc = coco["AP"].rounded()  # mmdetection's own COCO model (36.4 / 18.0 / 49.5), not the paper's
    assert headline(results["faster-rcnn coco"]) == f"AP: P {p:.1f} / mPC {mpc:.1f} / rPC {rpc:.1f}"
    assert headline(results["faster-rcnn voc"]) == "AP50: P 80.5 / mPC 48.6 / rPC 60.4"  # the paper's Pascal row
    assert "<td>AP50</td><td>80.5</td><td>48.6</td><td>60.4</td>" in html
    for key in ("performance-per-corruption", "rpc-per-corruption", "performance-vs-severity"):
        assert f'id="fig-{key}"' in html, key
