"""timm (Hugging Face Hub) weights offline: fail fast naming the file and the cache folder, or use
the cached file at once (HF_HUB_OFFLINE) -- as torchvision weights do."""

from __future__ import annotations

import time

import pytest
import torch

from robustlab.errors import OfflineError
from robustlab.models import load_model

pytest.importorskip("timm")

#: A port nothing listens on: connections are refused at once, as on a machine without network.
UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_ENDPOINT", UNREACHABLE)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return cache


def test_missing_weights_without_network_fail_fast_naming_file_and_folder(empty_cache):
    start = time.perf_counter()
    with pytest.raises(OfflineError) as info:
        load_model("timm:convnext_tiny", device="cpu")
    assert time.perf_counter() - start < 10  # not a minute of retries
    message = str(info.value)
    assert "timm:convnext_tiny" in message and "model.safetensors" in message
    assert str(empty_cache) in message and "models--timm--convnext_tiny.in12k_ft_in1k" in message
    assert "127.0.0.1 cannot be reached" in message and ":none" in message


def test_hf_hub_offline_set_names_it(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="HF_HUB_OFFLINE is set"):
        load_model("timm:resnet18", device="cpu")


def test_cached_weights_are_used_offline_at_once(empty_cache):
    """Weights copied into the Hub cache load without network, quickly, and are the ones loaded."""
    import timm
    from safetensors.torch import save_file

    from robustlab.models.hub import timm_weights_source

    source = timm_weights_source("resnet18")
    assert source.kind == "hf-hub" and source.location == "timm/resnet18.a1_in1k"
    reference = timm.create_model("resnet18", pretrained=False)
    torch.nn.init.constant_(reference.fc.bias, 0.25)
    snapshot = source.folder / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (source.folder / "refs").mkdir()
    (source.folder / "refs" / "main").write_text("0" * 40)
    save_file({k: v.contiguous() for k, v in reference.state_dict().items()}, str(snapshot / "model.safetensors"))
    start = time.perf_counter()
    model = load_model("timm:resnet18", device="cpu")
    assert time.perf_counter() - start < 30
    net = getattr(model, "net", model)
    bias = next(v for k, v in net.state_dict().items() if k.endswith("fc.bias"))
    assert torch.all(bias == 0.25)
    import os

    assert "HF_HUB_OFFLINE" not in os.environ  # restored after the build


def test_unknown_callable_in_a_model_file_names_the_file_as_given(tmp_path):
    """The message names the file once and correctly (it once read "…/tiny_model.pys")."""
    from robustlab.errors import InputError

    path = tmp_path / "tiny_model.py"
    path.write_text("import torch\n\ndef make():\n    return torch.nn.Linear(3, 3)\n")
    with pytest.raises(InputError) as info:
        load_model(f"python:{path}:mak", device="cpu")
    message = str(info.value)
    assert f"unknown callable 'mak' in {path}." in message and "Did you mean 'make'?" in message
    assert ".pys" not in message and "Callables in" in message and "torch" not in message.split("Callables in")[1][:60]
