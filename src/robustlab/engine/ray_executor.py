"""The ``ray`` executor: the same run on a Ray cluster (``--executor ray``).

``pip install "robustlab[ray]"``. The driver (the process that runs ``robustlab evaluate``)
connects to ``RAY_ADDRESS`` (or ``--ray-address``) when set, else starts a local Ray. It walks
the run's units lazily, as the local executor does, and for every batch submits two pieces of
work:

1. a **Ray task** that loads the batch (read, decode, corrupt, resize: the benchmark's loader,
   one CPU each; the unit's sample set travels once per unit through the object store);
2. a call to an **inference actor** that loaded the model once (``num_gpus=1`` per actor when
   the cluster has GPUs, else one CPU) and returns the batch's prediction columns.

The driver alone writes to the store: each unit's columns are committed once, atomically, under
its unit key, after every one of its batches is in. Batch results are keyed by their position
in the unit, so a task Ray retries (its worker died) fills the same slot once, and the store
refuses a second commit of a unit (``write_unit(..., replace=False)``): a retried task or a
resumed run never writes a unit twice and never mixes two attempts. Workers never touch the
store: on a cluster the store may be local to the driver (or PostgreSQL), and the data must be
readable at the same path from every node (a shared filesystem).

Failure handling: load tasks are retried by Ray when their worker dies; actors restart (loading
the model again) and retry their pending calls; a killed driver loses only the units in
flight, and running the same command again resumes from the store.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from typing import Any
from urllib.parse import urlparse

from ..errors import InputError, RobustlabError
from .benchmark import Benchmark
from .executor import EXECUTORS, ExecutionStats, Executor, ImagePreparer, ModelRef, UnitLedger, batch_tasks, \
    check_batch_size
from .progress import run_progress
from .work import UnitStream, load_batch, predict_batch, raise_batch_error, raise_recorded

#: Seconds to wait for a Ray head's port before giving up on an address.
CONNECT_TIMEOUT = 10.0
#: Batches in flight per load slot and per actor (keeps every worker busy, bounds memory).
INFLIGHT_PER_SLOT = 2


def require_ray():
    """The ``ray`` module, or InputError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError('the ray executor needs Ray, which is not installed: pip install "robustlab[ray]" '
                         "(or use --executor local).") from None
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast (within ``timeout`` seconds) when a Ray address's host and port do not answer."""
    if address in ("auto", "local") or not address:
        return
    parsed = urlparse(address if "://" in address else f"ray://{address}")
    host, port = parsed.hostname, parsed.port or 6379
    if not host:
        raise InputError(f"Ray address {address!r} is not host:port (e.g. 10.0.0.5:6379 or ray://head:10001).")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise InputError(f"cannot reach the Ray cluster at {address} ({exc}); check RAY_ADDRESS / --ray-address, and "
                         "that the head node runs (`ray start --head`). Nothing was computed.") from None


class InferenceActor:
    """Loads the model once; turns loaded batches into prediction columns."""

    def __init__(self, model: ModelRef, benchmark: Benchmark, config: dict, threads: int | None = None) -> None:
        import ray
        import torch

        if threads:  # the driver's intra-op threads: CPU results then match the local executor's bit for bit
            torch.set_num_threads(threads)
        self.benchmark, self.config = benchmark, config
        self.error: tuple[str, str] | None = None
        try:
            self.model = model.load(device="cuda" if ray.get_gpu_ids() else "cpu")
        except RobustlabError as exc:
            self.model, self.error = None, (type(exc).__name__, str(exc))

    def preparer(self) -> tuple[ImagePreparer | None, tuple[str, str] | None]:
        return (None if self.model is None else ImagePreparer.of(self.model)), self.error

    def predict(self, batch):
        if batch.error is not None or not len(batch):
            batch.pixels = None
            return batch, None
        try:
            columns = predict_batch(self.benchmark, self.model, batch, self.config)
        except RobustlabError as exc:
            batch.error = (type(exc).__name__, str(exc))
            columns = None
        batch.pixels = None  # the driver needs the ids, labels and problems, not the pixels
        return batch, columns


def load_remote(benchmark: Benchmark, source: Any, unit: str, start: int, stop: int, prepare: ImagePreparer):
    """Ray task body: load one batch (see :func:`robustlab.engine.work.load_batch`)."""
    from .work import BatchTask

    return load_batch(benchmark, BatchTask(unit, source, start, stop), prepare)


