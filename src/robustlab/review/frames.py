"""Frames as the annotator page shows them: resized JPEG, at most 100 KB each (200 KB a pair).

Frames are read once (any format Pillow reads), scaled so the longer side is at most
``MAX_SIDE`` pixels (area interpolation, never enlarged), and encoded as JPEG at the highest
quality of ``QUALITIES`` that fits ``MAX_FRAME_BYTES``; when none fits, the frame is shrunk
by a quarter and tried again. The full-size view (``?size=full``) gets the frame at up to
``FULL_SIDE`` pixels and ``FULL_BYTES``. Encoded frames are kept in a bounded LRU cache.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

import cv2
import numpy as np

from ..data.images import encode_image, read_image

MAX_PAIR_BYTES = 200_000
MAX_FRAME_BYTES = MAX_PAIR_BYTES // 2
MAX_SIDE = 640
QUALITIES = (88, 80, 70, 60, 50, 40)
#: The full-size view: the frame's own size up to this many pixels a side, and bytes.
FULL_SIDE = 2048
FULL_BYTES = 1_000_000


def fit_side(image: np.ndarray, max_side: int) -> np.ndarray:
    """Scale uint8 HxWx3 down (area interpolation) so that its longer side is at most ``max_side``."""
    h, w = image.shape[:2]
    scale = max_side / max(h, w)
    if scale >= 1.0:
        return image
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def review_jpeg(path: str | os.PathLike, *, max_side: int = MAX_SIDE,
                max_bytes: int = MAX_FRAME_BYTES) -> bytes:
    """The frame at ``path`` as JPEG bytes for the review page (see the module docstring).

    Raises
    ------
    DataError
        When the file cannot be read as an image.
    """
    image = fit_side(read_image(path), max_side)
    while True:
        for quality in QUALITIES:
            data = encode_image(image, "jpeg", quality=quality)
            if len(data) <= max_bytes:
                return data
        image = fit_side(image, max(8, int(max(image.shape[:2]) * 0.75)))


class FrameCache:
    """Encoded frames by key, least recently used dropped first (thread-safe)."""

    def __init__(self, max_items: int = 512) -> None:
        self.max_items = int(max_items)
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, path: Path, *, full: bool = False) -> bytes:
        """The encoded frame of ``key`` (read from ``path`` on a miss); ``full``: the full-size view."""
        slot = ("full:" if full else "page:") + key
        with self._lock:
            data = self._items.get(slot)
            if data is not None:
                self._items.move_to_end(slot)
                return data
        data = review_jpeg(path, max_side=FULL_SIDE, max_bytes=FULL_BYTES) if full else review_jpeg(path)
        with self._lock:
            self._items[slot] = data
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
        return data
