"""Zero-shot classifiers: a CLIP-style model scores an image against text embeddings of class prompts.

The recipe is open_clip's (``open_clip.build_zero_shot_classifier``, as its ``training/zero_shot.py``
and CLIP_benchmark use it): each class name is put into every prompt template, the texts are
tokenized with the model's tokenizer and encoded, each embedding is normalised, the per-class
mean is normalised again, and an image's logits are ``100 * normalize(encode_image(x)) @ W``.

The class names and templates (:class:`ZeroShotLabels`):

- **ImageNet-1k** (:func:`imagenet_labels`, the default head): CLIP's curated names of the 1,000
  ImageNet classes and its 80 prompt templates, as open_clip ships them
  (``open_clip.zero_shot_metadata``: ``IMAGENET_CLASSNAMES``, ``OPENAI_IMAGENET_TEMPLATES``);
- **a folder of your own** (:func:`folder_labels`): the class folders' names, underscores read as
  spaces, with the same 80 templates;
- any other list: :meth:`ZeroShotClassifier.for_labels`.

The text embeddings are computed once per model and class list, on the model's device at its first
batch, and cached by content: in memory, and on disk under ``$ROBUSTLAB_CACHE/zero-shot`` (default
``~/.cache/robustlab/zero-shot``), keyed by a hash of the text tower's weights, the tokenizer, the
names and the templates (:func:`text_cache_key`). A model's identity (:mod:`.identity`) covers the
same: its weights, the names, the templates and the tokenizer are attributes of :class:`ZeroShotNet`.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..errors import InputError
from .protocol import Classifier

__all__ = ["LOGIT_SCALE", "ZeroShotClassifier", "ZeroShotLabels", "ZeroShotNet", "folder_labels", "imagenet_labels",
           "text_cache_dir", "text_cache_key"]

#: The scale of the zero-shot logits (open_clip's and CLIP_benchmark's recipe: 100 * cosine similarity).
LOGIT_SCALE = 100.0
#: What the names and templates of the default head are.
IMAGENET_SOURCE = "open_clip.zero_shot_metadata: IMAGENET_CLASSNAMES (CLIP's), OPENAI_IMAGENET_TEMPLATES (80)"
#: Classes per text batch (open_clip's default).
CLASSES_PER_BATCH = 10


@dataclass(frozen=True)
class ZeroShotLabels:
    """The class names of a zero-shot head (in label order), its prompt templates (format strings
    with one ``{}``) and where they come from."""

    names: tuple[str, ...]
    templates: tuple[str, ...]
    source: str = ""

    def __post_init__(self) -> None:
        if not self.names:
            raise InputError("a zero-shot head needs at least one class name.")
        if not self.templates or any(t.count("{}") != 1 for t in self.templates):
            raise InputError("zero-shot prompt templates must each hold one '{}' for the class name, e.g. "
                             "'a photo of a {}.'.")

    def subset(self, indices: Sequence[int], source: str) -> ZeroShotLabels:
        """The labels of ``indices`` (in that order), with the same templates."""
        return ZeroShotLabels(tuple(self.names[i] for i in indices), self.templates, source)


def _templates(objects: Sequence[str | Callable[[str], str]]) -> tuple[str, ...]:
    """open_clip's templates (lambdas or format strings) as format strings."""
    return tuple(t if isinstance(t, str) else t("{}") for t in objects)


@functools.lru_cache(maxsize=1)
def imagenet_labels() -> ZeroShotLabels:
    """CLIP's 1,000 ImageNet class names (in ImageNet-1k index order) and 80 templates, from open_clip."""
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES, OPENAI_IMAGENET_TEMPLATES

    return ZeroShotLabels(tuple(IMAGENET_CLASSNAMES), _templates(OPENAI_IMAGENET_TEMPLATES), IMAGENET_SOURCE)


def folder_labels(folders: Sequence[str], templates: Sequence[str] | None = None) -> ZeroShotLabels:
    """Zero-shot labels of class folders (``golden_retriever`` -> ``golden retriever``), with CLIP's
    80 templates unless ``templates`` are given."""
    names = tuple(str(f).replace("_", " ").strip() for f in folders)
    chosen = tuple(templates) if templates is not None else imagenet_labels().templates
    return ZeroShotLabels(names, chosen, "class folder names")


