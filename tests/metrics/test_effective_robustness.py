"""Effective robustness: the trend on logit/probit axes, distances above it with intervals, reference points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from robustlab.errors import DataError, InputError
from robustlab.metrics.effective_robustness import (PiecewiseFit, effective_robustness, fit_trend, parse_fit_on,
                                                    read_reference_points, select_fit_points, standard_models,
                                                    standard_models_source, trend_or_reason)
from robustlab.metrics.stats import LinearFit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "metrics"


def logit(p):
    return np.log(p / (1 - p))


def inv_logit(v):
    return 1 / (1 + np.exp(-v))


def test_fewer_than_three_runs_give_no_fit_and_the_reason():
    with pytest.raises(InputError, match="at least 3 runs"):
        fit_trend([0.7, 0.8], [0.5, 0.6])
    fit, reason = trend_or_reason([0.7], [0.5])
    assert fit is None and "got 1" in reason
    fit, reason = trend_or_reason([0.7, 0.7, 0.7], [0.5, 0.6, 0.55])
    assert fit is None and "equal" in reason
    fit, reason = trend_or_reason([0.7, 1.0, 0.8], [0.5, 0.6, 0.55])
    assert fit is None and "strictly inside" in reason


def test_the_trend_is_the_testbeds_least_squares_line_on_logit_axes():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.55, 0.85, 20)
    y = inv_logit(0.9 * logit(x) - 0.6 + rng.normal(0, 0.05, 20))
    fit = fit_trend(x, y)
    want = scipy.stats.linregress(logit(x), logit(y))  # plotting/plotter.py of imagenet-testbed
    assert fit.transform == "logit"
    assert fit.slope == pytest.approx(want.slope) and fit.intercept == pytest.approx(want.intercept)
    probit = fit_trend(x, y, transform="probit")
    want = scipy.stats.linregress(scipy.stats.norm.ppf(x), scipy.stats.norm.ppf(y))
    assert probit.slope == pytest.approx(want.slope)


def test_distance_above_the_trend_with_an_interval():
    x = np.array([0.6, 0.65, 0.7, 0.75, 0.8, 0.85])
    y = inv_logit(1.1 * logit(x) - 0.8)  # exactly on a line
    fit = fit_trend(x, y)
    on = effective_robustness(fit, 0.72, float(inv_logit(1.1 * logit(0.72) - 0.8)), n_shifted=10000)
    assert on.value == pytest.approx(0, abs=1e-12)
    above = effective_robustness(fit, 0.72, on.shifted + 0.03, n_shifted=10000)
    assert above.value == pytest.approx(0.03) and above.predicted == pytest.approx(on.predicted)
    assert above.low < above.value < above.high and above.low > 0  # 3 points above on 10,000 images: clear
    small = effective_robustness(fit, 0.72, on.shifted + 0.03, n_shifted=100)
    assert small.low < 0 < small.high  # the same distance on 100 images is not
    bare = effective_robustness(fit, 0.72, 0.5)
    assert bare.low is None and bare.high is None
    with pytest.raises(InputError, match="fraction"):
        effective_robustness(fit, 72.0, 0.5)


def test_the_interval_widens_with_the_uncertainty_of_the_trend():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.6, 0.8, 8)
    tight = fit_trend(x, inv_logit(logit(x) - 0.5 + rng.normal(0, 0.005, 8)))
    loose = fit_trend(x, inv_logit(logit(x) - 0.5 + rng.normal(0, 0.2, 8)))
    a = effective_robustness(tight, 0.7, 0.6, n_shifted=10000)
    b = effective_robustness(loose, 0.7, 0.6, n_shifted=10000)
    assert (b.high - b.low) > (a.high - a.low)


def test_reference_points_simple_and_testbed_layouts(tmp_path):
    simple = tmp_path / "points.csv"
    simple.write_text("model,original,shifted,source\nresnet50,76.1,63.2,Recht et al. 2019\nvgg16,71.6,58.9,\n")
    pts = read_reference_points(simple)
    assert [p.model for p in pts] == ["resnet50", "vgg16"]
    assert pts[0].original == pytest.approx(0.761) and pts[0].source == "Recht et al. 2019"
    wide = tmp_path / "robustness_top1s.csv"
    wide.write_text("model,val,imagenet-a,val-on-imagenet-a-classes\nm1,80.0,10.0,85.0\nm2,70.0,,78.0\n")
    pts = read_reference_points(wide, original="val-on-imagenet-a-classes", shifted="imagenet-a")
    assert [(p.model, p.original, p.shifted) for p in pts] == [("m1", 0.85, 0.10)]  # empty cells are skipped
    fractions = tmp_path / "fractions.csv"
    fractions.write_text("model,original_accuracy,shifted_accuracy\na,0.8,0.7\n")
    assert read_reference_points(fractions)[0].shifted == pytest.approx(0.7)


def test_reference_point_errors_name_the_problem(tmp_path):
    with pytest.raises(DataError, match="reference points file .*missing.csv does not exist"):
        read_reference_points(tmp_path / "missing.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("model,val,imagenet-a\nm,80,10\n")
    with pytest.raises(DataError, match="lacks the column.*original.*it has model, val, imagenet-a"):
        read_reference_points(bad)
    bad.write_text("model,original,shifted\nm,eighty,10\n")
    with pytest.raises(DataError, match="line 2"):
        read_reference_points(bad)
    bad.write_text("model,original,shifted\nok,70,60\nbig,80,120\n")  # out of [0, 100] %: the row is named
    with pytest.raises(DataError, match="line 3 .model 'big'.: an accuracy above 100"):
        read_reference_points(bad)
    bad.write_text("model,original,shifted\nneg,0.7,-0.1\n")
    with pytest.raises(DataError, match="line 2 .model 'neg'."):
        read_reference_points(bad)


# --- the imagenet-testbed's own numbers on its own table ---------------------------------------------

TESTBED = json.loads((FIXTURES / "imagenet_testbed_effective_robustness.json").read_text())


@pytest.mark.parametrize("shift", sorted(TESTBED["shifts"]))
def test_standard_fit_equals_the_testbeds_computation_on_its_table(shift):
    expected = TESTBED["shifts"][shift]
    x_col, y_col = expected["columns"]
    points = read_reference_points(FIXTURES / "imagenet_testbed_top1s_natural.csv", original=x_col, shifted=y_col)
    assert len(points) == expected["rows"]
    fitted = select_fit_points(points)  # default: the testbed's standard models
    assert len(fitted) == expected["fitted"]
    trend = fit_trend([p.original for p in fitted], [p.shifted for p in fitted], names=[p.model for p in fitted])
    lines = trend.pieces if isinstance(trend, PiecewiseFit) else (trend,)
    assert [line.n for line in lines] == [f["n"] for f in expected["fits"]]
    for line, want in zip(lines, expected["fits"]):
        assert line.slope == pytest.approx(want["slope"], rel=1e-12)
        assert line.intercept == pytest.approx(want["intercept"], rel=1e-12)
    if expected["pivot"] is None:
        assert isinstance(trend, LinearFit)
    else:  # ImageNet-A: resnet50 scores 0 %; split there as the testbed does
        assert trend.pivot == pytest.approx(expected["pivot"] / 100) and trend.pivot_model == "resnet50"
    for p in points:
        er = effective_robustness(trend, p.original, p.shifted)
        assert 100 * er.value == pytest.approx(expected["effective_robustness"][p.model], abs=1e-9), p.model


def test_fitting_on_every_row_is_what_the_issue_measured_and_differs():
    points = read_reference_points(FIXTURES / "imagenet_testbed_top1s_natural.csv",
                                   original="val-on-imagenet-r-classes", shifted="imagenet-r")
    everything = fit_trend([p.original for p in points], [p.shifted for p in points])
    r50 = next(p for p in points if p.model == "resnet50")
    assert 100 * effective_robustness(everything, r50.original, r50.shifted).value == pytest.approx(-3.85, abs=0.01)
    standard = select_fit_points(points)
    trend = fit_trend([p.original for p in standard], [p.shifted for p in standard])
    assert 100 * effective_robustness(trend, r50.original, r50.shifted).value == pytest.approx(-0.60, abs=0.01)
    assert select_fit_points(points, "all") == points
    listed = select_fit_points(points, ["resnet50", "alexnet", "nope"])
    assert [p.model for p in listed] == [p.model for p in points if p.model in ("resnet50", "alexnet")]


def test_standard_models_ship_with_their_source():
    models = standard_models()
    assert len(models) == 85 and "resnet50" in models and "alexnet" in models
    assert not {"resnet50_with_fog_aws", "vit_b_32_clip_zeroshot", "resnet50_swsl"} & models
    assert "0170eec658d664289d9f61de8f90f967f49abca0" in standard_models_source()


def test_fit_on_values(tmp_path):
    assert parse_fit_on(None).mode == "standard" and parse_fit_on("ALL").mode == "all"
    names = tmp_path / "fit.txt"
    names.write_text("# my baseline\nresnet50\n\nalexnet  # the oldest\n")
    chosen = parse_fit_on(str(names))
    assert chosen.mode == "models" and chosen.models == {"resnet50", "alexnet"}
    with pytest.raises(InputError, match="neither standard, all nor a file"):
        parse_fit_on("standart")
    names.write_text("# nothing\n")
    with pytest.raises(InputError, match="lists no model"):
        parse_fit_on(names)


def test_a_table_can_mark_its_standard_rows(tmp_path):
    table = tmp_path / "points.csv"
    table.write_text("model,original,shifted,standard\na,0.7,0.6,true\nb,0.8,0.7,false\nresnet50,0.76,0.63,\n")
    points = read_reference_points(table)
    assert [p.standard for p in points] == [True, False, False]
    assert [p.model for p in select_fit_points(points)] == ["a"]
    table.write_text("model,original,shifted,standard\na,0.7,0.6,maybe\n")
    with pytest.raises(DataError, match="line 2 .model 'a'.: standard='maybe'"):
        read_reference_points(table)


def test_zero_accuracy_splits_the_trend_and_names_the_model():
    x = [0.60, 0.65, 0.70, 0.76, 0.80, 0.85, 0.90]
    y = [0.02, 0.025, 0.03, 0.0, 0.05, 0.10, 0.20]
    trend = fit_trend(x, y, names=list("abcdefg"))
    assert isinstance(trend, PiecewiseFit) and trend.pivot == 0.76 and trend.pivot_model == "d"
    assert trend.lower.n == 3 and trend.upper.n == 3 and trend.n == 6
    assert trend.predict(0.65) == pytest.approx(trend.lower.predict(0.65))
    assert trend.predict(0.85) == pytest.approx(trend.upper.predict(0.85))
    lo, hi = trend.band([0.65, 0.85])
    assert lo[1] == pytest.approx(trend.upper.band(0.85)[0])
    er = effective_robustness(trend, 0.76, 0.0, n_shifted=7500)  # the pivot model: on the lower line
    assert er.predicted == pytest.approx(trend.lower.predict(0.76)) and er.low < er.value < er.high
    fit, reason = trend_or_reason(x[:5], y[:5], names=list("abcde"))
    assert fit is None and "above 'd'" in reason and "got 1" in reason
    fit, reason = trend_or_reason([0.6, 0.7, 0.8, 0.9], [0.1, 0.2, 1.0, 0.4], names=list("wxyz"))
    assert fit is None and "'y' has accuracies 80 % / 100 %" in reason


@pytest.mark.parametrize("first", ["submodule", "function", "report"])
def test_the_package_exports_the_function_whatever_was_imported_first(first):
    code = {"submodule": "import robustlab.metrics.effective_robustness",
            "function": "from robustlab.metrics import fit_trend",
            "report": "import robustlab.report.effective"}[first]
    script = (f"{code}\nfrom robustlab.metrics import effective_robustness, fit_trend\n"
              "import robustlab.metrics as m\n"
              "assert callable(effective_robustness) and m.effective_robustness is effective_robustness\n"
              "from robustlab.metrics.effective_robustness import read_reference_points\n"
              "trend = fit_trend([0.6, 0.7, 0.8], [0.5, 0.6, 0.7])\n"
              "print(round(effective_robustness(trend, 0.7, 0.65).value, 2))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.05"
