"""From uint8 pixels to a network's input: the fast CPU paths give the float path's values exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.models.pixels import level_table, normalized_input, to_float
from robustlab.models.preprocessing import Preprocessing
from robustlab.models.protocol import Classifier


def float_path(pixels: torch.Tensor) -> torch.Tensor:
    """What the engine did before: torch's conversion of channels-last uint8 pixels."""
    return pixels.movedim(-1, -3).float().div_(255.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), h=st.integers(1, 40), w=st.integers(1, 40), seed=st.integers(0, 2**31))
def test_to_float_is_torchs_division_with_its_layout(n, h, w, seed):
    x = torch.from_numpy(np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8))
    got, want = to_float(x, "cpu"), float_path(x)
    assert torch.equal(got, want) and got.stride() == want.stride()
    assert torch.equal(to_float(x.numpy(), "cpu", channels_first=False), x.float().div_(255.0))


means = st.tuples(*[st.floats(0.0, 1.0)] * 3)
stds = st.tuples(*[st.floats(0.01, 2.0)] * 3)


@settings(max_examples=25, deadline=None)
@given(mean=means, std=stds, h=st.integers(1, 30), w=st.integers(1, 30), seed=st.integers(0, 2**31))
def test_normalised_input_from_pixels_equals_the_float_path(mean, std, h, w, seed):
    prep = Preprocessing(mean=mean, std=std)
    x = torch.from_numpy(np.random.default_rng(seed).integers(0, 256, (2, h, w, 3), dtype=np.uint8))
    want = prep(float_path(x))
    got = normalized_input(x, prep.normalize, level_table(prep.normalize))
    assert torch.equal(got, want) and got.stride() == want.stride()


@pytest.mark.parametrize("shape", [(2, 224, 224, 3), (2, 256, 320, 3), (1, 300, 200, 3), (1, 224, 300, 3)])
def test_a_classifier_on_pixels_computes_what_it_computes_on_floats(shape):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(4, 5))
    model = Classifier(net, name="t", preprocessing=Preprocessing.imagenet())
    x = torch.from_numpy(np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8))
    with torch.no_grad():
        assert torch.equal(model(x), model(float_path(x)))
    assert model.takes_pixels


def test_a_subclass_with_its_own_forward_is_handed_floats():
    class Own(Classifier):
        def forward(self, x):
            return self.net(x)

    assert not Own(torch.nn.Identity(), name="own").takes_pixels


@pytest.mark.parametrize("prep, size, leaves", [
    (Preprocessing(256, 224), (224, 224), True), (Preprocessing(256, 224), (256, 320), False),
    (Preprocessing(None, 224), (224, 224), True), (Preprocessing(None, None), (37, 41), True),
    (Preprocessing(37, None), (37, 41), True), (Preprocessing(40, None), (37, 41), False),
])
def test_leaves_size_matches_what_geometry_does(prep, size, leaves):
    x = torch.rand(1, 3, *size)
    assert prep.leaves_size(*size) is leaves
    assert (prep.geometry(x).shape == x.shape and torch.equal(prep.geometry(x), x)) is leaves


def test_torchvision_preprocessing_reads_files_with_the_processors_pixels(tmp_path):
    """hf: models resize with torchvision, not Pillow: the fused read path keeps their pixels."""
    from PIL import Image

    from robustlab.data.images import read_image
    from robustlab.models.preprocessing import Geometry, TorchvisionPreprocessing

    prep = TorchvisionPreprocessing(crop=224, size=(256, 256), interpolation="bicubic")
    img = np.random.default_rng(1).integers(0, 256, (300, 410, 3), dtype=np.uint8)
    Image.fromarray(img).save(tmp_path / "x.png")
    np.testing.assert_array_equal(read_image(tmp_path / "x.png", prepare=Geometry(prep)), prep.prepare_image(img))
    assert not prep.leaves_size(224, 300) and prep.leaves_size(224, 224)
    assert TorchvisionPreprocessing(size=(200, 100)).leaves_size(200, 100)
    assert not TorchvisionPreprocessing(size=(200, 100)).leaves_size(100, 200)
