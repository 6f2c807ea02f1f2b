"""Progress without a terminal: plain log lines (units, samples, samples/s, ETA), --progress modes."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest

from robustlab.engine.progress import (
    LogProgress,
    RunProgress,
    duration_text,
    resolve_progress,
    run_progress,
)
from robustlab.errors import InputError


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_modes_resolve_by_whether_stderr_is_a_terminal():
    assert resolve_progress("auto", Terminal()) == ("bar", None)
    assert resolve_progress("auto", io.StringIO()) == ("log", None)
    mode, note = resolve_progress("bar", io.StringIO())  # no terminal: log lines, with a note
    assert mode == "log" and "not a terminal" in note
    assert resolve_progress("bar", Terminal()) == ("bar", None)
    assert resolve_progress("log", Terminal()) == ("log", None)
    assert resolve_progress("none", io.StringIO()) == ("none", None)
    assert resolve_progress(None, io.StringIO())[0] == "log" and resolve_progress(False, Terminal())[0] == "none"
    with pytest.raises(InputError, match="progress mode"):
        resolve_progress("fancy")
    assert isinstance(run_progress("x", "none"), RunProgress) and not run_progress("x", "none").enabled
    assert isinstance(run_progress("x", "bar", stream=io.StringIO()), LogProgress)


def test_log_lines_say_units_samples_rate_and_eta():
    out = io.StringIO()
    with LogProgress("corrupted 3f2a1b", interval=0.05, stream=out) as p:
        for _ in range(4):
            p.add_samples(100)
        assert "0/4+ units" in p.line() and "ETA when every unit is listed" in p.line()
        p.advance(50)
        time.sleep(0.05)
        listing = p.line()  # units still being listed: no percentage, no ETA (issue 37: "53 % ... ETA at least 13 s"
        assert "50 samples done" in listing and "%" not in listing and "ETA when every unit is listed" in listing
        p.set_units_total(4)
        p.samples_done = 0
        p.advance(100)
        p.unit_done()
        time.sleep(0.2)
        line = p.line()
    assert re.fullmatch(r"corrupted 3f2a1b: 1/4 units, 100/400 samples \(25 %\), [\d.]+ samples/s, ETA \d+ s", line)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2  # periodic lines, then the last one
    assert lines[-1].startswith("corrupted 3f2a1b: done, 1/4 units, 100/400 samples (25 %) in ")
    assert duration_text(125) == "2 min 05 s" and duration_text(3725) == "1 h 02 min"


def test_the_bar_has_no_total_until_every_unit_is_listed():
    bar = RunProgress("corrupted", enabled=False)
    bar.add_samples(100)
    bar.add_samples(100)
    assert bar.known_total() is None and "[0/2+ units]" in bar._label()  # no percentage, no ETA
    bar.set_units_total(2)
    assert bar.known_total() == 200 and "[0/2 units]" in bar._label()


def test_evaluate_redirected_to_a_file_prints_log_lines(tmp_path):
    """`robustlab evaluate ... > log 2>&1` (no terminal): log lines, not silence; `--progress bar`
    says it falls back."""
    from robustlab.demo.world import scene_dataset, write_image_folder

    data = tmp_path / "scenes"
    write_image_folder(scene_dataset("test", n=20, seed=0), data)  # all 10 digits
    env = {**os.environ, "ROBUSTLAB_PROGRESS_INTERVAL": "0.2", "PYTHONPATH": os.pathsep.join(sys.path)}
    for mode in ("auto", "bar"):
        log = tmp_path / f"{mode}.log"
        with open(log, "w") as fh:
            proc = subprocess.run([sys.executable, "-m", "robustlab.cli", "evaluate", "--model", "demo:cnn",
                                   "--benchmark", "corrupted", "--data", str(data), "--corruptions", "fog,snow",
                                   "--severities", "1", "--class-map", "sorted", "--workers", "0",
                                   "--store", str(tmp_path / f"store-{mode}"), "--progress", mode],
                                  stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=300)
        text = log.read_text()
        assert proc.returncode == 0, text
        assert re.search(r"corrupted \w{6}: done, 3/3 units, 60/60 samples \(100 %\) in \d+ s", text), text
        assert ("not a terminal" in text) == (mode == "bar")
