"""RandomCorruption's torch path, its torchvision v2 transform, and the torch parity column of
``robustlab list`` (CPU only)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.corruptions import corrupt_batch, list_corruptions
from robustlab.corruptions.torch import TorchvisionRandomCorruption, load_parity, parity_status
from robustlab.corruptions.transforms import PAPER_NOISE_AUGMENTATION, RandomCorruption
from robustlab.errors import InputError


def batch(n: int = 8, size: int = 40, seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.integers(20, 236, (n, size, size, 3), dtype=np.uint8))


def test_torch_path_applies_exactly_the_chosen_corruption_with_the_same_seeds():
    aug = RandomCorruption("all", severities=(1, 5), seed=4)
    x = batch()
    ids = [(0, i) for i in range(len(x))]
    out = aug(x, ids=ids)
    assert out.shape == x.shape and out.dtype == torch.uint8
    names = set()
    for i, key in enumerate(ids):
        name, severity = aug.choose(key)
        names.add(name)
        want = corrupt_batch(x[i:i + 1], name, severity, seed=4, ids=[key])
        assert torch.equal(out[i:i + 1], want), (key, name, severity)
    assert len(names) > 1  # several corruptions in one batch


def test_torch_path_on_float_batches_and_clean_images():
    aug = RandomCorruption("noise", p=0.5, seed=1)
    x = batch(12).permute(0, 3, 1, 2).float() / 255
    ids = list(range(100, 112))
    out = aug(x, ids=ids)
    assert out.dtype == torch.float32 and out.shape == x.shape
    clean = [i for i, key in enumerate(ids) if aug.choose(key) is None]
    assert 0 < len(clean) < len(ids)
    for i in range(len(ids)):
        assert torch.equal(out[i], x[i]) == (i in clean)
    assert torch.equal(aug(x.flip(0), ids=ids[::-1]).flip(0), out)  # by id, not by position


def test_torch_and_numpy_paths_make_the_same_choices():
    aug = RandomCorruption(PAPER_NOISE_AUGMENTATION, seed=2)
    x = batch(6)
    ids = [f"img{i}" for i in range(6)]
    from_numpy = aug(x.numpy(), ids=ids)
    from_torch = aug(x, ids=ids).numpy()
    for i, key in enumerate(ids):
        name, _ = aug.choose(key)
        if name in ("contrast", "gaussian_blur", "jpeg_compression"):  # no draws: the same pixels
            assert np.abs(from_numpy[i].astype(int) - from_torch[i]).max() <= 1


def test_torch_path_rejects_bad_batches():
    aug = RandomCorruption("noise")
    with pytest.raises(InputError, match="channels-last"):
        aug(batch().permute(0, 3, 1, 2))
    with pytest.raises(InputError, match="one id per image"):
        aug(batch(3), ids=[1, 2])


def test_torchvision_v2_pipeline_corrupts_images_and_passes_labels_through():
    augment = TorchvisionRandomCorruption(["fog", "gaussian_noise"], severities=3, seed=0)
    pipeline = v2.Compose([augment, v2.ToDtype(torch.float32, scale=True)])
    image = tv_tensors.Image(batch(1)[0].permute(2, 0, 1))           # torchvision: uint8 CHW
    out, label = pipeline(image, 7)
    assert isinstance(out, tv_tensors.Image) and out.dtype == torch.float32 and out.shape == (3, 40, 40)
    assert label == 7
    name, severity = augment.augment.choose((0, 0, 0, 0))
    want = corrupt_batch(image.permute(1, 2, 0)[None], name, severity, seed=0, ids=[(0, 0, 0, 0)])
    assert torch.equal((out * 255).round().to(torch.uint8), want[0].permute(2, 0, 1))
    # the next call is a new id; set_epoch starts a new series
    second = augment(image)
    assert not torch.equal(second, want[0].permute(2, 0, 1))
    augment.set_epoch(3)
    assert augment.make_params([])["key"][0] == 3


def test_torchvision_transform_takes_float_batches_and_leaves_boxes_alone():
    augment = TorchvisionRandomCorruption("blur", seed=1)
    images = tv_tensors.Image(batch(4).permute(0, 3, 1, 2).float() / 255)
    boxes = tv_tensors.BoundingBoxes(torch.tensor([[1.0, 2.0, 10.0, 12.0]]), format="XYXY", canvas_size=(40, 40))
    out = augment({"image": images, "boxes": boxes, "id": "sample-1"})
    assert out["image"].shape == images.shape and out["image"].dtype == torch.float32
    assert not torch.equal(out["image"], images)
    assert torch.equal(out["boxes"], boxes) and out["id"] == "sample-1"


def test_list_shows_the_recorded_torch_parity():
    record = load_parity()
    result = CliRunner().invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert "torch parity" in result.output
    for name in list_corruptions():
        status = parity_status(name, record)
        assert status.split()[0] in ("ok", "misses", "not")
    fake = {"corruptions": {"fog": {"ok": False, "missed": ["strength 12.0% > 10%"]}, "snow": {"ok": True},
                            "frost": {"ok": True, "measured": ["pixels"]}}}
    assert parity_status("fog", fake) == "misses strength 12.0% > 10%"
    assert parity_status("snow", fake) == "ok"
    assert parity_status("frost", fake) == "ok (pixels only)"
    assert parity_status("fog", {}) == "not measured"
    json.dumps(record)  # the shipped record is plain JSON
