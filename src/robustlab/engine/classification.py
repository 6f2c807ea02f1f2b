"""Per-batch classifier outputs (columns) and per-setting errors from stored predictions.

Stored columns of a classification unit (one row per sample that could be read):

- ``sample_id`` (str): the sample's stable id (relative path or row number);
- ``label`` (int64): the true class index;
- ``top5_index`` (int32, N x k): the k highest-scoring classes, best first (k = 5, or the
  number of classes when fewer);
- ``top5_score`` (float32, N x k): their softmax probabilities;
- ``logits`` (float32, N x num_classes): only when the run asks for them (``save_logits``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


#: Set by an executor that keeps a batch ahead on a CUDA device: :func:`classify_batch` then
#: returns :class:`PendingColumns` (the device's results copied back asynchronously) instead of
#: waiting for them, so the next batch's work is queued on the device while this one finishes.
DEFER_RESULTS: contextvars.ContextVar[bool] = contextvars.ContextVar("robustlab_defer_results", default=False)


class PendingColumns(Mapping):
    """Prediction columns still on their way from the device. Looking at them (or
    :func:`resolve_columns`) waits for the device and checks them, raising the same errors as
    :func:`classify_batch` (NaN or +inf logits)."""

    def __init__(self, finish: Callable[[], dict[str, np.ndarray]]) -> None:
        self._finish: Callable[[], dict[str, np.ndarray]] | None = finish
        self._columns: dict[str, np.ndarray] | None = None

    def resolve(self) -> dict[str, np.ndarray]:
        if self._columns is None:
            finish, self._finish = self._finish, None
            self._columns = finish()
        return self._columns

    def __getitem__(self, name: str) -> np.ndarray:
        return self.resolve()[name]

    def __iter__(self):
        return iter(self.resolve())

    def __len__(self) -> int:
        return len(self.resolve())


def resolve_columns(columns: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray] | None:
    """Plain columns: :class:`PendingColumns` waited for, anything else as it is."""
    return columns.resolve() if isinstance(columns, PendingColumns) else columns


def classify_batch(model: torch.nn.Module, x: torch.Tensor, *, top_k: int = 5, save_logits: bool = False,
                   num_classes: int | None = None) -> dict[str, np.ndarray]:
    """Run ``model`` on ``x`` (float NCHW [0, 1]) and return the batch's prediction columns.

    Raises ModelError (naming the model) for NaN/inf logits, a wrong shape or a wrong number
    of classes. On a CUDA device under :data:`DEFER_RESULTS` the columns come back as
    :class:`PendingColumns` (the same values, and the same errors when they are looked at).
    """
    import torch

    from ..models.protocol import check_logits

    with torch.inference_mode():
        logits = model(x)
    name = getattr(model, "name", type(model).__name__)
    logits = check_logits(logits, x.shape[0], name, num_classes, check_values=False).float()
    check_declared_classes(model, logits.shape[1])
    k = min(top_k, logits.shape[1])
    # NaN or +inf logits make their row's softmax NaN, so checking the top-k scores (N x k,
    # already on the CPU) catches them without another pass over the full logits.
    scores, index = torch.topk(torch.softmax(logits, dim=1), k, dim=1)
    index = index.to(torch.int32)
    if DEFER_RESULTS.get() and scores.device.type == "cuda":
        host = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True).copy_(t, non_blocking=True)
                for t in ((scores, index, logits) if save_logits else (scores, index))]
        done = torch.cuda.Event()
        done.record()
        return PendingColumns(lambda: (done.synchronize(), _columns(name, *[t.numpy() for t in host]))[1])
    return _columns(name, scores.cpu().numpy(), index.cpu().numpy(), logits.cpu().numpy() if save_logits else None)


def _columns(name: str, scores: np.ndarray, index: np.ndarray, logits: np.ndarray | None = None) -> dict[str, np.ndarray]:
    from ..models.protocol import nonfinite_error

    bad = ~np.isfinite(scores).all(axis=1)
    if bad.any():
        raise nonfinite_error(name, int(bad.sum()), scores.shape[0])
    out = {"top5_index": index, "top5_score": scores}
    if logits is not None:
        out["logits"] = logits
    return out


def top1_errors(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per-sample top-1 error (bool, True = wrong) from stored columns."""
    return columns["top5_index"][:, 0].astype(np.int64) != columns["label"]


def top5_errors(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per-sample top-5 error (bool, True = true label not among the top 5)."""
    return ~(columns["top5_index"].astype(np.int64) == columns["label"][:, None]).any(axis=1)


def setting_counts(predictions: Mapping[str, Mapping[str, np.ndarray]],
                   setting_of: Mapping[str, str]) -> dict[str, tuple[int, int, int]]:
    """``{setting: (n_samples, n_top1_wrong, n_top5_wrong)}`` summed over the setting's units."""
    counts: dict[str, list[int]] = {}
    for unit, columns in predictions.items():
        setting = setting_of.get(unit)
        if setting is None:
            continue
        c = counts.setdefault(setting, [0, 0, 0])
        c[0] += len(columns["label"])
        if len(columns["label"]):
            c[1] += int(top1_errors(columns).sum())
            c[2] += int(top5_errors(columns).sum())
    return {s: (n, e1, e5) for s, (n, e1, e5) in counts.items()}


def add_setting_counts(counts: dict[str, tuple[int, int, int]], predictions: Mapping[str, Mapping[str, np.ndarray]],
                       setting: str) -> None:
    """Sum every unit of ``predictions`` (another run's, e.g. the clean run of a corruption
    benchmark) into ``counts`` as ``setting``, replacing it; nothing when they hold no unit."""
    extra = setting_counts(predictions, {u: setting for u in predictions})
    if setting in extra:
        counts[setting] = extra[setting]


def error_rows(counts: Mapping[str, tuple[int, int, int]]) -> Iterable[tuple[str, str, float]]:
    """Metric rows ``error``, ``top5_error`` and ``n_samples`` per setting."""
    for setting, (n, e1, e5) in counts.items():
        yield ("n_samples", setting, float(n))
        if n:
            yield ("error", setting, e1 / n)
            yield ("top5_error", setting, e5 / n)


def check_declared_classes(model, returned: int) -> None:
    """The number of logits a model returned must be the number it declares (``--num-classes``,
    a Classifier's ``num_classes``), on every batch: a model said to have 11 classes that returns
    10 logits is an error, not a run that never predicts class 10.

    Raises
    ------
    ModelError
    """
    declared = getattr(model, "num_classes", None)
    if isinstance(declared, int) and not isinstance(declared, bool) and declared != returned:
        from ..errors import ModelError

        name = getattr(model, "name", type(model).__name__)
        raise ModelError(f"model {name!r} returned {returned} logits per image, but it declares {declared} classes "
                         f"(--num-classes {declared} or its num_classes): give the number of classes the model outputs.")
