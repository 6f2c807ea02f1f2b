"""Sample and batch records: context travels as typed columns, pixels stacked or listed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from robustlab.engine.records import Batch, Sample, collate, to_float
from robustlab.errors import InputError, RobustlabError


@dataclass(frozen=True)
class Where:
    native_hw: tuple[int, int]
    index: int
    rmse: float


def img(h: int, w: int, value: int = 7) -> np.ndarray:
    return np.full((h, w, 3), value, np.uint8)


def test_equal_shapes_are_stacked_and_context_becomes_typed_columns():
    batch = collate([Sample("a", 3, img(4, 5, 10), Where((40, 50), 7, 1.5)),
                     Sample("b", 1, img(4, 5, 20), Where((30, 20), 9, float("nan")))], unit="u/0", start=6)
    assert batch.stacked and batch.pixels.shape == (2, 4, 5, 3)
    assert batch.ids.tolist() == ["a", "b"] and batch.labels.dtype == np.int64 and batch.labels.tolist() == [3, 1]
    assert batch.positions.tolist() == [6, 7]
    assert batch.context["native_hw"].tolist() == [[40, 50], [30, 20]] and batch.context["native_hw"].dtype.kind == "i"
    assert batch.context["index"].tolist() == [7, 9] and batch.context["rmse"].dtype == np.float64
    x = batch.inputs("cpu")
    assert x.shape == (2, 3, 4, 5) and x.dtype == torch.float32
    assert torch.allclose(x[1, :, 0, 0], torch.full((3,), 20 / 255))


def test_different_shapes_stay_a_list_at_native_size():
    batch = collate([Sample("a", 0, img(4, 5)), Sample("b", 0, img(6, 3))])
    assert not batch.stacked and [p.shape for p in batch.pixels] == [(4, 5, 3), (6, 3, 3)]
    xs = batch.inputs("cpu")
    assert [tuple(x.shape) for x in xs] == [(3, 4, 5), (3, 6, 3)]
    with pytest.raises(InputError, match="different sizes.*--resize"):
        batch.stacked_inputs("cpu")


def test_frame_stacks_keep_their_time_axis():
    frames = np.stack([img(4, 4, v) for v in (0, 51, 102)])
    batch = collate([Sample("s0", 2, frames), Sample("s1", 2, frames)])
    x = batch.inputs("cpu")
    assert x.shape == (2, 3, 3, 4, 4)  # (B, T, C, H, W)
    assert torch.allclose(x[0, 1, :, 0, 0], torch.full((3,), 0.2))


def test_samples_without_pixels_and_mixed_batches():
    batch = collate([Sample("a", 0, None, Where((1, 1), 0, 0.0))])
    assert batch.pixels is None and batch.context["index"].tolist() == [0]
    with pytest.raises(RobustlabError, match="no pixels"):
        batch.inputs("cpu")
    with pytest.raises(RobustlabError, match="some samples of a batch have pixels"):
        collate([Sample("a", 0, img(2, 2)), Sample("b", 0, None)])


def test_empty_batch_and_problems_travel_with_it():
    batch = collate([], unit="u", start=4, positions=[], problems=[(4, "bad.png", "unreadable")])
    assert len(batch) == 0 and batch.pixels is None and batch.problems == [(4, "bad.png", "unreadable")]
    assert batch.ids.shape == (0,) and batch.labels.dtype == np.int64


def test_to_float_accepts_numpy_and_torch():
    a = to_float(img(2, 3, 255), "cpu")
    b = to_float(torch.from_numpy(img(2, 3, 255)), "cpu", channels_first=False)
    assert a.shape == (3, 2, 3) and b.shape == (2, 3, 3) and float(a.max()) == 1.0 == float(b.min())


def test_batches_never_cross_units_and_retries_fill_one_slot(tmp_path):
    from robustlab.engine import Unit
    from robustlab.engine.work import UnitResults, UnitWork

    work = UnitWork(Unit("u", "s"), source=None, size=5, fingerprint="ids:x")
    results = UnitResults(work, batch_size=2)
    assert results.n_batches == 3
    b0 = collate([Sample("a", 1, img(1, 1)), Sample("b", 2, img(1, 1))], unit="u", start=0)
    b2 = collate([Sample("e", 5, img(1, 1))], unit="u", start=4)
    b1 = collate([Sample("c", 3, img(1, 1))], unit="u", start=2, positions=[2], problems=[(3, "d", "broken")])
    assert results.add(b2, {"p": np.array([50])})
    assert results.add(b0, {"p": np.array([10, 20])})
    assert not results.add(b0, {"p": np.array([99, 99])})  # a retried batch changes nothing
    assert not results.complete
    assert results.add(b1, {"p": np.array([30])}) and results.complete
    columns, problems = results.columns()
    assert columns["sample_id"].tolist() == ["a", "b", "c", "e"] and columns["p"].tolist() == [10, 20, 30, 50]
    assert columns["label"].tolist() == [1, 2, 3, 5] and problems == [("d", "broken")]


def test_store_commits_a_unit_once(tmp_path):
    from robustlab.store import open_store

    with open_store(tmp_path) as st:
        rid = st.register_run("m", "b", "d", {})
        first = {"sample_id": np.array(["a"]), "label": np.array([1])}
        second = {"sample_id": np.array(["a"]), "label": np.array([2])}
        assert st.write_unit(rid, "u", first, replace=False) is True
        assert st.write_unit(rid, "u", second, replace=False) is False
        assert st.read_unit(rid, "u")["label"].tolist() == [1]
        assert st.unit_meta(rid) == {"u": {}}
        assert st.write_unit(rid, "u", second) is True  # replace=True (the default) replaces
        assert st.read_unit(rid, "u")["label"].tolist() == [2]


def test_batch_pin_memory_is_a_no_op_without_cuda():
    batch = Batch("u", 0, np.arange(1), np.array(["a"]), np.array([0]), pixels=torch.zeros(1, 2, 2, 3, dtype=torch.uint8))
    if not torch.cuda.is_available():
        pytest.skip("pinning memory needs a CUDA device")
    assert batch.pin_memory().pixels.is_pinned()
