"""Fine-tuning recipes: named sets of the training settings, the learning-rate schedules and the checks.

``default`` is robustlab's recipe (see :mod:`.finetuning`). ``appendix-g`` is the ImageNet-C paper's
subtype experiment as its reference code trains (hendrycks/robustness, ``old/auxiliary/ImageNet22K/
train.py``, commit 8190fe3): a fresh ``nn.Linear`` head (PyTorch's default initialisation) over the
25 broad types, everything before it frozen, 1 epoch, batch 128, SGD with Nesterov momentum 0.9,
weight decay 5e-4, learning rate 0.01 annealed by a cosine over the images seen (``cosine-images``:
``lr (1 + cos t) / 2`` with ``t = pi x images seen / (images x epochs)``, held at ``pi - 0.01``),
Resize 256 + RandomCrop 224 + horizontal flip (``resize-random``), and the frozen layers in training
mode as the reference's ``net.train()`` leaves them (``frozen_mode="train"``: dropout active,
batch-norm statistics updated). It is the recipe of ``--classes subtypes25`` unless another is named.

A setting given explicitly wins over the recipe's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import InputError, unknown_name

__all__ = ["DEFAULTS", "FROZEN_MODES", "HEAD_INITS", "RECIPES", "SCHEDULES", "TRAINABLE", "check_numbers", "lr_factor",
           "recipe_settings"]

SCHEDULES = ("cosine", "step", "constant", "cosine-images")
TRAINABLE = ("all", "head")
#: How a resized head starts: the mean of the ImageNet rows below each class (when the model is a
#: 1000-way ImageNet classifier), or a fresh layer with PyTorch's default initialisation.
HEAD_INITS = ("imagenet-rows", "fresh")
#: The mode of the frozen layers while the head trains: eval (fixed batch-norm statistics, no
#: dropout) or train (as a reference that calls net.train() on the whole network).
FROZEN_MODES = ("eval", "train")

#: robustlab's recipe: the values of the settings a recipe sets.
DEFAULTS: dict[str, Any] = {"epochs": 1, "batch_size": 32, "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4,
                            "nesterov": False, "schedule": "cosine", "train": "all", "crop": "random",
                            "head_init": "imagenet-rows", "frozen_mode": "eval"}
#: Named recipes: what each changes from :data:`DEFAULTS`.
RECIPES: dict[str, dict[str, Any]] = {
    "default": {},
    "appendix-g": {"epochs": 1, "batch_size": 128, "lr": 0.01, "momentum": 0.9, "weight_decay": 5e-4,
                   "nesterov": True, "schedule": "cosine-images", "train": "head", "crop": "resize-random",
                   "head_init": "fresh", "frozen_mode": "train"},
}
#: The class subset whose experiment has its own recipe.
SUBSET_RECIPES = {"subtypes25": "appendix-g"}


def recipe_settings(recipe: str | None, subset_spec: str | None) -> tuple[str, dict[str, Any]]:
    """``(recipe name, its settings)``; None: the recipe of the class subset (``appendix-g`` for
    ``subtypes25``), else ``default``."""
    name = recipe if recipe is not None else SUBSET_RECIPES.get(subset_spec or "", "default")
    if name not in RECIPES:
        raise unknown_name("fine-tuning recipe", name, RECIPES)
    return name, {**DEFAULTS, **RECIPES[name]}


def lr_factor(schedule: str, total_steps: int, *, batch_size: int = 1, images: int = 1, epochs: int = 1
              ) -> Callable[[int], float]:
    """The learning-rate factor after ``step`` optimiser steps (``torch.optim.lr_scheduler.LambdaLR``)."""
    if schedule == "cosine":
        return lambda step: 0.5 * (1.0 + math.cos(math.pi * min(step, total_steps) / max(1, total_steps)))
    if schedule == "cosine-images":  # hendrycks/robustness: t grows by pi / epochs per pass over the images
        span = max(1, images) * max(1, epochs) / max(1, batch_size)
        return lambda step: 0.5 * (1.0 + math.cos(min(math.pi * step / span, math.pi - 0.01)))
    if schedule == "step":
        return lambda step: 1.0 if step < total_steps // 2 else 0.1
    return lambda step: 1.0


def check_numbers(settings: dict[str, Any]) -> None:
    """InputError for a setting out of range (epochs, batch size, rates, schedule, modes)."""
    if int(settings["epochs"]) < 1:
        raise InputError(f"epochs must be at least 1; got {settings['epochs']}.")
    if int(settings["batch_size"]) < 2:
        raise InputError(f"batch size must be at least 2 (batch norm trains on batches); got {settings['batch_size']}.")
    if not float(settings["lr"]) > 0:
        raise InputError(f"learning rate must be positive; got {settings['lr']}.")
    if not 0 <= float(settings["momentum"]) < 1:
        raise InputError(f"momentum must be in [0, 1); got {settings['momentum']}.")
    if float(settings["weight_decay"]) < 0:
        raise InputError(f"weight decay must be >= 0; got {settings['weight_decay']}.")
    if settings["nesterov"] and not float(settings["momentum"]) > 0:
        raise InputError("Nesterov momentum needs a momentum above 0.")
    for key, choices in (("schedule", SCHEDULES), ("train", TRAINABLE), ("head_init", HEAD_INITS),
                         ("frozen_mode", FROZEN_MODES)):
        if settings[key] not in choices:
            raise InputError(f"unknown {key.replace('_', ' ')} {settings[key]!r}; use one of {', '.join(choices)}.")
