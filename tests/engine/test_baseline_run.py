"""``baseline_run``: CE and flip rates normalised by another stored run, or by the run itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import robustlab
from robustlab.data.images import write_image

CORRUPTIONS = "gaussian_noise,fog"


class Mix(torch.nn.Module):
    """Class = the dominant colour channel, blurred by a mixing matrix (``mix`` 0 = sharp)."""

    def __init__(self, mix: float):
        super().__init__()
        self.w = torch.nn.Parameter((1 - mix) * torch.eye(3) + mix * torch.full((3, 3), 1 / 3))

    def forward(self, x):  # the top-left quarter only, so rotations and shifts change the answer
        h, w = x.shape[2] // 2, x.shape[3] // 2
        return 10 * x[:, :, :h, :w].mean(dim=(2, 3)) @ self.w.T


def colour_folder(root, lead: int):
    """24 noisy 40x40 images in 3 classes; class c adds ``lead`` grey levels to channel c."""
    rng = np.random.default_rng(0)
    for cls in range(3):
        for i in range(8):
            img = rng.integers(0, 150, (40, 40, 3)).astype(np.uint8)
            img[..., cls] += lead
            write_image(root / f"c{cls}" / f"{i}.png", img)
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return colour_folder(tmp_path_factory.mktemp("colours"), 15)


@pytest.fixture(scope="module")
def hard_folder(tmp_path_factory):
    """Classes 3 grey levels apart: the models err often, so CE's denominators are measurable."""
    return colour_folder(tmp_path_factory.mktemp("hard-colours"), 3)


def run(model, folder, store, **kw):
    return robustlab.evaluate(model, "corrupted", folder, store=store, corruptions=CORRUPTIONS, workers=0,
                              progress=False, class_map="sorted", **kw)


def test_ce_normalised_by_another_run_and_by_itself(hard_folder, tmp_path):
    store = tmp_path / "store"
    base = run(Mix(0.6), hard_folder, store, baseline_run="self")
    assert base.metric("ce", "gaussian_noise") == pytest.approx(1.0)
    assert base.metric("mce_subset") == pytest.approx(1.0)
    model = run(Mix(0.0), hard_folder, store, baseline_run=base.run_id)
    defined = [c for c in CORRUPTIONS.split(",") if any(m == "ce" and s == c for m, s, _ in model.metrics)]
    assert defined == CORRUPTIONS.split(",")
    for c in defined:
        mine = np.mean([model.metric("error", f"{c}/{s}") for s in range(1, 6)])
        theirs = np.mean([base.metric("error", f"{c}/{s}") for s in range(1, 6)])
        assert model.metric("ce", c) == pytest.approx(mine / theirs)
    assert model.config["baseline_run"] == base.run_id


def test_ce_is_na_where_the_baseline_barely_errs(folder, tmp_path):
    """A baseline with 1 error in 120 images (or none) cannot normalise CE: n/a, with the reason."""
    base = run(Mix(0.6), folder, tmp_path / "store", baseline_run="self")
    assert not any(m == "ce" for m, _, _ in base.metrics)
    assert base.summary["corruptions"]["fog"]["ce"] is None
    assert base.summary["corruptions"]["fog"]["ce_na"] == "the baseline makes no errors there"
    assert "within its sampling error" in base.summary["corruptions"]["gaussian_noise"]["ce_na"]
    table = base.table()
    assert "n/a" in table and "CE n/a for gaussian_noise" in table


def test_a_baseline_run_without_the_corruptions_is_a_clear_error(folder, tmp_path):
    from robustlab.errors import DataError

    store = tmp_path / "store"
    other = robustlab.evaluate(Mix(0.6), "corrupted", folder, store=store, corruptions="brightness", workers=0,
                               progress=False, class_map="sorted")
    with pytest.raises(DataError, match="none of the corruptions"):
        run(Mix(0.0), folder, store, baseline_run=other.run_id)


class Pixel(Mix):
    """Class = the dominant channel of one pixel: every shift or rotation can flip it."""

    def forward(self, x):
        return 10 * x[:, :, 12, 12] @ self.w.T


def test_flip_rates_normalised_by_the_run_itself(folder, tmp_path):
    res = robustlab.evaluate(Pixel(0.3), "perturbed", folder, store=tmp_path / "s", workers=0, progress=False,
                             class_map="sorted", setting="cifar", perturbations="rotate,scale,translate",
                             baseline_run="self")
    rates = [v for m, s, v in res.metrics if m == "flip_rate" and s.endswith("stride-1")]
    assert rates and all(r == pytest.approx(1.0) for r in rates)
    assert any("normalised by this run itself" in n for n in res.notes)
