"""What a Ray cluster can run: a snapshot of its nodes, resources and pending demands, the plan of
inference actors and load slots that fits it, and what to tell the user when a run stalls.

Sizing rule (docs/cluster.md): an inference actor holds its resources for the whole run (one
GPU, or one CPU on a CPU cluster); every load task needs one CPU while it runs. A run therefore
needs ``actors`` GPUs and at least one CPU (GPU cluster), or ``actors + 1`` CPUs (CPU cluster):
with fewer, the load tasks can never be scheduled and the run would wait forever. CPUs held by
other robustlab drivers' inference actors (named ``robustlab-infer-...``) are not available.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..formatting import compact_number

#: Name prefix of inference actors (listed to count what other robustlab runs hold).
ACTOR_PREFIX = "robustlab-infer"
#: The Ray namespace of inference actors.
ACTOR_NAMESPACE = "robustlab"


@dataclass(frozen=True)
class NodeView:
    """One live node: its id, address, total and available resources (``{"CPU": 2.0, ...}``)."""

    node_id: str
    address: str
    total: Mapping[str, float]
    available: Mapping[str, float]


@dataclass(frozen=True)
class ClusterView:
    """A snapshot of a Ray cluster.

    Attributes
    ----------
    nodes : list of NodeView
        The live nodes.
    demands : list of dict
        Pending resource demands Ray cannot place now (``{"resources": {"CPU": 1.0}, "count": 3}``);
        empty when unknown (Ray Client).
    other_actor_cpus, other_actor_gpus : float
        Resources held by inference actors of other robustlab runs.
    """

    nodes: list[NodeView]
    demands: list[dict[str, Any]] = field(default_factory=list)
    other_actor_cpus: float = 0.0
    other_actor_gpus: float = 0.0

    def total(self, resource: str) -> float:
        return sum(float(n.total.get(resource, 0.0)) for n in self.nodes)

    def available(self, resource: str) -> float:
        return sum(float(n.available.get(resource, 0.0)) for n in self.nodes)

    def describe(self) -> str:
        """``"3 CPU available of 5 on 3 nodes"`` (and GPUs when there are any)."""
        parts = [f"{compact_number(self.available('CPU'))} CPU available of {compact_number(self.total('CPU'))}"]
        if self.total("GPU"):
            parts.append(f"{compact_number(self.available('GPU'))} GPU of {compact_number(self.total('GPU'))}")
        return f"{', '.join(parts)} on {len(self.nodes)} node(s)"


@dataclass(frozen=True)
class ActorPlan:
    """How a run uses the cluster: ``actors`` inference actors of ``actor_resources`` each, and
    ``load_slots`` load tasks of one CPU at a time."""

    actors: int
    gpu: bool
    load_slots: int

    @property
    def actor_resources(self) -> dict[str, float]:
        return {"GPU": 1.0} if self.gpu else {"CPU": 1.0}

    def describe(self) -> str:
        per = "1 GPU" if self.gpu else "1 CPU"
        return f"{self.actors} inference actor(s) ({per} each) and {self.load_slots} load slot(s) (1 CPU each)"


def snapshot(ray) -> ClusterView:
    """The cluster as it is now (live nodes, resources, pending demands, other runs' actors)."""
    status = _cluster_status(ray)
    nodes = []
    if status is not None:
        for info in list(status.active_nodes) + list(status.idle_nodes):
            usage = {u.resource_name: (u.total, u.total - u.used) for u in info.resource_usage.usage}
            nodes.append(NodeView(info.node_id, info.ip_address, {k: t for k, (t, _) in usage.items()},
                                  {k: a for k, (_, a) in usage.items()}))
        demands = [{"resources": dict(b.bundle), "count": int(b.count)}
                   for d in status.resource_demands.ray_task_actor_demand for b in d.bundles_by_count]
    else:  # Ray Client: totals per node, availability for the whole cluster
        available = ray.available_resources()
        live = [n for n in ray.nodes() if n.get("Alive")]
        share = 1.0 / max(1, len(live))
        nodes = [NodeView(n["NodeID"], n.get("NodeManagerAddress", "?"), dict(n.get("Resources", {})),
                          {k: v * share for k, v in available.items()}) for n in live]
        demands = []
    cpus, gpus = _other_actors(ray)
    return ClusterView(nodes, demands, cpus, gpus)


def _cluster_status(ray):
    try:
        from ray.autoscaler.v2.sdk import get_cluster_status

        address = ray.get_runtime_context().gcs_address
        return get_cluster_status(address, timeout=5) if address else None
    except Exception:  # noqa: BLE001 - Ray Client, or an older Ray: fall back to ray.nodes()
        return None


def _other_actors(ray) -> tuple[float, float]:
    """CPUs and GPUs held by live inference actors of robustlab runs (named ``robustlab-infer-{cpu,gpu}-...``)."""
    try:
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
    except Exception:  # noqa: BLE001 - not available through Ray Client: count none
        return 0.0, 0.0
    ours = [n for n in names if n.startswith(ACTOR_PREFIX + "-")]
    return float(sum(1 for n in ours if n.startswith(f"{ACTOR_PREFIX}-cpu"))), \
        float(sum(1 for n in ours if n.startswith(f"{ACTOR_PREFIX}-gpu")))


def plan_actors(view: ClusterView, actors: int | str | None = None, workers: int | None = None) -> ActorPlan:
    """The actors and load slots a run uses on this cluster (see the module docstring).

    Parameters
    ----------
    view : ClusterView
        The cluster now.
    actors : int, ``"auto"`` or None
        Inference actors: a number, or ``auto``/None: one per GPU on a GPU cluster, else one per
        node with at least 2 CPUs (a CPU for the actor, one left to load), at least one, shrunk
        to what the free CPUs allow.
    workers : int, optional
        Load tasks in flight (default: the CPUs the actors leave).

    Raises
    ------
    InputError
        When the cluster cannot run the plan: the message names what it needs and what there is.
    """
    gpus_free = view.total("GPU") - view.other_actor_gpus
    cpus_total = view.total("CPU")
    cpus_free = cpus_total - view.other_actor_cpus
    held = ""
    if view.other_actor_cpus or view.other_actor_gpus:
        held = (f"; other robustlab runs' inference actors hold {compact_number(view.other_actor_cpus)} CPU"
                f"{' and ' + compact_number(view.other_actor_gpus) + ' GPU' if view.other_actor_gpus else ''}")
    where = (f"{compact_number(cpus_total)} CPU and {compact_number(view.total('GPU'))} GPU on {len(view.nodes)} "
             f"node(s){held}")
    fix = ("Add a node or resources (`ray start --address HEAD:PORT --num-cpus N` on another machine), use fewer "
           "actors (--actors), or run on one machine with --executor local")
    auto = actors is None or actors == "auto"
    if view.total("GPU") >= 1:
        n = math.floor(gpus_free) if auto else int(actors)
        if n < 1 or n > gpus_free or cpus_free < 1:
            need = f"{max(n, 1)} GPU for the inference actor(s) and 1 CPU for load tasks"
            raise InputError(f"this Ray cluster cannot run the evaluation: it needs {need}, and has {where}. {fix}.")
        slots = workers or max(1, int(cpus_free))
        return ActorPlan(n, True, slots)
    if auto:
        groups = sum(1 for node in view.nodes if float(node.total.get("CPU", 0)) >= 2)
        n = min(max(1, groups), math.floor(cpus_free) - 1)
    else:
        n = int(actors)
    if n < 1 or n + 1 > cpus_free:
        n = max(n, 1)
        raise InputError(
            f"this Ray cluster cannot run the evaluation: it needs {n + 1} CPU ({n} for the inference actor(s), which "
            f"hold one CPU each for the whole run, and at least 1 for the load tasks), and has {where}. {fix}.")
    slots = workers or max(1, math.floor(cpus_free) - n)
    return ActorPlan(n, False, slots)


def describe_demands(demands: list[dict[str, Any]]) -> str:
    """``"{'CPU': 1.0} x 3"`` for the pending demands (``"none"`` when there are none)."""
    if not demands:
        return "none"
    return ", ".join(f"{d['resources']} x {d['count']}" for d in demands)
