"""Preprocessing carried by a model adapter: resize, centre crop, normalisation.

Images reach a model as float NCHW tensors in [0, 1] at any size (pixel space); the adapter
resizes, crops and normalises them itself, so attacks and corruptions work on pixels and
gradients flow through the preprocessing. The same geometry is available on uint8 HxWx3
numpy images (:meth:`Preprocessing.prepare_image`) so the engine's worker processes can bring
images of any native size to the model's input size before batching (PIL resampling, as
torchvision's transforms on PIL images do).

:class:`TorchvisionPreprocessing` does the geometry as Hugging Face's image processors do it
(torchvision's resize on the uint8 image, an exact size or the shorter side, the crop's offset
rounded down), for ``hf:`` models.

Rule for inputs already at the model's input size: they are not resized or cropped again
(only normalised). ImageNet-C and CIFAR-10-C are released already resized and cropped
(224 px, 32 px), and their reference evaluation only centre-crops (a no-op) and normalises.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from ..errors import InputError

if TYPE_CHECKING:  # torch only where tensors are processed: describing preprocessing needs none
    import torch

#: Interpolation names accepted by :class:`Preprocessing`.
INTERPOLATIONS = ("nearest", "bilinear", "bicubic")
_PIL_MODES = {"nearest": Image.Resampling.NEAREST, "bilinear": Image.Resampling.BILINEAR,
              "bicubic": Image.Resampling.BICUBIC}

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _pair(size: int | tuple[int, int] | list[int] | None) -> tuple[int, int] | None:
    if size is None:
        return None
    if isinstance(size, (int, np.integer)):
        return int(size), int(size)
    size = tuple(int(s) for s in size)
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise InputError(f"crop size must be an int or (height, width); got {size!r}.")
    return size  # type: ignore[return-value]


@dataclass(frozen=True)
class Preprocessing:
    """What a model does to a [0, 1] pixel image before its first layer.

    Parameters
    ----------
    resize : int or None
        Resize so the shorter side has this many pixels (aspect ratio kept), as
        ``torchvision.transforms.Resize(int)``. None: no resize.
    crop : int, (height, width) or None
        Centre crop to this size after resizing. None: no crop.
    interpolation : str
        ``nearest``, ``bilinear`` (default) or ``bicubic``; antialiased when downsampling.
    mean, std : three floats or None
        Per-channel normalisation ``(x - mean) / std`` applied last; None: none.
    """

    resize: int | None = None
    crop: tuple[int, int] | int | None = None
    interpolation: str = "bilinear"
    mean: tuple[float, float, float] | None = None
    std: tuple[float, float, float] | None = None

    def __post_init__(self) -> None:
        if self.interpolation not in INTERPOLATIONS:
            raise InputError(f"unknown interpolation {self.interpolation!r}; use one of {INTERPOLATIONS}.")
        object.__setattr__(self, "crop", _pair(self.crop))
        if self.resize is not None:
            if int(self.resize) < 1:
                raise InputError(f"resize must be a positive number of pixels; got {self.resize}.")
            object.__setattr__(self, "resize", int(self.resize))
        for field in ("mean", "std"):
            value = getattr(self, field)
            if value is not None:
                value = tuple(float(v) for v in value)
                if len(value) != 3:
                    raise InputError(f"{field} must have 3 values (R, G, B); got {value!r}.")
                object.__setattr__(self, field, value)
        if (self.mean is None) != (self.std is None):
            raise InputError("give both mean and std for normalisation, or neither.")
        if self.std is not None and min(self.std) <= 0:
            raise InputError(f"std values must be positive; got {self.std}.")

    @classmethod
    def imagenet(cls, resize: int = 256, crop: int = 224, interpolation: str = "bilinear") -> Preprocessing:
        """The standard ImageNet evaluation transform (Resize 256, CenterCrop 224, ImageNet mean/std)."""
        return cls(resize, crop, interpolation, IMAGENET_MEAN, IMAGENET_STD)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | Preprocessing | None) -> Preprocessing:
        if data is None:
            return cls()
        if isinstance(data, Preprocessing):
            return data
        unknown = set(data) - {"resize", "crop", "interpolation", "mean", "std"}
        if unknown:
            raise InputError(f"unknown preprocessing keys {sorted(unknown)}; "
                             "use resize, crop, interpolation, mean, std.")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["crop"] = list(self.crop) if self.crop else None
        out["mean"] = list(self.mean) if self.mean else None
        out["std"] = list(self.std) if self.std else None
        return out

    @property
    def input_size(self) -> tuple[int, int] | None:
        """(height, width) of the tensor the network sees, when fixed."""
        if self.crop is not None:
            return self.crop
        return None

    def _resized_size(self, h: int, w: int) -> tuple[int, int]:
        """Output (h, w) of the shorter-side resize (torchvision's rounding: int())."""
        assert self.resize is not None
        short, long = (h, w) if h <= w else (w, h)
        new_short, new_long = self.resize, int(self.resize * long / short)
        return (new_short, new_long) if h <= w else (new_long, new_short)

    def _is_model_size(self, h: int, w: int) -> bool:
        return self.crop is not None and (h, w) == self.crop

    # --- numpy (uint8 HxWx3), used by the engine's workers ---------------------------------

    def prepare_image(self, image: np.ndarray) -> np.ndarray:
        """Resize and centre-crop a uint8 HxWx3 image to the model's input size (uint8 out).

        Images already at the input size are returned unchanged. Without resize and crop the
        image is returned unchanged. The pixels are those of :meth:`prepare_pil` (PIL's
        resampling), which readers call on the decoded image directly.
        """
        h, w = image.shape[:2]
        if self._is_model_size(h, w) or (self.resize is None and self.crop is None):
            return image
        if self.resize is not None and self._resized_size(h, w) != (h, w):
            return np.array(self.prepare_pil(Image.fromarray(image)))  # a writable array, as before
        if self.crop is not None:
            image = _center_crop_numpy(image, self.crop)
        return np.ascontiguousarray(image)

    def prepare_pil(self, image: Image.Image) -> Image.Image:
        """:meth:`prepare_image` on a decoded PIL image (RGB), without leaving PIL: the same
        resize (PIL's resampling, antialiased) and the same centre crop, so the pixels are
        identical to ``prepare_image(np.asarray(image))``. Readers use it to go from the decoder
        to the model's input size with one conversion to numpy, of the cropped image only."""
        w, h = image.size
        if self._is_model_size(h, w) or (self.resize is None and self.crop is None):
            return image
        if self.resize is not None:
            nh, nw = self._resized_size(h, w)
            if (nh, nw) != (h, w):
                image = image.resize((nw, nh), _PIL_MODES[self.interpolation])
                h, w = nh, nw
        if self.crop is not None:
            top, left = _crop_box(h, w, self.crop)
            if (h, w) != self.crop:
                image = image.crop((left, top, left + self.crop[1], top + self.crop[0]))
        return image

    # --- torch (float NCHW in [0, 1]), differentiable ----------------------------------------

    def geometry(self, x: torch.Tensor) -> torch.Tensor:
        """Resize and centre-crop a float NCHW batch (differentiable; skipped at input size)."""
        h, w = x.shape[-2:]
        if self._is_model_size(h, w):
            return x
        if self.resize is not None:
            nh, nw = self._resized_size(h, w)
            if (nh, nw) != (h, w):
                mode = self.interpolation
                kwargs = {} if mode == "nearest" else {"align_corners": False, "antialias": True}
                import torch.nn.functional as F

                x = F.interpolate(x, size=(nh, nw), mode=mode, **kwargs)
                if mode == "bicubic":
                    x = x.clamp(0.0, 1.0)  # bicubic overshoots; PIL clips to the pixel range
        if self.crop is not None:
            x = _center_crop_torch(x, self.crop)
        return x

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        if self.mean is None:
            return x
        import torch

        mean = torch.as_tensor(self.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        std = torch.as_tensor(self.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        # (x - mean) / std with one new tensor: the division is done in place on the difference
        # (the same values; autograd needs neither operand of an in-place division by a constant)
        return (x - mean).div_(std)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.normalize(self.geometry(x))

    def leaves_size(self, h: int, w: int) -> bool:
        """True when :meth:`geometry` leaves an image of ``h`` x ``w`` pixels as it is."""
        if self._is_model_size(h, w):
            return True
        if self.resize is not None and self._resized_size(h, w) != (h, w):
            return False
        return self.crop is None or self.crop == (h, w)

    def from_pixels(self, pixels: torch.Tensor, out: np.ndarray | None = None) -> torch.Tensor:
        """uint8 (N, H, W, 3) pixels -> what the network gets: ``self(to_float(pixels))``, the same
        values, in one pass on the CPU when no resize or crop is left to do
        (:func:`robustlab.models.pixels.normalized_input`; into ``out`` when it fits)."""
        from .pixels import normalized_input, to_float

        h, w = int(pixels.shape[1]), int(pixels.shape[2])
        if not self.leaves_size(h, w):
            return self(to_float(pixels, pixels.device))
        if self.mean is None:
            return to_float(pixels, pixels.device)
        return normalized_input(pixels, self.normalize, _level_table(self), out)


@dataclass(frozen=True)
class Geometry:
    """A :class:`Preprocessing`'s resize and centre crop as a picklable image function: called on a
    uint8 HxWx3 array it returns :meth:`Preprocessing.prepare_image`; ``pil`` is the same on a
    decoded PIL image (:meth:`Preprocessing.prepare_pil`), which readers apply before converting
    to numpy (:func:`robustlab.data.images.read_image`'s ``prepare``)."""

    preprocessing: Preprocessing

    def __call__(self, image: np.ndarray) -> np.ndarray:
        return self.preprocessing.prepare_image(image)

    def pil(self, image: Image.Image) -> Image.Image:
        return self.preprocessing.prepare_pil(image)

    @property
    def output_size(self) -> tuple[int, int] | None:
        """(height, width) of every image it returns, when fixed (a crop), else None."""
        return self.preprocessing.crop


_LEVEL_TABLES: dict[tuple, np.ndarray] = {}


def _level_table(preprocessing: Preprocessing) -> np.ndarray:
    """The CPU lookup table of a normalisation (built once per mean and std in a process)."""
    key = (preprocessing.mean, preprocessing.std)
    if key not in _LEVEL_TABLES:
        from .pixels import level_table

        _LEVEL_TABLES[key] = level_table(preprocessing.normalize)
    return _LEVEL_TABLES[key]


def _crop_box(h: int, w: int, size: tuple[int, int]) -> tuple[int, int]:
    ch, cw = size
    if ch > h or cw > w:
        raise InputError(f"cannot centre-crop a {h}x{w} image to {ch}x{cw}: the crop is larger than "
                         "the image. Give a resize at least as large as the crop.")
    return int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))


def _center_crop_numpy(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    top, left = _crop_box(image.shape[0], image.shape[1], size)
    return image[top:top + size[0], left:left + size[1]]


def _center_crop_torch(x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    top, left = _crop_box(x.shape[-2], x.shape[-1], size)
    return x[..., top:top + size[0], left:left + size[1]]


#: How :class:`TorchvisionPreprocessing` places a centre crop: ``floor`` (``int((h - ch) / 2)``, as
#: Hugging Face's image processors) or ``round`` (``int(round((h - ch) / 2))``, torchvision's CenterCrop).
CROP_ROUNDINGS = ("floor", "round")


@dataclass(frozen=True)
class TorchvisionPreprocessing(Preprocessing):
    """Preprocessing as the image processors of Hugging Face ``transformers`` (torchvision backend) do it.

    The geometry runs on the uint8 image as a tensor, with ``torchvision.transforms.v2.functional.resize``
    (antialiased), the very call those processors make, so a model's inputs equal the processor's
    pixel for pixel; then normalisation as :class:`Preprocessing`.

    Parameters
    ----------
    size : (height, width) or None
        Resize to exactly this size (aspect ratio not kept), instead of ``resize`` (the shorter side).
    crop_rounding : {"floor", "round"}
        Where the centre crop starts when the margin is odd (the processors: ``floor``).
    resize, crop, interpolation, mean, std :
        As :class:`Preprocessing`.
    """

    size: tuple[int, int] | None = None
    crop_rounding: str = "floor"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.size is not None:
            size = _pair(self.size)
            if min(size) < 1:
                raise InputError(f"size must be positive pixels (height, width); got {self.size!r}.")
            object.__setattr__(self, "size", size)
            if self.resize is not None:
                raise InputError("give either resize (the shorter side) or size (exact height, width), not both.")
        if self.crop_rounding not in CROP_ROUNDINGS:
            raise InputError(f"unknown crop rounding {self.crop_rounding!r}; use one of {CROP_ROUNDINGS}.")

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["size"] = list(self.size) if self.size else None
        return out

    def _target_size(self, h: int, w: int) -> tuple[int, int] | None:
        if self.size is not None:
            return self.size
        return self._resized_size(h, w) if self.resize is not None else None

    def _crop_origin(self, h: int, w: int) -> tuple[int, int]:
        ch, cw = self.crop
        if ch > h or cw > w:
            raise InputError(f"cannot centre-crop a {h}x{w} image to {ch}x{cw}: the crop is larger than the image.")
        if self.crop_rounding == "floor":
            return int((h - ch) / 2.0), int((w - cw) / 2.0)
        return _crop_box(h, w, self.crop)

    def _apply(self, x: torch.Tensor) -> torch.Tensor:
        """Resize and crop a CHW/NCHW tensor (uint8 or float) with torchvision's functional ops."""
        from torchvision.transforms import v2
        from torchvision.transforms.v2 import functional as tvF

        h, w = x.shape[-2:]
        target = self._target_size(h, w)
        if target is not None and tuple(target) != (h, w):
            mode = {"nearest": v2.InterpolationMode.NEAREST, "bilinear": v2.InterpolationMode.BILINEAR,
                    "bicubic": v2.InterpolationMode.BICUBIC}[self.interpolation]
            x = tvF.resize(x, list(target), interpolation=mode, antialias=True)
            h, w = target
        if self.crop is not None:
            top, left = self._crop_origin(h, w)
            x = x[..., top:top + self.crop[0], left:left + self.crop[1]]
        return x

    def prepare_image(self, image: np.ndarray) -> np.ndarray:
        h, w = image.shape[:2]
        if self._is_model_size(h, w) or (self._target_size(h, w) is None and self.crop is None):
            return image
        import torch

        out = self._apply(torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1))
        return np.ascontiguousarray(out.permute(1, 2, 0).numpy())

    def prepare_pil(self, image: Image.Image) -> Image.Image:
        """:meth:`prepare_image` on a decoded PIL image: torchvision's resize, not Pillow's, so the
        PIL form goes through the array (the processors' pixels, exactly)."""
        h, w = image.size[1], image.size[0]
        if self._is_model_size(h, w) or (self._target_size(h, w) is None and self.crop is None):
            return image
        return Image.fromarray(self.prepare_image(np.asarray(image)))

    def leaves_size(self, h: int, w: int) -> bool:
        if self._is_model_size(h, w):
            return True
        target = self._target_size(h, w)
        if target is not None and tuple(target) != (h, w):
            return False
        return self.crop is None or self.crop == (h, w)

    def geometry(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        if self._is_model_size(h, w):
            return x
        out = self._apply(x)
        return out.clamp(0.0, 1.0) if self.interpolation == "bicubic" else out
