"""Command-line options generated from plugins' option schemas (``robustlab evaluate``).

``robustlab evaluate`` takes the engine's own options; the options of the benchmark named by
``-b`` and of the executor named by ``-e`` are added when the command line is parsed, from their
schemas (:mod:`robustlab.engine.options`), each in its own ``--help`` panel. So
``robustlab evaluate -b imagenet-c --help`` lists imagenet-c's options and nothing else's, and a
plugin's benchmark or executor gets its command-line options with no edit to robustlab. An
option the command does not know is passed on by name, so the schema refuses it with a
did-you-mean (``benchmark 'perturbed' does not take the option corruptions. Did you mean
'perturbations'?``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Optional

import typer
from typer.core import TyperCommand

from .errors import InputError

if TYPE_CHECKING:  # the engine loads when a command needs it, not for `robustlab --help`
    from .engine.options import Option, OptionSchema

#: Where the values of the generated options are collected during parsing.
META_KEY = "robustlab.plugin_options"

_ANNOTATIONS = {"int": Optional[int], "float": Optional[float], "bool": Optional[bool]}


def peek(args: Sequence[str], names: Iterable[str]) -> str | None:
    """The value given to the option ``names`` (``-b x``, ``--benchmark x``, ``--benchmark=x``) in
    raw command-line ``args``, without parsing them (None: not given)."""
    names = tuple(names)
    for i, arg in enumerate(args):
        if arg in names and i + 1 < len(args):
            return args[i + 1]
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _store(option: Option):
    """The click callback that records a generated option's value in the context's meta."""

    def callback(ctx, param, value):
        if value is not None:
            if option.type == "value" and isinstance(value, str):
                value = option.parse_text(value)
            ctx.meta.setdefault(META_KEY, {})[option.name] = value
        return value

    return callback


def schema_parameters(schema: OptionSchema, panel: str | None, taken: set[str]) -> list:
    """Click parameters for the options of ``schema`` (help panel ``panel``; None: hidden), built by
    typer from a generated signature; options whose name or flags are in ``taken`` (the command's
    own) are left out."""
    params = []
    for option in schema:
        flags = (option.long_flag, *option.flags)
        if option.name in taken or taken.intersection(flags):
            continue
        if option.type == "bool":  # a flag with its negation: --clean / --no-clean
            negative = "--no-" + option.long_flag[2:]
            if negative in taken:
                continue
            flags = (f"{option.long_flag}/{negative}", *option.flags)
        params.append(inspect.Parameter(
            option.name, inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(None, *flags, help=option.describe(), rich_help_panel=panel, show_default=False,
                                 hidden=panel is None),
            annotation=_ANNOTATIONS.get(option.type, Optional[str])))
    if not params:
        return []

    def generated(**_: Any) -> None:  # pragma: no cover - never called: only its signature is read
        return None

    generated.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    scratch = typer.Typer(add_completion=False)
    scratch.command()(generated)
    built = typer.main.get_command(scratch).params
    for param in built:
        param.expose_value = False
        param.callback = _store(schema.options[param.name])
    return built


def extra_options(args: Sequence[str]) -> dict[str, Any]:
    """``--name value`` / ``--name=value`` / ``--flag`` left over by the parser, as ``{name: text or
    True}`` (the schema then refuses them with a did-you-mean)."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-") or arg == "-":
            raise InputError(f"unexpected argument {arg!r}: options are given as --name value (see --help).")
        name, sep, value = arg.lstrip("-").partition("=")
        if arg == "-o":
            raise InputError("-o is not an option of evaluate (in robustlab's other commands it is --out, an output "
                             "file): give a benchmark or executor option as -O KEY=VALUE (--option KEY=VALUE), e.g. "
                             "-O shard_size=1000, or as its own flag (robustlab evaluate -b NAME --help).")
        if not sep:
            if i + 1 < len(args) and not args[i + 1].startswith("-"):
                value, i = args[i + 1], i + 1
            else:
                value = True
        out[name.replace("-", "_")] = value
        i += 1
    return out


class PluginOptionsCommand(TyperCommand):
    """A command that adds the options of the benchmark (``-b``) and executor (``-e``) it is given.

    Subclasses set :meth:`plugin_schemas`; the values of the added options are in
    ``ctx.meta[META_KEY]`` when the command's callback runs, and unknown options in ``ctx.args``.
    """

    def plugin_schemas(self, args: Sequence[str]) -> list[tuple[OptionSchema, str | None]]:  # pragma: no cover
        """``[(schema, help panel or None for hidden options)]`` to add for these raw ``args``."""
        return []

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        taken = {self_param.name for self_param in self.params}
        taken |= {decl for p in self.params for decl in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}
        for schema, panel in self.plugin_schemas(args):
            added = schema_parameters(schema, panel, taken)
            self.params.extend(added)
            taken |= {p.name for p in added} | {d for p in added for d in p.opts}
        return super().parse_args(ctx, args)


class EvaluateCommand(PluginOptionsCommand):
    """``robustlab evaluate``: adds the options of ``-b NAME`` and ``-e NAME`` (default ``local``)."""

    def plugin_schemas(self, args: Sequence[str]) -> list[tuple[OptionSchema, str | None]]:
        """The benchmark's and the executor's options, and (hidden) the well-known options of other
        families, so that ``-c fog`` reaches a benchmark without corruptions and is refused with its reason."""
        from .engine.options import SHARED_OPTIONS, OptionSchema, evaluate_schemas

        benchmark, executor = peek(args, ("-b", "--benchmark")), peek(args, ("-e", "--executor")) or "local"
        found = [(schema, f"Options of the {name} {kind}") for schema, name, kind in evaluate_schemas(benchmark, executor)]
        return [*found, (OptionSchema("shared", SHARED_OPTIONS), None)]





def hide_flag_types() -> None:
    """``--help`` shows no ``<bool>`` after a flag (``--json``, ``--clean/--no-clean``): a flag takes
    no value, and typer's rich help otherwise prints its Python type as if it did."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "robustlab_flags_hidden", False):
        return

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) and not getattr(self, "count", False) else shown(self, ctx)

    display_type_rich.robustlab_flags_hidden = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
