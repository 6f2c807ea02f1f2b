"""Public entry points: :func:`corrupt` one image, :func:`corrupt_batch` many."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from ..data.images import check_image
from ..errors import InputError
from ..seeding import RngLike, as_random_state
from .checks import MIN_SIZE, check_severity
from .items import item_random_state, item_seed
from .registry import check_profile, get_corruption

__all__ = ["MIN_SIZE", "check_severity", "corrupt", "corrupt_batch", "corrupt_item", "is_torch_tensor", "item_seed",
           "torch_backend_by_default"]


def corrupt(image: np.ndarray, name: str, severity: int, *, rng: RngLike = None,
            profile: str = "imagecorruptions") -> np.ndarray:
    """Apply corruption ``name`` at ``severity`` (1..5) to one image.

    Parameters
    ----------
    image : np.ndarray
        uint8, shape HxW, HxWx1 or HxWx3, each side at least :data:`MIN_SIZE` pixels.
        Grey images are repeated to 3 channels.
    name : str
        A name from :func:`list_corruptions` (e.g. ``"glass_blur"``).
    severity : int
        1 (mildest) .. 5 (strongest).
    rng : None, int, numpy Generator or numpy RandomState
        Source of randomness. ``np.random.RandomState(s)`` reproduces imagecorruptions 1.1.2
        run after ``np.random.seed(s)`` (faithful mode). An int seeds a fresh RandomState.
    profile : str
        ``imagecorruptions`` (default, any size), ``imagenet-c`` (hendrycks 224 px tables),
        ``cifar`` (32 px tables) or ``tinyimagenet`` (64 px tables).

    Returns
    -------
    np.ndarray
        uint8 HxWx3, same height and width as the input.
    """
    corruption = get_corruption(name)
    severity = check_severity(severity)
    profile = check_profile(profile)
    img = check_image(image, name="image", min_size=MIN_SIZE)
    rs = as_random_state(rng)
    out = corruption.kernel(img, severity, rs, profile)
    if out.dtype != np.uint8 or out.shape != img.shape:  # a kernel bug, never user input
        raise AssertionError(f"{name} kernel returned {out.dtype} {out.shape} for {img.shape}")
    return out


def corrupt_item(image: np.ndarray, name: str, severity: int, *, seed: int, item: object,
                 profile: str = "imagecorruptions") -> np.ndarray:
    """:func:`corrupt` one item of a dataset with its own random state
    :func:`~robustlab.corruptions.items.item_random_state` (uint8 HxWx3 in and out)."""
    return corrupt(image, name, severity, rng=item_random_state(seed, item, name, severity), profile=profile)


def is_torch_tensor(value: object) -> bool:
    """True for a torch tensor, without importing torch (a tensor implies torch is loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def torch_backend_by_default(device: object) -> bool:
    """Whether work on ``device`` corrupts with the torch backend unless told otherwise: yes on a
    GPU (``cuda``, ``cuda:N``, ``mps``, a torch.device of those types, or ``auto``/None when
    CUDA is present), no on the CPU, where the numpy kernels are faster and are the definition."""
    text = "auto" if device is None else str(device)
    if text == "auto":
        import torch

        return bool(torch.cuda.is_available())
    return text.split(":")[0] in ("cuda", "mps")


def corrupt_batch(images, name: str, severity, *, seed: int = 0, ids: Sequence[object] | None = None,
                  profile: str = "imagecorruptions"):
    """Corrupt many images, each with its own seed :func:`item_seed` ``(seed, id, name, severity)``.

    ``ids`` identify the images (file names, sample indices); by default their positions. The
    result for an image depends only on (seed, id, name, severity, profile), not on batch order
    or size, so shards and workers reproduce the same dataset.

    Parameters
    ----------
    images : iterable of np.ndarray, np.ndarray, or torch.Tensor
        numpy: uint8 HxW / HxWx3 images (an NHWC array or a list; sizes may differ); the
        numpy kernels, the definition. torch: a uint8 (N, H, W, 3) or float (N, 3, H, W)
        [0, 1] batch; corrupted on its device by the torch backend
        (:func:`robustlab.corruptions.torch.corrupt_tensor`).
    name : str
        A corruption name.
    severity : int
        1..5. With a tensor batch, also a sequence or 1-D tensor of one severity per image.
    seed, ids, profile
        As above; ``profile`` as in :func:`corrupt`.

    Returns
    -------
    list of np.ndarray or torch.Tensor
        numpy input: a list of uint8 HxWx3 arrays. Tensor input: a tensor of the input's
        shape, dtype, layout and device.
    """
    if is_torch_tensor(images):
        from .torch.batch import corrupt_tensor

        return corrupt_tensor(images, name, severity, seed=seed, ids=ids, profile=profile)
    imgs = list(images)
    ids = list(range(len(imgs))) if ids is None else list(ids)
    if len(ids) != len(imgs):
        raise InputError(f"got {len(imgs)} images but {len(ids)} ids; give one id per image.")
    return [corrupt_item(img, name, severity, seed=seed, item=i, profile=profile) for img, i in zip(imgs, ids)]
