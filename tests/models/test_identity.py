"""A model's identity by content (robustlab.models.identity) and the per-source canonical spec."""

from __future__ import annotations

import importlib.metadata
import os
import pickle
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from robustlab.errors import InputError, ModelError
from robustlab.models import Classifier, Preprocessing, load_model
from robustlab.models.code_identity import code_identity
from robustlab.models.identity import HASH_LENGTH, identify_model, model_hash
from robustlab.models.registry import MODEL_SOURCES, ModelSource, canonical_spec, get_source


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.register_buffer("scale", torch.ones(4))
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.conv(x).mean(dim=(2, 3)) * self.scale)


def built(seed: int = 0) -> Classifier:
    torch.manual_seed(seed)
    return Classifier(Net(), name="n", preprocessing=Preprocessing(resize=8, crop=8), num_classes=2)


def test_the_same_weights_hash_alike_and_every_tensor_counts():
    a, b = built(), built()
    assert model_hash(a) == model_hash(b) and len(model_hash(a)) == 64
    for name, tensor in b.state_dict().items():
        if not tensor.is_floating_point():
            continue
        changed = built()
        with torch.no_grad():
            changed.state_dict()[name].view(-1)[-1] += 1e-3
        assert model_hash(changed) != model_hash(a), name
    other_dtype = built().double()
    assert model_hash(other_dtype) != model_hash(a)


def test_name_and_source_do_not_count_but_preprocessing_classes_and_wrappers_do():
    a = built()
    renamed = built()
    renamed.name, renamed.source = "elsewhere", {"spec": "python:/other/place.py:make"}
    assert model_hash(renamed) == model_hash(a)
    other_prep = built()
    other_prep.preprocessing = Preprocessing(resize=9, crop=8)
    assert model_hash(other_prep) != model_hash(a)
    fewer = built()
    fewer.num_classes = 3
    assert model_hash(fewer) != model_hash(a)
    wrapped = load_model(built(), wrap="clahe", device="cpu")
    assert model_hash(wrapped) != model_hash(built())
    assert model_hash(load_model(built(), wrap="clahe:clip=3", device="cpu")) != model_hash(wrapped)


def test_library_settings_count():
    """The stride of a library layer is not in the state dict; it decides the predictions."""
    torch.manual_seed(0)
    one = nn.Sequential(nn.Conv2d(3, 4, 3, stride=1))
    torch.manual_seed(0)
    two = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2))
    assert model_hash(one) != model_hash(two)


def test_library_code_is_named_by_version_local_code_by_source(tmp_path):
    assert code_identity("torchvision.models.resnet") == f"torchvision=={importlib.metadata.version('torchvision')}"
    assert code_identity("torch.nn.modules.conv").startswith("torch==")
    module_file = tmp_path / "user_net.py"
    module_file.write_text("import torch\nclass UserNet(torch.nn.Identity):\n    pass\n\ndef make():\n"
                           "    return UserNet()\n")
    first = load_model(f"python:{module_file}:make", device="cpu")
    identity = first.source["code"]
    assert identity.startswith("source:")
    module_file.write_text(module_file.read_text() + "# an edit\n")
    second = load_model(f"python:{module_file}:make", device="cpu")
    assert second.source["code"] != identity and model_hash(second) != model_hash(first)


