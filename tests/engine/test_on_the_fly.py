"""`imagenet-c --on-the-fly`: ImageNet-C made in memory from clean images, numpy or torch backend."""

from __future__ import annotations

import json

import numpy as np
import pytest
from .conftest import TINY_MODELS, WNIDS, make_folder
from tiny_models import TinyCNN
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.corruptions import corrupt
from robustlab.data.images import write_image
from robustlab.engine import evaluate
from robustlab.errors import InputError
from robustlab.models.preprocessing import Preprocessing
from robustlab.seeding import derive_seed
from robustlab.store import open_store


@pytest.fixture(scope="module")
def val_root(tmp_path_factory):
    """Three wnid classes x 3 images of odd sizes (the ImageNet-C geometry resizes and crops them)."""
    return make_folder(tmp_path_factory.mktemp("val"), WNIDS, 3, size=(75, 90), seed=11)


def fly(model, data, store, **options):
    options = {"corruptions": "gaussian_noise,jpeg_compression", "severities": "2,5", "workers": 0, "device": "cpu",
               "progress": False, "batch_size": 4, **options}
    return evaluate(model, "imagenet-c", data, store=store, on_the_fly=True, **options)


def by_sample(store, run_id):
    with open_store(store) as st:
        out = {}
        for unit, cols in st.read_predictions(run_id).items():
            setting = unit.rsplit("/", 1)[0]
            for sid, top in zip(cols["sample_id"], cols["top5_index"]):
                out[(setting, str(sid).rsplit(".", 1)[0])] = top.tolist()
        return out


def test_numpy_on_the_fly_equals_the_released_layout_made_the_same_way(val_root, tmp_path):
    """Resize 256, crop 224, corrupt with the imagenet-c profile and the image's own seed: the
    predictions are those of a released-layout folder written with exactly those steps."""
    model = TinyCNN(1000)
    result = fly(model, val_root, tmp_path / "store", corruption_backend="numpy", seed=3)
    geometry = Preprocessing(resize=256, crop=224).prepare_image
    released = tmp_path / "released"
    from robustlab.data.images import read_image

    for c in ("gaussian_noise", "jpeg_compression"):
        for s in (2, 5):
            for path in sorted(val_root.rglob("*.JPEG")):
                sid = path.relative_to(val_root).as_posix()
                image = geometry(read_image(path))
                assert image.shape == (224, 224, 3)
                out = corrupt(image, c, s, rng=np.random.RandomState(derive_seed(3, sid, c, s)), profile="imagenet-c")
                write_image(released / c / str(s) / sid.replace(".JPEG", ".png"), out)
    reference = evaluate(model, "imagenet-c", released, store=tmp_path / "store", workers=0, device="cpu", severities="2,5",
                         progress=False, batch_size=4)
    got, want = by_sample(tmp_path / "store", result.run_id), by_sample(tmp_path / "store", reference.run_id)
    assert {k: v for k, v in got.items() if k[0] != "clean"} == want
    assert len(want) == 4 * 9
    clean = {k[1] for k in got if k[0] == "clean"}  # the clean images are evaluated too, same geometry
    assert len(clean) == 9 and result.metric("clean_error") is not None
    assert result.metric("error", "jpeg_compression/5") == reference.metric("error", "jpeg_compression/5")


def test_torch_backend_matches_numpy_where_it_is_exact_and_is_batch_independent(val_root, tmp_path):
    model = TinyCNN(1000)
    store = tmp_path / "store"
    numpy_run = fly(model, val_root, store, corruption_backend="numpy")
    torch_run = fly(model, val_root, store, corruption_backend="torch")
    assert torch_run.run_id != numpy_run.run_id  # the backend is part of the run's identity
    a, b = by_sample(store, numpy_run.run_id), by_sample(store, torch_run.run_id)
    assert a.keys() == b.keys()
    # JPEG is exact in the torch backend on the CPU (the same libjpeg); the clean images are shared
    for key in a:
        if key[0] in ("clean", "jpeg_compression/2", "jpeg_compression/5"):
            assert a[key] == b[key], key
    # the noise differs between backends (other generators) but not with the batch size
    assert any(a[k] != b[k] for k in a if k[0].startswith("gaussian_noise"))
    again = fly(model, val_root, tmp_path / "other", corruption_backend="torch", batch_size=3)
    assert by_sample(tmp_path / "other", again.run_id) == b
    with open_store(store) as st:
        assert st.get_run(torch_run.run_id).config["corruption_backend"] == "torch"
    assert torch_run.to_dict()["summary"]["on_the_fly"]["corruption_backend"] == "torch"
    assert any("after batching, on the model's device" in n for n in torch_run.notes)


def test_default_backend_follows_the_device(val_root, tmp_path):
    run = fly(TinyCNN(1000), val_root, tmp_path / "store", corruptions="contrast", severities="1")
    with open_store(tmp_path / "store") as st:
        assert st.get_run(run.run_id).config["corruption_backend"] == "numpy"  # device cpu


@pytest.mark.parametrize("options, message", [
    ({"corruption_backend": "cupy"}, "unknown corruption backend 'cupy'"),
    ({"clean_data": "x"}, "leave out --clean-data"),
    ({"seed": -1}, "seed must be an integer"),
])
def test_bad_on_the_fly_options_are_clear(val_root, tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        fly(TinyCNN(1000), val_root, tmp_path / "store", **options)
    assert not (tmp_path / "store").exists() or not open_store(tmp_path / "store").list_runs()


def test_on_the_fly_options_need_on_the_fly(tmp_path):
    from .conftest import make_imagenet_c

    root = make_imagenet_c(tmp_path / "c", corruptions=("fog",), severities=(1,), per_class=1)
    for key, value in (("corruption_backend", "torch"), ("seed", 1)):
        with pytest.raises(InputError, match=f"{key} applies to --on-the-fly"):
            evaluate(TinyCNN(1000), "imagenet-c", root, store=tmp_path / "s", workers=0, device="cpu",
                     progress=False, **{key: value})


def test_cli_on_the_fly_and_show(val_root, tmp_path):
    store = str(tmp_path / "store")
    runner = CliRunner()
    result = runner.invoke(app, ["evaluate", "-m", f"python:{TINY_MODELS}:make_tiny1000", "-b", "imagenet-c", "-d",
                                 str(val_root), "--on-the-fly", "--corruption-backend", "torch", "-c", "contrast",
                                 "-s", "3", "--store", store, "--workers", "0", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["summary"]["on_the_fly"] == {"corruption_backend": "torch", "seed": 0, "profile": "imagenet-c"}
    shown = runner.invoke(app, ["show", out["run_id"][:8], "--store", store])
    assert shown.exit_code == 0 and "corrupted on the fly" in shown.output and "torch backend" in shown.output
    assert not list(tmp_path.rglob("*.png")) and not list(tmp_path.rglob("*.jpg"))  # no image files written
