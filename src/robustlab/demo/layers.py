"""Building blocks of the demo networks: input normalisation, local contrast, conv-BN-ReLU."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

#: Per-channel mean and std of the demo scenes' pixels (fixed constants, in [0, 1] units).
SCENE_MEAN = (0.47, 0.45, 0.42)
SCENE_STD = (0.26, 0.25, 0.26)
NUM_CLASSES = 10


class Normalize(nn.Module):
    """``(x - mean) / std`` per channel, with the constants as buffers (saved with the weights)."""

    def __init__(self, mean: tuple[float, ...] = SCENE_MEAN, std: tuple[float, ...] = SCENE_STD) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class LocalContrast(nn.Module):
    """Adds local-contrast channels: ``(x - gaussian_mean(x)) / local_std`` (sigma 3 px).

    (N, 3, H, W) -> (N, 6, H, W): the normalised input followed by its local contrast, which
    makes a digit's strokes stand out whatever its colour and the background's (the networks
    learn several times faster with it).
    """

    def __init__(self, size: int = 9, sigma: float = 3.0, eps: float = 0.05) -> None:
        super().__init__()
        ax = torch.arange(size, dtype=torch.float32) - size // 2
        g = torch.exp(-ax ** 2 / (2 * sigma ** 2))
        g = g / g.sum()
        self.register_buffer("kernel", (g[:, None] * g[None, :]).expand(3, 1, size, size).clone())
        self.pad = size // 2
        self.eps = eps
        self.normalize = Normalize()

    def _blur(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(F.pad(x, [self.pad] * 4, mode="reflect"), self.kernel, groups=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        detail = x - self._blur(x)
        spread = self._blur(detail * detail).mean(1, keepdim=True).clamp(min=0).sqrt()
        return torch.cat([self.normalize(x), detail / (spread + self.eps)], 1)


def conv_bn(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    """3x3 convolution, batch norm, ReLU."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True))
