"""Training recipes of the adversarial-robustness study, resolved per condition (architecture).

A recipe turns an architecture name into a :class:`Recipe`: the optimiser settings, the
number of epochs and the epochs at which the checkpoint is attacked.

- ``paper``: Kunhardt, Deza & Poggio (2021) as published. SGD, momentum 0.9, weight decay
  5e-4, batch 125, learning rate divided by 10 at 50% of training; LeNet and
  FullyConnectedNet: lr 0.01, 300 epochs, attacked at epochs 1, 10, 25, 50, 150, 300;
  ResNet50: lr 0.1, 125 epochs, attacked at 1, 10, 25, 50, 100, 125.
- ``quick``: the same optimiser for every architecture with lr 0.01, 20 epochs, attacked at
  the last epoch: a first look in minutes on a CPU, not the paper's numbers.

Both evaluate on the full test set unless the study sets ``eval_samples``. Any field can be
overridden for the whole study or for one condition (:func:`resolve_recipe`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..errors import InputError
from ..registry import Registry


@dataclass(frozen=True)
class Recipe:
    """How one model of a condition is trained and when it is attacked.

    Attributes
    ----------
    epochs : int
        Training epochs (passes over the training set).
    lr : float
        Initial SGD learning rate, divided by 10 after ``lr_drop_fraction`` of the epochs.
    checkpoints : tuple of int
        Epochs (1..epochs) after which the model is attacked over the eps grid.
    momentum, weight_decay : float
        SGD momentum and L2 weight decay.
    batch_size : int
        Images per SGD step.
    lr_drop_fraction : float
        Fraction of the epochs after which the learning rate drops tenfold (0.5: at 50%).
    """

    epochs: int
    lr: float
    checkpoints: tuple[int, ...]
    momentum: float = 0.9
    weight_decay: float = 5e-4
    batch_size: int = 125
    lr_drop_fraction: float = 0.5

    @property
    def drop_epoch(self) -> int:
        """The epoch after which the learning rate is divided by 10 (at least 1)."""
        return max(1, int(round(self.epochs * self.lr_drop_fraction)))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["checkpoints"] = list(self.checkpoints)
        return out


#: Recipe fields a study or a condition may override.
RECIPE_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Recipe))

#: ``name -> fn(architecture) -> Recipe``.
RECIPES: Registry[Callable[[str], Recipe]] = Registry("recipe")

#: The paper's attacked epochs per architecture family.
PAPER_CHECKPOINTS = {"small": (1, 10, 25, 50, 150, 300), "resnet50": (1, 10, 25, 50, 100, 125)}


@RECIPES.register("paper")
def paper_recipe(architecture: str) -> Recipe:
    """Kunhardt, Deza & Poggio's recipe for ``architecture`` (lenet, fc, resnet50)."""
    if architecture == "resnet50":
        return Recipe(epochs=125, lr=0.1, checkpoints=PAPER_CHECKPOINTS["resnet50"])
    if architecture in ("lenet", "fc"):
        return Recipe(epochs=300, lr=0.01, checkpoints=PAPER_CHECKPOINTS["small"])
    raise InputError(f"the paper recipe covers lenet, fc and resnet50; architecture {architecture!r} has no "
                     "published recipe: use recipe 'quick' or give epochs, lr and checkpoints.")


@RECIPES.register("quick")
def quick_recipe(architecture: str) -> Recipe:
    """20 epochs at lr 0.01, attacked at the last epoch, for every architecture."""
    return Recipe(epochs=20, lr=0.01, checkpoints=(20,))


def _number(key: str, value: Any, kind: type, where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise InputError(f"{where}: {key} must be a{'n integer' if kind is int else ' number'}; got {value!r}.")
    return kind(value)


def resolve_recipe(name: str, architecture: str, overrides: Mapping[str, Any] = {}, *,
                   where: str = "study") -> Recipe:
    """The recipe ``name`` for ``architecture`` with ``overrides`` applied, validated.

    When ``epochs`` is overridden but ``checkpoints`` is not, the recipe's checkpoints up to
    the new ``epochs`` are kept and the last epoch is added (a shortened paper run is still
    attacked at its end).

    Raises
    ------
    InputError
        Unknown recipe (the message lists the known ones), unknown override keys, or values
        out of range (epochs < 1, lr <= 0, checkpoints outside 1..epochs...).
    """
    base = RECIPES.get(name)(architecture)
    unknown = sorted(set(overrides) - set(RECIPE_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown recipe keys {unknown}; recipe keys are {list(RECIPE_KEYS)}.")
    values: dict[str, Any] = {}
    for key, value in overrides.items():
        if key == "checkpoints":
            if isinstance(value, (int, str)) or not hasattr(value, "__iter__"):
                raise InputError(f"{where}: checkpoints must be a list of epochs, e.g. [1, 10, 20]; got {value!r}.")
            values[key] = tuple(sorted({_number("checkpoint", v, int, where) for v in value}))
        elif key in ("epochs", "batch_size"):
            values[key] = _number(key, value, int, where)
        else:
            values[key] = _number(key, value, float, where)
    recipe = replace(base, **values)
    if "epochs" in values and "checkpoints" not in values:
        kept = {c for c in base.checkpoints if c <= recipe.epochs} | {recipe.epochs}
        recipe = replace(recipe, checkpoints=tuple(sorted(kept)))
    check_recipe(recipe, where)
    return recipe


def check_recipe(recipe: Recipe, where: str = "study") -> None:
    """InputError naming the first out-of-range field of ``recipe``."""
    if recipe.epochs < 1:
        raise InputError(f"{where}: epochs must be at least 1; got {recipe.epochs}.")
    if recipe.batch_size < 1:
        raise InputError(f"{where}: batch_size must be at least 1; got {recipe.batch_size}.")
    if not recipe.lr > 0:
        raise InputError(f"{where}: lr must be positive; got {recipe.lr}.")
    if not 0 <= recipe.momentum < 1:
        raise InputError(f"{where}: momentum must be in [0, 1); got {recipe.momentum}.")
    if not recipe.weight_decay >= 0:
        raise InputError(f"{where}: weight_decay must be >= 0; got {recipe.weight_decay}.")
    if not 0 < recipe.lr_drop_fraction <= 1:
        raise InputError(f"{where}: lr_drop_fraction must be in (0, 1]; got {recipe.lr_drop_fraction}.")
    if not recipe.checkpoints:
        raise InputError(f"{where}: checkpoints is empty; give at least one epoch to attack.")
    bad = [e for e in recipe.checkpoints if not 1 <= e <= recipe.epochs]
    if bad:
        raise InputError(f"{where}: checkpoints {bad} are outside 1..epochs ({recipe.epochs}).")
