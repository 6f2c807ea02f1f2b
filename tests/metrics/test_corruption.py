"""CE, mCE, relative mCE and RobustBench mean accuracy (Hendrycks & Dietterich 2019)."""

from __future__ import annotations

import numpy as np
import pytest

from robustlab.errors import InputError
from robustlab.metrics import (
    ALL_CORRUPTIONS,
    BENCHMARK_CORRUPTIONS,
    HOLDOUT_CORRUPTIONS,
    CorruptionBaseline,
    corruption_errors,
    corruption_subset,
    corruption_summary,
    get_corruption_baseline,
    list_corruption_baselines,
    mce,
    mean_corruption_accuracy,
    percent,
    relative_corruption_errors,
    relative_mce,
)

ALEXNET = get_corruption_baseline("alexnet")
#: ImageNet-C paper (Hendrycks & Dietterich 2019), ResNet-50 row: CE per benchmark corruption
#: (integers, percent), clean error 23.9, mCE 76.7, relative mCE 105.0.
RESNET50_CE = dict(
    zip(BENCHMARK_CORRUPTIONS, [80, 82, 83, 75, 89, 78, 80, 78, 75, 66, 57, 71, 85, 77, 77])
)


def test_subsets_and_registry():
    assert corruption_subset("benchmark") == BENCHMARK_CORRUPTIONS
    assert corruption_subset("common") == corruption_subset("benchmark")
    assert corruption_subset("holdout") == HOLDOUT_CORRUPTIONS == corruption_subset("validation")
    assert corruption_subset("all") == ALL_CORRUPTIONS == BENCHMARK_CORRUPTIONS + HOLDOUT_CORRUPTIONS
    assert corruption_subset(["fog"]) == ("fog",)
    assert list_corruption_baselines() == ["alexnet"]
    assert set(ALEXNET.errors) == set(ALL_CORRUPTIONS)
    with pytest.raises(InputError, match="unknown corruption subset"):
        corruption_subset("benchmarks")
    with pytest.raises(InputError, match="alexnet"):
        get_corruption_baseline("alexnt")


def test_subsets_agree_with_corruption_registry():
    from robustlab.corruptions import list_corruptions

    assert list(BENCHMARK_CORRUPTIONS) == list_corruptions("benchmark")
    assert list(HOLDOUT_CORRUPTIONS) == list_corruptions("holdout")


def test_alexnet_mce_and_relative_mce_are_exactly_100():
    errs = dict(ALEXNET.errors)
    assert mce(errs) == 1.0
    assert relative_mce(errs, ALEXNET.clean_error) == 1.0
    assert percent(mce(errs)) == 100.0
    assert all(v == 1.0 for v in corruption_errors(errs).values())
    # holdout and all subsets too
    assert mce(errs, subset="holdout") == 1.0 and mce(errs, subset="all") == 1.0
    # per-severity arrays whose mean is the AlexNet mean give the same
    sev = {c: v + np.array([-0.02, -0.01, 0.0, 0.01, 0.02]) for c, v in errs.items()}
    assert mce(sev) == pytest.approx(1.0, abs=1e-12)


def test_resnet50_row_is_consistent_with_the_paper():
    # Reconstruct errors from the integer CE row; rounding to integers bounds the result.
    def errors(shift):
        return {c: (ce + shift) / 100 * ALEXNET.errors[c] for c, ce in RESNET50_CE.items()}

    m = mce(errors(0))
    assert percent(m) == pytest.approx(76.87, abs=0.01)
    assert percent(mce(errors(-0.5))) <= 76.7 <= percent(mce(errors(0.5)))
    r = relative_mce(errors(0), 0.239)
    assert percent(r) == pytest.approx(105.4, abs=0.1)
    assert (
        percent(relative_mce(errors(-0.5), 0.2395))
        <= 105.0
        <= percent(relative_mce(errors(0.5), 0.2385))
    )


def test_ce_from_an_independent_resnet50_evaluation():
    # torchvision ResNet-50 (top-1 76.13) on ImageNet-C: mean top-1 accuracy per corruption and
    # the CE printed by that evaluation (both two decimals).
    published = {
        "brightness": (68.02, 56.64), "contrast": (39.06, 71.43), "defocus_blur": (38.75, 74.71),
        "elastic_transform": (45.25, 84.75), "fog": (45.83, 66.11), "frost": (38.14, 74.84),
        "gaussian_noise": (29.29, 79.77), "glass_blur": (26.79, 88.61), "impulse_noise": (23.81, 82.58),
    }  # fmt: skip
    ce = corruption_errors({c: 1 - acc / 100 for c, (acc, _) in published.items()})
    for c, (_, expected) in published.items():
        assert percent(ce[c]) == pytest.approx(expected, abs=0.015), c


