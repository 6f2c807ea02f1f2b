"""Ratios to a baseline that cannot mislead: relative CE / relative mCE, CE, FR and the T5D ratio
are undefined where the baseline's denominator is within its sampling error (metrics.ratios)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from robustlab.errors import InputError
from robustlab.metrics import (
    BENCHMARK_CORRUPTIONS,
    CorruptionBaseline,
    StabilityBaseline,
    UndefinedTermsWarning,
    binomial_margin,
    corruption_summary,
    flip_rate_terms,
    get_corruption_baseline,
    get_stability_baseline,
    mean_margin,
    mean_of_defined,
    mfr,
    mfr_detail,
    normalised_term,
    relative_ce_terms,
    relative_corruption_errors,
    relative_mce,
    relative_mce_detail,
)

#: The full demo (seed 0, 150 test scenes): top-1 error (%) per severity 1-5 of the shipped
#: baseline and of demo:cnn, and their clean errors (robustlab show of the two corrupted runs).
DEMO_BASELINE = {
    "gaussian_noise": [40.7, 48.0, 64.0, 68.7, 82.0], "shot_noise": [47.3, 51.3, 66.7, 85.3, 87.3],
    "impulse_noise": [46.0, 51.3, 61.3, 78.0, 85.3], "defocus_blur": [35.3, 40.7, 62.7, 87.3, 88.7],
    "glass_blur": [36.7, 40.7, 55.3, 61.3, 78.0], "motion_blur": [39.3, 58.0, 71.3, 77.3, 82.7],
    "zoom_blur": [35.3, 34.7, 37.3, 35.3, 38.0], "snow": [46.7, 55.3, 68.7, 74.0, 70.7],
    "frost": [46.0, 49.3, 50.0, 50.0, 52.7], "fog": [50.7, 60.7, 72.7, 78.0, 80.7],
    "brightness": [39.3, 43.3, 54.0, 62.0, 71.3], "contrast": [50.7, 62.0, 79.3, 91.3, 92.0],
    "elastic_transform": [45.3, 48.7, 65.3, 75.3, 87.3], "pixelate": [38.0, 35.3, 43.3, 44.0, 50.0],
    "jpeg_compression": [36.7, 36.7, 38.7, 39.3, 40.7],
}  # fmt: skip
DEMO_CNN = {
    "gaussian_noise": [8.0, 15.3, 32.0, 64.7, 82.0], "shot_noise": [9.3, 26.0, 49.3, 74.7, 86.0],
    "impulse_noise": [12.0, 20.7, 36.0, 67.3, 85.3], "defocus_blur": [10.7, 12.7, 30.7, 64.7, 80.0],
    "glass_blur": [10.7, 15.3, 36.0, 45.3, 72.7], "motion_blur": [12.0, 19.3, 38.0, 64.0, 69.3],
    "zoom_blur": [8.0, 8.0, 11.3, 12.7, 15.3], "snow": [13.3, 26.7, 36.7, 40.7, 45.3],
    "frost": [12.7, 20.0, 28.7, 27.3, 29.3], "fog": [18.7, 27.3, 56.0, 68.7, 76.7],
    "brightness": [6.7, 10.7, 15.3, 29.3, 38.0], "contrast": [11.3, 25.3, 58.0, 87.3, 89.3],
    "elastic_transform": [11.3, 24.0, 46.7, 63.3, 79.3], "pixelate": [8.7, 7.3, 10.0, 14.7, 14.0],
    "jpeg_compression": [8.0, 6.7, 10.0, 10.0, 9.3],
}  # fmt: skip
DEMO_N = 150
#: Clean errors: 56 and 9 of the 150 scenes.
BASE_CLEAN, CNN_CLEAN = 56 / DEMO_N, 9 / DEMO_N


def fractions(percent: list[float]) -> np.ndarray:
    """The printed percentages (one decimal) back to errors counted over the 150 scenes."""
    return np.round(np.asarray(percent) * DEMO_N / 100) / DEMO_N


def demo_baseline(samples: int | None = DEMO_N) -> CorruptionBaseline:
    errors = {c: float(fractions(v).mean()) for c, v in DEMO_BASELINE.items()}
    return CorruptionBaseline("run:demo-baseline", errors, BASE_CLEAN, "the demo's baseline run",
                              samples=None if samples is None else dict.fromkeys(errors, samples),
                              clean_samples=samples)


def demo_cnn() -> dict[str, np.ndarray]:
    return {c: fractions(v) for c, v in DEMO_CNN.items()}


def test_the_demos_zoom_blur_case_no_longer_dominates_relative_mce():
    """The full demo: the baseline's error *falls* under zoom blur (37.3 -> 36.1 %), so the CNN's
    relative CE there was -422 % and dragged relative mCE to 103 %. With the baseline's sampling
    error counted (150 scenes), zoom_blur -- and jpeg_compression and pixelate, where the baseline's
    error rises by less than its margin -- are undefined, and relative mCE averages the other 12."""
    base = demo_baseline()
    base_errors, cnn = demo_baseline().errors, demo_cnn()
    old = float(np.mean([(cnn[c].mean() - CNN_CLEAN) / (base_errors[c] - BASE_CLEAN) for c in BENCHMARK_CORRUPTIONS]))
    assert old == pytest.approx(1.03, abs=0.01)  # the misleading headline
    terms = relative_ce_terms(demo_cnn(), CNN_CLEAN, baseline=base, subset="benchmark")
    undefined = [c for c, t in terms.items() if not t.defined]
    assert undefined == ["zoom_blur", "pixelate", "jpeg_compression"]
    zoom = terms["zoom_blur"]
    assert zoom.value is None and zoom.denominator < 0 and "not above 0" in zoom.reason
    assert terms["pixelate"].denominator == pytest.approx(0.048, abs=0.001)
    assert terms["pixelate"].margin == pytest.approx(0.085, abs=0.002) and "sampling error" in terms["pixelate"].reason
    detail = relative_mce_detail(demo_cnn(), CNN_CLEAN, baseline=base)
    assert detail.n_used == 12 and detail.n_terms == 15 and detail.undefined == tuple(undefined)
    assert detail.value == pytest.approx(np.mean([terms[c].value for c in terms if c not in undefined]))
    assert 1.3 < detail.value < 1.4  # 133.5 %: the CNN degrades more than the baseline, as its CE says
    with pytest.warns(UndefinedTermsWarning, match="12 of 15 corruptions.*zoom_blur, pixelate, jpeg_compression"):
        assert relative_mce(demo_cnn(), CNN_CLEAN, baseline=base) == pytest.approx(detail.value)
    summary = corruption_summary(demo_cnn(), CNN_CLEAN, baseline=base).to_dict()
    assert summary["relative_mce_terms"] == 12 and set(summary["relative_ce_undefined"]) == set(undefined)
    assert "zoom_blur" not in summary["relative_corruption_errors"]


def test_without_sample_sizes_only_a_falling_baseline_is_undefined():
    """A baseline given as published numbers (no sample sizes) has margin 0: every rise counts."""
    terms = relative_ce_terms(demo_cnn(), CNN_CLEAN, baseline=demo_baseline(samples=None))
    assert [c for c, t in terms.items() if not t.defined] == ["zoom_blur"]


def test_published_alexnet_keeps_the_papers_definition():
    alexnet = get_corruption_baseline("alexnet")
    errs = {c: 0.5 for c in BENCHMARK_CORRUPTIONS}
    terms = relative_ce_terms(errs, 0.3)
    assert all(t.defined and t.margin == 0 for t in terms.values())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no term left out, no warning
        value = relative_mce(errs, 0.3)
    assert value == pytest.approx(np.mean([0.2 / (alexnet.errors[c] - 0.435) for c in BENCHMARK_CORRUPTIONS]))


def test_relative_corruption_errors_refuses_undefined_terms_by_name():
    with pytest.raises(InputError, match="relative CE is undefined for zoom_blur.*relative_ce_terms"):
        relative_corruption_errors(demo_cnn(), CNN_CLEAN, baseline=demo_baseline())


def test_no_defined_term_is_an_error_not_a_number():
    flat = {c: [37.0] * 5 for c in BENCHMARK_CORRUPTIONS}
    base = CorruptionBaseline("flat", {c: 0.37 for c in flat}, 0.373, samples=dict.fromkeys(flat, 150),
                              clean_samples=150)
    with pytest.raises(InputError, match="relative mCE is undefined"):
        relative_mce({c: 0.2 for c in flat}, 0.1, baseline=base)


def test_normalised_term_rule():
    assert normalised_term("a", 1.0, 2.0).value == 0.5
    assert normalised_term("a", 1.0, 2.0, margin=2.0).value is None  # not above its margin
    assert normalised_term("a", 1.0, 2.1, margin=2.0).value == pytest.approx(1 / 2.1)
    assert normalised_term("a", 1.0, 0.0).value is None
    with pytest.raises(InputError, match="finite"):
        normalised_term("a", float("nan"), 1.0)
    with pytest.raises(InputError, match=">= 0"):
        normalised_term("a", 1.0, 1.0, margin=-1)
    mean = mean_of_defined([normalised_term("a", 1, 2), normalised_term("b", 1, 0), normalised_term("c", 3, 2)])
    assert mean.value == 1.0 and mean.used == ("a", "c") and mean.undefined == ("b",)
    assert mean_of_defined([normalised_term("b", 1, 0)]).value is None


def test_margins():
    assert binomial_margin(0.5, 100) == pytest.approx(1.96 * 0.05, rel=1e-3)
    assert binomial_margin(0.5, None) == 0.0 and binomial_margin(0.0, 10) == 0.0
    assert mean_margin([1.0]) == 0.0
    assert mean_margin([0.0, 2.0]) == pytest.approx(1.96 * np.sqrt(2) / np.sqrt(2), rel=1e-3)


def test_flip_rates_skip_a_baseline_that_barely_flips():
    """mFR: the same rule for the flip probabilities of a measured baseline."""
    fp = {p: 0.1 for p in ("gaussian_noise", "shot_noise", "motion_blur", "zoom_blur", "snow", "brightness",
                           "translate", "rotate", "tilt", "scale")}
    base = StabilityBaseline("run:b", {**fp, "zoom_blur": 0.011}, {}, flip_probability_margin={
        **dict.fromkeys(fp, 0.02), "zoom_blur": 0.012})
    terms = flip_rate_terms({**fp, "zoom_blur": 0.001}, baseline=base)
    assert terms["zoom_blur"].value is None and "sampling error" in terms["zoom_blur"].reason
    assert mfr_detail({**fp, "zoom_blur": 0.001}, baseline=base).n_used == 9
    with pytest.warns(UndefinedTermsWarning, match="9 of 10 perturbations: undefined for zoom_blur"):
        assert mfr({**fp, "zoom_blur": 0.001}, baseline=base) == pytest.approx(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alexnet = get_stability_baseline("alexnet").flip_probability  # published: margin 0, all defined
        assert mfr(fp) == pytest.approx(np.mean([0.1 / alexnet[p] for p in fp]))
