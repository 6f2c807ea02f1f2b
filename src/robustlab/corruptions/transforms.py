"""``RandomCorruption``: corruption augmentation for training, one random choice per image.

>>> import numpy as np
>>> from robustlab.corruptions.transforms import RandomCorruption, PAPER_NOISE_AUGMENTATION
>>> augment = RandomCorruption(PAPER_NOISE_AUGMENTATION, severities="1-5", seed=0)
>>> images = np.zeros((4, 32, 32, 3), np.uint8)                  # uint8 NHWC (or a list)
>>> augment(images, ids=[(0, i) for i in range(4)]).shape        # ids: (epoch, index)
(4, 32, 32, 3)

Each image gets exactly one corruption (with probability ``p``; else it is returned unchanged)
and one severity, both drawn from a seed derived from ``(seed, id)``; the corruption itself is
then applied with the seed :func:`~robustlab.corruptions.items.item_seed` ``(seed, id, name, severity)``, as
:func:`~robustlab.corruptions.corrupt_batch` does. So an image's augmentation depends only on
the seed and its id, never on the batch it lands in, the worker that draws it or the order:
pass ids that include the epoch (``(epoch, index)``) to get fresh draws every epoch.

The numpy path takes uint8 HxWx3 images (one array, an NHWC array or a list of arrays of any
sizes) and returns the same form. The torch path takes a tensor batch as
:func:`~robustlab.corruptions.corrupt_batch` does (uint8 (N, H, W, 3) or float (N, 3, H, W) in
[0, 1], on any device) and corrupts it on its device with the torch backend, one call per
corruption drawn: the same choices and seeds as the numpy path (``choose(id)`` decides), so
the two paths differ only as the backends do. In a torchvision ``transforms.v2`` pipeline use
:class:`robustlab.corruptions.torch.augment.TorchvisionRandomCorruption`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..seeding import derive_seed
from .api import corrupt_item, is_torch_tensor
from .checks import parse_severities
from .registry import check_profile, get_corruption, resolve_corruptions

#: ImageNet-Vid-Robust's noise augmentation (Shankar et al., paper 000): every training image
#: gets exactly one of these six ImageNet-C corruptions.
PAPER_NOISE_AUGMENTATION = ("gaussian_noise", "gaussian_blur", "shot_noise", "contrast", "impulse_noise",
                            "jpeg_compression")

#: Named schemes accepted wherever a corruption list is (``--augment paper-noise``).
AUGMENTATION_SCHEMES = {"paper-noise": PAPER_NOISE_AUGMENTATION}


def resolve_augmentation(spec: str | Sequence[str]) -> tuple[str, ...]:
    """Corruption names of an augmentation spec: a scheme (``paper-noise``), a subset (``noise``,
    ``benchmark``, ``all``) or names, comma-separated or as a list."""
    if isinstance(spec, str) and spec in AUGMENTATION_SCHEMES:
        return AUGMENTATION_SCHEMES[spec]
    names = tuple(resolve_corruptions(spec))
    if not names:
        raise InputError(f"augmentation {spec!r} names no corruption; give a scheme "
                         f"({', '.join(AUGMENTATION_SCHEMES)}), a subset or corruption names.")
    return names


@dataclass(frozen=True)
class RandomCorruption:
    """Apply one randomly chosen corruption and severity per image (seeded by image id).

    Parameters
    ----------
    corruptions : str or sequence of str
        A scheme (``"paper-noise"``: :data:`PAPER_NOISE_AUGMENTATION`), a subset (``"noise"``,
        ``"all"``) or names.
    severities : int, sequence or str
        Severities to draw from, uniformly: ``"1-5"``, ``"2-3,5"``, ``3`` or ``[1, 3]`` (see
        :func:`robustlab.corruptions.parse_severities`; a sequence lists severities, it is not a range).
    p : float
        Probability that an image is corrupted at all (1.0: every image, as in paper 000).
    seed : int
        Base seed of every draw.
    profile : str
        Corruption parameter profile (see :data:`robustlab.corruptions.PROFILES`).
    """

    corruptions: tuple[str, ...] | str = PAPER_NOISE_AUGMENTATION
    severities: tuple[int, ...] | str | int = "1-5"
    p: float = 1.0
    seed: int = 0
    profile: str = "imagecorruptions"
    _names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _severities: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = resolve_augmentation(self.corruptions)
        for n in names:
            get_corruption(n)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_severities", parse_severities(self.severities))
        check_profile(self.profile)
        if not 0.0 <= float(self.p) <= 1.0:
            raise InputError(f"p must be a probability in [0, 1]; got {self.p!r}.")

    @property
    def names(self) -> tuple[str, ...]:
        """The corruption names drawn from."""
        return self._names

    @property
    def severity_choices(self) -> tuple[int, ...]:
        """The severities drawn from."""
        return self._severities

    def choose(self, image_id: object) -> tuple[str, int] | None:
        """(corruption, severity) for the image ``image_id``, or None when it stays clean."""
        rs = np.random.RandomState(derive_seed(self.seed, image_id, "RandomCorruption"))
        apply, which, severity = rs.random_sample(), rs.randint(len(self._names)), rs.randint(len(self._severities))
        if apply >= self.p:
            return None
        return self._names[which], self._severities[severity]

    def apply_one(self, image: np.ndarray, image_id: object) -> np.ndarray:
        """The augmented copy of one uint8 HxWx3 image (the input itself when it stays clean)."""
        choice = self.choose(image_id)
        if choice is None:
            return image
        name, severity = choice
        return corrupt_item(image, name, severity, seed=self.seed, item=image_id, profile=self.profile)

    def apply_tensor(self, images, ids: Sequence[object] | None = None):
        """The torch path: augment a uint8 (N, H, W, 3) or float (N, 3, H, W) [0, 1] batch on its device.

        Image i gets ``choose(ids[i])`` (unchanged when None) and is corrupted with the seed
        ``item_seed(seed, ids[i], name, severity)``, as :meth:`apply_one` does; the images
        that drew the same corruption go through the torch backend together. Returns a new
        tensor of the input's shape, dtype, layout and device.
        """
        import torch

        from .torch.batch import check_tensor, corrupt_tensor

        check_tensor(images)
        n = images.shape[0]
        keys = list(range(n)) if ids is None else list(ids)
        if len(keys) != n:
            raise InputError(f"got {n} images but {len(keys)} ids; give one id per image.")
        choices = [self.choose(key) for key in keys]
        by_name: dict[str, list[int]] = {}
        for i, choice in enumerate(choices):
            if choice is not None:
                by_name.setdefault(choice[0], []).append(i)
        out = images.clone()
        for name, members in by_name.items():
            index = torch.as_tensor(members, device=images.device)
            out[index] = corrupt_tensor(images.index_select(0, index), name, [choices[i][1] for i in members],
                                        seed=self.seed, ids=[keys[i] for i in members], profile=self.profile)
        return out

    def __call__(self, images, ids: Sequence[object] | None = None):
        """Augment one image (HxWx3), an NHWC batch or a list of images (numpy), or a tensor
        batch (torch: see :meth:`apply_tensor`); ``ids`` identify them (default: their
        positions, which repeats the same draws every call: pass real ids)."""
        if is_torch_tensor(images):
            return self.apply_tensor(images, ids)
        if isinstance(images, np.ndarray) and images.ndim == 3:
            return self.apply_one(images, 0 if ids is None else ids[0] if isinstance(ids, (list, tuple)) else ids)
        stacked = isinstance(images, np.ndarray)
        items = list(images)
        keys = list(range(len(items))) if ids is None else list(ids)
        if len(keys) != len(items):
            raise InputError(f"got {len(items)} images but {len(keys)} ids; give one id per image.")
        out = [self.apply_one(img, key) for img, key in zip(items, keys)]
        return np.stack(out) if stacked else out
