"""Names, sets and severity tables of ImageNet-C-bar and CIFAR-10-C-bar (no kernels imported).

Mintun, Kirillov and Xie, *On Interaction Between Augmentations and Corruptions in Natural
Corruption Robustness* (NeurIPS 2021), reference code facebookresearch/augmentation-corruption
(``imagenet_c_bar/imagenet_c_bar.csv`` and ``cifar10_c_bar.csv``). The two sets share five
corruptions; each has five of its own. A corruption's *severity parameter* is a float on the
reference's 0..10 scale (``float_parameter(level, maxval) = level * maxval / 10``); the tables
give the five parameters behind severities 1..5 of each released set. The released
ImageNet-C-bar folders are named by that parameter, formatted ``"{:.2f}"`` (``2.35``).
"""

from __future__ import annotations

from ...errors import InputError
from ...suites import CBAR_TABLES, CIFAR10_C_BAR, IMAGENET_C_BAR

#: The group name of these corruptions in the corruption registry.
GROUP = "c-bar"

#: ImageNet-C-bar's and CIFAR-10-C-bar's severity tables (corruption -> parameters of severities 1..5,
#: in the order of the paper's Table 2) and the released sets by name (the names ``robustlab`` accepts
#: as corruption subsets): plain data in :mod:`robustlab.suites`, which the metrics read too. These
#: tables are the only record of the sets' members.
SETS: dict[str, dict[str, tuple[float, ...]]] = CBAR_TABLES

#: Every C-bar corruption once (the order of ``list``): the five the sets share, then ImageNet-C-bar's
#: own, then CIFAR-10-C-bar's own, each alphabetically.
CBAR_ORDER: tuple[str, ...] = (
    *sorted(set(IMAGENET_C_BAR) & set(CIFAR10_C_BAR)),
    *sorted(set(IMAGENET_C_BAR) - set(CIFAR10_C_BAR)),
    *sorted(set(CIFAR10_C_BAR) - set(IMAGENET_C_BAR)),
)

#: Which released set's table a corruption profile uses: ``cifar`` the CIFAR-10-C-bar table (its
#: kernels were tuned on 32 px images); every other profile the ImageNet-C-bar table (224 px).
#: ``tinyimagenet`` has no reference table: it uses ImageNet-C-bar's (docs/imagenet-c-bar.md).
PROFILE_SETS = {"cifar": "cifar10-c-bar", "imagecorruptions": "imagenet-c-bar", "imagenet-c": "imagenet-c-bar",
                "tinyimagenet": "imagenet-c-bar"}


def sets_of(name: str) -> list[str]:
    """The released sets (``imagenet-c-bar``, ``cifar10-c-bar``) holding corruption ``name``."""
    return [s for s, table in SETS.items() if name in table]


def severity_parameter(name: str, severity: int, profile: str) -> float:
    """The reference's severity parameter (0..10 scale) of ``name`` at ``severity`` 1..5 under ``profile``.

    Raises InputError when the profile's set does not hold the corruption (e.g. ``ripple``, a
    CIFAR-10-C-bar corruption, under the ImageNet profiles): the reference gives no severities
    for it there.
    """
    set_name = PROFILE_SETS.get(profile, "imagenet-c-bar")
    table = SETS[set_name]
    if name not in table:
        other = sets_of(name)
        fix = ("use --profile cifar (CIFAR-10-C-bar, 32 px)" if other == ["cifar10-c-bar"]
               else "use a profile other than cifar (ImageNet-C-bar, 224 px)")
        raise InputError(f"{name} belongs to {', '.join(other)}: the reference gives its severities only there, and "
                         f"profile {profile!r} uses the {set_name} table; {fix}, or leave {name} out.")
    return table[name][severity - 1]


def severity_folder(parameter: float) -> str:
    """The released ImageNet-C-bar folder name of a severity parameter: ``"{:.2f}"`` (``2.35``, ``10.00``)."""
    return f"{float(parameter):.2f}"


def severity_of_folder(set_name: str, name: str, folder: str) -> int | None:
    """Severity 1..5 of a released severity folder (``"2.35"`` or ``"3"``) of ``name`` in ``set_name``; None if none."""
    table = SETS[set_name].get(name)
    if table is None:
        return None
    if folder.isdigit() and 1 <= int(folder) <= 5:
        return int(folder)
    names = [severity_folder(p) for p in table]
    return names.index(folder) + 1 if folder in names else None
