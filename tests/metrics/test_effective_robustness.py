"""Effective robustness: the trend on logit/probit axes, distances above it with intervals, reference points."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from robustlab.errors import DataError, InputError
from robustlab.metrics.effective_robustness import (effective_robustness, fit_trend, read_reference_points,
                                                    trend_or_reason)


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
