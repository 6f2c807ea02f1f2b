"""Evaluation options: the options several benchmark families share (declared once here, see
:mod:`robustlab.engine.schema`), the checks they share, and command-line parsing helpers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..data.limits import DEFAULT_LIMIT_ORDER, LIMIT_ORDERS, check_limit_order
from ..errors import DataError, InputError, unknown_name
from ..models.preprocessing import Preprocessing
from .schema import Option


def parse_key_values(items: Iterable[str] | None) -> dict[str, Any]:
    """``["shard_size=100", "clean=false"]`` -> ``{"shard_size": 100, "clean": False}``.

    Values are read as JSON when they parse (numbers, true/false, lists), else kept as strings.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"option {item!r} must look like KEY=VALUE, e.g. shard_size=1000.")
        try:
            out[key.strip().replace("-", "_")] = json.loads(value)
        except ValueError:
            out[key.strip().replace("-", "_")] = value
    return out


def _floats(text: str | None, name: str) -> tuple[float, float, float] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--{name} must be three comma-separated numbers, e.g. 0.485,0.456,0.406; got {text!r}.") from None
    if len(values) != 3:
        raise InputError(f"--{name} needs 3 values (R, G, B); got {text!r}.")
    return values  # type: ignore[return-value]


def preprocessing_from_args(resize: int | None, crop: int | None, interpolation: str | None,
                            mean: str | None, std: str | None) -> Preprocessing | None:
    """A Preprocessing override from CLI flags, or None when no flag was given."""
    if all(v is None for v in (resize, crop, interpolation, mean, std)):
        return None
    return Preprocessing(resize=resize, crop=crop, interpolation=interpolation or "bilinear",
                         mean=_floats(mean, "mean"), std=_floats(std, "std"))


# --- memory bounds ---------------------------------------------------------------------

#: Batches a local run holds at once per decoding worker (the DataLoader's prefetch), plus the
#: one being run and the one being stored.
BATCHES_IN_FLIGHT_PER_WORKER = 4


