"""The report: every format, numbers equal to those recomputed from stored predictions, errors."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest

from robustlab.engine import get_benchmark
from robustlab.errors import InputError
from robustlab.report import collect_results, render_html, write_report
from robustlab.store import open_store


def test_html_is_self_contained_with_every_figure(report_store, tmp_path):
    store, _ = report_store
    with open_store(store) as st:
        out = write_report(st, tmp_path / "r.html")
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"(src|href)=\"(https?:)?//", html), "the report must not load anything from the network"
    assert "<script" not in html
    for key in ("ce-per-corruption", "error-vs-severity", "clean-vs-corrupted", "corruption-examples",
                "normalised-accuracy-vs-eps", "accuracy-vs-eps"):
        assert f'id="fig-{key}"' in html, key
    assert html.count("<svg") >= 5 and "data:image/png;base64," in html
    # three models: too few for a fitted line and its 95% band, and the caption says so
    assert "least-squares fit across models" not in html and "No fitted line or confidence band: 3 models" in html
    assert 'class="legend"' in html and "Clopper-Pearson interval" in html  # every table says what [a, b] is
    assert "R = " in html


def test_numbers_equal_those_recomputed_from_stored_predictions(report_store, tmp_path):
    store, _ = report_store
    with open_store(store) as st:
        results = collect_results(st)
        for r in results:
            bench = get_benchmark(r.benchmark)
            recomputed = bench.metrics(r.run_config, st.read_predictions(r.run_id))
            assert sorted(recomputed) == sorted(r.metrics)
        out = write_report(st, tmp_path / "r.csv")
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    stored = {(r.run_id, m, s): v for r in results for m, s, v in r.metrics}
    assert len(rows) == len(stored)
    for row in rows:
        assert float(row["value"]) == stored[(row["run_id"], row["metric"], row["setting"])]


def test_markdown_and_json(report_store, tmp_path):
    store, _ = report_store
    with open_store(store) as st:
        md = write_report(st, tmp_path / "r.md").read_text()
        js = json.loads(write_report(st, tmp_path / "r.json").read_text())
    assert md.startswith("# robustlab report") and "| model | benchmark |" in md
    assert {r["benchmark"] for r in js["runs"]} == {"corrupted", "adversarial-auc"}
    assert len(js["runs"]) == 4


def test_headline_clean_accuracy_interval(report_store):
    store, _ = report_store
    with open_store(store) as st:
        sharp = next(r for r in collect_results(st, benchmarks=["corrupted"]) if r.model == "sharp")
    html = render_html([sharp])
    acc = 100 * (1 - sharp.metric("clean_error"))
    assert f"clean acc {acc:.1f} [" in html


def test_filters_and_errors(report_store, tmp_path):
    store, _ = report_store
    with open_store(store) as st:
        only = collect_results(st, benchmarks=["adversarial-auc"])
        assert [r.benchmark for r in only] == ["adversarial-auc"]
        with pytest.raises(InputError, match="unknown report format"):
            write_report(st, tmp_path / "r.html", fmt="pdf")
    with open_store(tmp_path / "empty") as empty:
        with pytest.raises(InputError, match="no complete runs"):
            write_report(empty, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_cli_report(report_store, tmp_path):
    from typer.testing import CliRunner

    from robustlab.cli import app

    store, _ = report_store
    res = CliRunner().invoke(app, ["report", "--store", str(store), "-o", str(tmp_path / "x.md")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x.md").read_text().count("| ") > 10


def test_a_fit_band_needs_five_points():
    """Fewer than 5 models: the points only, and the caption says why; 5: the line and its band."""
    from robustlab.report.section_base import MIN_FIT_POINTS, accuracy_scatter

    assert MIN_FIT_POINTS == 5
    points = {f"m{i}": (0.5 + 0.08 * i, 0.3 + 0.07 * i + 0.01 * (i % 2), None, None) for i in range(5)}
    four = accuracy_scatter("s", "t", dict(list(points.items())[:4]), "x", "y")
    assert "No fitted line or confidence band: 4 models" in four.caption and "confidence band" not in four.svg
    five = accuracy_scatter("s", "t", points, "x", "y")
    assert "least-squares fit across models with its 95% band" in five.caption and "95% confidence band" in five.svg
