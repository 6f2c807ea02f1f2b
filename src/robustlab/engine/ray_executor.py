"""The ``ray`` executor: the same run on a Ray cluster (``--executor ray``).

``pip install "robustlab[ray]"``. The driver (the process that runs ``robustlab evaluate``)
connects to ``RAY_ADDRESS`` (or ``--ray-address``: ``host:port`` of the head's GCS, or
``ray://host:10001`` for Ray Client) when set, else starts a local Ray. Before anything runs it
checks the address (:mod:`robustlab.engine.ray_connect`: what answered, and the token) and that the
cluster can run the plan (:mod:`robustlab.engine.ray_cluster`: inference actors plus at least one
load slot). It walks the run's units lazily, as the local executor does, and for every batch
submits two pieces of work:

1. a **Ray task** that loads the batch (read, decode, corrupt, resize: the benchmark's loader,
   one CPU each; the unit's sample set travels once per unit through the object store);
2. a call to one of the **inference actors** (``--actors N|auto``; ``num_gpus=1`` each on a GPU
   cluster, else one CPU; spread over the nodes) that loaded the model once; each batch goes to
   the actor with the fewest batches in flight. It returns the batch's prediction columns.

The driver alone writes to the store: each unit's columns are committed once, atomically, under
its unit key, after every one of its batches is in. Batch results are keyed by their position
in the unit, so a task Ray retries (its worker died) fills the same slot once, and the store
refuses a second commit of a unit (``write_unit(..., replace=False)``): a retried task or a
resumed run never writes a unit twice and never mixes two attempts. Workers never touch the
store: on a cluster the store may be local to the driver (or PostgreSQL), and the data must be
readable at the same path from every node (a shared filesystem).

Failure handling: load tasks are retried by Ray when their worker dies; actors restart (loading
the model again, on another node when theirs is gone) and retry their pending calls; a batch
whose task or actor was lost for good is submitted again (to another actor). A watchdog
(:mod:`robustlab.engine.watchdog`) reports within 30 s when no batch finishes (the pending
resource demands, what is available, lost nodes) and fails the run after ``--stall-timeout``
seconds, with every finished unit stored. A killed driver loses only the units in flight, and
running the same command again resumes from the store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import time
from typing import Any

from ..errors import InputError, RobustlabError
from .benchmark import Benchmark
from .config import RunConfig
from .events import EventLog
from .executor import (
    ExecutionStats,
    Executor,
    ImagePreparer,
    ModelRef,
    UnitLedger,
    batch_tasks,
    check_batch_size,
    register_executor,
)
from .options import parse_actors
from .progress import run_progress
from .options.schema import Option
from .ray_cluster import (
    ACTOR_NAMESPACE,
    ACTOR_PREFIX,
    ActorPlan,
    describe_demands,
    plan_actors,
    snapshot,
)
from .ray_connect import CONNECT_TIMEOUT, RayAddress, client_start_failed, init_options, probe_address
from .watchdog import STALL_TIMEOUT, Watchdog, check_stall_timeout
from .runtime import RunOptions
from .work import UnitStream, load_batch, predict_batch, raise_batch_error, raise_recorded

#: Batches in flight per load slot and per actor (keeps every worker busy, bounds memory).
INFLIGHT_PER_SLOT = 2
#: Times a batch is submitted again after its task or actor was lost for good.
RESUBMITS = 3
#: Seconds to wait for other runs' actors to go before refusing a plan they keep from fitting.
PLAN_PATIENCE = 15.0
#: Times a Ray Client connection is tried when the head's proxy fails to start the client's server.
CLIENT_TRIES = 3
#: Seconds between two looks at the cluster's nodes (to report a lost one).
NODE_CHECK_EVERY = 5.0

def require_ray():
    """The ``ray`` module, or InputError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError('the ray executor needs Ray, which is not installed: pip install "robustlab[ray]" '
                         "(or use --executor local).") from None
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> RayAddress | None:
    """Check that a Ray address is a Ray cluster that accepts this driver (within ``timeout``
    seconds; see :func:`robustlab.engine.ray_connect.probe_address`); None for ``auto``/``local``."""
    if address in ("auto", "local") or not address:
        return None
    return probe_address(address, timeout)


