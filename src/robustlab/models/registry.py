"""The model-source registry and the small pieces every model source shares.

``MODEL_SOURCES`` maps a spec prefix (``torchvision``, ``timm``, ``onnx``, ``python``,
``results``, ``demo``) to a loader ``loader(rest_of_spec, options) -> model``. Sources
register themselves with ``MODEL_SOURCES.add(prefix, loader)``; ``demo:`` is registered by
:mod:`robustlab.demo.models`, imported on first lookup, so this layer never imports the demo.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ..registry import Registry
from .protocol import Classifier, Detector

Model = Classifier | Detector
Loader = Callable[[str, dict[str, Any]], Model]

#: Model sources by prefix. ``demo:`` is registered by :mod:`robustlab.demo.models` and
#: ``finetuned:`` by :mod:`robustlab.train.finetuned` (loaded on first use); other packages add
#: theirs under the entry-point group ``robustlab.model_sources``.
MODEL_SOURCES: Registry[Loader] = Registry("model source", plugins=("robustlab.models.sources", "robustlab.demo.models",
                                                                    "robustlab.train.finetuned"),
                                           entry_points="robustlab.model_sources")

#: Spellings of "no pretrained weights" in a spec's last part.
NO_WEIGHTS = ("none", "random", "scratch")


def object_name(obj: object) -> str:
    """``python:<module>.<qualname>@<8 hex digits of the weights' hash>`` for an object model."""
    cls = obj if inspect.isfunction(obj) else type(obj)
    base = f"python:{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', type(obj).__name__)}"
    if isinstance(obj, nn.Module):
        h = hashlib.blake2b(digest_size=4)
        for key, tensor in obj.state_dict().items():
            h.update(key.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return f"{base}@{h.hexdigest()}"
    return base


class CallableNet(nn.Module):
    """Any callable (tensor or numpy in, logits out) as a module; its output becomes a tensor."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fn(x)
        if isinstance(out, np.ndarray):
            out = torch.from_numpy(out)
        return torch.as_tensor(out).to(x.device)
