"""The torch backend's JPEG: libjpeg on the CPU by default on every device (exact against the numpy
path, also for batches coded on threads); nvJPEG only when asked (ROBUSTLAB_TORCH_JPEG=nvjpeg), because
on a GPU it was 2.1-2.6 grey levels off on average (perf/gpu_check.py on an H200)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robustlab.corruptions import corrupt
from robustlab.corruptions.torch import digital
from robustlab.errors import InputError


@pytest.mark.parametrize("n", [3, 12])  # 12: the batch is coded on threads
def test_libjpeg_round_trip_is_the_numpy_paths(n, rgb_image):
    rng = np.random.default_rng(0)
    images = np.stack([np.clip(rgb_image.astype(int) + rng.integers(-20, 20, rgb_image.shape), 0, 255).astype(np.uint8)
                       for _ in range(n)])
    batch = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
    got = digital.jpeg_round_trip(batch, 15).permute(0, 2, 3, 1).numpy()
    want = np.stack([corrupt(img, "jpeg_compression", 3, rng=0) for img in images])  # quality 15
    np.testing.assert_array_equal(got, want)


def test_the_codec_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.delenv(digital.JPEG_CODEC_ENV, raising=False)
    assert digital.jpeg_codec() == "libjpeg"
    monkeypatch.setenv(digital.JPEG_CODEC_ENV, "NVJPEG")
    assert digital.jpeg_codec() == "nvjpeg"
    monkeypatch.setenv(digital.JPEG_CODEC_ENV, "turbo")
    with pytest.raises(InputError, match="ROBUSTLAB_TORCH_JPEG='turbo': use one of libjpeg, nvjpeg"):
        digital.jpeg_codec()


def test_nvjpeg_on_a_cpu_tensor_falls_back_to_libjpeg(rgb_image):
    batch = torch.from_numpy(rgb_image[None]).permute(0, 3, 1, 2).contiguous()
    np.testing.assert_array_equal(digital.jpeg_round_trip(batch, 25, codec="nvjpeg").numpy(),
                                  digital.jpeg_round_trip(batch, 25, codec="libjpeg").numpy())
