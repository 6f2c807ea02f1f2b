"""Interventions the papers tested, as recipes anyone can rerun.

- :func:`finetune` (``robustlab finetune``): fine-tune any classifier on an image folder or a
  video frame set, on a WordNet class subset (``vid30``), with corruption augmentation
  (``paper-noise``); returns a ``finetuned:`` model spec.
- :func:`stylize_dataset` (``robustlab stylize``): AdaIN-stylized copies of COCO / VOC /
  Cityscapes / image folders, as Stylized-COCO and friends.
- Preprocessing wrappers (CLAHE, ten-crop, multi-scale) live in :mod:`robustlab.models.wrappers`.
"""

from .classes import ClassSubset, resolve_class_subset
from .data import TrainingSet, read_training_set
from .finetune import finetune, training_summary
from .finetuned import read_manifest

__all__ = ["ClassSubset", "TrainingSet", "finetune", "read_manifest", "read_training_set", "resolve_class_subset",
           "stylize_dataset", "training_summary"]


def __getattr__(name: str):
    if name == "stylize_dataset":  # AdaIN and the dataset writer load on first use
        from .stylize import stylize_dataset

        return stylize_dataset
    raise AttributeError(f"module 'robustlab.train' has no attribute {name!r}")
