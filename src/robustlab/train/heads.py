"""Classification heads: find a network's head, resize it, freeze the rest, check that weights fit a network.

The head is the network's last ``nn.Linear`` (or 1x1 ``nn.Conv2d``, as SqueezeNet's) whose
number of outputs is the model's number of classes: ``fc`` of a ResNet, ``classifier.6`` of
VGG/AlexNet, ``heads.head`` of a torchvision ViT, ``head.fc`` of a timm ConvNeXt.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from ..errors import ModelError
from ..seeding import derive_seed

def is_head_layer(module: nn.Module) -> bool:
    """A layer that can be a classification head: Linear, or Conv2d with a 1x1 kernel."""
    return isinstance(module, nn.Linear) or (isinstance(module, nn.Conv2d) and module.kernel_size == (1, 1))


def head_outputs(module: nn.Module) -> int:
    return module.out_features if isinstance(module, nn.Linear) else module.out_channels


def find_head(net: nn.Module, num_classes: int | None = None) -> tuple[str, nn.Module]:
    """``(dotted path, layer)`` of the classification head of ``net``.

    Parameters
    ----------
    net : nn.Module
    num_classes : int, optional
        The model's number of outputs; the head is the last candidate layer with that many
        (the last candidate of all when None).

    Raises
    ------
    ModelError
        When no Linear / 1x1 Conv2d layer (with ``num_classes`` outputs) exists.
    """
    found = [(name, m) for name, m in net.named_modules() if name and is_head_layer(m)
             and (num_classes is None or head_outputs(m) == num_classes)]
    if not found:
        what = f" with {num_classes} outputs" if num_classes is not None else ""
        raise ModelError(f"cannot find the classification head of {type(net).__name__}: it has no nn.Linear or 1x1 "
                         f"nn.Conv2d layer{what}. Fine-tuning on other classes needs a model that ends in one.")
    return found[-1]


def replace_head(net: nn.Module, path: str, num_classes: int, *, seed: int = 0,
                 init_rows: Mapping[int, list[int]] | None = None) -> nn.Module:
    """Replace the layer at ``path`` by one with ``num_classes`` outputs; return the new layer.

    The new layer has the old one's inputs (and kind). Row ``t`` starts as the mean of the old
    rows ``init_rows[t]`` (weights and bias) when given, e.g. the ImageNet classes below a
    target synset; other rows start from PyTorch's default initialisation drawn from
    ``derive_seed(seed, "head")`` (the global torch RNG is left untouched).
    """
    old = net.get_submodule(path)
    if not is_head_layer(old):
        raise ModelError(f"{path} of {type(net).__name__} is a {type(old).__name__}, not a Linear/1x1 Conv2d head.")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "head"))
        if isinstance(old, nn.Linear):
            new = nn.Linear(old.in_features, num_classes, bias=old.bias is not None)
        else:
            new = nn.Conv2d(old.in_channels, num_classes, 1, bias=old.bias is not None)
    new = new.to(device=old.weight.device, dtype=old.weight.dtype)
    if init_rows:
        with torch.no_grad():
            n_old = head_outputs(old)
            for target, rows in init_rows.items():
                rows = [r for r in rows if 0 <= r < n_old]
                if 0 <= target < num_classes and rows:
                    new.weight[target] = old.weight[rows].mean(dim=0)
                    if new.bias is not None:
                        new.bias[target] = old.bias[rows].mean()
    parent_path, _, attr = path.rpartition(".")
    parent = net.get_submodule(parent_path) if parent_path else net
    setattr(parent, attr, new)
    if hasattr(net, "num_classes") and isinstance(getattr(net, "num_classes"), int):
        net.num_classes = num_classes  # timm models keep it (reset_classifier, pretrained_cfg)
    return new


def check_state_dict(net: nn.Module, state: Mapping[str, torch.Tensor], *, what: str, fix: str) -> None:
    """Raise a :class:`ModelError` unless ``state`` has exactly ``net``'s tensors and shapes.

    The message names ``what`` (the checkpoint), how many tensors disagree, the first few
    missing, unexpected and mis-shaped ones, and ``fix``.
    """
    own = net.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in own
              if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(own[k].shape)]
    if not (missing or unexpected or shapes):
        return
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing (e.g. {', '.join(missing[:3])})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected (e.g. {', '.join(unexpected[:3])})")
    if shapes:
        parts.append(f"{len(shapes)} of another shape (e.g. {'; '.join(shapes[:3])})")
    raise ModelError(f"{what} was made for another architecture than {type(net).__name__}: its tensors do not "
                     f"fit ({'; '.join(parts)}). {fix}")


def resize_head_for(classifier, data, forced: bool, seed: int,
                    head_init: str = "imagenet-rows") -> dict | None:
    """Resize ``classifier``'s head to the data's classes when they differ (or ``forced``); describe it.
    ``head_init``: ``imagenet-rows`` (each row the mean of the ImageNet rows below its class, for a
    1000-way ImageNet head) or ``fresh`` (PyTorch's default initialisation)."""
    k = len(data.classes)
    if not forced and classifier.num_classes == k:
        return None
    path, layer = find_head(classifier.net, classifier.num_classes)
    if not forced and head_outputs(layer) == k:  # the model did not say its class count; its head has k
        classifier.num_classes = k
        return None
    rows = data.imagenet_rows if head_init == "imagenet-rows" and head_outputs(layer) == 1000 and data.imagenet_rows \
        else None
    replace_head(classifier.net, path, k, seed=seed, init_rows=rows)
    classifier.num_classes = k
    return {"path": path, "classes": k, "init": "imagenet-rows" if rows else ("fresh" if head_init == "fresh" else
                                                                              "random")}


def set_trainable(classifier, head_path: str, train: str) -> list[torch.nn.Parameter]:
    """Parameters to optimise: all, or the head's only (the rest frozen)."""
    if train == "all":
        return [p for p in classifier.net.parameters() if p.requires_grad]
    head = classifier.net.get_submodule(head_path)
    head_ids = {id(p) for p in head.parameters()}
    for p in classifier.net.parameters():
        p.requires_grad_(id(p) in head_ids)
    return list(head.parameters())
