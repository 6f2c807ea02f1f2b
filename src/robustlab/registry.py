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
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from .errors import InputError, unknown_name

T = TypeVar("T")

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

    def load_plugins(self) -> None:
        """Import the plugin modules and entry points (once; a failed import is raised)."""
        if self._loaded:
            return
        self._loaded = True
        try:
            for module in (*self._plugins, *BUILTIN_PLUGINS.get(self._entry_points or "", ())):
                importlib.import_module(module)
            for name, module in BUILTIN_LAZY.get(self._entry_points or "", {}).items():
                self.add_lazy(name, module)
            if self._entry_points:
                from importlib.metadata import entry_points

                for ep in entry_points(group=self._entry_points):
                    ep.load()
        except BaseException:
            self._loaded = False
            raise

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise InputError(f"{self.kind} {name!r} is registered twice; pick another name.")
        self._items[name] = item
        self._lazy.pop(name, None)
        return item

    def remove(self, name: str) -> T:
        """Unregister ``name`` and return its item (e.g. a test's throwaway plugin)."""
        self.load_plugins()
        if name in self._lazy and name not in self._items:
            importlib.import_module(self._lazy[name])
        self._lazy.pop(name, None)
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
            raise unknown_name(self.kind, name, self.names()) from None

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
