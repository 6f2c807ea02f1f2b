"""The epsilon sweep equals a plain per-eps loop, and its sanity checks fire when they should."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robustlab.attacks import GradientMaskingWarning, PAPER_EPS_GRID, epsilon_sweep, fgsm, pgd
from robustlab.errors import InputError

from .test_attacks import batch, small_cnn

torch.set_num_threads(1)


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).double().mean().item()


def test_fgsm_sweep_equals_a_per_eps_loop():
    model, (x, y) = small_cnn(), batch(40)
    res = epsilon_sweep(model, (x, y), PAPER_EPS_GRID, attack="fgsm", batch_size=16)
    expected = [accuracy(model, fgsm(model, x, y, e), y) for e in PAPER_EPS_GRID]
    np.testing.assert_allclose(res.accuracy, expected)
    assert res.accuracy[0] == pytest.approx(accuracy(model, x, y))
    assert res.sanity.within_ball and res.sanity.within_pixel_range


def test_pgd_sweep_without_random_start_equals_a_per_eps_loop():
    model, (x, y) = small_cnn(), batch(24)
    grid = [0.0, 0.02, 0.05]
    res = epsilon_sweep(model, (x, y), grid, attack="pgd", steps=5, random_start=False, batch_size=8)
    for e, acc in zip(grid, res.accuracy):
        adv = pgd(model, x, y, e, steps=5, random_start=False)
        assert acc == pytest.approx(accuracy(model, adv, y))


def test_pgd_sweep_is_reproducible_from_its_seed():
    model, (x, y) = small_cnn(), batch(16)
    a = epsilon_sweep(model, (x, y), [0.0, 0.05], attack="pgd", steps=3, seed=7)
    b = epsilon_sweep(model, (x, y), [0.0, 0.05], attack="pgd", steps=3, seed=7)
    np.testing.assert_array_equal(a.correct, b.correct)


@pytest.mark.parametrize("grid", [[0.1, 0.0], [0.0, 0.1, 0.1], [-0.1, 0.0], [], [0.0, float("nan")]])
def test_bad_grids_are_refused(grid):
    x, y = batch()
    with pytest.raises(InputError, match="eps"):
        epsilon_sweep(small_cnn(), (x, y), grid)


def test_zero_gradients_warn_about_masking():
    x, y = batch()
    constant = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 12 * 12, 5)).double()
    with torch.no_grad():
        constant[1].weight.zero_()
    with pytest.warns(GradientMaskingWarning, match="zero input gradient"):
        res = epsilon_sweep(constant, (x, y), [0.0, 0.1])
    assert res.sanity.zero_gradient_fraction == 1.0


def test_nested_pgd_is_monotone_and_at_least_as_strong():
    model, (x, y) = small_cnn(), batch(32)
    grid = [0.0, 0.01, 0.03, 0.06, 0.1]
    independent = epsilon_sweep(model, (x, y), grid, attack="pgd", steps=5, seed=1, compare_fgsm=False)
    nested = epsilon_sweep(model, (x, y), grid, attack="pgd", steps=5, seed=1, nested=True, compare_fgsm=False)
    assert np.all(np.diff(nested.accuracy) <= 0)
    # Once fooled, fooled at every larger strength; never more robust than the independent runs' worst case.
    assert not np.any(~nested.correct[:-1] & nested.correct[1:])
    assert np.all(nested.accuracy <= np.minimum.accumulate(independent.accuracy) + 2 / 32)
    assert nested.sanity.within_ball and nested.perturbation.shape == (5, 32)


def test_pgd_counts_clean_mistakes_as_non_robust_without_attacking():
    model, (x, y) = small_cnn(), batch(32)
    res = epsilon_sweep(model, (x, y), [0.0, 0.02], attack="pgd", steps=3, compare_fgsm=False)
    wrong_clean = ~res.correct[0]
    assert wrong_clean.any()
    assert not res.correct[1][wrong_clean].any()
    assert np.all(res.perturbation[1][wrong_clean] == 0)  # delta = 0 already fools them


def test_attacks_dispatch_through_their_registry():
    """A registered attack is swept by name with no other change; unknown names get a suggestion."""
    from robustlab.attacks import ATTACK_REGISTRY, get_attack, list_attacks, register_attack

    assert list_attacks()[:2] == ["fgsm", "pgd"] and get_attack("pgd").single is pgd
    calls = []

    @register_attack("test-identity", single=lambda model, x, y, eps, **_: x)
    def identity_grid(model, x, y, grid, clean_ok, grad, *, norm, batch_size, **_):
        calls.append(len(grid))
        return clean_ok.expand(len(grid), -1).clone(), torch.zeros((len(grid), x.shape[0])), True

    try:
        model, (x, y) = small_cnn(), batch(8)
        res = epsilon_sweep(model, (x, y), [0.0, 0.1], attack="test-identity")
        assert calls == [2] and res.attack == "test-identity" and res.settings == {}
        assert res.accuracy[0] == res.accuracy[1] == pytest.approx(accuracy(model, x, y))
        with pytest.raises(InputError, match="Did you mean 'pgd'"):
            epsilon_sweep(model, (x, y), [0.0, 0.1], attack="pgdd")
    finally:
        ATTACK_REGISTRY.remove("test-identity")
