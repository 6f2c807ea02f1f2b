"""Options given as text (``-O KEY=VALUE``, ``--mean 0.485,0.456,0.406``, ``--actors auto``): parsed
into values, typed by the schema that declares them (:mod:`.schema`), and merged. The command line's
typer glue (:mod:`robustlab.cli_options`) calls these; they hold no typer."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import InputError
from ...models.preprocessing import Preprocessing
from .schema import OptionSchema

def parse_key_values(items: Iterable[str] | None) -> dict[str, Any]:
    """``["shard_size=100", "clean=false"]`` -> ``{"shard_size": 100, "clean": False}``.

    Values are read as JSON when they parse (numbers, true/false, lists), else kept as strings.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"option {item!r} must look like KEY=VALUE, e.g. shard_size=1000.")
        try:
            out[key.strip().replace("-", "_")] = json.loads(value)
        except ValueError:
            out[key.strip().replace("-", "_")] = value
    return out


def _floats(text: str | None, name: str) -> tuple[float, float, float] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--{name} must be three comma-separated numbers, e.g. 0.485,0.456,0.406; got {text!r}.") from None
    if len(values) != 3:
        raise InputError(f"--{name} needs 3 values (R, G, B); got {text!r}.")
    return values  # type: ignore[return-value]


def preprocessing_from_args(resize: int | None, crop: int | None, interpolation: str | None,
                            mean: str | None, std: str | None) -> Preprocessing | None:
    """A Preprocessing override from CLI flags, or None when no flag was given."""
    if all(v is None for v in (resize, crop, interpolation, mean, std)):
        return None
    return Preprocessing(resize=resize, crop=crop, interpolation=interpolation or "bilinear",
                         mean=_floats(mean, "mean"), std=_floats(std, "std"))




def parse_actors(text: str | None) -> int | str | None:
    """``--actors``: ``auto``, a positive integer, or None (not given)."""
    if text is None:
        return None
    value = text.strip().lower()
    if value == "auto":
        return "auto"
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise InputError(f"--actors must be a positive integer or auto; got {text!r}.")


def key_values(items: Iterable[str] | None, schemas: Sequence[OptionSchema]) -> dict[str, Any]:
    """``-O KEY=VALUE`` items as values: typed by the schema that declares ``KEY`` (the first of
    ``schemas``), else read as JSON when it parses (the option is then refused by name)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, text = item.partition("=")
        name = key.strip().replace("-", "_")
        declared = next((s.options[name] for s in schemas if name in s), None)
        if not sep or not name or declared is None:
            out.update(parse_key_values([item]))
        else:
            out[name] = declared.parse_text(text)
    return out


def merge_options(*given: dict[str, Any]) -> dict[str, Any]:
    """The options given as flags (``--seed 2``) and as ``-O KEY=VALUE``, merged; one given both
    ways with different values is an InputError naming both (before, ``-O`` silently won)."""
    out: dict[str, Any] = {}
    for source in given:
        for key, value in source.items():
            if key in out and out[key] != value and value is not None and out[key] is not None:
                flag = "--" + key.replace("_", "-")
                raise InputError(f"{key} is given twice with different values ({flag} {out[key]!r} and -O "
                                 f"{key}={value!r}); give it once.")
            out[key] = value if value is not None else out.get(key)
    return out


def evaluate_schemas(benchmark: str | None, executor: str | None) -> list[tuple[OptionSchema, str, str]]:
    """``[(schema, name, "benchmark" or "executor")]`` of the registered benchmark and executor named
    (names not registered are left out: evaluate reports them)."""
    from ...errors import RobustlabError
    from ..benchmark import BENCHMARKS
    from ..executor import EXECUTORS

    found = []
    for registry, name, kind in ((BENCHMARKS, benchmark, "benchmark"), (EXECUTORS, executor, "executor")):
        if name is not None and name in registry:
            try:
                found.append((registry.get(name).schema(), name, kind))
            except RobustlabError:  # a plugin that fails to import: evaluate reports it
                pass
    return found
