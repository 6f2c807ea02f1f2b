"""The published shift suites as plain data: ImageNet-C's 19 corruptions, ImageNet-P's 14 perturbation
sequences and the two C-bar sets, with the numbers their papers publish. No kernels, no registry,
no imports beyond the standard library.

Two layers read this one table, so each name, group, subset and published value is written once:

- the metrics (:mod:`robustlab.metrics`) take their corruption and perturbation subsets and their
  built-in AlexNet baselines from here, so they import nothing but numpy and scipy;
- the catalogs (:mod:`robustlab.corruptions.catalog`, :mod:`robustlab.perturbations.catalog`,
  :mod:`robustlab.corruptions.cbar.tables`) declare these names in their registries with their
  kernels; the registration stays the only record of a kernel (and of a plugin's shift).

Units: AlexNet's corruption errors are fractions (mean top-1 error over severities 1..5); its flip
probabilities are fractions and its top-5 distances rank positions (Hendrycks & Dietterich, ICLR
2019; the paper prints the percentages and errors times 100). The C-bar tables give the reference's
severity parameters (0..10 scale) of severities 1..5.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "ALEXNET_CLEAN_ERROR", "ALEXNET_C_SOURCE", "ALEXNET_P_SOURCE", "CBAR_TABLES", "CIFAR10_C_BAR",
    "CORRUPTION_SUBSETS", "CorruptionEntry", "IMAGENET_C_BAR", "IMAGENET_C_CORRUPTIONS", "IMAGENET_P_PERTURBATIONS",
    "PERTURBATION_SUBSETS", "PerturbationEntry", "SEVERITIES",
]

#: The severities of every corruption, mildest first.
SEVERITIES = (1, 2, 3, 4, 5)


class CorruptionEntry(NamedTuple):
    """One ImageNet-C corruption: its group, whether it is one of the 15 benchmark corruptions (else
    one of the 4 held out), and AlexNet's published mean error (fraction, over severities 1..5)."""

    name: str
    group: str
    alexnet: float
    benchmark: bool = True


#: ImageNet-C's 19 corruptions in the ImageNet-C order: the 15 benchmark ones by group (noise, blur,
#: weather, digital), then the 4 held-out (validation) ones.
IMAGENET_C_CORRUPTIONS: tuple[CorruptionEntry, ...] = (
    CorruptionEntry("gaussian_noise", "noise", 0.886428),
    CorruptionEntry("shot_noise", "noise", 0.894468),
    CorruptionEntry("impulse_noise", "noise", 0.922640),
    CorruptionEntry("defocus_blur", "blur", 0.819880),
    CorruptionEntry("glass_blur", "blur", 0.826268),
    CorruptionEntry("motion_blur", "blur", 0.785948),
    CorruptionEntry("zoom_blur", "blur", 0.798360),
    CorruptionEntry("snow", "weather", 0.866816),
    CorruptionEntry("frost", "weather", 0.826572),
    CorruptionEntry("fog", "weather", 0.819324),
    CorruptionEntry("brightness", "digital", 0.564592),
    CorruptionEntry("contrast", "digital", 0.853204),
    CorruptionEntry("elastic_transform", "digital", 0.646056),
    CorruptionEntry("pixelate", "digital", 0.717840),
    CorruptionEntry("jpeg_compression", "digital", 0.606500),
    CorruptionEntry("speckle_noise", "noise", 0.845388, benchmark=False),
    CorruptionEntry("gaussian_blur", "blur", 0.787108, benchmark=False),
    CorruptionEntry("spatter", "weather", 0.717512, benchmark=False),
    CorruptionEntry("saturate", "digital", 0.658248, benchmark=False),
)
#: AlexNet's clean top-1 error on ImageNet (the denominator's offset of relative CE).
ALEXNET_CLEAN_ERROR = 0.435
ALEXNET_C_SOURCE = "Hendrycks & Dietterich (ICLR 2019), AlexNet errors on ImageNet-C (mean over severities)"

