"""perf/speed_torch_kernels.py: its quick run on the CPU prints a table and a JSON line with every
kernel's images/s; its kernel_throughput is importable (perf/gpu_check.py can call it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from robustlab.corruptions import list_corruptions

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "perf" / "speed_torch_kernels.py"


def load_script():
    spec = importlib.util.spec_from_file_location("speed_torch_kernels", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_on_the_cpu_reports_every_kernel():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--device", "cpu", "--threads", "1"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    record = json.loads(lines[-1])
    assert record["device"] == "cpu" and record["batch"] == 4 and record["size"] == 64
    assert sorted(record["images_per_s"]) == sorted(list_corruptions("all"))
    assert all(rate > 0 for rate in record["images_per_s"].values())
    assert sum(line.split()[0] in record["images_per_s"] for line in lines[1:-1]) == len(record["images_per_s"])


def test_kernel_throughput_is_importable_and_times_what_it_is_asked():
    module = load_script()
    result = module.kernel_throughput("cpu", 3, 48, ["fog", "motion_blur"], 1, severities=(2,), clock="cpu")
    assert sorted(result["images_per_s"]) == ["fog", "motion_blur"]
    assert set(result["seconds"]["fog"]) == {2} and result["seconds"]["fog"][2] > 0
    assert result["images_per_s"]["fog"] == pytest.approx(3 / result["seconds"]["fog"][2])
    assert result["below_target"] == [n for n, r in result["images_per_s"].items() if r < module.TARGET]
    with pytest.raises(ValueError, match="clock"):
        module.kernel_throughput("cpu", 2, 48, ["fog"], 1, clock="gpu")
