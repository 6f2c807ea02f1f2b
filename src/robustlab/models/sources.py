"""Model sources by name: ``torchvision:``, ``timm:``, ``onnx:``, ``python:`` (registry in :mod:`.registry`;
``open_clip:`` and ``hf:`` live in :mod:`.openclip` and :mod:`.hf`).

:func:`load_model` turns a spec string (or an ``nn.Module`` / callable) into a
:class:`~robustlab.models.protocol.Classifier` or :class:`~robustlab.models.protocol.Detector`
with its preprocessing inside. New sources register with ``MODEL_SOURCES.add(prefix, loader)``
where ``loader(rest_of_spec, options) -> model``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import DataError, InputError, ModelError, RobustlabError, unknown_name
from .detection import load_torchvision_detector
from .build_inputs import INPUTS_ATTRIBUTE, input_identity, inputs_changed, record_build_inputs
from .code_identity import code_identity
from .hub import timm_weights_guard
from .preprocessing import Preprocessing
from .protocol import Classifier, Detector, select_device
from .registry import MODEL_SOURCES, NO_WEIGHTS, CallableNet, Model, absolute_path, model_source, object_name, \
    seeded_init, split_spec
from .weights import fetch_checkpoint, file_sha256, guard_download
from .wrappers import wrap_classifier

__all__ = ["MODEL_SOURCES", "NO_WEIGHTS", "CallableNet", "load_model", "object_name", "wrap_model"]


def load_model(model: object, *, preprocessing: Preprocessing | dict | None = None,
               num_classes: int | None = None, device: str | torch.device | None = None,
               name: str | None = None, pretrained: bool | None = None,
               wrap: str | list[str] | None = None) -> Model:
    """Turn ``model`` into a model of the Model protocol, in eval mode, on ``device``.

    Parameters
    ----------
    model : str, nn.Module, callable, Classifier or Detector
        A spec ``source:rest``: ``torchvision:resnet50`` (default weights),
        ``torchvision:resnet50:IMAGENET1K_V2``, ``torchvision:resnet18:none`` (random init),
        ``timm:convnext_tiny`` (pretrained; ``timm:...:none`` random), ``onnx:model.onnx``,
        ``python:package.module:make_model`` or ``python:path/to/file.py:make_model`` (a
        callable returning any of these). An ``nn.Module`` or callable taking float NCHW
        [0, 1] pixels (after ``preprocessing``) and returning logits is wrapped as is.
    preprocessing : Preprocessing or dict, optional
        Overrides the source's preprocessing (resize, crop, interpolation, mean, std).
    num_classes : int, optional
        Expected number of classes (checked on every batch).
    device : str, optional
        ``auto`` (default: CUDA when available, else CPU), ``cpu``, ``cuda``, ``cuda:N``.
    name : str, optional
        Name stored with results (default: the spec, or ``python:<module>.<qualname>@<hash>``).
    pretrained : bool, optional
        Overrides the spec's choice of pretrained weights (torchvision and timm).
    wrap : str or list of str, optional
        Preprocessing wrappers around a classifier, e.g. ``"clahe,ten-crop"`` (see
        :mod:`robustlab.models.wrappers`); the wrapped model's name says which.
    """
    options = {"preprocessing": None if preprocessing is None else Preprocessing.from_dict(preprocessing),
               "num_classes": num_classes, "pretrained": pretrained}
    if isinstance(model, str):
        source, rest = split_spec(model)
        loader = MODEL_SOURCES.get(source)
        try:
            loaded = loader(rest, options)
        except RobustlabError:
            raise
        except Exception as exc:  # the model's own code (or its library) failed while building it
            raise ModelError(f"building the model {model!r} failed: {type(exc).__name__}: {exc}. "
                             "Run with --debug for the traceback.") from exc
        loaded.source.setdefault("spec", model)
    else:
        loaded = wrap_model(model, **options)
    if name:
        loaded.name = name
    if wrap:
        loaded = wrap_classifier(loaded, wrap)
    dev = select_device(device)
    return loaded.to(dev).eval()


def wrap_model(obj: object, *, preprocessing: Preprocessing | None = None, num_classes: int | None = None,
               pretrained: bool | None = None, name: str | None = None) -> Model:
    """Wrap an already-built object (Classifier/Detector, nn.Module or callable)."""
    if isinstance(obj, (Classifier, Detector)):
        if preprocessing is not None:
            obj.preprocessing = preprocessing
        if num_classes is not None:
            obj.num_classes = num_classes
        return obj
    if isinstance(obj, nn.Module):
        return Classifier(obj, name=name or object_name(obj), preprocessing=preprocessing,
                          num_classes=num_classes, source={"source": "python-object"})
    if callable(obj):
        return Classifier(CallableNet(obj), name=name or object_name(obj), preprocessing=preprocessing,
                          num_classes=num_classes, differentiable=False, source={"source": "python-callable"})
    raise InputError(f"cannot use a {type(obj).__name__} as a model: give a spec string, an nn.Module or a "
                     "callable mapping float NCHW [0, 1] images to logits.")


def _split_weights(rest: str) -> tuple[str, str | None]:
    name, _, weights = rest.partition(":")
    return name, (weights or None)


def _wants_weights(weights: str | None, pretrained: bool | None) -> bool:
    if pretrained is not None:
        return pretrained
    return not (weights and weights.lower() in NO_WEIGHTS)


# --- torchvision ---------------------------------------------------------------------------------


@MODEL_SOURCES.register("torchvision")
def load_torchvision(rest: str, options: dict[str, Any]) -> Model:
    """``torchvision:<name>[:<weights>]``: weights name (e.g. ``IMAGENET1K_V2``), ``DEFAULT``
    (when omitted) or ``none``."""
    import torchvision.models as tvm

    name, weights_name = _split_weights(rest)
    if name not in tvm.list_models():
        raise unknown_name("torchvision model", name, tvm.list_models())
    if name in tvm.list_models(module=tvm.detection):  # detectors: random backbone with ':none', see .detection
        return load_torchvision_detector(name, weights_name, options)
    weights = None
    if _wants_weights(weights_name, options.get("pretrained")):
        enum = tvm.get_model_weights(name)
        key = (weights_name or "DEFAULT")
        try:
            weights = enum.DEFAULT if key.upper() == "DEFAULT" else enum[key]
        except KeyError:
            raise unknown_name(f"weights name for {name}", key, [w.name for w in enum]) from None
        fetch_checkpoint(weights.url, f"torchvision:{name}:{weights.name}")
    detection = name in tvm.list_models(module=tvm.detection)
    kwargs = {}
    if weights is None and options.get("num_classes") and not detection:
        kwargs["num_classes"] = options["num_classes"]
    if weights is None and detection:
        kwargs["weights_backbone"] = None  # random init means no backbone download either
    with seeded_init():  # random weights (':none') are the same on every call
        net = tvm.get_model(name, weights=weights, **kwargs)
    spec_name = f"torchvision:{name}:{weights.name if weights is not None else 'none'}"
    source = {"source": "torchvision", "weights": weights.name if weights is not None else None}
    if detection:
        return Detector(net, name=spec_name, preprocessing=options["preprocessing"], source=source,
                        num_classes=len(weights.meta["categories"]) if weights is not None else None)
    if options["preprocessing"] is not None:
        prep = options["preprocessing"]
    elif weights is not None:
        t = weights.transforms()
        prep = Preprocessing(resize=t.resize_size[0], crop=t.crop_size[0], interpolation=t.interpolation.value,
                             mean=tuple(t.mean), std=tuple(t.std))
    else:
        prep = Preprocessing.imagenet()
    n = len(weights.meta["categories"]) if weights is not None else (options.get("num_classes") or 1000)
    return Classifier(net, name=spec_name, preprocessing=prep, num_classes=n, source=source)


# --- timm ----------------------------------------------------------------------------------------


@MODEL_SOURCES.register("timm")
def load_timm(rest: str, options: dict[str, Any]) -> Model:
    """``timm:<name>[:none]``: pretrained weights unless ``:none`` (or ``pretrained=False``)."""
    try:
        import timm
        from timm.data import resolve_data_config
    except ImportError as exc:
        raise InputError("timm models need the timm package: pip install 'robustlab[timm]'.") from exc
    name, weights_name = _split_weights(rest)
    pretrained = _wants_weights(weights_name, options.get("pretrained"))
    kwargs = {"num_classes": options["num_classes"]} if options.get("num_classes") and not pretrained else {}
    guard = timm_weights_guard(name, f"timm:{name}") if pretrained else contextlib.nullcontext()
    try:
        with guard, seeded_init():  # offline: the cached file at once, or an error naming it; random weights seeded
            net = guard_download(f"timm:{name}", lambda: timm.create_model(name, pretrained=pretrained, **kwargs))
    except RuntimeError as exc:
        if "Unknown model" in str(exc):
            raise unknown_name("timm model", name, timm.list_models(f"*{name[:4]}*") or timm.list_models()[:20]) from None
        raise
    if options["preprocessing"] is not None:
        prep = options["preprocessing"]
    else:
        cfg = resolve_data_config({}, model=net)
        size = int(cfg["input_size"][-1])
        prep = Preprocessing(resize=int(math.floor(size / float(cfg.get("crop_pct", 1.0)))), crop=size,
                             interpolation=cfg.get("interpolation", "bilinear") if cfg.get("interpolation") in
                             ("nearest", "bilinear", "bicubic") else "bilinear",
                             mean=tuple(cfg["mean"]), std=tuple(cfg["std"]))
    return Classifier(net, name=f"timm:{name}" + ("" if pretrained else ":none"), preprocessing=prep,
                      num_classes=getattr(net, "num_classes", None),
                      source={"source": "timm", "pretrained": pretrained})


# --- ONNX ----------------------------------------------------------------------------------------


class OnnxNet(nn.Module):
    """An ONNX model run by onnxruntime behind the module interface (no gradients)."""

    def __init__(self, path: Path, providers: list[str]) -> None:
        super().__init__()
        import onnxruntime as ort

        self.path = str(path)
        self.sha256 = file_sha256(path)  # the graph's bytes: part of the model's identity
        try:
            self.session = ort.InferenceSession(self.path, providers=providers)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise DataError(f"cannot load ONNX model {path}: {exc}. Check that it is a valid .onnx file.") from exc
        inputs = self.session.get_inputs()
        if len(inputs) != 1:
            raise ModelError(f"ONNX model {path} has {len(inputs)} inputs; robustlab needs one image input.")
        self.input_name = inputs[0].name
        shape = inputs[0].shape
        self.static_batch = shape[0] if isinstance(shape[0], int) and shape[0] > 0 else None
        self.static_hw = tuple(shape[2:4]) if len(shape) == 4 and all(isinstance(s, int) for s in shape[2:4]) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        arr = x.detach().to("cpu", torch.float32).contiguous().numpy()
        if self.static_batch is None or self.static_batch == len(arr):
            out = self.session.run(None, {self.input_name: arr})[0]
        else:  # fixed batch size in the graph: run in chunks, padding the last one
            b = self.static_batch
            chunks = []
            for start in range(0, len(arr), b):
                part = arr[start:start + b]
                pad = b - len(part)
                if pad:
                    part = np.concatenate([part, np.repeat(part[-1:], pad, axis=0)])
                chunks.append(self.session.run(None, {self.input_name: part})[0][:b - pad])
            out = np.concatenate(chunks)
        return torch.from_numpy(np.asarray(out, dtype=np.float32)).to(x.device)


def onnx_content(rest: str, options: dict[str, Any]) -> str:
    """SHA-256 of the ONNX file's bytes: what decides an ONNX model's predictions (with the
    options, which are part of the run key)."""
    path = Path(rest).expanduser()
    if not path.is_file():
        raise DataError(f"ONNX model file {path} does not exist; check the path after 'onnx:'.")
    return file_sha256(path)


@model_source("onnx", canonical=absolute_path, content=onnx_content)
def load_onnx(rest: str, options: dict[str, Any]) -> Model:
    """``onnx:<path>``: run with onnxruntime (CUDA provider when available). The graph gets the
    preprocessed tensor; default preprocessing: none, or resize+crop to a static input size."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise InputError("ONNX models need onnxruntime: pip install 'robustlab[onnx]'.") from exc
    path = Path(rest).expanduser()
    if not path.is_file():
        raise DataError(f"ONNX model file {path} does not exist; check the path after 'onnx:'.")
    available = ort.get_available_providers()
    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available]
    net = OnnxNet(path, providers)
    prep = options["preprocessing"]
    if prep is None:
        prep = Preprocessing(resize=min(net.static_hw), crop=net.static_hw) if net.static_hw else Preprocessing()
    return Classifier(net, name=f"onnx:{path.resolve()}", preprocessing=prep, num_classes=options.get("num_classes"),
                      differentiable=False, source={"source": "onnx", "sha256_16": net.sha256[:16]})


