"""A model's identity by content: one hash of everything that decides its predictions.

A run is keyed by this hash (beside the model's canonical spec), so a changed model makes a new
run and two different models never share one. :func:`model_hash` of a built model covers:

- **the weights**: every tensor of the state dict (and the non-persistent buffers), in sorted
  key order, with its dtype and shape;
- **the code**: each module's class, named by its package's version when the package is
  installed (``torch==2.5.1``, ``torchvision==0.20.1``, ``robustlab==0.4.0``) and by the
  SHA-256 of its source otherwise (a ``python:`` file, and every local module it imports,
  followed through their imports);
- **the settings inside library modules**: the public plain attributes of modules whose class
  comes from an installed package or robustlab (a convolution's stride, a dropout's rate, a
  wrapper's CLAHE clip limit), functions by qualified name and code. A class of a local file is
  named by its source only: its instances' attributes are not read, because user models keep
  counters and caches there (a setting computed at run time belongs in a buffer, which the
  state dict carries);
- **the adapter**: preprocessing, number of classes, wrappers (each wrapper is a module).

A source may hash a spec without building the model (:meth:`~robustlab.models.registry.ModelSource.content_hash`,
e.g. an ONNX file's bytes); :func:`identify_model` asks it first and builds the model only when
the source cannot tell, returning the built model so that it is loaded once per run.

Hashing ResNet-50's weights (25.6 M parameters, 102 MB) takes about 0.2 s on one CPU core
(``perf/speed_model_hash.py``).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from .code_identity import class_identity, code_identity, update_tagged
from .protocol import ModelAdapter
from .registry import get_source, split_spec
from .sources import load_model

#: Version of the hashed layout (a change makes new runs of every model).
IDENTITY_FORMAT = "robustlab-model-identity/1"
#: Hex digits of the hash kept in a run's config (``model_hash``): 64 bits.
HASH_LENGTH = 16
#: Adapter attributes that describe a model without deciding its predictions (``training``:
#: a run always evaluates in eval mode).
_DESCRIPTIVE = frozenset({"name", "source", "training"})


@dataclass
class ModelIdentity:
    """What :func:`identify_model` found.

    Attributes
    ----------
    digest : str
        :data:`HASH_LENGTH` hex digits of the content hash.
    model : Classifier, Detector or None
        The model built to hash it (on the requested device, in eval mode), or None when its
        source hashed the spec without building it.
    """

    digest: str
    model: Any = None


def identify_model(model: object, *, preprocessing: Any = None, num_classes: int | None = None,
                   wrap: str | None = None, device: Any = None) -> ModelIdentity:
    """The content hash of the model that ``load_model(model, ...)`` gives.

    Parameters
    ----------
    model : str or object
        A spec (``torchvision:resnet50``, ``python:m.py:make``, ``onnx:m.onnx``...) or a model
        object, as :func:`robustlab.models.load_model` takes.
    preprocessing, num_classes, wrap, device :
        The options of :func:`~robustlab.models.load_model`; the first three are part of the hash.

    Returns
    -------
    ModelIdentity
        The digest, and the built model when building it was needed (reuse it: the model is
        then loaded once).
    """
    if isinstance(model, str):
        prefix, rest = split_spec(model)
        source = get_source(prefix)
        options = {"preprocessing": None if preprocessing is None else _as_dict(preprocessing),
                   "num_classes": num_classes, "wrap": wrap}
        content = source.content_hash(rest, {**options, "pretrained": None})
        if content is not None:
            text = _canonical_json({"format": IDENTITY_FORMAT, "source": prefix, "content": content,
                                    "options": options, "robustlab": code_identity("robustlab")})
            return ModelIdentity(hashlib.sha256(text.encode()).hexdigest()[:HASH_LENGTH])
    built = load_model(model, preprocessing=preprocessing, num_classes=num_classes, device=device, wrap=wrap)
    return ModelIdentity(model_hash(built)[:HASH_LENGTH], built)


def model_hash(model: nn.Module) -> str:
    """Hex SHA-256 of everything of a built model that decides its predictions (see the module
    docstring). Deterministic across processes and devices for the same weights and code."""
    h = hashlib.sha256(IDENTITY_FORMAT.encode())
    modules = sorted(model.named_modules(remove_duplicate=True), key=lambda item: item[0]) if isinstance(model, nn.Module) else []
    described = []
    for path, module in modules:
        cls = type(module)
        local = code_identity(cls.__module__).startswith("source:")
        described.append({"path": path, "class": class_identity(cls),
                          "attributes": _data_attributes(module) if local else _attributes(module)})
    update_tagged(h, "modules", _canonical_json(described).encode())
    if isinstance(model, nn.Module):
        hash_state(h, model)
    else:  # a bare callable
        update_tagged(h, "callable", _canonical_json(_value(model)).encode())
    return h.hexdigest()


def weights_hash(model: Any) -> str | None:
    """:data:`HASH_LENGTH` hex digits of a built model's weights alone (:func:`hash_state`), or
    None for a model that is no ``nn.Module``.

    What another process checks when the model reached it as an object rather than a spec: the
    object's code travels with it (a class of the user's script is pickled by value), but the
    code identity of :func:`model_hash` names a script by the file ``__main__`` runs, which in a
    Ray worker is Ray's own; the weights must still be the ones the run is keyed by.
    """
    if not isinstance(model, nn.Module):
        return None
    h = hashlib.sha256(IDENTITY_FORMAT.encode())
    hash_state(h, model)
    return h.hexdigest()[:HASH_LENGTH]


def hash_state(h: Any, model: nn.Module) -> None:
    """Feed every tensor of ``model``'s state dict (sorted keys) and its non-persistent buffers
    into the hash ``h``: name, dtype, shape and bytes."""
    state = dict(model.state_dict(keep_vars=True))
    for name, buffer in model.named_buffers():
        state.setdefault(name, buffer)
    for key in sorted(state):
        value = state[key]
        if isinstance(value, torch.Tensor):
            tensor = value.detach()
            if tensor.is_sparse:
                tensor = tensor.to_dense()
            update_tagged(h, "tensor", f"{key}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
            update_tagged(h, "bytes", tensor_bytes(tensor))
        else:  # extra state saved by a module (get_extra_state)
            update_tagged(h, "value", f"{key}|{_canonical_json(_value(value))}".encode())


def tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The raw bytes of a tensor (on the CPU, contiguous, any dtype), without a copy when possible."""
    t = tensor.detach().to("cpu").contiguous()
    if t.is_quantized:
        t = t.int_repr()
    flat = t.reshape(-1)
    if flat.numel() == 0:
        return memoryview(b"")
    return memoryview(flat.view(torch.uint8).numpy())


