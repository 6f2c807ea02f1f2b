"""The environment a number was computed in: package versions, CPU, GPU, and the lock.

robustlab's numbers are the same for the same data, model and settings *on the same stack*: the
kernels are exact everywhere (see ``robustlab.corruptions.exactmath`` and ``robustlab.data.h264``),
but a model's float arithmetic follows the installed torch build, the CPU's instruction sets and
the GPU. So every stored unit of work records the environment it was computed in
(:func:`environment_record`), ``robustlab show`` prints it, a report that puts runs from
different environments side by side says so (:func:`describe_differences`), and
``robustlab doctor`` compares the installed stack with the lock the tests and figures were made
with (:func:`lock_differences`). The environment is recorded beside a run, never part of its
identity: the same run resumed on another machine keeps its id, and ``show`` names both
environments.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
import shutil
import subprocess
import sys
from importlib import metadata, resources
from pathlib import Path

from . import __version__

__all__ = ["LOCK_FILES", "RECORDED_PACKAGES", "cpu_model", "describe_differences", "distinct_environments", "environment_digest", "summarize",
           "environment_record", "gpu_record", "installed_version", "lock_differences", "locked_versions"]

#: The packages whose versions can move a number robustlab computes, recorded with every unit.
RECORDED_PACKAGES = ("numpy", "scipy", "opencv-python-headless", "Pillow", "numba", "torch", "torchvision", "av")
#: The locks shipped with robustlab (src/robustlab/locks): every extra and the test tools, and the
#: package alone; both for Python 3.11 on Linux x86_64 (`make lock` refreshes them).
LOCK_FILES = {"full": "py311-linux-x86_64.txt", "base": "py311-linux-x86_64-base.txt"}
#: The platform the locks are for.
LOCK_PLATFORM = "Python 3.11 on Linux x86_64"


def canonical_name(name: str) -> str:
    """A distribution name as the lock and pip compare it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=2)
def locked_versions(which: str = "full") -> dict[str, str]:
    """``{canonical name: version}`` of a shipped lock (``"full"`` or ``"base"``); empty if absent."""
    try:
        text = resources.files("robustlab").joinpath("locks", LOCK_FILES[which]).read_text()
    except (FileNotFoundError, OSError):
        return {}
    out = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^ \\;]+)", line)
        if match:
            out[canonical_name(match.group(1))] = match.group(2)
    return out


def lock_applies() -> bool:
    """Whether this interpreter is the platform the locks are for (Python 3.11, Linux, x86_64)."""
    return (sys.version_info[:2] == (3, 11) and platform.system() == "Linux"
            and platform.machine().lower() in ("x86_64", "amd64"))


def lock_differences(names=None, which: str = "full") -> dict[str, tuple[str | None, str]]:
    """Packages whose installed version differs from the lock: ``{name: (installed or None, locked)}``.

    ``names``: the distributions to compare (default: every package of the lock that is installed,
    plus the packages of the ``base`` lock, which robustlab always needs).
    """
    locked = locked_versions(which)
    if names is None:
        base = set(locked_versions("base"))
        names = [n for n in locked if n in base or installed_version(n) is not None]
    out = {}
    for name in names:
        key = canonical_name(name)
        if key not in locked:
            continue
        have = installed_version(name)
        if have != locked[key]:
            out[name] = (have, locked[key])
    return out


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, ``sysctl`` on macOS), else the machine type."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
        match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
        if match:
            return " ".join(match.group(1).split())
    except OSError:
        pass
    if platform.system() == "Darwin" and shutil.which("sysctl"):
        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                 timeout=5, check=True).stdout.strip()
            if out:
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


