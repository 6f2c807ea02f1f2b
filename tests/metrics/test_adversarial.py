"""R and C of Kunhardt, Deza & Poggio."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.errors import InputError
from robustlab.metrics import (
    PAPER_EPSILONS,
    normalised_curve,
    relative_change,
    robustness_auc,
    trapezoid,
)


def test_constant_curve_is_1():
    assert robustness_auc(PAPER_EPSILONS, [0.9] * 9) == pytest.approx(1.0)


def test_linear_fall_to_zero_is_one_half():
    eps = np.array(PAPER_EPSILONS)
    acc = 0.8 * (1 - eps / eps[-1])  # linear on the uneven grid
    assert robustness_auc(eps, acc) == pytest.approx(0.5)
    # a linear fall over a sub-interval
    acc2 = np.where(eps <= 0.1, 0.6 * (1 - eps / 0.1), 0.0)
    assert robustness_auc(eps, acc2, eps1=0.1) == pytest.approx(0.5)
    assert robustness_auc(eps, acc2, eps0=0.0, eps1=0.3) == pytest.approx(0.5 * 0.1 / 0.3)


def test_sub_interval_and_normalised_curve():
    eps = [0.0, 0.1, 0.2, 0.4]
    acc = [1.0, 0.5, 0.5, 0.25]
    # from 0.1 to 0.4: area 0.1*0.5 + 0.2*0.375 = 0.125; / (0.5 * 0.3)
    assert robustness_auc(eps, acc, eps0=0.1) == pytest.approx(0.125 / 0.15)
    assert normalised_curve(eps, acc, eps0=0.1).tolist() == [2.0, 1.0, 1.0, 0.5]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.001, 1.0), min_size=2, max_size=12), st.integers(0, 2**31 - 1))
def test_trapezoid_matches_numpy_on_uneven_grids(steps, seed):
    x = np.cumsum(steps)
    y = np.random.default_rng(seed).uniform(0.01, 1, x.size)
    assert trapezoid(x, y) == pytest.approx(np.trapezoid(y, x), rel=1e-12)
    assert robustness_auc(x, y) == pytest.approx(
        np.trapezoid(y, x) / (y[0] * (x[-1] - x[0])), rel=1e-12
    )


def test_relative_change():
    assert relative_change(0.3, 0.6) == pytest.approx(-0.5)
    assert relative_change(np.array([0.6, 0.0]), 0.6).tolist() == [0.0, -1.0]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: robustness_auc([0, 0.1, 0.2], [0.0, 0.0, 0.0]), "undefined"),
        (lambda: robustness_auc([0, 0.2, 0.1], [1, 1, 1]), "sorted"),
        (lambda: robustness_auc([0, 0.1, 0.1], [1, 1, 1]), "duplicated"),
        (lambda: robustness_auc([0, 0.1], [1, 1, 1]), "same length"),
        (lambda: robustness_auc([0], [1]), "at least two"),
        (lambda: robustness_auc([], []), "empty"),
        (lambda: robustness_auc([0, np.nan], [1, 1]), "NaN"),
        (lambda: robustness_auc([0, 0.1], [1, np.nan]), "NaN"),
        (lambda: robustness_auc([0, 0.1], [1, 0.5], eps0=0.05), "not one of the measured"),
        (lambda: robustness_auc([0, 0.1], [1, 0.5], eps0=0.1), "larger than eps0"),
        (lambda: robustness_auc([[0, 0.1]], [[1, 0.5]]), "1-dimensional"),
        (lambda: robustness_auc([0, 0.1], [1, -0.5]), r"fractions in \[0, 1\]"),
        (lambda: relative_change(0.5, 0.0), "undefined"),
        (lambda: relative_change([0.5, 0.4], [0.2, 0.3, 0.4]), "broadcast"),
        (lambda: normalised_curve([0, 0.1], [0.0, 0.5]), "cannot be normalised"),
    ],
)
def test_malformed_input_is_rejected(call, message):
    with pytest.raises(InputError, match=message):
        call()
