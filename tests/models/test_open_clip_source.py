"""The open_clip: source on tiny random models built from configs: predictions equal open_clip's own
zero-shot recipe image by image, identity by content, bad input, offline."""

from __future__ import annotations

import json
import os
import time

import pytest
import torch

from robustlab.errors import DataError, InputError, ModelError, OfflineError
from robustlab.models import load_model
from robustlab.models.identity import identify_model, model_hash
from robustlab.models.label_space import for_class_names
from robustlab.models.openclip import open_clip_canonical, open_clip_preprocessing, parse_open_clip_spec
from robustlab.models.zero_shot import ZeroShotClassifier, folder_labels, imagenet_labels, text_cache_dir
from tiny_sources import TINY_CLIP, offline_failure, open_clip_recipe_logits, photos, robustlab_logits, \
    tiny_open_clip

pytest.importorskip("open_clip")

UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("robustlab-cache")
        mp.setenv("ROBUSTLAB_CACHE", str(path))
        yield path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, cache):
    return tiny_open_clip(tmp_path_factory.mktemp("clip"))


def spec_of(config, checkpoint) -> str:
    return f"open_clip:{config}:{checkpoint}"


def test_predictions_equal_open_clips_own_zero_shot_recipe(tiny):
    config, checkpoint = tiny
    model = load_model(spec_of(config, checkpoint), device="cpu")
    assert isinstance(model, ZeroShotClassifier) and model.num_classes == 1000
    assert model.preprocessing.to_dict() == {"resize": 32, "crop": [32, 32], "interpolation": "bicubic",
                                             "mean": [0.48145466, 0.4578275, 0.40821073],
                                             "std": [0.26862954, 0.26130258, 0.27577711]}
    names = ["tabby cat", "golden retriever", "red fox"]
    head = for_class_names(model, ("tabby_cat", "golden_retriever", "red_fox"))  # a folder of your own
    assert head.num_classes == 3 and head.labels.names == tuple(names)
    images = photos(6)
    ours = robustlab_logits(head, images)
    want = open_clip_recipe_logits(config, checkpoint, images, names)
    torch.testing.assert_close(ours, want, rtol=1e-4, atol=1e-4)
    assert torch.equal(ours.argmax(1), want.argmax(1))
    assert (want - want.mean(0)).abs().max() > 1e-3  # the images get different logits: the check can fail


def test_text_embeddings_are_cached_by_content(tiny, cache):
    config, checkpoint = tiny
    model = load_model(spec_of(config, checkpoint), device="cpu")
    labels = folder_labels(["cat", "dog"])
    net = model.for_labels(labels).net
    x = torch.rand(1, 3, 32, 32)
    first = net(x)
    files = sorted(text_cache_dir().glob("*.pt"))
    assert files and text_cache_dir().parent == cache
    again = load_model(spec_of(config, checkpoint), device="cpu").for_labels(labels).net
    start = time.perf_counter()
    torch.testing.assert_close(again(x), first)
    assert time.perf_counter() - start < 5  # read back, not recomputed
    other = model.for_labels(folder_labels(["cat", "wolf"])).net
    other(x)
    assert len(sorted(text_cache_dir().glob("*.pt"))) == len(files) + 1  # a new class list: a new entry


def test_identity_covers_weights_config_names_and_templates(tiny, tmp_path):
    config, checkpoint = tiny
    spec = spec_of(config, checkpoint)
    digest = identify_model(spec, device="cpu").digest
    assert identify_model(spec, device="cpu").digest == digest  # one spec, one model
    state = torch.load(checkpoint, weights_only=True)
    state["visual.proj"] = state["visual.proj"] + 0.01
    edited = tmp_path / "edited.pt"
    torch.save(state, edited)
    assert identify_model(spec_of(config, edited), device="cpu").digest != digest
    wider = dict(TINY_CLIP, text_cfg={**TINY_CLIP["text_cfg"], "context_length": 32})
    other_config, other_checkpoint = tiny_open_clip(tmp_path / "other", name="tiny-clip-32", config=wider)
    assert identify_model(spec_of(other_config, other_checkpoint), device="cpu").digest != digest
    model = load_model(spec, device="cpu")
    base = model_hash(model)
    assert model_hash(model.for_labels(folder_labels(["cat", "dog"]))) != base
    labels = imagenet_labels()
    fewer = type(labels)(labels.names, labels.templates[:10], "10 templates")
    assert model_hash(model.for_labels(fewer)) != base


