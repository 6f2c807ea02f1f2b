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

#: The group name of these corruptions in the corruption registry.
GROUP = "c-bar"

#: ImageNet-C-bar (224 px): corruption -> severity parameters of severities 1..5 (the reference's
#: ``imagenet_c_bar.csv``), in the order of the paper's Table 2: the order of the set's runs,
#: tables and published errors. These tables are the only record of the sets' members.
IMAGENET_C_BAR: dict[str, tuple[float, ...]] = {
    "blue_noise_sample": (0.8, 1.6, 2.4, 4.0, 5.6),
    "plasma_noise": (4.75, 7.0, 8.5, 9.25, 10.0),
    "checkerboard_cutout": (2.0, 3.0, 4.0, 5.0, 6.0),
    "cocentric_sine_waves": (3.0, 5.0, 8.0, 9.0, 10.0),
    "single_frequency_greyscale": (1.0, 1.5, 2.0, 4.5, 5.0),
    "brownish_noise": (1.0, 2.0, 3.0, 4.0, 5.0),
    "perlin_noise": (4.6, 5.2, 5.8, 7.6, 8.8),
    "sparkles": (1.0, 2.0, 3.0, 5.0, 6.0),
    "inverse_sparkles": (1.0, 2.0, 4.0, 9.0, 10.0),
    "caustic_refraction": (2.35, 3.2, 4.9, 6.6, 9.15),
}

#: CIFAR-10-C-bar (32 px), from the reference's ``cifar10_c_bar.csv``, in the order of Table 2.
CIFAR10_C_BAR: dict[str, tuple[float, ...]] = {
    "blue_noise_sample": (0.7, 1.4, 2.1, 3.5, 4.2),
    "brownish_noise": (2.5, 4.0, 5.5, 6.5, 7.0),
    "checkerboard_cutout": (1.0, 2.0, 3.0, 4.0, 5.0),
    "circular_motion_blur": (2.8, 3.6, 4.4, 5.2, 6.0),
    "inverse_sparkles": (1.0, 1.5, 2.5, 4.5, 5.0),
    "lines": (0.5, 1.0, 1.5, 2.0, 2.5),
    "pinch_and_twirl": (5.5, 6.0, 6.5, 8.5, 10.0),
    "ripple": (5.5, 6.0, 6.5, 7.5, 8.0),
    "sparkles": (0.7, 3.5, 5.6, 6.3, 7.0),
    "transverse_chromatic_abberation": (1.0, 2.0, 5.0, 9.0, 10.0),
}

#: The released sets by name (the names ``robustlab`` accepts as corruption subsets).
SETS: dict[str, dict[str, tuple[float, ...]]] = {
    "imagenet-c-bar": IMAGENET_C_BAR,
    "cifar10-c-bar": CIFAR10_C_BAR,
}

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
