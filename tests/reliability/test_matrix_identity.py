"""A run is keyed by the model's content, not its spec: a changed model is a new run, and two
different models never share a run id (the three failures of the red-team's report, and the
general rule behind them)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .helpers import MODELS, assert_error, assert_ok, image_folder, run, run_process

EVALUATE_ARGS = ["--benchmark", "corrupted", "-c", "brightness", "-s", "1", "--workers", "0", "--no-progress",
                 "--json"]


def evaluate(model: str, data: Path, store: Path, *extra: str, process: bool = False) -> dict:
    argv = ["evaluate", "--model", model, "--data", data, "--store", store, *EVALUATE_ARGS, *extra]
    result = run_process(*argv) if process else run(*argv)
    assert_ok(result)
    return json.loads(result.out)


def error(out: dict) -> float:
    return next(m["value"] for m in out["metrics"] if m["name"] == "error" and m["setting"] == "brightness/1")


FACTORY = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("reliability_models", {models!r})
models = importlib.util.module_from_spec(spec); spec.loader.exec_module(models)

def make():
    net = models.make_two_class()
    {edit}
    return net
"""


def test_an_edited_factory_file_is_a_new_run(tmp_path):
    """Editing ``m.py`` so that ``make()`` returns another model gives a new run with the new
    model's numbers, never the stored run of the old one (in the same process too)."""
    data = image_folder(tmp_path / "data", per_class=3)
    factory = tmp_path / "m.py"
    factory.write_text(FACTORY.format(models=str(MODELS), edit="pass"))
    store = tmp_path / "store"
    first = evaluate(f"python:{factory}:make", data, store, "--resize", "32", "--crop", "32")
    factory.write_text(FACTORY.format(models=str(MODELS), edit="net.scale.data.fill_(-10.0)  # the wrong sign"))
    second = evaluate(f"python:{factory}:make", data, store, "--resize", "32", "--crop", "32")
    assert second["run_id"] != first["run_id"] and second["units_computed"] > 0
    assert second["model_hash"] != first["model_hash"]
    assert error(first) < 0.5 < error(second)  # the flipped model is wrong where the first is right
    again = evaluate(f"python:{factory}:make", data, store, "--resize", "32", "--crop", "32")
    assert again["run_id"] == second["run_id"] and again["units_computed"] == 0


def test_an_edited_local_module_is_a_new_run(tmp_path):
    """The factory's own file is unchanged; a local module it imports defines the model and
    changes: a new run (checked in fresh processes, as the command line runs)."""
    data = image_folder(tmp_path / "data", per_class=3)
    (tmp_path / "net_def.py").write_text("import torch\nSIGN = 1.0\n")
    factory = tmp_path / "m.py"
    factory.write_text("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nimport net_def\n"
                       "import torch\n\nclass Net(torch.nn.Module):\n"
                       "    def forward(self, x):\n        return net_def.SIGN * x.mean(dim=(2, 3))[:, :2]\n\n"
                       "def make():\n    return Net()\n")
    store = tmp_path / "store"
    first = evaluate(f"python:{factory}:make", data, store, "--resize", "32", "--crop", "32", process=True)
    (tmp_path / "net_def.py").write_text("import torch\nSIGN = -1.0\n")
    second = evaluate(f"python:{factory}:make", data, store, "--resize", "32", "--crop", "32", process=True)
    assert second["run_id"] != first["run_id"] and second["units_computed"] > 0
    assert error(first) < 0.5 < error(second)


def finetune(out: Path, data: Path, *, lr: str, cwd: Path | None = None) -> None:
    assert_ok(run("finetune", "--model", f"python:{MODELS}:make_mean_colour", "--data", data, "--out", out,
                  "--epochs", "1", "--batch-size", "2", "--lr", lr, "--workers", "0", "--device", "cpu",
                  "--class-map", "sorted", "--crop", "center", "--no-progress"))


def test_a_retrained_finetuned_folder_is_a_new_run(tmp_path, monkeypatch):
    """Retraining ``finetuned:ft`` into the same folder: the new weights' numbers, not the old run."""
    data = image_folder(tmp_path / "data", per_class=3)
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    finetune(Path("ft"), data, lr="0.001")
    first = evaluate("finetuned:ft", data, store, "--class-map", "sorted")
    shutil.rmtree("ft")
    finetune(Path("ft"), data, lr="5.0")
    second = evaluate("finetuned:ft", data, store, "--class-map", "sorted")
    assert second["run_id"] != first["run_id"] and second["units_computed"] > 0
    assert second["model_hash"] != first["model_hash"]


def test_the_same_relative_folder_in_two_directories_is_two_models(tmp_path, monkeypatch):
    """``finetuned:ft`` run from two directories names two folders: two runs, whatever their content."""
    data = image_folder(tmp_path / "data", per_class=2)
    store = tmp_path / "store"
    ids = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        finetune(Path("ft"), data, lr="0.001")
        out = evaluate("finetuned:ft", data, store, "--class-map", "sorted")
        assert out["model"].startswith(f"finetuned:{tmp_path / name / 'ft'}")
        ids.append(out["run_id"])
    assert ids[0] != ids[1]


def test_show_prints_the_model_hash(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    out = evaluate(f"python:{MODELS}:make_two_class", data, tmp_path / "store", "--resize", "32", "--crop", "32")
    shown = run("show", out["run_id"], "--store", tmp_path / "store")
    assert_ok(shown)
    assert f"model hash {out['model_hash']}" in shown.out and len(out["model_hash"]) == 16


# --- data identity: the fingerprint asked for is the one checked ------------------------------------


def test_a_stricter_fingerprint_asked_on_a_rerun_is_honoured_or_refused(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    store = tmp_path / "store"
    model = f"python:{MODELS}:make_two_class"
    first = evaluate(model, data, store, "--resize", "32", "--crop", "32")  # stored with stat
    argv = ["evaluate", "--model", model, "--data", data, "--store", store, *EVALUATE_ARGS, "--resize", "32",
            "--crop", "32", "--fingerprint", "content"]
    assert_error(run(*argv), "--fingerprint content", "by stat", "--fingerprint stat", "--tag")
    tagged = evaluate(model, data, store, "--resize", "32", "--crop", "32", "--fingerprint", "content", "--tag", "c")
    assert tagged["run_id"] != first["run_id"] and tagged["units_computed"] > 0
    # a run stored with content hashes is checked by content even when stat is asked: a file
    # replaced with the same size and modification time is seen
    target = data / "cat" / "0.png"
    stat = target.stat()
    payload = bytearray(target.read_bytes())
    payload[len(payload) // 2] ^= 0xFF  # other bytes, the same size
    target.write_bytes(bytes(payload))
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert_error(run(*argv[:-2], "--tag", "c"), "changed")
