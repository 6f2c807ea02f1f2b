"""The perturbation registry: each perturbation sequence declared once (ImageNet-P's 10 test and 4
validation ones in :mod:`.catalog`, and any a plugin registers).

A sequence is ``generate(image, rng, setting, difficulty) -> uint8 (T, H, W, 3)``. *Noise*
sequences are not temporal: frame 0 is the clean image and frames 1..T-1 independent noise
draws, so metrics compare every frame with frame 0. *Temporal* sequences change a parameter
frame by frame, so metrics compare consecutive frames.

A registration is the perturbation's only record: noise or temporal, test or validation, its
frame counts, AlexNet's published flip probability and top-5 distance (the denominators of FR
and T5D) and its generator (a function, or ``"module:function"`` imported on first use, so
naming perturbations never loads the generators). The subsets and the documentation's table
derive from it; ImageNet-P's names and published values come from :mod:`robustlab.suites`, which
the metrics read too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from ..errors import InputError, unknown_name
from ..registry import Registry

#: ``imagenet``: Resize(256) then 224 px frames (make_imagenet_p.py). ``cifar``: 32 px images
#: as they are (make_cifar_p.py).
SETTINGS = ("imagenet", "cifar")
#: Subset names of :func:`list_perturbations`.
SUBSETS = ("all", "test", "benchmark", "validation", "holdout", "noise", "temporal")

Generator = Callable[[np.ndarray, np.random.Generator, str, int], np.ndarray]


@dataclass(frozen=True)
class Perturbation:
    """One registered perturbation sequence.

    Attributes
    ----------
    name : str
    noise : bool
        Frames compared with frame 0 (noise) or with the previous frame (temporal).
    test : bool
        One of the test perturbations (else validation).
    frames : mapping
        Setting -> number of frames.
    baselines : mapping
        Baseline name -> (flip probability, top-5 distance) published for it (AlexNet on
        ImageNet-P: ``{"alexnet": (0.2365, 4.77)}``).
    generate_ref : generator or ``"module:function"``
    """

    name: str
    noise: bool
    test: bool
    frames: Mapping[str, int]
    generate_ref: Generator | str = field(repr=False)
    baselines: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def generate(self) -> Generator:
        """The generator (its module is imported the first time)."""
        ref = self.generate_ref
        if not isinstance(ref, str):
            return ref
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module, __package__), attr)


#: Perturbations by name; other packages register theirs on import, listed under the entry-point
#: group ``robustlab.perturbations``.
PERTURBATIONS: Registry[Perturbation] = Registry("perturbation", entry_points="robustlab.perturbations")


def declare(name: str, *, noise: bool, generate: Generator | str, test: bool = True,
            frames: Mapping[str, int] | None = None,
            baselines: Mapping[str, tuple[float, float]] | None = None) -> Perturbation:
    """Register the perturbation ``name``: 31 frames in both settings unless ``frames`` says
    otherwise; ``generate`` may be ``"module:function"`` (a leading dot: relative to this package)."""
    if not name or not isinstance(name, str) or "," in name or name in SUBSETS:
        raise InputError(f"perturbation name {name!r} must be a non-empty string without commas and not a subset "
                         f"name ({', '.join(SUBSETS)}).")
    counts = {"imagenet": 31, "cifar": 31, **(frames or {})}
    return PERTURBATIONS.add(name, Perturbation(name, bool(noise), bool(test), MappingProxyType(counts), generate,
                                                MappingProxyType(dict(baselines or {}))))


def register(name: str, *, noise: bool, test: bool = True, frames: Mapping[str, int] | None = None,
             baselines: Mapping[str, tuple[float, float]] | None = None) -> Callable[[Generator], Generator]:
    """Decorator: register ``generate`` as the perturbation ``name`` (the arguments of :func:`declare`)."""

    def deco(fn: Generator) -> Generator:
        declare(name, noise=noise, generate=fn, test=test, frames=frames, baselines=baselines)
        return fn

    return deco


def get_perturbation(name: str) -> Perturbation:
    return PERTURBATIONS.get(name)


def registered() -> list[Perturbation]:
    """Every registered perturbation, in registration order (ImageNet-P's first)."""
    return [PERTURBATIONS.get(n) for n in PERTURBATIONS.names()]


def list_perturbations(subset: str = "all") -> list[str]:
    """``all``, ``test``/``benchmark``, ``validation``/``holdout``, ``noise`` or ``temporal``; in
    the order of registration (ImageNet-P's test ones, then its validation ones).

    >>> list_perturbations("validation")
    ['speckle_noise', 'gaussian_blur', 'spatter', 'shear']
    """
    every = registered()
    if subset == "all":
        return [p.name for p in every]
    if subset in ("test", "benchmark"):
        return [p.name for p in every if p.test]
    if subset in ("validation", "holdout"):
        return [p.name for p in every if not p.test]
    if subset in ("noise", "temporal"):
        return [p.name for p in every if p.noise == (subset == "noise")]
    raise unknown_name("perturbation subset", subset, SUBSETS)


def published_values(baseline: str) -> tuple[dict[str, float], dict[str, float]]:
    """``({perturbation: flip probability}, {perturbation: top-5 distance})`` that the registered
    perturbations declare for ``baseline`` (e.g. ``"alexnet"``)."""
    values = {p.name: p.baselines[baseline] for p in registered() if baseline in p.baselines}
    return {n: float(v[0]) for n, v in values.items()}, {n: float(v[1]) for n, v in values.items()}


def stability_baseline(name: str = "alexnet"):
    """The metrics' built-in ImageNet-P baseline ``name``
    (:func:`robustlab.metrics.get_stability_baseline`: the published values) with the flip
    probabilities and top-5 distances that other registered perturbations declare for it (a plugin's
    ``baselines={"alexnet": (0.1, 2.0)}``)."""
    from ..metrics.stability import get_stability_baseline

    base = get_stability_baseline(name)
    flips, distances = published_values(name)
    extra = [p for p in flips if p not in base.flip_probability]
    if not extra:
        return base
    return replace(base, flip_probability=MappingProxyType({**base.flip_probability, **{p: flips[p] for p in extra}}),
                   top5_distance=MappingProxyType({**base.top5_distance, **{p: distances[p] for p in extra}}))


def frame_count(name: str, setting: str = "imagenet") -> int:
    """Frames of a sequence: 31, except translate (41 ImageNet, 16 CIFAR) and CIFAR motion_blur (21)."""
    if setting not in SETTINGS:
        raise unknown_name("perturbation setting", setting, SETTINGS)
    return get_perturbation(name).frames[setting]


def perturbation_table() -> str:
    """The registered perturbations as a Markdown table, for the documentation."""
    lines = ["| name | kind | set | frames (ImageNet / CIFAR) |", "|---|---|---|---|"]
    for p in registered():
        lines.append(f"| `{p.name}` | {'noise' if p.noise else 'temporal'} | {'test' if p.test else 'validation'} | "
                     f"{p.frames['imagenet']} / {p.frames['cifar']} |")
    return "\n".join(lines)