_BENCHMARK = tuple(c.name for c in IMAGENET_C_CORRUPTIONS if c.benchmark)
_HOLDOUT = tuple(c.name for c in IMAGENET_C_CORRUPTIONS if not c.benchmark)
#: ImageNet-C's subsets by the names users select them with, in that order: ``benchmark``/``common``
#: (15), ``holdout``/``validation`` (4), ``all`` (19).
CORRUPTION_SUBSETS: dict[str, tuple[str, ...]] = {
    "benchmark": _BENCHMARK,
    "common": _BENCHMARK,
    "holdout": _HOLDOUT,
    "validation": _HOLDOUT,
    "all": tuple(c.name for c in IMAGENET_C_CORRUPTIONS),
}


class PerturbationEntry(NamedTuple):
    """One ImageNet-P perturbation: noise (frames compared with frame 0) or temporal, test or
    validation, and AlexNet's published flip probability (fraction) and top-5 distance."""

    name: str
    noise: bool
    flip_probability: float
    top5_distance: float
    test: bool = True


#: ImageNet-P's 14 perturbations: the 10 test ones, then the 4 validation ones.
IMAGENET_P_PERTURBATIONS: tuple[PerturbationEntry, ...] = (
    PerturbationEntry("gaussian_noise", True, 0.2365, 4.77),
    PerturbationEntry("shot_noise", True, 0.3006, 5.76),
    PerturbationEntry("motion_blur", False, 0.0930, 1.93),
    PerturbationEntry("zoom_blur", False, 0.0594, 1.34),
    PerturbationEntry("snow", False, 0.1193, 2.42),
    PerturbationEntry("brightness", False, 0.0489, 1.19),
    PerturbationEntry("translate", False, 0.1101, 2.63),
    PerturbationEntry("rotate", False, 0.1310, 2.95),
    PerturbationEntry("tilt", False, 0.0705, 1.75),
    PerturbationEntry("scale", False, 0.2353, 4.48),
    PerturbationEntry("speckle_noise", True, 0.1865, 3.89, test=False),
    PerturbationEntry("gaussian_blur", False, 0.0278, 0.70, test=False),
    PerturbationEntry("spatter", False, 0.0505, 1.26, test=False),
    PerturbationEntry("shear", False, 0.1066, 2.48, test=False),
)
ALEXNET_P_SOURCE = "Hendrycks & Dietterich (ICLR 2019), AlexNet on ImageNet-P"

_TEST = tuple(p.name for p in IMAGENET_P_PERTURBATIONS if p.test)
_VALIDATION = tuple(p.name for p in IMAGENET_P_PERTURBATIONS if not p.test)
#: ImageNet-P's subsets by name: ``test``/``benchmark`` (10), ``validation``/``holdout`` (4), ``all``
#: (14), and ``noise``/``temporal`` (how frames are compared).
PERTURBATION_SUBSETS: dict[str, tuple[str, ...]] = {
    "test": _TEST,
    "benchmark": _TEST,
    "validation": _VALIDATION,
    "holdout": _VALIDATION,
    "all": tuple(p.name for p in IMAGENET_P_PERTURBATIONS),
    "noise": tuple(p.name for p in IMAGENET_P_PERTURBATIONS if p.noise),
    "temporal": tuple(p.name for p in IMAGENET_P_PERTURBATIONS if not p.noise),
}

#: ImageNet-C-bar (224 px): corruption -> severity parameters of severities 1..5 (the reference's
#: ``imagenet_c_bar.csv``, facebookresearch/augmentation-corruption), in the order of Table 2 of
#: Mintun, Kirillov and Xie (NeurIPS 2021): the order of the set's runs, tables and published errors.
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

#: The released C-bar sets by name (the names robustlab accepts as corruption subsets): their tables,
#: the only record of the sets' members and of their order.
CBAR_TABLES: dict[str, dict[str, tuple[float, ...]]] = {
    "imagenet-c-bar": IMAGENET_C_BAR,
    "cifar10-c-bar": CIFAR10_C_BAR,
}
