"""The torch kernels' batched formulations (what accelerators run), tested on the CPU.

Every kernel is a fixed number of tensor operations and host reads whatever the batch size,
apart from its draws (one call per image and draw: each image has its own generator). The
batched formulations agree with the CPU's per-image ones, keep each image's result independent
of its batch, and keep every draw as it was.
"""

from __future__ import annotations

from collections import Counter

import cv2
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

from robustlab.corruptions import corrupt_batch, list_corruptions
from robustlab.corruptions.items import item_seed
from robustlab.corruptions.ops import motion_blur_kernel
from robustlab.corruptions.weather import FROST
from robustlab.corruptions.torch.digital import affine_inverse_maps
from robustlab.corruptions.torch.draws import image_generators, integers, normal, uniform
from robustlab.corruptions.torch.ops import batched_everywhere, fft_size, motion_taps, per_image_loops
from robustlab.corruptions.torch.water import dilate3, distance_transform
from robustlab.corruptions.torch.weather import FROST_CHOICES, frost_textures

#: Per-image draw operations (one per image and draw: each image has its own generator).
DRAWS = {"normal_", "uniform_", "random_", "poisson"}
#: jpeg_compression codes on the CPU through libjpeg on every device (and on threads).
BATCHED = [n for n in list_corruptions("all") if n != "jpeg_compression"]
#: Host reads per call the batched formulations may make (besides the input check's one):
#: glass blur one per shuffle iteration, spatter one per hysteresis block, frost one (the crop
#: range depends on the texture drawn).
WAITS = {"glass_blur": 3, "spatter": 2, "frost": 1}


