"""Tiny deterministic models for engine tests (also loaded via ``python:<this file>:<name>``)."""

from __future__ import annotations

import torch
from torch import nn


class TinyCNN(nn.Module):
    """conv 3->8 (3x3) -> ReLU -> global average pool -> linear 8->num_classes; seeded init."""

    def __init__(self, num_classes: int = 3, seed: int = 0) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, num_classes)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


class NaNModel(TinyCNN):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        return out * float("nan")


def make_tiny3() -> TinyCNN:
    return TinyCNN(3)


def make_tiny1000() -> TinyCNN:
    return TinyCNN(1000)


class ChannelModel(nn.Module):
    """Hand-set classifier: class k in 0..2 scores 20 x the mean of colour channel k.

    Other classes score -20, so with 1000 outputs (ImageNet index space) only classes 0..2
    (wnids n01440764, n01443537, n01484850) are ever predicted. Images whose dominant channel
    is their class are classified correctly; corruptions that shift colours cause errors.
    """

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.scale = nn.Parameter(torch.tensor(20.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.full((x.shape[0], self.num_classes), -20.0, device=x.device, dtype=x.dtype)
        means = x.mean(dim=(2, 3)) * self.scale
        return torch.cat([means, out[:, 3:]], dim=1)


def make_channel1000() -> ChannelModel:
    return ChannelModel(1000)


class SlowChannelModel(ChannelModel):
    """ChannelModel that sleeps ``delay`` seconds per batch, so a test can kill a run mid-way."""

    def __init__(self, num_classes: int, delay: float = 0.2):
        super().__init__(num_classes)
        self.delay = delay

    def forward(self, x):
        import time

        time.sleep(self.delay)
        return super().forward(x)


def make_slow_channel1000() -> nn.Module:
    return SlowChannelModel(1000)


def make_slow_channel10() -> nn.Module:
    """For 10-class sets (the demo scenes)."""
    return SlowChannelModel(10)


def make_slow_channel3() -> nn.Module:
    """For 3-class sets (the engine tests' labelled folders)."""
    return SlowChannelModel(3)


def make_slower_channel3() -> nn.Module:
    """For runs that must outlast a node's death being noticed (the GCS takes 3-4 s on the test cluster,
    more under load): 1 s a batch."""
    return SlowChannelModel(3, delay=1.0)
