"""Packages whose public names load on first use (PEP 562), so importing one light name never
pays for a heavy sibling (torch, numba, scipy.stats).

A package lists ``{name: submodule}`` and gets ``__getattr__``/``__dir__``::

    __getattr__, __dir__ = lazy_exports(__name__, {"load_model": ".sources", ...})

``from robustlab.models import load_model`` then imports ``robustlab.models.sources`` at that
moment; ``import robustlab.models.preprocessing`` imports nothing else of the package.

A name may be both an export and the submodule it comes from (``robustlab.metrics`` exports the
function ``effective_robustness`` of its submodule ``effective_robustness``). Importing a submodule
binds it on its package under its own name, which would hide the export. Such a package's module
object keeps the export instead (:class:`ExportsFirst`), whatever the import order; the submodule
stays importable by its dotted name (``from robustlab.metrics.effective_robustness import ...``).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose ``exports`` map names to submodules
    (relative, like ``".sources"``)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        globals_of(package)[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals_of(package)) | set(exports))

    shadowed = {name for name, module in exports.items() if module.lstrip(".") == name}
    if shadowed:
        module = sys.modules[package]
        module.__class__ = ExportsFirst
        module.__dict__["_lazy_shadowed"] = frozenset(shadowed)
    return __getattr__, __dir__


class ExportsFirst(types.ModuleType):
    """A package whose exports named like their own submodule are not replaced by that submodule
    when it is imported (the import system binds ``package.<name>`` to each submodule it loads)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in self.__dict__.get("_lazy_shadowed", ()) \
                and value.__name__ == f"{self.__name__}.{name}":
            self.__dict__.pop(name, None)  # the export loads on first use, from the submodule
            return
        super().__setattr__(name, value)


def globals_of(package: str) -> dict[str, Any]:
    import sys

    return vars(sys.modules[package])
