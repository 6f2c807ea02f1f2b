"""``robustlab demo``: refuses unusable output folders cleanly; end to end (slow) twice, same numbers."""

from __future__ import annotations

import errno
import shutil
import tempfile

import pytest

from robustlab.demo import run as demo_run
from robustlab.errors import DataError


def test_output_that_is_a_file_is_refused(tmp_path):
    target = tmp_path / "out"
    target.write_text("not a folder")
    with pytest.raises(DataError, match="is a file"):
        demo_run.run_demo(target, quick=True, log=lambda s: None)
    assert target.read_text() == "not a folder"


@pytest.mark.parametrize("err, message", [(errno.EROFS, "read-only or no permission"), (errno.ENOSPC, "disk is full")])
def test_unwritable_output_is_refused_and_nothing_is_left(tmp_path, monkeypatch, err, message):
    def refuse(*args, **kwargs):
        raise OSError(err, "simulated")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", refuse)
    out = tmp_path / "demo"
    with pytest.raises(DataError, match=message):
        demo_run.run_demo(out, quick=True, log=lambda s: None)
    assert not out.exists()


def test_a_nearly_full_disk_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    real = shutil.disk_usage

    def nearly_full(path):
        usage = real(path)
        return usage._replace(free=10 * 2**20)

    monkeypatch.setattr(shutil, "disk_usage", nearly_full)
    out = tmp_path / "demo"
    with pytest.raises(DataError, match="MiB free"):
        demo_run.run_demo(out, quick=True, log=lambda s: None)
    assert not out.exists()


def _script(name: str):
    """A module of scripts/ (not a package), loaded from its file."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"scripts_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def setting(result) -> tuple:
    """What names a demo run across two output folders (run ids name the data's path): benchmark,
    model and, for the adversarial runs (FGSM and PGD of one model), the attack."""
    return result.benchmark, result.model, result.config.get("attack")


def canonical(rows) -> list[tuple]:
    """Metric rows, sorted, with NaN (an undefined metric, e.g. a ratio over no pairs) made comparable."""
    return sorted((m, s, None if v != v else v) for m, s, v in rows)


#: The range the demo CNN's ratios to the baseline must land in (0-300 %: a reader can interpret them).
RATIO_RANGE = (0.0, 3.0)


def world_digest(root) -> dict[str, str]:
    """sha256 of every file the demo generated under ``root/world``; the output folder's own path,
    which the video set's records name, is replaced by ``<out>`` first."""
    import hashlib

    own = str(root).encode()
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes().replace(own, b"<out>")).hexdigest()
            for p in sorted((root / "world").rglob("*")) if p.is_file()}


def headline_ratios(results, model: str) -> dict[str, float | None]:
    """relative mCE (the 15 benchmark corruptions), mFR and mT5D (the 10 perturbations) of ``model``,
    each the mean of its defined terms (a term is undefined where the baseline's denominator is
    within its sampling error); at least half the terms must be defined."""
    corrupted = next(r for r in results if r.benchmark == "corrupted" and r.model == model)
    perturbed = next(r for r in results if r.benchmark == "perturbed" and r.model == model)
    rates = {(m, s): v for m, s, v in perturbed.metrics}
    assert corrupted.summary["relative_mce_of"] == 15 and corrupted.summary["relative_mce_terms"] >= 8
    assert rates[("mfr_terms", "")] >= 5 and rates[("mt5d_terms", "")] >= 5
    return {"relative_mce": corrupted.summary.get("relative_mce"), "mfr": rates.get(("mfr", "")),
            "mt5d": rates.get(("mt5d", ""))}


