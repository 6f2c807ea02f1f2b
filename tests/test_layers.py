"""Data flows forward: the packages of robustlab form layers, and no module of a lower layer imports
or names a higher one, not even as a string (a plugin module's name, a lazy import).

The layers, lowest first (DESIGN.md's flow: data, shift, model, metrics, engine, benchmarks,
interventions, report, the demo, the apps); the package root (``robustlab/__init__.py``) and the
command line are the top: the root is where the built-in plugins are named. The metrics are pure
functions: they sit right above the lowest layer (which holds :mod:`robustlab.suites`, the plain
table of names, subsets and published baselines that they and the shift catalogs read), below the
data, the models and the shifts, and need nothing beyond numpy and scipy (checked in a venv that
has only those two).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "robustlab"

LAYERS = [
    {"errors", "lazy", "seeding", "fsutil", "safeload", "registry", "environment", "interrupts", "formatting",
     "suites"},
    {"metrics"},
    {"data", "store", "models"},
    {"corruptions", "perturbations"},
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


#: Third-party packages a metrics module may import: numpy and scipy, and the COCO evaluators that
#: coco_metrics imports when called (an optional dependency, never at import).
METRICS_THIRD_PARTY = {"numpy", "scipy"}
COCO_EVALUATORS = {"faster_coco_eval", "pycocotools"}
#: What the bare venv must not have (so the check proves the metrics need none of them).
HEAVY = ("PIL", "torch", "cv2", "numba", "av", "skimage", "pandas", "pyarrow")


def third_party_imports(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, top-level package, at module level)`` of every non-robustlab, non-stdlib import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top != "robustlab" and top not in sys.stdlib_module_names:
                found.append((node.lineno, top, id(node) in top_level))
    return found


def test_the_metrics_import_only_numpy_and_scipy():
    bad = []
    for path in sorted((SRC / "metrics").rglob("*.py")):
        for line, top, at_import in third_party_imports(path):
            if top in METRICS_THIRD_PARTY or (top in COCO_EVALUATORS and not at_import):
                continue
            bad.append(f"metrics/{path.relative_to(SRC / 'metrics')}:{line} imports {top}")
    assert not bad, "\n".join(bad)


def test_every_public_metric_imports_without_the_heavy_packages():
    code = ("import sys, robustlab.metrics as M; [getattr(M, n) for n in M.__all__]; "
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(SRC.parent)}).stdout
    assert out.strip() == "[]", out


def test_every_public_metric_works_in_a_venv_with_numpy_and_scipy_alone(tmp_path):
    """``import robustlab.metrics`` and every public name of it in a venv that has numpy and scipy and
    nothing else (linked offline from this environment, scripts/venvs.py), and a few calls."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import venvs
    finally:
        sys.path.pop(0)
    python = venvs.create(tmp_path / "bare", pip=False)
    venvs.link_distributions(python, ["numpy", "scipy"])
    assert set(venvs.installed_versions(python)) == {"numpy", "scipy"}
    code = f"""
import importlib.util
present = [m for m in {HEAVY!r} if importlib.util.find_spec(m)]
assert not present, present
import robustlab.metrics
import robustlab.metrics as M
assert all(getattr(M, n) is not None for n in M.__all__)
errors = {{c: [0.4, 0.5, 0.6, 0.7, 0.8] for c in M.BENCHMARK_CORRUPTIONS}}
print(round(M.mce(errors), 6), M.clopper_pearson(3, 10), round(M.welch_t_test([1, 2, 3], [2, 3, 5]).p_value, 6),
      len(M.__all__))
"""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SRC.parent), "PYTHONNOUSERSITE": "1"}
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    value, *_, count = proc.stdout.split()
    assert float(value) > 0 and int(count) == len(__import__("robustlab.metrics").metrics.__all__)
