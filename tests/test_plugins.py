"""One plugin, one file: a package installed beside robustlab adds a corruption, a benchmark family
(its config, its benchmark and its presentation with a report section of its own), an executor and a
model source (one file each, tests/fixtures/plugin), found through its entry points, and each appears
in `robustlab list`, the command line's help, `evaluate`, `show` and the report, with no edit to
robustlab. The four files are the ones docs/extending.md shows."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "tests" / "fixtures" / "plugin" / "robustlab_plugin_example"
FILES = ("corruption.py", "benchmark.py", "executor.py", "model.py")
ENTRY_POINTS = """\
[robustlab.corruptions]
example = robustlab_plugin_example.corruption

[robustlab.benchmarks]
example = robustlab_plugin_example.benchmark

[robustlab.presentations]
example = robustlab_plugin_example.benchmark

[robustlab.executors]
example = robustlab_plugin_example.executor

[robustlab.model_sources]
example = robustlab_plugin_example.model
"""


def install_plugin(site: Path) -> None:
    """A throwaway distribution of the example plugin: the package and its dist-info (with entry points)."""
    shutil.copytree(PLUGIN, site / PLUGIN.name)
    info = site / "robustlab_plugin_example-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: robustlab-plugin-example\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)


def write_images(root: Path) -> None:
    """Dark and light 32x32 images with a little texture, in class folders."""
    rng = np.random.default_rng(0)
    for cls, level in (("dark", 60), ("light", 190)):
        (root / cls).mkdir(parents=True)
        for i in range(3):
            img = np.clip(level + rng.integers(-20, 20, (32, 32, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(img).save(root / cls / f"{i}.png")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugin")
    install_plugin(tmp / "site")
    write_images(tmp / "data")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(tmp / "site")]), "COLUMNS": "200",
           "ROBUSTLAB_DEBUG": "1"}
    return tmp, env


def robustlab(env, *args) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "robustlab.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.slow  # a few robustlab processes, each importing torch
def test_a_plugin_s_four_files_appear_everywhere(world):
    tmp, env = world
    # robustlab list: every kind from its registry
    assert re.search(r"posterize\s+.\s+tone\s+.\s+example-set", robustlab(env, "list").stdout)
    benchmarks = robustlab(env, "list", "benchmarks").stdout
    assert "example-shift" in benchmarks and "example" in benchmarks and "clean accuracy" in benchmarks
    assert "inline" in robustlab(env, "list", "executors").stdout
    assert "brightness:" in robustlab(env, "list", "models").stdout
    # the command line's help: the benchmark's and the executor's options, from their schemas
    helped = robustlab(env, "evaluate", "-b", "example-shift", "-e", "inline", "--help").stdout
    for text in ("Options of the example-shift benchmark", "--severity", "Options of the inline executor",
                 "--announce"):
        assert text in helped
    # evaluate: the plugin's model, benchmark, executor and corruption together
    store = tmp / "store"
    run = robustlab(env, "evaluate", "-m", "brightness:0.50", "-b", "example-shift", "-d", tmp / "data", "-e", "inline",
                    "--announce", "-c", "posterize,brightness", "--severity", "2", "--store", store, "--json",
                    "--progress", "none")
    assert "inline executor: example-shift run" in run.stderr
    result = json.loads(run.stdout)
    assert result["status"] == "complete" and result["model"] == "brightness:0.5"
    assert result["config"]["corruptions"] == ["brightness", "posterize"]  # registration order: robustlab's first
    metrics = {(m["name"], m["setting"]): m["value"] for m in result["metrics"]}
    assert metrics[("accuracy", "clean")] == 1.0 and ("accuracy", "posterize") in metrics
    # show (the plugin's presentation lays the metrics out) and the report (with the plugin's own section)
    shown = robustlab(env, "show", result["run_id"], "--store", store).stdout
    assert "example-shift" in shown and "brightness:0.5" in shown
    assert "accuracy clean            100.0 %  (severity 2)" in shown and "accuracy posterize" in shown
    robustlab(env, "report", "--store", store, "-o", tmp / "report.html")
    html = (tmp / "report.html").read_text()
    assert "Example shifts (a plugin&#39;s family)" in html or "Example shifts (a plugin's family)" in html
    assert "Top-1 accuracy (%) of each model, clean and under each corruption." in html  # its section's intro
    assert "Accuracy per shift" in html and "<svg" in html  # its figure
    assert "clean accuracy 100.0" in html  # its headline in the summary
    # the plugin's corruption also writes datasets
    robustlab(env, "corrupt", tmp / "data", tmp / "out", "-c", "posterize", "-s", "1", "--format", "png", "-j", "1",
              "--no-progress")
    assert len(list((tmp / "out" / "posterize" / "1").rglob("*.png"))) == 6


def test_docs_show_each_extension_as_one_file():
    """docs/extending.md shows the example plugin's four files as they are (the ones the test installs)."""
    text = (ROOT / "docs" / "extending.md").read_text()
    for name in FILES:
        code = (PLUGIN / name).read_text().strip()
        assert code in text, f"docs/extending.md does not show {name} as it is in {PLUGIN}"