def test_relative_ce_by_hand():
    errs = {c: 0.5 for c in BENCHMARK_CORRUPTIONS}
    rce = relative_corruption_errors(errs, 0.3)
    for c, v in rce.items():
        assert v == pytest.approx((0.5 - 0.3) / (ALEXNET.errors[c] - 0.435))
    # explicit per-severity baseline from another model, with its clean error
    other = {c: [0.6, 0.7, 0.8, 0.9, 1.0] for c in BENCHMARK_CORRUPTIONS}
    assert relative_mce(errs, 0.3, baseline=other, baseline_clean_error=0.4) == pytest.approx(
        0.2 / 0.4
    )
    assert mce(errs, baseline=other) == pytest.approx(0.5 / 0.8)


def test_custom_baseline_object():
    base = CorruptionBaseline("mine", {"fog": 0.5, "snow": 0.25}, clean_error=0.1)
    assert corruption_errors({"fog": 0.25, "snow": 0.25}, baseline=base) == {
        "fog": 0.5,
        "snow": 1.0,
    }
    assert mce({"fog": 0.25, "snow": 0.25}, baseline=base, subset=["fog", "snow"]) == 0.75
    assert relative_mce(
        {"fog": 0.3, "snow": 0.2}, 0.1, baseline=base, subset=["fog", "snow"]
    ) == pytest.approx(np.mean([0.2 / 0.4, 0.1 / 0.15]))


def test_mean_corruption_accuracy_is_the_mean_over_cells():
    rng = np.random.default_rng(0)
    cells = {c: rng.uniform(0.2, 0.9, 5) for c in ALL_CORRUPTIONS}
    expected = np.mean([cells[c] for c in BENCHMARK_CORRUPTIONS])
    assert mean_corruption_accuracy(cells) == pytest.approx(expected)
    assert mean_corruption_accuracy(cells, subset="holdout") == pytest.approx(
        np.mean([cells[c] for c in HOLDOUT_CORRUPTIONS])
    )


def test_summary_roundtrip():
    errs = {c: 0.5 for c in BENCHMARK_CORRUPTIONS}
    s = corruption_summary(errs, 0.25)
    d = s.to_dict()
    assert d["mce"] == pytest.approx(mce(errs)) and d["relative_mce"] == pytest.approx(
        relative_mce(errs, 0.25)
    )
    assert d["mean_error"] == 0.5 and len(d["corruption_errors"]) == 15
    import json

    json.dumps(d)
    assert corruption_summary(errs).relative_mce is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mce({}), "empty"),
        (lambda: mce({"fog": 0.5}), "no entry for 14 corruption"),
        (lambda: mce({c: float("nan") for c in BENCHMARK_CORRUPTIONS}), "NaN"),
        (lambda: mce({c: 50.0 for c in BENCHMARK_CORRUPTIONS}), "percentages"),
        (lambda: mce({c: [0.5, 0.5, 0.5] for c in BENCHMARK_CORRUPTIONS}), "5 numbers"),
        (lambda: mce({c: "x" for c in BENCHMARK_CORRUPTIONS}), "numbers"),
        (lambda: mce([0.5] * 15), "mapping"),
        (lambda: corruption_errors({"nosuch": 0.5}), "baseline 'alexnet' has no entry"),
        (lambda: mce({c: 0.5 for c in BENCHMARK_CORRUPTIONS}, baseline=3), "baseline must be"),
        (lambda: relative_mce({c: 0.5 for c in BENCHMARK_CORRUPTIONS}, float("nan")), "NaN"),
        (
            lambda: relative_mce(
                {c: 0.5 for c in BENCHMARK_CORRUPTIONS},
                0.2,
                baseline={c: 0.5 for c in BENCHMARK_CORRUPTIONS},
            ),
            "baseline_clean_error",
        ),
        (lambda: mean_corruption_accuracy({c: [0.5] * 5 for c in HOLDOUT_CORRUPTIONS}), "no entry"),
    ],
)
def test_malformed_input_is_rejected(call, message):
    with pytest.raises(InputError, match=message):
        call()
