"""The drift check (scripts/drift_check.py), in the slow half: the golden, parity and codec tests in a
second venv with the newest NumPy, SciPy, OpenCV, numba, Pillow, scikit-image and PyAV pip resolves.

It builds ``.venv-drift`` in a temporary folder (about a minute, from PyPI). A failure names the
packages whose versions differ from the lock.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_golden_and_codec_tests_pass_with_the_newest_stack(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "drift_check.py"), "--venv", str(tmp_path / "venv"),
                           "-n", "1"], capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "drift check passed" in proc.stdout and "numpy" in proc.stdout


def test_lock_parsing_and_the_stack_requirements():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import drift_check
    finally:
        sys.path.pop(0)
    locked = drift_check.locked_versions()
    assert {"numpy", "scipy", "opencv-python-headless", "numba", "pillow", "av", "torch"} <= set(locked)
    reqs = drift_check.stack_requirements()
    assert any(r.startswith("numpy") for r in reqs) and not any(r.startswith("torch") for r in reqs)
    table = drift_check.version_table({"numpy": "9.9.9"}, locked)
    assert "numpy" in table and "<- differs" in table
