"""ImageNet-P's 14 perturbation sequences, declared: one line each, the 10 test ones then the 4
validation ones, with AlexNet's published flip probability and top-5 distance (Hendrycks &
Dietterich, ICLR 2019: the denominators of FR and T5D) and their generators in :mod:`.sequences`
(imported on first use)."""

from __future__ import annotations

from .registry import declare

__all__: list[str] = []


def _imagenet_p(name: str, function: str, *, noise: bool, alexnet: tuple[float, float], test: bool = True,
                frames: dict[str, int] | None = None) -> None:
    declare(name, noise=noise, test=test, frames=frames, baselines={"alexnet": alexnet},
            generate=f".sequences:{function}")


_imagenet_p("gaussian_noise", "gaussian_noise", noise=True, alexnet=(0.2365, 4.77))
_imagenet_p("shot_noise", "shot_noise", noise=True, alexnet=(0.3006, 5.76))
_imagenet_p("motion_blur", "motion_blur_sequence", noise=False, alexnet=(0.0930, 1.93), frames={"cifar": 21})
_imagenet_p("zoom_blur", "zoom_blur", noise=False, alexnet=(0.0594, 1.34))
_imagenet_p("snow", "snow", noise=False, alexnet=(0.1193, 2.42))
_imagenet_p("brightness", "brightness", noise=False, alexnet=(0.0489, 1.19))
_imagenet_p("translate", "translate", noise=False, alexnet=(0.1101, 2.63), frames={"imagenet": 41, "cifar": 16})
_imagenet_p("rotate", "rotate", noise=False, alexnet=(0.1310, 2.95))
_imagenet_p("tilt", "tilt", noise=False, alexnet=(0.0705, 1.75))
_imagenet_p("scale", "scale", noise=False, alexnet=(0.2353, 4.48))
_imagenet_p("speckle_noise", "speckle_noise", noise=True, alexnet=(0.1865, 3.89), test=False)
_imagenet_p("gaussian_blur", "gaussian_blur", noise=False, alexnet=(0.0278, 0.70), test=False)
_imagenet_p("spatter", "spatter", noise=False, alexnet=(0.0505, 1.26), test=False)
_imagenet_p("shear", "shear", noise=False, alexnet=(0.1066, 2.48), test=False)
