"""The units and samples of the corruption sets' layouts: released image folders in blocks of classes,
CIFAR-C arrays in shards of rows, and clean images corrupted on the fly (in the loading workers or,
``corruption_backend=torch``, on the model's device). Shared by ``imagenet-c``, ``imagenet-c-bar`` and
the ImageNet-3DCC and LAION-C plugins.

Unit keys are ``<setting>/shard-<k>`` (``fog/3/shard-0002``, ``clean/shard-0000``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..corruptions.released import read_cifar_c
from ..corruptions.views import corrupt_on_the_fly
from ..data.cifar import find_test_batch, read_cifar_test
from ..data.classification import PreparedSamples, SampleView, class_folders, read_image_folder
from ..engine.benchmark import Unit
from ..engine.setting import Setting, parse_unit_key
from ..errors import DataError
from .corruption_config import CLEAN_SETTING, ReleasedConfig, imagenet_c_geometry


@dataclass(frozen=True)
class PendingCorruption:
    """A sample's corruption still to apply on the model's device (the ``torch`` backend)."""

    corruption: str
    severity: int


@dataclass(frozen=True, eq=False)
class DeviceCorruptedSamples(SampleView):
    """Clean images to be corrupted after batching, on the model's device: reading returns the
    clean image, and each loaded sample carries its :class:`PendingCorruption` as context."""

    corruption: str = ""
    severity: int = 0
    per_image: ClassVar[bool] = True


#: Corruptions the ``torch`` backend makes on the CPU (the exact libjpeg round trip): they are
#: made in the loading workers, in parallel and overlapped with the device, by the numpy kernel,
#: whose pixels are the torch backend's (tested).
CPU_CORRUPTIONS = ("jpeg_compression",)


def class_blocks(classes: list[str], per_unit: int | None) -> list[list[str]]:
    """``classes`` in blocks of ``per_unit`` (one unit each), or one block when ``per_unit`` is falsy."""
    if not per_unit:
        return [classes]
    return [classes[i:i + per_unit] for i in range(0, len(classes), per_unit)]


def classes_per_unit(limit: int | None, classes_per_unit: int | None) -> int | None:
    """Class folders per unit of a folder layout: one block (None) with a limit, which takes its
    samples across all classes."""
    return None if limit else classes_per_unit


def folder_units(folders: Iterable[tuple[Setting | str, Any]], per_unit: int | None,
                 clean_data: str | None = None) -> Iterator[Unit]:
    """The units of released image folders: for each ``(setting, folder)`` one unit per block of
    ``per_unit`` class folders (see :func:`classes_per_unit`), then those of ``clean_data`` (when
    given) as setting ``clean``. A generator: folders are listed as units are reached."""
    clean = [(CLEAN_SETTING, clean_data)] if clean_data else []
    for setting, folder in itertools.chain(folders, clean):
        for k, block in enumerate(class_blocks(class_folders(folder), per_unit)):
            yield Unit.of(setting, k, {"folder": str(folder), "classes": block})


def on_the_fly_units(root: str, settings: list[Setting], per_unit: int | None) -> list[Unit]:
    """The units of an on-the-fly run over the clean folder ``root``: every setting of a block of
    classes, block after block, so that the units made from one block's images come together
    (the local executor then decodes each image once for all of them, see
    :meth:`~robustlab.engine.Benchmark.shared_reads`). Keys are ``<setting>/shard-<block>`` as
    before; only the order is by block."""
    blocks = class_blocks(class_folders(root), per_unit)
    return [Unit.of(setting, k, {"folder": str(root), "classes": block})
            for k, block in enumerate(blocks) for setting in settings]


def on_the_fly_shared_reads(config: ReleasedConfig, unit: Unit) -> str | None:
    """The block of clean images an on-the-fly unit is made from (its shard), None for other layouts."""
    return f"shard-{parse_unit_key(unit.key)[1]:04d}" if config.on_the_fly else None


def cifar_unit_samples(config: ReleasedConfig, unit: Unit):
    """The samples of a CIFAR-C array unit: a slice of a severity block, or of the clean test set."""
    if unit.setting == CLEAN_SETTING:  # the CIFAR-10 test set given as --clean-data
        samples = read_cifar_test(config.clean_data, limit=config.limit, limit_order=config.order)
    else:
        samples = read_cifar_c(config.data, unit.setting.shift, unit.setting.level, limit=config.limit,
                               limit_order=config.order)
    return samples.subset(unit.params["start"], unit.params["stop"])


def corruption_unit_samples(config: ReleasedConfig, unit: Unit, listings: dict | None = None):
    """The samples of one unit of a corruption benchmark (ImageNet-C, ImageNet-C-bar): a CIFAR-C
    array slice, a class block of a released folder, or a block of clean images corrupted on the
    fly (by the ``corruption_backend`` of ``config``, numpy when it has none; the torch backend's
    :data:`CPU_CORRUPTIONS` by the numpy kernel in the loading workers, the same pixels).
    ``listings`` (a run's dict) keeps each folder block's listing, which every setting reads."""
    if config.layout == "cifar":
        return cifar_unit_samples(config, unit)
    key = json.dumps([unit.params["folder"], config.class_map, unit.params["classes"], config.limit, config.order])
    images = None if listings is None else listings.get(key)
    if images is None:
        images = read_image_folder(unit.params["folder"], config.class_map, classes=unit.params["classes"],
                                   limit=config.limit, limit_order=config.order)
        if listings is not None and config.on_the_fly:
            listings.clear()  # one block at a time: the units of a block come together
            listings[key] = images
    if not config.on_the_fly:
        return images
    images = PreparedSamples(images, imagenet_c_geometry(bool(config.keep_input_size)))
    if unit.setting == CLEAN_SETTING:
        return images
    corruption, severity = unit.setting.shift, unit.setting.level
    if (config.corruption_backend or "numpy") == "torch" and corruption not in CPU_CORRUPTIONS:
        return DeviceCorruptedSamples(images, corruption, severity)
    return corrupt_on_the_fly(images, corruption, severity, seed=config.seed, profile=config.profile)


def cifar_clean_data(clean_data: str | None) -> str | None:
    """``--clean-data`` next to CIFAR-C arrays: the CIFAR-10 test set's ``test_batch`` (its path),
    checked; None when not given."""
    if clean_data is None:
        return None
    try:
        return str(find_test_batch(clean_data))
    except DataError as exc:
        raise DataError(f"--clean-data next to CIFAR-10-C(-bar) arrays is the clean CIFAR-10 test set: {exc}") from None


def cifar_units(config: ReleasedConfig, settings: Iterable[Setting], root: Path) -> list[Unit]:
    """The units of a CIFAR-C array layout: shards of ``shard_size`` rows of each setting's
    severity block, then of the clean test set when ``clean_data`` is given."""
    sizes: dict[Setting, int] = {}
    for setting in settings:
        sizes[setting] = len(read_cifar_c(root, setting.shift, setting.level, limit=config.limit,
                                          limit_order=config.order))
    if config.clean_data:
        sizes[CLEAN_SETTING] = len(read_cifar_test(config.clean_data, limit=config.limit, limit_order=config.order))
    size = config.shard_size
    return [Unit.of(setting, k, {"start": start, "stop": min(n, start + size)})
            for setting, n in sizes.items() for k, start in enumerate(range(0, n, size))]