class InferenceActor:
    """Loads the model once; turns loaded batches into prediction columns."""

    def __init__(self, model: ModelRef, benchmark: Benchmark, config: RunConfig, threads: int | None = None) -> None:
        import ray
        import torch

        if threads:  # the driver's intra-op threads: CPU results then match the local executor's bit for bit
            torch.set_num_threads(threads)
        self.benchmark, self.config = benchmark, config
        self.error: tuple[str, str] | None = None
        try:
            self.model = RunOptions.from_config(config).prepare_model(model.load(device="cuda" if ray.get_gpu_ids()
                                                                                 else "cpu"))
        except RobustlabError as exc:
            self.model, self.error = None, (type(exc).__name__, str(exc))

    def preparer(self) -> tuple[ImagePreparer | None, tuple[str, str] | None]:
        return (None if self.model is None else ImagePreparer.of(self.model)), self.error

    def predict(self, batch):
        """``(batch without pixels, prediction columns or None, id of the node that ran it)``."""
        import ray

        node = ray.get_runtime_context().get_node_id()
        if batch.error is not None or not len(batch):
            batch.pixels = None
            return batch, None, node
        try:
            columns = predict_batch(self.benchmark, self.model, batch, self.config)
        except RobustlabError as exc:
            batch.error = (type(exc).__name__, str(exc))
            columns = None
        batch.pixels = None  # the driver needs the ids, labels and problems, not the pixels
        return batch, columns, node


def load_remote(benchmark: Benchmark, source: Any, unit: str, start: int, stop: int, prepare: ImagePreparer):
    """Ray task body: load one batch (see :func:`robustlab.engine.work.load_batch`)."""
    from .work import BatchTask

    return load_batch(benchmark, BatchTask(unit, source, start, stop), prepare)


