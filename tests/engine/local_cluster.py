"""A real multi-node Ray cluster on this machine, for tests and the perf harness (no mocks).

Each node is one ``ray start --block`` process (the head with ``--head``) with its own ports and
its own temporary folder, all on the loopback address, with token authentication, as
docs/cluster.md's local recipe describes. A node is killed the way a machine dies: its raylet gets
SIGKILL (its workers and actors go with it; the GCS marks the node dead after a few missed health
checks, sped up here to about 3 s).
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY = Path(sys.executable).with_name("ray")
#: The head notices a dead node after about 3 s (default: 5 missed checks of 3 s); the Ray Client
#: server waits longer for the per-driver server it starts (a loaded 2-core machine is slow to start one).
NODE_ENV = {"RAY_health_check_initial_delay_ms": "1000", "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "1000", "RAY_health_check_failure_threshold": "3",
            "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "120"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Node:
    """One node: its ``ray start`` process, temporary folder, ports and log."""

    name: str
    num_cpus: int
    process: subprocess.Popen
    temp_dir: Path
    node_manager_port: int
    log: Path

    def raylet_pid(self) -> int | None:
        """The pid of this node's raylet (found by its node-manager port), or None."""
        mark = f"--node_manager_port={self.node_manager_port}".encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"raylet" in cmdline.split(b"\0", 1)[0] and mark in cmdline:
                    return int(entry)
        return None


@dataclass
class LocalCluster:
    """A head plus worker nodes started with ``ray start`` (see the module docstring).

    ``env`` is what a driver needs to join: ``RAY_ADDRESS``, ``RAY_AUTH_MODE=token`` and
    ``RAY_AUTH_TOKEN`` (``RAY_AUTH_MODE=disabled`` when ``token`` is None).
    """

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rl-ray-", dir="/tmp")))
    token: str | None = field(default_factory=lambda: secrets.token_hex(16))
    nodes: list[Node] = field(default_factory=list)
    gcs_port: int = 0
    client_port: int = 0
    _worker_ports: int = field(default_factory=lambda: random.randrange(20000, 50000, 1000))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def client_address(self) -> str:
        return f"ray://127.0.0.1:{self.client_port}"

    @property
    def env(self) -> dict[str, str]:
        env = {**os.environ, "RAY_ADDRESS": self.address}
        if self.token is None:
            env["RAY_AUTH_MODE"] = "disabled"
            env.pop("RAY_AUTH_TOKEN", None)
        else:
            env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.token)
        return env

    def start(self, head_cpus: int = 1, workers: tuple[int, ...] = (2, 2), timeout: float = 240) -> LocalCluster:
        """Start the head (``head_cpus`` CPUs) and one worker node per entry of ``workers``."""
        def head_args() -> list[str]:  # fresh ports on each attempt
            self.gcs_port, self.client_port = free_port(), free_port()
            return ["--head", "--port", str(self.gcs_port), "--ray-client-server-port", str(self.client_port),
                    "--include-dashboard", "false"]

        self._start_node("head", head_cpus, head_args, timeout)
        for cpus in workers:
            self.add_worker(cpus, timeout)
        return self

    def add_worker(self, num_cpus: int, timeout: float = 240) -> Node:
        return self._start_node(f"worker{len(self.nodes)}", num_cpus, lambda: ["--address", self.address], timeout)

    def _start_node(self, name: str, num_cpus: int, extra, timeout: float, attempts: int = 3) -> Node:
        """Start one node; a start that fails (a port taken between choosing and binding it, on a
        machine shared with other test runs) is tried again with other ports."""
        failures = []
        for attempt in range(attempts):
            node = self._try_node(f"{name}" if not attempt else f"{name}-{attempt}", num_cpus, extra(), timeout)
            if isinstance(node, Node):
                return node
            failures.append(node)
        self.stop()
        raise RuntimeError(f"ray node {name} did not start in {attempts} attempts:\n" + "\n---\n".join(failures))

    def _try_node(self, name: str, num_cpus: int, extra: list[str], timeout: float) -> Node | str:
        temp_dir = self.root / name
        temp_dir.mkdir(parents=True, exist_ok=True)
        low = self._worker_ports + 200 * len(self.nodes)
        ports = {"--node-manager-port": free_port(), "--object-manager-port": free_port(),
                 "--dashboard-agent-listen-port": free_port(), "--dashboard-agent-grpc-port": free_port(),
                 "--metrics-export-port": free_port(), "--runtime-env-agent-port": free_port(),
                 "--min-worker-port": low, "--max-worker-port": low + 199}
        command = [str(RAY), "start", "--block", *extra, "--node-ip-address", "127.0.0.1", "--num-cpus", str(num_cpus),
                   "--num-gpus", "0", "--temp-dir", str(temp_dir), "--object-store-memory", str(120 * 2**20),
                   "--disable-usage-stats", *[str(x) for kv in ports.items() for x in kv]]
        log = self.root / f"{name}.log"
        env = {**self.env, **NODE_ENV}
        env.pop("RAY_ADDRESS")
        with open(log, "w") as fh:
            process = subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        node = Node(name, num_cpus, process, temp_dir, ports["--node-manager-port"], log)
        deadline = time.time() + timeout
        while "block forever" not in log.read_text(errors="replace"):
            if process.poll() is not None or time.time() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
                return log.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        self.nodes.append(node)
        return node

    def live_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.process.poll() is None]

    def kill_node(self, node: Node) -> None:
        """Kill a node as a machine dies: SIGKILL its raylet; its ``ray start`` process then ends the rest."""
        pid = node.raylet_pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        try:
            node.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(node.process.pid, signal.SIGKILL)
            node.process.wait(10)

    def stop(self) -> None:
        """Stop every node at once (a test cluster keeps nothing worth a graceful stop) and remove
        the temporary folders: SIGKILL to each node's process group, then to any process left that
        names the cluster's folder (Ray's agents start sessions of their own)."""
        for node in self.nodes:
            try:
                os.killpg(node.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            node.process.wait(10)
        mark = str(self.root).encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    if mark in Path(f"/proc/{entry}/cmdline").read_bytes():
                        os.kill(int(entry), signal.SIGKILL)
                except OSError:
                    continue
        shutil.rmtree(self.root, ignore_errors=True)
