"""A lighter parity check of the torch backend with the numpy path (slow; the full 19 x 5 on
the parity images with a classifier is perf/parity_torch.py).

On one 96x96 colour image: deterministic corruptions within a mean |diff| of 1 grey level at
every severity; random ones at severities 1 and 5, the strength of change (mean |corrupted -
clean| over 48 draws per side) within 10 %, or within 3 standard errors where 48 draws cannot
resolve 10 % (frost's five textures, spatter's sparse drops at severity 1).
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import skimage.data
import torch

from robustlab.corruptions import corrupt, corrupt_batch, list_corruptions

pytestmark = pytest.mark.slow

DETERMINISTIC = ["gaussian_blur", "defocus_blur", "zoom_blur", "brightness", "contrast", "saturate", "pixelate",
                 "jpeg_compression"]
RANDOM = [n for n in list_corruptions() if n not in DETERMINISTIC]
DRAWS = 48


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return cv2.resize(skimage.data.astronaut()[:400, 50:450], (96, 96), interpolation=cv2.INTER_AREA)


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_deterministic_corruptions_within_one_grey_level(name, image):
    x = torch.from_numpy(image)[None]
    for severity in range(1, 6):
        got = corrupt_batch(x, name, severity)[0].numpy().astype(np.int16)
        assert np.abs(got - corrupt(image, name, severity, rng=0)).mean() <= 1.0


@pytest.mark.parametrize("name", RANDOM)
def test_random_corruptions_change_the_image_as_much(name, image):
    batch = torch.from_numpy(image)[None].expand(DRAWS, -1, -1, -1).contiguous()
    for severity in (1, 5):
        ours = np.stack(corrupt_batch([image] * DRAWS, name, severity, seed=11, ids=range(DRAWS)))
        theirs = corrupt_batch(batch, name, severity, seed=11, ids=list(range(DRAWS))).numpy()
        sn = np.abs(ours.astype(np.int16) - image).mean(axis=(1, 2, 3))
        st = np.abs(theirs.astype(np.int16) - image).mean(axis=(1, 2, 3))
        gap = abs(st.mean() - sn.mean()) / sn.mean()
        se = np.sqrt(sn.var(ddof=1) / DRAWS + st.var(ddof=1) / DRAWS) / sn.mean()
        assert gap <= max(0.10, 3 * se), (name, severity, gap, se)
