"""Load test of the review app: page times with 20 annotators reviewing at once (target p95 <= 100 ms).

Starts ``robustlab review serve`` in its own process on 127.0.0.1 (never another address) with
a fresh database, adds ``--annotators`` accounts, logs them all in, then lets each review
like a quick person in a browser: the task page (``GET /review?task=N``, where the answer's
reply leads), ``GET`` both frames, look at them for ``--think`` seconds (uniform between
half and one and a half times it; 0 for a stress test with no pause), ``POST /answer`` with
the page's task, round and base (the version it shows) as the page's script sends it (this
browser's key, JSON back), go to the next task's page it names, again, until
its round is done or a bound is hit (``--max-requests`` in all, ``--max-seconds`` of load).
Like the page's script, each client also asks ``GET /api/round`` every 20 s.
Clients are asyncio tasks on one httpx connection pool each (one "browser" per annotator).

Printed per request kind (page, frame, answer, poll): count, p50, p95, p99, max in ms; the
requests per second; the server's CPU seconds per request (from /proc, so the figure is less
sensitive to other load on a shared machine than wall times); and the verdict on the
target: p95 of the annotator page (``GET /review?task=N``) <= 100 ms.

Usage::

    python perf/load_review.py                         # the demo set, 20 annotators, SQLite
    python perf/load_review.py --think 0               # no pause: throughput stress test
    python perf/load_review.py --tasks OUT/review_tasks.jsonl --annotators 20 --max-requests 6000
    python perf/load_review.py --db postgresql://user@127.0.0.1/review   # PostgreSQL instead

Exit status 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"  # the load test never leaves this machine
TARGET_P95_MS = 100.0
PASSWORD = "load-test-password"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
TASK = re.compile(r'name="task" value="(\d+)"')
ROUND = re.compile(r'name="round" value="(\d+)"')
BASE = re.compile(r'name="base" value="([^"]+)"')
POLL_SECONDS = 20.0
ANCHOR_STEP = re.compile(r'data-anchor-step="(yes|no)"')
FRAMES = re.compile(r'src="(/frame/[^"]+)"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def prepare(args, work: Path) -> tuple[Path, str]:
    from robustlab.review.database import open_review_database
    from robustlab.review.demo import build_demo_task_set
    from robustlab.review.security import hash_password

    tasks = Path(args.tasks) if args.tasks else build_demo_task_set(work / "demo")
    db = args.db or str(work / "review.db")
    password_hash = hash_password(PASSWORD)  # one hash for every account: hashing is slow by design
    with open_review_database(db) as database:
        for i in range(args.annotators):
            database.add_user(f"annotator{i:02d}", "annotator", password_hash)
    return tasks, db


def start_server(tasks: Path, db: str, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen([sys.executable, "-m", "robustlab.cli", "review", "serve", str(tasks), "--db", db,
                             "--host", HOST, "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


async def wait_up(url: str, server: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise SystemExit(f"the server exited: {server.stderr.read().decode(errors='replace')}")
            try:
                if (await client.get(url + "/")).status_code == 200:
                    return
            except httpx.HTTPError:
                await asyncio.sleep(0.2)
    raise SystemExit("the server did not start in time")


class Budget:
    """Shared bounds: total requests and wall time."""

    def __init__(self, max_requests: int, max_seconds: float) -> None:
        self.left = max_requests
        self.deadline = time.monotonic() + max_seconds

    def take(self, n: int = 1) -> bool:
        if self.left < n or time.monotonic() > self.deadline:
            return False
        self.left -= n
        return True


class Start:
    """Logins first (argon2 verification is slow on purpose), then every client starts at once."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.logged_in = 0
        self.all_in = asyncio.Event()
        self.go = asyncio.Event()

    async def arrive(self) -> None:
        self.logged_in += 1
        if self.logged_in == self.n:
            self.all_in.set()
        await self.go.wait()


