"""``robustlab doctor``: is this installation the one the tests and figures were made with, and does it
compute what they computed?

Three parts, about 10 seconds in all:

1. **The stack against the lock** (:func:`robustlab.environment.lock_differences`): every installed
   package whose version differs from ``src/robustlab/locks`` is named, with both versions;
   packages robustlab needs and that are missing are named too. A differing stack is allowed (runs
   go ahead and record it), doctor only says so.
2. **A self-check** against recorded outputs (``robustlab/selfcheck/golden.npz``, written by
   ``scripts/make_selfcheck.py``): golden corruption cells of the reference (imagecorruptions
   1.1.2) must come out identical; an H.264 encode of a fixed sequence must give the recorded
   bytes (when this libx264 build is the recording one; another build is reported, not failed)
   and decode to the frames within the codec's loss; a throwaway SQLite store must give back what
   was written to it.
3. **Devices and engines**: whether CUDA is available (and the GPUs), whether Ray is installed and
   where ``RAY_ADDRESS`` points.

:func:`run_doctor` returns a :class:`DoctorReport`; the CLI prints it (``--json`` for scripts) and
exits 1 when a self-check failed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from .environment import (LOCK_FILES, LOCK_PLATFORM, environment_record, installed_version, lock_applies,
                          lock_differences, locked_versions, summarize)

__all__ = ["CODEC_SHAPE", "Check", "DoctorReport", "codec_frames", "encode_codec_frames", "run_doctor"]

#: (frames, height, width) of the codec self-check's sequence.
CODEC_SHAPE = (8, 64, 64)
#: Largest mean |decoded - original| the codec round trip may show (grey levels; crf 20 gives ~1-2).
CODEC_MAX_MEAN_ERROR = 6.0


def codec_frames() -> np.ndarray:
    """A deterministic uint8 (8, 64, 64, 3) sequence: a textured pattern panning and brightening."""
    t, h, w = CODEC_SHAPE
    y, x = np.mgrid[0:h, 0:w]
    frames = []
    for i in range(t):
        channels = [(x + 3 * i) * 4 % 256, (y * 3 + 5 * i) % 256, ((x // 8 + y // 8 + i) % 2) * 160 + 40 + 4 * i]
        frames.append(np.stack(channels, axis=-1).astype(np.uint8))
    return np.stack(frames)


def encode_codec_frames(path: str | os.PathLike) -> None:
    """Encode :func:`codec_frames` to ``path`` as robustlab encodes ImageNet-P sequences (medium, crf 20)."""
    from .perturbations.io import encode_mp4

    encode_mp4(path, codec_frames(), preset="medium")


@dataclass
class Check:
    """One line of the report: ``status`` is ``ok``, ``warn`` (worth knowing), ``fail`` or ``info``."""

    part: str
    name: str
    status: str
    detail: str
    seconds: float = 0.0


@dataclass
class DoctorReport:
    environment: dict
    checks: list[Check] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)

    def to_dict(self) -> dict:
        return {"ok": not self.failed, "environment": self.environment,
                "checks": [vars(c) for c in self.checks]}

    def text(self) -> str:
        lines = ["robustlab doctor", f"environment: {summarize(self.environment)}"]
        part = None
        for c in self.checks:
            if c.part != part:
                part = c.part
                lines += ["", part]
            took = f"  ({c.seconds:.1f} s)" if c.seconds >= 0.05 else ""
            lines.append(f"  [{c.status:4s}] {c.name}: {c.detail}{took}")
        n_warn = sum(c.status == "warn" for c in self.checks)
        verdict = "FAILED: a self-check gave other results than recorded" if self.failed else "OK"
        lines += ["", f"result: {verdict}" + (f" ({n_warn} warning{'s' * (n_warn != 1)})" if n_warn else "")]
        return "\n".join(lines)


def _stack_checks() -> list[Check]:
    part = "stack against the lock"
    locked = locked_versions("full")
    if not locked:
        return [Check(part, "lock", "warn", "no lock shipped with this robustlab (src/robustlab/locks)")]
    checks = []
    if not lock_applies():
        checks.append(Check(part, "platform", "warn", f"the lock is for {LOCK_PLATFORM}; this is Python "
                            f"{sys.version_info[0]}.{sys.version_info[1]} on {os.uname().sysname} "
                            f"{os.uname().machine}: versions are compared all the same"))
    differs = lock_differences()
    base = locked_versions("base")
    missing = sorted(n for n, (have, _) in differs.items() if have is None and n in base)
    moved = {n: v for n, v in differs.items() if v[0] is not None}
    compared = [n for n in locked if n in base or installed_version(n) is not None]
    if moved:
        checks.append(Check(part, "differs", "warn", f"{len(moved)} package(s) differ from the lock: " + ", ".join(
            f"{n} {have} (locked {want})" for n, (have, want) in sorted(moved.items()))
            + ". Runs go ahead and record it; `make test` or scripts/install.sh installs the locked versions."))
    if missing:
        checks.append(Check(part, "missing", "fail", "required but not installed: " + ", ".join(missing)))
    if not moved and not missing:
        checks.append(Check(part, "matches", "ok", f"{len(compared)} installed packages are the locked versions "
                            f"({LOCK_FILES['full']})"))
    optional = sorted(n for n in locked if n not in base and installed_version(n) is None)
    if optional:
        checks.append(Check(part, "optional", "info", f"{len(optional)} optional package(s) of the extras or the "
                            "test tools are not installed (e.g. " + ", ".join(optional[:5]) + ")"))
    return checks


def _load_golden() -> tuple[dict, dict]:
    path = resources.files("robustlab").joinpath("selfcheck", "golden.npz")
    with resources.as_file(path) as real, np.load(real) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    return meta, arrays


def _corruption_check(meta: dict, arrays: dict) -> Check:
    from .corruptions import corrupt

    start = time.perf_counter()
    differ = []
    for image, name, severity, seed in meta["cells"]:
        got = corrupt(arrays[f"input/{image}"], name, int(severity), rng=np.random.RandomState(seed))
        want = arrays[f"output/{image}/{name}/{severity}"]
        if got.shape != want.shape or not np.array_equal(got, want):
            share = float(np.mean(got != want)) if got.shape == want.shape else 1.0
            differ.append(f"{name}/{severity} ({share:.2%} of values)")
    seconds = time.perf_counter() - start
    if differ:
        return Check("self-check", "corruptions", "fail", f"{len(differ)} of {len(meta['cells'])} golden cells differ "
                     "from imagecorruptions 1.1.2: " + ", ".join(differ) + ". Run `robustlab doctor` on the locked "
                     "stack, and report the versions above with this line.", seconds)
    return Check("self-check", "corruptions", "ok", f"{len(meta['cells'])} golden cells identical to imagecorruptions "
                 "1.1.2", seconds)


def _codec_check(meta: dict) -> Check:
    from .data.h264 import encoder_record
    from .perturbations.io import decode_video

    start = time.perf_counter()
    record = encoder_record()
    want = meta["codec"]
    with tempfile.TemporaryDirectory(prefix="robustlab-doctor-") as tmp:
        path = Path(tmp) / "check.mp4"
        encode_codec_frames(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        decoded = decode_video(path)
    frames = codec_frames()
    seconds = time.perf_counter() - start
    if decoded.shape != frames.shape:
        return Check("self-check", "codec", "fail", f"H.264 round trip gave {decoded.shape}, not {frames.shape}", seconds)
    error = float(np.abs(decoded.astype(np.int16) - frames).mean())
    if error > CODEC_MAX_MEAN_ERROR:
        return Check("self-check", "codec", "fail", f"H.264 round trip is off by {error:.1f} grey levels on average "
                     f"(at most {CODEC_MAX_MEAN_ERROR})", seconds)
    same_build = record["libx264"] == want["libx264"] and record["x264_asm"] == want["x264_asm"]
    if not record["byte_reproducible"]:
        return Check("self-check", "codec", "warn", f"H.264 round trip ok (mean error {error:.2f}); this machine's mp4 "
                     f"bytes are not reproducible elsewhere: {record.get('reason')}", seconds)
    if not same_build:
        return Check("self-check", "codec", "warn", f"H.264 round trip ok (mean error {error:.2f}); bytes not compared: "
                     f"recorded with libx264 {want['libx264']}, this is {record['libx264']}", seconds)
    if digest != want["sha256"]:
        return Check("self-check", "codec", "fail", f"the mp4 bytes differ from the recorded encode with the same "
                     f"libx264 build ({digest[:12]} vs {want['sha256'][:12]}): H.264 output is not reproducible here",
                     seconds)
    return Check("self-check", "codec", "ok", f"H.264 round trip, bytes identical to the recorded encode "
                 f"(libx264 {record['libx264']}, x86-64-v2 routines), mean decode error {error:.2f}", seconds)


def _store_check() -> Check:
    from .store import open_store

    start = time.perf_counter()
    columns = {"sample_id": np.array(["a", "b", "c"]), "label": np.array([1, 2, 3], np.int64),
               "top5": np.arange(15, dtype=np.int64).reshape(3, 5), "score": np.array([0.5, 0.25, 1.0], np.float32)}
    with tempfile.TemporaryDirectory(prefix="robustlab-doctor-") as tmp:
        with open_store(tmp) as st:
            run = st.register_run("doctor", "doctor", "self-check", {"n": 3})
            st.write_unit(run, "u0", columns, meta={"n_samples": 3})
            st.put_metrics(run, [("accuracy", "", 0.5)])
        with open_store(tmp, must_exist=True) as st:
            back = st.read_unit(run, "u0")
            metrics = st.get_metrics(run)
    seconds = time.perf_counter() - start
    same = all(np.array_equal(back[k], v) and back[k].dtype == v.dtype for k, v in columns.items())
    if not same or metrics != [("accuracy", "", 0.5)]:
        return Check("self-check", "store", "fail", "a SQLite store did not give back what was written", seconds)
    return Check("self-check", "store", "ok", "SQLite catalog and Parquet predictions round trip", seconds)


def _device_checks() -> list[Check]:
    part = "devices and engines"
    checks = []
    try:
        import torch
    except ImportError:
        return [Check(part, "torch", "fail", "torch is not installed")]
    if torch.cuda.is_available():
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        checks.append(Check(part, "CUDA", "ok", f"{torch.cuda.device_count()} GPU(s): {names} (CUDA {torch.version.cuda})"))
    else:
        built = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU build"
        checks.append(Check(part, "CUDA", "info", f"not available (torch {torch.__version__}, {built}): models run "
                            "on the CPU"))
    ray = installed_version("ray")
    address = os.environ.get("RAY_ADDRESS")
    if ray is None:
        checks.append(Check(part, "Ray", "info", "not installed (pip install 'robustlab[ray]' for --executor ray)"))
    else:
        where = f"RAY_ADDRESS={address}" if address else "RAY_ADDRESS not set: --executor ray starts a local Ray"
        checks.append(Check(part, "Ray", "ok", f"installed ({ray}); {where}"))
    return checks


def run_doctor(*, self_check: bool = True) -> DoctorReport:
    """Compare the stack with the lock, run the self-check (unless ``self_check=False``) and look at
    the devices; see the module docstring."""
    report = DoctorReport(environment=environment_record())
    report.checks += _stack_checks()
    if self_check:
        meta, arrays = _load_golden()
        for name, check in (("corruptions", lambda: _corruption_check(meta, arrays)),
                            ("codec", lambda: _codec_check(meta)), ("store", _store_check)):
            try:
                report.checks.append(check())
            except Exception as exc:  # a check that crashes is a failed check, named as when it runs, not a traceback
                report.checks.append(Check("self-check", name, "fail", f"{type(exc).__name__}: {exc}"))
    report.checks += _device_checks()
    return report