# --- python ----------------------------------------------------------------------------------------


def python_canonical(rest: str) -> str:
    """``<abs file.py>:<callable>`` for a file spec; a module spec is kept as given."""
    module, sep, attr = rest.rpartition(":")
    return f"{absolute_path(module)}:{attr}" if sep and module.endswith(".py") else rest


@model_source("python", canonical=python_canonical)
def load_python(rest: str, options: dict[str, Any]) -> Model:
    """``python:<module>:<callable>`` or ``python:<file.py>:<callable>``: the callable is called
    with no arguments and returns a Classifier/Detector, an nn.Module or a callable."""
    module_name, sep, attr = rest.rpartition(":")
    usage = ("give python:<module>:<callable> or python:<file.py>:<callable>, e.g. python:mypkg.models:make_model "
             "or python:./model.py:make_model (the callable takes no arguments and returns the model)")
    if not sep or not module_name or not attr:
        raise InputError(f"python model spec 'python:{rest}' needs a module and a callable: {usage}.")
    if ":" in module_name and not Path(module_name).is_file():
        raise InputError(f"python model spec 'python:{rest}' has more than one ':' after 'python:': {usage}.")
    if not module_name.endswith(".py") and ("/" in module_name or "\\" in module_name):
        raise InputError(f"python model spec 'python:{rest}': {module_name!r} looks like a path but is not a "
                         f".py file: {usage}.")
    if not attr.isidentifier():
        raise InputError(f"python model spec 'python:{rest}': {attr!r} is not a Python name: {usage}.")
    with record_build_inputs() as inputs:
        module = _import_module(module_name)
        factory = _factory(module, module_name, attr, rest, usage)
        built = _call_factory(factory, rest, attr)
    inputs.merge(getattr(module, INPUTS_ATTRIBUTE, None))  # what its first import read (a cached module)
    model = wrap_model(built, name=f"python:{module_name}:{attr}", **options)
    # the factory's own code (and the local modules it imports) decides the model too, and so do
    # the files and environment variables the build read (robustlab.models.build_inputs)
    model.source.update({"source": "python", "factory": f"{module_name}:{attr}",
                         "code": code_identity(module.__name__)})
    read = input_identity(inputs)
    if read:
        model.source["inputs"] = read
    return model


