"""The configs of the perturbation-sequence benchmarks (``imagenet-p``, ``perturbed``), their options,
and how a perturbation folder's name is read (``"gaussian_noise_2"``: the noise at difficulty 2).

A setting is a perturbation folder as released (``"rotate"``, ``"gaussian_noise_2"``); metric rows add
the stride (``"rotate/stride-1"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.config import LimitedConfig, conditional
from ..engine.options import Option
from ..errors import InputError
from ..perturbations import frame_count, get_perturbation, list_perturbations

#: Stored column of per-frame top-k classes, (N, T*k) int32.
FRAMES_COLUMN = "frame_top5"
#: Frames per model call inside :meth:`predict` (bounds memory for long sequences).
FRAME_CHUNK = 256
#: Strides (difficulties) evaluated unless the ``strides`` option says otherwise.
DEFAULT_STRIDES = (1, 2)


# --- folder names and options ----------------------------------------------------------------


def parse_folder(name: str) -> tuple[str, int] | None:
    """``"rotate"`` -> ("rotate", 1); ``"gaussian_noise_2"`` -> ("gaussian_noise", 2); else None."""
    known = list_perturbations("all")
    if name in known:
        return name, 1
    match = re.fullmatch(r"(.+)_([23])", name)
    if match and match[1] in known and get_perturbation(match[1]).noise:
        return match[1], int(match[2])
    return None


def parse_strides(spec: Any) -> list[int]:
    """Strides (difficulties) from ``"1,2"``, ``2`` or ``[1, 2]``: sorted, unique, >= 1."""
    if spec is None:
        return list(DEFAULT_STRIDES)
    items = spec.split(",") if isinstance(spec, str) else ([spec] if isinstance(spec, (int, np.integer)) else spec)
    try:
        values = sorted({int(str(v).strip()) for v in items if str(v).strip()})
    except ValueError:
        raise InputError(f"strides must be positive integers such as '1,2'; got {spec!r}.") from None
    if not values or values[0] < 1:
        raise InputError(f"strides must be positive integers such as '1,2'; got {spec!r}.")
    return values



def check_strides(perturbations: Iterable[str], setting: str, strides: list[int]) -> None:
    """InputError when a stride leaves no frame pair in a temporal perturbation's sequences."""
    for p in perturbations:
        if not get_perturbation(p).noise and max(strides) >= frame_count(p, setting):
            raise InputError(f"stride {max(strides)} is too long for {p} sequences of {frame_count(p, setting)} "
                             "frames; use smaller strides.")


#: Why the sequence benchmarks refuse the corruption benchmarks' options.
SEQUENCE_HINTS = {
    **dict.fromkeys(("corruptions", "severities"), "benchmark {name!r} has perturbations, not corruptions or "
                    "severities: select them with the option perturbations (e.g. -O perturbations=rotate,scale)."),
    "save_logits": "benchmark {name!r} stores per-frame top-5 classes; saving logits of every frame is not supported.",
}
PERTURBATIONS_OPTION = Option("perturbations", "str", help="Perturbation names or subsets, comma-separated (test, "
                       "validation, all, noise, temporal, rotate, ...).", flags=("-p",))
STRIDES_OPTION = Option("strides", "value", help="Strides (difficulties) of the temporal perturbations, e.g. 1,2 "
                 "(default 1,2).")


@dataclass(frozen=True, kw_only=True)
class SequenceConfig(LimitedConfig):
    """What the sequence benchmarks share: the perturbation ``folders`` (the settings), the strides
    (difficulties), the frame-count ``setting`` (imagenet or cifar), the shard size, the baseline the
    rates divide by (built-in or a stored run), and the classes a model must give (None: no check)."""

    folders: list[str]
    strides: list[int]
    setting: str
    shard_size: int
    baseline: str
    baseline_run: str | None
    num_classes: int | None


@dataclass(frozen=True, kw_only=True)
class ImageNetPConfig(SequenceConfig):
    """An ``imagenet-p`` run: released videos (``layout`` ``folders``, with the class map) or CIFAR-10-P
    arrays (``cifar``, with the ``labels.npy`` path or None, recorded for arrays only); ``frames``:
    released (the released frame counts) or any."""

    layout: str
    frames: str
    labels: str | None = conditional(when=lambda config: config.layout == "cifar")
    class_map: Any = conditional()


@dataclass(frozen=True, kw_only=True)
class PerturbedConfig(SequenceConfig):
    """A ``perturbed`` run: the user's folder, each image turned into the sequences of ``perturbations``
    (one folder each) at the noise ``difficulty``, with the seeds of ``robustlab perturb``."""

    perturbations: list[str]
    difficulty: int
    seed: int
    class_map: Any
