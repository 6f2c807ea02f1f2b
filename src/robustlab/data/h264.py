"""H.264 (libx264 through PyAV) whose bytes depend only on the frames and the settings.

Every mp4 robustlab writes (ImageNet-P sequences, the demo's videos) is encoded here, so one
rule holds for all of them: the same frames and settings give the same bytes, whatever the
number of workers or CPUs, the CPU affinity, the preset, the process and the point a run was
resumed from. Two things in libx264 break that, and both are fixed here:

- **Threads.** x264's output depends on its thread count, which by default follows the number
  of CPUs the process may use. Streams are opened with one thread (``threads=1``, no sliced or
  lookahead threads); throughput comes from encoding many sequences in parallel.
- **AVX-512.** On CPUs with AVX-512, x264 (core 165) picks hand-written AVX-512 routines whose
  results depend on memory left over from earlier allocations: the same frames encoded twice in
  one process gave different files (with every preset but ultrafast and superfast, in 1 to 12
  of 12 repeats). With x264's instruction sets fixed to those of x86-64-v2 (up to SSE4.2,
  :data:`X264_CPU_FLAGS`) the output is the same on every repeat and equals what the AVX and
  AVX2 routines give (checked for all ten presets, yuv444p and yuv420p, ``tune=grain``): the
  routines x264 chooses for AVX/AVX2 compute the same values, so the pinned set costs about 5 %
  of speed and makes the bytes the same on any x86-64 CPU from the last 15 years.

Where that set is not available (not x86-64, or no SSE4.2), x264 chooses for itself and
:func:`encoder_record` says ``"byte_reproducible": false`` with the reason; the mp4 files are
still valid, only not byte-comparable with those of other machines. The bytes also depend on the
libx264 build and PyAV's libav* libraries, which :func:`encoder_record` names.
"""

from __future__ import annotations

import functools
import io
import os
import platform
import re
from pathlib import Path
from typing import BinaryIO

import numpy as np

__all__ = ["X264_CPU_FLAGS", "X264_PRESETS", "encoder_record", "open_h264_stream", "write_h264", "x264_cpu_flags"]

#: x264's presets, fastest first; every one is byte-reproducible with the pinned instruction sets.
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
                "veryslow", "placebo")
#: The instruction sets x264 may use: x86-64-v2 (x264's names).
X264_CPU_FLAGS = "MMX2,SSE,SSE2,SSE3,SSSE3,SSE4.1,SSE4.2"
#: /proc/cpuinfo flags that X264_CPU_FLAGS needs.
_CPUINFO_NEEDS = ("mmx", "sse", "sse2", "pni", "ssse3", "sse4_1", "sse4_2")


def _cpu_has_x86_64_v2() -> tuple[bool, str]:
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        return False, f"the CPU is {machine or 'unknown'}, not x86-64: x264 uses its own routines for it"
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""
    match = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    if match:
        flags = set(match.group(1).split())
        missing = [f for f in _CPUINFO_NEEDS if f not in flags]
        if missing:
            return False, f"the CPU lacks {', '.join(missing)} (x86-64-v2)"
        return True, ""
    try:  # not Linux: ask NumPy's CPU dispatcher
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    if features.get("SSE42") and features.get("SSSE3"):
        return True, ""
    return False, "the CPU lacks SSE4.2 (x86-64-v2)"


@functools.lru_cache(maxsize=1)
def x264_cpu_flags() -> str | None:
    """:data:`X264_CPU_FLAGS` when this CPU has them, else None (x264 then chooses for itself)."""
    return X264_CPU_FLAGS if _cpu_has_x86_64_v2()[0] else None


def x264_params(extra: str = "") -> str:
    """The ``x264-params`` string: ``extra`` (``key=value`` pairs joined by ``:``), one thread,
    and the pinned instruction sets where the CPU has them."""
    parts = [p for p in extra.split(":") if p]
    keys = {p.split("=", 1)[0] for p in parts}
    for fixed in ("threads", "asm", "sliced-threads", "lookahead-threads"):
        if fixed in keys:
            raise ValueError(f"x264 option {fixed!r} is fixed by robustlab.data.h264 (determinism)")
    parts += ["threads=1", "lookahead-threads=1", "sliced-threads=0"]
    flags = x264_cpu_flags()
    if flags is not None:
        parts.append(f"asm={flags}")
    return ":".join(parts)


