"""The ``hf:`` model source: Hugging Face ``transformers`` image classifiers.

Specs (the part after ``hf:``): ``ORG/NAME`` or ``ORG/NAME@REVISION`` (a model on the Hub, e.g.
``hf:google/vit-base-patch16-224``, ``hf:microsoft/resnet-50@main``), or ``PATH``, a folder written
by ``save_pretrained`` (the model's ``config.json`` and weights, and its image processor's
``preprocessor_config.json``).

The model is ``AutoModelForImageClassification.from_pretrained`` and its preprocessing the image
processor's (``AutoImageProcessor.from_pretrained``, torchvision backend), reproduced inside the
adapter with the processor's own operations (:class:`~robustlab.models.preprocessing.TorchvisionPreprocessing`):
resize (to a size, or of the shorter side), centre crop, ``rescale_factor`` 1/255 and mean/std,
with its interpolation; ConvNeXT's ``crop_pct`` too. A processor that does anything else (its own
``_preprocess``, padding, another rescale factor, LANCZOS) is refused, naming the setting.

The model's ``id2label`` names its classes: ImageNet benchmarks check that they are ImageNet's
1,000 (:mod:`.label_space`). ``trust_remote_code`` is never set: a model whose repository needs its
own code is refused, with how to load it yourself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..errors import DataError, InputError, ModelError
from .hub import hub_repo_source, weights_guard
from .label_space import imagenet_order, is_imagenet, match_labels
from .preprocessing import TorchvisionPreprocessing
from .projection import project
from .protocol import Classifier
from .registry import Model, absolute_path, model_source

__all__ = ["HFClassifier", "HFNet", "hf_canonical", "hf_preprocessing", "load_hf", "split_hf_spec"]

#: Weights files ``from_pretrained`` looks for (one of them), and the files it needs besides.
HF_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")
HF_REQUIRED = ("config.json", "preprocessor_config.json")
_REPO = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
#: PIL resampling numbers of the image processors -> robustlab interpolation names.
_RESAMPLE = {0: "nearest", 2: "bilinear", 3: "bicubic"}


def split_hf_spec(rest: str) -> tuple[str, str | None, bool]:
    """``(repository id or folder, revision or None, is a local folder)`` of the part after ``hf:``."""
    path = Path(rest).expanduser()
    if path.is_dir() or rest.startswith((".", "/", "~")):
        return str(path), None, True
    repo, _, revision = rest.partition("@")
    if not _REPO.fullmatch(repo):
        raise InputError(f"hf:{rest} is neither a folder written by save_pretrained nor a Hub model id ORG/NAME"
                         "[@REVISION], e.g. hf:google/vit-base-patch16-224.")
    return repo, revision or None, False


def hf_canonical(rest: str) -> str:
    """A folder as an absolute path; a Hub id as given."""
    target, revision, local = split_hf_spec(rest)
    return absolute_path(target) if local else target + (f"@{revision}" if revision else "")


class HFNet(nn.Module):
    """A ``transformers`` image classifier as ``pixel_values -> logits``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=x).logits


class HFClassifier(Classifier):
    """A ``hf:`` model: a classifier that knows its labels (``id2label``, in column order)."""

    @property
    def labels(self) -> tuple[str, ...]:
        config = self.net.model.config
        return tuple(str(config.id2label[i]) for i in range(len(config.id2label)))

    def for_class_names(self, names: tuple[str, ...]) -> Classifier:
        """This model with its columns in the order of a benchmark's classes ``names`` (ImageNet's
        wnids for ImageNet data, see :mod:`.label_space`); ModelError when its labels are other classes."""
        cache = self.__dict__.setdefault("_by_names", {})
        if names in cache:
            return cache[names]
        labels = self.labels
        imagenet = is_imagenet(names)
        order = imagenet_order(labels) if imagenet else match_labels(labels, names)
        if order is None:
            raise _label_error(self.name, labels, names, imagenet)
        adapted = self if order == list(range(len(order))) else project(
            self, [[i] for i in order], name=f"{self.name} [columns in the data's class order]")
        cache[names] = adapted
        return adapted


