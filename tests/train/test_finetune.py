"""robustlab.train.finetune: learning, the returned spec, determinism, resume, checkpoints, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from robustlab.errors import DataError, InputError, ModelError
from robustlab.models import load_model
from robustlab.train import finetune, read_manifest, training_summary
from robustlab.train.finetuning import CHECKPOINT_NAME, base_identity

from .conftest import TINY, make_folder

SPEC = f"python:{TINY}:make_tiny3"
FAST = dict(batch_size=8, lr=0.05, workers=0, progress=False)


def weights_of(spec: str) -> dict[str, torch.Tensor]:
    return load_model(spec, device="cpu").net.state_dict()


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)


def test_finetune_learns_and_returns_a_spec_that_evaluate_accepts(colour_folder, tmp_path):
    from robustlab.engine import evaluate

    before = load_model(SPEC, device="cpu")
    spec = finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=3, **FAST)
    assert spec.startswith(f"finetuned:{(tmp_path / 'run').resolve()}@")
    manifest = read_manifest(tmp_path / "run")
    history = manifest["history"]
    assert [h["epoch"] for h in history] == [1, 2, 3]
    assert history[-1]["loss"] < history[0]["loss"]
    assert manifest["classes"] == ["cat", "dog", "fox"] and manifest["head"] is None
    assert manifest["base"] == SPEC and not (tmp_path / "run" / CHECKPOINT_NAME).exists()
    model = load_model(spec, device="cpu")
    assert model.name == spec.split(" ")[0] and model.num_classes == 3
    assert model.source["recipe"]["epochs"] == 3
    changed = [k for k, v in model.net.state_dict().items() if not torch.equal(v, before.net.state_dict()[k])]
    assert "conv.weight" in changed and "fc.weight" in changed

    common = dict(store=tmp_path / "store", corruptions="brightness", severities="1", workers=0, device="cpu")
    tuned = evaluate(spec, "corrupted", colour_folder, class_map="sorted", **common)
    plain = evaluate(SPEC, "corrupted", colour_folder, class_map="sorted", **common)
    assert tuned.metric("error", "brightness/1") < plain.metric("error", "brightness/1")
    # a finished run is not trained again
    assert finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=3, on_step=_fail, **FAST) == spec


def _fail(*args):
    raise AssertionError("trained again")


def test_same_seed_same_weights_another_seed_other_weights(colour_folder, tmp_path):
    a = finetune(SPEC, colour_folder, out=tmp_path / "a", epochs=1, augment="paper-noise", seed=3, **FAST)
    b = finetune(SPEC, colour_folder, out=tmp_path / "b", epochs=1, augment="paper-noise", seed=3, **FAST)
    c = finetune(SPEC, colour_folder, out=tmp_path / "c", epochs=1, augment="paper-noise", seed=4, **FAST)
    assert_same_weights(weights_of(a), weights_of(b))
    assert not torch.equal(weights_of(a)["conv.weight"], weights_of(c)["conv.weight"])
    assert read_manifest(tmp_path / "a")["settings"]["augment"]["corruptions"] == [
        "gaussian_noise", "gaussian_blur", "shot_noise", "contrast", "impulse_noise", "jpeg_compression"]


@pytest.mark.slow
def test_dataloader_workers_do_not_change_the_weights(colour_folder, tmp_path):
    a = finetune(SPEC, colour_folder, out=tmp_path / "a", epochs=1, augment="paper-noise", seed=3, **FAST)
    b = finetune(SPEC, colour_folder, out=tmp_path / "b", epochs=1, augment="paper-noise", seed=3,
                 **{**FAST, "workers": 1})
    assert_same_weights(weights_of(a), weights_of(b))


def test_interrupted_run_resumes_to_the_same_weights(colour_folder, tmp_path):
    straight = finetune(SPEC, colour_folder, out=tmp_path / "straight", epochs=2, **FAST)

    def stop_after_4(epoch, step, loss):
        if epoch * 3 + step + 1 == 4:  # 24 images / batch 8 = 3 steps per epoch: stop in epoch 2
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        finetune(SPEC, colour_folder, out=tmp_path / "resumed", epochs=2, checkpoint_every=1, on_step=stop_after_4,
                 **FAST)
    assert (tmp_path / "resumed" / CHECKPOINT_NAME).is_file()
    with pytest.raises(DataError, match="has not finished"):
        load_model(f"finetuned:{tmp_path / 'resumed'}")
    lines = []
    resumed = finetune(SPEC, colour_folder, out=tmp_path / "resumed", epochs=2, log=lines.append, **FAST)
    assert any("resuming" in line and "epoch 2/2, step 1/3" in line for line in lines)
    assert_same_weights(weights_of(straight), weights_of(resumed))
    def losses(spec):
        return [(h["loss"], h["accuracy"], h["images"]) for h in training_summary(spec)["history"]]

    assert losses(resumed) == losses(straight)  # the interrupted epoch's running sums were checkpointed too


def test_other_settings_refuse_to_resume_or_overwrite(colour_folder, tmp_path):
    def stop(epoch, step, loss):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=2, checkpoint_every=1, on_step=stop, **FAST)
    with pytest.raises(InputError, match=r"other settings \(lr: 0.05 \(asked: 0.1\)"):
        finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=2, **{**FAST, "lr": 0.1})
    done = finetune(SPEC, colour_folder, out=tmp_path / "done", epochs=1, **FAST)
    with pytest.raises(InputError, match="already holds a fine-tuned model made with other settings"):
        finetune(SPEC, colour_folder, out=tmp_path / "done", epochs=2, **FAST)
    assert load_model(done, device="cpu").num_classes == 3


def test_an_edited_base_model_is_trained_again_not_returned_stale(colour_folder, tmp_path):
    """The run was found by the base model's spec: an edited factory file returned the model
    fine-tuned from its old content (fails on the old code)."""
    factory = tmp_path / "base.py"
    factory.write_text(TINY.read_text())
    spec = f"python:{factory}:make_tiny3"
    first = finetune(spec, colour_folder, out=tmp_path / "run", epochs=1, **FAST)
    assert finetune(spec, colour_folder, out=tmp_path / "run", epochs=1, **FAST) == first  # unchanged: found
    factory.write_text(TINY.read_text().replace("torch.manual_seed(0)", "torch.manual_seed(1)"))
    with pytest.raises(InputError, match="already holds a fine-tuned model made with other settings .base: "):
        finetune(spec, colour_folder, out=tmp_path / "run", epochs=1, **FAST)
    second = finetune(spec, colour_folder, out=tmp_path / "edited", epochs=1, **FAST)
    assert second != first
    assert not torch.equal(weights_of(first)["fc.weight"], weights_of(second)["fc.weight"])


def test_a_folder_made_before_the_base_content_was_recorded_says_so(colour_folder, tmp_path):
    finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=1, **FAST)
    manifest_path = tmp_path / "run" / "finetuned.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["settings"]["base"]
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="base: not recorded .an earlier robustlab kept only the base model's spec"):
        finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=1, **FAST)


def test_class_subset_keeps_mapped_classes_and_resizes_the_head(tmp_path):
    # ImageNet class folders: Chihuahua and tabby lie below VID's dog and domestic_cat; tench below none
    data = make_folder(tmp_path / "imagenet", ("n02085620", "n02123045", "n01440764"), 6)
    base = f"python:{TINY}:make_tiny1000"
    spec = finetune(base, data, out=tmp_path / "vid", classes="vid30", epochs=1, **FAST)
    manifest = read_manifest(tmp_path / "vid")
    assert manifest["num_classes"] == 30 and manifest["classes"][8:10] == ["dog", "domestic_cat"]
    assert manifest["head"] == {"path": "fc", "classes": 30, "init": "imagenet-rows"}
    assert manifest["settings"]["data"]["images"] == 12  # the tench images are left out
    model = load_model(spec, device="cpu")
    assert model.net.fc.out_features == 30 and model(torch.rand(2, 3, 32, 32)).shape == (2, 30)


def test_new_head_rows_start_from_the_imagenet_rows_below_each_synset(tmp_path):
    from robustlab.data.wordnet import imagenet_indices_below
    from robustlab.train import read_training_set, resolve_class_subset
    from robustlab.train.finetuning import resize_head_for

    data = make_folder(tmp_path / "imagenet", ("n02085620", "n02123045"), 2)
    subset = resolve_class_subset("dog,domestic_cat,zebra")
    ts = read_training_set(data, classes=subset)
    assert list(ts.targets) == [0, 0, 1, 1] and ts.classes == ("dog", "domestic_cat", "zebra")
    model = load_model(f"python:{TINY}:make_tiny1000", device="cpu")
    old = model.net.fc.weight.detach().clone()
    head = resize_head_for(model, ts, True, seed=0)
    assert head == {"path": "fc", "classes": 3, "init": "imagenet-rows"}
    dog_rows = imagenet_indices_below(["n02084071"])["n02084071"]
    assert len(dog_rows) == 118
    torch.testing.assert_close(model.net.fc.weight[0], old[dog_rows].mean(dim=0))
    zebra = imagenet_indices_below(["n02391049"])["n02391049"]
    assert zebra == [340]
    torch.testing.assert_close(model.net.fc.weight[2], old[340])
    # classes without a WordNet synset (plain folder names) get a seeded random head
    plain = read_training_set(make_folder(tmp_path / "plain", ("a", "b"), 2))
    model = load_model(f"python:{TINY}:make_tiny1000", device="cpu")
    assert resize_head_for(model, plain, False, seed=0)["init"] == "random"
    again = load_model(f"python:{TINY}:make_tiny1000", device="cpu")
    resize_head_for(again, plain, False, seed=0)
    torch.testing.assert_close(model.net.fc.weight, again.net.fc.weight)  # seeded


def test_unknown_classes_and_bad_options_are_clear_errors(colour_folder, tmp_path):
    with pytest.raises(InputError, match=r"unknown class 'zebraa'.*Near matches: zebra \(n02391049\)"):
        finetune(SPEC, colour_folder, out=tmp_path / "x", classes="dog,zebraa", **FAST)
    with pytest.raises(DataError, match="no training image belongs to the classes"):
        finetune(SPEC, colour_folder, out=tmp_path / "x", classes="zebra", **FAST)
    with pytest.raises(InputError, match="test-time"):
        finetune(SPEC, colour_folder, out=tmp_path / "x", wrap="ten-crop", **FAST)
    with pytest.raises(InputError, match="model spec"):
        finetune(torch.nn.Linear(2, 2), colour_folder, out=tmp_path / "x", **FAST)
    with pytest.raises(InputError, match="ONNX models cannot be trained"):
        finetune("onnx:model.onnx", colour_folder, out=tmp_path / "x", **FAST)
    with pytest.raises(InputError, match="unknown schedule"):
        finetune(SPEC, colour_folder, out=tmp_path / "x", schedule="linear", **FAST)
    with pytest.raises(DataError, match="does not exist"):
        finetune(SPEC, tmp_path / "nowhere", out=tmp_path / "x", **FAST)


def test_weights_of_another_architecture_are_refused(colour_folder, tmp_path):
    wide = load_model(f"python:{TINY}:make_wide3", device="cpu")
    torch.save(wide.net.state_dict(), tmp_path / "wide.pt")
    with pytest.raises(ModelError, match=r"made for another architecture than TinyNet.*of another shape"):
        finetune(SPEC, colour_folder, out=tmp_path / "x", init=tmp_path / "wide.pt", **FAST)
    spec = finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=1, **FAST)
    manifest_file = tmp_path / "run" / "finetuned.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["base"] = f"python:{TINY}:make_wide3"  # the weights no longer fit the named base
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match="another architecture"):
        load_model(f"finetuned:{tmp_path / 'run'}", device="cpu")
    manifest["base"] = SPEC
    manifest_file.write_text(json.dumps(manifest))
    weights = tmp_path / "run" / "model.pt"
    state = torch.load(weights, weights_only=True)
    state["fc.bias"] += 1
    torch.save(state, weights)
    with pytest.raises(ModelError, match="does not match its manifest"):
        load_model(spec, device="cpu")


def test_init_weights_start_the_run(colour_folder, tmp_path):
    start = load_model(SPEC, device="cpu").net
    with torch.no_grad():
        start.fc.bias += 5.0
    torch.save(start.state_dict(), tmp_path / "init.pt")
    spec = finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=1, init=tmp_path / "init.pt",
                    **{**FAST, "lr": 1e-6})
    torch.testing.assert_close(load_model(spec).net.fc.bias, start.fc.bias, atol=1e-3, rtol=0)


def test_head_only_training_changes_only_the_head(colour_folder, tmp_path):
    spec = finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=1, train="head", **FAST)
    before, after = weights_of(SPEC), weights_of(spec)
    assert_same_weights({k: before[k] for k in before if not k.startswith("fc.")},
                        {k: after[k] for k in after if not k.startswith("fc.")})
    assert not torch.equal(before["fc.weight"], after["fc.weight"])


def test_clahe_fine_tuning_is_evaluated_through_clahe(colour_folder, tmp_path):
    from robustlab.models.wrappers import CLAHE

    spec = finetune(SPEC, colour_folder, out=tmp_path / "run", epochs=1, wrap="clahe", **FAST)
    model = load_model(spec, device="cpu")
    assert isinstance(model, CLAHE) and model.name.endswith("[wrap=clahe]")


def test_in_memory_arrays_train_as_the_demo_passes_them(tmp_path):
    from robustlab.data.arrays import ArrayDataset

    from .conftest import colour_image

    rng = np.random.default_rng(0)
    labels = np.arange(18) % 3
    images = np.stack([colour_image(int(k), rng, size=(32, 32)) for k in labels])
    spec = finetune(SPEC, ArrayDataset(images, labels, name="scenes"), out=tmp_path / "run", epochs=2,
                    augment="paper-noise", **FAST)
    manifest = read_manifest(tmp_path / "run")
    assert manifest["settings"]["data"]["kind"] == "arrays" and manifest["num_classes"] == 3
    assert load_model(spec)(torch.rand(1, 3, 32, 32)).shape == (1, 3)


def test_a_loaded_model_starts_from_its_own_weights_and_keeps_its_head(colour_folder, tmp_path):
    model = load_model(f"python:{TINY}:make_bare3", preprocessing={"resize": 36, "crop": 32}, device="cpu")
    assert model.num_classes is None and model.source["spec"] == f"python:{TINY}:make_bare3"
    with torch.no_grad():
        model.net.fc.bias += 5.0
    start = {k: v.clone() for k, v in model.net.state_dict().items()}
    spec = finetune(model, colour_folder, out=tmp_path / "run", epochs=1, **{**FAST, "lr": 1e-6})
    manifest = read_manifest(tmp_path / "run")
    assert manifest["head"] is None  # same 3 outputs: the head is kept
    assert manifest["settings"]["base"] == base_identity(model, model.source["spec"]).digest  # its own weights
    torch.testing.assert_close(load_model(spec).net.fc.bias, start["fc.bias"], atol=1e-3, rtol=0)
    assert torch.equal(model.net.fc.bias, start["fc.bias"])  # the caller's object is not trained
    assert load_model(spec).preprocessing.crop == (32, 32)


def test_torch_augmentation_on_the_device_matches_the_workers_where_the_backend_is_exact(colour_folder, tmp_path):
    """jpeg_compression is exact in the torch backend on the CPU (the same libjpeg), so augmenting on
    the device trains the same weights as the numpy path in the workers; the backend is in the settings."""
    numpy_run = finetune(SPEC, colour_folder, out=tmp_path / "n", epochs=1, augment="jpeg_compression", seed=5,
                         **FAST)
    torch_run = finetune(SPEC, colour_folder, out=tmp_path / "t", epochs=1, augment="jpeg_compression", seed=5,
                         augment_backend="torch", **FAST)
    assert_same_weights(weights_of(numpy_run), weights_of(torch_run))
    assert read_manifest(tmp_path / "t")["settings"]["augment"]["backend"] == "torch"
    assert "backend" not in read_manifest(tmp_path / "n")["settings"]["augment"]
    again = finetune(SPEC, colour_folder, out=tmp_path / "t2", epochs=1, augment="paper-noise", seed=5,
                     augment_backend="torch", **FAST)
    same = finetune(SPEC, colour_folder, out=tmp_path / "t3", epochs=1, augment="paper-noise", seed=5,
                    augment_backend="torch", **FAST)
    assert_same_weights(weights_of(again), weights_of(same))


def test_augment_backend_errors(colour_folder, tmp_path):
    with pytest.raises(InputError, match="unknown augment backend 'cupy'"):
        finetune(SPEC, colour_folder, out=tmp_path / "a", augment="contrast", augment_backend="cupy", **FAST)
    with pytest.raises(InputError, match="needs a corruption augmentation"):
        finetune(SPEC, colour_folder, out=tmp_path / "b", augment=lambda x, ids: x, augment_backend="torch", **FAST)
