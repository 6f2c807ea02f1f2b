"""Option schemas: what a plugin takes, declared once where the plugin is.

A benchmark or an executor lists its options as :class:`Option` records (name, type, default,
help, validation). The engine passes a plugin only the options it declares, with the defaults
filled in (:meth:`OptionSchema.resolve`); an option it does not declare is refused with a
did-you-mean from the schema; the command line's options and their ``--help`` are generated
from the same records (``robustlab evaluate -b imagenet-c --help``).

>>> schema = OptionSchema("benchmark 'demo'", [Option("limit", "int", help="first N samples"),
...                                            Option("seed", "int", 0, help="base seed")])
>>> schema.resolve({"limit": 5})
{'limit': 5, 'seed': 0}
>>> schema.resolve({"limmit": 5})
Traceback (most recent call last):
...
robustlab.errors.InputError: benchmark 'demo' does not take the option limmit. Did you mean 'limit'? It takes: limit, seed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import InputError, did_you_mean, unknown_name

#: The value types an option may declare: how a command-line string becomes a value.
TYPES = ("str", "int", "float", "bool", "path", "value")

_TRUE = ("true", "yes", "1", "on")
_FALSE = ("false", "no", "0", "off")


@dataclass(frozen=True)
class Option:
    """One option of a plugin.

    Attributes
    ----------
    name : str
        The keyword (``clean_data``); the command line spells it ``--clean-data``.
    type : str
        How text from the command line is read (:data:`TYPES`): ``str``, ``int``, ``float``,
        ``bool`` (a flag), ``path`` (text, resolved by the plugin), or ``value`` (JSON when it
        parses, else the text: lists, numbers or names).
    default : object
        The value the plugin gets when the option is not given (None: "not given").
    help : str
        One line for ``--help`` and the documentation.
    choices : tuple
        The allowed values (empty: any); checked before ``check``.
    check : callable, optional
        ``check(value) -> value``: validates a given value (raising InputError with the fix) and
        may normalise it. Not applied to the default.
    flags : tuple of str
        Extra command-line spellings, e.g. ``("-c",)``; ``cli`` replaces ``--name`` itself.
    cli : str, optional
        The long command-line spelling when it is not ``--name`` (``--ray-address``).
    """

    name: str
    type: str = "str"
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] = ()
    check: Callable[[Any], Any] | None = None
    flags: tuple[str, ...] = ()
    cli: str | None = None

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"option {self.name!r}: type must be one of {TYPES}; got {self.type!r}")

    @property
    def long_flag(self) -> str:
        """``--clean-data`` for ``clean_data`` (or :attr:`cli`)."""
        return self.cli or "--" + self.name.replace("_", "-")

    def parse_text(self, text: str) -> Any:
        """The value of a command-line string (``-O name=text`` or ``--name text``)."""
        if self.type == "int":
            try:
                return int(text)
            except ValueError:
                raise InputError(f"{self.long_flag} must be an integer; got {text!r}.") from None
        if self.type == "float":
            try:
                return float(text)
            except ValueError:
                raise InputError(f"{self.long_flag} must be a number; got {text!r}.") from None
        if self.type == "bool":
            low = text.strip().lower()
            if low in _TRUE or low in _FALSE:
                return low in _TRUE
            raise InputError(f"{self.long_flag} must be true or false; got {text!r}.")
        if self.type == "value":
            try:
                return json.loads(text)
            except ValueError:
                return text
        return text

    def validate(self, value: Any) -> Any:
        """A given value, checked against :attr:`choices` and :attr:`check`."""
        if self.choices and value not in self.choices:
            raise unknown_name(self.name.replace("_", " "), value, [str(c) for c in self.choices])
        return self.check(value) if self.check is not None else value

    def describe(self) -> str:
        """``help`` with the choices and the default, for ``--help`` and the documentation."""
        parts = [self.help.rstrip(".")] if self.help else []
        if self.choices:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.default is not None and self.type != "bool":
            parts.append(f"default {self.default}")
        return "; ".join(parts) + ("." if parts else "")


class OptionSchema:
    """The options a plugin takes (``owner`` names it in messages: ``benchmark 'imagenet-c'``).

    ``hints`` maps an option the plugin does *not* take to the sentence that says why and what to
    give instead (e.g. adversarial-auc's strengths instead of corruptions).
    """

    def __init__(self, owner: str, options: Iterable[Option] = (), hints: Mapping[str, str] | None = None) -> None:
        self.owner = owner
        self.options: dict[str, Option] = {}
        for option in options:
            if option.name in self.options:
                raise ValueError(f"{owner}: option {option.name!r} is declared twice")
            self.options[option.name] = option
        self.hints = dict(hints or {})

    def __iter__(self) -> Iterator[Option]:
        return iter(self.options.values())

    def __contains__(self, name: object) -> bool:
        return name in self.options

    def __len__(self) -> int:
        return len(self.options)

    def names(self) -> list[str]:
        return list(self.options)

    def refusal(self, names: Iterable[str], also: Iterable[str] = ()) -> InputError:
        """The error for options this plugin does not take: a hint where the plugin gives one,
        else a did-you-mean over its options (and ``also``: other names the caller takes)."""
        names = sorted(names)
        for name in names:
            if name in self.hints:
                return InputError(self.hints[name])
        known = [*self.options, *also]
        suggestion = did_you_mean(names[0], known) if len(names) == 1 else ""
        takes = f" It takes: {', '.join(self.options)}." if self.options else " It takes no options."
        return InputError(f"{self.owner} does not take the option{'s' if len(names) > 1 else ''} "
                          f"{', '.join(names)}.{suggestion}{takes}")

    def resolve(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every declared option: the given value (validated) or the default. ``None`` means not
        given. Raises :meth:`refusal` for undeclared options."""
        unknown = [k for k, v in given.items() if v is not None and k not in self.options]
        if unknown:
            raise self.refusal(unknown)
        out = {name: option.default for name, option in self.options.items()}
        for name, value in given.items():
            if value is not None:
                out[name] = self.options[name].validate(value)
        return out

    def table(self) -> str:
        """The options as a Markdown table (option, type, default, help)."""
        lines = ["| option | type | default | |", "|---|---|---|---|"]
        for o in self:
            lines.append(f"| `{o.long_flag}` | {o.type} | {'–' if o.default is None else f'`{o.default}`'} | "
                         f"{o.help} |")
        return "\n".join(lines)
