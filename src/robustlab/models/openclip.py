"""The ``open_clip:`` model source: CLIP-style models of open_clip as zero-shot ImageNet classifiers.

Specs (the part after ``open_clip:``):

- ``ARCH:TAG``: one of open_clip's architectures with one of its pretrained tags
  (``open_clip:ViT-B-32:laion2b_s34b_b79k``, ``open_clip:RN50:openai``), downloaded into the Hub
  cache (or ``~/.cache/clip`` for URL weights) as open_clip's own ``pretrained=`` does;
- ``ARCH:FILE``: an architecture with a checkpoint file of your own (``open_clip:ViT-B-32:./ckpt.pt``);
- ``CONFIG.json:FILE``: a model config in open_clip's format (``embed_dim``, ``vision_cfg``,
  ``text_cfg``) with a checkpoint file, for an architecture open_clip does not list;
- ``ARCH:none`` or ``CONFIG.json:none``: random weights (seeded, so one spec is one model);
- ``hf-hub:ORG/NAME``: an open_clip model on the Hugging Face Hub (config and weights);
- ``local-dir:FOLDER``: a folder holding ``open_clip_config.json`` and the weights.

The model is a :class:`~robustlab.models.zero_shot.ZeroShotClassifier` over ImageNet-1k (CLIP's
class names and 80 templates, see :mod:`.zero_shot`); benchmarks with other classes give it their
own (:mod:`.label_space`). Its preprocessing is open_clip's transform for the model (resize of the
shorter side with its interpolation, centre crop, mean and std), inside the adapter.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError, InputError, ModelError, unknown_name
from .hub import WeightsSource, hub_repo_source, weights_guard
from .preprocessing import INTERPOLATIONS, Preprocessing
from .registry import NO_WEIGHTS, Model, absolute_path, model_source, seeded_init
from .zero_shot import TextEncoder, ZeroShotClassifier, ZeroShotNet, describe_labels, imagenet_labels

__all__ = ["OpenClipSpec", "load_open_clip", "open_clip_canonical", "parse_open_clip_spec"]

USAGE = ("give open_clip:ARCH:TAG (e.g. open_clip:ViT-B-32:laion2b_s34b_b79k), open_clip:ARCH:CHECKPOINT_FILE, "
         "open_clip:CONFIG.json:CHECKPOINT_FILE, open_clip:ARCH:none (random weights), open_clip:hf-hub:ORG/NAME or "
         "open_clip:local-dir:FOLDER")
#: Files open_clip looks for in a Hub repository (safetensors first).
HUB_WEIGHTS = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
HUB_CONFIG = "open_clip_config.json"


@dataclass(frozen=True)
class OpenClipSpec:
    """A parsed ``open_clip:`` spec: ``schema`` (``""``, ``hf-hub`` or ``local-dir``), ``arch`` (an
    architecture name, a config file path, the Hub id or the folder) and ``pretrained`` (a tag, a
    checkpoint path, ``none`` or ``""``)."""

    schema: str
    arch: str
    pretrained: str = ""

    @property
    def config_file(self) -> bool:
        return not self.schema and self.arch.endswith(".json")

    @property
    def random(self) -> bool:
        return self.pretrained.lower() in NO_WEIGHTS

    def text(self) -> str:
        if self.schema:
            return f"{self.schema}:{self.arch}"
        return f"{self.arch}:{self.pretrained}"


def parse_open_clip_spec(rest: str) -> OpenClipSpec:
    """Split the part after ``open_clip:`` (see the module docstring); InputError when malformed."""
    for schema in ("hf-hub", "local-dir"):
        if rest.startswith(schema + ":"):
            target = rest[len(schema) + 1:]
            if not target:
                raise InputError(f"open_clip:{rest} names no {'repository' if schema == 'hf-hub' else 'folder'}; "
                                 f"{USAGE}.")
            return OpenClipSpec(schema, target)
    arch, _, pretrained = rest.partition(":")
    if not arch or not pretrained:
        raise InputError(f"open_clip:{rest} needs an architecture and its pretrained weights; {USAGE}.")
    return OpenClipSpec("", arch, pretrained)


def _is_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.endswith((".pt", ".pth", ".bin", ".safetensors", ".json")) \
        or Path(text).expanduser().exists()


def open_clip_canonical(rest: str) -> str:
    """The spec with its files and folders as absolute paths (a tag or architecture as given)."""
    spec = parse_open_clip_spec(rest)
    if spec.schema == "local-dir":
        return f"local-dir:{absolute_path(spec.arch)}"
    if spec.schema:
        return spec.text()
    arch = absolute_path(spec.arch) if spec.config_file else spec.arch
    pretrained = absolute_path(spec.pretrained) if not spec.random and _is_path(spec.pretrained) else spec.pretrained
    return f"{arch}:{pretrained}"


def _import_open_clip():
    try:
        import open_clip
    except ImportError as exc:
        raise InputError("open_clip: models need the open_clip package: pip install 'robustlab[clip]'.") from exc
    return open_clip


def _architecture(open_clip, spec: OpenClipSpec) -> str:
    """The model name open_clip builds (a config file is registered under its stem first)."""
    if spec.config_file:
        path = Path(spec.arch).expanduser()
        if not path.is_file():
            raise DataError(f"open_clip model config {path} does not exist; check the path after 'open_clip:'.")
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise DataError(f"open_clip model config {path} is not readable JSON: {exc}.") from None
        missing = [k for k in ("embed_dim", "vision_cfg", "text_cfg") if k not in config]
        if missing:
            raise DataError(f"open_clip model config {path} lacks {', '.join(missing)}; it must be in open_clip's "
                            "format (embed_dim, vision_cfg, text_cfg), as the files of open_clip/model_configs.")
        open_clip.add_model_config(path)
        return path.stem
    name = spec.arch.replace("/", "-")
    if name not in open_clip.list_models():
        raise unknown_name("open_clip architecture", spec.arch, open_clip.list_models())
    return name


def _tag_source(cfg: dict[str, Any]) -> WeightsSource | None:
    """Where open_clip downloads a pretrained tag's weights (its ``download_pretrained``: the Hub
    repository when the tag names one, else the URL, into ``~/.cache/clip``)."""
    hub = cfg.get("hf_hub", "")
    if hub:
        repo, filename = posixpath.split(hub)  # as open_clip splits it: 'org/name/' has no file name
        if not filename:
            return hub_repo_source(repo, HUB_WEIGHTS)
        stem, dot, ext = filename.rpartition(".")
        files = (f"{stem}.safetensors", filename) if dot and ext in ("bin", "pth") else (filename,)
        return hub_repo_source(repo, files)
    url = cfg.get("url", "")
    if url:
        return WeightsSource("url", url, (posixpath.basename(url),), Path("~/.cache/clip").expanduser())
    return None


def _weights(open_clip, spec: OpenClipSpec, arch: str) -> tuple[str | None, WeightsSource | None]:
    """``(pretrained= value for open_clip, where a tag's weights download from)``."""
    if spec.random:
        return None, None
    cfg = open_clip.get_pretrained_cfg(arch, spec.pretrained) if not spec.config_file else {}
    if cfg:
        return spec.pretrained, _tag_source(cfg)
    path = Path(spec.pretrained).expanduser()
    if path.is_file():
        return str(path.resolve()), None
    if _is_path(spec.pretrained):
        raise DataError(f"open_clip checkpoint file {path} does not exist; check the path after open_clip:{spec.arch}:.")
    tags = open_clip.list_pretrained_tags_by_model(arch) if not spec.config_file else []
    if not tags:
        raise InputError(f"open_clip:{spec.text()}: {spec.pretrained!r} is neither a checkpoint file nor a pretrained "
                         f"tag, and open_clip has no pretrained weights for {spec.arch}: give a checkpoint file or none.")
    error = unknown_name(f"pretrained tag of open_clip's {arch}", spec.pretrained, tags)
    raise InputError(f"{error} Or give a checkpoint file.") from None


def _hub_schema_source(spec: OpenClipSpec) -> WeightsSource | None:
    if spec.schema != "hf-hub":
        return None
    return hub_repo_source(spec.arch.rstrip("/"), HUB_WEIGHTS, required=(HUB_CONFIG,))


def open_clip_preprocessing(cfg: dict[str, Any], what: str) -> Preprocessing:
    """open_clip's evaluation transform of a model (``image_transform(..., is_train=False)``) as a
    :class:`~robustlab.models.Preprocessing`; ModelError for settings it cannot express."""
    size = cfg.get("size", 224)
    h, w = (size, size) if isinstance(size, int) else tuple(size)
    mode = cfg.get("resize_mode", "shortest") or "shortest"
    interpolation = cfg.get("interpolation", "bicubic") or "bicubic"
    interpolation = "bicubic" if interpolation == "random" else interpolation
    fix = ("Give the preprocessing yourself (--resize, --crop, --interpolation, --mean, --std; predictions then differ "
           "from open_clip's own transform), or use a model with the standard transform")
    if mode != "shortest" or h != w:
        raise ModelError(f"{what}: open_clip's transform for it resizes with resize_mode={mode!r} to {h}x{w}, which "
                         f"robustlab does not reproduce (it reproduces a shorter-side resize to a square crop). {fix}.")
    if interpolation not in INTERPOLATIONS:
        raise ModelError(f"{what}: open_clip's transform interpolates with {interpolation!r}, which robustlab does "
                         f"not reproduce. {fix}.")
    mean, std = tuple(cfg.get("mean") or ()), tuple(cfg.get("std") or ())
    if len(mean) != 3 or len(std) != 3:
        raise ModelError(f"{what}: open_clip's transform normalises with mean {mean} and std {std}; robustlab needs "
                         f"three values each. {fix}.")
    return Preprocessing(int(h), int(h), interpolation, mean, std)


def tokenizer_identity(tokenizer: Any, open_clip) -> str:
    """The tokenizer as its identity: class, context length, its Hub source if any, open_clip's version."""
    parts = [f"{type(tokenizer).__module__}.{type(tokenizer).__qualname__}",
             f"context_length={getattr(tokenizer, 'context_length', None)}"]
    inner = getattr(tokenizer, "tokenizer", None)
    source = getattr(inner, "name_or_path", None)
    if source:
        parts.append(f"source={source}")
    return " ".join(parts) + f" open_clip=={open_clip.__version__}"


@model_source("open_clip", canonical=open_clip_canonical)
def load_open_clip(rest: str, options: dict[str, Any]) -> Model:
    """``open_clip:ARCH:TAG|FILE|none``: an open_clip model as a zero-shot classifier (robustlab[clip]).

    The head scores CLIP's 1,000 ImageNet class names in 80 templates, or a benchmark's own classes."""
    open_clip = _import_open_clip()
    spec = parse_open_clip_spec(rest)
    canonical = open_clip_canonical(rest)
    what = f"open_clip:{canonical}"
    if spec.schema == "local-dir" and not Path(spec.arch).expanduser().is_dir():
        raise DataError(f"open_clip folder {spec.arch} does not exist; local-dir: needs a folder with "
                        f"{HUB_CONFIG} and the weights.")
    if spec.schema:
        name = f"{spec.schema}:{absolute_path(spec.arch) if spec.schema == 'local-dir' else spec.arch}"
        pretrained, source = None, _hub_schema_source(spec)
    else:
        name = _architecture(open_clip, spec)
        pretrained, source = _weights(open_clip, spec, name)
    if options.get("pretrained") is False:
        pretrained, source = None, None
    random = pretrained is None and not spec.schema
    init = seeded_init() if random else contextlib.nullcontext()
    with weights_guard(source, what), init:
        model = open_clip.create_model(name, pretrained=pretrained, load_weights=not random, device="cpu",
                                       pretrained_image=False, pretrained_text=False)
        tokenizer = open_clip.get_tokenizer(name)
    model.eval()
    prep = options["preprocessing"] or open_clip_preprocessing(open_clip.get_model_preprocess_cfg(model), what)
    labels = imagenet_labels()
    net = ZeroShotNet(model, TextEncoder(model, tokenizer, tokenizer_identity(tokenizer, open_clip)), labels)
    return ZeroShotClassifier(net, name=what, preprocessing=prep, num_classes=len(labels.names),
                              source={"source": "open_clip", "architecture": spec.arch if spec.schema else name,
                                      "pretrained": "none" if random else (spec.pretrained or spec.schema),
                                      "zero_shot": describe_labels(labels)})
