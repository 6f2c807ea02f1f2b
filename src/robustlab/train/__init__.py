"""Interventions the papers tested, as recipes anyone can rerun.

- :func:`finetune` (``robustlab finetune``): fine-tune any classifier on an image folder or a
  video frame set, on a WordNet class subset (``vid30``), with corruption augmentation
  (``paper-noise``); returns a ``finetuned:`` model spec.
- :func:`stylize_dataset` (``robustlab stylize``): AdaIN-stylized copies of COCO / VOC /
  Cityscapes / image folders, as Stylized-COCO and friends.
- Preprocessing wrappers (CLAHE, ten-crop, multi-scale) live in :mod:`robustlab.models.wrappers`.

Names load on first use (``import robustlab.train`` stays cheap for the CLI).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ClassSubset": ".classes", "resolve_class_subset": ".classes",
    "TrainingSet": ".data", "read_training_set": ".data",
    "FinetuneConfig": ".finetuning", "finetune": ".finetuning", "training_summary": ".finetuning",
    "read_manifest": ".finetuned",
    "stylize_dataset": ".stylize",
    "AdainWeights": ".adain", "resolve_adain_weights": ".adain",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module 'robustlab.train' has no attribute {name!r}")
