"""The data of a study: training sets per model and epoch, test sets and evaluation subsets
shared by every model.

Kunhardt, Deza & Poggio: "no two models were trained on the exact same set of fusion images,
but were evaluated on the same test images". So:

- the Fusion *training* pairing is re-drawn every epoch from a generator seeded per model,
  ``derive_seed(seed, "fusion-train", condition)``: different seeds and different conditions
  never share a pairing;
- the Fusion *test* images are drawn once per study from ``derive_seed(data_seed,
  "fusion-test", A, B)``: every model and every condition blending A with B (whatever its
  task or name) is attacked on the same pixels;
- an evaluation subset (``eval_samples``) is the same indices for every model and condition
  (``derive_seed(data_seed, "eval")``; test sets of equal size get equal indices); by default
  the full test set is used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..data.arrays import ArrayDataset, blend
from ..errors import InputError
from ..seeding import derive_seed
from .config import DATASETS, Condition


def base_dataset(name: str, split: str, root: str) -> ArrayDataset:
    """One split (``train``/``test``) of a base dataset as uint8 (N, 32, 32, 3) images.

    ``mnist`` (upscaled to 32 px, grey repeated over 3 channels) and ``cifar10`` come through
    torchvision's downloaders into ``root``; ``digits`` and ``textures`` are the offline
    stand-ins of :mod:`robustlab.data.standins`.
    """
    from ..data import standins, torchvision_sets

    train = split == "train"
    if name == "mnist":
        return torchvision_sets.mnist(Path(root).expanduser(), train=train, size=32)
    if name == "cifar10":
        return torchvision_sets.cifar10(Path(root).expanduser(), train=train)
    if name == "digits":
        return standins.digits_dataset(32, split=split)
    if name == "textures":
        return standins.textures_dataset(split=split)
    raise InputError(f"unknown dataset {name!r}; use one of {DATASETS}.")


class StudyData:
    """Base datasets loaded once per study (a cache), and the sets each model needs.

    Parameters
    ----------
    root : str
        Download folder of MNIST / CIFAR-10.
    data_seed : int
        Seed of what every model shares: the test Fusion pairing and the evaluation subset.
    """

    def __init__(self, root: str, data_seed: int = 0) -> None:
        self.root, self.data_seed = root, int(data_seed)
        self._cache: dict[tuple, ArrayDataset] = {}

    def base(self, name: str, split: str) -> ArrayDataset:
        key = (name, split)
        if key not in self._cache:
            self._cache[key] = base_dataset(name, split, self.root)
        return self._cache[key]

    def test_set(self, cond: Condition) -> ArrayDataset:
        """The condition's test set: identical for every model (and, for Fusion, the same images
        for every condition blending the same two datasets)."""
        if cond.dataset != "fusion":
            return self.base(cond.dataset, "test")
        key = ("fusion-test", *cond.data_key[1:])
        if key not in self._cache:
            a, b = cond.fusion
            fused = blend(self.base(a, "test"), self.base(b, "test"), cond.alpha, task=cond.task,
                          seed=derive_seed(self.data_seed, "fusion-test", a, b))
            self._cache[key] = fused.materialise(f"fusion-test({a},{b},{cond.alpha:g},{cond.task})")
        return self._cache[key]

    def train_sets(self, cond: Condition, seed: int) -> Callable[[int], ArrayDataset]:
        """``epoch -> training set`` of one model; Fusion pairs are re-drawn every epoch from a
        generator seeded by (seed, condition)."""
        if cond.dataset != "fusion":
            train = self.base(cond.dataset, "train")
            return lambda epoch: train
        a, b = cond.fusion
        fused = blend(self.base(a, "train"), self.base(b, "train"), cond.alpha, task=cond.task,
                      seed=derive_seed(seed, "fusion-train", cond.name))

        def train_for(epoch: int) -> ArrayDataset:
            fused.set_epoch(epoch)
            return fused.materialise()

        return train_for

    def evaluation_indices(self, n_test: int, eval_samples: int | None) -> np.ndarray | None:
        """Sorted test indices attacked at every evaluation (None: the full test set).

        A random subset, not the first ``eval_samples`` (test sets are often sorted by class),
        drawn from ``data_seed`` alone: the same for every model and condition.
        """
        if eval_samples is None or eval_samples >= n_test:
            return None
        order = np.random.default_rng(derive_seed(self.data_seed, "eval")).permutation(n_test)
        return np.sort(order[:eval_samples])


def condition_data(cond: Condition, data: StudyData, seed: int) -> tuple[Callable[[int], ArrayDataset], ArrayDataset]:
    """``(epoch -> training set, test set)`` of one model (condition, seed)."""
    return data.train_sets(cond, seed), data.test_set(cond)
