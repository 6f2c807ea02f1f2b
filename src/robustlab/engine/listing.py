"""Listing stored runs (``robustlab runs``), and telling runs of one model and benchmark apart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: Config keys that tell a run apart even when it is the only one of its model and benchmark: what
#: an adversarial run attacks with, a tag, a limit.
ALWAYS_SHOWN = ("attack", "norm", "tag", "limit")
#: Config keys never listed as a difference: the data (a column of its own) and what is derived
#: from it or recorded beside a setting.
NOT_SETTINGS = frozenset({"data", "limit_stats", "num_classes", "settings", "results"})
#: The longest value text in a listing.
MAX_VALUE = 32


def value_text(value: Any) -> str:
    """A config value in a few characters: ``fog,snow``, ``15 items``, ``0,0.0125,0.025``."""
    if isinstance(value, (list, tuple)):
        text = ",".join(value_text(v) for v in value) if len(value) <= 4 else f"{len(value)} items"
    elif isinstance(value, Mapping):
        text = f"{len(value)} entries"
    elif isinstance(value, float):
        text = f"{value:g}"
    else:
        text = str(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def differing_settings(records: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """``{run id: {option: value}}``: per run, the config options whose values differ between the
    runs of the same benchmark, model and dataset, and the :data:`ALWAYS_SHOWN` ones it has."""
    records = list(records)
    groups: dict[tuple, list[Any]] = {}
    for r in records:
        groups.setdefault((r.benchmark, r.model, r.dataset), []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for members in groups.values():
        configs = [r.config if isinstance(r.config, Mapping) else {} for r in members]
        keys = sorted({k for c in configs for k in c} - NOT_SETTINGS)
        differ = [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1] if len(members) > 1 else []
        for r, config in zip(members, configs):
            shown = {k: config.get(k) for k in ALWAYS_SHOWN if config.get(k) is not None}
            shown.update({k: config.get(k) for k in differ})
            out[getattr(r, "id", None) or r.run_id] = shown
    return out


def settings_text(settings: Mapping[str, Any]) -> str:
    """``attack=pgd limit=50``: options as a listing shows them (``-`` when there are none)."""
    return " ".join(f"{k}={value_text(v)}" for k, v in settings.items()) or "-"


def runs_as_dicts(records: Iterable[Any]) -> list[dict[str, Any]]:
    """JSON-able rows of :class:`robustlab.store.RunRecord` objects (``settings``: see
    :func:`differing_settings`)."""
    records = list(records)
    settings = differing_settings(records)
    return [{"run_id": r.id, "status": r.status, "benchmark": r.benchmark, "model": r.model, "dataset": r.dataset,
             "settings": settings.get(r.id, {}),
             "units_done": r.n_units_done, "created_at": r.created_at.isoformat() if r.created_at else None,
             "finished_at": r.finished_at.isoformat() if r.finished_at else None} for r in records]


def format_runs(records: Iterable[Any]) -> str:
    """A plain-text table of runs, newest first, with the settings that tell runs of one model and
    benchmark apart (the attack of an adversarial run, a limit, a tag, and any option that differs)."""
    rows = sorted(records, key=lambda r: r.created_at, reverse=True)
    if not rows:
        return "no runs stored yet: run `robustlab evaluate ...` first."
    settings = differing_settings(rows)
    lines = [f"{'run':<13}{'status':<12}{'benchmark':<13}{'units':>6}  model / dataset / settings"]
    for r in rows:
        lines.append(f"{r.id:<13}{r.status:<12}{r.benchmark:<13}{r.n_units_done:>6}  {r.model}  {r.dataset}  "
                     f"{settings_text(settings.get(r.id, {}))}")
    return "\n".join(lines)


def ambiguous_runs_text(records: Iterable[Any], limit: int = 10) -> str:
    """``abc123 (limit=50), def456 (limit=None)``: candidate runs with the options that differ."""
    records = list(records)
    settings = differing_settings(records)
    return ", ".join(f"{r.id[:12]} ({r.benchmark}, {r.model}; {settings_text(settings.get(r.id, {}))})"
                     for r in records[:limit])


def model_names(spec: str) -> set[str]:
    """The catalog names a model given on the command line may be stored under: as given and in
    its canonical spelling (``python:m.py:build`` is stored as ``python:/abs/m.py:build``)."""
    from ..errors import RobustlabError
    from ..models.registry import canonical_spec

    names = {spec}
    try:
        names.add(canonical_spec(spec))
    except RobustlabError:  # not a spec robustlab can spell (a plugin not installed, an object's name)
        pass
    return names


def runs_of_model(records: Iterable[Any], spec: str | None) -> list[Any]:
    """The runs of ``records`` whose model is ``spec`` (in any spelling, see :func:`model_names`,
    with or without model options such as ``[num_classes=10]``); all of them when ``spec`` is None."""
    if spec is None:
        return list(records)
    names = model_names(spec)
    return [r for r in records if r.model in names or any(r.model.startswith(n + " [") for n in names)]
