"""Label spaces: a benchmark's classes, and the models that know their own labels.

Most models give logits over classes they do not name; the benchmark's class map decides what
each column means. Two kinds of model name their classes, and adapt to a benchmark's
(:func:`for_class_names`, which the benchmarks call with the class names of their data in label
order, ImageNet's 1,000 wnids for ImageNet data):

- a **zero-shot** model (:class:`~robustlab.models.zero_shot.ZeroShotClassifier`) builds its head
  from the names: CLIP's ImageNet names for ImageNet data, the folder names otherwise;
- a **Hugging Face** classifier (``hf:``) has ``id2label``: for ImageNet data its labels must be
  ImageNet's 1,000 classes (:func:`imagenet_order`, by their first name, e.g. ``tench, Tinca
  tinca``; columns in another order are put in ImageNet's), and for other data its labels must be
  the data's class names; otherwise a :class:`~robustlab.errors.ModelError` says what differs.

Every other model is used as it is.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ..data.wordnet import ilsvrc_wnids, synset_names

__all__ = ["for_class_names", "imagenet_label_names", "imagenet_order", "is_imagenet", "label_key", "match_labels"]


@functools.lru_cache(maxsize=1)
def _wnids() -> tuple[str, ...]:
    return tuple(ilsvrc_wnids())


def is_imagenet(names: Sequence[str]) -> bool:
    """Whether ``names`` are ImageNet-1k's 1,000 wnids in class-index order."""
    return tuple(names) == _wnids()


def label_key(label: str) -> str:
    """A label compared loosely: its first comma-separated name, lower case, underscores as spaces."""
    return " ".join(str(label).split(",")[0].replace("_", " ").lower().split())


@functools.lru_cache(maxsize=1)
def imagenet_label_names() -> tuple[str, ...]:
    """The first WordNet lemma of each ImageNet-1k class in index order (``tench``, ``goldfish`` ...),
    as the ``id2label`` of ImageNet models on the Hugging Face Hub start."""
    names = synset_names()
    return tuple(names[w].replace("_", " ") for w in _wnids())


def match_labels(labels: Sequence[str], targets: Sequence[str]) -> list[int] | None:
    """For each target name, the index of the model label with the same :func:`label_key` (a name
    that several labels share is matched in order); None unless every target matches one label and
    every label one target."""
    if len(labels) != len(targets):
        return None
    keys = [label_key(t) for t in targets]
    if [label_key(lb) for lb in labels] == keys:
        return list(range(len(keys)))
    where: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        where.setdefault(label_key(label), []).append(i)
    order = []
    for key in keys:
        slots = where.get(key)
        if not slots:
            return None
        order.append(slots.pop(0))
    return order


def imagenet_order(labels: Sequence[str]) -> list[int] | None:
    """The model column of each ImageNet-1k class (index order), or None when ``labels`` are not
    ImageNet's 1,000 classes."""
    return match_labels(labels, imagenet_label_names())


def for_class_names(model, names: Sequence[str] | None):
    """``model`` adapted to a benchmark whose classes are ``names`` (label order; ImageNet's wnids for
    ImageNet data): the model's own ``for_class_names`` when it has one, else the model itself."""
    adapt = getattr(model, "for_class_names", None)
    if adapt is None or not names:
        return model
    return adapt(tuple(names))