def _label_error(name: str, labels: tuple[str, ...], names: tuple[str, ...], imagenet: bool) -> ModelError:
    shown = ", ".join(repr(lb) for lb in labels[:3]) + (", ..." if len(labels) > 3 else "")
    if imagenet:
        return ModelError(f"{name}: its id2label has {len(labels):,} labels ({shown}), which are not ImageNet-1k's "
                          "1,000 classes, so its logits cannot be scored on ImageNet data. Use a model fine-tuned on "
                          "ImageNet-1k (e.g. hf:google/vit-base-patch16-224), or fine-tune this one (robustlab "
                          "finetune), or give an id2label that names the 1,000 classes.")
    wanted = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
    return ModelError(f"{name}: its id2label ({len(labels):,} labels: {shown}) does not name the data's {len(names):,} "
                      f"classes ({wanted}). Give data with the model's classes (folder names equal to its labels), or "
                      "a model trained on the data's classes.")


def _resample(processor: Any, what: str) -> str:
    value = getattr(processor, "resample", 2)
    number = int(getattr(value, "value", value)) if value is not None else 2
    if number not in _RESAMPLE:
        raise ModelError(f"{what}: its image processor resamples with PIL mode {value}, which robustlab does not "
                         f"reproduce (nearest, bilinear and bicubic). {_FIX}.")
    return _RESAMPLE[number]


_FIX = ("Give the preprocessing yourself (--resize, --crop, --interpolation, --mean, --std; predictions then differ from "
        "transformers' processor), or load the model in a python: factory with your own preprocessing")


def _is_generic(processor: Any) -> bool:
    from transformers.image_processing_backends import TorchvisionBackend

    cls = type(processor)
    return isinstance(processor, TorchvisionBackend) and all(
        getattr(cls, m) is getattr(TorchvisionBackend, m) for m in ("_preprocess", "resize", "center_crop",
                                                                    "rescale_and_normalize"))


def _is_convnext(processor: Any) -> bool:
    from transformers import ConvNextImageProcessor
    from transformers.image_processing_backends import TorchvisionBackend

    cls = type(processor)
    return isinstance(processor, ConvNextImageProcessor) and all(
        getattr(cls, m) is getattr(ConvNextImageProcessor, m) for m in ("_preprocess", "resize")) and all(
        getattr(cls, m) is getattr(TorchvisionBackend, m) for m in ("center_crop", "rescale_and_normalize"))


def hf_preprocessing(processor: Any, what: str) -> TorchvisionPreprocessing:
    """The preprocessing of a ``transformers`` image processor (see the module docstring); ModelError
    for one robustlab cannot reproduce exactly."""
    name = type(processor).__name__
    convnext = _is_convnext(processor)
    if not (convnext or _is_generic(processor)):
        raise ModelError(f"{what}: its image processor {name} has its own preprocessing steps, which robustlab does "
                         f"not reproduce (it reproduces processors that resize, centre-crop, rescale and normalise, "
                         f"and ConvNeXT's). {_FIX}.")
    if getattr(processor, "do_pad", False):
        raise ModelError(f"{what}: its image processor {name} pads images (do_pad), which robustlab does not "
                         f"reproduce. {_FIX}.")
    interpolation = _resample(processor, what)
    size = getattr(processor, "size", None)
    resize = exact = crop = None
    if getattr(processor, "do_resize", False) and size is not None:
        shortest, height, width = size.shortest_edge, size.height, size.width
        if convnext:
            if not shortest:
                raise ModelError(f"{what}: its ConvNeXT processor has no shortest_edge size ({size}). {_FIX}.")
            pct = float(getattr(processor, "crop_pct", None) or 224 / 256)
            if shortest < 384:
                resize, crop = int(shortest / pct), (shortest, shortest)
            else:
                exact = (shortest, shortest)
        elif shortest and not (size.longest_edge or height or width):
            resize = int(shortest)
        elif height and width and not shortest:
            exact = (int(height), int(width))
        else:
            raise ModelError(f"{what}: its image processor {name} resizes to {size}, which robustlab does not "
                             f"reproduce (a shortest_edge, or a height and width). {_FIX}.")
    if getattr(processor, "do_center_crop", False):
        c = processor.crop_size
        crop = (int(c.height), int(c.width))
    if crop is None and exact is not None:
        crop = exact  # a no-op crop: the model's input size
    mean = std = None
    if getattr(processor, "do_rescale", False) and abs(float(processor.rescale_factor) - 1 / 255) > 1e-12:
        raise ModelError(f"{what}: its image processor rescales by {processor.rescale_factor}, not 1/255; robustlab "
                         f"feeds pixels in [0, 1]. {_FIX}.")
    if not getattr(processor, "do_rescale", False):
        raise ModelError(f"{what}: its image processor does not rescale pixels to [0, 1] (do_rescale is off), which "
                         f"robustlab does not reproduce. {_FIX}.")
    if getattr(processor, "do_normalize", False):
        mean, std = _three(processor.image_mean, what), _three(processor.image_std, what)
    return TorchvisionPreprocessing(resize=resize, crop=crop, interpolation=interpolation, mean=mean, std=std,
                                    size=exact, crop_rounding="floor")


