"""Preprocessing wrappers: CLAHE on L of LAB, ten-crop, multi-scale; composition, names, evaluate."""

from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
import torchvision.transforms.functional as TF
from torch import nn

from robustlab.errors import InputError, ModelError
from robustlab.models import Classifier, Preprocessing, load_model
from robustlab.models.wrappers import (CLAHE, MultiScale, TenCrop, canonical_wrap, clahe_rgb, parse_wrap,
                                       split_wrapped_name, wrap_classifier)

sys.path.insert(0, str(Path(__file__).parents[1] / "engine"))
TINY_MODELS = Path(__file__).parents[1] / "engine" / "tiny_models.py"


class Recorder(nn.Module):
    """Logits = a fixed linear map of per-channel means and a spatial gradient; records inputs."""

    def __init__(self, num_classes: int = 4) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.weight = nn.Parameter(torch.randn(num_classes, 6, generator=gen))
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x.detach().clone())
        feats = torch.cat([x.mean(dim=(2, 3)), (x[..., :, 1:] - x[..., :, :-1]).abs().mean(dim=(2, 3))], dim=1)
        return feats @ self.weight.T * 5


def base_model(crop: int = 24, resize: int = 28) -> Classifier:
    prep = Preprocessing(resize=resize, crop=crop, mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3))
    return Classifier(Recorder(), name="python:recorder", preprocessing=prep, num_classes=4)


def low_contrast_image(rng: np.random.Generator, size=(64, 80)) -> np.ndarray:
    y, x = np.mgrid[0:size[0], 0:size[1]]
    grey = 110 + 20 * np.sin(x / 5.0) * np.cos(y / 7.0) + rng.normal(0, 3, size)
    img = np.stack([grey + 10, grey, grey - 15], axis=-1)
    return np.clip(img, 0, 255).astype(np.uint8)


# --- CLAHE --------------------------------------------------------------------------------------------


def test_clahe_equalises_lightness_and_keeps_chroma():
    img = low_contrast_image(np.random.default_rng(0))
    out = clahe_rgb(img)
    lab_in = cv2.cvtColor(img, cv2.COLOR_RGB2LAB).astype(int)
    lab_out = cv2.cvtColor(out, cv2.COLOR_RGB2LAB).astype(int)
    assert out.dtype == np.uint8 and out.shape == img.shape
    assert lab_out[..., 0].std() > 1.5 * lab_in[..., 0].std()  # contrast of L stretched
    assert np.abs(lab_out[..., 1:] - lab_in[..., 1:]).mean() < 2.0  # a, b (chroma) essentially kept
    # the documented OpenCV call: L channel only, clipLimit 2, 8x8 tiles
    expected_l = cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8)).apply(np.ascontiguousarray(lab_in[..., 0].astype(np.uint8)))
    lab_expected = lab_in.astype(np.uint8).copy()
    lab_expected[..., 0] = expected_l
    np.testing.assert_array_equal(out, cv2.cvtColor(lab_expected, cv2.COLOR_LAB2RGB))
    assert not np.array_equal(clahe_rgb(img, clip_limit=8.0), out)  # the clip limit matters
    with pytest.raises(InputError, match="uint8 HxWx3"):
        clahe_rgb(img.astype(np.float32))


def test_clahe_wrapper_feeds_the_equalised_model_sized_image():
    inner = base_model()
    model = CLAHE(inner).eval()
    img = low_contrast_image(np.random.default_rng(1), size=(40, 50))
    prepared = model.prepare_image(img)  # worker side: resize 28, crop 24, no normalisation
    assert prepared.shape == (24, 24, 3)
    logits = model(torch.from_numpy(prepared).permute(2, 0, 1)[None].float() / 255)
    expected = inner.preprocessing.normalize(torch.from_numpy(clahe_rgb(prepared)).permute(2, 0, 1)[None].float() / 255)
    torch.testing.assert_close(inner.net.seen[-1], expected)  # exactly CLAHE of the model-sized image
    assert model(torch.rand(2, 3, 40, 50)).shape == (2, 4)  # any size: resized and cropped first
    assert logits.shape == (1, 4)
    assert model.differentiable is False
    assert model.preprocessing.mean is None  # geometry only: normalisation stays with the inner model
    assert model.name == "python:recorder [wrap=clahe]"
    assert CLAHE(base_model(), clip_limit=3, tile_grid=4).name == "python:recorder [wrap=clahe:clip=3:grid=4]"


