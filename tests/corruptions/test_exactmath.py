"""robustlab.corruptions.exactmath: a correctly rounded exp and NumPy's pairwise summation order.

The kernels' weights are built from these, so their values cannot depend on which exp the installed
NumPy dispatches to on this CPU (on AVX-512 CPUs NumPy's float64 exp is 1 ulp off for some of
motion blur's Gaussian taps, which moved 0.03-0.05 % of small-image motion_blur values by one level).
"""

from __future__ import annotations

import decimal
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.corruptions import exactmath


def _is_nearest(x: float, got: float) -> bool:
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        truth = decimal.Decimal(x).exp()
        gap = abs(decimal.Decimal(got) - truth)
        return all(gap <= abs(decimal.Decimal(n) - truth)
                   for n in (math.nextafter(got, math.inf), math.nextafter(got, -math.inf)))


@settings(max_examples=300, deadline=None)
@given(st.floats(-700, 700, allow_nan=False))
def test_exp_is_correctly_rounded(x):
    got = float(exactmath.exp(x))
    assert _is_nearest(x, got)


def test_exp_of_the_motion_blur_taps_is_correctly_rounded_where_numpy_may_not_be():
    # radius 15, sigma 8 (severity 3): on AVX-512 NumPy, 3 of these 31 values are 1 ulp off
    args = -np.arange(31) ** 2 / (2 * 8.0 ** 2)
    got = exactmath.exp(args)
    assert got.shape == (31,) and got.dtype == np.float64
    assert all(_is_nearest(float(a), float(g)) for a, g in zip(args, got))
    np.testing.assert_array_max_ulp(got, np.exp(args), maxulp=1)
    assert exactmath.exp(np.zeros((2, 3))).shape == (2, 3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=400))
def test_pairwise_sum_is_numpys_order(values):
    # If a NumPy release changes its summation order, this fails: the kernels' normalisation would
    # then no longer be NumPy's (the drift check runs it against the newest NumPy).
    assert exactmath.pairwise_sum(values) == float(np.sum(np.asarray(values, dtype=np.float64)))
