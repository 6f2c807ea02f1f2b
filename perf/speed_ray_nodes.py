"""Units per second of the Ray executor on a simulated multi-node cluster (1, 2, 3 nodes on this
machine), against the local executor on the same data.

Each node is a real ``ray start`` node (tests/engine/local_cluster.py) with ``--cpus-per-node``
CPUs; the head is the first node. The workload: the demo world's scenes (``--images`` of them),
benchmark ``corrupted`` (4 corruptions x 3 severities + clean, units of ``--shard-size`` images),
the demo CNN, ``--actors auto`` (one actor per node of 2+ CPUs). Every run is a ``robustlab
evaluate --json`` process; the figure is units computed / the run's own seconds (connecting,
placing actors and loading the model included), and the same for the images.

    python perf/speed_ray_nodes.py --nodes 1,2,3 --images 48

On one machine the nodes share its cores: more nodes cannot be faster there, the figures show
the executor's overhead per node. Run it on a real cluster's head (with ``--address``) to see the
scaling.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "engine"))

from local_cluster import LocalCluster  # noqa: E402


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def make_data(root: Path, n: int) -> Path:
    from robustlab.demo.world import scene_dataset, write_image_folder

    return write_image_folder(scene_dataset("test", n=n, seed=0), root / "scenes")


def evaluate(data: Path, store: Path, env: dict, executor: str, shard: int, extra: list[str]) -> dict:
    args = [sys.executable, "-m", "robustlab.cli", "evaluate", "--model", "demo:cnn", "--benchmark", "corrupted",
            "--data", str(data), "--store", str(store), "--corruptions", "gaussian_noise,fog,contrast,brightness",
            "--severities", "1-3", "--class-map", "sorted", "--batch-size", "8", "-o", f"shard_size={shard}",
            "--executor", executor, "--no-progress", "--json", *extra]
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{executor} run failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout)
    result["wall"] = wall
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="1,2,3", help="node counts to try, comma-separated")
    parser.add_argument("--cpus-per-node", type=int, default=2)
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--shard-size", type=int, default=8)
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    rows = []
    with tempfile.TemporaryDirectory(prefix="rl-nodes-") as tmp:
        data = make_data(Path(tmp), args.images)
        local = evaluate(data, Path(tmp) / "local", env, "local", args.shard_size, ["--workers", "1"])
        units, images = local["units_computed"], sum(1 for p in data.rglob("*") if p.is_file()) * 13
        rows.append(("local executor (1 worker)", local))
        for count in [int(n) for n in args.nodes.split(",")]:
            cluster = LocalCluster().start(head_cpus=args.cpus_per_node, workers=(args.cpus_per_node,) * (count - 1))
            try:
                result = evaluate(data, Path(tmp) / f"ray{count}", {**cluster.env, **env}, "ray", args.shard_size, [])
            finally:
                cluster.stop()
            plan = next(e for e in result["events"] if e["kind"] == "plan")
            rows.append((f"ray, {count} node(s) x {args.cpus_per_node} CPU: {plan['actors']} actor(s), "
                         f"{plan['load_slots']} load slot(s)", result))
    print(f"{units} units of {args.shard_size} images ({images} images), demo:cnn, corrupted (4 corruptions x 3 "
          f"severities + clean); {os.cpu_count()} cores: {cpu_model()}; python {platform.python_version()}")
    print(f"| run | units/s | images/s | seconds (run) |\n|---|---:|---:|---:|")
    for name, result in rows:
        seconds = result["seconds"]
        print(f"| {name} | {result['units_computed'] / seconds:.2f} | {images / seconds:.0f} | {seconds:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
