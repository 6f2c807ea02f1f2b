"""Every public metric of robustlab.metrics against an independent reference computation, on random
inputs drawn by hypothesis (the metric tester: ``metric_tester.py``; the references: ``references.py``,
written from the definitions without robustlab)."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robustlab.metrics as M

from .metric_cases import CASES as CLASSIFICATION
from .metric_cases_video import CASES as VIDEO_AND_DETECTION
from .metric_tester import MetricTester

CASES = {**CLASSIFICATION, **VIDEO_AND_DETECTION}
TESTER = MetricTester(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_metric_agrees_with_its_reference(name):
    case = CASES[name]

    @settings(max_examples=case.examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(call=case.inputs)
    def run(call):
        TESTER.check(name, call)

    run()