# --- ten-crop -----------------------------------------------------------------------------------------


def test_ten_crop_matches_torchvision_ten_crop_of_the_central_square():
    inner = base_model(crop=24, resize=28)
    model = TenCrop(inner).eval()
    x = torch.rand(2, 3, 28, 28)
    crops = model.crops(x)
    expected = TF.ten_crop(x, [24, 24])
    assert crops.shape == (20, 3, 24, 24)
    for k, view in enumerate(expected):
        torch.testing.assert_close(crops[2 * k:2 * k + 2], view)
    out = model(x)
    per_view = torch.stack([torch.softmax(inner(v), dim=1) for v in expected]).mean(dim=0)
    torch.testing.assert_close(torch.softmax(out, dim=1), per_view, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out.exp().sum(dim=1), torch.ones(2))  # log of a distribution


def test_ten_crop_geometry_for_any_size_and_errors():
    model = TenCrop(base_model(crop=24, resize=28))
    assert model.preprocessing.crop == (28, 28) and model.preprocessing.resize == 28
    assert model.prepare_image(np.zeros((30, 60, 3), np.uint8)).shape == (28, 28, 3)
    assert model(torch.rand(3, 3, 33, 47)).shape == (3, 4)
    assert TenCrop(base_model(), resize=32).name.endswith("[wrap=ten-crop:resize=32]")
    no_crop = Classifier(Recorder(), name="x", preprocessing=Preprocessing(), num_classes=4)
    with pytest.raises(InputError, match="input size"):
        TenCrop(no_crop)
    with pytest.raises(InputError, match="smaller than the crop"):
        TenCrop(base_model(), resize=10)


# --- multi-scale --------------------------------------------------------------------------------------


def test_multi_scale_runs_the_network_at_each_scale_and_averages():
    inner = base_model(crop=24, resize=28)
    model = MultiScale(inner, scales=(0.5, 1.0, 1.5)).eval()
    x = torch.rand(2, 3, 24, 24)
    out = model(x)
    sizes = [tuple(t.shape[-2:]) for t in inner.net.seen]
    assert sizes == [(12, 12), (24, 24), (36, 36)]
    probs = torch.stack([torch.softmax(inner.net(inner.preprocessing.normalize(
        torch.nn.functional.interpolate(x, size=s, mode="bilinear", align_corners=False, antialias=s[0] < 24)
        if s != (24, 24) else x)), dim=1) for s in sizes]).mean(0)
    torch.testing.assert_close(torch.softmax(out, dim=1), probs, rtol=1e-5, atol=1e-6)
    assert model.name == "python:recorder [wrap=multi-scale:scales=0.5/1/1.5]"


def test_multi_scale_needs_a_size_agnostic_network():
    class FixedSize(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3 * 24 * 24, 4)

        def forward(self, x):
            return self.fc(x.flatten(1))

    model = MultiScale(Classifier(FixedSize(), name="fixed", preprocessing=Preprocessing(crop=24), num_classes=4))
    with pytest.raises(ModelError, match="any input size"):
        model(torch.rand(1, 3, 24, 24))


# --- composition, specs and names ---------------------------------------------------------------------


def test_composition_order_and_chain_names():
    inner = base_model()
    model = wrap_classifier(inner, "clahe,ten-crop")
    assert isinstance(model, CLAHE) and isinstance(model.inner, TenCrop) and model.inner.inner is inner
    assert model.name == "python:recorder [wrap=clahe+ten-crop]"
    assert model.preprocessing.crop == (28, 28)  # CLAHE sees the ten-crop square
    assert model(torch.rand(2, 3, 30, 40)).shape == (2, 4)
    both = wrap_classifier(base_model(), "ten-crop,multi-scale")
    assert both(torch.rand(1, 3, 28, 28)).shape == (1, 4)
    clahe_ms = wrap_classifier(base_model(), "clahe+multi-scale")
    assert clahe_ms(torch.rand(1, 3, 24, 24)).shape == (1, 4)
    with pytest.raises(InputError, match="write ten-crop before multi-scale"):
        wrap_classifier(base_model(), "multi-scale,ten-crop")
    with pytest.raises(InputError, match="write ten-crop before multi-scale"):
        wrap_classifier(base_model(), "multi-scale,clahe,ten-crop")


