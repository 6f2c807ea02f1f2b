"""`robustlab evaluate / runs / show` (JSON output) and resuming after a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from .conftest import TINY_MODELS, make_imagenet_c
from tiny_models import ChannelModel
from typer.testing import CliRunner

from robustlab.cli import app, main
from robustlab.engine import evaluate
from robustlab.store import open_store

runner = CliRunner()


def _invoke(*args: str) -> dict | list:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_cli_evaluate_runs_show_json(imagenet_c_root, tmp_path):
    store = str(tmp_path / "store")
    out = _invoke("evaluate", "--model", f"python:{TINY_MODELS}:make_channel1000", "--benchmark", "imagenet-c",
                  "--data", str(imagenet_c_root), "--corruptions", "fog", "--severities", "1-5", "--store", store,
                  "--workers", "0", "--batch-size", "8", "--json")
    assert out["status"] == "complete" and out["units_computed"] == 5
    errors = {m["setting"]: m["value"] for m in out["metrics"] if m["name"] == "error"}
    assert set(errors) == {f"fog/{s}" for s in range(1, 6)}
    assert out["summary"]["corruptions"]["fog"]["ce"] is not None
    runs = _invoke("runs", "--store", store, "--json")
    assert [r["run_id"] for r in runs] == [out["run_id"]] and runs[0]["units_done"] == 5
    shown = _invoke("show", out["run_id"][:5], "--store", store, "--json")
    assert shown["metrics"] == out["metrics"] and shown["summary"] == out["summary"]
    text = runner.invoke(app, ["show", out["run_id"], "--store", store]).stdout
    assert "fog" in text and "mCE (subset)" in text and "relative mCE unavailable" in text


def test_cli_errors_are_one_clear_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["robustlab", "evaluate", "--model", "torchvision:resnet18:none",
                                      "--benchmark", "imagenet-d", "--data", str(tmp_path), "--store", str(tmp_path)])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 1  # an input error (2 is for unparseable command lines)
    assert "unknown benchmark 'imagenet-d'" in capsys.readouterr().err


class _InterruptAfter(ChannelModel):
    """Raises KeyboardInterrupt (a user's Ctrl-C) in the middle of the run."""

    def __init__(self, batches: int) -> None:
        super().__init__(1000)
        self.left = batches

    def forward(self, x):
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return super().forward(x)


def test_interrupted_run_resumes_to_the_uninterrupted_result(imagenet_c_root, tmp_path):
    kwargs = dict(workers=0, progress=False, batch_size=5)
    reference = evaluate(ChannelModel(), "imagenet-c", imagenet_c_root, store=tmp_path / "ref", **kwargs)
    interrupted = _InterruptAfter(7)  # 3 batches per unit: dies inside the third unit
    with pytest.raises(KeyboardInterrupt):
        evaluate(interrupted, "imagenet-c", imagenet_c_root, store=tmp_path / "s", **kwargs)
    with open_store(tmp_path / "s") as store:
        (run,) = store.list_runs()
        assert run.n_units_done == 2 and run.status == "interrupted"  # Ctrl-C is no failure
    interrupted.left = 10**6
    resumed = evaluate(interrupted, "imagenet-c", imagenet_c_root, store=tmp_path / "s", **kwargs)
    assert resumed.run_id == run.id and resumed.units_computed == 8
    assert resumed.metrics == reference.metrics


def _all_predictions(store_path, run_id):
    with open_store(store_path) as store:
        return store.read_predictions(run_id)


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path):
    data = make_imagenet_c(tmp_path / "ic", per_class=2)
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "robustlab.cli", "evaluate", "--model", f"python:{TINY_MODELS}:make_slow_channel1000",
           "--benchmark", "imagenet-c", "--data", str(data), "--store", str(store), "--workers", "1",
           "--batch-size", "2", "--no-progress", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 120
    done = 0
    try:
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.3)
            if (store / "catalog.db").exists() or any(store.glob("*.db")):
                try:
                    with open_store(store) as s:
                        runs = s.list_runs()
                        done = runs[0].n_units_done if runs else 0
                except Exception:  # catalog being created: try again
                    continue
                if done >= 2:
                    break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert 2 <= done < 10
    with open_store(store) as s:
        (run,) = s.list_runs()
        # stored as running, read as interrupted: no live process holds it any more
        assert run.status == "interrupted" and run.n_units_done < 10
    finished = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    resumed = json.loads(finished.stdout)
    assert resumed["run_id"] == run.id and 0 < resumed["units_computed"] < 10

    reference = evaluate(ChannelModel(), "imagenet-c", data, store=tmp_path / "ref", workers=0, progress=False,
                         batch_size=2)
    got, want = _all_predictions(store, run.id), _all_predictions(tmp_path / "ref", reference.run_id)
    assert got.keys() == want.keys() and len(got) == 10
    for unit in want:
        for column in want[unit]:
            np.testing.assert_array_equal(got[unit][column], want[unit][column])
    assert [(m["name"], m["setting"], m["value"]) for m in resumed["metrics"]] == [
        (n, s, v) for n, s, v in reference.metrics]
