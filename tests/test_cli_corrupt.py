"""`robustlab corrupt`, `robustlab list` and `robustlab demo gallery` from the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.corruptions import list_corruptions
from robustlab.corruptions.dataset import SUMMARY_NAME, corrupt_dataset, make_settings
from robustlab.demo.corruption_demo import DemoResult, contact_sheet, render_html
from robustlab.errors import DataError, InputError

RUNNER = CliRunner()
FAST = ("brightness", "contrast", "gaussian_noise", "saturate", "shot_noise", "pixelate", "fog", "spatter")
#: The installed console script; the module form works in any checkout.
CLI = [sys.executable, "-c", "from robustlab.cli import main; main()"]


def fast_corruptions(n: int = 2) -> list[str]:
    picks = [c for c in FAST if c in list_corruptions("all")][:n]
    if len(picks) < n:
        pytest.skip(f"needs {n} registered corruptions among {FAST}; registered: {list_corruptions('all')}")
    return picks


def write_pngs(root: Path, n: int, size: int = 36) -> None:
    rng = np.random.default_rng(0)
    for i in range(n):
        path = root / f"c{i % 3}" / f"img{i:04d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(path)


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != SUMMARY_NAME}


def test_corrupt_command_writes_the_layout_and_a_summary(tmp_path):
    names = fast_corruptions(2)
    write_pngs(tmp_path / "src", 3)
    result = RUNNER.invoke(app, ["corrupt", str(tmp_path / "src"), str(tmp_path / "out"), "--corruptions",
                                 ",".join(names), "--severities", "1-2", "--workers", "1", "--format", "png",
                                 "--seed", "4"])
    assert result.exit_code == 0, result.output
    assert "3 images x 2 corruptions x 2 severities = 12 outputs" in result.output
    assert "written 12, already there 0, failed 0" in result.output
    assert (tmp_path / "out" / names[1] / "2" / "c1" / "img0001.png").exists()
    assert json.loads((tmp_path / "out" / SUMMARY_NAME).read_text())["settings"]["seed"] == 4
    again = RUNNER.invoke(app, ["corrupt", str(tmp_path / "src"), str(tmp_path / "out"), "-c", ",".join(names),
                                "-s", "1-2", "-j", "1", "--format", "png", "--seed", "4"])
    assert again.exit_code == 0 and "written 0, already there 12" in again.output


def test_corrupt_command_reports_a_corrupt_source_and_exits_zero(tmp_path):
    name = fast_corruptions(1)[0]
    write_pngs(tmp_path / "src", 2)
    (tmp_path / "src" / "bad.JPEG").write_bytes(b"not an image")
    result = RUNNER.invoke(app, ["corrupt", str(tmp_path / "src"), str(tmp_path / "out"), "-c", name, "-s", "1",
                                 "-j", "1", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "failed 1" in result.output and "bad.JPEG: [unreadable]" in result.output


@pytest.mark.parametrize("args, error, message", [
    (["{src}", "{out}", "-c", "fgo"], InputError, "Did you mean 'fog'"),
    (["{src}", "{out}", "-s", "0-3"], InputError, "severities"),
    (["{src}", "{out}", "--format", "gif"], InputError, "jpeg"),
    (["{tmp}/absent", "{out}"], DataError, "does not exist"),
    (["{tmp}/empty", "{out}"], DataError, "no images found"),
    (["{src}", "{tmp}/file/out"], DataError, "cannot create the folder"),
])
def test_corrupt_command_errors(tmp_path, args, error, message):
    name = fast_corruptions(1)[0]
    if "fog" not in list_corruptions("all") and "fgo" in args:
        args = [a.replace("fgo", name[:-1]) for a in args]  # a near miss of a registered name
        message = f"Did you mean '{name}'"
    write_pngs(tmp_path / "src", 1)
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("")
    fmt = {"src": tmp_path / "src", "out": tmp_path / "out", "tmp": tmp_path}
    argv = ["corrupt", *(a.format(**fmt) for a in args)]
    if "-c" not in argv:
        argv += ["-c", name]
    result = RUNNER.invoke(app, argv)
    assert isinstance(result.exception, error), result.output
    assert message in str(result.exception)


def test_errors_are_one_line_with_exit_code_1(tmp_path, monkeypatch, capsys):
    """Through the console-script entry point: robustlab's errors become `error: ...`, exit 1
    (a data or input error; 2 is kept for command lines that cannot be parsed, docs/errors.md)."""
    from robustlab.cli import main

    monkeypatch.setattr(sys, "argv", ["robustlab", "corrupt", str(tmp_path / "absent"), str(tmp_path / "out"),
                                      "-c", "all"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: source folder") and "does not exist" in lines[0]


def test_list_command():
    result = RUNNER.invoke(app, ["list"])
    assert result.exit_code == 0
    for name in list_corruptions("all"):
        assert name in result.output
    assert RUNNER.invoke(app, ["list", "profiles"]).output.split() == ["imagecorruptions", "imagenet-c", "cifar",
                                                                       "tinyimagenet"]
    bad = RUNNER.invoke(app, ["list", "corruption"])
    assert isinstance(bad.exception, InputError) and "Did you mean 'corruptions'" in str(bad.exception)


@pytest.mark.slow  # two CLI processes with a worker pool each: ~6 s idle, much more on a loaded machine
def test_killed_run_resumes_to_the_same_files_without_temporaries(tmp_path):
    """SIGKILL the whole run (parent and workers) mid-way; rerunning finishes it identically."""
    names = fast_corruptions(2)
    write_pngs(tmp_path / "src", 100)
    total = 100 * 2 * 2
    argv = [*CLI, "corrupt", str(tmp_path / "src"), str(tmp_path / "out"), "-c", ",".join(names), "-s", "1,4",
            "-j", "2", "--no-progress", "--format", "png"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        done = sum(1 for p in (tmp_path / "out").rglob("*.png"))
        if done >= 10:
            break
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    partial = sum(1 for p in (tmp_path / "out").rglob("*.png"))
    assert 0 < partial < total, f"the run was not interrupted mid-way ({partial}/{total} outputs)"

    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"written {total - partial}, already there {partial}, failed 0" in rerun.stdout
    assert not list((tmp_path / "out").rglob("*.tmp"))
    clean = corrupt_dataset(tmp_path / "src", tmp_path / "clean",
                            make_settings(",".join(names), "1,4", format="png"), workers=1)
    assert clean.written == total
    assert tree_bytes(tmp_path / "out") == tree_bytes(tmp_path / "clean")


@pytest.mark.slow  # all 19 x 5 corruptions, with numba's first-call compilation: ~10 s
def test_demo_quick_writes_sheet_page_and_timings(tmp_path):
    result = RUNNER.invoke(app, ["demo", "gallery", "--quick", "--out", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    names = list_corruptions("all")
    sheet = Image.open(tmp_path / "demo" / "contact_astronaut.png")
    # one 128 px row per corruption under a header; clean + 5 severities across
    assert sheet.height == 24 + len(names) * (128 + 4) and sheet.width == 150 + 6 * (128 + 4)
    page = (tmp_path / "demo" / "index.html").read_text()
    assert page.count("data:image/jpeg;base64,") == 1 and all(n in page for n in names)
    timings = json.loads((tmp_path / "demo" / "timings.json").read_text())
    assert len(timings) == len(names) * 5 and all(t["seconds"] > 0 for t in timings)
    assert f"{len(names)} corruptions x 5 severities x 1 image(s)" in result.output


def test_contact_sheet_and_page_for_two_corruptions():
    names = fast_corruptions(2)
    clean = np.zeros((40, 60, 3), np.uint8)
    outputs = {(n, s): np.full((40, 60, 3), 40 * s, np.uint8) for n in names for s in range(1, 6)}
    sheet = contact_sheet(clean, outputs, names, thumb_height=32)
    assert sheet.shape == (24 + 2 * (32 + 4), 150 + 6 * (48 + 4), 3) and sheet.dtype == np.uint8
    # severity 5 of the second corruption sits at the bottom right
    assert (sheet[24 + 32 + 4 + 16, 150 + 5 * 52 + 24] == 200).all()
    result = DemoResult(Path("."), {"img": (40, 60)}, names,
                        {("img", n, s): 0.001 * s for n in names for s in range(1, 6)})
    assert result.mean_ms(names[0]) == pytest.approx(15.0) and result.mean_ms(names[0], 2) == pytest.approx(2.0)
    page = render_html(result, {"img": b"jpegbytes"})
    assert "<td><b>15.0</b></td>" in page and names[1] in page and "img (40x60)" in page
