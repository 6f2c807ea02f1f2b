"""Drivers on one store share a run's units (claims in the catalog), wait for each other's units,
take over a dead driver's, and leave a run's state true (running / interrupted / failed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from robustlab.engine import evaluate
from robustlab.errors import ModelError
from robustlab.store import open_store

from .tiny_models import ChannelModel

TINY = Path(__file__).parent / "tiny_models.py"
SRC = Path(__file__).resolve().parents[2] / "src"
OPTIONS = dict(corruptions="fog,contrast", severities="1-2", class_map="sorted", batch_size=2, shard_size=3)


def test_a_driver_waits_for_a_unit_another_holds_then_takes_it_over(labelled_root, tmp_path):
    store_path = tmp_path / "s"
    reference = evaluate(ChannelModel(3), "corrupted", labelled_root, store=tmp_path / "ref", workers=0,
                         progress=False, **OPTIONS)
    with open_store(store_path) as store:  # another driver registered the run and claimed its first unit
        run_id = store.register_run(*_identity(tmp_path / "ref", reference.run_id))
        other = store.open_holder(run_id, ttl=60)
        first = min(reference_units(tmp_path / "ref", reference.run_id))
        assert store.claim_unit(run_id, first, other)[0] == "claimed"
        threading.Timer(1.5, store.close_holder, args=(other,)).start()  # ... then it stops
        result = evaluate(ChannelModel(3), "corrupted", labelled_root, store=store, workers=0, progress=False,
                          **OPTIONS)
    assert result.run_id == run_id and result.units_computed == result.units_total == reference.units_total
    waiting = [e for e in result.events if e["kind"] == "waiting"]
    assert waiting and f"pid {os.getpid()}" in waiting[0]["message"] and waiting[0]["units"] == 1
    assert result.metrics == reference.metrics


def _identity(store_path, run_id):
    with open_store(store_path) as store:
        record = store.get_run(run_id)
    return record.model, record.benchmark, record.dataset, record.config, record.model_spec


def reference_units(store_path, run_id):
    with open_store(store_path) as store:
        return store.completed_units(run_id)


class _FailsAfter(ChannelModel):
    def __init__(self, batches: int) -> None:
        super().__init__(3)
        self.left = batches

    def forward(self, x):
        self.left -= 1
        if self.left < 0:
            raise RuntimeError("out of cheese")
        return super().forward(x)


def test_a_run_stopped_by_an_error_reads_failed_and_holds_nothing(labelled_root, tmp_path):
    with pytest.raises(ModelError, match="out of cheese"):
        evaluate(_FailsAfter(3), "corrupted", labelled_root, store=tmp_path / "s", workers=0, progress=False,
                 **OPTIONS)
    with open_store(tmp_path / "s") as store:
        (run,) = store.list_runs()
        assert run.status == "failed" and run.n_units_done == 1 and not store.holders()


def driver(data: Path, store: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "robustlab.cli", "evaluate", "--model", f"python:{TINY}:make_slow_channel3",
            "--benchmark", "corrupted", "--data", str(data), "--store", str(store), "--corruptions", "fog,contrast",
            "--severities", "1-2", "--class-map", "sorted", "--batch-size", "2", "-O", "shard_size=3",
            "--workers", "0", "--no-progress", "--json", *extra]


@pytest.mark.slow
def test_two_drivers_on_one_store_share_the_units(labelled_root, tmp_path):
    """Two drivers on one store each computed every unit (fails on the old code)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    jobs = [subprocess.Popen(driver(labelled_root, tmp_path / "s"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env) for _ in range(2)]
    results = []
    for job in jobs:
        out, err = job.communicate(timeout=600)
        assert job.returncode == 0, err
        results.append(json.loads(out))
    assert results[0]["run_id"] == results[1]["run_id"] and {r["status"] for r in results} == {"complete"}
    computed = [r["units_computed"] for r in results]
    assert sum(computed) == results[0]["units_total"] == 15 and min(computed) >= 1, computed  # 5 settings x 3 shards
    reference = evaluate(f"python:{TINY}:make_slow_channel3", "corrupted", labelled_root, store=tmp_path / "ref",
                         workers=0, progress=False, **OPTIONS)
    assert reference.run_id == results[0]["run_id"] and reference.metrics == [
        (m["name"], m["setting"], m["value"]) for m in results[0]["metrics"]]
    with open_store(tmp_path / "s") as shared, open_store(tmp_path / "ref") as alone:
        got, want = shared.read_predictions(reference.run_id), alone.read_predictions(reference.run_id)
        assert got.keys() == want.keys() and not shared.holders()
        for unit in want:
            for column in want[unit]:
                np.testing.assert_array_equal(got[unit][column], want[unit][column])


@pytest.mark.slow
def test_a_killed_drivers_run_reads_interrupted_and_its_units_are_taken_over(labelled_root, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    store = tmp_path / "s"
    job = subprocess.Popen(driver(labelled_root, store), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 300
    done = 0
    while done < 2 and time.time() < deadline and job.poll() is None:
        time.sleep(0.2)
        if (store / "catalog.db").exists():
            with open_store(store) as st:
                runs = st.list_runs()
                done = runs[0].n_units_done if runs else 0
                if runs:  # registered (pending) a moment before the driver marks it running
                    assert runs[0].status in ("pending", "running")
    job.kill()
    job.wait()
    with open_store(store) as st:
        (run,) = st.list_runs()
        assert run.status == "interrupted"  # no live process holds it: at once, not after the lease expires
    rerun = subprocess.run(driver(labelled_root, store), capture_output=True, text=True, env=env, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    result = json.loads(rerun.stdout)
    assert result["status"] == "complete" and result["units_computed"] == 15 - run.n_units_done
