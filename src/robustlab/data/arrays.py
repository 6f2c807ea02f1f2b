"""In-memory image datasets (uint8 NHWC arrays + labels) and the Fusion blend of two of them.

Images are stored as uint8 N x H x W x 3 (the edge convention) and served to models as float
C x H x W tensors in [0, 1]. :func:`blend` builds the Fusion dataset of Kunhardt, Deza and
Poggio: F = alpha * A + (1 - alpha) * B, the pairing of A's and B's images re-drawn every epoch
from (seed, epoch), with the label of A (e.g. digit) or B (e.g. object) as the task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import InputError
from ..seeding import derive_seed


@dataclass
class ArrayDataset(torch.utils.data.Dataset):
    """uint8 (N, H, W, 3) images with int64 (N,) labels; items are (float CHW in [0,1], label)."""

    images: np.ndarray
    labels: np.ndarray
    name: str = "arrays"

    def __post_init__(self) -> None:
        imgs, labels = np.asarray(self.images), np.asarray(self.labels)
        if imgs.dtype != np.uint8 or imgs.ndim != 4 or imgs.shape[3] != 3:
            raise InputError(f"{self.name}: images must be uint8 (N, H, W, 3); got {imgs.dtype} {imgs.shape}.")
        if labels.ndim != 1 or labels.shape[0] != imgs.shape[0]:
            raise InputError(f"{self.name}: need one label per image; got {labels.shape} labels for {imgs.shape[0]} images.")
        self.images, self.labels = imgs, labels.astype(np.int64)

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return to_tensor(self.images[i]), int(self.labels[i])

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """All images as one float (N, 3, H, W) tensor in [0, 1] and labels (N,)."""
        return torch.from_numpy(self.images).permute(0, 3, 1, 2).float().div_(255), torch.from_numpy(self.labels)


def to_tensor(image: np.ndarray) -> torch.Tensor:
    """uint8 HxWx3 -> float 3xHxW in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float().div_(255)


def grey_to_rgb(images: np.ndarray, size: int | None = None) -> np.ndarray:
    """uint8 (N, H, W) grey images -> (N, size, size, 3), bilinear resize (MNIST 28 -> 32 px)."""
    imgs = np.asarray(images)
    if imgs.dtype != np.uint8 or imgs.ndim != 3:
        raise InputError(f"expected uint8 (N, H, W) grey images; got {imgs.dtype} {imgs.shape}.")
    if size is not None and imgs.shape[1:] != (size, size):
        t = torch.from_numpy(imgs).float().unsqueeze(1)
        t = torch.nn.functional.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)
        imgs = t.round().clamp(0, 255).to(torch.uint8).squeeze(1).numpy()
    return np.repeat(imgs[..., None], 3, axis=3)


