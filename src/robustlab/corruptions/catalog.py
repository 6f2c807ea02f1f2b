"""The 19 corruptions of ImageNet-C, declared: one line each, in the ImageNet-C order (the paper's 15
benchmark corruptions by group, then the 4 held-out ones).

Each line is the corruption's only record: group, benchmark or held out, AlexNet's published
mean error on ImageNet-C (Hendrycks & Dietterich, ICLR 2019: the denominator of CE), whether it
seeds faithfully, and where its numpy and torch kernels live (``module:function``, imported on
first use, so naming and listing corruptions never loads numba).
"""

from __future__ import annotations

from .registry import IMAGENET_C, declare

__all__: list[str] = []


def _imagenet_c(name: str, group: str, alexnet: float, *, benchmark: bool = True, seedable: bool = True,
                torch_rounding: str = "floor") -> None:
    declare(name, group=group, benchmark=benchmark, sets=(IMAGENET_C,), baselines={"alexnet": alexnet},
            seedable=seedable, kernel=f".{group}:{name}", torch_kernel=f".torch.{group}:{name}",
            torch_rounding=torch_rounding)


_imagenet_c("gaussian_noise", "noise", 0.886428)
_imagenet_c("shot_noise", "noise", 0.894468)
_imagenet_c("impulse_noise", "noise", 0.922640, seedable=False)
_imagenet_c("defocus_blur", "blur", 0.819880)
_imagenet_c("glass_blur", "blur", 0.826268)
_imagenet_c("motion_blur", "blur", 0.785948)
_imagenet_c("zoom_blur", "blur", 0.798360)
_imagenet_c("snow", "weather", 0.866816)
_imagenet_c("frost", "weather", 0.826572)
_imagenet_c("fog", "weather", 0.819324)
_imagenet_c("brightness", "digital", 0.564592)
_imagenet_c("contrast", "digital", 0.853204)
_imagenet_c("elastic_transform", "digital", 0.646056)
_imagenet_c("pixelate", "digital", 0.717840, torch_rounding="round")
_imagenet_c("jpeg_compression", "digital", 0.606500, torch_rounding="round")
_imagenet_c("speckle_noise", "noise", 0.845388, benchmark=False)
_imagenet_c("gaussian_blur", "blur", 0.787108, benchmark=False)
_imagenet_c("spatter", "weather", 0.717512, benchmark=False)
_imagenet_c("saturate", "digital", 0.658248, benchmark=False)
