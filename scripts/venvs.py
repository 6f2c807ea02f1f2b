"""Second virtual environments for checks that need another set of packages than the project's venv:
the drift check (scripts/drift_check.py: the newest versions pip resolves) and the bare-metrics check
(tests/test_layers.py: robustlab.metrics with numpy and scipy alone).

Two ways to fill one:

- :func:`pip_install`: from the package index (needs the network, or a pip cache that holds the
  wheels);
- :func:`link_distributions`: offline, from the distributions this interpreter already has: the
  files of each named distribution (its packages, its bundled shared libraries, its metadata) are
  linked into the new venv's site-packages, so the venv sees exactly those distributions, the same
  files, and nothing else of this environment. Nothing is downloaded or built.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path


def canonical(name: str) -> str:
    """A distribution name as pip compares them (``Pillow`` and ``pillow``, ``a_b`` and ``a-b``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def create(venv: Path, *, pip: bool = True) -> Path:
    """A venv at ``venv`` (kept when it exists), from this interpreter's base Python, without this
    environment's packages; ``pip=False`` leaves pip out (faster, for :func:`link_distributions`).
    Returns its ``python``."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", *([] if pip else ["--without-pip"]), str(venv)], check=True)
    return python


def pip_install(python: Path, requirements: Iterable[str], *, upgrade: bool = True) -> None:
    """``pip install`` ``requirements`` into the venv of ``python`` (``upgrade``: the newest versions
    the requirements admit, dependencies included)."""
    flags = ["--upgrade", "--upgrade-strategy", "eager"] if upgrade else []
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *flags, *requirements], check=True)


def site_packages(python: Path) -> Path:
    """The venv's site-packages folder (purelib)."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout.strip())


def distribution_roots(name: str) -> list[Path]:
    """The top-level files and folders the installed distribution ``name`` put into site-packages
    (from its RECORD: packages, ``<name>.libs``, its ``.dist-info``); scripts outside are left out."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise LookupError(f"{name} is not installed in {sys.prefix}: install it there first.") from None
    tops = {Path(f).parts[0] for f in dist.files or () if Path(f).parts and Path(f).parts[0] != ".."}
    roots = [Path(str(dist.locate_file(top))) for top in sorted(tops)]
    return [r for r in roots if r.exists()]


def link_distributions(python: Path, names: Iterable[str]) -> list[str]:
    """Make the distributions ``names`` of this interpreter importable in the venv of ``python`` by
    linking their top-level files into its site-packages (offline). Returns the linked entries."""
    target = site_packages(python)
    linked = []
    for name in names:
        for root in distribution_roots(name):
            link = target / root.name
            if not link.exists():
                link.symlink_to(root, target_is_directory=root.is_dir())
            linked.append(root.name)
    return linked


def installed_versions(python: Path) -> dict[str, str]:
    """``{canonical name: version}`` of every distribution the venv of ``python`` sees."""
    code = ("import json, importlib.metadata as m; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout
    return {canonical(k): v for k, v in json.loads(out).items()}
