"""Run identity: the same (model, benchmark, dataset, config) always gives the same run id, and
a run id, or the start of one, names one stored run (:func:`resolve_run`)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from sqlalchemy import Connection, select

from ..errors import InputError, StoreError
from .catalog import runs

#: Hex digits of a run id: 48 bits, so a collision needs millions of runs in one store.
RUN_ID_LENGTH = 12


class RunNotFoundError(StoreError):
    """No run (or no single run) matches the id or prefix given."""


def to_jsonable(value: Any, *, where: str = "value") -> Any:
    """Convert ``value`` to plain JSON types (numpy scalars/arrays, tuples, paths included).

    Mapping keys become strings; non-finite floats are refused because JSON cannot hold them.

    Raises
    ------
    InputError
        For objects with no faithful JSON form (arbitrary classes, NaN, sets...).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise InputError(
                f"{where} holds the non-finite number {value!r}, which JSON cannot store: use None or a string."
            )
        return float(value)
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist(), where=where)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, where=f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, where=f"{where}[{i}]") for i, v in enumerate(value)]
    raise InputError(
        f"{where} holds a {type(value).__name__} ({value!r:.60}), which cannot be stored as JSON: "
        "use numbers, strings, lists and dicts."
    )


def canonical_json(value: Any, *, where: str = "value") -> str:
    """Deterministic JSON text: sorted keys, no whitespace, ASCII only."""
    return json.dumps(
        to_jsonable(value, where=where), sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )


def run_id_for(model: str, benchmark: str, dataset: str, config: Mapping) -> str:
    """The run id of (model, benchmark, dataset, config): a short hex hash of their canonical JSON.

    Examples
    --------
    >>> run_id_for("torchvision:resnet18", "imagenet-c", "/data/imagenet-c", {"batch_size": 64})
    'db308f17b50c'
    """
    for name, text in (("model", model), ("benchmark", benchmark), ("dataset", dataset)):
        if not isinstance(text, str) or not text:
            raise InputError(f"{name} must be a non-empty string naming it, got {text!r}.")
    if not isinstance(config, Mapping):
        raise InputError(f"config must be a dict of settings, got {type(config).__name__}.")
    payload = canonical_json(
        {"model": model, "benchmark": benchmark, "dataset": dataset, "config": config},
        where="config",
    )
    return hashlib.sha256(payload.encode("ascii")).hexdigest()[:RUN_ID_LENGTH]


def is_full_id(run: Any) -> bool:
    """Whether ``run`` is spelled as a whole run id (12 lower-case hex digits)."""
    return (
        isinstance(run, str)
        and len(run) == RUN_ID_LENGTH
        and all(c in "0123456789abcdef" for c in run)
    )


def resolve_run(conn: Connection, run: str, where: str) -> str:
    """The id of the run named ``run`` in the catalog ``where`` (for messages): that id, or the
    id of the only run that starts with it.

    Raises
    ------
    InputError
        When ``run`` is not a non-empty string.
    RunNotFoundError
        When no run, or more than one, matches.
    """
    if not isinstance(run, str) or not run:
        raise InputError(f"a run is named by its id or an id prefix (a string), got {run!r}.")
    matches = (
        conn.execute(
            select(runs.c.id)
            .where(runs.c.id.startswith(run, autoescape=True))
            .order_by(runs.c.id)
            .limit(6)
        )
        .scalars()
        .all()
    )
    if run in matches:
        return run
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise run_not_found(run, where)
    raise RunNotFoundError(
        f"run prefix {run!r} matches several runs ({', '.join(matches[:5])}{' ...' if len(matches) > 5 else ''}): "
        "give more characters of the id."
    )


def run_not_found(run_id: str, where: str) -> RunNotFoundError:
    """The error for a run ``run_id`` that the catalog ``where`` does not hold."""
    return RunNotFoundError(
        f"no run {run_id!r} in the store {where}: list the runs with `robustlab runs` "
        "(or store.list_runs()) and check --store."
    )
