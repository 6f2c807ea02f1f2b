"""The Ray executor's checks that need no cluster: what answers at an address, the plan of actors
and load slots a cluster can run, the watchdog, and the options' validation."""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlparse

import pytest

from robustlab.engine.events import EventLog
from robustlab.engine.options import parse_actors
from robustlab.engine.ray_cluster import ClusterView, NodeView, plan_actors
from robustlab.engine.ray_connect import parse_address, probe_address
from robustlab.engine.watchdog import StalledRunError, Watchdog, check_stall_timeout
from robustlab.errors import InputError


def node(cpus: float, gpus: float = 0, free: float | None = None) -> NodeView:
    total = {"CPU": cpus, "GPU": gpus}
    return NodeView(f"n{cpus}{gpus}{free}", "127.0.0.1", total, {"CPU": cpus if free is None else free, "GPU": gpus})


# --- the plan ------------------------------------------------------------------------------------


def test_a_one_cpu_cluster_is_refused_naming_needs_and_haves():
    """A 1-node, 1-CPU cluster hung forever: the actor held the only CPU (fails on the old code)."""
    with pytest.raises(InputError) as caught:
        plan_actors(ClusterView([node(1)]))
    message = str(caught.value)
    assert "needs 2 CPU" in message and "has 1 CPU and 0 GPU on 1 node(s)" in message and "--executor local" in message


def test_auto_places_one_actor_per_node_that_can_also_load():
    assert plan_actors(ClusterView([node(1), node(1)])) == plan_actors(ClusterView([node(2)]))
    plan = plan_actors(ClusterView([node(1), node(1)]))
    assert (plan.actors, plan.load_slots, plan.gpu) == (1, 1, False)
    plan = plan_actors(ClusterView([node(1), node(2), node(2)]))
    assert (plan.actors, plan.load_slots) == (2, 3)
    plan = plan_actors(ClusterView([node(2), node(2), node(2)], other_actor_cpus=3))
    assert (plan.actors, plan.load_slots) == (2, 1)  # auto shrinks to leave a load slot
    assert plan_actors(ClusterView([node(2), node(2)]), workers=1).load_slots == 1


def test_explicit_actors_that_do_not_fit_are_refused():
    assert plan_actors(ClusterView([node(4)]), 3).actors == 3
    with pytest.raises(InputError, match=r"needs 5 CPU \(4 for the inference actor"):
        plan_actors(ClusterView([node(4)]), 4)


def test_other_runs_actors_are_not_free():
    """Two drivers on 2 CPUs each placed an actor and both hung (fails on the old code)."""
    with pytest.raises(InputError, match="other robustlab runs' inference actors hold 1 CPU"):
        plan_actors(ClusterView([node(2)], other_actor_cpus=1))
    plan = plan_actors(ClusterView([node(2), node(2)], other_actor_cpus=1))
    assert (plan.actors, plan.load_slots) == (2, 1)


def test_gpu_clusters_get_one_actor_per_gpu():
    plan = plan_actors(ClusterView([node(8, gpus=2), node(8, gpus=2)]))
    assert (plan.actors, plan.gpu, plan.actor_resources) == (4, True, {"GPU": 1.0})
    with pytest.raises(InputError, match="needs 5 GPU"):
        plan_actors(ClusterView([node(8, gpus=4)]), 5)


# --- what answers at an address ------------------------------------------------------------------


