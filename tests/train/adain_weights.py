"""Small AdaIN networks for tests: the release's layout at 1/8 of its width, randomly initialised
near the identity (dirac kernels plus Gaussian noise), so that content structure can pass through
without training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from robustlab.models.weights import file_sha256
from robustlab.train.adain import AdainWeights, adain_decoder, normalised_vgg19

WIDTH = 0.125


def near_identity(net: nn.Module, gen: torch.Generator, noise: float = 0.1) -> None:
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
            with torch.no_grad():
                nn.init.dirac_(m.weight)
                m.weight.add_(torch.randn(m.weight.shape, generator=gen) * noise / np.sqrt(fan_in))
                m.bias.zero_()


def make_test_weights(folder: Path, seed: int = 0) -> AdainWeights:
    """Write ``vgg_normalised.pth`` and ``decoder.pth`` (width 1/8) into ``folder``; return them."""
    folder.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    vgg, decoder = normalised_vgg19(WIDTH), adain_decoder(WIDTH)
    near_identity(vgg, gen)
    near_identity(decoder, gen)
    with torch.no_grad():
        decoder[-1].weight.mul_(0.5)  # keep outputs inside [0, 1] mostly (no saturation)
    torch.save(vgg.state_dict(), folder / "vgg_normalised.pth")
    torch.save(decoder.state_dict(), folder / "decoder.pth")
    enc, dec = folder / "vgg_normalised.pth", folder / "decoder.pth"
    return AdainWeights(enc, dec, WIDTH, {"encoder": file_sha256(enc), "decoder": file_sha256(dec)})
