"""A metric tester in the manner of torchmetrics' ``MetricTester``: each public metric of
:mod:`robustlab.metrics` is called on random inputs drawn by hypothesis and compared with an
independent reference computation (:mod:`.references`, written from the definitions without
robustlab).

A :class:`MetricCase` says how to draw the inputs of one metric (a hypothesis strategy of
:class:`Call`), how to compute the expected value (``reference``, taking the same arguments), and
how to read the metric's result as the reference's plain structure (``view``: a dataclass into a
tuple, terms into their values). A reference that raises :class:`~.references.Undefined` expects the
metric to refuse the inputs with :class:`robustlab.errors.InputError`. Numbers are compared with a
relative and an absolute tolerance, NaN equal to NaN; everything else exactly.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

import robustlab.metrics as M
from robustlab.errors import InputError

from .references import Undefined


@dataclass
class Call:
    """The arguments of one call."""

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Call(args={self.args!r:.600}, kwargs={self.kwargs!r:.300})"


@dataclass
class MetricCase:
    """One metric under test.

    ``inputs`` draws a :class:`Call`; ``reference(*args, **kwargs)`` is the expected value;
    ``view(result)`` turns the metric's result into the reference's structure; ``call`` replaces
    ``robustlab.metrics.<name>`` when the metric needs its input built first (a fitted trend, a
    pm-k result); ``examples`` is hypothesis' number of draws.
    """

    inputs: st.SearchStrategy
    reference: Callable[..., Any]
    view: Callable[[Any], Any] = lambda result: result
    call: Callable[..., Any] | None = None
    rtol: float = 1e-9
    atol: float = 1e-12
    examples: int = 25


def assert_close(actual: Any, expected: Any, *, rtol: float, atol: float, path: str = "result") -> None:
    """``actual`` equals ``expected``: mappings key by key, sequences and arrays item by item (same
    length), numbers within the tolerances (NaN equals NaN), anything else exactly."""
    if isinstance(expected, Mapping):
        assert isinstance(actual, Mapping), f"{path}: {actual!r:.200} is not a mapping"
        assert set(map(str, actual)) == set(map(str, expected)), \
            f"{path}: keys {sorted(map(str, actual))} != {sorted(map(str, expected))}"
        by_text = {str(k): v for k, v in actual.items()}
        for key, value in expected.items():
            assert_close(by_text[str(key)], value, rtol=rtol, atol=atol, path=f"{path}[{key!r}]")
        return
    if isinstance(expected, (list, tuple, np.ndarray)):
        actual_items = list(np.asarray(actual).tolist()) if isinstance(actual, np.ndarray) else actual
        expected_items = expected.tolist() if isinstance(expected, np.ndarray) else list(expected)
        assert isinstance(actual_items, (list, tuple)), f"{path}: {actual!r:.200} is not a sequence"
        assert len(actual_items) == len(expected_items), \
            f"{path}: length {len(actual_items)} != {len(expected_items)} ({actual_items!r:.200} vs {expected_items!r:.200})"
        for i, (a, e) in enumerate(zip(actual_items, expected_items)):
            assert_close(a, e, rtol=rtol, atol=atol, path=f"{path}[{i}]")
        return
    if isinstance(expected, (bool, np.bool_)) or expected is None or isinstance(expected, str):
        assert actual == expected and type(actual is None) is type(expected is None), \
            f"{path}: {actual!r} != {expected!r}"
        return
    if isinstance(expected, (int, float, np.integer, np.floating)):
        assert isinstance(actual, (int, float, np.integer, np.floating)) and not isinstance(actual, bool), \
            f"{path}: {actual!r:.200} is not a number (expected {expected!r})"
        if math.isnan(expected):
            assert math.isnan(actual), f"{path}: {actual!r} is not NaN"
            return
        assert math.isclose(float(actual), float(expected), rel_tol=rtol, abs_tol=atol), \
            f"{path}: {actual!r} != {expected!r} (rtol {rtol}, atol {atol})"
        return
    assert actual == expected, f"{path}: {actual!r:.200} != {expected!r:.200}"


class MetricTester:
    """Runs :class:`MetricCase` s: ``tester.check(name, call)`` computes the reference, calls the
    metric (warnings silenced: the undefined-terms warnings are the subject of other tests) and
    compares."""

    def __init__(self, cases: Mapping[str, MetricCase]) -> None:
        self.cases = dict(cases)

    def metric(self, name: str) -> Callable[..., Any]:
        case = self.cases[name]
        return case.call if case.call is not None else getattr(M, name)

    def check(self, name: str, call: Call) -> None:
        case = self.cases[name]
        try:
            expected = case.reference(*call.args, **call.kwargs)
        except Undefined:
            expected = Undefined
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if expected is Undefined:
                try:
                    result = self.metric(name)(*call.args, **call.kwargs)
                except InputError:
                    return
                raise AssertionError(f"{name}{call!r} returned {result!r:.300}; the reference finds it undefined")
            result = self.metric(name)(*call.args, **call.kwargs)
        assert_close(case.view(result), expected, rtol=case.rtol, atol=case.atol, path=name)
