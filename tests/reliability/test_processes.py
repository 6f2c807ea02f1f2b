"""Processes and resources: workers die with their parent, one run per output folder, and
reproducible mp4 encoding."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robustlab.perturbations.dataset import SUMMARY_NAME as PERTURB_SUMMARY

from .helpers import MODELS, SRC, assert_error, assert_ok, image_folder, run

PROC = Path("/proc")
needs_proc = pytest.mark.skipif(not (PROC / "self" / "stat").exists(), reason="needs Linux /proc to find processes")


def _parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process."""
    found = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            found[int(entry.name)] = (int(fields[1]), fields[0])
    return found


def descendants(pid: int) -> set[int]:
    table, found, todo = _parents(), set(), [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, _) in table.items():
            if ppid == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found


def living(pids: set[int]) -> set[int]:
    table = _parents()
    return {p for p in pids if p in table and table[p][1] != "Z"}


def _start(argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen([sys.executable, "-m", "robustlab.cli", *map(str, argv)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@needs_proc
@pytest.mark.parametrize("command", ["corrupt", pytest.param("evaluate", marks=pytest.mark.slow)])
def test_workers_exit_within_10_s_of_their_parents_death(command, tmp_path):
    """After kill -9 of the main process, its workers lived on for minutes (fails on the old
    code for evaluate: the DataLoader workers outlived it by over 30 s here)."""
    data = image_folder(tmp_path / "data", per_class=20, size=64)
    if command == "corrupt":
        argv = ["corrupt", data, tmp_path / "out", "-c", "all", "-s", "1-5", "-j", "2", "--no-progress"]
    else:
        argv = ["evaluate", "--model", f"python:{MODELS}:make_slow_two_class", "--resize", "32", "--crop", "32",
                "--benchmark", "corrupted", "--data", data, "--store", tmp_path / "store", "-c", "fog", "-s", "1",
                "--workers", "2", "--batch-size", "2", "--no-progress"]
    proc = _start(argv)
    try:
        deadline, workers = time.time() + 120, set()
        while time.time() < deadline and proc.poll() is None:
            workers = descendants(proc.pid)
            if len(workers) >= 3:  # a forkserver (or resource tracker) and two workers
                break
            time.sleep(0.2)
        time.sleep(1.0)
        workers = descendants(proc.pid)
        assert proc.poll() is None and len(workers) >= 3, "the run ended before its workers could be seen"
    finally:
        proc.kill()
        proc.wait()
    killed = time.time()
    while living(workers) and time.time() - killed < 10:
        time.sleep(0.1)
    left = living(workers)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} worker process(es) still alive 10 s after their parent was killed"


def test_a_second_run_into_the_same_folder_is_refused_naming_the_first(tmp_path):
    """Two concurrent corrupt runs into one folder deleted each other's temporary files."""
    src = image_folder(tmp_path / "src", per_class=10, size=64)
    first = _start(["corrupt", src, tmp_path / "out", "-c", "all", "-s", "1-5", "-j", "1", "--no-progress"])
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not any((tmp_path / "out").rglob("*.jpg")):
            time.sleep(0.1)
        assert first.poll() is None
        assert_error(run("corrupt", src, tmp_path / "out", "-c", "fog", "--no-progress", "-j", "1"),
                     "is being written by another run", f"pid {first.pid}")
        # another builder never writes into corrupt's folder, running or not
        assert_error(run("perturb", src, tmp_path / "out", "-p", "rotate", "--no-progress", "-j", "1"),
                     "is the output folder of robustlab corrupt")
    finally:
        first.kill()
        first.wait()
    # the lock dies with its holder: the folder can be resumed at once
    assert_ok(run("corrupt", src, tmp_path / "out", "-c", "fog", "-s", "1", "-j", "1", "--no-progress"))


def _digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.mp4"))}


def photo_folder(root: Path, size: int = 224) -> Path:
    """Three natural photos (scikit-image's) at ``size`` px, as ``<root>/<class>/<name>.png``."""
    from PIL import Image
    from skimage import data

    for cls, name in (("person", "astronaut"), ("cat", "chelsea"), ("cup", "coffee")):
        (root / cls).mkdir(parents=True, exist_ok=True)
        Image.fromarray(getattr(data, name)()).resize((size, size)).save(root / cls / f"{name}.png")
    return root


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs 2 CPUs to run the encoder with different CPU counts")
@pytest.mark.parametrize("preset", ["medium", "veryfast"])
def test_mp4_bit_identical_whatever_the_cpu_count(tmp_path, preset):
    """x264's output followed the number of CPUs it saw, and on AVX-512 CPUs its AVX-512 routines
    made even two runs in one setting differ (9 of 12 files on 224 px photos): separate processes
    with one CPU or all, -j 1 or -j 2, give the same bytes."""
    src = photo_folder(tmp_path / "src")
    cpus = sorted(os.sched_getaffinity(0))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for name, cpu_set, workers in (("one", cpus[:1], "1"), ("all", cpus, "2"), ("again", cpus, "1")):
        code = (f"import os, sys; os.sched_setaffinity(0, {cpu_set!r}); sys.argv = ['robustlab'] + sys.argv[1:]; "
                "from robustlab.cli import main; main()")
        subprocess.run([sys.executable, "-c", code, "perturb", str(src), str(tmp_path / name), "-p",
                        "rotate,gaussian_noise", "--format", "mp4", "--preset", preset, "-j", workers, "--no-progress"],
                       env=env, check=True, capture_output=True, timeout=300)
    one = _digests(tmp_path / "one")
    assert len(one) == 6 and one == _digests(tmp_path / "all") == _digests(tmp_path / "again")
    encoder = json.loads((tmp_path / "one" / PERTURB_SUMMARY).read_text())["encoder"]
    assert encoder["libx264"].startswith("core ") and "libavcodec" in encoder
    assert encoder["byte_reproducible"] is True and encoder["x264_asm"].endswith("SSE4.2")


def test_mp4_identical_whatever_the_worker_count(tmp_path):
    src = image_folder(tmp_path / "src", per_class=2, size=64, noise=20)
    for workers in ("1", "2"):
        assert_ok(run("perturb", src, tmp_path / workers, "-p", "translate", "--format", "mp4", "-j", workers,
                      "--no-progress"))
    assert len(_digests(tmp_path / "1")) == 4 and _digests(tmp_path / "1") == _digests(tmp_path / "2")


def test_exit_with_parent_in_a_child(tmp_path):
    """The public helper the engine's DataLoader workers call: a grandchild that called it
    exits once its (killed) parent is gone."""
    code = ("import os, subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; from robustlab.data.jobs import "
            "exit_with_parent; exit_with_parent(); print(1, flush=True); time.sleep(60)'], stdout=subprocess.PIPE)\n"
            "child.stdout.readline(); print(child.pid, flush=True); time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(SRC)})
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.time() + 10
    while time.time() < deadline and living({child}):
        time.sleep(0.05)
    assert not living({child})


def test_pool_workers_stay_single_threaded():
    """The pool already uses every core: each worker runs OpenCV with one thread."""
    import operator

    import cv2

    from robustlab.data.jobs import run_jobs

    assert set(run_jobs(operator.call, [cv2.getNumThreads] * 4, 2)) == {1}