def test_spec_forms_and_canonical_paths(tiny, tmp_path, monkeypatch):
    config, checkpoint = tiny
    assert parse_open_clip_spec("ViT-B-32:laion2b_s34b_b79k").arch == "ViT-B-32"
    assert parse_open_clip_spec("hf-hub:laion/CLIP-ViT-B-32-laion2B-s34B-b79K").schema == "hf-hub"
    monkeypatch.chdir(config.parent)
    assert open_clip_canonical(f"{config.name}:{checkpoint.name}") == f"{config}:{checkpoint}"
    assert open_clip_canonical("ViT-B-32:openai") == "ViT-B-32:openai"
    random = load_model(f"open_clip:{config.name}:none", device="cpu")
    assert random.source["pretrained"] == "none"
    assert model_hash(random) == model_hash(load_model(f"open_clip:{config.name}:none", device="cpu"))  # seeded


def test_bad_input_names_the_problem_and_the_fix(tiny, tmp_path):
    config, checkpoint = tiny
    with pytest.raises(InputError, match="unknown open_clip architecture 'ViT-B-33'. Did you mean 'ViT-B-32'"):
        load_model("open_clip:ViT-B-33:openai", device="cpu")
    with pytest.raises(InputError, match="'laion2b_s34b_b7k'. Did you mean 'laion2b_s34b_b79k'.*checkpoint file"):
        load_model("open_clip:ViT-B-32:laion2b_s34b_b7k", device="cpu")
    with pytest.raises(InputError, match="needs an architecture and its pretrained weights"):
        load_model("open_clip:ViT-B-32", device="cpu")
    with pytest.raises(DataError, match="checkpoint file .*missing.pt does not exist"):
        load_model(f"open_clip:ViT-B-32:{tmp_path / 'missing.pt'}", device="cpu")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"embed_dim": 16}))
    with pytest.raises(DataError, match="lacks vision_cfg, text_cfg"):
        load_model(f"open_clip:{bad}:none", device="cpu")
    with pytest.raises(ModelError, match="resize_mode='squash'.*--resize"):
        open_clip_preprocessing({"size": 32, "resize_mode": "squash", "mean": (0.5,) * 3, "std": (0.5,) * 3}, "m")


def test_a_pretrained_tag_offline_fails_fast_naming_file_and_folder(tmp_path, monkeypatch):
    message = offline_failure(monkeypatch, tmp_path / "hub", "open_clip:ViT-B-32:laion2b_s34b_b79k")
    assert "open_clip_model.safetensors or open_clip_pytorch_model.bin" in message
    assert "models--laion--CLIP-ViT-B-32-laion2B-s34B-b79K" in message and str(tmp_path / "hub") in message


def test_a_cached_hub_model_loads_offline(tiny, tmp_path, monkeypatch):
    """An open_clip model in the Hub cache (config and weights, as push_to_hf_hub writes them) loads
    without network, and is the model that was saved."""
    from huggingface_hub import constants

    config, checkpoint = tiny
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_ENDPOINT", UNREACHABLE)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo = tmp_path / "hub" / "models--robustlab-test--tiny-clip"
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    (snapshot / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CLIP, "preprocess_cfg": {}}))
    torch.save(torch.load(checkpoint, weights_only=True), snapshot / "open_clip_pytorch_model.bin")
    model = load_model("open_clip:hf-hub:robustlab-test/tiny-clip", device="cpu")
    reference = load_model(f"open_clip:{config}:{checkpoint}", device="cpu")
    x = torch.rand(2, 3, 32, 32)
    torch.testing.assert_close(model.net.clip.encode_image(x), reference.net.clip.encode_image(x))
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    monkeypatch.delenv("HF_HUB_OFFLINE")
    (snapshot / "open_clip_pytorch_model.bin").unlink()
    with pytest.raises(OfflineError, match="open_clip_config.json and open_clip_model.safetensors or"):
        load_model("open_clip:hf-hub:robustlab-test/tiny-clip", device="cpu")


def test_listed_as_a_model_source():
    from robustlab.models.registry import MODEL_SOURCES, get_source

    assert {"open_clip", "hf"} <= set(MODEL_SOURCES.names())
    assert "zero-shot" in get_source("open_clip").__doc__ and "robustlab[clip]" in get_source("open_clip").__doc__
