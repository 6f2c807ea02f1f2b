"""The hf: source on tiny random transformers models built from configs: predictions equal the model
with its own image processor image by image, label checks, identity by content, bad input, offline."""

from __future__ import annotations

import json

import pytest
import torch

from robustlab.data.wordnet import ilsvrc_wnids
from robustlab.errors import DataError, InputError, ModelError
from robustlab.models import load_model
from robustlab.models.hf import HFClassifier, hf_canonical, hf_preprocessing
from robustlab.models.identity import identify_model
from robustlab.models.label_space import for_class_names, imagenet_label_names, imagenet_order
from tiny_sources import hf_recipe_logits, imagenet_id2label, offline_failure, photos, robustlab_logits, \
    tiny_hf_vit

pytest.importorskip("transformers")

PETS = {0: "cat", 1: "dog", 2: "fox"}


def tiny_convnext(folder, id2label, **processor):
    from transformers import ConvNextConfig, ConvNextForImageClassification, ConvNextImageProcessor

    torch.manual_seed(1)
    cfg = ConvNextConfig(num_channels=3, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, num_labels=len(id2label),
                         id2label=id2label, label2id={v: k for k, v in id2label.items()})
    ConvNextForImageClassification(cfg).save_pretrained(folder)
    ConvNextImageProcessor(**processor).save_pretrained(folder)
    return folder


def tiny_bit_processor_vit(folder):
    """A ViT with BiT's processor: shorter side 40, centre crop 32, bicubic, CLIP's mean and std."""
    from transformers import BitImageProcessor

    tiny_hf_vit(folder, PETS)
    BitImageProcessor(size={"shortest_edge": 40}, crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("kind", ["vit", "convnext-crop-pct", "convnext-warp", "bit"])
def test_predictions_equal_the_model_with_its_own_processor(tmp_path, kind):
    folder = tmp_path / kind
    if kind == "vit":
        tiny_hf_vit(folder, PETS)
    elif kind == "bit":
        tiny_bit_processor_vit(folder)
    else:
        edge = 32 if kind == "convnext-crop-pct" else 384
        tiny_convnext(folder, PETS, size={"shortest_edge": edge}, crop_pct=0.8)
    model = load_model(f"hf:{folder}", device="cpu")
    assert isinstance(model, HFClassifier) and model.labels == ("cat", "dog", "fox") and model.num_classes == 3
    images = photos(5 if kind != "convnext-warp" else 2, seed=3)
    ours, want = robustlab_logits(model, images), hf_recipe_logits(folder, images)
    torch.testing.assert_close(ours, want, rtol=1e-4, atol=1e-4)
    assert torch.equal(ours.argmax(1), want.argmax(1))
    assert (want - want.mean(0)).abs().max() > 1e-4  # different logits per image: the check can fail


def test_the_processors_settings_become_the_adapters(tmp_path):
    folder = tiny_convnext(tmp_path / "c", PETS, size={"shortest_edge": 224}, crop_pct=0.875)
    prep = load_model(f"hf:{folder}", device="cpu").preprocessing
    assert (prep.resize, prep.crop, prep.interpolation, prep.crop_rounding) == (256, (224, 224), "bicubic", "floor")
    assert prep.mean == (0.5, 0.5, 0.5)
    vit = load_model(f"hf:{tiny_hf_vit(tmp_path / 'v', PETS)}", device="cpu").preprocessing
    assert vit.size == (32, 32) and vit.crop == (32, 32) and vit.resize is None and vit.interpolation == "bilinear"


def test_imagenet_labels_are_checked_and_put_in_imagenet_order(tmp_path):
    wnids = tuple(ilsvrc_wnids())
    labels = imagenet_id2label()
    straight = load_model(f"hf:{tiny_hf_vit(tmp_path / 'in1k', labels)}", device="cpu")
    assert for_class_names(straight, wnids) is straight
    perm = torch.randperm(1000, generator=torch.Generator().manual_seed(0)).tolist()
    shuffled = load_model(f"hf:{tiny_hf_vit(tmp_path / 'shuffled', {i: labels[j] for i, j in enumerate(perm)})}",
                          device="cpu")
    ordered = for_class_names(shuffled, wnids)
    x = torch.rand(2, 3, 32, 32)
    raw = shuffled(x)
    out = ordered(x)
    assert out.shape == (2, 1000)
    for k in (0, 1, 500, 999):  # ImageNet class k is the model's column perm.index(k)
        torch.testing.assert_close(out[:, k], raw[:, perm.index(k)])
    order = imagenet_order([labels[j] for j in perm])
    names = imagenet_label_names()
    unique = [k for k in range(1000) if names.count(names[k]) == 1]  # two cranes, two maillots: matched in order
    assert len(unique) == 996 and [order[k] for k in unique] == [perm.index(k) for k in unique]
    assert sorted(order) == list(range(1000))
    pets = load_model(f"hf:{tiny_hf_vit(tmp_path / 'pets', PETS)}", device="cpu")
    with pytest.raises(ModelError, match="3 labels .'cat', 'dog', 'fox'., which are not ImageNet-1k's 1,000 classes.*"
                                         "fine-tuned on ImageNet-1k"):
        for_class_names(pets, wnids)
    generic = load_model(f"hf:{tiny_hf_vit(tmp_path / 'generic', {i: f'LABEL_{i}' for i in range(1000)})}",
                         device="cpu")
    with pytest.raises(ModelError, match="'LABEL_0', 'LABEL_1', 'LABEL_2', ..."):
        for_class_names(generic, wnids)
    assert for_class_names(pets, ("fox", "cat", "dog")).num_classes == 3  # a folder with its own classes
    with pytest.raises(ModelError, match="does not name the data's 2 classes"):
        for_class_names(pets, ("cat", "wolf"))


def test_identity_covers_weights_config_and_processor(tmp_path):
    folder = tiny_hf_vit(tmp_path / "m", PETS)
    digest = identify_model(f"hf:{folder}", device="cpu").digest
    assert identify_model(f"hf:{folder}", device="cpu").digest == digest
    config = json.loads((folder / "config.json").read_text())
    config["layer_norm_eps"] = 1e-5
    (folder / "config.json").write_text(json.dumps(config))
    edited_config = identify_model(f"hf:{folder}", device="cpu").digest
    assert edited_config != digest
    processor = json.loads((folder / "preprocessor_config.json").read_text())
    processor["image_mean"] = [0.4, 0.5, 0.5]
    (folder / "preprocessor_config.json").write_text(json.dumps(processor))
    edited_processor = identify_model(f"hf:{folder}", device="cpu").digest
    assert edited_processor not in (digest, edited_config)
    tiny_hf_vit(folder, PETS, seed=5, processor=processor)
    assert identify_model(f"hf:{folder}", device="cpu").digest not in (digest, edited_config, edited_processor)


def test_bad_input_names_the_problem_and_the_fix(tmp_path):
    with pytest.raises(InputError, match="neither a folder written by save_pretrained nor a Hub model id"):
        load_model("hf:not a repo", device="cpu")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="lacks config.json, preprocessor_config.json"):
        load_model(f"hf:{empty}", device="cpu")
    remote = tiny_hf_vit(tmp_path / "remote", PETS)
    config = json.loads((remote / "config.json").read_text())
    config.update(model_type="robustlab-custom", auto_map={"AutoModelForImageClassification": "modeling.Custom",
                                                           "AutoConfig": "configuration.CustomConfig"})
    (remote / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="trust_remote_code.*never runs a repository's code"):
        load_model(f"hf:{remote}", device="cpu")


