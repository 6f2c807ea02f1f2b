"""The corruption registry: name -> (group, benchmark flag, kernel).

A *kernel* is ``kernel(image, severity, rs, profile) -> np.ndarray`` where ``image`` is a
validated uint8 HxWx3 array, ``severity`` an int in 1..5, ``rs`` a
:class:`numpy.random.RandomState` (draw from it in exactly the order the reference draws from
the global ``np.random``, so a seeded RandomState reproduces the reference), and ``profile`` one
of :data:`PROFILES`. It returns the final uint8 HxWx3 image (the kernel decides rounding vs
truncation, as its reference does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, unknown_name
from ..registry import Registry
from .cbar.tables import CBAR_ORDER, SETS as CBAR_SETS

Kernel = Callable[[np.ndarray, int, np.random.RandomState, str], np.ndarray]

#: Parameter profiles. ``imagecorruptions``: the imagecorruptions 1.1.2 definitions (any size,
#: Robust Detection Benchmark; default). ``imagenet-c``: hendrycks' make_imagenet_c.py (224 px).
#: ``cifar``: make_cifar_c.py (32 px). ``tinyimagenet``: make_tinyimagenet_c.py (64 px).
PROFILES = ("imagecorruptions", "imagenet-c", "cifar", "tinyimagenet")

GROUPS = ("noise", "blur", "weather", "digital")

#: Subset names accepted by :func:`list_corruptions` (besides the group names).
SUBSET_ALIASES = {
    "all": "all",
    "common": "benchmark",
    "benchmark": "benchmark",
    "validation": "holdout",
    "holdout": "holdout",
}


@dataclass(frozen=True)
class Corruption:
    """One registered corruption."""

    name: str
    group: str
    benchmark: bool
    kernel: Kernel
    #: Seedable through a RandomState (False for impulse_noise, whose reference draws from
    #: scikit-image's own unseeded generator).
    seedable: bool = True


CORRUPTIONS: Registry[Corruption] = Registry("corruption")

# The canonical order (ImageNet-C paper: the 15 benchmark corruptions by group, then the 4
# held-out ones). list_corruptions returns names in this order whatever the import order.
CANONICAL_ORDER = (
    "gaussian_noise", "shot_noise", "impulse_noise",
    "defocus_blur", "glass_blur", "motion_blur", "zoom_blur",
    "snow", "frost", "fog",
    "brightness", "contrast", "elastic_transform", "pixelate", "jpeg_compression",
    "speckle_noise", "gaussian_blur", "spatter", "saturate",
)


#: The built-in corruptions: name -> (group, in the benchmark set, kernel module). Names, groups
#: and subsets are known without importing a kernel (each kernel module, with its compiled
#: helpers, is imported when one of its corruptions is first looked up).
BUILTIN: dict[str, tuple[str, bool, str]] = {
    "gaussian_noise": ("noise", True, "noise"), "shot_noise": ("noise", True, "noise"),
    "impulse_noise": ("noise", True, "noise"), "speckle_noise": ("noise", False, "noise"),
    "defocus_blur": ("blur", True, "blur"), "glass_blur": ("blur", True, "blur"),
    "motion_blur": ("blur", True, "blur"), "zoom_blur": ("blur", True, "blur"),
    "gaussian_blur": ("blur", False, "blur"),
    "snow": ("weather", True, "weather"), "frost": ("weather", True, "weather"),
    "fog": ("weather", True, "weather"), "spatter": ("weather", False, "weather"),
    "brightness": ("digital", True, "digital"), "contrast": ("digital", True, "digital"),
    "elastic_transform": ("digital", True, "digital"), "pixelate": ("digital", True, "digital"),
    "jpeg_compression": ("digital", True, "digital"), "saturate": ("digital", False, "digital"),
}
for _name, (_group, _benchmark, _module) in BUILTIN.items():
    CORRUPTIONS.add_lazy(_name, f"{__package__}.{_module}")

#: Groups outside ImageNet-C's 19, each in its own order; never part of ``all``, ``benchmark`` or
#: ``holdout``. ``c-bar``: ImageNet-C-bar and CIFAR-10-C-bar (:mod:`.cbar`); their released sets
#: (``imagenet-c-bar``, ``cifar10-c-bar``) are subsets too.
EXTRA_GROUPS: dict[str, tuple[str, ...]] = {"c-bar": CBAR_ORDER}
EXTRA_SUBSETS: dict[str, tuple[str, ...]] = {name: tuple(table) for name, table in CBAR_SETS.items()}
for _name in CBAR_ORDER:
    CORRUPTIONS.add_lazy(_name, f"{__package__}.cbar.kernels")


def corruption_group(name: str) -> tuple[str, bool]:
    """``(group, in the benchmark set)`` of a corruption, without importing its kernel when built in."""
    if name in BUILTIN:
        return BUILTIN[name][:2]
    if name in CBAR_ORDER:
        return "c-bar", True
    c = CORRUPTIONS.get(name)
    return c.group, c.benchmark


def register(name: str, *, group: str, benchmark: bool, seedable: bool = True) -> Callable[[Kernel], Kernel]:
    """Decorator registering ``kernel`` under ``name``."""
    if group not in GROUPS and group not in EXTRA_GROUPS:
        raise InputError(f"unknown corruption group {group!r}; use one of {GROUPS + tuple(EXTRA_GROUPS)}.")
    if name in BUILTIN and BUILTIN[name][:2] != (group, benchmark):
        raise InputError(f"corruption {name!r} is registered as ({group}, benchmark={benchmark}) but the built-in "
                         f"table says {BUILTIN[name][:2]}; keep registry.BUILTIN in step with the kernel.")

    def deco(kernel: Kernel) -> Kernel:
        CORRUPTIONS.add(name, Corruption(name, group, benchmark, kernel, seedable))
        return kernel

    return deco


def get_corruption(name: str) -> Corruption:
    """The registered corruption called ``name`` (InputError with a suggestion otherwise)."""
    return CORRUPTIONS.get(name)


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise unknown_name("corruption profile", profile, PROFILES)
    return profile


def list_corruptions(subset: str = "all") -> list[str]:
    """Names of the corruptions in ``subset``, in the ImageNet-C order.

    ``subset``: ``all`` (19), ``common``/``benchmark`` (15), ``validation``/``holdout`` (4), or
    a group: ``noise``, ``blur``, ``weather``, ``digital`` (benchmark and held-out members of
    that group, e.g. ``noise`` includes speckle_noise).
    """
    known = [n for n in CANONICAL_ORDER if n in CORRUPTIONS]
    kind = SUBSET_ALIASES.get(subset)
    if kind == "all":
        return known
    if kind == "benchmark":
        return [n for n in known if corruption_group(n)[1]]
    if kind == "holdout":
        return [n for n in known if not corruption_group(n)[1]]
    if subset in GROUPS:
        return [n for n in known if corruption_group(n)[0] == subset]
    extra = {**EXTRA_GROUPS, **EXTRA_SUBSETS}
    if subset in extra:
        order = EXTRA_GROUPS[corruption_group(extra[subset][0])[0]]
        return [n for n in order if n in extra[subset] and n in CORRUPTIONS]
    raise unknown_name("corruption subset", subset, [*SUBSET_ALIASES, *GROUPS, *extra])


def resolve_corruptions(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    """Expand a user's selection: subset names and corruption names, comma-separated or listed.

    ``"noise,fog"`` -> ``['gaussian_noise', 'shot_noise', 'impulse_noise', 'speckle_noise', 'fog']``.
    Duplicates are dropped, order follows the ImageNet-C order.
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    chosen: set[str] = set()
    for item in (i.strip() for i in items):
        if not item:
            continue
        if item in SUBSET_ALIASES or item in GROUPS or item in EXTRA_GROUPS or item in EXTRA_SUBSETS:
            chosen.update(list_corruptions(item))
        elif item in BUILTIN or item in CBAR_ORDER:
            chosen.add(item)
        else:
            chosen.add(get_corruption(item).name)
    if not chosen:
        raise InputError("no corruption selected: give names or a subset such as 'benchmark' or 'all'.")
    return [n for n in CANONICAL_ORDER + CBAR_ORDER if n in chosen]