@register_executor
class RayExecutor(Executor):
    """Run a benchmark on Ray (see the module docstring).

    Parameters
    ----------
    ray_address : str, optional
        The cluster (``host:port`` or ``ray://host:10001``); default ``RAY_ADDRESS``, else a
        local Ray started for the run (and stopped after it).
    workers : int, optional
        Load tasks in flight at once (default: the cluster's CPUs not used by actors).
    actors : int or ``"auto"``, optional
        Inference actors (default ``auto``: one per GPU, else one per node with at least 2 CPUs,
        shrunk to fit; see :func:`robustlab.engine.ray_cluster.plan_actors`).
    threads : int, optional
        Torch threads per CPU actor (default: this process's ``torch.get_num_threads()``, so a
        CPU model's outputs are bit-identical with the local executor's on the same hardware;
        a floating-point sum's order depends on the thread count).
    stall_timeout : float, optional
        Seconds without a finished batch before the run fails (default
        :data:`robustlab.engine.watchdog.STALL_TIMEOUT`); stalls are reported after 15 s.
    """

    name = "ray"
    options = (
        Option("ray_address", "str", help="The Ray cluster: the head's host:port, or ray://host:10001 (default "
               "$RAY_ADDRESS, else a local Ray)."),
        Option("workers", "int", help="Load tasks in flight at once (default: the cluster's CPUs not used by actors).",
               flags=("-j",)),
        Option("actors", "value", help="Inference actors, N or auto (one per GPU, else one per node with 2+ CPUs); "
               "batches are spread over them (default auto).", check=lambda v: parse_actors(str(v))),
        Option("stall_timeout", "float", help="Seconds without a finished batch before the run fails (finished "
               "units stay stored); stalls are reported after 15 s (default 300)."),
    )

    def __init__(self, ray_address: str | None = None, workers: int | None = None, actors: int | str | None = None,
                 threads: int | None = None, stall_timeout: float | None = None) -> None:
        self.ray = require_ray()
        self.address = ray_address or os.environ.get("RAY_ADDRESS") or None
        for name, value in (("workers", workers), ("actors", None if actors == "auto" else actors)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"{name} of the ray executor must be a positive integer"
                                 f"{' or auto' if name == 'actors' else ''}; got {value!r}.")
        self.stall_timeout = STALL_TIMEOUT if stall_timeout is None else check_stall_timeout(stall_timeout)
        self.workers, self.actors, self.threads = workers, actors, threads
        self.where = check_reachable(self.address) if self.address else None

    def _connect(self) -> bool:
        """Connect (or start a local Ray); True when this call did (and must disconnect after)."""
        ray = self.ray
        if ray.is_initialized():
            return False
        attempt = 1
        while True:
            try:
                # "local" starts a new Ray even when a stale /tmp/ray/ray_current_cluster names another
                ray.init(address=self.address or "local", **init_options(self.where))
                return True
            except (ConnectionError, RuntimeError, TimeoutError, ValueError) as exc:
                if attempt >= CLIENT_TRIES or not client_start_failed(self.where, exc):
                    raise InputError(f"cannot start or join Ray ({'at ' + self.address if self.address else 'locally'})"
                                     f": {exc}") from None
            time.sleep(2.0 * attempt)  # the proxy could not start this client's server: ask again
            attempt += 1

    def run(self, model: ModelRef, benchmark: Benchmark, config: RunConfig, stream: UnitStream, store, run_id: str, *,
            batch_size: int = 64, progress: str | bool | None = None, description: str = "evaluating") -> ExecutionStats:
        batch_size = check_batch_size(batch_size)
        ray = self.ray
        started = self._connect()
        events = EventLog()
        try:
            return self._run(ray, model, benchmark, config, stream, store, run_id, batch_size, progress, description,
                             events)
        except RobustlabError as exc:
            if not hasattr(exc, "events"):
                exc.events = list(events.events)
            raise
        finally:
            if started:
                ray.shutdown()

    def _run(self, ray, model, benchmark, config, stream, store, run_id, batch_size, progress, description, events):
        import torch

        view, plan = _plan(ray, self.actors, self.workers)
        try:
            ray.cloudpickle.dumps(model)
        except Exception as exc:  # cloudpickle could not serialise the user's object
            raise InputError(f"the model {getattr(model.model, '__class__', type(model)).__name__} cannot be sent to "
                             f"Ray actors ({type(exc).__name__}: {exc}); give a model spec they can load themselves, "
                             "e.g. python:my_models.py:build (a module-level factory), torchvision:NAME or onnx:PATH.") \
                from None
        events.emit("plan", f"Ray: {plan.describe()}; the cluster has {view.describe()}", echo=False,
                    actors=plan.actors, gpu=plan.gpu, load_slots=plan.load_slots, nodes=len(view.nodes))
        threads = self.threads if self.threads is not None else (None if plan.gpu else torch.get_num_threads())
        pool = _ActorPool(ray, plan, model, benchmark, config, threads)
        try:
            return self._drive(ray, pool, plan, view, benchmark, config, stream, store, run_id, batch_size, progress,
                               description, events)
        finally:
            pool.close()

    def _drive(self, ray, pool, plan, view, benchmark, config, stream, store, run_id, batch_size, progress,
               description, events):
        nodes = _NodeWatch(ray, view, events)
        watchdog = Watchdog(events, lambda idle: _diagnose(ray, plan, nodes), self.stall_timeout)
        first = pool.actors[0].preparer.remote()
        while not ray.wait([first], num_returns=1, timeout=1.0)[0]:  # the model loads (or cannot be placed)
            nodes.check()
            watchdog.check()
        prepare, error = ray.get(first)
        if error is not None:
            raise_recorded(error)
        prepare = dataclasses.replace(prepare, max_pixels=config.max_pixels)
        load = ray.remote(load_remote).options(num_cpus=1, max_retries=3)
        bench_ref, prepare_ref = ray.put(benchmark), ray.put(prepare)
        stats = ExecutionStats()
        start = time.perf_counter()
        limit = INFLIGHT_PER_SLOT * (plan.load_slots + plan.actors)
        with run_progress(description, progress) as bar:
            ledger = UnitLedger(store, run_id, batch_size, bar, stats)
            tasks = batch_tasks(stream, ledger, batch_size, share=lambda work: ray.put(work.source))
            inflight: dict = {}
            exhausted = False

            def submit(task, attempt: int = 0) -> None:
                loaded = load.remote(bench_ref, task.source, task.unit, task.start, task.stop, prepare_ref)
                index = pool.pick()
                inflight[pool.actors[index].predict.remote(loaded)] = (task, index, attempt)
                pool.busy[index] += 1

            while True:
                while not exhausted and len(inflight) < limit:
                    task = next(tasks, None)
                    if task is None:
                        exhausted = True
                        break
                    submit(task)
                if not inflight:
                    break
                done, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
                nodes.check()
                if not done:
                    watchdog.check()
                    continue
                task, index, attempt = inflight.pop(done[0])
                pool.busy[index] -= 1
                try:
                    batch, columns, node = ray.get(done[0])
                except ray.exceptions.RayTaskError:
                    raise  # the loader or the model raised something robustlab does not know: a bug to report
                except ray.exceptions.RayError as exc:  # a task, object, actor or node lost for good
                    pool.failed(index, exc)
                    if attempt >= RESUBMITS:
                        raise RobustlabError(
                            f"a batch of unit {task.unit} was lost {attempt + 1} times on the Ray cluster (last: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}): nodes keep failing. Every "
                            "unit finished so far is stored; run the same command again when the cluster is "
                            "healthy.") from None
                    events.emit("resubmitted", f"a batch of unit {task.unit} was lost ({type(exc).__name__}); "
                                "submitted again", echo=False, unit=task.unit)
                    submit(task, attempt + 1)
                    continue
                raise_batch_error(batch)
                pool.ran(index, node)
                watchdog.progress()
                if stats.first_batch_seconds is None:
                    stats.first_batch_seconds = time.perf_counter() - start
                ledger.record(batch, columns)
        stats.seconds = time.perf_counter() - start
        nodes.check(now=True)  # a node that died since the last look (up to NODE_CHECK_EVERY ago) is reported too
        events.emit("actors", f"{plan.actors} inference actor(s) on {len(set(pool.nodes.values()))} node(s) ran "
                    f"{sum(pool.batches)} batch(es): {pool.batches}", echo=False, batches=pool.report())
        stats.events = list(events.events)
        return stats


