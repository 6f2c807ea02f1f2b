"""The corruption registry: each corruption declared once, with everything the rest of robustlab
derives from it.

A corruption's registration (:func:`register` on its kernel, or :func:`declare` naming the kernel
by module for lazy loading) is its only record: its name, group, the sets it belongs to
(``imagenet-c``, ``imagenet-c-bar``...), whether it is a benchmark or a held-out member, its
published baseline errors (AlexNet's mean error on ImageNet-C), whether it can be seeded
faithfully and its torch kernel. :func:`list_corruptions` and :func:`resolve_corruptions`, the
CLI and the documentation's table iterate the registry; the order is the order of registration
(the built-in ones first, in the ImageNet-C order), so a plugin's corruption is listed after them.
ImageNet-C's names, groups and published errors are declared from the plain table
:mod:`robustlab.suites`, where the metrics read their subsets and baseline (the metrics import no
registry); :func:`corruption_baseline` adds a plugin's declared baseline errors to the metrics'.

A *kernel* is ``kernel(image, severity, rs, profile) -> np.ndarray`` where ``image`` is a
validated uint8 HxWx3 array, ``severity`` an int in 1..5, ``rs`` a
:class:`numpy.random.RandomState` (draw from it in exactly the order the reference draws from
the global ``np.random``, so a seeded RandomState reproduces the reference), and ``profile`` one
of :data:`PROFILES`. It returns the final uint8 HxWx3 image (the kernel decides rounding vs
truncation, as its reference does). A *torch kernel* is described in
:mod:`robustlab.corruptions.torch.registry`.

A plugin adds one in one file::

    from robustlab.corruptions.registry import register

    @register("my_blur", group="blur", sets=("my-suite",))
    def my_blur(image, severity, rs, profile):
        ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import InputError, unknown_name
from ..registry import Registry

Kernel = Callable[[np.ndarray, int, np.random.RandomState, str], np.ndarray]

#: Parameter profiles. ``imagecorruptions``: the imagecorruptions 1.1.2 definitions (any size,
#: Robust Detection Benchmark; default). ``imagenet-c``: hendrycks' make_imagenet_c.py (224 px).
#: ``cifar``: make_cifar_c.py (32 px). ``tinyimagenet``: make_tinyimagenet_c.py (64 px).
PROFILES = ("imagecorruptions", "imagenet-c", "cifar", "tinyimagenet")

#: The set of ImageNet-C's 19 corruptions: the subsets ``all``, ``benchmark`` and ``holdout``
#: are its members (a plugin's corruption joins them only by declaring this set).
IMAGENET_C = "imagenet-c"

#: Subset names accepted by :func:`list_corruptions` besides groups and sets: alias -> rule.
SUBSET_ALIASES = {
    "all": "all",
    "common": "benchmark",
    "benchmark": "benchmark",
    "validation": "holdout",
    "holdout": "holdout",
    "registered": "registered",
}

#: Rounding rules of a torch kernel's uint8 output (see :mod:`robustlab.corruptions.torch.registry`).
ROUNDINGS = ("floor", "round")


def load_reference(ref: str, package: str = __package__) -> Any:
    """The object ``ref`` names: ``"module:attribute"``, the module relative to ``package`` when it
    starts with a dot (imported now)."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module, package), attr)