def test_specs_are_validated():
    assert parse_wrap(None) == [] and wrap_classifier(base := base_model(), None) is base
    assert parse_wrap("clahe:clip=3:grid=4, ten-crop") == [("clahe", {"clip_limit": 3.0, "tile_grid": 4}),
                                                          ("ten-crop", {})]
    assert canonical_wrap("clahe,ten-crop") == "clahe+ten-crop"
    assert canonical_wrap(["clahe:clip=2", "multi-scale:scales=0.75/1/1.25"]) == "clahe+multi-scale"
    assert canonical_wrap("clahe:clip=3") == "clahe:clip=3"
    with pytest.raises(InputError, match="Did you mean 'ten-crop'"):
        parse_wrap("tencrop")
    with pytest.raises(InputError, match="named twice"):
        parse_wrap("clahe,clahe")
    with pytest.raises(InputError, match="its parameters: clip=..., grid=..."):
        parse_wrap("clahe:limit=3")
    with pytest.raises(InputError, match="not a valid value"):
        parse_wrap("clahe:clip=high")


@pytest.mark.parametrize("name, expected", [
    ("torchvision:resnet50 [wrap=clahe+ten-crop]", ("torchvision:resnet50", "clahe+ten-crop")),
    ("m [num_classes=30, wrap=clahe:clip=3]", ("m [num_classes=30]", "clahe:clip=3")),
    ("m [preprocessing={'crop': [224, 224]}, wrap=ten-crop]", ("m [preprocessing={'crop': [224, 224]}]", "ten-crop")),
    ("torchvision:resnet50", ("torchvision:resnet50", None)),
    ("m [num_classes=30]", ("m [num_classes=30]", None)),
])
def test_split_wrapped_name(name, expected):
    assert split_wrapped_name(name) == expected


def test_load_model_wraps_and_refuses_detectors():
    from tiny_models import TinyCNN

    model = load_model(TinyCNN(4), preprocessing={"resize": 36, "crop": 32}, wrap="ten-crop", device="cpu")
    assert isinstance(model, TenCrop) and not model.training
    assert model(torch.rand(2, 3, 40, 50)).shape == (2, 4)
    from robustlab.models import Detector

    detector = Detector(nn.Identity(), name="det")
    with pytest.raises(InputError, match="applies to classifiers"):
        wrap_classifier(detector, "clahe")


def test_evaluate_stores_wrapped_runs_apart(tmp_path):
    from robustlab.data.images import write_image
    from robustlab.engine import evaluate

    rng = np.random.default_rng(0)
    for label, wnid in enumerate(("n01440764", "n01443537", "n01484850")):  # ImageNet classes 0..2
        for k in range(3):
            img = rng.normal(100, 30, (40, 40, 3))
            img[..., label] += 60
            write_image(tmp_path / "data" / wnid / f"{k}.png", np.clip(img, 0, 255).astype(np.uint8))
    data = tmp_path / "data"
    spec = f"python:{TINY_MODELS}:make_channel1000"
    common = dict(store=tmp_path / "store", corruptions="brightness", severities="1", workers=0, device="cpu",
                  preprocessing={"resize": 36, "crop": 32})
    plain = evaluate(spec, "corrupted", data, **common)
    wrapped = evaluate(spec, "corrupted", data, wrap="clahe,ten-crop", **common)
    assert wrapped.run_id != plain.run_id
    assert wrapped.model.endswith(", wrap=clahe+ten-crop]")
    base, chain = split_wrapped_name(wrapped.model)
    assert base == plain.model and chain == "clahe+ten-crop"
    assert wrapped.status == plain.status == "complete"
    again = evaluate(spec, "corrupted", data, wrap="clahe, ten-crop", **common)
    assert again.run_id == wrapped.run_id and again.units_computed == 0  # same spelling-independent identity
