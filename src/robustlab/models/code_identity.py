"""How the code of a model is named in its identity: installed packages by version, local
files by the SHA-256 of their source (and of the local modules they import).

Used by :mod:`robustlab.models.identity` (every module class of a model) and by the
``python:`` source (the factory's own file).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import platform
import sys
import sysconfig
from pathlib import Path
from typing import Any

from .. import __version__


def class_identity(cls: type) -> str:
    """``module.QualName@<code identity of its module>``."""
    module = getattr(cls, "__module__", "?") or "?"
    return f"{module}.{getattr(cls, '__qualname__', cls.__name__)}@{code_identity(module)}"


def code_identity(module_name: str) -> str:
    """How the code of module ``module_name`` is named in a model's identity.

    Installed packages (in site-packages, the standard library, and robustlab itself) by their
    version: ``torch==2.5.1``, ``python==3.11.9``. Any other module (a user's ``python:``
    file, a local module it imports) by the SHA-256 of its source and the sources of the
    local modules it imports, transitively: ``source:<hex>``.
    """
    top = module_name.split(".")[0]
    module = sys.modules.get(module_name)
    if top == "robustlab":
        return f"robustlab=={__version__}"
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return f"python=={platform.python_version()}"
    file = getattr(module, "__file__", None)
    if file is None:
        return f"{top}=={_dist_version(top) or 'unknown'}"
    if _is_installed(Path(file)):
        version = _dist_version(top)
        if version is not None:
            return f"{top}=={version}"
    files = local_sources(module_name)
    h = hashlib.sha256()
    for path in sorted(files):
        update_tagged(h, "file", Path(path).name.encode())
        update_tagged(h, "source", files[path])
    return f"source:{h.hexdigest()}"


def local_sources(module_name: str) -> dict[str, bytes]:
    """``{file: source bytes}`` of a local (not installed) module and of every local module it
    imports, followed through their own imports (only modules already imported are followed:
    nothing is executed)."""
    found: dict[str, bytes] = {}
    pending = [module_name]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        module = sys.modules.get(name)
        file, package = getattr(module, "__file__", None), getattr(module, "__package__", None)
        if module is None:  # imported later (inside a function, e.g. forward()): found without running it
            file, package = _unimported_source(name)
        if not file or _is_library(name, Path(file)):
            continue
        path = Path(file)
        if path.suffix == ".pyc":
            continue
        try:
            source = path.read_bytes()
        except OSError:
            continue
        found[str(path)] = source
        pending.extend(_imported_names(source, package or ""))
    return found


def _unimported_source(name: str) -> tuple[str | None, str | None]:
    """``(file, package)`` of a module that is not imported yet, looked up without running any of
    its code (only a top-level name, or one whose parent package is imported); (None, None) when
    it cannot be found so."""
    import importlib.util

    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        return None, None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None, None
    if spec is None or not spec.has_location or not spec.origin:
        return None, None
    return spec.origin, spec.parent


def _imported_names(source: bytes, package: str) -> list[str]:
    """Names of the modules an import statement of ``source`` (of ``package``) names: those
    imported already, and local ones not imported yet (an import inside a function)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                names += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: max(0, len(package.split(".")) - node.level + 1)] if package else []
                base = ".".join([*anchor, base] if base else anchor)
            if base:
                names.append(base)
            names += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    return [n for n in names if n in sys.modules or _unimported_source(n)[0] is not None]


def _is_library(name: str, path: Path) -> bool:
    top = name.split(".")[0]
    return top == "robustlab" or top in sys.stdlib_module_names or _is_installed(path)


#: Folders whose files describe the machine, not a model (``/proc/cpuinfo`` read by a library).
_SYSTEM_FOLDERS = ("/proc/", "/sys/", "/dev/")


def is_local_code(module_name: str, filename: str, *, data: bool = False) -> bool:
    """Whether ``filename`` (of module ``module_name``) is the user's own: not robustlab, not the
    standard library, not an installed package, not a frozen or generated module. With ``data``,
    whether a file read by a build is the user's data (neither a library's file nor a system file
    under /proc, /sys or /dev)."""
    if not filename or filename.startswith("<") and not filename.startswith(("<ipython-input", "<stdin>")):
        return False
    if data:
        if filename.startswith(_SYSTEM_FOLDERS):
            return False
        path = Path(filename)
        return not (_is_installed(path) or _within(path, _robustlab_root()))
    if module_name and _is_library(module_name, Path(filename)):
        return False
    return not filename.startswith("<frozen") and not _within(Path(filename), _robustlab_root())


@functools.lru_cache(maxsize=1)
def _robustlab_root() -> Path:
    return Path(__file__).resolve().parents[1]


def _within(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def _install_roots() -> tuple[Path, ...]:
    keys = ("purelib", "platlib", "stdlib", "platstdlib")
    roots = {Path(p).resolve() for k in keys if (p := sysconfig.get_paths().get(k))}
    for entry in sys.path:
        if entry and Path(entry).name in ("site-packages", "dist-packages"):
            roots.add(Path(entry).resolve())
    return tuple(roots)


def _is_installed(path: Path) -> bool:
    try:
        resolved = path.resolve()
    except OSError:
        return False
    return any(resolved.is_relative_to(root) for root in _install_roots())


@functools.lru_cache(maxsize=None)
def _dist_version(top: str) -> str | None:
    names = importlib.metadata.packages_distributions().get(top) or [top]
    for dist in names:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def update_tagged(h: Any, tag: str, data: bytes | memoryview) -> None:
    """Feed ``tag`` and ``data`` to the hash ``h``, length-prefixed, so adjacent fields can never
    run into each other (the model identity's hashes)."""
    h.update(tag.encode())
    h.update(len(data).to_bytes(8, "little"))
    h.update(data)
