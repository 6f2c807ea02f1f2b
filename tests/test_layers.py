"""Data flows forward: the packages of robustlab form layers, and no module of a lower layer imports
or names a higher one, not even as a string (a plugin module's name, a lazy import).

The layers, lowest first (DESIGN.md's flow: data, shift, model, metrics, engine, benchmarks,
interventions, report, the demo, the apps); the package root (``robustlab/__init__.py``) and the
command line are the top: the root is where the built-in plugins are named.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "robustlab"

LAYERS = [
    {"errors", "lazy", "seeding", "fsutil", "safeload", "registry", "environment", "interrupts", "formatting"},
    {"data", "store", "models"},
    {"corruptions", "perturbations"},
    {"metrics"},
    {"attacks", "video"},
    {"engine"},
    {"benchmarks"},
    {"train"},
    {"report"},
    {"studies", "demo", "plugins"},
    {"review", "doctor"},
    {"cli", "cli_options", "cli_build", "cli_info", "cli_run", "cli_results", "__init__", "__main__"},
]
LAYER = {package: i for i, layer in enumerate(LAYERS) for package in layer}
NAMED = re.compile(r"\brobustlab\.(\w+)")


def package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def docstrings(tree: ast.Module) -> set[int]:
    """ids of the constants that name no module: docstrings (documentation may point anywhere) and
    entry-point group names (``entry_points="robustlab.benchmarks"``: a name plugins register under)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg == "entry_points" and isinstance(node.value, ast.Constant):
            out.add(id(node.value))
    return out


def names_in(path: Path) -> list[tuple[int, str, str]]:
    """``(line, package named, how)`` for every import and non-docstring string of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(SRC.parent).with_suffix("")
    module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    is_pkg = path.name == "__init__.py"
    skip = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".") if is_pkg else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                target = ".".join(parts + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{a.name}" for a in node.names] if target == "robustlab" else [target]
            for t in targets:
                bits = t.split(".")
                if bits[0] == "robustlab" and len(bits) > 1:
                    found.append((node.lineno, bits[1], "import"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bits = alias.name.split(".")
                if bits[0] == "robustlab" and len(bits) > 1:
                    found.append((node.lineno, bits[1], "import"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found += [(node.lineno, m, "string") for m in NAMED.findall(node.value)]
    return found


def test_every_package_has_a_layer():
    packages = {package_of(p) for p in SRC.rglob("*.py")}
    assert packages <= set(LAYER), packages - set(LAYER)


def test_no_lower_layer_imports_or_names_a_higher_one():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        own = package_of(path)
        for line, named, how in names_in(path):
            if named in LAYER and LAYER[named] > LAYER[own]:
                bad.append(f"{path.relative_to(SRC)}:{line} ({own}, layer {LAYER[own]}) {how}s robustlab.{named} "
                           f"(layer {LAYER[named]})")
    assert not bad, "\n".join(bad)