@pytest.mark.slow
def test_quick_demo_is_deterministic_in_range_and_laid_out(tmp_path):
    """Two fresh quick demos from seed 0, in two folders, give the same world (every file, the H.264
    videos included), the same per-sample predictions and the same numbers (run ids name the data's
    path, so they differ between folders); the demo CNN's ratios to the baseline
    are interpretable; every report figure is free of overlapping text (checked in Chromium when
    it is installed); a third run in the first folder finds everything stored, same run ids."""
    compare_columns = _script("compare_stores").compare_columns

    from robustlab.engine import get_benchmark
    from robustlab.report import collect_results
    from robustlab.store import open_store

    first = demo_run.run_demo(tmp_path / "a", quick=True, progress=False, log=lambda s: None)
    second = demo_run.run_demo(tmp_path / "b", quick=True, progress=False, log=lambda s: None)
    html = first.report.read_text()
    assert html.startswith("<!DOCTYPE html>") and "robustlab demo" in html
    assert 'id="fig-error-change-demo-cnn-noise"' in html  # the noise-augmented CNN beside the plain one
    assert world_digest(first.out) == world_digest(second.out)
    assert {k: len(v) for k, v in second.runs.items()} == {k: len(v) for k, v in first.runs.items()}
    with open_store(first.store) as st:
        results = collect_results(st)
        assert {r.benchmark for r in results} == {"corrupted", "perturbed", "video-pmk", "adversarial-auc",
                                                  "detection-corrupted"}
        assert {r.model for r in results if r.benchmark == "corrupted"} == {"demo:baseline", "demo:cnn",
                                                                           "demo:cnn-noise"}
        for r in results:  # every stored number is recomputable from the per-sample predictions
            bench = get_benchmark(r.benchmark)
            config = bench.config_of(r.config)
            related = {a: st.read_predictions(rid) for a, rid in bench.related_runs(config).items()}
            assert canonical(bench.metrics(config, st.read_predictions(r.run_id), related)) == canonical(r.metrics)
        cnn = next(r for r in results if r.benchmark == "corrupted" and r.model == "demo:cnn")
        assert cnn.config["baseline_run"] and any(m == "ce" for m, _, _ in cnn.metrics)
        ratios = headline_ratios(results, "demo:cnn")
        for name, value in ratios.items():  # defined (over the measurable terms), and in range
            assert value is not None and RATIO_RANGE[0] < value < RATIO_RANGE[1], (name, ratios)
        before = {r.run_id: canonical(r.metrics) for r in results}
        by_setting = {setting(r): canonical(r.metrics) for r in results}
        predictions = {setting(r): st.read_predictions(r.run_id) for r in results}
        assert len(by_setting) == len(results)  # one run per setting
    with open_store(second.store) as st:
        assert {setting(r): canonical(r.metrics) for r in collect_results(st)} == by_setting
        for r in collect_results(st):  # and every per-sample prediction, column by column
            assert compare_columns(predictions[setting(r)], st.read_predictions(r.run_id)) == [], setting(r)
    third = demo_run.run_demo(tmp_path / "a", quick=True, progress=False, log=lambda s: None)
    assert third.runs == first.runs
    with open_store(third.store) as st:
        assert {r.run_id: canonical(r.metrics) for r in collect_results(st)} == before
    check_report_layout(first.report, tmp_path)


def check_report_layout(report, tmp_path) -> None:
    """No overlapping text and no text over data in any SVG figure, at 1280 px in Chromium."""
    from report.browser_checks import ARGS, CHROMIUM  # tests/ is on sys.path (rootdir conftest)
    from report.svg_layout import assert_no_overlap

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (run scripts/ci-system-deps.sh): layout not checked")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.as_uri())
        assert assert_no_overlap(page) >= 15
        browser.close()


@pytest.mark.slow
def test_full_demo_video_set_has_at_least_60_anchors(tmp_path):
    """The full demo's video world: enough anchors survive review for pm-k intervals <= 30 points."""
    import json

    from robustlab.metrics.stats import clopper_pearson

    paths = demo_run.build_world(tmp_path, sizes={**demo_run.SIZES["quick"], "videos": demo_run.SIZES["full"]["videos"]},
                                 seed=0, log=lambda s: None)
    anchors = json.loads((paths["pmk"] / "pmsets.json").read_text())  # {anchor frame: [neighbour frames]}
    assert len(anchors) >= 60
    low, high = clopper_pearson(len(anchors) // 2, len(anchors))  # the widest interval: accuracy 50 %
    assert high - low <= 0.30
