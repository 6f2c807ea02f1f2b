"""The Ray executor on a real local Ray cluster (started here with 2 CPUs; no mocks of Ray).

Each benchmark family of the demo world runs once with the local executor and once with
``--executor ray``; the stored per-sample columns must be identical. Fault tests kill a Ray
worker (the inference actor) mid-run, and the driver itself, and check the run completes with
the same columns.
"""

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

pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'robustlab[ray]')")

from robustlab.engine import evaluate  # noqa: E402
from robustlab.errors import InputError  # noqa: E402
from robustlab.store import open_store  # noqa: E402

from .local_cluster import LocalCluster  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.xdist_group("ray")]

TINY = Path(__file__).parent / "tiny_models.py"


@pytest.fixture(scope="module")
def ray_cluster():
    """A real Ray head with 2 CPUs on this machine (tests/engine/local_cluster.py), stopped at the end.

    Token authentication is off for this throwaway test cluster (RAY_AUTH_MODE=disabled on the
    head and every driver): Ray reads the mode when it is first imported, and a test process may
    have imported it before this fixture runs. docs/cluster.md says to use tokens on real clusters."""
    cluster = LocalCluster(token=None).start(head_cpus=2, workers=())
    saved = {k: os.environ.get(k) for k in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    os.environ.update({"RAY_ADDRESS": cluster.address, "RAY_AUTH_MODE": "disabled"})
    yield cluster.address
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    cluster.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Demo-world data for four families: scenes, an ImageNet-C copy of them, detection scenes."""
    from robustlab.corruptions.dataset import corrupt_dataset, make_settings
    from robustlab.demo.detection_scenes import make_detection_scenes, write_coco_scenes
    from robustlab.demo.world import scene_dataset, write_image_folder

    root = tmp_path_factory.mktemp("world")
    scenes = write_image_folder(scene_dataset("test", n=12, seed=0), root / "scenes")
    corrupt_dataset(scenes, root / "imagenet-c", make_settings("fog,gaussian_noise", "1,2", format="png"), workers=1)
    write_coco_scenes(make_detection_scenes("test", 4, seed=0), root / "detection")
    return {"scenes": scenes, "imagenet-c": root / "imagenet-c", "detection": root / "detection"}


CASES = {
    "imagenet-c": ("demo:cnn", "imagenet-c", {"class_map": "sorted", "severities": "1,2", "batch_size": 5}),
    "imagenet-c-on-the-fly": ("demo:cnn", "imagenet-c", {"on_the_fly": True, "corruption_backend": "torch",
                                                         "class_map": "sorted", "corruptions": "fog,contrast",
                                                         "severities": "1", "batch_size": 4}),
    "imagenet-p": ("demo:cnn", "perturbed", {"setting": "cifar", "limit": 3, "class_map": "sorted",
                                             "perturbations": "rotate,gaussian_noise", "batch_size": 2}),
    "detection": ("demo:detector", "detection-corrupted", {"corruptions": "fog,contrast", "severities": "1,3",
                                                           "batch_size": 3}),
    "adversarial": ("demo:cnn", "adversarial-auc", {"class_map": "sorted", "limit": 10, "batch_size": 4,
                                                    "eps": "0,0.05,0.1"}),
}


def stored(store: Path, run_id: str) -> dict:
    with open_store(store) as st:
        return st.read_predictions(run_id)


def assert_same_columns(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for unit in a:
        assert sorted(a[unit]) == sorted(b[unit]), unit
        for name in a[unit]:
            x, y = a[unit][name], b[unit][name]
            assert x.dtype == y.dtype and x.shape == y.shape, (unit, name)
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (unit, name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_ray_gives_the_local_executors_columns(case, world, ray_cluster, tmp_path):
    model, benchmark, options = CASES[case]
    data = world["scenes" if case in ("imagenet-p", "adversarial", "imagenet-c-on-the-fly") else case]
    local = evaluate(model, benchmark, data, store=tmp_path / "local", workers=1, progress=False, **options)
    remote = evaluate(model, benchmark, data, store=tmp_path / "ray", executor="ray", progress=False, **options)
    assert remote.executor == "ray" and remote.run_id == local.run_id
    assert remote.units_computed == local.units_computed > 0
    assert_same_columns(stored(tmp_path / "local", local.run_id), stored(tmp_path / "ray", remote.run_id))
    assert remote.metrics == local.metrics


def cli(*args: str, store: Path) -> list[str]:
    return [sys.executable, "-m", "robustlab.cli", "evaluate", *args, "--store", str(store), "--no-progress"]


SLOW = ["--model", f"python:{TINY}:make_slow_channel10", "--benchmark", "corrupted", "--corruptions", "fog,contrast",
        "--severities", "1-2", "--class-map", "sorted", "--batch-size", "2", "-O", "shard_size=4"]


def ray_processes(title: str) -> list[int]:
    """Pids of processes whose title (Ray sets it per task/actor) starts with ``title``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmdline.startswith(title):
                pids.append(int(entry))
    return pids


def units_stored(store: Path, run_id_prefix: str = "") -> int:
    if not (store / "catalog.db").exists():
        return 0
    with open_store(store) as st:
        runs = st.list_runs()
        return sum(st.get_run(r.id).n_units_done for r in runs)


def test_killing_a_ray_worker_mid_run_gives_identical_results(world, ray_cluster, tmp_path):
    reference = subprocess.run(cli(*SLOW, "--data", str(world["scenes"]), "--workers", "0", "--json",
                                   store=tmp_path / "local"), capture_output=True, text=True, timeout=600)
    assert reference.returncode == 0, reference.stderr
    job = subprocess.Popen(cli(*SLOW, "--data", str(world["scenes"]), "--executor", "ray", store=tmp_path / "ray"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.time() + 300
    while killed is None and time.time() < deadline and job.poll() is None:
        actors = ray_processes("ray::InferenceActor")
        if actors and units_stored(tmp_path / "ray") >= 1:
            os.kill(actors[0], signal.SIGKILL)  # mid-run: some units stored, others pending
            killed = actors[0]
        time.sleep(0.2)
    out, err = job.communicate(timeout=600)
    assert killed is not None, "the run ended before a worker could be killed"
    assert job.returncode == 0, err
    with open_store(tmp_path / "local") as st:
        run_id = st.list_runs()[0].id
    assert_same_columns(stored(tmp_path / "local", run_id), stored(tmp_path / "ray", run_id))


def test_killing_the_driver_then_rerunning_resumes_from_the_store(world, ray_cluster, tmp_path):
    args = cli(*SLOW, "--data", str(world["scenes"]), "--executor", "ray", store=tmp_path / "ray")
    job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 300
    while units_stored(tmp_path / "ray") < 2 and time.time() < deadline and job.poll() is None:
        time.sleep(0.2)
    assert job.poll() is None, "the run ended before the driver could be killed"
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    with open_store(tmp_path / "ray") as st:  # no live process holds it: not "running" forever
        assert [r.status for r in st.list_runs()] == ["interrupted"]
    done_before = units_stored(tmp_path / "ray")
    rerun = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    import json

    result = json.loads(rerun.stdout)
    assert result["status"] == "complete" and result["units_computed"] == result["units_total"] - done_before
    local = evaluate(f"python:{TINY}:make_slow_channel10", "corrupted", world["scenes"], store=tmp_path / "local",
                     corruptions="fog,contrast", severities="1-2", class_map="sorted", batch_size=2, shard_size=4,
                     workers=0, progress=False)
    assert local.run_id == result["run_id"]
    assert_same_columns(stored(tmp_path / "local", local.run_id), stored(tmp_path / "ray", local.run_id))


def test_a_model_that_cannot_reach_the_actors_suggests_a_factory_spec(world, ray_cluster, tmp_path):
    import threading

    import torch

    class Locked(torch.nn.Module):  # a lock cannot be pickled
        def __init__(self):
            super().__init__()
            self.lock = threading.Lock()
            self.linear = torch.nn.Linear(3, 10)

        def forward(self, x):
            return self.linear(x.mean(dim=(2, 3)))

    with pytest.raises(InputError, match="python:"):
        evaluate(Locked(), "corrupted", world["scenes"], store=tmp_path / "s", executor="ray",
                 corruptions="fog", severities="1", class_map="sorted", progress=False)


SCRIPT = '''
import json, sys
import numpy as np
import torch
from robustlab.engine import evaluate
from robustlab.store import open_store


class ScriptNet(torch.nn.Module):  # defined in __main__: the way a script or a notebook writes a model
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(3, 10)

    def forward(self, x):
        return self.linear(x.mean(dim=(2, 3)))


if __name__ == "__main__":  # loading workers import this file again (as any multiprocessing script)
    net = ScriptNet()
    columns = {}
    for executor in ("local", "ray"):
        result = evaluate(net, "corrupted", sys.argv[1], store=sys.argv[2] + "-" + executor, executor=executor,
                          corruptions="fog", severities="1", class_map="sorted", progress=False)
        with open_store(sys.argv[2] + "-" + executor) as st:
            columns[executor] = st.read_predictions(result.run_id)
    same = all(np.array_equal(columns["local"][u][c], columns["ray"][u][c]) for u in columns["local"]
               for c in columns["local"][u])
    print(json.dumps({"units": len(columns["ray"]), "same": same and columns["local"].keys() == columns["ray"].keys()}))
'''


def test_a_model_defined_in_the_user_s_script_runs_on_ray(world, ray_cluster, tmp_path):
    """A model object whose class lives in the driver's __main__ was refused by every actor ("the
    model built here is not the model this run is keyed by"): its code identity named the file the
    process runs as __main__, Ray's worker in an actor (fails on the old code)."""
    script = tmp_path / "user_script.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, str(script), str(world["scenes"]), str(tmp_path / "store")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"units": result["units"], "same": True} and result["units"] >= 2
