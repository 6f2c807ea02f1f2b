"""Packages whose public names load on first use (PEP 562), so importing one light name never
pays for a heavy sibling (torch, numba, scipy.stats).

A package lists ``{name: submodule}`` and gets ``__getattr__``/``__dir__``::

    __getattr__, __dir__ = lazy_exports(__name__, {"load_model": ".sources", ...})

``from robustlab.models import load_model`` then imports ``robustlab.models.sources`` at that
moment; ``import robustlab.models.preprocessing`` imports nothing else of the package.
"""

from __future__ import annotations

import importlib
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

    return __getattr__, __dir__


def globals_of(package: str) -> dict[str, Any]:
    import sys

    return vars(sys.modules[package])