def test_unsupported_processors_are_refused_naming_the_setting(tmp_path):
    from transformers import MobileViTImageProcessor, ViTImageProcessor

    with pytest.raises(ModelError, match="MobileViTImageProcessor has its own preprocessing steps.*--resize"):
        hf_preprocessing(MobileViTImageProcessor(), "hf:x")
    with pytest.raises(ModelError, match="resamples with PIL mode .*LANCZOS|resamples with PIL mode 1"):
        hf_preprocessing(ViTImageProcessor(resample=1), "hf:x")
    with pytest.raises(ModelError, match="rescales by 0.5"):
        hf_preprocessing(ViTImageProcessor(rescale_factor=0.5), "hf:x")


def test_canonical_spec(tmp_path, monkeypatch):
    folder = tiny_hf_vit(tmp_path / "m", PETS)
    monkeypatch.chdir(tmp_path)
    assert hf_canonical("./m") == str(folder) and hf_canonical("google/vit-base-patch16-224@main") == \
        "google/vit-base-patch16-224@main"


def hub_snapshot(hub, repo: str):
    base = hub / f"models--{repo.replace('/', '--')}"
    snapshot = base / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text("0" * 40)
    return snapshot


def test_offline_hub_models_fail_fast_or_load_from_the_cache(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    message = offline_failure(monkeypatch, hub, "hf:google/vit-base-patch16-224")
    assert "config.json and preprocessor_config.json and model.safetensors" in message
    assert "models--google--vit-base-patch16-224" in message and "127.0.0.1 cannot be reached" in message
    saved = tiny_hf_vit(tmp_path / "saved", PETS)
    snapshot = hub_snapshot(hub, "robustlab-test/tiny-vit")
    for f in saved.iterdir():
        (snapshot / f.name).write_bytes(f.read_bytes())
    model = load_model("hf:robustlab-test/tiny-vit", device="cpu")
    x = torch.rand(2, 3, 32, 32)
    torch.testing.assert_close(model(x), load_model(f"hf:{saved}", device="cpu")(x))
