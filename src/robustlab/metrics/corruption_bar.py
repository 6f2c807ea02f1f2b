"""Classification on ImageNet-C-bar / CIFAR-10-C-bar: mean error, CE-bar and mCE-bar.

Mintun, Kirillov and Xie, *On Interaction Between Augmentations and Corruptions in Natural
Corruption Robustness* (NeurIPS 2021), Table 2 (also ``figs/table.png`` of
facebookresearch/augmentation-corruption). The paper's headline number for a -bar set is the
**mean top-1 error** over its 10 corruptions x 5 severities. It publishes no AlexNet errors on
the -bar sets: its baseline is a plainly trained ResNet-50 (ImageNet-C-bar) and WideResNet-40-2
(CIFAR-10-C-bar), whose per-corruption mean errors are built in here (``paper-baseline``), so
``CE-bar_c = mean_s E[f,c,s] / E[baseline,c]`` and ``mCE-bar`` (their mean over the set) follow
ImageNet-C's definition with that baseline (100 = as robust as the paper's baseline). Any other
baseline (e.g. an AlexNet you evaluated yourself) can be given as errors or a stored run.

Units as in :mod:`.corruption`: fractions in, fractions and ratios out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import InputError, unknown_name
from ..suites import CBAR_TABLES
from ._checks import as_fraction_array
from .corruption import CorruptionBaseline, corruption_errors

__all__ = ["CBAR_BASELINES", "CBAR_SETS", "CBarSummary", "PUBLISHED_CBAR_ERRORS", "cbar_summary",
           "get_cbar_baseline", "mce_bar"]

#: The corruptions of each released set, in the order of the paper's Table 2 (from the sets' plain
#: table, :data:`robustlab.suites.CBAR_TABLES`, which the C-bar catalog declares too).
CBAR_SETS: dict[str, tuple[str, ...]] = {name: tuple(table) for name, table in CBAR_TABLES.items()}

_SOURCE = "Mintun, Kirillov & Xie (NeurIPS 2021), Table 2"

#: Published mean errors (%, over severities 1-5) per corruption of each set, and the mean over
#: the set ("mean") and on ImageNet-C / CIFAR-10-C ("c_error"), by training method. ImageNet:
#: ResNet-50; CIFAR-10: WideResNet-40-2. ANT* is the authors' evaluation of a released model.
PUBLISHED_CBAR_ERRORS: dict[str, dict[str, dict[str, float]]] = {
    "imagenet-c-bar": {
        "baseline": dict(zip(CBAR_SETS["imagenet-c-bar"], (68.6, 71.7, 49.4, 84.7, 79.0, 37.5, 34.3, 32.4, 76.7, 42.8)),
                         mean=57.7, c_error=58.1),
        "autoaugment": dict(zip(CBAR_SETS["imagenet-c-bar"], (54.8, 68.3, 43.8, 86.5, 78.8, 34.5, 33.8, 36.1, 77.1,
                                                              43.8)), mean=55.7, c_error=55.0),
        "stylized-imagenet": dict(zip(CBAR_SETS["imagenet-c-bar"], (54.7, 69.8, 52.8, 79.6, 69.2, 37.8, 35.3, 37.0,
                                                                    77.3, 44.1)), mean=55.8, c_error=52.4),
        "augmix": dict(zip(CBAR_SETS["imagenet-c-bar"], (43.2, 72.2, 46.1, 76.3, 67.4, 38.8, 32.4, 32.3, 76.4, 39.2)),
                       mean=52.4, c_error=49.2),
        "patch-gaussian": dict(zip(CBAR_SETS["imagenet-c-bar"], (60.3, 74.1, 48.5, 82.1, 76.7, 38.9, 34.6, 32.1,
                                                                 76.5, 42.1)), mean=56.6, c_error=49.3),
        "ant3x3": dict(zip(CBAR_SETS["imagenet-c-bar"], (35.8, 75.5, 56.9, 76.4, 63.7, 41.0, 35.2, 35.0, 76.1, 43.3)),
                       mean=53.9, c_error=48.8),
    },
    "cifar10-c-bar": {
        "baseline": dict(zip(CBAR_SETS["cifar10-c-bar"], (42.9, 27.2, 23.3, 11.8, 43.3, 26.2, 11.3, 21.6, 21.0, 42.9)),
                         mean=27.1, c_error=27.0),
        "autoaugment": dict(zip(CBAR_SETS["cifar10-c-bar"], (17.7, 17.5, 17.6, 9.5, 40.4, 23.6, 10.7, 23.5, 17.5,
                                                             31.8)), mean=21.0, c_error=19.4),
        "augmix": dict(zip(CBAR_SETS["cifar10-c-bar"], (9.8, 27.8, 13.4, 5.9, 30.3, 18.0, 8.3, 12.1, 15.5, 19.2)),
                       mean=16.0, c_error=11.1),
        "patch-gaussian": dict(zip(CBAR_SETS["cifar10-c-bar"], (9.0, 30.1, 21.6, 12.8, 35.4, 20.6, 8.8, 21.5, 19.3,
                                                                59.5)), mean=23.8, c_error=17.0),
    },
}


def _paper_baseline(set_name: str) -> CorruptionBaseline:
    row = PUBLISHED_CBAR_ERRORS[set_name]["baseline"]
    model = "ResNet-50" if set_name == "imagenet-c-bar" else "WideResNet-40-2"
    return CorruptionBaseline("paper-baseline", MappingProxyType({c: row[c] / 100 for c in CBAR_SETS[set_name]}),
                              None, f"{_SOURCE}: the plainly trained {model} baseline on {set_name}")


#: ``{set: {name: baseline}}``: the built-in mCE-bar baselines.
CBAR_BASELINES: dict[str, dict[str, CorruptionBaseline]] = {s: {"paper-baseline": _paper_baseline(s)}
                                                              for s in CBAR_SETS}


def get_cbar_baseline(set_name: str, name: str = "paper-baseline") -> CorruptionBaseline:
    """The built-in baseline ``name`` of ``set_name`` (``imagenet-c-bar`` or ``cifar10-c-bar``)."""
    if set_name not in CBAR_BASELINES:
        raise unknown_name("C-bar set", set_name, list(CBAR_BASELINES))
    if name not in CBAR_BASELINES[set_name]:
        raise unknown_name(f"{set_name} baseline", name, list(CBAR_BASELINES[set_name]))
    return CBAR_BASELINES[set_name][name]


def _check_set(set_name: str) -> tuple[str, ...]:
    if set_name not in CBAR_SETS:
        raise unknown_name("C-bar set", set_name, list(CBAR_SETS))
    return CBAR_SETS[set_name]


def mce_bar(errors: Mapping[str, Any], set_name: str, *,
            baseline: str | CorruptionBaseline | Mapping[str, Any] = "paper-baseline") -> float:
    """mCE-bar: the mean over the set's 10 corruptions of CE-bar (a ratio; 1.0 = the baseline).

    ``errors``: ``{corruption: 5 errors of severities 1..5 or their mean}`` (fractions), every
    corruption of ``set_name`` present. ``baseline``: a built-in name (``paper-baseline``), a
    :class:`~robustlab.metrics.corruption.CorruptionBaseline` or ``{corruption: error}``.
    """
    names = _check_set(set_name)
    base = get_cbar_baseline(set_name, baseline) if isinstance(baseline, str) else baseline
    ce = corruption_errors(errors, baseline=base, subset=list(names))
    return float(np.mean(list(ce.values())))


@dataclass(frozen=True)
class CBarSummary:
    """What the paper reports for one model on one -bar set, plus CE-bar / mCE-bar (fractions, ratios)."""

    set_name: str
    mean_error: float
    corruption_mean_errors: Mapping[str, float]
    corruption_errors: Mapping[str, float]
    mce_bar: float
    baseline: str

    def to_dict(self) -> dict:
        return {"set": self.set_name, "mean_error": self.mean_error,
                "corruption_mean_errors": dict(self.corruption_mean_errors),
                "corruption_errors": dict(self.corruption_errors), "mce_bar": self.mce_bar, "baseline": self.baseline}


def cbar_summary(errors: Mapping[str, Any], set_name: str, *,
                 baseline: str | CorruptionBaseline | Mapping[str, Any] = "paper-baseline") -> CBarSummary:
    """Mean error over the set (the paper's number), per-corruption mean errors, CE-bar and mCE-bar."""
    names = _check_set(set_name)
    missing = [c for c in names if c not in errors]
    if missing:
        raise InputError(f"{set_name} needs all of its 10 corruptions; missing {', '.join(missing)}.")
    means = {c: float(np.mean(as_fraction_array(errors[c], f"errors[{c!r}]"))) for c in names}
    base = get_cbar_baseline(set_name, baseline) if isinstance(baseline, str) else baseline
    ce = corruption_errors({c: errors[c] for c in names}, baseline=base, subset=list(names))
    name = base.name if isinstance(base, CorruptionBaseline) else "custom"
    return CBarSummary(set_name, float(np.mean(list(means.values()))), means, ce, float(np.mean(list(ce.values()))),
                       name)
