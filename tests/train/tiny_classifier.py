"""Tiny classifiers for fine-tuning tests (loaded as ``python:<this file>:<factory>``)."""

from __future__ import annotations

import torch
from torch import nn

from robustlab.models import Classifier, Preprocessing

PREPROCESSING = Preprocessing(resize=36, crop=32, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))


class TinyNet(nn.Module):
    """conv 3->width -> batch norm -> ReLU -> global average pool -> dropout -> linear width->k."""

    def __init__(self, num_classes: int = 3, width: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.bn = nn.BatchNorm2d(width)
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.drop(torch.relu(self.bn(self.conv(x))).mean(dim=(2, 3))))


def _build(num_classes: int, width: int = 8) -> Classifier:
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(0)
    net = TinyNet(num_classes, width)
    torch.random.set_rng_state(gen_state)
    return Classifier(net, name=f"tiny{num_classes}", preprocessing=PREPROCESSING, num_classes=num_classes)


def make_tiny3() -> Classifier:
    return _build(3)


def make_tiny1000() -> Classifier:
    return _build(1000)


def make_wide3() -> Classifier:
    return _build(3, width=16)


def make_bare3() -> TinyNet:
    """A bare module (no preprocessing, no class count): load it with preprocessing= to fine-tune."""
    return _build(3).net
