"""Work streams: units are listed lazily, and stored units stay tied to the data they measured."""

from __future__ import annotations

from dataclasses import dataclass

import os
import time
from pathlib import Path

import numpy as np
import pytest
from .conftest import WNIDS, make_folder
from tiny_models import ChannelModel

from robustlab.data.images import write_image
from robustlab.engine import Benchmark, DataChangedError, RunConfig, Sample, Unit, evaluate, register_benchmark
from robustlab.engine.schema import Option
from robustlab.store import open_store

EVENTS: list[tuple[str, str]] = []


class Listed:
    def __init__(self, key: str, n: int) -> None:
        self.key, self.n = key, n
        self.labels = np.zeros(n, np.int64)
        self.ids = tuple(f"{key}/{i}" for i in range(n))

    def __len__(self) -> int:
        return self.n

    def read(self, i: int) -> np.ndarray:
        return np.full((8, 8, 3), i, np.uint8)


@dataclass(frozen=True, kw_only=True)
class EventLogConfig(RunConfig):
    units: int
    num_classes: int


@register_benchmark
class EventLog(Benchmark):
    """Records when units are planned, listed and predicted."""

    name = "test-event-log"
    options = (Option("units", "int", 5),)
    config_class = EventLogConfig

    def configure(self, data, *, units):
        return EventLogConfig(data=data, units=units, num_classes=1000)

    def plan(self, config):
        for k in range(config.units):
            EVENTS.append(("plan", f"u{k}"))
            yield Unit(f"u{k}", "all")

    def samples(self, config, unit):
        EVENTS.append(("list", unit.key))
        return Listed(unit.key, 4)

    def predict(self, model, batch, config):
        EVENTS.append(("predict", batch.unit))
        return super().predict(model, batch, config)

    def metrics(self, config, predictions, related=None):
        return [("n", "", float(sum(len(c["label"]) for c in predictions.values())))]


def test_first_batch_runs_before_later_units_are_listed(tmp_path):
    EVENTS.clear()
    result = evaluate(ChannelModel(), "test-event-log", "x", store=tmp_path, workers=0, batch_size=4, progress=False)
    assert result.metric("n") == 20 and result.units_total == 5
    first_predict = EVENTS.index(("predict", "u0"))
    assert first_predict < EVENTS.index(("list", "u4")) and first_predict < EVENTS.index(("plan", "u4"))
    assert EVENTS.index(("list", "u1")) > EVENTS.index(("plan", "u1"))


def test_streaming_with_worker_processes_gives_the_same_columns(tmp_path):
    a = evaluate(ChannelModel(), "test-event-log", "x", store=tmp_path / "a", workers=0, batch_size=3, progress=False)
    b = evaluate(ChannelModel(), "test-event-log", "x", store=tmp_path / "b", workers=1, batch_size=3, progress=False)
    with open_store(tmp_path / "a") as sa, open_store(tmp_path / "b") as sb:
        pa, pb = sa.read_predictions(a.run_id), sb.read_predictions(b.run_id)
    assert pa.keys() == pb.keys()
    for unit in pa:
        for name in pa[unit]:
            assert np.array_equal(pa[unit][name], pb[unit][name]), (unit, name)


# --- runs tied to their data ---------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path) -> Path:
    return make_folder(tmp_path / "data", WNIDS, 3, size=(32, 32))


def run(folder: Path, store: Path, **kw):
    return evaluate(ChannelModel(), "corrupted", folder, store=store, corruptions="brightness", severities="1",
                    workers=0, progress=False, **kw)


def test_rerun_after_the_data_changed_refuses_the_stored_numbers(folder, tmp_path):
    first = run(folder, tmp_path / "s")
    assert first.metric("n_samples", "clean") == 9
    victim = folder / WNIDS[0] / "img_000.JPEG"
    write_image(victim, np.zeros((32, 32, 3), np.uint8))  # replaced with other pixels
    os.utime(victim, ns=(time.time_ns(), time.time_ns() + 10**9))
    with pytest.raises(DataChangedError, match="changed.*--tag"):
        run(folder, tmp_path / "s")
    again = run(folder, tmp_path / "s", tag="after-edit")  # a new run; the old one is kept
    assert again.run_id != first.run_id and again.units_computed == again.units_total
    with open_store(tmp_path / "s") as st:
        assert {r.id for r in st.list_runs()} == {first.run_id, again.run_id}


def test_deleted_images_are_named_as_a_change(folder, tmp_path):
    run(folder, tmp_path / "s")
    (folder / WNIDS[1] / "img_002.JPEG").unlink()
    with pytest.raises(DataChangedError, match="had 9 samples and now has 8"):
        run(folder, tmp_path / "s")


def test_resume_after_a_kill_refuses_to_mix_old_and_new_data(folder, tmp_path):
    first = run(folder, tmp_path / "s")
    with open_store(tmp_path / "s") as st:
        st.delete_unit(first.run_id, "brightness/1/shard-0000")  # as if killed before this unit
    make_folder(folder, WNIDS, 4, size=(32, 32), seed=5)  # data grows (and changes) in between
    with pytest.raises(DataChangedError):
        run(folder, tmp_path / "s")
    with open_store(tmp_path / "s") as st:  # nothing new was written
        assert st.completed_units(first.run_id) == {"clean/shard-0000"}


def test_content_fingerprints_see_an_edit_that_keeps_size_and_mtime(folder, tmp_path):
    first = run(folder, tmp_path / "s", fingerprint="content")
    victim = folder / WNIDS[2] / "img_001.JPEG"
    stat = victim.stat()
    data = bytearray(victim.read_bytes())
    data[-3] ^= 0xFF  # same size
    victim.write_bytes(bytes(data))
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    with open_store(tmp_path / "s") as st:
        assert all(m["fingerprint"].startswith("content:") for m in st.unit_meta(first.run_id).values())
    with pytest.raises(DataChangedError):
        run(folder, tmp_path / "s")


def test_unchanged_data_reruns_at_once(folder, tmp_path):
    first = run(folder, tmp_path / "s")
    again = run(folder, tmp_path / "s")
    assert again.run_id == first.run_id and again.units_computed == 0 and again.metrics == first.metrics
