"""The drift check: robustlab's golden and parity tests against the newest versions pip resolves.

robustlab promises the reference's pixels and byte-identical mp4 with the locked stack
(src/robustlab/locks) *and* with whatever newer NumPy, SciPy, OpenCV, numba, Pillow,
scikit-image and PyAV pip resolves today. This script builds (or upgrades) a second venv,
``.venv-drift``, with the newest versions of those packages that pyproject.toml's ranges admit
(no torch: the numpy kernels and the codec do not need it), runs the golden, parity and codec tests
there against this checkout's source, and on a failure prints which of those packages differ from
the lock, so the version that moved the pixels is named.

    python scripts/drift_check.py              # build/upgrade .venv-drift, run the tests
    python scripts/drift_check.py --venv DIR   # another place for the venv

Exit status: 0 when every test passed, 1 when one failed, 2 when the venv could not be built.
The slow half of ``make test`` runs it (tests/test_drift.py).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from venvs import canonical, create, installed_versions, pip_install

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "src" / "robustlab" / "locks" / "py311-linux-x86_64.txt"
#: The packages whose versions can move a pixel or a byte of robustlab's kernels and codec.
STACK = ("numpy", "scipy", "opencv-python-headless", "numba", "llvmlite", "Pillow", "scikit-image", "av")
#: The test tools the selected tests need (and the CLI some of them drive).
TOOLS = ("pytest", "hypothesis", "pytest-xdist", "typer", "rich")
#: What runs: the golden and parity tests of the kernels, their compiled stand-ins, and the codec.
TESTS = ("tests/corruptions", "tests/perturbations", "tests/data/test_h264.py")
#: What marks a test file that needs torch (not installed in the drift venv): it is left out.
TORCH_MARKERS = ("import torch", "from torch", "robustlab.corruptions.torch", "torchvision")


def needs_torch() -> list[str]:
    """The test files under :data:`TESTS` that import torch (directly or through the torch backend)."""
    files = []
    for entry in TESTS:
        path = ROOT / entry
        for test in ([path] if path.is_file() else sorted(path.rglob("test_*.py"))):
            if any(marker in test.read_text(errors="replace") for marker in TORCH_MARKERS):
                files.append(str(test.relative_to(ROOT)))
    return files


def stack_requirements() -> list[str]:
    """pyproject.toml's requirement strings for :data:`STACK` (its ranges, so pip picks the newest)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = {canonical(n) for n in STACK}
    chosen = [d for d in deps if canonical(re.split(r"[<>=!~\[; ]", d, 1)[0]) in wanted]
    named = {canonical(re.split(r"[<>=!~\[; ]", d, 1)[0]) for d in chosen}
    return chosen + [n for n in STACK if canonical(n) not in named]


def locked_versions(lock: Path = LOCK) -> dict[str, str]:
    """``{canonical name: version}`` of a lock file (``name==version`` lines)."""
    out = {}
    for line in lock.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^ \\;]+)", line)
        if m:
            out[canonical(m.group(1))] = m.group(2)
    return out


def build(venv: Path) -> Path:
    """Create (or upgrade) the drift venv: the newest :data:`STACK` and :data:`TOOLS` pip resolves
    (scripts/venvs.py, shared with the bare-metrics check of tests/test_layers.py)."""
    python = create(venv)
    pip_install(python, [*stack_requirements(), *TOOLS])
    return python


def version_table(drift: dict[str, str], locked: dict[str, str]) -> str:
    rows = []
    for name in STACK:
        key = canonical(name)
        new, old = drift.get(key, "missing"), locked.get(key, "not locked")
        rows.append(f"  {name:24s} drift {new:14s} lock {old:14s}{'  <- differs' if new != old else ''}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-drift", help="where the drift venv lives")
    parser.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (default 2)")
    args = parser.parse_args(argv)
    try:
        python = build(args.venv)
    except subprocess.CalledProcessError as exc:
        print(f"drift check: could not build {args.venv} ({exc}); check access to PyPI, or delete the folder "
              "and retry.", file=sys.stderr)
        return 2
    drift, locked = installed_versions(python), locked_versions()
    print("drift check: the newest resolvable stack against the lock\n" + version_table(drift, locked), flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [str(python), "-m", "pytest", "-q", "-n", args.workers, "-p", "no:cacheprovider",
           "-m", "not postgres and not ray and not browser", *TESTS,
           *(f"--ignore={p}" for p in needs_torch())]
    proc = subprocess.run(cmd, cwd=ROOT, env=env)
    if proc.returncode != 0:
        moved = [line for line in version_table(drift, locked).splitlines() if "differs" in line]
        print("\ndrift check FAILED: a golden, parity or codec test gives other results with the newest versions.\n"
              + ("Packages that differ from the lock:\n" + "\n".join(moved) if moved else
                 "No package differs from the lock: the failure is not a version drift."), file=sys.stderr)
        return 1
    print("drift check passed: the kernels and the codec give the locked stack's results with these versions.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
