"""Run options: --precision, --channels-last, --compile, --decode. Each is part of the run's identity
when not the default, and what cannot run here is refused before any unit runs, naming the option."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .conftest import WNIDS, make_folder
from tiny_models import TinyCNN

from robustlab.data.classification import read_image_folder, read_prepared
from robustlab.engine import evaluate
from robustlab.engine.executor import ImagePreparer, LocalExecutor, ModelRef
from robustlab.engine.runtime import RunOptions
from robustlab.errors import InputError
from robustlab.models import load_model
from robustlab.models.pixels import decode_on_device, is_encoded
from robustlab.store import open_store

OPTIONS = {"corruptions": "fog", "severities": "2", "workers": 0, "device": "cpu", "progress": False, "batch_size": 4}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_folder(tmp_path_factory.mktemp("data"), WNIDS, 4, size=(48, 48), seed=3)


def runs(store):
    with open_store(store) as st:
        return st.list_runs()


def test_the_defaults_add_nothing_to_a_runs_identity(folder, tmp_path):
    """Runs stored before these options existed keep their ids: fp32, no compile... add no key."""
    model = TinyCNN(1000)
    plain = evaluate(model, "corrupted", folder, store=tmp_path, **OPTIONS)
    spelled = evaluate(model, "corrupted", folder, store=tmp_path, precision="fp32", channels_last=False,
                       compile=False, decode="cpu", **OPTIONS)
    assert spelled.run_id == plain.run_id and spelled.units_computed == 0
    assert not set(plain.config) & {"precision", "channels_last", "compile", "decode"}


def test_bf16_is_another_run_never_an_answer_for_fp32(folder, tmp_path):
    model = TinyCNN(1000)
    fp32 = evaluate(model, "corrupted", folder, store=tmp_path, **OPTIONS)
    bf16 = evaluate(model, "corrupted", folder, store=tmp_path, precision="bf16", **OPTIONS)
    assert bf16.run_id != fp32.run_id and bf16.units_computed == 2 and bf16.config["precision"] == "bf16"
    again = evaluate(model, "corrupted", folder, store=tmp_path, precision="bf16", **OPTIONS)
    assert again.run_id == bf16.run_id and again.units_computed == 0
    layout = evaluate(model, "corrupted", folder, store=tmp_path, channels_last=True, **OPTIONS)
    assert layout.run_id not in (fp32.run_id, bf16.run_id) and layout.config["channels_last"] is True
    assert len(runs(tmp_path)) == 3


def test_bf16_predictions_agree_with_fp32_on_most_images(tmp_path):
    """A random tiny CNN: autocast changes the arithmetic, not the model (here top-1 agrees on all but
    a few images; docs/torch-backend.md has the agreement measured on real models)."""
    model = TinyCNN(3)
    folder = make_folder(tmp_path / "data", ("cat", "dog", "fox"), 4, size=(48, 48), seed=3)

    def top1(store, **extra):
        result = evaluate(model, "corrupted", folder, store=store, **{**OPTIONS, **extra})
        with open_store(store) as st:
            cols = st.read_predictions(result.run_id)
        return np.concatenate([cols[u]["top5_index"][:, 0] for u in sorted(cols)])

    fp32, bf16 = top1(tmp_path / "a"), top1(tmp_path / "b", precision="bf16")
    assert len(fp32) == 24 and (fp32 == bf16).mean() >= 0.75


@pytest.mark.parametrize("options, named", [
    ({"decode": "gpu"}, "--decode gpu decodes JPEG files with nvJPEG on a CUDA device"),
    ({"precision": "fp8"}, "unknown precision 'fp8'"),
    ({"decode": "nvjpeg"}, "unknown decoder 'nvjpeg'"),
])
def test_what_cannot_run_here_is_refused_before_any_unit(folder, tmp_path, options, named):
    with pytest.raises(InputError, match=named):
        evaluate(TinyCNN(1000), "corrupted", folder, store=tmp_path, **{**OPTIONS, **options})
    assert runs(tmp_path) == []


def test_compile_where_torch_cannot_compile_is_refused(folder, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("Dynamo is not supported on this Python")

    monkeypatch.setattr(torch, "compile", broken)
    with pytest.raises(InputError, match=r"--compile: torch.compile cannot compile for cpu here .*Dynamo is not "
                                         r"supported.*run without --compile"):
        evaluate(TinyCNN(1000), "corrupted", folder, store=tmp_path, compile=True, **OPTIONS)
    assert runs(tmp_path) == []


def test_a_precision_the_device_cannot_run_is_refused(folder, tmp_path, monkeypatch):
    real = torch.autocast

    def refusing(device_type, dtype=None, **kw):
        if dtype == torch.float16:
            raise RuntimeError(f"In {device_type} autocast, but the target dtype is not supported")
        return real(device_type, dtype=dtype, **kw)

    monkeypatch.setattr(torch, "autocast", refusing)
    with pytest.raises(InputError, match=r"--precision fp16: autocast with torch.float16 does not run on cpu.*use "
                                         r"--precision fp32, or bf16"):
        evaluate(TinyCNN(1000), "corrupted", folder, store=tmp_path, precision="fp16", **OPTIONS)
    assert runs(tmp_path) == []


def test_gpu_decode_is_for_the_local_executor_and_released_files(folder):
    from robustlab.benchmarks.corruption import ImageNetC
    from robustlab.engine.evaluation import check_run_options

    class Ray:
        name = "ray"

    bench = ImageNetC()
    released = bench.config_class(data="/d", layout="folders", corruptions=["fog"], severities=[1], clean_data=None,
                                  top_k=5, save_logits=False, num_classes=3, baseline="alexnet", clean_run=None,
                                  baseline_run=None)
    with pytest.raises(InputError, match="--decode gpu runs with the local executor"):
        check_run_options(RunOptions(decode="gpu"), bench, released, "cpu", Ray())
    with pytest.raises(InputError, match="applies to benchmarks that read released image files"):
        RunOptions(decode="gpu")._check_decode(torch.device("cuda"), reads_files=False)
    assert bench.reads_files(released) and not bench.reads_files(released.replace(layout="on-the-fly"))


def test_gpu_decode_sends_jpeg_bytes_and_decodes_them_on_the_models_device(folder, tmp_path):
    """The mechanism of --decode gpu, run on the CPU (torchvision's libjpeg decoder stands in for
    nvJPEG): workers send the bytes of JPEG files (other formats decoded as usual), the executor
    decodes each batch on the device before the model."""
    samples = read_image_folder(folder)
    prepare = ImagePreparer(decode="gpu")
    encoded = read_prepared(samples, 0, prepare)
    assert is_encoded(encoded) and encoded.dtype == np.uint8 and bytes(encoded[:3]) == b"\xff\xd8\xff"
    decoded = decode_on_device([encoded, samples.read(1)], "cpu")
    assert decoded.shape == (2, 48, 48, 3) and decoded.dtype == torch.uint8
    assert np.abs(decoded[0].numpy().astype(int) - samples.read(0)).mean() < 2  # another JPEG decoder

    from robustlab.benchmarks.corruption import ImageNetC
    from robustlab.engine.work import UnitStream

    released = tmp_path / "released"
    for c in ("fog",):
        make_folder(released / c / "1", WNIDS, 3, size=(32, 32), seed=9)
    bench = ImageNetC()
    results = {}
    for decode in ("cpu", "gpu"):
        config = bench.config_for(str(released), corruptions="fog", severities="1")
        config = config.replace(decode="gpu") if decode == "gpu" else config
        net = load_model(TinyCNN(1000), device="cpu")
        with open_store(tmp_path / decode) as store:
            run_id = store.register_run("tiny", bench.name, "d", config.to_dict(), {})
            LocalExecutor(workers=0).run(ModelRef(net), bench, config, UnitStream(bench, config, {}), store, run_id,
                                         batch_size=4, progress=False)
            results[decode] = store.read_predictions(run_id)
    assert results["gpu"].keys() == results["cpu"].keys()
    for unit, cols in results["gpu"].items():
        assert len(cols["sample_id"]) == 9
        assert (cols["top5_index"][:, 0] == results["cpu"][unit]["top5_index"][:, 0]).mean() >= 0.5


def test_run_options_round_trip_through_the_config():
    from robustlab.engine import RunConfig

    options = RunOptions(precision="bf16", channels_last=True, compile=True, decode="gpu")
    config = RunConfig(data="/d", **options.config())
    assert RunOptions.from_config(config) == options
    assert RunOptions.from_config(RunConfig.from_dict(config.to_dict())) == options  # through the stored form
    assert RunOptions.from_config(RunConfig(data="/d")) == RunOptions() and RunOptions().config() == {}
    with pytest.raises(InputError, match="channels_last must be true or false"):
        RunOptions(channels_last="yes")


@pytest.mark.slow
def test_compiled_model_gives_the_uncompiled_predictions(tmp_path):
    """torch.compile on the CPU (inductor, C++): the same top-5 classes, scores within float rounding."""
    folder = make_folder(tmp_path / "data", ("cat", "dog", "fox"), 4, size=(48, 48), seed=1)
    model = TinyCNN(3)
    plain = evaluate(model, "corrupted", folder, store=tmp_path / "s", **OPTIONS)
    compiled = evaluate(model, "corrupted", folder, store=tmp_path / "s", compile=True, **OPTIONS)
    assert compiled.run_id != plain.run_id and compiled.config["compile"] is True
    with open_store(tmp_path / "s") as st:
        a, b = st.read_predictions(plain.run_id), st.read_predictions(compiled.run_id)
    for unit in a:
        np.testing.assert_array_equal(a[unit]["top5_index"], b[unit]["top5_index"])
        np.testing.assert_allclose(a[unit]["top5_score"], b[unit]["top5_score"], atol=1e-5)


class _StopAfter(TinyCNN):
    """Raises KeyboardInterrupt (a Ctrl-C) once ``batches`` batches have run."""

    def __init__(self, batches: int) -> None:
        super().__init__(1000)
        self.left = batches

    def forward(self, x):
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return super().forward(x)


def test_an_interrupted_bf16_run_resumes_to_the_uninterrupted_columns(folder, tmp_path):
    options = {**OPTIONS, "batch_size": 3, "corruptions": "fog,gaussian_noise", "precision": "bf16"}
    reference = evaluate(TinyCNN(1000), "corrupted", folder, store=tmp_path / "ref", **options)
    stopping = _StopAfter(5)  # 4 batches per unit: stops inside the second unit
    with pytest.raises(KeyboardInterrupt):
        evaluate(stopping, "corrupted", folder, store=tmp_path / "s", **options)
    stopping.left = 10**6
    resumed = evaluate(stopping, "corrupted", folder, store=tmp_path / "s", **options)
    assert 0 < resumed.units_computed < 3 and resumed.config["precision"] == "bf16"
    with open_store(tmp_path / "s") as a, open_store(tmp_path / "ref") as b:
        got, want = a.read_predictions(resumed.run_id), b.read_predictions(reference.run_id)
    assert got.keys() == want.keys()
    for unit in want:
        for name in want[unit]:
            np.testing.assert_array_equal(got[unit][name], want[unit][name])
