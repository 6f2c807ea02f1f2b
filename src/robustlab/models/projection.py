"""Label-space projection: a model's logits over source classes -> logits over target classes.

Example: a 1000-way ImageNet classifier evaluated on the 30 ImageNet-VID classes. Each target
class owns a group of source columns (e.g. every ImageNet class below it in WordNet); its
score is the ``merge`` (max, sum, mean or median) of those columns. Source classes in no group
can never be predicted; a target class with an empty group scores ``-inf``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..errors import InputError
from .protocol import Classifier

MERGES = ("max", "sum", "mean", "median")


def groups_from_map(class_map: Mapping[object, object], num_targets: int | None = None) -> list[list[int]]:
    """Build target groups from a map.

    Accepts either ``{source index: target index}`` (like ImageNet-Vid-Robust's
    ``class_idx_map.json``) or ``{target index: [source indices]}`` (``rev_class_idx_map.json``);
    JSON string keys are fine. ``num_targets`` defaults to the largest target index + 1.
    """
    pairs: list[tuple[int, int]] = []  # (target, source)
    for key, value in class_map.items():
        if isinstance(value, (list, tuple)):
            pairs.extend((int(key), int(v)) for v in value)
        else:
            pairs.append((int(value), int(key)))
    if not pairs:
        raise InputError("the class map is empty; it must map source classes to target classes.")
    n = num_targets if num_targets is not None else max(t for t, _ in pairs) + 1
    if min(min(p) for p in pairs) < 0 or max(t for t, _ in pairs) >= n:
        raise InputError(f"class map indices must be non-negative and targets below {n}.")
    groups: list[list[int]] = [[] for _ in range(n)]
    for target, source in sorted(pairs):
        if source not in groups[target]:
            groups[target].append(source)
    return groups


def project_logits(logits: torch.Tensor | np.ndarray, groups: Sequence[Sequence[int]],
                   merge: str = "max") -> torch.Tensor | np.ndarray:
    """Project (N, S) logits to (N, len(groups)) by merging each group's columns.

    Parameters
    ----------
    logits : tensor or ndarray, shape (N, S)
    groups : one list of source column indices per target class (may be empty)
    merge : ``max`` (default), ``sum``, ``mean`` or ``median`` (torch's lower median for even
        group sizes)

    Returns
    -------
    tensor or ndarray, shape (N, len(groups))
        The same type as ``logits`` (differentiable for tensors); empty groups give -inf.
    """
    if merge not in MERGES:
        raise InputError(f"unknown merge {merge!r}; use one of {MERGES}.")
    as_numpy = isinstance(logits, np.ndarray)
    x = torch.from_numpy(logits) if as_numpy else logits
    if x.ndim != 2:
        raise InputError(f"logits must have shape (N, classes); got {tuple(x.shape)}.")
    n_source = x.shape[1]
    cols = []
    for k, group in enumerate(groups):
        idx = [int(i) for i in group]
        if any(i < 0 or i >= n_source for i in idx):
            raise InputError(f"target class {k} maps to source indices {idx} outside 0..{n_source - 1}.")
        if not idx:
            cols.append(torch.full((x.shape[0],), float("-inf"), dtype=x.dtype, device=x.device))
            continue
        sub = x[:, idx]
        if merge == "max":
            cols.append(sub.max(dim=1).values)
        elif merge == "sum":
            cols.append(sub.sum(dim=1))
        elif merge == "mean":
            cols.append(sub.mean(dim=1))
        else:
            cols.append(sub.median(dim=1).values)
    out = torch.stack(cols, dim=1) if cols else x[:, :0]
    return out.numpy() if as_numpy else out


class _Projection(torch.nn.Module):
    def __init__(self, net: torch.nn.Module, groups: list[list[int]], merge: str) -> None:
        super().__init__()
        self.inner = net
        self.groups = groups
        self.merge = merge

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return project_logits(self.inner(x), self.groups, self.merge)


def project(model: Classifier, groups: Sequence[Sequence[int]] | Mapping[object, object],
            merge: str = "max", *, name: str | None = None) -> Classifier:
    """A classifier whose logits are ``model``'s projected to the target classes.

    ``groups`` is a list of source-index lists, or a map accepted by :func:`groups_from_map`.
    The preprocessing stays inside; gradients still flow (merge max/sum/mean/median are
    differentiable almost everywhere).
    """
    if merge not in MERGES:
        raise InputError(f"unknown merge {merge!r}; use one of {MERGES}.")
    group_list = groups_from_map(groups) if isinstance(groups, Mapping) else [list(map(int, g)) for g in groups]
    return Classifier(_Projection(model.net, group_list, merge),
                      name=name or f"{model.name}|project-{merge}-{len(group_list)}",
                      preprocessing=model.preprocessing, num_classes=len(group_list),
                      differentiable=model.differentiable,
                      source={**model.source, "projection": {"merge": merge, "groups": group_list}})
