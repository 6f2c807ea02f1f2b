"""Shared test fixtures. Tests must pass without ../shared: small fixtures live in tests/fixtures."""

from __future__ import annotations

import numpy as np
import pytest

from postgres_server import postgres_server_url, postgres_url  # noqa: F401  (fixtures for every package)
from shared_data import FIXTURES, SHARED_REFERENCE, TESTS, shared_file  # noqa: F401  (re-exported)


@pytest.fixture
def rgb_image() -> np.ndarray:
    """A deterministic 48x64 colour image with edges, gradients and texture (uint8 HxWx3)."""
    rng = np.random.default_rng(1234)
    h, w = 48, 64
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 / (w - 1), y * 255 / (h - 1), ((x // 8 + y // 8) % 2) * 200], axis=-1)
    img = img + rng.normal(0, 10, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)