def _plan(ray, actors, workers) -> tuple:
    """The cluster now and the plan that fits it. When other robustlab runs' actors are what keeps
    the plan from fitting, look again for a few seconds: a driver that just died still has its actors
    until Ray notices."""
    deadline = time.monotonic() + PLAN_PATIENCE
    while True:
        view = snapshot(ray)
        try:
            return view, plan_actors(view, actors, workers)
        except InputError:
            if not (view.other_actor_cpus or view.other_actor_gpus) or time.monotonic() > deadline:
                raise
        time.sleep(1.0)


class _ActorPool:
    """The run's inference actors: created spread over the nodes, named so that other robustlab
    drivers can count what they hold; each batch goes to the live actor with the fewest in flight."""

    def __init__(self, ray, plan: ActorPlan, model: ModelRef, benchmark: Benchmark, config: RunConfig,
                 threads: int | None) -> None:
        self.ray = ray
        kind = "gpu" if plan.gpu else "cpu"
        token = secrets.token_hex(4)
        remote = ray.remote(InferenceActor)
        common = dict(num_cpus=0 if plan.gpu else 1, num_gpus=1 if plan.gpu else 0, max_restarts=3,
                      max_task_retries=3, scheduling_strategy="SPREAD", namespace=ACTOR_NAMESPACE)
        self.actors = [remote.options(name=f"{ACTOR_PREFIX}-{kind}-{token}-{i}", **common)
                       .remote(model, benchmark, config, threads) for i in range(plan.actors)]
        self.busy = [0] * plan.actors
        self.batches = [0] * plan.actors
        self.dead: set[int] = set()
        self.nodes: dict[int, str] = {}

    def pick(self) -> int:
        live = [i for i in range(len(self.actors)) if i not in self.dead]
        if not live:
            raise RobustlabError("every inference actor of this run died for good (their nodes were lost and Ray "
                                 "could not restart them): add capacity to the cluster and run the same command again;"
                                 " every unit finished so far is stored.")
        return min(live, key=lambda i: (self.busy[i], self.batches[i]))

    def failed(self, index: int, exc: Exception) -> None:
        if isinstance(exc, self.ray.exceptions.ActorDiedError):
            self.dead.add(index)

    def ran(self, index: int, node: str) -> None:
        self.batches[index] += 1
        self.nodes[index] = node

    def report(self) -> list[dict[str, Any]]:
        return [{"actor": i, "node": self.nodes.get(i, "")[:16], "batches": n} for i, n in enumerate(self.batches)]

    def close(self) -> None:
        for actor in self.actors:  # free the cluster's resources now, also when connected to a shared cluster
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)


