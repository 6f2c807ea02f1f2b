"""The perturbation registry: ImageNet-P's 14 declared from the plain table robustlab.suites (the table
the metrics read), and a plugin's declared baseline values joining the benchmark's baseline."""

from __future__ import annotations

import pytest

from robustlab.errors import InputError
from robustlab.metrics.stability import ALL_PERTURBATIONS, NOISE_PERTURBATIONS, TEST_PERTURBATIONS, get_stability_baseline
from robustlab.perturbations import list_perturbations
from robustlab.perturbations.registry import PERTURBATIONS, declare, frame_count, published_values, stability_baseline


def test_the_registry_and_the_metrics_list_the_same_perturbations_and_values():
    assert list_perturbations("all") == list(ALL_PERTURBATIONS)
    assert list_perturbations("test") == list(TEST_PERTURBATIONS)
    assert list_perturbations("noise") == list(NOISE_PERTURBATIONS)
    flips, distances = published_values("alexnet")
    base = get_stability_baseline("alexnet")
    assert flips == dict(base.flip_probability) and distances == dict(base.top5_distance)
    assert (frame_count("translate"), frame_count("translate", "cifar"), frame_count("motion_blur", "cifar"),
            frame_count("rotate")) == (41, 16, 21, 31)


def test_a_plugins_declared_baseline_values_join_the_benchmarks_baseline():
    declare("test_plugin_wobble", noise=False, generate=".sequences:rotate", baselines={"alexnet": (0.12, 2.5)})
    try:
        assert "test_plugin_wobble" not in get_stability_baseline("alexnet").flip_probability
        base = stability_baseline("alexnet")
        assert base.flip_probability["test_plugin_wobble"] == 0.12 and base.top5_distance["test_plugin_wobble"] == 2.5
        assert base.flip_probability["rotate"] == 0.1310
    finally:
        PERTURBATIONS.remove("test_plugin_wobble")
    assert stability_baseline("alexnet") is get_stability_baseline("alexnet")
    with pytest.raises(InputError, match="stability baseline"):
        stability_baseline("resnet")