@dataclass(frozen=True)
class Corruption:
    """One registered corruption: its declaration.

    Attributes
    ----------
    name : str
    group : str
        ``noise``, ``blur``, ``weather``, ``digital``, ``c-bar`` or a plugin's own group.
    benchmark : bool
        A benchmark member of its sets (False: held out, e.g. ImageNet-C's speckle_noise).
    sets : tuple of str
        The named sets it belongs to (``imagenet-c``, ``imagenet-c-bar``, ``cifar10-c-bar``, a
        plugin's): each is a subset of :func:`list_corruptions`.
    baselines : mapping of str to float
        Published mean errors (fractions, over severities 1..5) by baseline name, e.g.
        ``{"alexnet": 0.886}``: ImageNet-C's come from :mod:`robustlab.suites`, and
        :func:`corruption_baseline` adds a plugin's to the metrics' built-in baseline.
    seedable : bool
        Seedable through a RandomState (False for impulse_noise, whose reference draws from
        scikit-image's own unseeded generator).
    kernel_ref, torch_ref : kernel, ``"module:function"`` string or None
        The numpy kernel and the torch kernel (None: numpy only), as given; a string is
        imported on first use (:attr:`kernel`), so naming and listing never imports kernels.
    torch_rounding : str
        How the torch kernel's output becomes uint8: ``floor`` or ``round``.
    """

    name: str
    group: str
    benchmark: bool = True
    kernel_ref: Kernel | str = field(default="", repr=False)
    seedable: bool = True
    sets: tuple[str, ...] = ()
    baselines: Mapping[str, float] = field(default_factory=dict)
    torch_ref: Callable | str | None = field(default=None, repr=False)
    torch_rounding: str = "floor"

    @property
    def kernel(self) -> Kernel:
        """The numpy kernel (its module is imported the first time)."""
        ref = self.kernel_ref
        return load_reference(ref) if isinstance(ref, str) else ref

    @property
    def has_torch_kernel(self) -> bool:
        return self.torch_ref is not None


#: Corruptions by name. The built-in ones are declared in :mod:`.catalog` and
#: :mod:`.cbar.catalog`; other packages register theirs on import, listed under the entry-point
#: group ``robustlab.corruptions`` (loaded on the first lookup or listing).
CORRUPTIONS: Registry[Corruption] = Registry("corruption", entry_points="robustlab.corruptions")


def declare(name: str, *, group: str, kernel: Kernel | str, benchmark: bool = True, sets: tuple[str, ...] = (),
            baselines: Mapping[str, float] | None = None, seedable: bool = True,
            torch_kernel: Callable | str | None = None, torch_rounding: str = "floor") -> Corruption:
    """Register the corruption ``name`` (see :class:`Corruption` for the fields); ``kernel`` and
    ``torch_kernel`` may name their function as ``"module:function"`` (a leading dot: relative to
    :mod:`robustlab.corruptions`), imported on first use."""
    CORRUPTIONS.check_free(name)  # a built-in name, or one taken, is refused as such first
    so_far = CORRUPTIONS.registered_so_far()  # no plugin import in the middle of a registration
    taken = [*SUBSET_ALIASES, *{c.group for c in so_far}, *{s for c in so_far for s in c.sets}]
    if not name or not isinstance(name, str) or "," in name or name in taken:
        raise InputError(f"corruption name {name!r} must be a non-empty string without commas and not a subset, "
                         f"group or set name ({', '.join(taken)}).")
    for kind, value in (("group", group), *(("set", s) for s in sets)):
        if not value or not isinstance(value, str) or "," in value or value in SUBSET_ALIASES or \
                any(c.name == value for c in so_far):
            raise InputError(f"corruption {kind} {value!r} of {name!r} must be a non-empty string without commas that "
                             "is neither a subset alias nor a corruption name.")
    if torch_rounding not in ROUNDINGS:
        raise InputError(f"torch_rounding must be one of {ROUNDINGS}; got {torch_rounding!r}.")
    return CORRUPTIONS.add(name, Corruption(name, group, bool(benchmark), kernel, bool(seedable), tuple(sets),
                                            MappingProxyType(dict(baselines or {})), torch_kernel, torch_rounding))


def register(name: str, *, group: str, benchmark: bool = True, sets: tuple[str, ...] = (),
             baselines: Mapping[str, float] | None = None, seedable: bool = True,
             torch_kernel: Callable | str | None = None, torch_rounding: str = "floor") -> Callable[[Kernel], Kernel]:
    """Decorator registering ``kernel`` as the corruption ``name`` (the arguments of :func:`declare`)."""

    def deco(kernel: Kernel) -> Kernel:
        declare(name, group=group, kernel=kernel, benchmark=benchmark, sets=sets, baselines=baselines,
                seedable=seedable, torch_kernel=torch_kernel, torch_rounding=torch_rounding)
        return kernel

    return deco


def get_corruption(name: str) -> Corruption:
    """The registered corruption called ``name`` (InputError with a suggestion otherwise)."""
    return CORRUPTIONS.get(name)


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise unknown_name("corruption profile", profile, PROFILES)
    return profile


