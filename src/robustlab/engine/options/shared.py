"""The options several benchmark families share (declared once here, see :mod:`.schema`) and the
checks they share."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ...data.limits import DEFAULT_LIMIT_ORDER, LIMIT_ORDERS, check_limit_order
from ...errors import DataError, InputError, unknown_name
from .schema import Option

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
        from ...data.classification import load_class_map

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
