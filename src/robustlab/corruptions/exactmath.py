"""Floating-point results that do not depend on the machine, the CPU or the installed stack.

The corruption kernels promise the reference's pixels bit for bit, and the reference truncates
float sums to uint8, so one unit in the last place of a filter weight can move an output value
by one grey level. Two sources of such units are the transcendental functions and summation:

- ``numpy.exp`` is not correctly rounded everywhere: on CPUs with AVX-512F, NumPy (1.2x and
  2.x) evaluates float64 ``exp`` with its own vectorised approximation, which is off by one unit
  in the last place for some arguments (for motion blur's Gaussian taps: 1-3 of the 13-41
  weights of a severity), while on other CPUs the same call goes to the C library, which is
  correctly rounded for them. The reference itself therefore gives different pixels on
  different machines. :func:`exp` here is correctly rounded (computed in decimal arithmetic with
  50 significant digits, then rounded once to float64), the same value on every machine; the
  golden files were made with the reference's C-library path (see ``perf/refenv.py``).
- NumPy's float64 ``sum`` adds in a fixed pairwise order (eight interleaved partial sums for
  short arrays), which :func:`pairwise_sum` reproduces in Python, so the normalisation of a
  kernel never depends on how another NumPy build vectorises a reduction.

Both run once per kernel (tens of values), never per pixel.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence

import numpy as np

__all__ = ["exp", "pairwise_sum"]

#: Significant digits of the decimal evaluation: far beyond float64's 17, so rounding the
#: decimal result to float64 gives the correctly rounded value (a double rounding can only
#: differ within 1e-33 of a halfway point between two doubles).
_DIGITS = 50
#: NumPy's pairwise summation: blocks of at most this many values are summed with 8 partial sums.
_BLOCK = 128


def _exp1(x: float) -> float:
    if x == 0.0:
        return 1.0
    with decimal.localcontext() as ctx:
        ctx.prec = _DIGITS
        return float(decimal.Decimal(x).exp())


def exp(values) -> np.ndarray:
    """Correctly rounded ``e ** values`` for float64 values (any shape), the same on every machine.

    Parameters
    ----------
    values : array_like of float
        Exponents; converted to float64 (exactly, as NumPy does).

    Returns
    -------
    np.ndarray
        float64, ``values``' shape: each element the float64 nearest to the exact exponential.
        Slow (about 5 us a value): for filter kernels, not images.
    """
    x = np.asarray(values, dtype=np.float64)
    out = np.fromiter((_exp1(float(v)) for v in x.ravel()), dtype=np.float64, count=x.size)
    return out.reshape(x.shape)


def _pairwise(a: Sequence[float], start: int, n: int) -> float:
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += a[i]
        return total
    if n <= _BLOCK:
        r = [a[start + j] for j in range(8)]
        stop = start + n - n % 8
        for i in range(start + 8, stop, 8):
            for j in range(8):
                r[j] += a[i + j]
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(stop, start + n):
            total += a[i]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise(a, start, half) + _pairwise(a, start + half, n - half)


def pairwise_sum(values) -> float:
    """The float64 sum of a 1-D array in NumPy's pairwise order, independent of the NumPy build.

    Parameters
    ----------
    values : array_like of float, 1-D

    Returns
    -------
    float
        Equal, bit for bit, to ``np.sum(np.asarray(values, np.float64))`` of NumPy's reference
        (unvectorised) pairwise summation.
    """
    a = [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]
    return _pairwise(a, 0, len(a))