class _NodeWatch:
    """Notice nodes that leave the cluster during the run (an event each)."""

    def __init__(self, ray, view, events: EventLog) -> None:
        self.ray, self.events = ray, events
        self.known = {n.node_id: n.address for n in view.nodes}
        self.lost: dict[str, float] = {}
        self.next_check = time.monotonic() + NODE_CHECK_EVERY

    def check(self, now: bool = False) -> None:
        """Look at the cluster's nodes every NODE_CHECK_EVERY seconds, or at once with ``now``."""
        if not now and time.monotonic() < self.next_check:
            return
        self.next_check = time.monotonic() + NODE_CHECK_EVERY
        try:
            live = {n["NodeID"]: n.get("NodeManagerAddress", "?") for n in self.ray.nodes() if n.get("Alive")}
        except Exception:  # noqa: BLE001 - the GCS briefly unreachable: look again later
            return
        for node, address in self.known.items():
            if node not in live and node not in self.lost:
                self.lost[node] = time.monotonic()
                self.events.emit("node_lost", f"Ray node {node[:12]} ({address}) left the cluster; its tasks and "
                                 "actors are retried on the nodes left", node=node, address=address)
        self.known.update(live)


def _diagnose(ray, plan: ActorPlan, nodes: _NodeWatch) -> tuple[str, dict[str, Any]]:
    """What a stalled run waits for: pending demands, free resources, lost nodes."""
    try:
        view = snapshot(ray)
    except Exception as exc:  # noqa: BLE001 - the cluster itself does not answer
        return f"the Ray cluster does not answer ({type(exc).__name__}: {exc}).", {}
    held = f"{plan.actors} {'GPU' if plan.gpu else 'CPU'}"
    message = (f"pending resource demands: {describe_demands(view.demands)}; the cluster has {view.describe()}; this "
               f"run's inference actors hold {held} and each load task needs 1 CPU.")
    lost = [f"{node[:12]} ({nodes.known.get(node, '?')}) {time.monotonic() - t:.0f} s ago" for node, t in
            nodes.lost.items()]
    if lost:
        message += f" Lost node(s): {', '.join(lost)}."
    if view.demands and view.available("CPU") < 1:
        message += (" Ray cannot place the pending work: no CPU is free. Add capacity (restart the lost node, or "
                    "`ray start --address HEAD:PORT` on another machine) and the run continues.")
    fields = {"pending_demands": view.demands, "available": {"CPU": view.available("CPU"), "GPU": view.available("GPU")},
              "total": {"CPU": view.total("CPU"), "GPU": view.total("GPU")}, "nodes": len(view.nodes),
              "lost_nodes": sorted(nodes.lost)}
    return message, fields

