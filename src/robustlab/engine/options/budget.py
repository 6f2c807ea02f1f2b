"""Memory bounds of a run: what a resize or crop needs, checked before anything runs."""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ...models.preprocessing import Preprocessing

#: Batches a local run holds at once per decoding worker (the DataLoader's prefetch), plus the
#: one being run and the one being stored.
BATCHES_IN_FLIGHT_PER_WORKER = 4


def available_memory() -> int | None:
    """Bytes of memory this process may still use: the smaller of the system's available memory
    (``MemAvailable``) and the room left under a cgroup limit; None when unknown (not Linux)."""
    found = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit.isdigit():
            found.append(max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def check_preprocessing_budget(preprocessing: Preprocessing | None, batch_size: int, workers: int, *,
                               max_pixels: int | None = None) -> int:
    """Refuse a resize or crop whose images cannot fit, before anything runs; return the estimate.

    The estimate (bytes): every decoding worker holds one resized image (3 bytes per pixel of
    the ``resize x resize`` square, a lower bound for any aspect ratio), each batch in flight
    holds ``batch_size`` images at the input size (uint8), and the model's float input with its
    first activations takes about 8 times that of one batch. A resized or cropped image larger
    than ``max_pixels`` (the decompression-bomb limit) is refused as well.

    Raises
    ------
    InputError
        Naming the size asked for, the estimate, the memory available and the fix.
    """
    from ...data.images import check_max_pixels

    if preprocessing is None:
        return 0
    resized = preprocessing.resize ** 2 if preprocessing.resize else 0
    crop = preprocessing.crop[0] * preprocessing.crop[1] if preprocessing.crop else 0
    out = crop or resized
    limit = check_max_pixels(max_pixels)
    for name, area, value in (("--resize", resized, preprocessing.resize), ("--crop", crop, preprocessing.crop)):
        if area > limit:
            raise InputError(f"{name} {value} makes images of {area:,} pixels or more, over the limit of {limit:,} "
                             "(--max-pixels, a decompression-bomb guard): give a model input size in pixels, e.g. "
                             "--resize 256 --crop 224.")
    if not out:
        return 0
    batches = max(1, workers) * BATCHES_IN_FLIGHT_PER_WORKER + 2
    estimate = max(1, workers) * 3 * max(resized, out) + batches * batch_size * 3 * out + 8 * batch_size * 3 * out * 4
    room = available_memory()
    if room is not None and estimate > 0.8 * room:
        raise InputError(f"--resize {preprocessing.resize} / --crop {preprocessing.crop} with --batch-size {batch_size} "
                         f"and {workers} worker(s) needs about {estimate / 2**30:.1f} GiB, but {room / 2**30:.1f} GiB "
                         "are available: use a smaller --resize/--crop (the model's input size), a smaller "
                         "--batch-size or fewer --workers.")
    return estimate


