"""The fault matrix: SIGKILL a run at several points, resume it, and compare with a run that
was never interrupted. Slow (real processes, real work): ``pytest -m slow``."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.store import open_store

from .helpers import MODELS, SRC, image_folder, picture

pytestmark = pytest.mark.slow


def start(argv: list) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen([sys.executable, "-m", "robustlab.cli", *map(str, argv)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def finish(argv: list) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-m", "robustlab.cli", *map(str, argv)], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return done


def kill_when(argv: list, progress: Callable[[], int], at: int, timeout: float = 300) -> int:
    """Start ``argv``; SIGKILL it (and its workers) once ``progress()`` reaches ``at``. Returns the
    progress seen at the kill; fails when the run ended first."""
    proc = start(argv)
    seen = 0
    try:
        deadline = time.time() + timeout
        while time.time() < deadline and proc.poll() is None:
            seen = progress()
            if seen >= at:
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL, f"the run finished (at {seen}) before it could be killed at {at}"
    return seen


def tree_digest(root: Path, suffixes: tuple[str, ...]) -> dict[str, str]:
    """sha256 of every output file (hidden bookkeeping files and summaries aside)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in suffixes
            and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def count(root: Path, suffixes: tuple[str, ...]) -> Callable[[], int]:
    return lambda: sum(1 for p in root.rglob("*") if p.suffix in suffixes and not p.name.startswith("."))


BUILDS = {
    "corrupt": (["corrupt", "-c", "gaussian_noise,fog,pixelate", "-s", "1-5", "--format", "png"], (".png",)),
    "perturb-npy": (["perturb", "-p", "rotate,gaussian_noise,translate", "--format", "npy"], (".npy",)),
    "perturb-mp4": (["perturb", "-p", "rotate,gaussian_noise,translate", "--format", "mp4"], (".mp4",)),
}


@pytest.mark.parametrize("build", BUILDS)
def test_builders_resume_after_sigkill_identically(build, tmp_path):
    options, suffixes = BUILDS[build]
    src = image_folder(tmp_path / "src", classes=("cat", "dog", "fox"), per_class=4, size=96, noise=10)
    argv = lambda dst: [options[0], src, dst, *options[1:], "-j", "2", "--no-progress"]  # noqa: E731
    finish(argv(tmp_path / "reference"))
    reference = tree_digest(tmp_path / "reference", suffixes)
    total = len(reference)
    dst = tmp_path / "killed"
    seen = [kill_when(argv(dst), count(dst, suffixes), at) for at in (1, total // 3, 2 * total // 3)]
    assert seen[-1] < total
    finish(argv(dst))
    assert tree_digest(dst, suffixes) == reference
    assert not list(dst.rglob("*.tmp"))


def _units_done(store: Path) -> Callable[[], int]:
    def done() -> int:
        if not (store / "catalog.db").exists():
            return 0
        try:
            with open_store(store) as st:
                runs = st.list_runs()
                return runs[0].n_units_done if runs else 0
        except Exception:  # noqa: BLE001 - the catalog is being created: look again
            return 0
    return done


def _evaluate(data: Path, store: Path, *extra) -> list:
    return ["evaluate", "--model", f"python:{MODELS}:make_slow_two_class", "--resize", "32", "--crop", "32",
            "--benchmark", "corrupted", "--data", data, "--store", store, "-c", "fog,brightness", "-s", "1-3",
            "--workers", "1", "--batch-size", "4", "-O", "shard_size=4", "--no-progress", "--json", *extra]


def _predictions(store: Path, run_id: str) -> dict:
    with open_store(store) as st:
        return st.read_predictions(run_id)


def test_evaluate_resumes_after_sigkill_identically(tmp_path):
    data = image_folder(tmp_path / "data", per_class=4)
    reference = json.loads(finish(_evaluate(data, tmp_path / "reference")).stdout)
    store = tmp_path / "killed"
    total = reference["units_total"]
    seen = [kill_when(_evaluate(data, store), _units_done(store), at) for at in (1, total // 2, total - 2)]
    assert seen[-1] < total
    runs = json.loads(finish(["runs", "--store", store, "--json"]).stdout)
    assert [r["status"] for r in runs] == ["interrupted"]  # no live process holds it (it read "running")
    resumed = json.loads(finish(_evaluate(data, store)).stdout)
    assert resumed["run_id"] == reference["run_id"] and resumed["status"] == "complete"
    assert resumed["metrics"] == reference["metrics"]
    got, want = _predictions(store, resumed["run_id"]), _predictions(tmp_path / "reference", reference["run_id"])
    assert got.keys() == want.keys()
    for unit in want:
        for column in want[unit]:
            np.testing.assert_array_equal(got[unit][column], want[unit][column])


def test_evaluate_resume_after_the_data_changed_does_not_mix(tmp_path):
    data = image_folder(tmp_path / "data", per_class=4)
    store = tmp_path / "store"
    kill_when(_evaluate(data, store), _units_done(store), 2)
    Image.fromarray(picture(32, seed=60)).save(data / "cat" / "0.png")
    (data / "dog" / "3.png").unlink()
    stamp = time.time() + 5
    os.utime(data / "cat" / "0.png", (stamp, stamp))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-m", "robustlab.cli", *map(str, _evaluate(data, store))], env=env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode == 0:  # a new run over the new data, never the old run completed with new units
        out = json.loads(done.stdout)
        sizes = {m["value"] for m in out["metrics"] if m["name"] == "n_samples"}
        assert sizes == {7.0}
    else:
        assert done.returncode == 1 and "changed" in done.stderr and "Traceback" not in done.stderr
