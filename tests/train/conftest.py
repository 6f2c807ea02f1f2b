"""Fixtures for the train tests: tiny labelled folders, torch on one thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from robustlab.data.images import write_image

TINY = Path(__file__).parent / "tiny_classifier.py"


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One intra-op thread: the test machine's cores are shared (spinning OpenMP threads crawl)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def colour_image(label: int, rng: np.random.Generator, size=(40, 44)) -> np.ndarray:
    """An image whose dominant colour channel is ``label`` % 3, with noise and a bright square."""
    img = rng.normal(100, 30, (*size, 3))
    img[..., label % 3] += 70
    top, left = rng.integers(0, size[0] - 10), rng.integers(0, size[1] - 10)
    img[top:top + 10, left:left + 10] += 40
    return np.clip(img, 0, 255).astype(np.uint8)


def make_folder(root: Path, classes, per_class: int, seed: int = 0, size=(40, 44)) -> Path:
    rng = np.random.default_rng(seed)
    for label, name in enumerate(classes):
        for k in range(per_class):
            write_image(root / name / f"{k:03d}.png", colour_image(label, rng, size))
    return root


@pytest.fixture(scope="session")
def colour_folder(tmp_path_factory) -> Path:
    return make_folder(tmp_path_factory.mktemp("colours"), ("cat", "dog", "fox"), 8)
