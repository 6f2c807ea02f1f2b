"""perf/gpu_check.py: runs on the CPU (``--device cpu``) as a smoke test of every part, from a
source checkout, without PyAV, SQLAlchemy or faster-coco-eval; renders the marked README/docs
cells from its record (pending without a GPU record)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "perf" / "gpu_check.py"
#: Run the script as on the GPU machine: PYTHONPATH=src, and PyAV, SQLAlchemy and
#: faster-coco-eval unimportable (a meta-path hook refuses them).
WITHOUT = """
import importlib.abc, runpy, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("av", "sqlalchemy", "faster_coco_eval"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Refuse())
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_script(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ROBUSTLAB_PROGRESS_INTERVAL": "5"}
    return subprocess.run([sys.executable, "-c", WITHOUT, str(SCRIPT), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module
    spec.loader.exec_module(module)
    return module


def test_cpu_smoke_of_the_light_parts_without_av_sqlalchemy_or_coco(tmp_path):
    out = tmp_path / "record.json"
    proc = run_script("--device", "cpu", "--quick", "--parts", "torch_backend,torch_parity,nvjpeg", "--out", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["device"] == "cpu" and record["environment"]["torch"]
    parts = record["parts"]
    assert {p["status"] for p in parts.values()} == {"ok"}
    assert parts["torch_backend"]["images_per_s"]["fog"] > 0 and parts["torch_backend"]["speedup_vs_numpy"]
    assert parts["torch_parity"]["of"] == 5 and parts["nvjpeg"]["max_abs_diff"] == 0  # CPU: the same codec
    assert "[gpu_check" in proc.stdout and "torch_backend: fog:" in proc.stdout  # progress lines


@pytest.mark.slow
def test_cpu_smoke_of_every_part(tmp_path):
    """All parts, as the GPU run makes them (engine on-the-fly with a ResNet-50, finetune, stylize)."""
    out = tmp_path / "record.json"
    proc = run_script("--device", "cpu", "--quick", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads(out.read_text())
    assert [p for p, v in record["parts"].items() if v["status"] != "ok"] == []
    engine = record["parts"]["engine"]
    fp32 = engine["precisions"]["fp32"]
    assert {"clean", "released", "on_the_fly_torch", "on_the_fly_numpy"} <= set(fp32)
    assert all(fp32[k]["images_per_s"] > 0 and 0 < fp32[k]["fraction_of_model_alone"] for k in ("clean", "released"))
    assert engine["stages_ms_per_image"] and engine["host_memory_target_mib"] == 2048
    assert record["parts"]["finetune"]["images_per_s"]["paper-noise"] > 0
    assert record["parts"]["stylize"]["written"] == 1


def test_unknown_part_and_missing_cuda_are_clear_errors():
    proc = run_script("--parts", "warp", timeout=120)
    assert proc.returncode != 0 and "unknown part(s) warp" in proc.stderr
    gpu = load_script()
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="CUDA is not available"):
            gpu.measure("cuda", ["nvjpeg"], gpu.CAPS, quick=True)


def test_render_rewrites_marked_cells_and_says_pending_without_a_gpu_record(tmp_path):
    gpu = load_script()
    page = ("| harness | figure | target |\n|---|---|---|\n"
            "| on the fly | old text <!-- gpu-check:engine-on-the-fly --> | ≥ 80 % |\n"
            "| parity | x <!-- gpu-check:torch-parity --> | - |\n")
    pending = gpu.render_text(page, None)
    assert pending.count(gpu.PENDING) == 2 and "old text" not in pending
    assert gpu.render_text(pending, None) == pending  # idempotent
    cpu = {"device": "cpu", "environment": {}, "parts": {}}
    assert gpu.render_text(page, cpu).count(gpu.PENDING) == 2  # a CPU smoke run never fills GPU rows
    fly = {"fp32": {"on_the_fly_torch": {"fraction_of_model_alone": 0.91, "images_per_s": 6710.0}},
           "bf16": {"on_the_fly_torch": {"fraction_of_model_alone": 0.62, "images_per_s": 12345.0}}}
    record = {"device": "cuda", "environment": {"gpu": "NVIDIA H200"}, "parts": {
        "engine": {"status": "ok", "batch": 256, "precisions": fly},
        "torch_parity": {"status": "ok", "ok": 19, "of": 19, "draws": 32, "inconclusive": 0, "outside": 0,
                         "corruptions": {"fog": {"kind": "random", "worst": 0.031},
                                         "pixelate": {"kind": "deterministic", "worst": 0.4}}}}}
    done = gpu.render_text(page, record)
    assert ("| 91 % (fp32, 6,710 img/s) / 62 % (bf16, 12,345 img/s) of the model alone on NVIDIA H200, ResNet-50 at "
            "batch 256 <!-- gpu-check:engine-on-the-fly --> |") in done
    assert r"19 of 19 within bounds on NVIDIA H200 (deterministic mean \|diff\| ≤ 0.40; random strength gap ≤ 3.1 %" in done
    import re

    cells = [len(re.split(r"(?<!\\)\|", line)) for line in done.splitlines()]
    assert len(set(cells)) == 1  # every row keeps its 3 cells: pipes in the text are escaped
    assert gpu.render_text(done, record) == done  # idempotent
    path = tmp_path / "page.md"
    path.write_text(page)
    json_path = tmp_path / "rec.json"
    json_path.write_text(json.dumps(record))
    assert gpu.render_files(json_path, [path]) == [path] and path.read_text() == done


def test_every_marker_in_readme_and_docs_is_known():
    gpu = load_script()
    for path in gpu.default_targets():
        for key in gpu.MARKER.findall(path.read_text()):
            assert key in gpu.RENDERERS, (path, key)
