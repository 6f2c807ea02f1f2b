"""The local executor's loading pipeline: slots in shared memory, sinks, images already read, worker
errors and deaths."""

from __future__ import annotations

import errno
import os
import signal
import time

import numpy as np
import pytest

from robustlab.engine import slots as slots_module
from robustlab.engine.loading import BaseImages, LoadTask, SlotSink, rebase, same_set
from robustlab.engine.pipeline import LoadingPool, raise_worker_error
from robustlab.engine.slots import SlotArena, SlotRef, slot_count
from robustlab.engine.work import BatchTask
from robustlab.errors import DataError, InputError, RobustlabError, one_line_message


def test_a_slot_written_in_one_mapping_is_read_in_another():
    with SlotArena(3, 1000) as arena:
        other = SlotArena.attach(arena.spec)
        arena.array(SlotRef(1, (2, 5, 3)))[:] = np.arange(30, dtype=np.uint8).reshape(2, 5, 3)
        np.testing.assert_array_equal(other.array(SlotRef(1, (2, 5, 3))), np.arange(30).reshape(2, 5, 3))
        assert not other.array(SlotRef(1, (2, 5, 3)), writable=False).flags.writeable
        assert arena.tensor(SlotRef(1, (2, 5, 3))).data_ptr() == arena.array(SlotRef(1, (2, 5, 3))).ctypes.data
        other.close()
        path = arena.path
        assert os.path.exists(path)
    assert not os.path.exists(path)


def test_no_room_for_the_slots_is_a_clear_error(monkeypatch):
    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(InputError, match=r"no room for the loading workers' batch buffers \(100 MiB\) in /dev/shm "
                                         r"\(No space left on device\).*Free space there, lower --batch-size or "
                                         r"--workers, or run with --workers 0"):
        SlotArena(10, 10 * 2**20)
    mine = f"{slots_module.PREFIX}{os.getpid()}-"  # other processes' runs may hold theirs meanwhile
    assert not [f for f in os.listdir(slots_module.SHM_FOLDER) if f.startswith(mine)]


def test_slot_count_keeps_two_batches_per_worker_within_the_budget():
    assert slot_count(4, 10_000) == 10
    assert slot_count(15, 256 * 224 * 224 * 3) == 27  # 1 GiB of 38.5 MB slots
    assert slot_count(0, 100) == 4 and slot_count(40, 1 << 30) == 4


def test_a_sink_writes_into_its_slot_and_falls_back_when_a_shape_changes():
    with SlotArena(2, 4 * 8 * 8 * 3) as arena:
        sink = SlotSink(arena, 1, capacity=4)
        images = [np.full((8, 8, 3), k, np.uint8) for k in range(3)]
        for image in images:
            sink.add(image)
        ref = sink.result("u")
        assert ref == SlotRef(1, (3, 8, 8, 3)) and not sink.keeps
        np.testing.assert_array_equal(arena.array(ref), np.stack(images))

        mixed = SlotSink(arena, 0, capacity=4)
        mixed.add(images[0])
        mixed.add(images[1])
        mixed.add(np.zeros((4, 4, 3), np.uint8))
        arena.array(SlotRef(0, (2, 8, 8, 3)))[:] = 99  # the slot is reused: the kept images are copies
        got = mixed.result("u")
        assert isinstance(got, list) and [g.shape for g in got] == [(8, 8, 3), (8, 8, 3), (4, 4, 3)] and mixed.keeps
        np.testing.assert_array_equal(got[1], images[1])

        large = SlotSink(arena, 0, capacity=4)
        large.add(np.zeros((16, 16, 3), np.uint8))
        assert isinstance(large.result("u"), np.ndarray)  # stacked as before, outside the slot


def test_images_already_read_raise_what_reading_raised():
    class Source:
        ids = ("a", "b", "c")
        labels = np.array([0, 1, 2])

        def __len__(self):
            return 3

    images = BaseImages(Source(), np.zeros((2, 4, 4, 3), np.uint8), start=1,
                        failures={2: ("DataError", "cannot read image b.png: truncated")})
    assert images.read(1).shape == (4, 4, 3) and images.id(2) == "c" and list(images.labels) == [0, 1, 2]
    with pytest.raises(DataError, match="cannot read image b.png: truncated"):
        images.read(2)
    assert rebase(Source(), 0, images) is images


def test_same_set_compares_what_decides_the_pixels(tmp_path):
    from robustlab.corruptions.views import corrupt_on_the_fly
    from robustlab.data.classification import PreparedSamples, read_image_folder

    (tmp_path / "a").mkdir()
    for k in range(2):
        (tmp_path / "a" / f"{k}.png").write_bytes(b"")
    base = read_image_folder(tmp_path)
    again = read_image_folder(tmp_path)
    assert base is not again and same_set(base, again)
    assert same_set(corrupt_on_the_fly(base, "fog", 2, seed=1), corrupt_on_the_fly(again, "fog", 2, seed=1))
    assert not same_set(corrupt_on_the_fly(base, "fog", 2, seed=1), corrupt_on_the_fly(again, "fog", 2, seed=2))
    assert not same_set(PreparedSamples(base, None), base)
    assert not same_set(base, base.subset(0, 1))


def test_errors_from_a_worker_keep_their_class_and_message():
    with pytest.raises(DataError, match=r"^file x is gone$"):
        raise_worker_error(("DataError", "file x is gone\nTraceback (most recent call last):\n  ..."), "u")
    with pytest.raises(KeyError) as caught:
        raise_worker_error(("KeyError", "'label'\nTraceback (most recent call last):\n  File ...\nKeyError: 'label'"),
                           "fog/3/shard-0000")
    assert "Caught KeyError in a loading worker (fog/3/shard-0000)" in str(caught.value)
    assert one_line_message(caught.value) == "'label'"


class _Bench:
    """A benchmark whose loading takes a while (the worker is killed meanwhile)."""

    def load(self, source, i, prepare):
        time.sleep(30)


def test_a_worker_that_dies_is_named_and_the_run_stops(tmp_path):
    with SlotArena(4, 1000) as arena:
        pool = LoadingPool(_Bench(), None, 1, arena)
        try:
            pool.submit(LoadTask(1, BatchTask("u", [0], 0, 1), None))
            (proc,) = pool._procs
            deadline = time.time() + 60
            while not proc.is_alive() and time.time() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
            os.kill(proc.pid, signal.SIGKILL)
            with pytest.raises(RobustlabError, match=r"a loading worker process died \(pid \d+ exit -9\).*Lower "
                                                     r"--workers or --batch-size"):
                pool.get()
        finally:
            pool.close()


def test_arena_files_of_dead_processes_are_removed(tmp_path):
    dead = subprocess_pid_that_exited()
    orphan = tmp_path / f"{slots_module.PREFIX}{dead}-abc"
    alive = tmp_path / f"{slots_module.PREFIX}{os.getpid()}-abc"
    orphan.write_bytes(b"x")
    alive.write_bytes(b"x")
    assert slots_module.remove_orphans(str(tmp_path)) == [orphan.name]
    assert not orphan.exists() and alive.exists()


def subprocess_pid_that_exited() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid
