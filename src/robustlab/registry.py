"""Registries by name (like timm's ``create_model`` / ``list_models``).

Corruptions, perturbations, attacks, benchmarks, executors and model sources are looked up by
stable names, listed by the CLI and stored with results, so every number is traceable to its
setting. Each is registered where it is defined, with everything known about it (its
declaration); lists, command-line options, documentation tables and reports iterate the
registries.

A registry has an entry-point group (``[project.entry-points."robustlab.benchmarks"]`` in a
third-party package's pyproject): the modules listed there are imported the first time a name is
looked up or listed, and register their items on import. robustlab's own plugin modules are
listed the same way, by the package root (:func:`builtin_plugins`, called from
``robustlab/__init__.py``), so the layer that owns a registry never names the layers that fill
it. A registry may also name plugin modules of its own package (``plugins=``).

An installed plugin can neither break robustlab nor change what a built-in name means:

- a plugin whose module fails to import (a syntax error, a missing dependency, a name it may
  not register) is skipped with a :class:`PluginWarning` naming it (entry point, module and
  distribution) and the reason; every other command and plugin works, and looking up a name
  it would have registered says why it is missing;
- a plugin may not register a built-in name (a benchmark ``corrupted``, a corruption ``fog``):
  that is refused, naming the plugin and the name, and the plugin is skipped. So a stored
  ``corrupted`` run is always robustlab's own benchmark.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from .errors import InputError, RobustlabWarning, unknown_name

T = TypeVar("T")

#: The entry point being loaded now (``"name = module (distribution)"``), None outside a load:
#: names registered meanwhile belong to that plugin, not to robustlab.
_LOADING: list[str] = []


class PluginWarning(RobustlabWarning):
    """An installed plugin was skipped (it failed to import, or registered a name it may not)."""


def loading_plugin() -> str | None:
    """The plugin (entry point) being imported now, None when none is."""
    return _LOADING[-1] if _LOADING else None


def describe_entry_point(ep: Any) -> str:
    """``"plugin 'example' (module robustlab_plugin_example.benchmark, from robustlab-plugin-example)"``."""
    dist = getattr(getattr(ep, "dist", None), "name", None)
    return f"plugin {ep.name!r} (module {ep.value}{f', from {dist}' if dist else ''})"

#: Entry-point group -> robustlab's own modules that register into that group's registry, as an
#: installed plugin's entry points do (declared by the package root, see :func:`builtin_plugins`).
BUILTIN_PLUGINS: dict[str, tuple[str, ...]] = {}


#: Entry-point group -> ``{name: module}`` of robustlab's own plugin files that register one item each
#: and are imported only when that item is looked up (declared by the package root, see
#: :func:`builtin_plugins`), so listing names never imports them.
BUILTIN_LAZY: dict[str, dict[str, str]] = {}


def builtin_plugins(group: str, *modules: str, lazy: dict[str, str] | None = None) -> None:
    """Declare robustlab's own plugin ``modules`` for the registry of entry-point ``group``
    (imported with the group's entry points, the first time the registry is used), and ``lazy``
    plugin files (``{item name: module}``), each imported when its item is first looked up."""
    BUILTIN_PLUGINS[group] = (*BUILTIN_PLUGINS.get(group, ()), *modules)
    BUILTIN_LAZY.setdefault(group, {}).update(lazy or {})


class Registry(Generic[T]):
    """A name -> object mapping with did-you-mean errors.

    Parameters
    ----------
    kind : str
        What the names name (``"benchmark"``), for messages.
    plugins : sequence of str
        Modules imported (once, on first lookup or listing) to fill the registry.
    entry_points : str, optional
        An entry-point group whose entries are loaded the same way (each entry a module or an
        object whose import registers its items).

    Examples
    --------
    >>> r = Registry("corruption"); r.add("fog", object())  # doctest: +ELLIPSIS
    <object ...>
    """

    def __init__(self, kind: str, *, plugins: Sequence[str] = (), entry_points: str | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._plugins = tuple(plugins)
        self._entry_points = entry_points
        self._loaded = not (self._plugins or entry_points)
        self._builtins_loaded = not (self._plugins or entry_points)
        #: name -> the plugin that registered it
        self._owner: dict[str, str] = {}
        #: names registered before any installed plugin was loaded: robustlab's own
        self._builtin: set[str] = set()
        self._plugins_started = False
        #: plugins skipped while loading: (description, reason)
        self.skipped: list[tuple[str, str]] = []

    def _load_builtins(self) -> None:
        """Import robustlab's own plugin modules for this registry (once; a failure is a bug: raised)."""
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        try:
            for module in (*self._plugins, *BUILTIN_PLUGINS.get(self._entry_points or "", ())):
                importlib.import_module(module)
            for name, module in BUILTIN_LAZY.get(self._entry_points or "", {}).items():
                self.add_lazy(name, module)
        except BaseException:
            self._builtins_loaded = False
            raise

    def load_plugins(self) -> None:
        """Import robustlab's plugin modules, then the installed entry points (once). An entry
        point that fails to import is skipped with a :class:`PluginWarning` naming it, and what
        it registered is removed again."""
        if self._loaded:
            return
        self._loaded = True
        try:
            self._load_builtins()
        except BaseException:
            self._loaded = False
            raise
        self._plugins_started = True
        if self._entry_points:
            from importlib.metadata import entry_points

            for ep in entry_points(group=self._entry_points):
                self._load_entry_point(ep)

    def _load_entry_point(self, ep: Any) -> None:
        described = describe_entry_point(ep)
        before = set(self._items)
        _LOADING.append(described)
        try:
            ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a broken plugin never takes robustlab down
            for name in set(self._items) - before:
                if self._owner.get(name) == described:
                    self._items.pop(name, None)
            reason = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            self.skipped.append((described, reason))
            warnings.warn(f"{described} was skipped: it failed to load ({reason}). Fix or uninstall it; robustlab "
                          "works without it.", PluginWarning, stacklevel=2)
        finally:
            _LOADING.pop()

    def check_free(self, name: str, item: Any = None) -> None:
        """Raise InputError when ``name`` may not be registered (now): it is taken, by robustlab
        (a plugin may not replace a built-in name) or by another plugin."""
        plugin = loading_plugin()
        if plugin is not None:  # what robustlab names must be known before a plugin may add names
            self._load_builtins()
        lazy = self._lazy.get(name)
        if name not in self._items and (lazy is None or getattr(item, "__module__", lazy) == lazy):
            return
        by = f" ({plugin})" if plugin else ""
        if plugin is not None and (lazy is not None or name in self._builtin):
            raise InputError(f"{self.kind} {name!r} is a built-in name of robustlab; a plugin may not replace it{by}: "
                             "register it under another name.")
        first = f"by {self._owner[name]}" if name in self._owner else "before"
        raise InputError(f"{self.kind} {name!r} is registered twice ({first}{f' and by {plugin}' if plugin else ''}); "
                         "pick another name.")

    def add(self, name: str, item: T) -> T:
        self.check_free(name, item)
        self._items[name] = item
        plugin = loading_plugin()
        if self._lazy.pop(name, None) is not None or (plugin is None and not self._plugins_started):
            self._builtin.add(name)
        elif plugin is not None:
            self._owner[name] = plugin
        return item

    def remove(self, name: str) -> T:
        """Unregister ``name`` and return its item (e.g. a test's throwaway plugin)."""
        self.load_plugins()
        if name in self._lazy and name not in self._items:
            importlib.import_module(self._lazy[name])
        self._lazy.pop(name, None)
        self._builtin.discard(name)
        self._owner.pop(name, None)
        try:
            return self._items.pop(name)
        except KeyError:
            raise unknown_name(self.kind, name, self.names()) from None

    def add_lazy(self, name: str, module: str) -> None:
        """Name an item whose module registers it when first looked up (``module`` is imported
        then), so listing names never imports what they name."""
        if name not in self._items:
            self._lazy[name] = module

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def deco(item: T) -> T:
            return self.add(name, item)

        return deco

    def get(self, name: str) -> T:
        self.load_plugins()
        if name not in self._items and name in self._lazy:
            importlib.import_module(self._lazy[name])
        try:
            return self._items[name]
        except KeyError:
            error = unknown_name(self.kind, name, self.names())
        if self.skipped:  # the name may be a skipped plugin's
            error = InputError(f"{error} Skipped plugins: " + "; ".join(f"{d}: {r}" for d, r in self.skipped) + ".")
        raise error

    def registered_so_far(self) -> list[T]:
        """The items registered until now, without importing plugins (for checks made while
        registering: a lookup then would import plugins in the middle of a registration)."""
        return list(self._items.values())

    def names(self) -> list[str]:
        self.load_plugins()
        return list(self._items) + [n for n in self._lazy if n not in self._items]

    def __contains__(self, name: object) -> bool:
        self.load_plugins()
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