def _factory(module: Any, module_name: str, attr: str, rest: str, usage: str):
    """The callable ``attr`` of the imported model module (InputError naming the ones it has)."""
    try:
        factory = getattr(module, attr)
    except AttributeError:
        from ..errors import did_you_mean

        known = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None)))
        raise InputError(f"unknown callable {attr!r} in {module_name}.{did_you_mean(attr, known)} Callables in "
                         f"{module_name}: {', '.join(known) or 'none'}; {usage}.") from None
    if not callable(factory):
        raise InputError(f"python:{rest}: {attr} in {module_name} is not callable (its type is {type(factory).__name__}); "
                         f"{usage}.")
    return factory


def _call_factory(factory: Any, rest: str, attr: str) -> Any:
    """The model the factory builds; its failures (an exception, ``sys.exit``) as a ModelError."""
    try:
        built = factory()
    except SystemExit as exc:
        raise ModelError(f"python:{rest}: {attr}() called sys.exit({exc.code!r}) instead of returning the model; a "
                         "model factory must return it (an nn.Module, a callable, or a Classifier/Detector).") from None
    if built is None:
        raise ModelError(f"python:{rest}: {attr}() returned None; it must return the model (an nn.Module, a "
                         "callable, or a robustlab Classifier/Detector).")
    return built


