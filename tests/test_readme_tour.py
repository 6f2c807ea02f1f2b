"""The README's five-minute tour, run exactly as written on a fresh clone.

A ``git clone`` of this repository into a temporary folder, then every line of the tour's
first ``bash`` block, in that folder, with a ``PATH`` that holds no ``robustlab``: the tour
must call ``.venv/bin/robustlab`` / ``.venv/bin/python`` (or say to activate the venv).

The tour starts with ``make demo``, which would create ``.venv`` and ``pip install`` robustlab
and its dependencies from the package registries. This test does not reinstall: it reuses
the installed environment that runs the tests (``sys.executable``). The clone's ``.venv/bin``
holds two small scripts, ``python`` and ``robustlab``, that run that interpreter on the
clone's own ``src`` (PYTHONPATH), and ``.venv/.installed`` is stamped newer than
``pyproject.toml`` so that make skips the install step and goes on to ``robustlab demo``,
exactly as after a first ``make demo``. Everything else -- the full demo, the commands, their
files -- runs for real. It takes several minutes (the full demo).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def tour_commands(readme: str) -> list[str]:
    """The command lines of the first ``bash`` block of the README's tour section."""
    section = readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert block, "the tour has a bash block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_tours_commands_never_assume_an_activated_venv():
    for line in tour_commands((ROOT / "README.md").read_text()):
        first = line.split()[0]
        assert first in ("make",) or first.startswith(".venv/bin/"), line


def fake_venv(clone: Path) -> None:
    """``.venv/bin/{python,robustlab}`` running the tests' interpreter on the clone's ``src``."""
    bin_dir = clone / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{clone / "src"}" exec "{sys.executable}" "$@"\n')
    robustlab = bin_dir / "robustlab"
    robustlab.write_text(f'#!/bin/sh\nexec "{python}" -m robustlab.cli "$@"\n')
    for script in (python, robustlab):
        script.chmod(0o755)
    stamp = clone / ".venv" / ".installed"
    stamp.touch()
    future = time.time() + 60  # newer than the clone's pyproject.toml: make skips `pip install`
    os.utime(stamp, (future, future))


def test_readme_tour_runs_as_written_on_a_fresh_clone(tmp_path):
    if shutil.which("git") is None or shutil.which("make") is None:
        pytest.skip("git and make are needed to clone and run the tour")
    clone = tmp_path / "robustlab"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    fake_venv(clone)
    commands = tour_commands((clone / "README.md").read_text())
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "TMPDIR": str(tmp_path),
           "ROBUSTLAB_PROGRESS_INTERVAL": "30"}
    timings, outputs = [], []
    for command in commands:
        start = time.perf_counter()
        proc = subprocess.run(["bash", "-e", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=3600)
        timings.append((command.split("#")[0].strip(), time.perf_counter() - start))
        outputs.append(proc.stdout + proc.stderr)
        assert proc.returncode == 0, f"{command!r} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}"
    print("\n".join(f"{seconds:7.1f} s  {command}" for command, seconds in timings))
    print(f"{sum(s for _, s in timings):7.1f} s  the whole tour after the install")
    assert (clone / "robustlab-demo" / "report.html").is_file()
    joined = "\n".join(outputs)
    assert "relative mCE" in joined and "(12 of 15 corruptions" in joined  # the show of the demo CNN
    assert (clone / "demo_scenes" / "val").is_dir() and "run " in outputs[-1] and "mCE (subset)" in outputs[-1]