class RayExecutor(Executor):
    """Run a benchmark on Ray (see the module docstring).

    Parameters
    ----------
    address : str, optional
        The cluster (``host:port`` or ``ray://host:10001``); default ``RAY_ADDRESS``, else a
        local Ray started for the run (and stopped after it).
    workers : int, optional
        Load tasks in flight at once (default: the cluster's CPUs not used by actors).
    actors : int, optional
        Inference actors (default: one per GPU, else one).
    threads : int, optional
        Torch threads per CPU actor (default: this process's ``torch.get_num_threads()``, so a
        CPU model's outputs are bit-identical with the local executor's on the same hardware;
        a floating-point sum's order depends on the thread count).
    """

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, actors: int | None = None,
                 threads: int | None = None) -> None:
        self.ray = require_ray()
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        if self.address:
            check_reachable(self.address)
        for name, value in (("workers", workers), ("actors", actors)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"{name} of the ray executor must be a positive integer; got {value!r}.")
        self.workers, self.actors, self.threads = workers, actors, threads

    def _connect(self) -> bool:
        """Connect (or start a local Ray); True when this call started it."""
        ray = self.ray
        if ray.is_initialized():
            return False
        kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False, "include_dashboard": False,
                                  "configure_logging": False}
        try:
            # "local" starts a new Ray even when a stale /tmp/ray/ray_current_cluster names another
            ray.init(address=self.address or "local", **kwargs)
        except (ConnectionError, RuntimeError, TimeoutError) as exc:
            raise InputError(f"cannot start or join Ray ({'at ' + self.address if self.address else 'locally'}): "
                             f"{exc}") from None
        return True

    def run(self, model: ModelRef, benchmark: Benchmark, config: dict, stream: UnitStream, store, run_id: str, *,
            batch_size: int = 64, progress: str | bool | None = None, description: str = "evaluating") -> ExecutionStats:
        batch_size = check_batch_size(batch_size)
        ray = self.ray
        started = self._connect()
        try:
            return self._run(ray, model, benchmark, config, stream, store, run_id, batch_size, progress, description)
        finally:
            if started:
                ray.shutdown()

    def _run(self, ray, model, benchmark, config, stream, store, run_id, batch_size, progress, description):
        import torch

        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        n_actors = self.actors or max(1, gpus)
        slots = self.workers or max(1, int(resources.get("CPU", 1)) - (0 if gpus else n_actors))
        try:
            ray.cloudpickle.dumps(model)
        except Exception as exc:  # cloudpickle could not serialise the user's object
            raise InputError(f"the model {getattr(model.model, '__class__', type(model)).__name__} cannot be sent to "
                             f"Ray actors ({type(exc).__name__}: {exc}); give a model spec they can load themselves, "
                             "e.g. python:my_models.py:build (a module-level factory), torchvision:NAME or onnx:PATH.") \
                from None
        actor_cls = ray.remote(InferenceActor).options(num_cpus=0 if gpus else 1, num_gpus=1 if gpus else 0,
                                                        max_restarts=3, max_task_retries=3)
        threads = self.threads if self.threads is not None else (None if gpus else torch.get_num_threads())
        actors = [actor_cls.remote(model, benchmark, config, threads) for _ in range(n_actors)]
        prepare, error = ray.get(actors[0].preparer.remote())
        if error is not None:
            raise_recorded(error)
        prepare = dataclasses.replace(prepare, max_pixels=config.get("max_pixels"))
        load = ray.remote(load_remote).options(num_cpus=1, max_retries=3)
        bench_ref, prepare_ref = ray.put(benchmark), ray.put(prepare)
        stats = ExecutionStats()
        start = time.perf_counter()
        limit = INFLIGHT_PER_SLOT * (slots + n_actors)
        with run_progress(description, progress) as bar:
            ledger = UnitLedger(store, run_id, batch_size, bar, stats)
            tasks = batch_tasks(stream, ledger, batch_size, share=lambda work: ray.put(work.source))
            inflight: list = []
            turn = 0
            exhausted = False
            while True:
                while not exhausted and len(inflight) < limit:
                    task = next(tasks, None)
                    if task is None:
                        exhausted = True
                        break
                    loaded = load.remote(bench_ref, task.source, task.unit, task.start, task.stop, prepare_ref)
                    inflight.append(actors[turn % n_actors].predict.remote(loaded))
                    turn += 1
                if not inflight:
                    break
                done, inflight = ray.wait(inflight, num_returns=1)
                batch, columns = ray.get(done[0])
                raise_batch_error(batch)
                if stats.first_batch_seconds is None:
                    stats.first_batch_seconds = time.perf_counter() - start
                ledger.record(batch, columns)
        stats.seconds = time.perf_counter() - start
        return stats


EXECUTORS.add(RayExecutor.name, RayExecutor)