def _attributes(module: nn.Module) -> dict[str, Any]:
    out = {}
    adapter = isinstance(module, ModelAdapter)
    for key, value in sorted(vars(module).items()):
        if key.startswith("_") or key == "training" or (adapter and key in _DESCRIPTIVE):
            continue
        described = _value(value)
        if described is not _SKIP:
            out[key] = described
    if adapter and isinstance(module.source, Mapping):
        if module.source.get("code"):
            out["code"] = module.source["code"]  # a python: factory's own source (see sources.load_python)
        if module.source.get("inputs"):  # the files and variables its build read (models.build_inputs)
            out["inputs"] = module.source["inputs"]
    return out


def _data_attributes(module: nn.Module) -> dict[str, Any]:
    """The tensors and arrays a module of a local class keeps as plain attributes (not in its
    state dict): they decide its predictions as much as its weights do. Other attributes of a
    local class (counters, caches of numbers) are left out."""
    out = {}
    for key, value in sorted(vars(module).items()):
        if key.startswith("__") or key in ("_parameters", "_buffers", "_modules"):
            continue
        if isinstance(value, (list, tuple, Mapping)) and not value:
            continue
        if isinstance(value, (torch.Tensor, np.ndarray)) or (isinstance(value, (list, tuple)) and all(
                isinstance(v, (torch.Tensor, np.ndarray)) for v in value)):
            described = _value(value)
            if described is not _SKIP:
                out[key] = described
    return out


_SKIP = object()


def _value(value: Any, depth: int = 0) -> Any:
    """A JSON-able description of an attribute value that decides predictions, or _SKIP."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return repr(value) if not math.isfinite(value) else value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return _value(value.item(), depth)
    if isinstance(value, torch.Tensor):
        t = value.detach()
        return {"tensor": str(t.dtype), "shape": list(t.shape), "sha256": hashlib.sha256(tensor_bytes(t)).hexdigest()}
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        if arr.dtype == object:
            return _SKIP
        return {"array": str(arr.dtype), "shape": list(arr.shape), "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value) if isinstance(value, torch.dtype) else _SKIP
    if depth > 4:
        return _SKIP
    if isinstance(value, (list, tuple)):
        items = [_value(v, depth + 1) for v in value]
        return [v for v in items if v is not _SKIP]
    if isinstance(value, Mapping):
        items = {str(k): _value(v, depth + 1) for k, v in value.items()}
        return {k: v for k, v in sorted(items.items()) if v is not _SKIP}
    if isinstance(value, nn.Module):
        return _SKIP  # a submodule: described on its own
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isclass(value) or inspect.isbuiltin(value):
        target = value.__func__ if inspect.ismethod(value) else value
        module = getattr(target, "__module__", None) or "?"
        return {"code": f"{module}.{getattr(target, '__qualname__', repr(target))}", "of": code_identity(module)}
    if isinstance(value, functools.partial):
        return {"partial": _value(value.func, depth + 1), "args": _value(value.args, depth + 1),
                "keywords": _value(value.keywords, depth + 1)}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        try:
            return _value(to_dict(), depth + 1)
        except Exception:  # noqa: BLE001 - an object whose to_dict needs arguments: not described
            return _SKIP
    if callable(value):  # an object with __call__: its class decides what it does
        return {"callable": class_identity(type(value))}
    return _SKIP


def _as_dict(preprocessing: Any) -> Any:
    to_dict = getattr(preprocessing, "to_dict", None)
    return to_dict() if callable(to_dict) else preprocessing


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
