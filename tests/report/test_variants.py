"""Variants of one model in the corruption section: pairing by name, paired per-corruption error
differences with intervals from the stored per-sample predictions, the figure and the note."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import robustlab
from robustlab.data.images import write_image
from robustlab.engine import top1_errors
from robustlab.report import collect_results, write_report
from robustlab.report.variants import (PairedDifference, is_variant, mean_difference_interval,
                                       paired_corruption_differences, per_image_errors, variant_pairs)
from robustlab.store import open_store

CORRUPTIONS = "gaussian_noise,contrast"


class ChannelModel(torch.nn.Module):
    """3 classes from the mean colour; ``blur`` > 0 averages a neighbourhood first, which makes
    the model less sensitive to pixel noise (a differentiable stand-in for an augmented twin)."""

    def __init__(self, name: str, blur: int):
        super().__init__()
        self.name, self.blur = name, blur

    def forward(self, x):
        if self.blur:
            x = torch.nn.functional.avg_pool2d(x, 2 * self.blur + 1, stride=1, padding=self.blur)
        return 12 * (x - x.mean(dim=1, keepdim=True)).amax(dim=(2, 3))


@pytest.fixture(scope="module")
def variant_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    rng = np.random.default_rng(1)
    for cls in range(3):
        for i in range(8):
            img = rng.integers(40, 160, (40, 40, 3)).astype(np.uint8)
            img[12:28, 12:28, cls] = 230
            write_image(root / "data" / f"c{cls}" / f"{i}.png", img)
    for name, blur in (("cm", 0), ("cm-smooth", 2), ("other", 1)):
        robustlab.evaluate(ChannelModel(name, blur), "corrupted", root / "data", store=root / "store",
                           corruptions=CORRUPTIONS, severities="1,3,5", workers=0, progress=False, class_map="sorted")
    return root / "store"


@pytest.mark.parametrize("model, reference, expected", [
    ("demo:cnn-noise", "demo:cnn", True), ("torchvision:resnet50+clahe", "torchvision:resnet50", True),
    ("demo:cnn", "demo:cnn", False), ("demo:cnnx", "demo:cnn", False), ("demo:cnn-", "demo:cnn", False),
    ("demo:baseline", "demo:cnn", False), ("demo:cnn", "demo:cnn-noise", False)])
def test_is_variant(model, reference, expected):
    assert is_variant(model, reference) is expected


def test_pairs_need_the_same_benchmark_and_data(variant_store):
    with open_store(variant_store) as st:
        results = collect_results(st)
    pairs = [(a.model, b.model) for a, b in variant_pairs(results)]
    assert pairs == [("cm", "cm-smooth")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=40))
def test_interval_brackets_the_mean_and_shrinks_to_it_without_spread(values):
    mean, low, high = mean_difference_interval(np.array(values))
    assert mean == pytest.approx(np.mean(values))
    assert low <= mean + 1e-12 and mean - 1e-12 <= high
    if np.ptp(values) == 0:
        assert high - low == pytest.approx(0, abs=1e-12)


def test_one_image_has_no_interval():
    assert mean_difference_interval(np.array([0.4])) == (0.4, None, None)


def test_paired_differences_match_the_stored_predictions(variant_store):
    with open_store(variant_store) as st:
        results = {r.model: r for r in collect_results(st)}
        ref, var = results["cm"], results["cm-smooth"]
        diffs = paired_corruption_differences(ref, var, st)
        preds_ref, preds_var = st.read_predictions(ref.run_id), st.read_predictions(var.run_id)
    assert [d.corruption for d in diffs] == list(ref.summary["corruptions"])
    for d in diffs:
        # by hand: per image, the mean over severities of the variant's errors minus the reference's
        def per_image(preds):
            cells = {}
            for unit, cols in preds.items():
                if unit.startswith(d.corruption + "/"):
                    for sid, wrong in zip(cols["sample_id"], top1_errors(cols)):
                        cells.setdefault(str(sid), []).append(float(wrong))
            return {k: np.mean(v) for k, v in cells.items()}

        a, b = per_image(preds_ref), per_image(preds_var)
        diff = np.array([b[k] - a[k] for k in sorted(a)])
        assert d.n == 24 and d.difference == pytest.approx(diff.mean())
        summary_diff = np.mean(list(var.summary["corruptions"][d.corruption]["errors"].values())) - np.mean(
            list(ref.summary["corruptions"][d.corruption]["errors"].values()))
        assert d.difference == pytest.approx(summary_diff)  # same images: paired mean = difference of means
        assert d.low <= d.difference <= d.high
    assert {d.verdict for d in diffs} <= {"lower", "higher", "unclear"}


def test_without_a_store_the_summaries_give_differences_without_intervals(variant_store):
    with open_store(variant_store) as st:
        results = {r.model: r for r in collect_results(st)}
    diffs = paired_corruption_differences(results["cm"], results["cm-smooth"])
    assert diffs and all(d.low is None and d.verdict == "unclear" for d in diffs)


def test_verdicts():
    assert PairedDifference("fog", 0.5, 0.3, -0.2, -0.3, -0.1, 10).verdict == "lower"
    assert PairedDifference("fog", 0.3, 0.5, 0.2, 0.1, 0.3, 10).verdict == "higher"
    assert PairedDifference("fog", 0.3, 0.35, 0.05, -0.1, 0.2, 10).verdict == "unclear"


def test_per_image_errors_skip_clean_units():
    cols = {"sample_id": np.array(["a", "b"]), "label": np.array([0, 1]),
            "top5_index": np.array([[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]], np.int32)}
    out = per_image_errors({"clean/shard-0000": cols, "fog/2/shard-0000": cols})
    assert out == {"fog": {2: {"a": False, "b": True}}}


def test_report_shows_the_comparison_figure_and_note(variant_store, tmp_path):
    with open_store(variant_store) as st:
        html = write_report(st, tmp_path / "r.html").read_text()
    assert 'id="fig-error-change-cm-smooth"' in html
    assert "Error change per corruption: cm-smooth vs cm" in html
    assert "cm-smooth vs cm (paired, 95% intervals over the images):" in html
    assert "of 2 corruptions" in html
