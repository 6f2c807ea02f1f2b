"""A run's config as a value: a frozen dataclass per benchmark family, stored as JSON.

A benchmark turns the options its schema resolved (:mod:`robustlab.engine.options`) into its config:
everything that decides the run's numbers (data, settings, seeds, class map...). The engine passes
that dataclass to every hook, so a mistyped name fails at once (``config.severites`` is an
AttributeError where ``config["severites"]`` was found at run time, if ever). The run id is a hash
of its stored form, :meth:`RunConfig.to_dict`, so that form never changes for the same meaning:

- a field is stored under its own name, as the value it holds (JSON types: lists, dicts, numbers,
  text, None);
- a field declared with :func:`conditional` is stored only in the cases it was before it existed
  (by default when it is not its default: ``keep_input_size`` only when true, ``limit_order`` only
  with a limit), so runs made without it keep their ids.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True, kw_only=True)
... class FolderConfig(RunConfig):
...     limit: int | None = None
...     limit_order: str | None = conditional()
>>> FolderConfig(data="/data").to_dict()
{'data': '/data', 'limit': None}
>>> FolderConfig.from_dict({"data": "/data", "limit": 5, "limit_order": "balanced"}).limit_order
'balanced'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

_STORED_WHEN = "robustlab.stored_when"
C = TypeVar("C", bound="RunConfig")


def conditional(default: Any = None, *, when: Callable[[Any], bool] | None = None) -> Any:
    """A config field stored only in some cases: when ``when(config)`` is true, by default when its
    value is not ``default`` (so a config that does not use it keeps the stored form, and the run
    id, it had before the field existed). Reading it gives ``default`` when it was not stored."""
    return field(default=default, metadata={_STORED_WHEN: (when, default)})


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Base of every benchmark's config: the data, and what the engine adds to any run's identity
    (present only when given, see :func:`robustlab.evaluate`).

    Attributes
    ----------
    data : str
        The dataset (a resolved path, or a set's name).
    model_hash : str, optional
        The model's content hash (:mod:`robustlab.models.identity`), for benchmarks that run a model.
    tag, max_pixels : optional
        ``evaluate(tag=...)``, ``evaluate(max_pixels=...)``.
    precision, channels_last, compile, decode : optional
        The run options that differ from the defaults (:mod:`robustlab.engine.runtime`).
    extra : dict
        Keys of a stored config that this version does not know (written by another version): kept
        so that :meth:`to_dict` gives back what was stored; never set by a benchmark.
    """

    data: str
    model_hash: str | None = conditional()
    tag: str | None = conditional()
    max_pixels: int | None = conditional()
    precision: str | None = conditional()
    channels_last: bool | None = conditional()
    compile: bool | None = conditional()
    decode: str | None = conditional()
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    #: The fields :func:`robustlab.evaluate` sets after ``configure`` (not the benchmark's own).
    ENGINE_FIELDS: ClassVar[tuple[str, ...]] = ("model_hash", "tag", "max_pixels", "precision", "channels_last",
                                                "compile", "decode")

    def to_dict(self) -> dict[str, Any]:
        """The stored form: every field under its name, conditional ones only when they apply."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            rule = f.metadata.get(_STORED_WHEN)
            if rule is not None:
                when, default = rule
                if not (when(self) if when is not None else value != default):
                    continue
            out[f.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls: type[C], stored: Mapping[str, Any] | RunConfig) -> C:
        """The config of a stored form (keys this class does not know are kept in :attr:`extra`).

        Raises
        ------
        TypeError
            When a field without a default is missing (a config another version wrote).
        """
        if isinstance(stored, cls):
            return stored
        if isinstance(stored, RunConfig):
            stored = stored.to_dict()
        names = {f.name for f in dataclasses.fields(cls) if f.init and f.name != "extra"}
        known = {k: v for k, v in stored.items() if k in names}
        return cls(**known, extra={k: v for k, v in stored.items() if k not in names})

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of its fields (what :meth:`replace` and the constructor take)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "extra")

    def replace(self: C, **changes: Any) -> C:
        """A copy with ``changes`` (a field name that does not exist is a TypeError)."""
        return dataclasses.replace(self, **changes)

    def __getitem__(self, key: str) -> Any:
        raise TypeError(f"a run config is a {type(self).__name__}, not a dict: read config.{key} "
                        "(config.to_dict() is its stored form).")


@dataclass(frozen=True, kw_only=True)
class LimitedConfig(RunConfig):
    """A config with the ``--limit`` options (:func:`robustlab.engine.options.limit_config`): ``limit``
    (None: every sample), and with a limit the rule it used (``limit_order``) and what it took
    (``limit_stats``, when the reader says)."""

    limit: int | None = None
    limit_order: str | None = conditional()
    limit_stats: dict[str, Any] | None = conditional()

    @property
    def order(self) -> str:
        """The rule the limit used: ``limit_order``, or ``path`` for runs stored before the rule was
        recorded (they took the first N)."""
        return str(self.limit_order or "path")
