"""RandomCorruption (numpy path): per-image choice seeded by id, the paper-000 scheme."""

from __future__ import annotations

import numpy as np
import pytest

from robustlab.corruptions import corrupt
from robustlab.corruptions.transforms import PAPER_NOISE_AUGMENTATION, RandomCorruption
from robustlab.errors import InputError
from robustlab.seeding import derive_seed


def images(n: int = 6, size: int = 40) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)


def test_each_image_gets_exactly_one_of_the_six_with_its_own_seed():
    aug = RandomCorruption("paper-noise", severities="1-5", seed=3)
    assert aug.names == PAPER_NOISE_AUGMENTATION and aug.severity_choices == (1, 2, 3, 4, 5)
    x = images()
    ids = [(0, i) for i in range(len(x))]
    out = aug(x, ids=ids)
    assert out.shape == x.shape and out.dtype == np.uint8
    for img, key, got in zip(x, ids, out):
        name, sev = aug.choose(key)
        assert name in PAPER_NOISE_AUGMENTATION and 1 <= sev <= 5
        want = corrupt(img, name, sev, rng=np.random.RandomState(derive_seed(3, key, name, sev)))
        np.testing.assert_array_equal(got, want)


def test_result_depends_on_id_not_on_batch_position():
    aug = RandomCorruption(["fog", "gaussian_noise"], severities=3, seed=1)
    x = images(4)
    ids = ["a", "b", "c", "d"]
    whole = aug(x, ids=ids)
    reversed_ = aug(x[::-1], ids=ids[::-1])
    np.testing.assert_array_equal(whole, reversed_[::-1])
    single = aug(list(x[:1]), ids=["a"])
    assert isinstance(single, list)
    np.testing.assert_array_equal(single[0], whole[0])


def test_epoch_in_id_gives_fresh_draws_and_choices_cover_the_set():
    aug = RandomCorruption("paper-noise", seed=0)
    chosen = {aug.choose((epoch, 0))[0] for epoch in range(200)}
    assert chosen == set(PAPER_NOISE_AUGMENTATION)
    severities = {aug.choose((epoch, 0))[1] for epoch in range(200)}
    assert severities == {1, 2, 3, 4, 5}


def test_probability_zero_returns_images_unchanged_and_p_is_respected():
    x = images(3)
    np.testing.assert_array_equal(RandomCorruption("noise", p=0.0)(x, ids=[1, 2, 3]), x)
    aug = RandomCorruption("noise", p=0.3, seed=5)
    applied = np.mean([aug.choose(i) is not None for i in range(2000)])
    assert 0.25 < applied < 0.35


@pytest.mark.parametrize("bad", [dict(corruptions="nope"), dict(severities=(0, 5)), dict(p=1.5),
                                 dict(profile="imagenet-x"), dict(severities="a-b")])
def test_bad_arguments_are_named(bad):
    with pytest.raises(InputError):
        RandomCorruption(**bad)


def test_severities_follow_the_one_severity_rule():
    """RandomCorruption reads severities as every other command does (parse_severities): a
    sequence lists severities (``(1, 3)`` is 1 and 3), ranges are written ``"1-3"``."""
    assert RandomCorruption("noise", severities="1-3").severity_choices == (1, 2, 3)
    assert RandomCorruption("noise", severities="2-3,5").severity_choices == (2, 3, 5)
    assert RandomCorruption("noise", severities=(1, 3)).severity_choices == (1, 3)
    assert RandomCorruption("noise", severities=[5, 1]).severity_choices == (1, 5)
    assert RandomCorruption("noise", severities=4).severity_choices == (4,)
    assert RandomCorruption("noise").severity_choices == (1, 2, 3, 4, 5)


def test_ids_must_match_images():
    with pytest.raises(InputError, match="one id per image"):
        RandomCorruption("noise")(images(2), ids=[1])
