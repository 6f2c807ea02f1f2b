"""The torch backend of corrupt_batch: form of the output, determinism, per-image seeding,
parity of the deterministic corruptions with the numpy path, and bad inputs (CPU only)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robustlab.corruptions import PROFILES, corrupt, corrupt_batch, list_corruptions
from robustlab.corruptions.torch import corrupt_tensor, torch_kernel_names
from robustlab.errors import InputError

ALL = list_corruptions("all")
DETERMINISTIC = ["gaussian_blur", "defocus_blur", "zoom_blur", "brightness", "contrast", "saturate", "pixelate",
                 "jpeg_compression"]
RANDOM = [n for n in ALL if n not in DETERMINISTIC]


def textured(n: int, h: int = 36, w: int = 44, seed: int = 0) -> np.ndarray:
    """uint8 (n, h, w, 3) mid-range images with edges and texture, different per image."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    out = []
    for i in range(n):
        img = np.stack([60 + 120 * ((x // (4 + i) + y // 6) % 2), 40 + 150 * x / w, 200 - 140 * y / h], axis=-1)
        out.append(np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8))
    return np.stack(out)


@pytest.fixture(scope="module")
def batch() -> torch.Tensor:
    return torch.from_numpy(textured(3))


def test_every_imagenet_c_corruption_has_a_torch_kernel():
    assert [n for n in torch_kernel_names() if n in ALL] == list(ALL)


@pytest.mark.parametrize("name", ALL)
def test_uint8_batch_keeps_form_is_deterministic_and_per_image(name, batch):
    ids = ["a", "b", "c"]
    for severity in (2, 5):
        out = corrupt_batch(batch, name, severity, seed=7, ids=ids)
        assert out.shape == batch.shape and out.dtype == torch.uint8 and out.device == batch.device
        assert out.is_contiguous()
        assert torch.equal(out, corrupt_batch(batch, name, severity, seed=7, ids=ids))
        # an image's result depends on its id, not on its batch or position
        alone = corrupt_batch(batch[1:2], name, severity, seed=7, ids=["b"])
        assert torch.equal(alone[0], out[1])
        flipped = corrupt_batch(batch.flip(0), name, severity, seed=7, ids=ids[::-1])
        assert torch.equal(flipped.flip(0), out)
        assert (out != batch).float().mean() > 0.01, f"{name} {severity} changed almost nothing"
    if name in RANDOM:
        other = corrupt_batch(batch, name, 5, seed=7, ids=["x", "y", "z"])
        assert not torch.equal(other, corrupt_batch(batch, name, 5, seed=7, ids=ids))
        assert not torch.equal(corrupt_batch(batch, name, 5, seed=8, ids=ids),
                               corrupt_batch(batch, name, 5, seed=7, ids=ids))


@pytest.mark.parametrize("name", ALL)
def test_float_batch_keeps_form_and_agrees_with_the_uint8_path(name, batch):
    x = batch.permute(0, 3, 1, 2).float() / 255
    out = corrupt_batch(x, name, 3, seed=1)
    assert out.shape == x.shape and out.dtype == torch.float32 and out.device == x.device
    assert float(out.min()) >= 0.0 and float(out.max()) <= 1.0
    as_levels = corrupt_batch(batch, name, 3, seed=1).permute(0, 3, 1, 2).float()
    # the same draws; uint8 output is the float result truncated (or rounded) to 256 levels
    assert float((out * 255 - as_levels).abs().max()) <= 1.0 + 1e-3
    half = corrupt_batch(x.to(torch.float64), name, 3, seed=1)
    assert half.dtype == torch.float64


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_deterministic_corruptions_match_the_numpy_path(name, rgb_image):
    x = torch.from_numpy(rgb_image)[None]
    for severity in (1, 2, 3, 4, 5):
        got = corrupt_batch(x, name, severity)[0].numpy().astype(np.int16)
        want = corrupt(rgb_image, name, severity, rng=0).astype(np.int16)
        diff = np.abs(got - want)
        assert diff.max() <= 1 and diff.mean() <= 0.5, (name, severity, diff.mean())


@pytest.mark.parametrize("profile", [p for p in PROFILES if p != "imagecorruptions"])
def test_hendrycks_profiles_run_and_deterministic_ones_match(profile, rgb_image):
    x = torch.from_numpy(rgb_image)[None]
    for name in ALL:
        out = corrupt_batch(x, name, 4, profile=profile)
        assert out.shape == x.shape and out.dtype == torch.uint8
        if name in DETERMINISTIC:
            want = corrupt(rgb_image, name, 4, rng=0, profile=profile).astype(np.int16)
            assert np.abs(out[0].numpy().astype(np.int16) - want).max() <= 1, (profile, name)


def test_per_image_severities_equal_separate_calls(batch):
    ids = [10, 11, 12]
    for name in ("fog", "zoom_blur", "glass_blur"):
        mixed = corrupt_batch(batch, name, [1, 5, 3], seed=2, ids=ids)
        for i, s in enumerate((1, 5, 3)):
            assert torch.equal(mixed[i], corrupt_batch(batch[i:i + 1], name, s, seed=2, ids=ids[i:i + 1])[0])
        as_tensor = corrupt_batch(batch, name, torch.tensor([1, 5, 3]), seed=2, ids=ids)
        assert torch.equal(as_tensor, mixed)


def test_seeds_follow_the_numpy_paths_derivation(batch):
    """Same (seed, id, name, severity) -> same generator seed: a clean image id reproduces."""
    a = corrupt_tensor(batch[:1], "gaussian_noise", 3, seed=5, ids=["img.png"])
    b = corrupt_batch(batch[:1], "gaussian_noise", 3, seed=5, ids=["img.png"])
    assert torch.equal(a, b)


def test_empty_batch_is_returned_as_is():
    x = torch.zeros((0, 40, 40, 3), dtype=torch.uint8)
    out = corrupt_batch(x, "fog", 3)
    assert out.shape == x.shape and out.dtype == torch.uint8


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("bad, fragment", [
    (torch.zeros((40, 40, 3), dtype=torch.uint8), "unsqueeze"),
    (torch.zeros((2, 3, 40, 40), dtype=torch.uint8), "permute(0, 2, 3, 1)"),
    (torch.zeros((2, 40, 40, 4), dtype=torch.uint8), "alpha"),
    (torch.zeros((2, 40, 40, 1), dtype=torch.uint8), "grey"),
    (torch.zeros((2, 40, 40, 3)), "permute(0, 3, 1, 2)"),
    (torch.zeros((2, 40, 40, 3), dtype=torch.int32), "dtype torch.int32"),
    (torch.zeros((2, 3, 20, 40)), "at least 32x32"),
    (torch.full((2, 3, 40, 40), 2.0), "values in [0, 1]"),
    (torch.full((2, 3, 40, 40), -0.5), "values in [0, 1]"),
    (torch.full((2, 3, 40, 40), float("nan")), "values in [0, 1]"),
])
def test_bad_tensors_name_the_expected_form(bad, fragment):
    with pytest.raises(InputError) as err:
        corrupt_batch(bad, "fog", 3)
    assert fragment in str(err.value)
    assert "(N, H, W, 3)" in str(err.value) or "(N, 3, H, W)" in str(err.value) or "32x32" in str(err.value)


@pytest.mark.parametrize("severity", [0, 6, 2.0, True, "3", [1, 2], [1, 7, 3], torch.tensor([1.0, 2.0, 3.0])])
def test_bad_severities_raise_the_numpy_paths_errors(severity, batch):
    with pytest.raises(InputError) as err:
        corrupt_batch(batch, "fog", severity)
    if not isinstance(severity, (list, torch.Tensor)) and severity != "3":
        with pytest.raises(InputError) as numpy_err:
            corrupt(batch[0].numpy(), "fog", severity)
        assert str(err.value) == str(numpy_err.value)


def test_unknown_corruption_and_profile_raise_the_numpy_paths_errors(batch):
    with pytest.raises(InputError) as err:
        corrupt_batch(batch, "fogg", 3)
    with pytest.raises(InputError) as numpy_err:
        corrupt(batch[0].numpy(), "fogg", 3)
    assert str(err.value) == str(numpy_err.value) and "fog" in str(err.value)
    with pytest.raises(InputError, match="profile"):
        corrupt_batch(batch, "fog", 3, profile="imagenet-x")


def test_ids_must_match_the_batch(batch):
    with pytest.raises(InputError, match="one id per image"):
        corrupt_batch(batch, "fog", 3, ids=[1, 2])


def test_half_precision_batches_are_computed_in_float32_and_returned_in_their_dtype(batch):
    x = batch.permute(0, 3, 1, 2).float() / 255
    full = corrupt_batch(x, "gaussian_blur", 2)
    for dtype in (torch.float16, torch.bfloat16):
        out = corrupt_batch(x.to(dtype), "gaussian_blur", 2)
        assert out.dtype == dtype and out.shape == x.shape
        assert float((out.float() - full).abs().max()) < 1e-2
