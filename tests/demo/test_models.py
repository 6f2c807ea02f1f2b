"""The shipped demo models: weights load safely, are small, and reach the recorded scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robustlab.demo import models as demo_models
from robustlab.demo.detection_scenes import make_detection_scenes
from robustlab.demo.training import classification_accuracy, detection_ap
from robustlab.demo.world import make_scenes
from robustlab.models import load_model
from robustlab.models.protocol import Classifier, Detector, check_detections, check_logits

LIMITS = {"cnn": 2_000_000, "cnn-noise": 2_000_000, "baseline": 2_000_000, "detector": 5_000_000}


@pytest.fixture(scope="module")
def metadata():
    return demo_models.load_metadata()


@pytest.mark.parametrize("name", demo_models.DEMO_MODELS)
def test_weights_are_small_state_dicts(name, metadata):
    path = demo_models.weights_path(name)
    assert path.stat().st_size < LIMITS[name]
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert isinstance(state, dict) and all(isinstance(v, torch.Tensor) for v in state.values())
    net = demo_models.build_network(name)
    net.load_state_dict(state)  # strict: every key matches the architecture
    entry = metadata["models"][name]
    assert entry["seed"] == 0 and entry["bytes"] == path.stat().st_size and entry["train_seconds"] > 0


def test_classifiers_follow_the_model_protocol():
    cnn = demo_models.load_demo_model("cnn")
    assert isinstance(cnn, Classifier) and cnn.name == "demo:cnn" and cnn.num_classes == 10
    x = torch.rand(3, 3, 64, 64)
    check_logits(cnn(x), 3, cnn.name, 10)
    check_logits(cnn(torch.rand(2, 3, 96, 80)), 2, cnn.name, 10)  # other sizes are resized to 64
    x.requires_grad_(True)
    cnn(x).sum().backward()  # differentiable in pixel space (attacks)
    assert x.grad is not None and float(x.grad.abs().sum()) > 0


def test_detector_follows_the_model_protocol():
    det = demo_models.load_demo_model("detector")
    assert isinstance(det, Detector) and det.name == "demo:detector"
    out = check_detections(det(torch.rand(2, 3, 96, 96)), 2, det.name)
    out += check_detections(det([torch.rand(3, 90, 70)]), 1, det.name)  # sides not multiples of 4
    for o in out:
        assert ((o["labels"] >= 1) & (o["labels"] <= 10)).all()
        assert (o["boxes"][:, 2:] >= o["boxes"][:, :2]).all()


@pytest.mark.parametrize("spec", [f"demo:{name}" for name in demo_models.DEMO_MODELS])
def test_registered_as_model_source(spec):
    model = load_model(spec, device="cpu")
    assert model.name == spec and not model.training


def test_unknown_demo_model_is_a_clear_error():
    from robustlab.errors import InputError

    with pytest.raises(InputError, match="demo model"):
        load_model("demo:resnet", device="cpu")


def test_shipped_classifiers_reach_recorded_accuracy_on_regenerated_test_split(metadata):
    test = make_scenes("test", 500, seed=0)  # the recorded split, regenerated from the seed
    accs = {}
    for name in demo_models.CLASSIFIERS:
        net = demo_models.load_network(name)
        accs[name] = classification_accuracy(net, test.images, test.labels)
        recorded = metadata["models"][name]["test"]["accuracy"]
        assert abs(accs[name] - recorded) <= 0.01, (name, accs[name], recorded)  # a few borderline images
    assert accs["cnn"] > 0.9
    assert accs["baseline"] < accs["cnn"] - 0.15  # the AlexNet role: clearly less accurate
    assert accs["cnn-noise"] > 0.8


def test_the_noise_augmented_cnn_is_recorded_with_its_recipe(metadata):
    entry = metadata["models"]["cnn-noise"]
    assert entry["augmentation"]["scheme"] == "paper-noise" and entry["augmentation"]["p"] == 1.0
    assert entry["augmentation"]["corruptions"] == ["gaussian_noise", "gaussian_blur", "shot_noise", "contrast",
                                                    "impulse_noise", "jpeg_compression"]
    assert entry["seeds_of"] == "cnn" and entry["epochs"] == metadata["models"]["cnn"]["epochs"]
    assert metadata["models"]["baseline"]["epochs"] < metadata["models"]["cnn"]["epochs"]


def test_baseline_is_less_robust_than_cnn():
    from robustlab.corruptions import corrupt

    test = make_scenes("test", 100, seed=0)
    noisy = np.stack([corrupt(img, "gaussian_noise", 3, rng=i) for i, img in enumerate(test.images)])
    err = {}
    for name in ("cnn", "baseline"):
        net = demo_models.load_network(name)
        err[name] = 1 - classification_accuracy(net, noisy, test.labels)
    assert err["baseline"] > err["cnn"]


def test_shipped_detector_reaches_recorded_ap_on_regenerated_subset(metadata):
    scenes = make_detection_scenes("test", 60, seed=0)
    ap = detection_ap(demo_models.load_network("detector"), scenes)
    recorded = metadata["models"]["detector"]["test"]
    assert ap["AP50"] > recorded["AP50"] - 0.12, (ap, recorded)


def test_engine_evaluates_the_demo_cnn_on_written_scene_folders(tmp_path):
    from robustlab.demo.world import write_scene_folders
    from robustlab.engine.evaluation import evaluate

    folders = write_scene_folders(tmp_path / "scenes", n_train=10, n_test=40)
    result = evaluate("demo:cnn", "corrupted", folders["val"], store=tmp_path / "store",
                      corruptions="gaussian_noise", severities="5", workers=0, device="cpu", progress=False)
    metrics = {(name, setting): value for name, setting, value in result.metrics}
    assert metrics[("n_samples", "clean")] == 40
    assert metrics[("error", "clean")] < 0.25 < metrics[("error", "gaussian_noise/5")]


@pytest.mark.parametrize("content", [b"not a checkpoint at all", b"", b"\x80\x04K"])
def test_damaged_weights_are_a_clear_error(tmp_path, content):
    from robustlab.errors import DataError

    (tmp_path / "cnn.pt").write_bytes(content)
    with pytest.raises(DataError, match=r"demo weights .*cnn.pt .*train_demo_models.py"):
        demo_models.load_network("cnn", tmp_path)


def test_weights_of_another_network_are_a_clear_error(tmp_path):
    from robustlab.errors import DataError

    torch.save({"weight": torch.zeros(2, 2)}, tmp_path / "cnn.pt")
    with pytest.raises(DataError, match=r"do not fit the cnn network .*train_demo_models.py"):
        demo_models.load_network("cnn", tmp_path)