def _nvidia_driver() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def gpu_record() -> dict | None:
    """The GPU this process computes on: ``{"name", "driver", "cuda"}`` when torch has initialised
    CUDA here (a model ran on it), else None. Never initialises CUDA itself."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
    return {"name": ", ".join(names), "driver": _nvidia_driver(), "cuda": torch.version.cuda}


@functools.lru_cache(maxsize=1)
def _static_record() -> dict:
    packages = {name: installed_version(name) for name in RECORDED_PACKAGES}
    differs = lock_differences(RECORDED_PACKAGES) if lock_applies() else {}
    if not lock_applies():
        lock = {"applies": False, "note": f"the lock is for {LOCK_PLATFORM}"}
    else:
        lock = {"applies": True, "matches": not differs,
                "differs": {k: {"installed": v[0], "locked": v[1]} for k, v in differs.items()}}
    return {"robustlab": __version__, "python": platform.python_version(),
            "platform": f"{platform.system()}-{platform.machine()}", "cpu": cpu_model(),
            "packages": packages, "lock": lock}


def environment_record() -> dict:
    """What this process computes with: robustlab, Python, the platform, the CPU model, the
    versions of :data:`RECORDED_PACKAGES`, how they compare with the lock, and the GPU (name,
    driver, CUDA) when a model runs on one here. JSON-able; cheap after the first call."""
    record = dict(_static_record())
    gpu = gpu_record()
    if gpu is not None:
        record["gpu"] = gpu
    return record


def environment_digest(record: dict) -> str:
    """A short hash of an environment record (equal records, equal digests)."""
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]


def _flatten(record: dict) -> dict[str, str]:
    out = {"python": record.get("python"), "platform": record.get("platform"), "cpu": record.get("cpu"),
           "robustlab": record.get("robustlab")}
    out.update({name: version for name, version in (record.get("packages") or {}).items()})
    gpu = record.get("gpu")
    out["gpu"] = f"{gpu.get('name')} (driver {gpu.get('driver')})" if gpu else "none"
    return {k: str(v) for k, v in out.items()}


def distinct_environments(records) -> list[dict]:
    """The distinct environment records among ``records`` (None and empty ones skipped), in
    first-seen order: e.g. the ``meta["environment"]`` of a run's units."""
    seen: dict[str, dict] = {}
    for record in records:
        if record:
            seen.setdefault(environment_digest(record), record)
    return list(seen.values())


def describe_differences(records, noun: str = "run") -> list[str]:
    """Lines naming what differs between environment records, e.g.
    ``"numpy: 2.4.6 (2 runs), 2.3.1 (1 run)"`` (``noun`` names what was counted); empty when they
    all agree (or there are fewer than 2)."""
    records = [r for r in records if r]
    if len(records) < 2:
        return []
    flat = [_flatten(r) for r in records]
    lines = []
    for key in flat[0] | {k: "" for f in flat[1:] for k in f}:
        values = [f.get(key, "missing") for f in flat]
        if len(set(values)) > 1:
            counts: dict[str, int] = {}
            for v in values:
                counts[v] = counts.get(v, 0) + 1
            lines.append(f"{key}: " + ", ".join(f"{v} ({n} {noun}{'s' * (n != 1)})" for v, n in counts.items()))
    return lines


def summarize(record: dict) -> str:
    """One line for a person: versions, CPU, GPU and how the stack compares with the lock."""
    packages = record.get("packages") or {}
    parts = [f"robustlab {record.get('robustlab')}", f"Python {record.get('python')}"]
    order = {name: i for i, name in enumerate(RECORDED_PACKAGES)}  # stored records come back key-sorted
    parts += [f"{name} {version}" for name, version in sorted(packages.items(), key=lambda kv: order.get(kv[0], 99))
              if version]
    gpu = record.get("gpu")
    parts.append(f"CPU {record.get('cpu')}")
    parts.append(f"GPU {gpu['name']} (driver {gpu.get('driver')}, CUDA {gpu.get('cuda')})" if gpu else "no GPU")
    lock = record.get("lock") or {}
    if not lock.get("applies", True):
        parts.append(f"lock: not applicable ({lock.get('note', '')})")
    elif lock.get("matches"):
        parts.append("lock: matches")
    else:
        differs = lock.get("differs") or {}
        parts.append("lock: differs (" + ", ".join(f"{k} {v.get('installed')} vs {v.get('locked')}"
                                                  for k, v in differs.items()) + ")")
    return ", ".join(parts)
