"""The model-source registry and the small pieces every model source shares.

``MODEL_SOURCES`` maps a spec prefix (``torchvision``, ``timm``, ``onnx``, ``python``,
``results``, ``demo``, ``finetuned``) to a :class:`ModelSource`: how the specs of that prefix
load (``source(rest_of_spec, options) -> model``), how they are spelled canonically
(:meth:`ModelSource.canonical_spec`: relative paths resolved, so ``finetuned:ft`` in two
folders names two models) and, when the source can tell without building the model, a hash
of the content that decides its predictions (:meth:`ModelSource.content_hash`: the ONNX
file's bytes). The engine's run key and ``finetune``'s base spec both ask
:func:`canonical_spec`, so a spec is canonicalised in one place.

Sources register with :func:`model_source` (a decorator with the hooks) or
``MODEL_SOURCES.add(prefix, loader)`` (a plain loader: spec kept as given, content hashed
from the built model), in their own module, listed under the entry-point group
``robustlab.model_sources`` and imported on first lookup: this layer never names the packages
that add sources (the demo's ``demo:``, train's ``finetuned:``).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..registry import Registry
from .protocol import Classifier, Detector

Model = Classifier | Detector
Loader = Callable[[str, dict[str, Any]], Model]


class ModelSource:
    """One model source (a spec prefix): loads its specs, spells them canonically and may hash
    their content without building the model.

    Parameters
    ----------
    load : callable
        ``load(rest_of_spec, options) -> Classifier | Detector`` (the options of
        :func:`robustlab.models.load_model`: ``preprocessing``, ``num_classes``, ``pretrained``).
    canonical : callable, optional
        ``canonical(rest) -> rest``: the one spelling of a spec (relative paths made absolute,
        aliases resolved). Default: the spec as given.
    content : callable, optional
        ``content(rest, options) -> str``: a hash of everything of the spec that decides the
        model's predictions, computed without building the model (e.g. an ONNX file's bytes).
        Default (None): the model is built and hashed (:func:`robustlab.models.identity.model_hash`).

    Notes
    -----
    Calling the source loads a model, so code that calls ``MODEL_SOURCES.get(prefix)(rest, options)``
    works for sources registered either way.
    """

    def __init__(self, load: Loader, *, canonical: Callable[[str], str] | None = None,
                 content: Callable[[str, dict[str, Any]], str] | None = None) -> None:
        self.load = load
        self._canonical = canonical
        self._content = content
        self.__doc__ = getattr(load, "__doc__", None)

    def __call__(self, rest: str, options: dict[str, Any]) -> Model:
        return self.load(rest, options)

    def canonical_spec(self, rest: str) -> str:
        """The canonical spelling of ``rest`` (the part after ``prefix:``)."""
        return self._canonical(rest) if self._canonical is not None else rest

    def content_hash(self, rest: str, options: dict[str, Any]) -> str | None:
        """A hex hash of the spec's content without building the model, or None when the model
        must be built to know it."""
        return self._content(rest, options) if self._content is not None else None


def model_source(prefix: str, *, canonical: Callable[[str], str] | None = None,
                 content: Callable[[str, dict[str, Any]], str] | None = None) -> Callable[[Loader], Loader]:
    """Decorator: register ``loader`` as the model source ``prefix`` with its hooks (see
    :class:`ModelSource`); the loader function itself is returned unchanged."""

    def deco(loader: Loader) -> Loader:
        MODEL_SOURCES.add(prefix, ModelSource(loader, canonical=canonical, content=content))
        return loader

    return deco


def split_spec(spec: str) -> tuple[str, str]:
    """``("torchvision", "resnet50")`` of ``"torchvision:resnet50"``; InputError when malformed."""
    source, sep, rest = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not sep or not source or not rest:
        raise InputError(f"model spec {spec!r} must look like SOURCE:NAME, e.g. torchvision:resnet50, "
                         f"timm:resnet18, onnx:model.onnx, python:module:callable. "
                         f"Sources: {', '.join(MODEL_SOURCES.names())}.")
    return source, rest


def get_source(prefix: str) -> ModelSource:
    """The registered source of ``prefix`` (a plain loader is seen as a source without hooks)."""
    item = MODEL_SOURCES.get(prefix)
    return item if isinstance(item, ModelSource) else ModelSource(item)


def canonical_spec(spec: str) -> str:
    """The one spelling of a model spec, by its source's :meth:`ModelSource.canonical_spec`:
    ``finetuned:ft`` becomes ``finetuned:/abs/ft``, ``python:m.py:make`` ``python:/abs/m.py:make``.

    Raises
    ------
    InputError
        A malformed spec or an unknown source (with the known ones).
    """
    prefix, rest = split_spec(spec)
    return f"{prefix}:{get_source(prefix).canonical_spec(rest)}"


def absolute_path(text: str) -> str:
    """``text`` as an absolute path (``~`` expanded, symbolic links resolved): what the
    canonical spec of a path-based source holds."""
    return str(Path(text).expanduser().resolve())

#: Model sources by prefix, filled by :mod:`.sources` (``torchvision``, ``timm``, ``onnx``,
#: ``python``, ``results``) and the modules of the entry-point group ``robustlab.model_sources``
#: (robustlab's ``demo:`` and ``finetuned:`` are declared by the package root; other packages
#: list theirs in their pyproject), each imported on first use.
MODEL_SOURCES: Registry[ModelSource | Loader] = Registry("model source", plugins=(f"{__package__}.sources",),
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


@contextlib.contextmanager
def seeded_init(seed: int = 0) -> Iterator[None]:
    """Build random weights from ``seed`` (torch's CPU generator, restored after): a spec with
    random weights (``torchvision:resnet18:none``) names one model, so its runs resume and its
    content hash is stable."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


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
