"""Tiny models the matrix evaluates (loaded as ``python:<this file>:<name>``)."""

from __future__ import annotations

import time

import torch
from torch import nn


class DominantChannel(nn.Module):
    """2 classes: class k scores 10 x the mean of colour channel k (images of tests' folders
    have their class's channel dominant, so the model is right on most of them)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(10.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3))[:, :2] * self.scale


class SlowDominantChannel(DominantChannel):
    """The same, 0.3 s per batch: a run long enough to be killed in the middle."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.3)
        return super().forward(x)


def make_two_class() -> nn.Module:
    return DominantChannel()


def make_slow_two_class() -> nn.Module:
    return SlowDominantChannel()


def make_failing() -> nn.Module:
    raise RuntimeError("weights file is gone")


class Raising(DominantChannel):
    """Fails in forward, as a user's model with a bug does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("shape mismatch in layer 3")


def make_raising() -> nn.Module:
    return Raising()


class MeanColourHead(nn.Module):
    """2 classes from the mean colour through a linear head (a model ``finetune`` can train)."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(3, 2)
        with torch.no_grad():
            self.head.weight.copy_(torch.tensor([[10.0, -10.0, 0.0], [-10.0, 10.0, 0.0]]))
            self.head.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x.mean(dim=(2, 3)))


def make_mean_colour() -> nn.Module:
    from robustlab.models import Classifier, Preprocessing

    return Classifier(MeanColourHead(), name="mean-colour", preprocessing=Preprocessing(resize=32, crop=32),
                      num_classes=2)