def _import_module(module_name: str):
    if module_name.endswith(".py"):
        path = Path(module_name).expanduser()
        if not path.is_file():
            raise DataError(f"python model file {path} does not exist.")
        mod_name = f"_robustlab_user_{hashlib.blake2b(str(path.resolve()).encode(), digest_size=6).hexdigest()}"
        source_digest = hashlib.sha256(path.read_bytes()).hexdigest()
        loaded = sys.modules.get(mod_name)
        if loaded is not None and getattr(loaded, "__robustlab_source_sha256__", None) == source_digest and \
                not inputs_changed(getattr(loaded, "__robustlab_input_identity__", {})):
            return loaded  # the file and what it read are unchanged since it was run: else it is run again
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)
        module.__robustlab_source_sha256__ = source_digest
        sys.modules[mod_name] = module
        try:
            with record_build_inputs() as at_import:
                spec.loader.exec_module(module)
        except BaseException as exc:
            sys.modules.pop(mod_name, None)
            if isinstance(exc, SystemExit):
                raise ModelError(f"running the model file {path} called sys.exit({exc.code!r}); a model file must "
                                 "define the factory and return, not exit.") from None
            if not isinstance(exc, Exception):
                raise
            raise ModelError(f"running the model file {path} failed: {type(exc).__name__}: {exc}. "
                             "Run with --debug for the traceback.") from exc
        setattr(module, INPUTS_ATTRIBUTE, at_import)
        module.__robustlab_input_identity__ = input_identity(at_import)  # the files as the import read them
        return module
    try:
        with record_build_inputs() as at_import:
            module = importlib.import_module(module_name)
        if not hasattr(module, INPUTS_ATTRIBUTE):
            setattr(module, INPUTS_ATTRIBUTE, at_import)
        module.__robustlab_input_identity__ = input_identity(at_import)  # the files as the import read them
        return module
    except SystemExit as exc:
        raise ModelError(f"importing the model module {module_name!r} called sys.exit({exc.code!r}); a model module "
                         "must define the factory and return, not exit.") from None
    except ModuleNotFoundError as exc:
        raise InputError(f"cannot import module {module_name!r} for the model: {exc}. Make it importable "
                         "(pip install it or add its folder to PYTHONPATH) or give a .py file path.") from exc
    except Exception as exc:  # the module's own code failed on import
        raise ModelError(f"importing the model module {module_name!r} failed: {type(exc).__name__}: {exc}. "
                         "Run with --debug for the traceback.") from exc
