"""AdaIN style transfer (Huang and Belongie, 2017): a VGG-19 encoder and its trained decoder.

The networks are those of the pytorch-AdaIN release (the weights the Robust Detection
Benchmark's Stylized-COCO/-VOC/-Cityscapes were made with, through bethgelab's
stylize-datasets):

- **encoder** ``vgg_normalised.pth``: the "normalised" VGG-19 of Gatys et al. with a leading
  1x1 convolution that maps RGB in [0, 1] to the network's input, reflection padding, and
  max pooling with ``ceil_mode``; used up to ``relu4_1`` (its first 31 modules);
- **decoder** ``decoder.pth``: the mirror image of the encoder up to ``relu4_1``, nearest
  upsampling instead of pooling, no normalisation.

Stylisation of a content image ``c`` with style ``s`` and strength ``alpha``:
``t = AdaIN(E(c), E(s))`` (the content features' per-channel mean and standard deviation
replaced by the style's; std from the unbiased variance + 1e-5), ``t = alpha t + (1 - alpha) E(c)``,
output ``D(t)`` clipped to [0, 1], cropped to the content's size (the decoder returns multiples
of 8 pixels) and rounded to uint8.

Weights come from :func:`resolve_adain_weights`: downloaded on first use into
``<torch hub>/checkpoints/adain/`` and checked against pinned SHA-256 sums. No checksum for
these files is published; robustlab pins none itself, so a user pins them once (see
:data:`SHA256_ENV`) and unverified weights are refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn

from ..errors import DataError, InputError
from ..models.weights import checkpoint_dir, fetch_checkpoint, file_sha256

#: Modules of the full normalised VGG-19 kept by the encoder (through relu4_1).
ENCODER_DEPTH = 31
#: Added to the variance before the square root (as pytorch-AdaIN).
EPS = 1e-5
#: Smallest content/style side: relu4_1 must have at least 2x2 positions for a variance.
MIN_SIDE = 16
#: Environment variable pinning the checksums: ``vgg_normalised.pth=<hex>,decoder.pth=<hex>``.
SHA256_ENV = "ROBUSTLAB_ADAIN_SHA256"


@dataclass(frozen=True)
class WeightFile:
    """A released weight file: its name, URL and pinned SHA-256 (None: not pinned by robustlab)."""

    name: str
    url: str
    sha256: str | None = None


#: The pytorch-AdaIN release (v0.0.0). No SHA-256 is published for these files.
ADAIN_RELEASE: dict[str, WeightFile] = {
    "encoder": WeightFile("vgg_normalised.pth",
                          "https://github.com/naoto0804/pytorch-AdaIN/releases/download/v0.0.0/vgg_normalised.pth"),
    "decoder": WeightFile("decoder.pth",
                          "https://github.com/naoto0804/pytorch-AdaIN/releases/download/v0.0.0/decoder.pth"),
}


# --- the networks --------------------------------------------------------------------------------------------


def _conv_block(c_in: int, c_out: int) -> list[nn.Module]:
    return [nn.ReflectionPad2d((1, 1, 1, 1)), nn.Conv2d(c_in, c_out, (3, 3)), nn.ReLU()]


def _pool() -> nn.Module:
    return nn.MaxPool2d((2, 2), (2, 2), (0, 0), ceil_mode=True)


def _widths(width: float) -> tuple[int, int, int, int]:
    if not 0 < width <= 1:
        raise InputError(f"AdaIN width must be in (0, 1]; got {width}.")
    return tuple(max(1, int(round(c * width))) for c in (64, 128, 256, 512))  # type: ignore[return-value]


def normalised_vgg19(width: float = 1.0) -> nn.Sequential:
    """The full normalised VGG-19 (53 modules, through relu5_4) in the release's layout.

    ``width`` scales every channel count (1.0: the released network; tests use small widths).
    """
    c1, c2, c3, c4 = _widths(width)
    layers: list[nn.Module] = [nn.Conv2d(3, 3, (1, 1))]
    layers += _conv_block(3, c1) + _conv_block(c1, c1) + [_pool()]
    layers += _conv_block(c1, c2) + _conv_block(c2, c2) + [_pool()]
    layers += _conv_block(c2, c3) + _conv_block(c3, c3) + _conv_block(c3, c3) + _conv_block(c3, c3) + [_pool()]
    layers += _conv_block(c3, c4) + _conv_block(c4, c4) + _conv_block(c4, c4) + _conv_block(c4, c4) + [_pool()]
    layers += _conv_block(c4, c4) + _conv_block(c4, c4) + _conv_block(c4, c4) + _conv_block(c4, c4)
    return nn.Sequential(*layers)


def adain_decoder(width: float = 1.0) -> nn.Sequential:
    """The AdaIN decoder (29 modules) in the release's layout; ``width`` as :func:`normalised_vgg19`."""
    c1, c2, c3, c4 = _widths(width)
    up = [nn.Upsample(scale_factor=2, mode="nearest")]
    layers = _conv_block(c4, c3) + up
    layers += _conv_block(c3, c3) + _conv_block(c3, c3) + _conv_block(c3, c3) + _conv_block(c3, c2) + up
    layers += _conv_block(c2, c2) + _conv_block(c2, c1) + up
    layers += _conv_block(c1, c1) + [nn.ReflectionPad2d((1, 1, 1, 1)), nn.Conv2d(c1, 3, (3, 3))]
    return nn.Sequential(*layers)