def open_h264_stream(container, *, width: int, height: int, fps: int, crf: int, preset: str = "medium",
                     pix_fmt: str = "yuv420p", tune: str | None = None, extra_params: str = ""):
    """Add a reproducible libx264 stream to an open PyAV output ``container`` and return it.

    Parameters
    ----------
    container : av.container.OutputContainer
        Opened for writing (mp4).
    width, height : int
        Frame size in pixels (even for yuv420p).
    fps : int
        Frames per second (the stream's rate).
    crf : int
        x264's constant rate factor.
    preset : str
        One of :data:`X264_PRESETS`.
    pix_fmt : str
        ``yuv420p`` or ``yuv444p`` (frames are given as rgb24 and converted by PyAV).
    tune : str, optional
        x264 tune (``grain`` for noise).
    extra_params : str
        More ``x264-params`` (``key=value:...``); threads and instruction sets are fixed here.
    """
    if preset not in X264_PRESETS:
        raise ValueError(f"unknown x264 preset {preset!r}; one of {', '.join(X264_PRESETS)}")
    stream = container.add_stream("libx264", rate=int(fps))
    stream.width, stream.height, stream.pix_fmt = int(width), int(height), pix_fmt
    stream.codec_context.thread_count = 1
    options = {"crf": str(int(crf)), "preset": preset, "x264-params": x264_params(extra_params)}
    if tune:
        options["tune"] = tune
    stream.options = options
    return stream


def write_h264(target: str | os.PathLike | BinaryIO, frames: np.ndarray, *, fps: int, crf: int,
               preset: str = "medium", pix_fmt: str = "yuv420p", tune: str | None = None,
               extra_params: str = "") -> None:
    """Encode ``frames`` (uint8 (T, H, W, 3) RGB) as one reproducible H.264 stream in an mp4.

    The one place robustlab writes a video: ``target`` is a path or a binary file object; frame
    ``i`` has pts ``i``; the stream's settings are those of :func:`open_h264_stream`. Not atomic:
    callers write to a temporary name (:func:`robustlab.fsutil.atomic_path`).
    """
    import av

    with av.open(target if hasattr(target, "write") else str(target), mode="w", format="mp4") as container:
        stream = open_h264_stream(container, width=int(frames.shape[2]), height=int(frames.shape[1]), fps=fps,
                                  crf=crf, preset=preset, pix_fmt=pix_fmt, tune=tune, extra_params=extra_params)
        for i, frame in enumerate(frames):
            picture = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
            picture.pts = i
            for packet in stream.encode(picture):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


@functools.lru_cache(maxsize=1)
def encoder_record() -> dict:
    """What decides the bytes of an mp4, for a dataset's or run's record.

    Returns
    -------
    dict
        ``libx264`` (core, read from the SEI message of a one-frame encode), ``pyav`` and the
        libav* versions, ``x264_asm`` (the pinned instruction sets, or ``"auto"``),
        ``byte_reproducible`` (bool) and, when false, ``reason``.
    """
    import av

    buffer = io.BytesIO()
    write_h264(buffer, np.zeros((1, 16, 16, 3), np.uint8), fps=1, crf=23, pix_fmt="yuv444p")
    data = buffer.getvalue()
    match = re.search(rb"x264 - (core [0-9]+(?: r[0-9]+ [0-9a-f]+)?)", data)
    record = {"libx264": match.group(1).decode() if match else "unknown", "pyav": str(av.__version__)}
    record.update({name: ".".join(map(str, v)) for name, v in sorted(av.library_versions.items())
                   if name in ("libavcodec", "libavformat", "libavutil", "libswscale")})
    ok, reason = _cpu_has_x86_64_v2()
    record["x264_asm"] = X264_CPU_FLAGS if ok else "auto"
    record["byte_reproducible"] = ok
    if not ok:
        record["reason"] = reason
    return record
