"""Which samples a limited run takes (``--limit N``), and how a run says so.

A quick look at a dataset (``robustlab evaluate ... --limit 100``) must not measure only its
first classes: an image folder lists its classes in path order, so the first 100 files are all
of class 0 and 1, and every number of such a run is biased towards them. Two rules:

- ``balanced`` (the default): the same number of samples from every class, ``N // C`` each
  (the remainder, one more each, goes to classes chosen by the same hash), and within a class
  the samples whose seeded hash of their id (:func:`sample_rank`) is smallest. The choice
  depends on the sample ids and labels only, so it is the same in every run, in every setting
  of a run (a corrupted copy keeps its images' relative paths), on any number of workers and
  in every benchmark that reads the same folder. A class with fewer samples than its share
  gives all it has; the others do not make up for it, so the classes stay balanced. Samples
  without a class (detection images) are taken by the hash alone: a spread, not the first N.
- ``path``: the first ``N`` in path (or row) order, as robustlab did before.

The run records the rule (``limit_order`` in its config) and what it took (``limit_stats``),
and ``robustlab show`` and the report print ``limited to N of M samples, K per class``
(:func:`limit_note`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError, unknown_name

#: The ``limit_order`` rules: see the module docstring.
LIMIT_ORDERS = ("balanced", "path")
DEFAULT_LIMIT_ORDER = "balanced"
#: The seed of the hash that picks a balanced limit's samples: fixed, so every benchmark that
#: reads one folder with the same limit takes the same images (a clean run, its corrupted run
#: and a baseline run compare the same samples).
LIMIT_SEED = 0


def check_limit_order(order: Any) -> str:
    """``order`` when it is a known rule (InputError naming the rules otherwise)."""
    if order is None:
        return DEFAULT_LIMIT_ORDER
    if not isinstance(order, str):
        raise InputError(f"limit_order must be one of {', '.join(LIMIT_ORDERS)}; got {order!r}.")
    if order not in LIMIT_ORDERS:
        raise unknown_name("limit order", order, LIMIT_ORDERS)
    return order


def sample_rank(key: str, seed: int = LIMIT_SEED) -> int:
    """The seeded hash of a sample id that orders a balanced limit's choice (a 64-bit integer)."""
    digest = hashlib.blake2b(f"{int(seed)}\0{key}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def limit_positions(keys: Sequence[str], labels: Sequence[int] | np.ndarray | None, limit: int | None,
                    order: str = DEFAULT_LIMIT_ORDER, *, seed: int = LIMIT_SEED) -> np.ndarray:
    """The positions (ascending, int64) of the samples a limit of ``limit`` keeps.

    Parameters
    ----------
    keys : sequence of str
        The samples' ids (relative paths, row numbers as text), in listing order.
    labels : sequence of int, optional
        Their classes (None: samples without a class, chosen by the hash alone).
    limit : int, optional
        How many to keep (None: all).
    order : ``"balanced"`` or ``"path"``
        See the module docstring.

    Examples
    --------
    >>> limit_positions(["a/1", "a/2", "b/1", "b/2"], [0, 0, 1, 1], 2, "path").tolist()
    [0, 1]
    >>> sorted(np.asarray([0, 0, 1, 1])[limit_positions(["a/1", "a/2", "b/1", "b/2"], [0, 0, 1, 1], 2)].tolist())
    [0, 1]
    """
    n = len(keys)
    if limit is None or limit >= n and order == "path":
        return np.arange(n if limit is None else min(n, int(limit)), dtype=np.int64)
    limit = int(limit)
    if check_limit_order(order) == "path":
        return np.arange(min(n, limit), dtype=np.int64)
    ranks = np.asarray([sample_rank(str(k), seed) for k in keys], dtype=np.uint64)
    if labels is None:
        return np.sort(np.argsort(ranks, kind="stable")[:limit]).astype(np.int64)
    labels = np.asarray(labels).reshape(-1)
    classes = sorted(set(labels.tolist()), key=lambda c: (sample_rank(f"class:{c}", seed), str(c)))
    if not classes:
        return np.zeros(0, dtype=np.int64)
    share, extra = divmod(limit, len(classes))
    kept: list[np.ndarray] = []
    for k, c in enumerate(classes):
        quota = share + (1 if k < extra else 0)
        if quota == 0:
            continue
        members = np.flatnonzero(labels == c)
        kept.append(members[np.argsort(ranks[members], kind="stable")[:quota]])
    return np.sort(np.concatenate(kept)).astype(np.int64) if kept else np.zeros(0, dtype=np.int64)


def limit_stats(labels: Sequence[int] | np.ndarray | None, positions: np.ndarray, available: int,
                order: str) -> dict[str, Any]:
    """What a limit took, for the run's config (``limit_stats``): ``{"order", "samples", "of"}``,
    and with classes ``"classes"`` (those with samples) and ``"per_class"`` ``[fewest, most]`` taken."""
    out: dict[str, Any] = {"order": order, "samples": int(len(positions)), "of": int(available)}
    if labels is not None:
        labels = np.asarray(labels).reshape(-1)
        present = sorted(set(labels.tolist()))
        taken = labels[np.asarray(positions, dtype=np.int64)] if len(positions) else labels[:0]
        counts = [int(np.count_nonzero(taken == c)) for c in present]
        out["classes"] = len(present)
        out["per_class"] = [min(counts), max(counts)] if counts else [0, 0]
    return out


def config_limit_order(config: Mapping[str, Any]) -> str:
    """The rule a stored run's limit used: its recorded ``limit_order``, or ``path`` for runs
    stored before the rule was recorded (they took the first N)."""
    return str(config.get("limit_order") or "path")


def limit_note(config: Mapping[str, Any]) -> str | None:
    """``limited to 50 of 300 samples, 5 per class (...)`` for a limited run's config, else None."""
    if not isinstance(config, Mapping) or not config.get("limit"):
        return None
    stats = config.get("limit_stats")
    order = config_limit_order(config)
    rule = ("balanced: the samples of each class with the smallest seeded hash of their id"
            if order == "balanced" else "the first N in path order, biased towards the first classes")
    if not isinstance(stats, Mapping):
        return f"limited to {config['limit']} samples per setting ({rule})."
    of = f" of {stats['of']}" if stats.get("of") is not None else ""
    text = f"limited to {stats.get('samples')}{of} samples"
    per_class = stats.get("per_class")
    if per_class:
        low, high = per_class
        text += f", {low if low == high else f'{low}-{high}'} per class"
        if stats.get("classes"):
            text += f" of {stats['classes']}"
    return f"{text} ({rule})."
