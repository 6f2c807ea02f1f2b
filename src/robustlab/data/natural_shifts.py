"""Class lists and layouts of the natural-shift test sets (ImageNetV2, ImageNet-A, ImageNet-R,
ImageNet-Sketch, ObjectNet), from ``natural_shifts.json`` (built by
``scripts/build_natural_shift_data.py`` from the imagenet-testbed's metadata).

Released layouts (each an image folder with one subfolder per class):

- **ImageNetV2** (``imagenetv2-<variant>-format-val.tar.gz``): ``<root>/<class index 0..999>/<hash>.jpeg``,
  10 images per class; variants ``matched-frequency``, ``threshold0.7``, ``top-images``.
- **ImageNet-A** / **ImageNet-R**: ``<root>/<wnid>/<file>.jpg``, 200 wnid folders each.
- **ImageNet-Sketch**: ``<root>/<wnid>/<file>.JPEG``, 1,000 wnid folders (the download's ``sketch/``).
- **ObjectNet** 1.0: ``<root>/images/<class folder>/<file>.png`` (or ``<root>`` = ``images``), 313
  class folders such as ``air_freshener``, of which 113 overlap ImageNet-1k.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .wordnet import ilsvrc_wnids

__all__ = ["imagenet_a_indices", "imagenet_r_indices", "objectnet_folders", "objectnet_to_imagenet",
           "subset_wnids"]

_DATA = Path(__file__).with_name("natural_shifts.json")


@functools.lru_cache(maxsize=1)
def _load() -> dict:
    return json.loads(_DATA.read_text(encoding="utf-8"))


def imagenet_a_indices() -> list[int]:
    """The 200 ImageNet-1k class indices of ImageNet-A, ascending (its class order)."""
    return list(_load()["imagenet_a"])


def imagenet_r_indices() -> list[int]:
    """The 200 ImageNet-1k class indices of ImageNet-R, ascending (its class order)."""
    return list(_load()["imagenet_r"])


def subset_wnids(indices: list[int]) -> list[str]:
    """The wnids of ImageNet-1k class ``indices``, in that order."""
    wnids = ilsvrc_wnids()
    return [wnids[i] for i in indices]


def objectnet_folders() -> dict[str, str]:
    """ObjectNet's 313 image folders -> class names (``air_freshener`` -> ``Air freshener``)."""
    return dict(_load()["objectnet_folders"])


def objectnet_to_imagenet() -> dict[str, list[int]]:
    """The 113 ObjectNet folders that overlap ImageNet-1k -> their ImageNet-1k indices (sorted folders)."""
    return {k: list(v) for k, v in _load()["objectnet_to_imagenet"].items()}