def _three(value: Any, what: str) -> tuple[float, float, float]:
    values = tuple(float(v) for v in (value if isinstance(value, (list, tuple)) else [value] * 3))
    if len(values) != 3:
        raise ModelError(f"{what}: its image processor normalises with {len(values)} values per pixel; robustlab "
                         f"feeds RGB (3). {_FIX}.")
    return values  # type: ignore[return-value]


def _from_pretrained(loader: Any, target: str, revision: str | None, what: str) -> Any:
    try:
        return loader.from_pretrained(target, revision=revision)
    except ValueError as exc:
        if "trust_remote_code" in str(exc):
            raise ModelError(f"{what} needs code from its own repository (trust_remote_code), and robustlab never runs "
                             "a repository's code on your behalf. Read that code, then load the model yourself in a "
                             "python: factory (AutoModelForImageClassification.from_pretrained(..., "
                             "trust_remote_code=True) wrapped in robustlab.models.Classifier).") from None
        raise
    except OSError as exc:
        raise DataError(f"cannot load {what}: {exc}") from None


@model_source("hf", canonical=hf_canonical)
def load_hf(rest: str, options: dict[str, Any]) -> Model:
    """``hf:ORG/NAME[@REVISION]`` or ``hf:FOLDER``: a transformers image classifier (robustlab[hf]).

    Its image processor's preprocessing runs inside the adapter; ``id2label`` names its classes."""
    try:
        from transformers import AutoImageProcessor, AutoModelForImageClassification
    except ImportError as exc:
        raise InputError("hf: models need the transformers package: pip install 'robustlab[hf]'.") from exc
    target, revision, local = split_hf_spec(rest)
    what = f"hf:{hf_canonical(rest)}"
    if local:
        missing = [f for f in HF_REQUIRED if not (Path(target) / f).is_file()]
        if not Path(target).is_dir() or missing:
            raise DataError(f"{what} is not a folder written by save_pretrained: it lacks {', '.join(missing) or 'it'}. "
                            "Save the model and its image processor there (model.save_pretrained(FOLDER), "
                            "processor.save_pretrained(FOLDER)).")
    source = None if local else hub_repo_source(target, HF_WEIGHTS, revision=revision, required=HF_REQUIRED)
    with weights_guard(source, what):
        processor = _from_pretrained(AutoImageProcessor, target, revision, what)
        model = _from_pretrained(AutoModelForImageClassification, target, revision, what)
    model.eval()
    prep = options["preprocessing"] or hf_preprocessing(processor, what)
    labels = model.config.id2label or {}
    return HFClassifier(HFNet(model), name=what, preprocessing=prep, num_classes=len(labels) or None,
                        source={"source": "hf", "revision": revision, "processor": type(processor).__name__,
                                "architecture": type(model).__name__})