def available_memory() -> int | None:
    """Bytes of memory this process may still use: the smaller of the system's available memory
    (``MemAvailable``) and the room left under a cgroup limit; None when unknown (not Linux)."""
    found = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit.isdigit():
            found.append(max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def check_preprocessing_budget(preprocessing: Preprocessing | None, batch_size: int, workers: int, *,
                               max_pixels: int | None = None) -> int:
    """Refuse a resize or crop whose images cannot fit, before anything runs; return the estimate.

    The estimate (bytes): every decoding worker holds one resized image (3 bytes per pixel of
    the ``resize x resize`` square, a lower bound for any aspect ratio), each batch in flight
    holds ``batch_size`` images at the input size (uint8), and the model's float input with its
    first activations takes about 8 times that of one batch. A resized or cropped image larger
    than ``max_pixels`` (the decompression-bomb limit) is refused as well.

    Raises
    ------
    InputError
        Naming the size asked for, the estimate, the memory available and the fix.
    """
    from ..data.images import check_max_pixels

    if preprocessing is None:
        return 0
    resized = preprocessing.resize ** 2 if preprocessing.resize else 0
    crop = preprocessing.crop[0] * preprocessing.crop[1] if preprocessing.crop else 0
    out = crop or resized
    limit = check_max_pixels(max_pixels)
    for name, area, value in (("--resize", resized, preprocessing.resize), ("--crop", crop, preprocessing.crop)):
        if area > limit:
            raise InputError(f"{name} {value} makes images of {area:,} pixels or more, over the limit of {limit:,} "
                             "(--max-pixels, a decompression-bomb guard): give a model input size in pixels, e.g. "
                             "--resize 256 --crop 224.")
    if not out:
        return 0
    batches = max(1, workers) * BATCHES_IN_FLIGHT_PER_WORKER + 2
    estimate = max(1, workers) * 3 * max(resized, out) + batches * batch_size * 3 * out + 8 * batch_size * 3 * out * 4
    room = available_memory()
    if room is not None and estimate > 0.8 * room:
        raise InputError(f"--resize {preprocessing.resize} / --crop {preprocessing.crop} with --batch-size {batch_size} "
                         f"and {workers} worker(s) needs about {estimate / 2**30:.1f} GiB, but {room / 2**30:.1f} GiB "
                         "are available: use a smaller --resize/--crop (the model's input size), a smaller "
                         "--batch-size or fewer --workers.")
    return estimate


# --- options several benchmark families declare -----------------------------------------

CORRUPTIONS = Option("corruptions", "str", help="Corruption names or subsets, comma-separated (benchmark, all, "
                     "holdout, noise, fog, ...; default: the 15 benchmark corruptions).", flags=("-c",))
SEVERITIES = Option("severities", "str", help="Severities, e.g. 1-5 (default) or 1,3.", flags=("-s",))
LIMIT = Option("limit", "int", help="Only N samples of each setting (a quick look), the same number from each class "
               "(see --limit-order).")
LIMIT_ORDER = Option("limit_order", "str", DEFAULT_LIMIT_ORDER, choices=LIMIT_ORDERS,
                     help="Which samples --limit takes: balanced (the same number per class, chosen by a seeded hash "
                     "of each sample id: the same in every run) or path (the first N in path order, biased towards "
                     "the first classes).")
CLASS_MAP = Option("class_map", "str", help="Class indices: auto, imagenet, sorted or a JSON file.")
SAVE_LOGITS = Option("save_logits", "bool", False, help="Also store full logits per sample.")
TOP_K = Option("top_k", "int", 5, help="Classes stored per sample (top-k indices and scores).")
CLEAN_DATA = Option("clean_data", "path", help="The clean ImageNet val folder, or with CIFAR-10-C(-bar) arrays the "
                    "CIFAR-10 root (clean error, relative ratios, the original accuracy of effective robustness).")
CLEAN_RUN = Option("clean_run", "str", help="A stored run with the clean units (instead of --clean-data).")
BASELINE_RUN = Option("baseline_run", "str", help="A stored run of a baseline model on the same data (normalises "
                      "the ratios); 'self' for this run.")
PROFILE = Option("profile", "str", "imagecorruptions", help="Corruption parameter profile: imagecorruptions, "
                 "imagenet-c, cifar or tinyimagenet.")
CLASSES_PER_UNIT = Option("classes_per_unit", "int", 100, help="Classes per work unit of an image-folder layout.")
ALLOW_INCOMPLETE = Option("allow_incomplete", "bool", False, help="Evaluate a released layout whose settings do not "
                          "hold the same classes and files (a half-extracted download) instead of refusing it; the "
                          "run records what was missing.")


#: The options above: well known across families, so the command line recognises them (``-c fog``)
#: even for a benchmark that does not take them, and refuses them with that benchmark's reason.
SHARED_OPTIONS = (CORRUPTIONS, SEVERITIES, LIMIT, LIMIT_ORDER, CLASS_MAP, SAVE_LOGITS, TOP_K, CLEAN_DATA, CLEAN_RUN,
                  BASELINE_RUN, PROFILE, CLASSES_PER_UNIT)


def limit_config(limit: Any, order: Any, samples: Any = None) -> dict[str, Any]:
    """A run's config entries of ``--limit`` and ``--limit-order``: ``{"limit": N}``, and when a
    limit is given its ``limit_order`` and, from ``samples`` (a sample set a reader limited, see
    :mod:`robustlab.data.limits`), ``limit_stats``: what ``show`` prints as "limited to N of M
    samples, K per class". A run without a limit keeps the config (and so the run id) it always had."""
    limit = check_positive("limit", limit)
    order = check_limit_order(order)
    if limit is None:
        return {"limit": None}
    out: dict[str, Any] = {"limit": limit, "limit_order": order}
    stats = getattr(samples, "limited", None)
    if stats:
        out["limit_stats"] = dict(stats)
    return out


def shard_size_option(default: int) -> Option:
    """The ``shard_size`` option (samples per work unit) with a family's default."""
    return Option("shard_size", "int", default, help="Samples per work unit.")


def baseline_option(default: str) -> Option:
    """The ``baseline`` option (a built-in baseline's name) with a family's default."""
    return Option("baseline", "str", default, help="The built-in baseline the ratios divide by.")


def seed_option(default: int | None = 0, help: str = "Base seed of the per-sample seeds.") -> Option:
    """The ``seed`` option with a family's default (None: not given)."""
    return Option("seed", "int", default, help=help)


def check_positive(name: str, value: Any) -> int | None:
    """A positive integer option (None passes through)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise InputError(f"{name} must be a positive integer; got {value!r}.")
    return int(value)


def check_seed(seed: Any) -> int:
    """A seed option: an integer in [0, 2**32)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**32:
        raise InputError(f"seed must be an integer in [0, 2**32); got {seed!r}.")
    return int(seed)


#: The class-map modes that are not files (see :mod:`robustlab.data.classification`).
CLASS_MAP_MODES = ("auto", "imagenet", "sorted")


def class_map_config(class_map: Any) -> Any:
    """A JSON-able, path-resolved form of a class map option (part of the run's identity)."""
    if class_map is None:
        return "auto"
    if isinstance(class_map, (str, os.PathLike)) and str(class_map) not in CLASS_MAP_MODES:
        from ..data.classification import load_class_map

        path = Path(class_map).expanduser().resolve()
        if not path.is_file():
            text = str(class_map)
            if os.sep not in text and not text.endswith(".json"):  # a mistyped mode, not a file
                raise unknown_name("class map", text, CLASS_MAP_MODES + ("<a JSON file>",))
            raise DataError(f"class map file {path} does not exist; give auto, imagenet, sorted or an existing JSON file.")
        return load_class_map(path)
    if isinstance(class_map, Mapping):
        return {str(k): int(v) for k, v in class_map.items()}
    if isinstance(class_map, (list, tuple)):
        return [str(c) for c in class_map]
    return str(class_map)


def parse_actors(text: str | None) -> int | str | None:
    """``--actors``: ``auto``, a positive integer, or None (not given)."""
    if text is None:
        return None
    value = text.strip().lower()
    if value == "auto":
        return "auto"
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise InputError(f"--actors must be a positive integer or auto; got {text!r}.")
