"""The architectures of the adversarial-robustness study (Kunhardt, Deza, Poggio), for 32x32x3.

All take float NCHW in [0, 1] (no normalisation: the paper trains on raw pixels) and return
logits. Build them with :func:`build_architecture` so the initial weights depend only on
(architecture, seed, classes): the same seed gives the same starting weights on every dataset
("matched initial weights"), and no global random state is touched.
"""

from __future__ import annotations

import hashlib

import torch
from torch import nn

from ..errors import InputError, unknown_name
from ..registry import Registry
from ..seeding import derive_seed

ARCHITECTURES: Registry = Registry("architecture")


@ARCHITECTURES.register("lenet")
class LeNet(nn.Module):
    """LeNet-5 for 32x32 RGB: conv5-pool-conv5-pool-fc120-fc84-fc."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


#: Hidden units of the paper's FullyConnectedNet (Kunhardt, Deza & Poggio: 1 hidden layer of 7,500).
FC_PAPER_WIDTH = 7500


@ARCHITECTURES.register("fc")
class FullyConnectedNet(nn.Module):
    """One hidden layer of ``width`` ReLU units (7,500 as in the paper) on the flattened 32x32x3 image."""

    def __init__(self, num_classes: int = 10, width: int = FC_PAPER_WIDTH) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, width), nn.ReLU(), nn.Linear(width, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@ARCHITECTURES.register("resnet50")
def resnet50_32(num_classes: int = 10) -> nn.Module:
    """torchvision's ResNet-50 adapted to 32 px: 3x3 stride-1 stem, no max-pool (CIFAR practice)."""
    from torchvision.models import resnet50

    model = resnet50(weights=None, num_classes=num_classes)
    model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


#: Options each architecture takes besides ``num_classes`` (``fc``: its hidden ``width``).
ARCHITECTURE_OPTIONS: dict[str, tuple[str, ...]] = {"lenet": (), "fc": ("width",), "resnet50": ()}


def check_architecture_options(name: str, options: dict, where: str = "architecture") -> dict:
    """Validated options of architecture ``name``; InputError for an unknown name or option."""
    if name not in ARCHITECTURES:
        raise unknown_name("architecture", name, ARCHITECTURES.names())
    takes = ARCHITECTURE_OPTIONS.get(name, ())
    unknown = sorted(set(options) - set(takes))
    if unknown:
        raise InputError(f"{where}: architecture {name!r} does not take {', '.join(unknown)}"
                         + (f"; it takes {', '.join(takes)}." if takes else "; it has no options."))
    width = options.get("width")
    if width is not None and (isinstance(width, bool) or not isinstance(width, int) or width < 1):
        raise InputError(f"{where}: width must be a positive integer (hidden units; the paper uses "
                         f"{FC_PAPER_WIDTH}); got {width!r}.")
    return {k: v for k, v in options.items() if v is not None}


def build_architecture(name: str, *, seed: int, num_classes: int = 10, **options: int) -> nn.Module:
    """A freshly initialised model whose weights depend only on (name, seed, num_classes, options).

    ``options``: see :data:`ARCHITECTURE_OPTIONS` (``width`` for ``fc``, default 7,500). The same
    seed gives the same weights whatever the dataset ("matched initial weights").
    """
    options = check_architecture_options(name, options)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "init", name, num_classes))
        return ARCHITECTURES.get(name)(num_classes=num_classes, **options)


def weights_fingerprint(model: nn.Module) -> str:
    """A short hash of every parameter and buffer, to verify matched initial weights."""
    h = hashlib.blake2b(digest_size=12)
    for key, value in sorted(model.state_dict().items()):
        h.update(key.encode())
        h.update(value.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()