def text_cache_dir() -> Path:
    """Where text embeddings are cached: ``$ROBUSTLAB_CACHE/zero-shot`` (default ``~/.cache/robustlab``)."""
    base = os.environ.get("ROBUSTLAB_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "robustlab")
    return Path(base) / "zero-shot"


def text_tower_digest(clip: nn.Module) -> str:
    """SHA-256 of every tensor of ``clip`` outside its image tower (``visual.*``): what decides its
    text embeddings besides the tokenizer."""
    from .identity import tensor_bytes

    h = hashlib.sha256()
    state = clip.state_dict()
    for key in sorted(k for k in state if not k.startswith("visual.")):
        tensor = state[key]
        h.update(f"{key}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
        h.update(tensor_bytes(tensor))
    return h.hexdigest()


def text_cache_key(text_digest: str, tokenizer: str, labels: ZeroShotLabels) -> str:
    """The cache key of a head: the text tower's digest, the tokenizer, the names and the templates."""
    h = hashlib.sha256()
    for part in (text_digest, tokenizer, *labels.names, "\x1e", *labels.templates):
        h.update(part.encode())
        h.update(b"\x1f")
    return h.hexdigest()


class TextEncoder:
    """What a zero-shot head needs to embed prompts: the CLIP model, its tokenizer and the digest of
    its text tower (computed once). Kept out of the module tree (a private attribute), so the
    identity hash reads the model once."""

    def __init__(self, clip: nn.Module, tokenizer: Any, tokenizer_id: str) -> None:
        self.clip, self.tokenizer, self.tokenizer_id = clip, tokenizer, tokenizer_id
        self._digest: str | None = None
        self._memory: dict[tuple[str, str], torch.Tensor] = {}  # (key, device) -> weights

    def digest(self) -> str:
        if self._digest is None:
            self._digest = text_tower_digest(self.clip)
        return self._digest

    def weights(self, labels: ZeroShotLabels, device: torch.device) -> torch.Tensor:
        """The (embedding dim, classes) matrix of ``labels``: from memory, the disk cache, or computed
        with open_clip's ``build_zero_shot_classifier`` on ``device`` (then cached)."""
        key = text_cache_key(self.digest(), self.tokenizer_id, labels)
        on_device = self._memory.get((key, str(device)))
        if on_device is not None:
            return on_device
        path = text_cache_dir() / f"{key}.pt"
        weights = _read_cached(path, len(labels.names))
        if weights is None:
            from open_clip import build_zero_shot_classifier

            was_training = self.clip.training
            self.clip.eval()
            try:
                weights = build_zero_shot_classifier(self.clip, self.tokenizer, list(labels.names),
                                                     list(labels.templates), num_classes_per_batch=CLASSES_PER_BATCH,
                                                     device=device).detach().float()
            finally:
                self.clip.train(was_training)
            _write_cached(path, weights)
        self._memory[(key, str(device))] = weights = weights.to(device)
        return weights


def _read_cached(path: Path, classes: int) -> torch.Tensor | None:
    if not path.is_file():
        return None
    try:
        weights = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - a damaged cache file is recomputed
        return None
    return weights if isinstance(weights, torch.Tensor) and weights.ndim == 2 and weights.shape[1] == classes else None


def _write_cached(path: Path, weights: torch.Tensor) -> None:
    from ..fsutil import atomic_path

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            torch.save(weights.cpu(), tmp)
    except OSError:  # a read-only cache: computed again next time
        pass


class ZeroShotNet(nn.Module):
    """``LOGIT_SCALE * normalize(clip.encode_image(x)) @ W`` with ``W`` the text embeddings of
    ``class_names`` x ``templates`` (see the module docstring). ``x`` is preprocessed (normalised)."""

    def __init__(self, clip: nn.Module, encoder: TextEncoder, labels: ZeroShotLabels) -> None:
        super().__init__()
        self.clip = clip
        self.class_names = labels.names
        self.templates = labels.templates
        self.tokenizer = encoder.tokenizer_id
        self.logit_scale = LOGIT_SCALE
        self._encoder = encoder
        self._labels = labels

    @property
    def labels(self) -> ZeroShotLabels:
        return self._labels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.clip.encode_image(x, normalize=True)
        weights = self._encoder.weights(self._labels, features.device)
        return self.logit_scale * features.float() @ weights


class ZeroShotClassifier(Classifier):
    """A :class:`~robustlab.models.Classifier` around a :class:`ZeroShotNet`; :meth:`for_labels`
    gives the same model with a head over other classes (the benchmark's own, or a folder's)."""

    @property
    def labels(self) -> ZeroShotLabels:
        return self.net.labels

    def for_class_names(self, names: Sequence[str]) -> ZeroShotClassifier:
        """The head for a benchmark whose classes are ``names`` (see :mod:`.label_space`): CLIP's
        ImageNet names for ImageNet wnids (all 1,000, or some of them), else the names themselves
        (:func:`folder_labels`), with this head's templates."""
        from .label_space import is_imagenet

        names = tuple(names)
        cache = self.__dict__.setdefault("_by_names", {})
        if names not in cache:
            index = {w: i for i, w in enumerate(_imagenet_wnids())}
            if is_imagenet(names):
                labels = imagenet_labels()
            elif all(n in index for n in names):
                labels = imagenet_labels().subset([index[n] for n in names], "ImageNet classes of the data")
            else:
                labels = folder_labels(names, self.labels.templates)
            cache[names] = self.for_labels(labels)
        return cache[names]

    def for_labels(self, labels: ZeroShotLabels) -> ZeroShotClassifier:
        """The same image and text towers with a head over ``labels`` (a new adapter; the
        embeddings are computed at its first batch and cached)."""
        if labels == self.labels:
            return self
        cache = self.__dict__.setdefault("_heads", {})
        if labels not in cache:
            net = ZeroShotNet(self.net.clip, self.net._encoder, labels)
            cache[labels] = ZeroShotClassifier(
                net, name=f"{self.name} [classes={labels.source or len(labels.names)}]",
                preprocessing=self.preprocessing, num_classes=len(labels.names), differentiable=self.differentiable,
                source={**self.source, "zero_shot": describe_labels(labels)})
            cache[labels].train(self.training)
        return cache[labels]


def _imagenet_wnids() -> list[str]:
    from ..data.wordnet import ilsvrc_wnids

    return ilsvrc_wnids()


def describe_labels(labels: ZeroShotLabels) -> dict[str, Any]:
    """What a run records of a zero-shot head: its source, size and a hash of names and templates."""
    h = hashlib.sha256("\x1f".join((*labels.names, "\x1e", *labels.templates)).encode()).hexdigest()[:16]
    return {"labels": labels.source, "classes": len(labels.names), "templates": len(labels.templates),
            "labels_sha256_16": h}