def channel_statistics(features: torch.Tensor, eps: float = EPS) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-image, per-channel mean and std of (N, C, H, W) features: each (N, C, 1, 1).

    std = sqrt(unbiased variance over H*W + ``eps``).
    """
    n, c = features.shape[:2]
    flat = features.reshape(n, c, -1)
    if flat.shape[2] < 2:
        raise InputError("AdaIN needs feature maps of at least 2 positions; the image is too small "
                         f"(give images of at least {MIN_SIDE}x{MIN_SIDE} pixels).")
    return flat.mean(dim=2).view(n, c, 1, 1), (flat.var(dim=2) + eps).sqrt().view(n, c, 1, 1)


def adaptive_instance_norm(content: torch.Tensor, style_mean: torch.Tensor, style_std: torch.Tensor) -> torch.Tensor:
    """Content features with each channel's mean and std replaced by the style's."""
    mean, std = channel_statistics(content)
    return (content - mean) / std * style_std + style_mean


@dataclass(frozen=True)
class AdainWeights:
    """Where the encoder and decoder weights are, and the networks' width (1.0 for the release)."""

    encoder: Path
    decoder: Path
    width: float = 1.0
    digests: dict[str, str] = field(default_factory=dict, compare=False)

    def identity(self) -> str:
        """A short identity of the weights (SHA-256 prefixes and width), stored with outputs."""
        enc = self.digests.get("encoder") or file_sha256(self.encoder)
        dec = self.digests.get("decoder") or file_sha256(self.decoder)
        return f"encoder:{enc[:16]},decoder:{dec[:16]}" + (f",width:{self.width:g}" if self.width != 1.0 else "")