def test_a_factory_file_edited_in_the_same_process_is_run_again(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\ndef make():\n    return torch.nn.Linear(3, 2, bias=False)\n")
    assert load_model(f"python:{path}:make", device="cpu").net.out_features == 2
    path.write_text("import torch\ndef make():\n    return torch.nn.Linear(3, 5, bias=False)\n")
    assert load_model(f"python:{path}:make", device="cpu").net.out_features == 5


def test_random_weights_of_a_spec_are_one_model():
    assert model_hash(load_model("torchvision:resnet18:none", device="cpu")) == \
        model_hash(load_model("torchvision:resnet18:none", device="cpu"))


def test_canonical_spec_resolves_every_path_based_source(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = tmp_path.resolve()
    assert canonical_spec("python:m.py:make") == f"python:{here / 'm.py'}:make"
    assert canonical_spec("python:pkg.models:make") == "python:pkg.models:make"
    assert canonical_spec("onnx:m.onnx") == f"onnx:{here / 'm.onnx'}"
    assert canonical_spec("results:dets") == f"results:{here / 'dets'}"
    assert canonical_spec("finetuned:ft") == f"finetuned:{here / 'ft'}"
    assert canonical_spec("finetuned:ft@3f2a9c1b0d4e") == f"finetuned:{here / 'ft'}@3f2a9c1b0d4e"
    assert canonical_spec("torchvision:resnet50") == "torchvision:resnet50"
    with pytest.raises(InputError, match="SOURCE:NAME"):
        canonical_spec("resnet50")
    with pytest.raises(InputError, match="unknown model source"):
        canonical_spec("tensorflow:x")


def test_finetune_and_the_engine_share_the_canonical_spec(tmp_path, monkeypatch):
    from robustlab.engine.evaluation import model_key
    from robustlab.train.finetuning import base_spec

    monkeypatch.chdir(tmp_path)
    for spec in ("finetuned:ft", "python:m.py:make", "demo:cnn"):
        assert base_spec(spec) == canonical_spec(spec) == model_key(spec, {})


def test_a_plain_loader_is_a_source_without_hooks():
    def loader(rest, options):
        return built()

    MODEL_SOURCES.add("identity-test", loader)
    try:
        source = get_source("identity-test")
        assert isinstance(source, ModelSource)
        assert canonical_spec("identity-test:x") == "identity-test:x" and source.content_hash("x", {}) is None
        found = identify_model("identity-test:x", device="cpu")
        assert found.model is not None and found.digest == model_hash(found.model)[:HASH_LENGTH]
    finally:
        MODEL_SOURCES._items.pop("identity-test")


def test_onnx_is_identified_by_its_bytes_without_building(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(nn.Sequential(nn.Conv2d(3, 2, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten()),
                          (torch.rand(1, 3, 8, 8),), str(path), input_names=["x"], output_names=["y"], dynamo=False)
    from robustlab.models import sources

    first = identify_model(f"onnx:{path}")
    monkeypatch.setattr(sources.OnnxNet, "__init__", lambda *a, **k: pytest.fail("the model was built"))
    assert first.model is None and identify_model(f"onnx:{path}").digest == first.digest
    with open(path, "ab") as fh:
        fh.write(b"\0")
    assert identify_model(f"onnx:{path}").digest != first.digest
    assert identify_model(f"onnx:{path}", num_classes=2).digest != identify_model(f"onnx:{path}").digest


def test_a_model_built_elsewhere_must_be_the_hashed_one(tmp_path):
    from robustlab.engine.executor import ModelRef

    path = tmp_path / "random_factory.py"
    path.write_text("import torch\ndef make():\n    return torch.nn.Linear(3, 2)\n")  # unseeded: new weights each call
    found = identify_model(f"python:{path}:make", device="cpu")
    ref = ModelRef(f"python:{path}:make", device=torch.device("cpu"), loaded=found.model, digest=found.digest)
    assert ref.load() is found.model
    shipped = pickle.loads(pickle.dumps(ref))  # what another process (a Ray actor) receives
    assert shipped.loaded is None and shipped.digest == found.digest
    with pytest.raises(ModelError, match="builds a different model on each call"):
        shipped.load()


def test_hashing_does_not_depend_on_the_device_or_the_process(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "seeded.py"
    path.write_text("import torch\ndef make():\n    torch.manual_seed(3)\n    return torch.nn.Linear(3, 2)\n")
    here = identify_model(f"python:{path}:make", device="cpu").digest
    code = (f"from robustlab.models.identity import identify_model; "
            f"print(identify_model('python:{path}:make', device='cpu').digest)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert there.stdout.strip() == here


class _Reseeding(nn.Module):
    """Re-draws its weights when unpickled: what an object model must not do to reach another process."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x.mean(dim=(2, 3)))

    def __setstate__(self, state):
        super().__setstate__(state)
        nn.init.normal_(self.linear.weight)


def test_an_object_model_is_checked_by_its_weights_in_another_process():
    """A model object travels with its code, so another process checks its weights alone
    (weights_digest, hashed when the reference is pickled); a spec is checked in full."""
    from robustlab.engine.executor import ModelRef
    from robustlab.models.identity import weights_hash

    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(12, 2))
    identity = identify_model(net)
    ref = ModelRef(net, loaded=identity.model, digest=identity.digest)
    shipped = pickle.loads(pickle.dumps(ref))
    assert shipped.weights_digest == weights_hash(identity.model) and len(shipped.weights_digest) == HASH_LENGTH
    assert weights_hash(shipped.load()) == shipped.weights_digest  # same weights: accepted
    bad = _Reseeding()
    identity = identify_model(bad)
    with pytest.raises(ModelError, match="is not the model this run is keyed by"):
        pickle.loads(pickle.dumps(ModelRef(bad, loaded=identity.model, digest=identity.digest))).load()
    assert weights_hash(lambda x: x) is None  # a bare callable has no weights to check
