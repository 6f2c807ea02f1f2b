"""Which route each of NumPy's legacy samplers takes in this process: the compiled copy
(:mod:`._legacy_random`) or NumPy's own.

:func:`draw_normal`, :func:`draw_poisson_levels`, :func:`draw_uniform` and
:func:`draw_randint` (what the kernels call) use the compiled copy unless NumPy's own sampler
measured clearly faster in this process (:func:`sampler_route`: both are timed once, on a
scratch generator, at first use; about 10 ms). Both give the same numbers and leave ``rs`` in
the same state, so the choice never changes a result, only the time. It exists because the
speed of the two differs by CPU: NumPy's normal was measured at twice the speed of the
(then value-by-value) compiled copy on one AMD EPYC machine, while on the machine of
docs/corruptions-speed.md the compiled copies are the faster.
``ROBUSTLAB_LEGACY_SAMPLER=compiled`` or ``=numpy`` fixes the route (benchmarks, tests).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from ._legacy_random import normal, poisson_levels, randint, uniform

__all__ = ["KINDS", "ROUTES", "SAMPLER_ENV", "draw_normal", "draw_poisson_levels", "draw_randint", "draw_uniform",
           "sampler_route"]

#: The samplers with two routes: :func:`draw_normal`, :func:`draw_poisson_levels`,
#: :func:`draw_uniform`, :func:`draw_randint`.
KINDS = ("normal", "poisson", "uniform", "randint")
#: Environment variable fixing the route of :func:`draw_normal` / :func:`draw_poisson_levels`.
SAMPLER_ENV = "ROBUSTLAB_LEGACY_SAMPLER"
#: Its values: ``auto`` (default: the faster, measured once per process), ``compiled``, ``numpy``.
ROUTES = ("auto", "compiled", "numpy")
#: Values drawn per timing call of the calibration, and timing calls per route (minimum kept).
_CALIBRATION_SIZE = 1 << 15
_CALIBRATION_ROUNDS = 5
#: NumPy is chosen only when it measures at least this much faster (timing noise on a busy
#: machine must not flip the route back and forth; the gap reported on the slow machine was 2x).
_NUMPY_MARGIN = 0.9
_measured: dict[str, str] = {}


def _calibration_calls(kind: str):
    """(compiled call, NumPy call) drawing the same numbers of ``kind`` from scratch generators."""
    compiled_rs, numpy_rs = np.random.RandomState(20240501), np.random.RandomState(20240501)
    if kind == "normal":
        return (lambda: normal(compiled_rs, (_CALIBRATION_SIZE,), 0.0, 0.1),
                lambda: numpy_rs.normal(0.0, 0.1, size=_CALIBRATION_SIZE))
    if kind == "uniform":
        return (lambda: uniform(compiled_rs, (_CALIBRATION_SIZE,), -0.5, 0.5),
                lambda: numpy_rs.uniform(-0.5, 0.5, size=_CALIBRATION_SIZE))
    if kind == "randint":  # glass blur's offsets at severity 4: [-3, 3), a quarter of the tries rejected
        return (lambda: randint(compiled_rs, -3, 3, (_CALIBRATION_SIZE,)),
                lambda: numpy_rs.randint(-3, 3, size=_CALIBRATION_SIZE))
    # shot_noise's rates: grey levels 0..255 at 12 photons per unit (both of NumPy's methods).
    levels = np.random.RandomState(7).randint(0, 256, _CALIBRATION_SIZE).astype(np.uint8)
    lam = (np.arange(256, dtype=np.uint8) / 255.0) * 12
    return (lambda: poisson_levels(compiled_rs, levels, lam), lambda: numpy_rs.poisson(lam[levels]))


def _measure(kind: str) -> str:
    """Time both routes of ``kind`` (thread CPU time, minimum of a few alternating calls);
    the compiled copy unless NumPy is clearly faster."""
    compiled_call, numpy_call = _calibration_calls(kind)
    compiled_call()  # compiles (or loads the cache) and warms up
    numpy_call()
    best = {"compiled": math.inf, "numpy": math.inf}
    for _ in range(_CALIBRATION_ROUNDS):
        for route, call in (("compiled", compiled_call), ("numpy", numpy_call)):
            t0 = time.thread_time()
            call()
            best[route] = min(best[route], time.thread_time() - t0)
    return "numpy" if best["numpy"] < _NUMPY_MARGIN * best["compiled"] else "compiled"


def sampler_route(kind: str) -> str:
    """``"compiled"`` or ``"numpy"``: the route :func:`draw_normal` (``kind="normal"``),
    :func:`draw_poisson_levels` (``"poisson"``), :func:`draw_uniform` (``"uniform"``) or
    :func:`draw_randint` (``"randint"``) takes in this process.

    Set by :data:`SAMPLER_ENV`, else measured at the first call and kept.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")
    mode = os.environ.get(SAMPLER_ENV, "auto").strip().lower() or "auto"
    if mode not in ROUTES:
        raise ValueError(f"{SAMPLER_ENV} must be one of {', '.join(ROUTES)}; got {mode!r}")
    if mode != "auto":
        return mode
    if kind not in _measured:
        _measured[kind] = _measure(kind)
    return _measured[kind]


def draw_normal(rs: np.random.RandomState, shape: tuple[int, ...], loc: float = 0.0,
                scale: float = 1.0) -> np.ndarray:
    """``rs.normal(loc, scale, size=shape)`` by the faster route (:func:`sampler_route`).

    Returns
    -------
    np.ndarray
        float64 of ``shape``; the same values and the same final state of ``rs`` either way.
    """
    if sampler_route("normal") == "compiled":
        return normal(rs, shape, loc, scale)
    return rs.normal(loc, scale, size=shape)


def draw_poisson_levels(rs: np.random.RandomState, levels: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``rs.poisson(lam[levels])`` by the faster route (:func:`sampler_route`).

    Returns
    -------
    np.ndarray
        int64 counts of ``levels``' shape; the same counts and final state of ``rs`` either way.
    """
    if sampler_route("poisson") == "compiled":
        return poisson_levels(rs, levels, lam)
    return rs.poisson(np.asarray(lam, dtype=np.float64)[np.asarray(levels)])


#: Draws smaller than this go to NumPy directly (reading and writing the generator's state
#: costs more than the draw saves).
_SMALL_DRAW = 4096


def draw_uniform(rs: np.random.RandomState, shape: tuple[int, ...], low: float | None = None,
                 high: float | None = None) -> np.ndarray:
    """``rs.random_sample(shape)``, or ``rs.uniform(low, high, size=shape)`` when ``low`` and
    ``high`` are given, by the faster route (:func:`sampler_route`).

    Returns
    -------
    np.ndarray
        float64 of ``shape``; the same values and final state of ``rs`` either way.
    """
    if int(np.prod(shape)) >= _SMALL_DRAW and sampler_route("uniform") == "compiled":
        return uniform(rs, shape, low, high)
    if low is None and high is None:
        return rs.random_sample(shape)
    return rs.uniform(0.0 if low is None else low, 1.0 if high is None else high, size=shape)


def draw_randint(rs: np.random.RandomState, low: int, high: int, shape: tuple[int, ...]) -> np.ndarray:
    """``rs.randint(low, high, size=shape)`` by the faster route (:func:`sampler_route`).

    Returns
    -------
    np.ndarray
        int64 in [low, high) of ``shape``; the same values and final state of ``rs`` either way.
    """
    if sampler_route("randint") == "compiled":
        return randint(rs, low, high, shape)
    return rs.randint(low, high, size=shape)
