"""The configs of the common-corruption benchmarks (``imagenet-c``, ``corrupted``; the released
layouts of ``imagenet-c-bar`` and the ImageNet-3DCC plugin share :class:`ReleasedConfig`), and the
options and checks they share.

Settings are ``<corruption>/<severity>`` (:class:`~robustlab.engine.setting.Setting`) and ``clean``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..corruptions import resolve_corruptions
from ..engine.config import LimitedConfig, conditional
from ..engine.options import Option
from ..engine.setting import Setting
from ..errors import DataError, InputError
from ..metrics.corruption import BENCHMARK_CORRUPTIONS

#: The setting of the clean images.
CLEAN = "clean"
CLEAN_SETTING = Setting(CLEAN)

#: Where ``imagenet-c --on-the-fly`` corrupts: ``numpy`` in the loading workers (the faithful
#: kernels), ``torch`` after batching on the model's device.
CORRUPTION_BACKENDS = ("numpy", "torch")

#: The geometry that made the released ImageNet-C (make_imagenet_c.py: Resize(256),
#: CenterCrop(224) on PIL images, bilinear), applied before the corruption.
IMAGENET_C_SIZE = (256, 224)

#: ``baseline_run=SELF``: the run is its own baseline (CE = 100 by construction), the role AlexNet
#: plays in the paper for a reference model you ship yourself.
SELF = "self"

#: ``keep_input_size`` of the benchmarks that make ImageNet-C(-bar) in memory (see
#: :class:`robustlab.corruptions.dataset.ReferenceGeometry`).
KEEP_INPUT_SIZE = Option("keep_input_size", "bool", False, help="With --on-the-fly: corrupt a clean image that is "
                         "already 224x224 as it is, instead of the reference's resize 256 + centre crop 224 of every "
                         "image (recorded in the run).")


@dataclass(frozen=True, kw_only=True)
class ReleasedConfig(LimitedConfig):
    """A run over a corruption set's settings: released folders (``layout`` ``folders``), CIFAR-C
    arrays (``cifar``) or clean images corrupted in memory (``on-the-fly``). What the shared unit
    readers of :mod:`.corruption_units` read; the layouts record only their own fields.

    Attributes
    ----------
    layout : str
        ``folders``, ``cifar`` or ``on-the-fly``.
    corruptions : list of str
    severities : list of int
    clean_data : str or None
        The clean images (setting ``clean``): a folder, or the CIFAR-10 ``test_batch``.
    top_k, save_logits, num_classes
        What is stored per sample, and the logits the model must return.
    class_map, classes_per_unit : folder layouts only
    shard_size : array layouts only
    seed, profile : made in memory only (each image's seed, the corruption parameters)
    keep_input_size : made in memory: a 224x224 image kept as it is (stored only when true)
    corruption_backend : ``imagenet-c --on-the-fly`` only (numpy or torch)
    subset, incomplete : a released tree smaller than the release, or evaluated incomplete
    """

    layout: str
    corruptions: list[str]
    severities: list[int]
    clean_data: str | None
    top_k: int
    save_logits: bool
    num_classes: int | None
    class_map: Any = conditional()
    classes_per_unit: int | None = conditional()
    shard_size: int | None = conditional()
    seed: int | None = conditional()
    profile: str | None = conditional()
    keep_input_size: bool = conditional(False)
    corruption_backend: str | None = conditional()
    subset: dict[str, Any] | None = conditional()
    incomplete: dict[str, Any] | None = conditional()

    @property
    def on_the_fly(self) -> bool:
        return self.layout == "on-the-fly"

    def settings(self) -> list[Setting]:
        """Its corrupted settings, corruption by corruption."""
        return corruption_settings(self.corruptions, self.severities)


@dataclass(frozen=True, kw_only=True)
class ImageNetCConfig(ReleasedConfig):
    """An ``imagenet-c`` run: a :class:`ReleasedConfig` with the ratios' baseline and the clean
    run. ``clean`` (evaluate the clean images) is recorded made in memory only."""

    baseline: str
    clean_run: str | None
    baseline_run: str | None
    clean: bool | None = conditional()


@dataclass(frozen=True, kw_only=True)
class CorruptedConfig(LimitedConfig):
    """A ``corrupted`` run: a labelled folder corrupted on the fly, the clean images as ``clean``."""

    corruptions: list[str]
    severities: list[int]
    seed: int
    profile: str
    class_map: Any
    shard_size: int
    clean: bool
    baseline: str
    baseline_run: str | None
    top_k: int
    save_logits: bool
    num_classes: int

    def settings(self) -> list[Setting]:
        return corruption_settings(self.corruptions, self.severities)


def corruption_settings(corruptions: Iterable[str], severities: Iterable[int]) -> list[Setting]:
    """``fog/1 .. fog/5, snow/1 ..``: every corruption at every severity."""
    return [Setting(c, int(s)) for c in corruptions for s in severities]


def imagenet_c_geometry(keep_input_size: bool = False):
    """A picklable uint8 HxWx3 -> 224x224 function: ImageNet-C's resize and centre crop, applied to
    every image as make_imagenet_c.py does (``keep_input_size``: a 224x224 image passes through;
    see :class:`robustlab.corruptions.dataset.ReferenceGeometry`)."""
    from ..corruptions.dataset import ReferenceGeometry

    return ReferenceGeometry(*IMAGENET_C_SIZE, keep_input_size=keep_input_size)


def check_keep_input_size(keep_input_size: Any, on_the_fly: Any) -> None:
    """``keep_input_size`` only with ``on_the_fly`` (released files are already 224x224 crops)."""
    if keep_input_size and not on_the_fly:
        raise InputError("keep_input_size applies to --on-the-fly evaluation from clean images; the released files "
                         "are already 224x224 (add --on-the-fly, or leave it out).")


def check_corruption_backend(backend: str) -> str:
    from ..errors import unknown_name

    if backend not in CORRUPTION_BACKENDS:
        raise unknown_name("corruption backend", backend, CORRUPTION_BACKENDS)
    return backend


def select_corruptions(spec: str | Iterable[str] | None, available: Iterable[str] | None = None) -> list[str]:
    """Corruption names from names/subsets (``"benchmark"``, ``"noise,fog"``, a list).

    ``None`` selects the 15 benchmark corruptions (only those in ``available`` when given).
    Subset and group names are those of :func:`robustlab.corruptions.resolve_corruptions`.
    """
    if spec is None:
        chosen = [c for c in BENCHMARK_CORRUPTIONS if available is None or c in set(available)]
        if not chosen:
            raise DataError("none of the 15 benchmark corruptions was found; give --corruptions.")
        return chosen
    return resolve_corruptions(spec)


def related_corruption_runs(clean_run: str | None, baseline_run: str | None) -> dict[str, str]:
    """``clean_run`` and ``baseline_run`` (unless ``self``) of a corruption benchmark's config, as
    :meth:`~robustlab.engine.Benchmark.related_runs`."""
    return {alias: run for alias, run in (("clean_run", clean_run), ("baseline_run", baseline_run))
            if run and run != SELF}

