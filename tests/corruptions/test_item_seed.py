"""One per-item random state: every path that corrupts an item of a dataset gives it the same pixels.

The builder (``robustlab corrupt``), the on-the-fly view of the classification benchmarks, the
detection images, :func:`corrupt_batch` with ids and :class:`RandomCorruption` all seed an
item with :func:`robustlab.corruptions.item_seed` of (seed, item, corruption, severity).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.corruptions import corrupt, corrupt_batch, corrupt_item, item_seed
from robustlab.corruptions.dataset import corrupt_dataset, make_settings
from robustlab.corruptions.transforms import RandomCorruption
from robustlab.corruptions.views import corrupt_on_the_fly
from robustlab.data.classification import read_image_folder
from robustlab.data.images import read_image

SEED, NAME, SEVERITY = 5, "gaussian_noise", 3


def write_images(root: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {}
    for rel in ("a/x.png", "b/y.png"):
        img = rng.integers(0, 256, (40, 44, 3), dtype=np.uint8)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(root / rel)
        out[rel] = img
    return out


def test_every_path_gives_an_item_the_same_pixels(tmp_path):
    images = write_images(tmp_path / "src")
    want = {rel: corrupt(img, NAME, SEVERITY, rng=np.random.RandomState(item_seed(SEED, rel, NAME, SEVERITY)))
            for rel, img in images.items()}
    for rel, img in images.items():
        np.testing.assert_array_equal(corrupt_item(img, NAME, SEVERITY, seed=SEED, item=rel), want[rel])
    batch = corrupt_batch(list(images.values()), NAME, SEVERITY, seed=SEED, ids=list(images))
    for got, rel in zip(batch, images):
        np.testing.assert_array_equal(got, want[rel])

    corrupt_dataset(tmp_path / "src", tmp_path / "out", make_settings(NAME, str(SEVERITY), seed=SEED, format="png"),
                    workers=1)
    for rel in images:
        np.testing.assert_array_equal(read_image(tmp_path / "out" / NAME / str(SEVERITY) / rel), want[rel])

    view = corrupt_on_the_fly(read_image_folder(tmp_path / "src"), NAME, SEVERITY, seed=SEED)
    for i, rel in enumerate(view.ids):
        np.testing.assert_array_equal(view.read(i), want[rel])


def test_detection_images_use_the_item_seed(tmp_path):
    pytest.importorskip("torch")  # the detection benchmarks need it (not the numpy kernels: the drift check runs without)
    from robustlab.benchmarks.detection_inputs import DetectionImages

    images = write_images(tmp_path / "src")
    det = DetectionImages(str(tmp_path / "src"), tuple(images), np.arange(2), np.zeros((2, 2), np.int64), 1, NAME,
                          SEVERITY, SEED)
    for i, (rel, img) in enumerate(images.items()):
        np.testing.assert_array_equal(det.read(i), corrupt_item(img, NAME, SEVERITY, seed=SEED, item=rel))


def test_random_corruption_seeds_its_draw_with_the_item_seed():
    aug = RandomCorruption([NAME], severities=SEVERITY, seed=SEED)
    img = np.random.default_rng(1).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    np.testing.assert_array_equal(aug(img, ids="img-1"), corrupt_item(img, NAME, SEVERITY, seed=SEED, item="img-1"))