def serve(answer: bytes | None, close: bool = True) -> tuple[int, threading.Event]:
    """A TCP server on loopback that answers every connection with ``answer`` (None: says nothing)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def loop():
        server.settimeout(0.2)
        held = []
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            if answer is not None:
                conn.recv(100)
                conn.sendall(answer)
            if close:
                conn.close()
            else:
                held.append(conn)
        server.close()

    threading.Thread(target=loop, daemon=True).start()
    return server.getsockname()[1], stop


@pytest.mark.parametrize("answer, named", [
    (b"HTTP/1.1 404 Not Found\r\n\r\n", "an HTTP/1 server"),
    (None, "did not answer"),
    (b"", "closed the connection"),
])
def test_an_address_that_is_not_ray_fails_fast_naming_what_answered(answer, named):
    """A RAY_ADDRESS that answered but was not Ray hung for over 300 s (fails on the old code)."""
    port, stop = serve(answer or None, close=answer is not None)
    try:
        start = time.monotonic()
        with pytest.raises(InputError, match="is not a Ray cluster") as caught:
            probe_address(f"127.0.0.1:{port}")
        assert time.monotonic() - start < 15 and named in str(caught.value)
    finally:
        stop.set()


@pytest.mark.postgres
def test_a_postgresql_port_is_named(postgres_server_url):
    parsed = urlparse(postgres_server_url)
    start = time.monotonic()
    with pytest.raises(InputError, match="a PostgreSQL server answered"):
        probe_address(f"{parsed.hostname}:{parsed.port}")
    assert time.monotonic() - start < 15


def test_malformed_and_unreachable_addresses():
    with pytest.raises(InputError, match="not host:port"):
        parse_address("head:port")
    with pytest.raises(InputError, match="scheme 'http'"):
        parse_address("http://head:8265")
    assert parse_address("ray://head").port == 10001 and parse_address("head").port == 6379
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InputError, match="cannot reach the Ray cluster"):
        probe_address(f"127.0.0.1:{port}")


# --- the watchdog ---------------------------------------------------------------------------------


def test_the_watchdog_reports_a_stall_then_fails_the_run():
    events = EventLog(echo=False)
    dog = Watchdog(events, lambda idle: ("pending resource demands: {'CPU': 1.0} x 2.", {"pending": 2}),
                   stall_timeout=0.6, report_after=0.2, repeat_every=10)
    dog.check()
    assert events.events == []
    time.sleep(0.25)
    dog.check()
    dog.check()  # reported once until repeat_every
    assert [e["kind"] for e in events.events] == ["stalled"] and events.events[0]["pending"] == 2
    assert "no batch finished for 0 s" in events.events[0]["message"]
    dog.progress()
    assert events.events[-1]["kind"] == "resumed"
    time.sleep(0.65)
    with pytest.raises(StalledRunError, match=r"--stall-timeout 0.6\): pending resource demands") as caught:
        dog.check()
    assert caught.value.events and "every unit finished so far is stored" in str(caught.value)


def test_options_are_validated():
    assert parse_actors("auto") == "auto" and parse_actors("3") == 3 and parse_actors(None) is None
    for bad in ("0", "-1", "many"):
        with pytest.raises(InputError, match="--actors"):
            parse_actors(bad)
    for bad in (0, -1, float("nan"), True, "10"):
        with pytest.raises(InputError, match="stall timeout"):
            check_stall_timeout(bad)


def test_ray_options_with_the_local_executor_are_refused(labelled_root, tmp_path):
    from robustlab.engine import evaluate

    for option in ({"actors": 2}, {"stall_timeout": 10}):
        with pytest.raises(InputError, match="option of the ray executor; add --executor ray"):
            evaluate("python:x.py:f", "corrupted", labelled_root, store=tmp_path, **option)


# --- connecting ----------------------------------------------------------------------------------


def test_only_a_client_proxy_that_failed_to_start_is_asked_again():
    """Ray Client's proxy on a loaded head let the server it starts per client die ("Initialization
    failure from server ... ZombieProcess"): the driver now asks again; every other failure is final."""
    from robustlab.engine.ray_connect import client_start_failed

    failure = ConnectionError("Initialization failure from server: Traceback ... psutil.ZombieProcess")
    assert client_start_failed(parse_address("ray://127.0.0.1:10001"), failure)
    assert not client_start_failed(parse_address("127.0.0.1:6379"), failure)  # not Ray Client
    assert not client_start_failed(None, failure)  # a local Ray
    assert not client_start_failed(parse_address("ray://127.0.0.1:10001"), ConnectionError("token mismatch"))
