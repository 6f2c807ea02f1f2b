"""Multi-digit scenes with boxes, for the detection demo (COCO format on disk).

Each scene is a background crop (as in :mod:`robustlab.demo.world`) of ``size`` x ``size``
pixels (default 96) with 1 to 3 digits pasted on it, each 20-40 px, placed so that their
boxes overlap by IoU < 0.1. Categories are the digits; their **COCO category id is digit + 1**
(names ``"0"`` .. ``"9"``), the convention of the demo detector's ``labels``.

Example::

    scenes = make_detection_scenes("test", 200, seed=0)
    write_coco_scenes(scenes, "demo_det/")   # demo_det/images/*.png + demo_det/annotations/instances_test.json
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.images import write_image
from ..errors import InputError
from ..fsutil import atomic_write_text, ensure_dir
from ..seeding import derive_seed
from .world import CLASS_NAMES, background_crop, check_split, digit_glyphs, glyph_pool, paste_digit

DEFAULT_SIZES = {"train": 2000, "test": 300}
MAX_DIGITS = 3
DIGIT_SIDE = (20.0, 40.0)
MAX_IOU = 0.1


@dataclass(frozen=True)
class DetectionScenes:
    """Generated detection scenes.

    Attributes
    ----------
    images : ndarray, uint8 (N, size, size, 3)
    boxes : list of float32 (K_i, 4) arrays
        x1, y1, x2, y2 in pixels (x2, y2 exclusive), tight around each digit.
    labels : list of int64 (K_i,) arrays
        Digit classes 0..9 (COCO category id = label + 1).
    split : str
    """

    images: np.ndarray
    boxes: list[np.ndarray]
    labels: list[np.ndarray]
    split: str

    def __len__(self) -> int:
        return len(self.images)


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes a (N, 4) against b (M, 4) -> (N, M)."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area_a = np.prod(a[:, 2:] - a[:, :2], axis=1)
    area_b = np.prod(b[:, 2:] - b[:, :2], axis=1)
    return inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-9)


def detection_scene(split: str, index: int, seed: int = 0, size: int = 96
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scene ``index``: uint8 image, float32 (K, 4) boxes, int64 (K,) digit labels (1 <= K <= 3)."""
    rng = np.random.default_rng(derive_seed(seed, "detection-scene", split, int(index)))
    glyphs, _ = digit_glyphs()
    pool = glyph_pool(split, seed)
    image = background_crop(size, rng, min_scale=0.2, max_scale=0.8)
    placed, boxes, labels = [], [], []
    for _ in range(int(rng.integers(1, MAX_DIGITS + 1))):
        for _attempt in range(20):  # rejection sampling of a free spot
            side = rng.uniform(*DIGIT_SIDE)
            x, y = rng.uniform(0, size - side, 2)
            square = np.array([x, y, x + side, y + side])
            if not placed or box_iou(square, np.array(placed)).max() < MAX_IOU:
                break
        else:
            continue
        label = int(rng.integers(10))
        glyph = glyphs[pool[label][int(rng.integers(len(pool[label])))]]
        image, box, _ = paste_digit(image, glyph, side, x, y, rng)
        if box[2] > box[0] and box[3] > box[1]:
            placed.append(square)
            boxes.append(box)
            labels.append(label)
    return image, np.array(boxes, np.float32).reshape(-1, 4), np.array(labels, np.int64)


def make_detection_scenes(split: str, n: int | None = None, *, seed: int = 0, size: int = 96) -> DetectionScenes:
    """``n`` detection scenes of ``split`` (default 2,000 train, 300 test), deterministic from ``seed``."""
    check_split(split)
    n = DEFAULT_SIZES[split] if n is None else int(n)
    if n < 1 or size < 48:
        raise InputError(f"need n >= 1 detection scenes of size >= 48 px; got n={n}, size={size}.")
    images = np.empty((n, size, size, 3), np.uint8)
    boxes, labels = [], []
    for i in range(n):
        images[i], b, lbl = detection_scene(split, i, seed, size)
        boxes.append(b)
        labels.append(lbl)
    return DetectionScenes(images, boxes, labels, split)


def coco_dict(scenes: DetectionScenes, file_names: list[str]) -> dict:
    """COCO instances dict (images, annotations with [x, y, w, h] boxes, categories id = digit + 1)."""
    h, w = scenes.images.shape[1:3]
    images = [{"id": i + 1, "file_name": name, "width": int(w), "height": int(h)}
              for i, name in enumerate(file_names)]
    annotations = []
    for i, (bxs, lbls) in enumerate(zip(scenes.boxes, scenes.labels)):
        for box, label in zip(bxs, lbls):
            bw, bh = float(box[2] - box[0]), float(box[3] - box[1])
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1, "category_id": int(label) + 1,
                                "bbox": [float(box[0]), float(box[1]), bw, bh], "area": bw * bh,
                                "iscrowd": 0})
    categories = [{"id": d + 1, "name": CLASS_NAMES[d], "supercategory": "digit"} for d in range(10)]
    return {"info": {"description": f"robustlab demo multi-digit scenes ({scenes.split})"},
            "images": images, "annotations": annotations, "categories": categories}


def write_coco_scenes(scenes: DetectionScenes, root: str | os.PathLike, *, fmt: str = "png") -> Path:
    """Write ``root/images/<split>_<index>.<fmt>`` and ``root/annotations/instances_<split>.json``.

    Returns the annotation file's path (images first, then the json, each atomically).
    """
    import json

    root = ensure_dir(root)
    names = [f"{scenes.split}_{i:05d}.{fmt}" for i in range(len(scenes))]
    for name, image in zip(names, scenes.images):
        write_image(root / "images" / name, image, quality=95)
    path = root / "annotations" / f"instances_{scenes.split}.json"
    atomic_write_text(path, json.dumps(coco_dict(scenes, names)))
    return path
