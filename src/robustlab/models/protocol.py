"""The Model protocol: what every adapter looks like to the rest of robustlab.

A **classifier** is a :class:`torch.nn.Module` called on a float tensor of shape (N, 3, H, W)
with values in [0, 1] (RGB, pixel space, any H and W) that returns logits of shape
(N, num_classes). A **detector** is called on the same input (or a list of (3, H_i, W_i)
tensors) and returns one dict per image with ``boxes`` (K, 4) float in input pixel
coordinates (x1, y1, x2, y2), ``scores`` (K,) float and ``labels`` (K,) int64.

Both carry their :class:`~robustlab.models.preprocessing.Preprocessing` inside ``forward``,
a ``name`` (traceable in stored runs), ``task`` (``"classification"`` or ``"detection"``) and
``differentiable`` (False for ONNX or plain numpy callables, which attacks reject).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn

from ..errors import InputError, ModelError
from .preprocessing import Preprocessing


class ModelAdapter(nn.Module):
    """What every adapter shares: the wrapped ``net``, its ``name``, its ``Preprocessing``
    (applied inside ``forward``; ``prepare_image`` is its worker-side resize/crop), the expected
    ``num_classes``, ``differentiable`` and a JSON-able ``source`` description.
    See :class:`Classifier` and :class:`Detector` for the parameters and the ``forward`` contract.
    """

    task = ""

    def __init__(self, net: nn.Module, *, name: str, preprocessing: Preprocessing | None = None,
                 num_classes: int | None = None, differentiable: bool = True,
                 source: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.net = net
        self.name = name
        self.preprocessing = preprocessing or Preprocessing()
        self.num_classes = num_classes
        self.differentiable = differentiable
        self.source = dict(source or {})

    def prepare_image(self, image):  # uint8 HxWx3 -> uint8 at the input size (worker side)
        return self.preprocessing.prepare_image(image)

    @property
    def device(self) -> torch.device:
        for tensor in self.parameters():
            return tensor.device
        for tensor in self.buffers():
            return tensor.device
        return getattr(self.net, "device", torch.device("cpu"))

    def describe(self) -> dict[str, Any]:
        """JSON-able description stored with every run of this model."""
        return {"name": self.name, "task": self.task, "num_classes": self.num_classes,
                "differentiable": self.differentiable,
                "preprocessing": self.preprocessing.to_dict(), **self.source}

    def extra_repr(self) -> str:
        return f"name={self.name!r}, preprocessing={self.preprocessing}"


class Classifier(ModelAdapter):
    """A classifier in the Model protocol: float NCHW [0, 1] pixels -> (N, num_classes) logits.

    Parameters
    ----------
    net : nn.Module
        The network proper; it receives preprocessed (resized, cropped, normalised) input.
    name : str
        Stable identifier stored with results (e.g. ``torchvision:resnet50``).
    preprocessing : Preprocessing
        Applied inside :meth:`forward`.
    num_classes : int or None
        Expected number of outputs (checked by the engine), None when unknown.
    differentiable : bool
        Whether gradients flow from the logits to the input pixels.
    """

    task = "classification"

    @property
    def takes_pixels(self) -> bool:
        """Whether ``forward`` also takes uint8 (N, H, W, 3) pixels (the engine then hands it the
        batch as loaded; see :meth:`~robustlab.models.preprocessing.Preprocessing.from_pixels`).
        A subclass with its own ``forward`` does not, unless it says so."""
        return type(self).forward is Classifier.forward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.uint8:  # pixels as loaded: the same input as from their float form
            return self.net(self.preprocessing.from_pixels(x, self._scratch(x)))
        return self.net(self.preprocessing(x))

    def _scratch(self, x: torch.Tensor):
        """A float buffer for the network's input, reused batch after batch when inference runs on
        the CPU (no gradient: nothing keeps the input once the network has run), else None."""
        if x.device.type != "cpu" or torch.is_grad_enabled():
            return None
        import numpy as np

        shape = tuple(x.shape)
        scratch = _SCRATCH.get(self)
        if scratch is None or scratch.shape != shape:
            scratch = np.empty(shape, np.float32)
            _SCRATCH[self] = scratch  # beside the model, not in it: never pickled, hashed or copied with it
        return scratch


#: Each classifier's CPU input buffer (see :meth:`Classifier._scratch`), gone with the classifier.
_SCRATCH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Detector(ModelAdapter):
    """A detector in the Model protocol: images in [0, 1] -> list of {boxes, scores, labels}.

    ``net`` is called on a list of (3, H, W) float tensors and must return one dict per image
    with ``boxes`` (x1, y1, x2, y2 in the input's pixels), ``scores`` and ``labels``, as
    torchvision's detection models do (they resize and normalise internally).
    """

    task = "detection"

    def forward(self, images: torch.Tensor | list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        if isinstance(images, torch.Tensor):
            if images.ndim != 4:
                raise InputError(f"detector input must be NCHW or a list of CHW tensors; got shape {tuple(images.shape)}.")
            images = list(images)
        images = [self.preprocessing.normalize(img[None])[0] for img in images]
        return check_detections(self.net(images), len(images), self.name)


def check_logits(logits: object, batch_size: int, model_name: str,
                 num_classes: int | None = None, *, check_values: bool = True) -> torch.Tensor:
    """Validate a classifier's output: a float (N, K) tensor with the expected K, no NaN/+inf.

    ``-inf`` is allowed (a label projection gives it to classes that can never be predicted).
    ``check_values=False`` skips the value scan (callers that check cheaper, e.g. on top-k).

    Raises
    ------
    ModelError
        Naming the model, when the output is not a tensor, has the wrong shape or number of
        classes, or contains NaN/+inf values.
    """
    if not isinstance(logits, torch.Tensor):
        raise ModelError(f"model {model_name!r} returned {type(logits).__name__}, not a tensor of logits; "
                         "a classifier must return a (N, num_classes) tensor.")
    if logits.ndim != 2 or logits.shape[0] != batch_size:
        raise ModelError(f"model {model_name!r} returned logits of shape {tuple(logits.shape)} for a batch of "
                         f"{batch_size}; expected ({batch_size}, num_classes). Check that the model ends in a "
                         "classification head (not features).")
    if num_classes is not None and logits.shape[1] != num_classes:
        raise ModelError(f"model {model_name!r} returned {logits.shape[1]} classes but the benchmark's labels "
                         f"need {num_classes}. Give a model for this label space, or project its outputs "
                         "(robustlab.models.project / a class map).")
    if check_values:
        bad_rows = (torch.isnan(logits) | torch.isposinf(logits)).any(dim=1)
        if bad_rows.any():
            raise nonfinite_error(model_name, int(bad_rows.sum()), batch_size)
    return logits


def nonfinite_error(model_name: str, bad: int, batch_size: int) -> ModelError:
    """The error for NaN or +inf logits (-inf is allowed: classes a projection never predicts)."""
    return ModelError(f"model {model_name!r} returned NaN or +inf logits for {bad} of {batch_size} images. "
                      "Check its weights and input range (robustlab feeds pixels in [0, 1]).")


def check_detections(outputs: object, batch_size: int, model_name: str) -> list[dict[str, torch.Tensor]]:
    """Validate a detector's output (one dict of boxes/scores/labels per image)."""
    if not isinstance(outputs, (list, tuple)) or len(outputs) != batch_size:
        raise ModelError(f"detector {model_name!r} must return a list of {batch_size} dicts "
                         f"(one per image); got {type(outputs).__name__}.")
    checked = []
    for i, out in enumerate(outputs):
        if not isinstance(out, dict) or not {"boxes", "scores", "labels"} <= set(out):
            raise ModelError(f"detector {model_name!r}: output {i} must be a dict with boxes, scores, labels.")
        boxes = torch.as_tensor(out["boxes"], dtype=torch.float32).reshape(-1, 4)
        scores = torch.as_tensor(out["scores"], dtype=torch.float32).reshape(-1)
        labels = torch.as_tensor(out["labels"]).reshape(-1).to(torch.int64)
        if not (len(boxes) == len(scores) == len(labels)):
            raise ModelError(f"detector {model_name!r}: image {i} has {len(boxes)} boxes, {len(scores)} scores "
                             f"and {len(labels)} labels; they must be equal.")
        if not (torch.isfinite(boxes).all() and torch.isfinite(scores).all()):
            raise ModelError(f"detector {model_name!r} returned NaN or infinite boxes/scores for image {i}.")
        checked.append({"boxes": boxes, "scores": scores, "labels": labels})
    return checked


def select_device(device: str | torch.device | None = None) -> torch.device:
    """The device to run on: ``None``/``"auto"`` -> CUDA when available, else CPU.

    Raises
    ------
    InputError
        For a device that does not exist here (``cuda`` without CUDA, ``cuda:3`` on a machine
        with one GPU, ``mps`` off Apple silicon) or that robustlab does not run on.
    """
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InputError(f"unknown device {device!r}: use auto, cpu, cuda or cuda:N.") from exc
    if dev.type not in ("cpu", "cuda", "mps"):
        raise InputError(f"device {device!r} is not one robustlab runs on: use auto, cpu, cuda, cuda:N or mps.")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r} requested but CUDA is not available here; use --device cpu or auto.")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise InputError(f"device {device!r} requested but this machine has {torch.cuda.device_count()} CUDA "
                         f"device(s) (cuda:0..cuda:{torch.cuda.device_count() - 1}); pick one of them or auto.")
    mps = getattr(torch.backends, "mps", None)
    if dev.type == "mps" and not (mps is not None and mps.is_available()):
        raise InputError(f"device {device!r} requested but Apple's MPS backend is not available here (it needs "
                         "macOS on Apple silicon and a torch built with it); use --device cpu or auto.")
    return dev