class Trace(TorchDispatchMode):
    """Counts the torch operations dispatched, and the host reads (``.item()``, ``bool()``,
    ``.tolist()``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter = Counter()
        self.reads = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops[name] += 1
        self.reads += name == "_local_scalar_dense"
        return func(*args, **(kwargs or {}))


def trace(monkeypatch, name: str, n: int, size: int = 128) -> Trace:
    x = torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(n))
    t = Trace()
    tolist = torch.Tensor.tolist

    def counted(self):
        t.reads += 1
        return tolist(self)

    monkeypatch.setattr(torch.Tensor, "tolist", counted)
    with batched_everywhere(), t:
        corrupt_batch(x, name, 3, seed=0, ids=list(range(n)))
    monkeypatch.setattr(torch.Tensor, "tolist", tolist)
    return t


@pytest.mark.parametrize("name", BATCHED)
def test_a_kernel_is_a_fixed_number_of_operations_and_host_reads_whatever_the_batch(name, monkeypatch):
    with batched_everywhere():                       # caches (matrices, textures) filled first
        corrupt_batch(torch.rand(2, 3, 128, 128), name, 3, seed=0, ids=[0, 1])
    small, large = trace(monkeypatch, name, 2), trace(monkeypatch, name, 5)
    grown = {op: large.ops[op] - small.ops[op] for op in large.ops if large.ops[op] != small.ops[op]}
    assert set(grown) <= DRAWS, f"{name}: per-image operations besides the draws: {grown}"
    assert all(v % 3 == 0 for v in grown.values())                  # whole draws per added image
    assert small.reads == large.reads <= 1 + WAITS.get(name, 0), (small.reads, large.reads)


def test_per_image_loops_only_on_a_cpu_outside_batched_everywhere():
    assert per_image_loops(torch.device("cpu"))
    assert not per_image_loops(torch.device("meta"))
    with batched_everywhere():
        assert not per_image_loops(torch.device("cpu"))
    assert per_image_loops(torch.device("cpu"))


@pytest.mark.parametrize("name", ["motion_blur", "snow", "defocus_blur", "spatter", "glass_blur", "frost"])
def test_batched_formulations_agree_with_the_cpu_ones(name):
    x = torch.from_numpy(np.random.default_rng(3).integers(0, 256, (3, 128, 140, 3), dtype=np.uint8))
    for severity in (1, 5):
        ours = corrupt_batch(x, name, severity, seed=4, ids=["a", "b", "c"]).to(torch.int16)
        with batched_everywhere():
            batched = corrupt_batch(x, name, severity, seed=4, ids=["a", "b", "c"]).to(torch.int16)
        differ = (ours - batched).abs()
        assert differ.max() <= 1 and differ.float().mean() < 1e-3, (name, severity, differ.float().mean())


@pytest.mark.parametrize("name", ["motion_blur", "snow", "defocus_blur"])
def test_batched_fft_results_do_not_depend_on_the_batch(name):
    x = torch.from_numpy(np.random.default_rng(5).integers(0, 256, (4, 130, 136, 3), dtype=np.uint8))
    with batched_everywhere():
        together = corrupt_batch(x, name, 4, seed=1, ids=list("abcd"))
        alone = corrupt_batch(x[2:3], name, 4, seed=1, ids=["c"])
    assert torch.equal(together[2], alone[0])


def test_draw_helpers_give_each_image_its_generators_stream():
    """In place into one batch tensor, the numbers the per-image calls give, in order."""
    seeds = [11, 12, 13]
    device = torch.device("cpu")
    gens = image_generators(seeds, device)
    got = [normal(gens, (1, 5, 6), mean=0.5, std=0.3, device=device), uniform(gens, -45.0, 45.0, device=device,
           dtype=torch.float64), integers(gens, -3, 3, (2, 4, 4, 2), device=device)]
    for i, s in enumerate(seeds):
        g = torch.Generator().manual_seed(s)
        assert torch.equal(got[0][i], torch.randn((1, 5, 6), generator=g) * 0.3 + 0.5)
        assert torch.equal(got[1][i], -45.0 + 90.0 * torch.rand((), generator=g, dtype=torch.float64))
        assert torch.equal(got[2][i], torch.randint(-3, 3, (2, 4, 4, 2), generator=g))


def test_frost_draws_and_crops_are_the_per_image_ones():
    """Texture index, then top and left in its range, per image: the crops of the reference loop."""
    x = torch.rand(4, 3, 64, 80)
    ids = list(range(4))
    got = corrupt_batch(x, "frost", 3, seed=2, ids=ids)
    textures, sizes = frost_textures(64, 80, "imagecorruptions", "cpu")
    image_weight, texture_weight = FROST["imagecorruptions"][2]
    for i in ids:
        g = torch.Generator().manual_seed(item_seed(2, i, "frost", 3))
        k = int(torch.randint(FROST_CHOICES, (), generator=g))
        top = int(torch.randint(0, sizes[k][0] - 64, (), generator=g))
        left = int(torch.randint(0, sizes[k][1] - 80, (), generator=g))
        crop = textures[k, :, top:top + 64, left:left + 80]
        assert torch.equal(got[i], (image_weight * x[i] + texture_weight * crop).clamp(0, 1))


@settings(max_examples=40, deadline=None)
@given(h=st.integers(3, 40), w=st.integers(3, 40), density=st.sampled_from([0.003, 0.03, 0.3]),
       cap=st.sampled_from([2.0, 7.5, 20.0, 1e9]), seed=st.integers(0, 2**31 - 1))
def test_distance_transform_is_opencvs_chamfer_distance(h, w, density, cap, seed):
    features = np.random.default_rng(seed).random((h, w)) < density
    features[seed % h, seed % w] = True
    want = np.minimum(cv2.distanceTransform((~features).astype(np.uint8) * 255, cv2.DIST_L2, 5), cap)
    got = distance_transform(torch.from_numpy(features)[None, None], cap)[0, 0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_dilate3_is_opencvs_3x3_dilation():
    mask = np.random.default_rng(9).random((2, 1, 30, 41)) < 0.05
    got = dilate3(torch.from_numpy(mask)).numpy()
    for i in range(2):
        want = cv2.dilate(mask[i, 0].astype(np.uint8), np.ones((3, 3), np.uint8), borderValue=0)
        np.testing.assert_array_equal(got[i, 0], want > 0)


@settings(max_examples=30, deadline=None)
@given(radius=st.sampled_from([3, 10, 15, 20]), h=st.integers(8, 60), w=st.integers(8, 60),
       angles=st.lists(st.floats(-180, 180, allow_nan=False), min_size=1, max_size=6))
def test_motion_taps_on_the_device_are_the_numpy_definitions(radius, h, w, angles):
    dy, dx, keep = motion_taps(radius, torch.tensor(angles, dtype=torch.float64), (h, w))
    for i, angle in enumerate(angles):
        _, want_dy, want_dx = motion_blur_kernel(radius, 3, angle, (h, w))
        count = int(keep[i].sum())
        assert count == len(want_dy) and bool(keep[i, :count].all())
        np.testing.assert_array_equal(dy[i, :count].numpy(), want_dy)
        np.testing.assert_array_equal(dx[i, :count].numpy(), want_dx)


@given(n=st.integers(1, 5000))
def test_fft_size_is_the_smallest_even_7_smooth_length(n):
    def smooth(m: int) -> bool:
        for f in (2, 3, 5, 7):
            while m % f == 0:
                m //= f
        return m == 1

    size = fft_size(n)
    assert size >= n and size % 2 == 0 and smooth(size)
    assert not any(smooth(m) for m in range(n + (n % 2), size, 2))


def test_affine_maps_are_opencvs_for_hendrycks_anchors():
    jitters = torch.from_numpy(np.random.default_rng(4).uniform(-30, 30, (5, 3, 2)))
    got = affine_inverse_maps(224, 200, jitters).numpy()
    centre = np.float32((224, 200)) // 2          # hendrycks' anchors, (row, col) used as (x, y)
    src = np.float32([centre + 66, [centre[0] + 66, centre[1] - 66], centre - 66])
    for i in range(5):
        dst = (src + jitters[i].numpy().astype(np.float32)).astype(np.float32)
        want = cv2.invertAffineTransform(cv2.getAffineTransform(src, dst))
        np.testing.assert_allclose(got[i], want, rtol=0, atol=1e-9)