def registered() -> list[Corruption]:
    """Every registered corruption, in registration order."""
    return [CORRUPTIONS.get(n) for n in CORRUPTIONS.names()]


def group_names() -> list[str]:
    """The groups of the registered corruptions, in order of first appearance."""
    return list(dict.fromkeys(c.group for c in registered()))


def set_names() -> list[str]:
    """The named sets of the registered corruptions, in order of first appearance."""
    return list(dict.fromkeys(s for c in registered() for s in c.sets))


def subsets() -> list[str]:
    """Every name :func:`list_corruptions` accepts."""
    groups = group_names()
    return [*SUBSET_ALIASES, *groups, *(s for s in set_names() if s not in groups)]


def list_corruptions(subset: str = "all") -> list[str]:
    """Names of the corruptions in ``subset``, in registration order (ImageNet-C's first).

    ``subset``: ``all`` (ImageNet-C's 19), ``common``/``benchmark`` (its 15), ``validation``/
    ``holdout`` (its 4), ``registered`` (every registered corruption), a group (``noise``,
    ``blur``, ``weather``, ``digital``, ``c-bar``: benchmark and held-out members alike, e.g.
    ``noise`` includes speckle_noise) or a set (``imagenet-c-bar``, ``cifar10-c-bar``).

    >>> list_corruptions("noise")
    ['gaussian_noise', 'shot_noise', 'impulse_noise', 'speckle_noise']
    """
    every = registered()
    rule = SUBSET_ALIASES.get(subset)
    if rule == "registered":
        return [c.name for c in every]
    if rule is not None:
        members = [c for c in every if IMAGENET_C in c.sets]
        return [c.name for c in members if rule == "all" or c.benchmark == (rule == "benchmark")]
    chosen = [c.name for c in every if c.group == subset or subset in c.sets]
    if not chosen:
        raise unknown_name("corruption subset", subset, subsets())
    return chosen


def resolve_corruptions(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    """Expand a user's selection: subset names and corruption names, comma-separated or listed.

    Duplicates are dropped; the order is the registration order (ImageNet-C's first).

    >>> resolve_corruptions("noise,fog")
    ['gaussian_noise', 'shot_noise', 'impulse_noise', 'fog', 'speckle_noise']
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    chosen: set[str] = set()
    named = set(subsets())
    for item in (i.strip() for i in items):
        if not item:
            continue
        if item in CORRUPTIONS:
            chosen.add(item)
        elif item in named:
            chosen.update(list_corruptions(item))
        else:
            raise unknown_name("corruption", item, [*CORRUPTIONS.names(), *named])
    if not chosen:
        raise InputError("no corruption selected: give names or a subset such as 'benchmark' or 'all'.")
    return [n for n in CORRUPTIONS.names() if n in chosen]


def published_errors(baseline: str) -> dict[str, float]:
    """``{corruption: mean error}`` that the registered corruptions declare for ``baseline``
    (e.g. ``"alexnet"``), in registration order."""
    return {c.name: float(c.baselines[baseline]) for c in registered() if baseline in c.baselines}


def corruption_baseline(name: str = "alexnet"):
    """The metrics' built-in corruption baseline ``name``
    (:func:`robustlab.metrics.get_corruption_baseline`: ImageNet-C's published errors) with the
    errors that other registered corruptions declare for it (a plugin's ``baselines={"alexnet": 0.8}``),
    so a benchmark computes CE for a plugin's corruption against its declared baseline error."""
    from ..metrics.corruption import get_corruption_baseline

    base = get_corruption_baseline(name)
    extra = {c: e for c, e in published_errors(name).items() if c not in base.errors}
    return replace(base, errors=MappingProxyType({**base.errors, **extra})) if extra else base


def corruption_table() -> str:
    """The registered corruptions as a Markdown table (name, group, sets, benchmark or held out,
    torch kernel), for the documentation."""
    lines = ["| name | group | sets | member | torch kernel |", "|---|---|---|---|---|"]
    for c in registered():
        lines.append(f"| `{c.name}` | {c.group} | {', '.join(c.sets) or '–'} | "
                     f"{'benchmark' if c.benchmark else 'held-out'} | {'yes' if c.has_torch_kernel else 'no'} |")
    return "\n".join(lines)