async def annotator(name: str, url: str, budget: Budget, times: dict, seed: int, start_line: Start,
                    think: float) -> int:
    rng = np.random.default_rng(seed)
    answered = 0
    key = secrets.token_hex(16)                    # this browser's key, as the page's script keeps it
    async with httpx.AsyncClient(base_url=url, timeout=30.0, headers={"X-Review-Browser": key}) as client:
        page = await client.get("/")
        response = await client.post("/login", data={"username": name, "password": PASSWORD, "browser": key,
                                                      "csrf_token": CSRF.search(page.text).group(1)},
                                     follow_redirects=False)
        if response.status_code != 303:
            raise SystemExit(f"{name} could not log in: HTTP {response.status_code}")
        await start_line.arrive()
        url_of_page = "/review"                    # the first page: redirected to the first unanswered task
        last_poll = time.monotonic()
        while budget.take(4):
            start = time.perf_counter()
            page = await client.get(url_of_page, follow_redirects=True)
            times["page"].append(time.perf_counter() - start)
            if page.status_code != 200:
                raise SystemExit(f"GET {url_of_page}: HTTP {page.status_code}")
            task = TASK.search(page.text)
            if task is None:
                break  # the round is done for this annotator
            for src in FRAMES.findall(page.text):
                start = time.perf_counter()
                frame = await client.get(src)
                times["frame"].append(time.perf_counter() - start)
                if frame.status_code != 200:
                    raise SystemExit(f"GET {src}: HTTP {frame.status_code}")
            if think > 0:  # looking at the pair before answering, as a person does
                await asyncio.sleep(rng.uniform(0.5, 1.5) * think)
            if time.monotonic() - last_poll >= POLL_SECONDS:  # the page's round check
                start = time.perf_counter()
                await client.get("/api/round")
                times["poll"].append(time.perf_counter() - start)
                last_poll = time.monotonic()
            data = {"csrf_token": CSRF.search(page.text).group(1), "task": task.group(1),
                    "round": ROUND.search(page.text).group(1), "base": BASE.search(page.text).group(1),
                    "label_correct": "yes"}
            if ANCHOR_STEP.search(page.text).group(1) == "no":
                if rng.random() < 0.8:
                    data["similarity"] = "similar"
                else:
                    data.update(similarity="dissimilar", reason=str(rng.choice(["motion", "blur_change", "other"])))
            start = time.perf_counter()
            # as the page's script sends it: JSON back, with the next task's address
            response = await client.post("/answer", data=data, headers={"Accept": "application/json"})
            times["answer"].append(time.perf_counter() - start)
            if response.status_code != 200:
                raise SystemExit(f"POST /answer: HTTP {response.status_code} {response.text[:300]}")
            url_of_page = response.json()["next"]
            answered += 1
    return answered


async def load(args, url: str) -> tuple[dict, int, float]:
    times: dict[str, list[float]] = defaultdict(list)
    budget = Budget(args.max_requests, args.max_seconds)
    start_line = Start(args.annotators)
    clients = [asyncio.create_task(annotator(f"annotator{i:02d}", url, budget, times, i, start_line, args.think))
               for i in range(args.annotators)]
    waiter = asyncio.create_task(start_line.all_in.wait())
    await asyncio.wait([waiter, *clients], return_when=asyncio.FIRST_COMPLETED)
    if not start_line.all_in.is_set():  # a client failed to log in
        for c in clients:
            c.cancel()
        await asyncio.gather(*clients, return_exceptions=True)
        raise SystemExit(f"only {start_line.logged_in} of {args.annotators} annotators could log in")
    budget.deadline = time.monotonic() + args.max_seconds
    start = time.perf_counter()
    start_line.go.set()
    answered = sum(await asyncio.gather(*clients))
    return times, answered, time.perf_counter() - start


def summarise(times: dict, seconds: float, server_cpu: float) -> float:
    total = sum(len(v) for v in times.values())
    print(f"{'kind':8s} {'n':>6s} {'p50':>8s} {'p95':>8s} {'p99':>8s} {'max':>8s}  (ms)")
    for kind in ("page", "frame", "answer", "poll"):
        ms = np.asarray(times.get(kind, []), dtype=float) * 1000
        if not len(ms):
            continue
        p50, p95, p99 = np.percentile(ms, [50, 95, 99])
        print(f"{kind:8s} {len(ms):6d} {p50:8.1f} {p95:8.1f} {p99:8.1f} {ms.max():8.1f}")
    print(f"{total} requests in {seconds:.1f} s ({total / seconds:.0f} requests/s); server CPU "
          f"{server_cpu:.1f} s ({1000 * server_cpu / max(total, 1):.2f} ms per request)")
    return float(np.percentile(np.asarray(times["page"]) * 1000, 95))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", help="review_tasks.jsonl to serve (default: the demo set, 84 tasks)")
    parser.add_argument("--db", help="database URL (default: a fresh SQLite file); must be empty of users")
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--max-requests", type=int, default=6000, help="bound on requests after login")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="bound on seconds of load")
    parser.add_argument("--think", type=float, default=1.0,
                        help="mean seconds an annotator looks at a pair before answering (uniform 0.5x-1.5x; "
                             "0: answer at once, a stress test)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="robustlab-load-") as tmp:
        tasks, db = prepare(args, Path(tmp))
        port = free_port()
        url = f"http://{HOST}:{port}"
        server = start_server(tasks, db, port)
        try:
            asyncio.run(wait_up(url, server))
            cpu_before = cpu_seconds(server.pid)
            times, answered, seconds = asyncio.run(load(args, url))
            server_cpu = cpu_seconds(server.pid) - cpu_before
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
    print(f"{args.annotators} annotators (think time {args.think:g} s), {answered} answers saved, against {url} "
          f"(one uvicorn worker, "
          f"{'SQLite' if not args.db or '://' not in args.db else args.db.split('://')[0]})")
    p95 = summarise(times, seconds, server_cpu)
    ok = p95 <= TARGET_P95_MS
    print(f"p95 page time: {p95:.1f} ms (target <= {TARGET_P95_MS:.0f} ms): {'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
