"""Batch slots in shared memory: where loading workers put a batch's pixels.

The local executor's workers write each batch's uint8 pixels straight into a *slot* of one
shared file (:class:`SlotArena`), and send the main process a few bytes naming the slot
(:class:`SlotRef`). Nothing of the pixels is pickled, copied into a queue or collated in the
main process, and the arena's pages stay mapped for the whole run (no page faults per batch).
On a CUDA device the main process registers the arena as pinned host memory once, so a batch
goes from the slot to the device by DMA, overlapped with the model.

The arena lives in ``/dev/shm`` when that has room, else in the temporary folder (the page
cache of a mapped file serves the same); its space is reserved up front (``posix_fallocate``),
so a full filesystem is a clear error at the start, never a bus error in the middle of a run.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

#: Where the arena goes first (a RAM filesystem on Linux).
SHM_FOLDER = "/dev/shm"


@dataclass(frozen=True)
class SlotRef:
    """The pixels of a batch in slot ``index`` of the arena: ``shape`` and ``dtype`` of the
    stacked array that starts at the slot's first byte."""

    index: int
    shape: tuple[int, ...]
    dtype: str = "uint8"

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


class SlotArena:
    """``count`` slots of ``slot_bytes`` bytes each, in one shared mapped file.

    Create it in the main process (``SlotArena(count, slot_bytes)``), give workers its
    :attr:`spec` and let them :meth:`attach`; :meth:`array` is a numpy view of a slot's
    pixels (read-only with ``writable=False``). ``shared=False`` keeps the slots in this
    process's own memory (no workers). With ``count`` or ``slot_bytes`` 0 no memory is used
    (batches are then stacked as they load)."""

    def __init__(self, count: int, slot_bytes: int, *, path: str | None = None, create: bool = True,
                 shared: bool = True) -> None:
        self.count, self.slot_bytes = int(count), int(slot_bytes)
        self.size = self.count * self.slot_bytes
        self.path = path
        self.owner = create
        self._pinned = False
        self._map: mmap.mmap | None = None
        self._buffer: np.ndarray = np.zeros(0, np.uint8)
        if self.size == 0:
            return
        if not shared:  # one process (no workers): plain memory, its pages reused batch after batch
            self._buffer = np.empty(self.size, np.uint8)
            return
        if create:
            self.path = _reserve(self.size)
        with open(self.path, "r+b") as fh:
            self._map = mmap.mmap(fh.fileno(), self.size)
        self._buffer = np.frombuffer(self._map, dtype=np.uint8)

    @property
    def spec(self) -> tuple[str | None, int, int]:
        """What a worker needs to :meth:`attach` (path, count, slot size)."""
        return self.path, self.count, self.slot_bytes

    @classmethod
    def attach(cls, spec: tuple[str | None, int, int]) -> SlotArena:
        path, count, slot_bytes = spec
        return cls(count, slot_bytes, path=path, create=False)

    def fits(self, shape: tuple[int, ...], dtype=np.uint8) -> bool:
        return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize <= self.slot_bytes

    def array(self, ref: SlotRef, *, writable: bool = True) -> np.ndarray:
        """A numpy view of the slot's pixels (no copy)."""
        start = ref.index * self.slot_bytes
        view = self._buffer[start:start + ref.nbytes].view(ref.dtype).reshape(ref.shape)
        if not writable:
            view = view.view()
            view.flags.writeable = False
        return view

    def tensor(self, ref: SlotRef):
        """The slot's pixels as a torch tensor sharing the arena's memory (pinned after :meth:`pin`)."""
        import torch
        import warnings

        with warnings.catch_warnings():  # a view of a read-write mapping: torch warns for read-only ones only
            warnings.simplefilter("ignore")
            return torch.from_numpy(self.array(ref))

    def pin(self) -> bool:
        """Register the arena as pinned (page-locked) host memory with CUDA, so copies from its
        slots to the device are asynchronous DMA. False when CUDA refused (the copies then still
        work, synchronously)."""
        if self._pinned or self.size == 0:
            return self._pinned
        import torch

        result = torch.cuda.cudart().cudaHostRegister(self._buffer.ctypes.data, self.size, 0)
        self._pinned = int(result) == 0
        return self._pinned

    def unlink(self) -> None:
        """Remove the arena's file once every process that uses it has mapped it: the memory lives
        on in the mappings and goes when the last of them ends, so a run killed by SIGKILL leaves
        nothing behind in /dev/shm."""
        if self.owner and self.path:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            self.path = None

    def close(self) -> None:
        if self._pinned:
            import torch

            with contextlib.suppress(Exception):
                torch.cuda.cudart().cudaHostUnregister(self._buffer.ctypes.data)
            self._pinned = False
        self._buffer = np.zeros(0, np.uint8)
        if self._map is not None:
            with contextlib.suppress(BufferError):  # a view still alive: the mapping goes with the process
                self._map.close()
            self._map = None
        self.unlink()

    def __enter__(self) -> SlotArena:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _reserve(size: int) -> str:
    """A new file of ``size`` bytes with its space reserved: in /dev/shm when it has room, else
    in the temporary folder. InputError naming both places when neither has room."""
    tried = []
    for folder in (SHM_FOLDER, None):
        if folder is not None and not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
            continue
        remove_orphans(folder or tempfile.gettempdir())
        fd, path = tempfile.mkstemp(prefix=f"{PREFIX}{os.getpid()}-", dir=folder)
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
            else:  # pragma: no cover - macOS
                os.ftruncate(fd, size)
            return path
        except OSError as exc:
            tried.append(f"{folder or tempfile.gettempdir()} ({exc.strerror or exc})")
            with contextlib.suppress(OSError):
                os.unlink(path)
        finally:
            os.close(fd)
    raise InputError(f"no room for the loading workers' batch buffers ({size / 2**20:.0f} MiB) in "
                     f"{' or '.join(tried)}. Free space there, lower --batch-size or --workers, or run "
                     "with --workers 0.")


#: Arena files are named ``robustlab-slots-<pid of the process that made it>-<random>``.
PREFIX = "robustlab-slots-"


def remove_orphans(folder: str) -> list[str]:
    """Remove the arena files in ``folder`` whose process is gone (a run killed before its workers
    had mapped the arena); returns their names."""
    removed = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        pid = name[len(PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))
            removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def slot_count(workers: int, slot_bytes: int, *, budget: int = 1 << 30, depth: int = 2) -> int:
    """How many slots a run gets: ``depth`` batches in flight per worker, two more for the main
    process (the batch on the device and the next one being copied), at least 4, within
    ``budget`` bytes when the slots are large (never fewer than 4)."""
    wanted = max(4, depth * max(1, workers) + 2)
    if slot_bytes <= 0:
        return 0
    return max(4, min(wanted, budget // slot_bytes))
