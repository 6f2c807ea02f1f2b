"""The restricted unpickler for mmdetection robustness results, and the RMSE CSV reader."""

from __future__ import annotations

import collections
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from robustlab.errors import DataError, InputError
from robustlab.metrics.corruption import ALL_CORRUPTIONS
from robustlab.metrics.importers import (
    normalise_robustness_results,
    read_mmdet_robustness_results,
    read_rmse_csv,
    restricted_loads,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "detection"
COCO_PKL = FIXTURES / "coco_faster_rcnn_r50_fpn_1x_results.pkl"
VOC_PKL = FIXTURES / "voc_faster_rcnn_r50_fpn_1x_voc0712_results.pkl"
BENCHMARK = ["gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur",
             "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform",
             "pixelate", "jpeg_compression"]


def test_reads_the_coco_reference_pickle():
    res = read_mmdet_robustness_results(COCO_PKL)
    assert list(res) == list(ALL_CORRUPTIONS) and list(res)[:15] == BENCHMARK
    assert all(sorted(v) == [0, 1, 2, 3, 4, 5] for v in res.values())
    cell = res["fog"][0]
    assert list(cell) == ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
    assert cell["AP"] == pytest.approx(0.36390756034020105, abs=1e-15)
    assert isinstance(cell["AP"], float)


def test_reads_the_voc_reference_pickle_as_per_class_arrays():
    res = read_mmdet_robustness_results(VOC_PKL)
    ap = res["gaussian_noise"][0]["AP50"]
    assert ap.shape == (20,) and ap.dtype == np.float64
    assert ap.mean() == pytest.approx(0.8045, abs=1e-4)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo robustlab-pwned > /dev/null",))


def test_pickle_running_os_system_is_refused(tmp_path):
    path = tmp_path / "evil_results.pkl"
    path.write_bytes(pickle.dumps({"fog": {0: _Evil()}}, protocol=2))
    with pytest.raises(InputError, match=r"refused to unpickle global '(posix|os|nt)\.system'") as info:
        read_mmdet_robustness_results(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("payload", [
    (eval, ("1+1",)),
    (getattr, (object, "__subclasses__")),
    (collections.Counter, ()),
])
def test_other_callables_are_refused(payload):
    class Reducer:
        def __reduce__(self):
            return payload

    with pytest.raises(InputError, match="refused to unpickle global"):
        restricted_loads(pickle.dumps(Reducer()))


def test_object_arrays_and_odd_codecs_are_refused():
    with pytest.raises(InputError, match="only numeric dtypes"):
        restricted_loads(pickle.dumps(np.array([1, "a"], dtype=object)))
    crafted = (b"\x80\x02c_codecs\nencode\nq\x00X\x03\x00\x00\x00abcq\x01X\x04\x00\x00\x00zlibq\x02\x86q\x03Rq\x04.")
    with pytest.raises(InputError, match="latin-1"):
        restricted_loads(crafted)


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_plain_data_round_trips_at_every_protocol(protocol):
    data = collections.OrderedDict(fog={0: {"bbox": {"AP": np.float64(0.5)}}, 1: [{"ap": np.float32(0.25)}]},
                                   extra={"arr": np.arange(6.0).reshape(2, 3), "set": {1, 2}, "bytes": b"x"})
    out = restricted_loads(pickle.dumps(data, protocol=protocol))
    assert out["fog"][0]["bbox"]["AP"] == 0.5
    np.testing.assert_array_equal(out["extra"]["arr"], data["extra"]["arr"])
    assert out["extra"]["set"] == {1, 2} and out["extra"]["bytes"] == b"x"


def test_truncated_and_missing_files_are_data_errors(tmp_path):
    path = tmp_path / "cut.pkl"
    path.write_bytes(COCO_PKL.read_bytes()[:500])
    with pytest.raises(DataError, match="not a readable pickle"):
        read_mmdet_robustness_results(path)
    with pytest.raises(DataError, match="absent.pkl does not exist"):
        read_mmdet_robustness_results(tmp_path / "absent.pkl")


def test_normalise_rejects_wrong_nesting():
    with pytest.raises(DataError, match="severity key 'x'"):
        normalise_robustness_results({"fog": {"x": {"AP": 0.1}}})
    with pytest.raises(DataError, match="no 'bbox' results"):
        normalise_robustness_results({"fog": {0: {"segm": {"AP": 0.1}}}})
    with pytest.raises(DataError, match="'ap' entry"):
        normalise_robustness_results({"fog": {0: [{"recall": 1}]}})
    with pytest.raises(DataError, match="expected a number"):
        normalise_robustness_results({"fog": {0: {"AP": "high"}}})
    assert normalise_robustness_results({"fog": {"2": {"segm": {"AP": 0.1}}}}, task="segm") == {"fog": {2: {"AP": 0.1}}}


def test_read_rmse_csv(tmp_path):
    path = tmp_path / "rmse.csv"
    path.write_text('"corruption","severity","RMSE"\n"fog",1,10.5\n"fog",2,11.0\n"snow",1,3\n')
    assert read_rmse_csv(path) == {"fog": {1: 10.5, 2: 11.0}, "snow": {1: 3.0}}
    path.write_text("corruption,level,RMSE\nfog,1,2\n")
    with pytest.raises(DataError, match="missing columns"):
        read_rmse_csv(path)
    path.write_text("corruption,severity,RMSE\nfog,one,2\n")
    with pytest.raises(DataError, match="line 2"):
        read_rmse_csv(path)