class BlendedDataset(torch.utils.data.Dataset):
    """F = alpha * A + (1 - alpha) * B, re-paired every epoch (call :meth:`set_epoch`).

    Item i of epoch e blends A[i] with B[perm_e[i]], where perm_e is a permutation of B's
    indices drawn from ``derive_seed(seed, 'blend', e)`` (any order, any worker, same data).
    When B is larger than A, a random subset of B is used each epoch; when smaller, B's indices
    repeat. ``task`` picks the label: ``"a"`` (e.g. the digit) or ``"b"`` (e.g. the object).
    """

    def __init__(self, a: ArrayDataset, b: ArrayDataset, alpha: float = 0.5, *, task: str = "a",
                 seed: int = 0) -> None:
        if a.images.shape[1:] != b.images.shape[1:]:
            raise InputError(f"cannot blend {a.name} images of shape {a.images.shape[1:]} with {b.name} images of "
                             f"shape {b.images.shape[1:]}: resize one set first (e.g. grey_to_rgb(mnist, 32)).")
        if not 0.0 <= float(alpha) <= 1.0:
            raise InputError(f"alpha must be in [0, 1]; got {alpha}.")
        if task not in ("a", "b"):
            raise InputError(f"task must be 'a' (labels of {a.name}) or 'b' (labels of {b.name}); got {task!r}.")
        self.a, self.b, self.alpha, self.task, self.seed = a, b, float(alpha), task, int(seed)
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        """Draw the pairing of A with B for ``epoch``."""
        rng = np.random.default_rng(derive_seed(self.seed, "blend", int(epoch)))
        n_a, n_b = len(self.a), len(self.b)
        reps = -(-n_a // n_b)
        self.epoch = int(epoch)
        self.pairing = np.concatenate([rng.permutation(n_b) for _ in range(reps)])[:n_a]

    def __len__(self) -> int:
        return len(self.a)

    def image(self, i: int) -> np.ndarray:
        """The blended uint8 HxWx3 image of item ``i`` (rounded to nearest)."""
        mix = self.alpha * self.a.images[i].astype(np.float32) + (1 - self.alpha) * self.b.images[self.pairing[i]]
        return np.clip(np.rint(mix), 0, 255).astype(np.uint8)

    def label(self, i: int) -> int:
        return int(self.a.labels[i] if self.task == "a" else self.b.labels[self.pairing[i]])

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return to_tensor(self.image(i)), self.label(i)

    def materialise(self, name: str | None = None, *, chunk: int = 4096) -> ArrayDataset:
        """This epoch's blended images and labels as an :class:`ArrayDataset`.

        The same pixels as :meth:`image` item by item, computed ``chunk`` images at a time
        (float32 scratch of ``chunk`` x H x W x 3).
        """
        n = len(self)
        imgs = np.empty((n, *self.a.images.shape[1:]), np.uint8)
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            mix = (self.alpha * self.a.images[start:stop].astype(np.float32)
                   + (1 - self.alpha) * self.b.images[self.pairing[start:stop]])
            imgs[start:stop] = np.clip(np.rint(mix), 0, 255).astype(np.uint8)
        labels = self.a.labels if self.task == "a" else self.b.labels[self.pairing]
        return ArrayDataset(imgs, np.array(labels), name or f"blend({self.a.name},{self.b.name},{self.alpha:g},{self.task})")


def blend(dataset_a: ArrayDataset, dataset_b: ArrayDataset, alpha: float = 0.5, *, task: str = "a",
          seed: int = 0) -> BlendedDataset:
    """The Fusion dataset of two image sets of the same size: see :class:`BlendedDataset`."""
    return BlendedDataset(dataset_a, dataset_b, alpha, task=task, seed=seed)


@dataclass(frozen=True, eq=False)
class ArrayDatasetSamples:
    """An :class:`ArrayDataset` as an engine sample set (``ids``, ``labels``, ``read(i)``, ``subset``).

    Sample ids are ``"<name>/<index>"`` so stored predictions stay traceable to the dataset row.
    """

    dataset: ArrayDataset
    start: int = 0
    stop: int | None = None

    def _stop(self) -> int:
        return len(self.dataset) if self.stop is None else min(self.stop, len(self.dataset))

    def __len__(self) -> int:
        return max(0, self._stop() - self.start)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(f"{self.dataset.name}/{i}" for i in range(self.start, self._stop()))

    @property
    def labels(self) -> np.ndarray:
        return self.dataset.labels[self.start:self._stop()]

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(str(c) for c in range(int(self.dataset.labels.max()) + 1))

    def id(self, i: int) -> str:
        return f"{self.dataset.name}/{self.start + i}"

    def read(self, i: int) -> np.ndarray:
        return self.dataset.images[self.start + i]

    def fingerprint(self, mode: str = "stat") -> str:
        """A hash of the rows' pixels and labels (in-memory data has no files to stat)."""
        from .fingerprint import array_fingerprint

        return array_fingerprint(self.dataset.images[self.start:self._stop()],
                                 extra=(self.dataset.name, self.start, self.labels.tolist()))

    def subset(self, start: int, stop: int) -> "ArrayDatasetSamples":
        return ArrayDatasetSamples(self.dataset, self.start + start, min(self.start + stop, self._stop()))