class AdaIN(nn.Module):
    """Encoder (through relu4_1) + decoder; see the module docstring for the computation.

    Parameters
    ----------
    encoder : nn.Sequential
        The encoder modules (the first :data:`ENCODER_DEPTH` of :func:`normalised_vgg19`).
    decoder : nn.Sequential
    """

    def __init__(self, encoder: nn.Sequential, decoder: nn.Sequential) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    @classmethod
    def from_weights(cls, weights: AdainWeights) -> AdaIN:
        """Build the networks and load the weight files (checked to fit the architecture)."""
        from ..safeload import load_checkpoint
        from .heads import check_state_dict

        vgg, decoder = normalised_vgg19(weights.width), adain_decoder(weights.width)
        for net, path, what in ((vgg, weights.encoder, "AdaIN encoder"), (decoder, weights.decoder, "AdaIN decoder")):
            state = load_checkpoint(path, what=f"{what} weights", fix="delete the file to download it again")
            if not isinstance(state, Mapping):
                raise DataError(f"{path} is not a state_dict; it is not the {what} of pytorch-AdaIN.")
            check_state_dict(net, state, what=f"{what} weights {path}",
                             fix=f"Give the pytorch-AdaIN {'vgg_normalised' if net is vgg else 'decoder'}.pth "
                                 f"(width {weights.width:g}).")
            net.load_state_dict(state)
        return cls(nn.Sequential(*list(vgg.children())[:ENCODER_DEPTH]), decoder).eval()

    @torch.no_grad()
    def style_statistics(self, style: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std at relu4_1 of style images, float (N, 3, H, W) in [0, 1]: each (N, C, 1, 1)."""
        return channel_statistics(self.encoder(style))

    @torch.no_grad()
    def forward(self, content: torch.Tensor, style_mean: torch.Tensor, style_std: torch.Tensor,
                alpha: float = 1.0) -> torch.Tensor:
        """Stylised content: float (N, 3, H, W) in [0, 1] in, the same shape out (clipped)."""
        h, w = content.shape[-2:]
        features = self.encoder(content)
        target = adaptive_instance_norm(features, style_mean, style_std)
        if alpha != 1.0:
            target = alpha * target + (1 - alpha) * features
        return self.decoder(target)[..., :h, :w].clamp(0.0, 1.0)


def to_tensor(image: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """uint8 HxWx3 -> float (1, 3, H, W) in [0, 1] on ``device``."""
    return torch.tensor(image, dtype=torch.uint8, device=device).permute(2, 0, 1)[None].float().div_(255.0)


def to_uint8(image: torch.Tensor) -> np.ndarray:
    """float (1, 3, H, W) in [0, 1] -> uint8 HxWx3, rounded (as ``torchvision.utils.save_image``)."""
    return image[0].mul(255).add_(0.5).clamp_(0, 255).to(torch.uint8).permute(1, 2, 0).cpu().numpy()


def resize_shorter_side(image: np.ndarray, size: int) -> np.ndarray:
    """uint8 HxWx3 with the shorter side resized to ``size`` (PIL bilinear, antialiased); 0 keeps it."""
    if not size:
        return image
    h, w = image.shape[:2]
    if min(h, w) == size:
        return image
    nh, nw = (size, max(1, int(size * w / h))) if h <= w else (max(1, int(size * h / w)), size)
    return np.asarray(Image.fromarray(image).resize((nw, nh), Image.Resampling.BILINEAR))


# --- weights -------------------------------------------------------------------------------------------------


def pinned_checksums(release: Mapping[str, WeightFile] = ADAIN_RELEASE,
                     sha256: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """``{file name: pinned SHA-256 or None}``: robustlab's pins, then :data:`SHA256_ENV`, then ``sha256``."""
    pins: dict[str, str | None] = {f.name: f.sha256 for f in release.values()}
    env = os.environ.get(SHA256_ENV, "")
    for part in (p.strip() for p in env.split(",") if p.strip()):
        name, sep, digest = part.partition("=")
        if not sep:
            raise InputError(f"{SHA256_ENV}={env!r}: write NAME=SHA256 pairs separated by commas, e.g. "
                             "vgg_normalised.pth=<64 hex digits>,decoder.pth=<64 hex digits>.")
        pins[name.strip()] = digest.strip().lower()
    for name, digest in (sha256 or {}).items():
        pins[name] = digest.strip().lower()
    for name, digest in pins.items():
        if digest is not None and (len(digest) != 64 or any(ch not in "0123456789abcdef" for ch in digest)):
            raise InputError(f"the pinned SHA-256 of {name} ({digest!r}) is not 64 hex digits.")
    return pins


def resolve_adain_weights(weights_dir: str | os.PathLike | None = None, *, sha256: Mapping[str, str] | None = None,
                          release: Mapping[str, WeightFile] = ADAIN_RELEASE) -> AdainWeights:
    """The released AdaIN weights, downloaded on first use and verified against pinned checksums.

    Parameters
    ----------
    weights_dir : path, optional
        Folder of ``vgg_normalised.pth`` and ``decoder.pth`` (default
        ``<torch hub>/checkpoints/adain``); files already there are used, missing ones downloaded.
    sha256 : dict, optional
        ``{file name: SHA-256}`` pins (also from the environment variable :data:`SHA256_ENV`).
    release : dict
        The files and URLs (default :data:`ADAIN_RELEASE`).

    Raises
    ------
    OfflineError
        A file is missing and cannot be downloaded: names the file and the folder to put it in.
    DataError
        A file's SHA-256 differs from its pin (refused; a fresh download is deleted), or no
        checksum is pinned for it (refused, with the file's SHA-256 and how to pin it).
    """
    folder = Path(weights_dir).expanduser() if weights_dir is not None else checkpoint_dir() / "adain"
    pins = pinned_checksums(release, sha256)
    paths: dict[str, Path] = {}
    digests: dict[str, str] = {}
    for role, spec in release.items():
        pin = pins.get(spec.name)
        path = fetch_checkpoint(spec.url, f"AdaIN {role} ({spec.name})", folder=folder, filename=spec.name,
                                sha256=pin)
        if pin is None:
            actual = file_sha256(path)
            raise DataError(
                f"refusing unverified AdaIN weights {path}: no SHA-256 is pinned for {spec.name} (none is published "
                f"with the pytorch-AdaIN release). Its SHA-256 is {actual}. If this file is the one released at "
                f"{spec.url}, pin it: --weights-sha256 {spec.name}={actual} (or {SHA256_ENV}="
                f"{spec.name}={actual},...).")
        paths[role] = path
        digests[role] = pin
    return AdainWeights(paths["encoder"], paths["decoder"], 1.0, digests)
