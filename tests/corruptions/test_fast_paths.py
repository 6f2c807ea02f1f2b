"""The faster routes added after the compiled copies: each checked against the routine it replaces.

- ``ops.disk_kernel`` computes the defocus disk with OpenCV 4.11's float32 arithmetic:
  it must equal the disks the reference environment makes (fixture).
- ``_disk_filter.filter_uint8`` replaces defocus blur's ``cv2.filter2D(x / 255., -1, disk)``
  (OpenCV's DFT route) with exact integer tap sums: the float value must agree with OpenCV's to
  rounding error, and the uint8 output must be identical, including flat regions of every
  grey level (where the value sits closest to the truncation points).
- ``_legacy_random.normal`` / ``poisson_levels`` / ``uniform`` / ``randint`` draw a Mersenne Twister block at a time: from
  any position of the stream they must give NumPy's numbers and NumPy's final state.
- ``_sampler_route.draw_normal`` / ``draw_poisson_levels`` / ``draw_uniform`` / ``draw_randint`` take the compiled copy or NumPy's
  own sampler, whichever this process measured faster: both routes must give NumPy's numbers
  and leave the generator in NumPy's state, and so must the noise kernels built on them.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.corruptions import corrupt
from robustlab.corruptions import _legacy_random as LR
from robustlab.corruptions import _sampler_route as SR
from robustlab.corruptions._disk_filter import filter_uint8, plan_taps, tap_sums_pay
from robustlab.corruptions.ops import disk_kernel, unit_to_uint8
from robustlab.corruptions.blur import DEFOCUS

#: Every defocus disk of every profile, as (radius, anti-alias sigma).
DISKS = sorted({params for table in DEFOCUS.values() for params in table})


def _same_state(a: np.random.RandomState, b: np.random.RandomState) -> bool:
    sa, sb = a.get_state(), b.get_state()
    return bool(np.array_equal(sa[1], sb[1])) and sa[2:] == sb[2:]


def opencv_defocus(img: np.ndarray, kernel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(float value, uint8 output) of the reference's route: filter2D on x / 255., then uint8."""
    value = cv2.filter2D(img / 255.0, -1, kernel)
    return value, unit_to_uint8(value)


# --------------------------------------------------------------------------- disk filter


@pytest.mark.parametrize("radius,alias", DISKS)
def test_disk_filter_is_opencvs_on_every_grey_level(radius, alias):
    # A mosaic of flat 24 px squares, one per grey level (wider than the 21 px disks): inside a
    # square the value is the level times the kernel's sum, the case closest to a truncation
    # point; the edges between squares mix levels.
    levels = np.arange(256, dtype=np.uint8).reshape(16, 16)
    mosaic = np.kron(levels, np.ones((24, 24), np.uint8))
    img = np.stack([mosaic, mosaic.T, 255 - mosaic], axis=-1)
    kernel = disk_kernel(radius, alias)
    value, want = opencv_defocus(img, kernel)
    np.testing.assert_array_equal(filter_uint8(img, kernel), want)
    np.testing.assert_allclose(filter_uint8(img, kernel, to_uint8=False), value, rtol=0, atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(h=st.integers(2, 45), w=st.integers(2, 45), channels=st.sampled_from([0, 1, 3]),
       disk=st.sampled_from(DISKS), kind=st.sampled_from(["noise", "blocks", "extremes"]),
       seed=st.integers(0, 2**16))
def test_disk_filter_matches_opencv_on_random_images(h, w, channels, disk, kind, seed):
    # Images smaller than the kernel included (the reflected border then repeats).
    rng = np.random.default_rng(seed)
    shape = (h, w) if channels == 0 else (h, w, channels)
    if kind == "noise":
        img = rng.integers(0, 256, shape, dtype=np.uint8)
    elif kind == "blocks":
        img = rng.integers(0, 256, 4, dtype=np.uint8)[rng.integers(0, 4, shape)]
    else:
        img = rng.choice(np.array([0, 255], np.uint8), shape)
    kernel = disk_kernel(*disk)
    value, want = opencv_defocus(img, kernel)
    got = filter_uint8(img, kernel)
    assert got.shape == img.shape and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want.reshape(img.shape))
    np.testing.assert_allclose(filter_uint8(img, kernel, to_uint8=False), value.reshape(img.shape),
                               rtol=0, atol=1e-14)


@settings(max_examples=25, deadline=None)
@given(half_y=st.integers(0, 6), half_x=st.integers(0, 6), n_values=st.integers(1, 5),
       symmetric=st.booleans(), seed=st.integers(0, 2**16))
def test_disk_filter_takes_any_kernel(half_y, half_x, n_values, symmetric, seed):
    # Kernels with few values, top-bottom symmetric or not, rectangular, with runs and holes.
    rng = np.random.default_rng(seed)
    values = np.concatenate([[0.0], rng.uniform(-0.1, 0.3, n_values)]).astype(np.float32)
    kernel = values[rng.integers(0, n_values + 1, (2 * half_y + 1, 2 * half_x + 1))]
    if symmetric:
        kernel = np.concatenate([kernel[:half_y + 1], kernel[:half_y][::-1]])
    img = rng.integers(0, 256, (23, 31, 3), dtype=np.uint8)
    value = cv2.filter2D(img / 255.0, -1, kernel)
    np.testing.assert_allclose(filter_uint8(img, kernel, to_uint8=False), value, rtol=0, atol=1e-13)
    assert plan_taps(kernel).paired == bool(np.array_equal(kernel, kernel[::-1]))


def test_disk_filter_wide_sums():
    # A 31x31 box: its one group sums 961 pixels, more than 16 bits hold.
    kernel = np.full((31, 31), 1 / 961, np.float32)
    assert plan_taps(kernel).wide
    img = np.random.default_rng(4).integers(200, 256, (40, 50, 3), dtype=np.uint8)
    np.testing.assert_allclose(filter_uint8(img, kernel, to_uint8=False), cv2.filter2D(img / 255.0, -1, kernel),
                               rtol=0, atol=1e-13)


DISKS_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corruptions" / "defocus_kernels.npz"


def test_disk_kernels_are_the_references():
    # imagecorruptions' disk() as the reference environment's OpenCV (4.11) makes it, for every
    # profile's (radius, alias blur); made with
    # python perf/parity_corruptions.py --write-defocus-kernels tests/fixtures/corruptions/defocus_kernels.npz
    with np.load(DISKS_FIXTURE) as data:
        assert bytes(data["opencv"]).decode().startswith("4.11")
        kernels = {k: data[k] for k in data.files if k != "opencv"}
    assert len(kernels) == len(DISKS)
    for radius, alias in DISKS:
        want = kernels[f"{radius}_{alias}"]
        got = disk_kernel(radius, alias)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"disk({radius}, {alias})")


def test_disk_plans_of_the_defocus_severities():
    # imagecorruptions' disks: few values, symmetric top to bottom, all cheaper than the DFT.
    groups = []
    for radius, alias in DEFOCUS["imagecorruptions"]:
        plan = plan_taps(disk_kernel(radius, alias))
        assert plan.paired and not plan.wide
        groups.append(plan.groups)
        assert tap_sums_pay(disk_kernel(radius, alias))
    assert groups == [4, 12, 17, 16, 40]
    # a 21x21 kernel of all-different values is left to OpenCV
    assert not tap_sums_pay(np.random.default_rng(0).random((21, 21)).astype(np.float32))


def test_defocus_blur_takes_the_tap_sums_and_equals_opencv():
    img = np.random.default_rng(9).integers(0, 256, (57, 71, 3), dtype=np.uint8)
    for severity, (radius, alias) in enumerate(DEFOCUS["imagecorruptions"], start=1):
        want = opencv_defocus(img, disk_kernel(radius, alias))[1]
        np.testing.assert_array_equal(corrupt(img, "defocus_blur", severity, rng=0), want)


@pytest.mark.parametrize("args, error, message", [
    ((np.zeros((8, 8), np.float32), np.ones((3, 3), np.float32)), TypeError, "uint8"),
    ((np.zeros((1, 8), np.uint8), np.ones((3, 3), np.float32)), ValueError, "2x2"),
    ((np.zeros((8, 8), np.uint8), np.ones((4, 3), np.float32)), ValueError, "odd"),
    ((np.zeros((8, 8), np.uint8), np.ones((3, 3), np.int32)), TypeError, "float"),
    ((np.zeros((8, 8), np.uint8), np.full((3, 3), np.nan, np.float32)), ValueError, "non-finite"),
])
def test_disk_filter_errors_name_the_problem(args, error, message):
    with pytest.raises(error, match=message):
        filter_uint8(*args)


# --------------------------------------------------------------------------- block-wise draws


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), skip=st.integers(0, 1300), size=st.integers(0, 4000),
       kind=st.sampled_from(["normal", "poisson", "uniform", "randint"]))
def test_compiled_draws_start_anywhere_in_the_stream(seed, skip, size, kind):
    # The compiled copies take the Mersenne Twister a block (624 words) at a time: whatever the
    # position they start from (odd after 32-bit draws, at or near a block's end) and however
    # many blocks they cross, they must draw NumPy's numbers and stop at NumPy's position.
    ours, theirs = np.random.RandomState(seed), np.random.RandomState(seed)
    for rs in (ours, theirs):
        rs.randint(0, 2**31, size=skip)  # one 32-bit word per value
    if kind == "normal":
        np.testing.assert_array_equal(LR.normal(ours, (size,), 0.1, 0.7), theirs.normal(0.1, 0.7, size=size))
    elif kind == "uniform":
        np.testing.assert_array_equal(LR.uniform(ours, (size,)), theirs.random_sample(size))
        np.testing.assert_array_equal(LR.uniform(ours, (size,), -1.07, 2.5), theirs.uniform(-1.07, 2.5, size=size))
    elif kind == "randint":  # glass blur's ranges: spans 1..7 (7 of them with rejections), and wider
        low = -(seed % 5)
        high = low + [1, 2, 3, 6, 7, 8, 1000, 2**20 + 3][seed % 8]
        got, want = LR.randint(ours, low, high, (size,)), theirs.randint(low, high, size=size)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    else:
        lam = np.concatenate([[0.0], np.random.default_rng(seed % 997).uniform(0, 40, 255)])
        levels = np.random.default_rng(seed).integers(0, 256, size).astype(np.uint8)
        np.testing.assert_array_equal(LR.poisson_levels(ours, levels, lam), theirs.poisson(lam[levels]))
    assert _same_state(ours, theirs)


@pytest.mark.parametrize("in_place", [True, False])
def test_state_read_in_place_or_through_get_state(in_place, monkeypatch):
    # The compiled draws reach the generator's state in place (NumPy's C struct, checked against
    # its `state` property once); without that view they go through get/set_state. Either way:
    # NumPy's numbers, NumPy's final state, including a cached Gaussian left by an odd draw.
    if in_place:
        assert LR._state_view(np.random.RandomState(0)) is not None
    else:
        monkeypatch.setattr(LR, "_view_matches", [False])
        assert LR._state_view(np.random.RandomState(0)) is None
    ours, theirs = np.random.RandomState(17), np.random.RandomState(17)
    np.testing.assert_array_equal(LR.normal(ours, (7,), 0.0, 1.0), theirs.normal(0.0, 1.0, 7))  # spare kept
    np.testing.assert_array_equal(LR.normal(ours, (5,), 1.0, 2.0), theirs.normal(1.0, 2.0, 5))  # spare used
    np.testing.assert_array_equal(LR.uniform(ours, (9,), -2.0, 3.0), theirs.uniform(-2.0, 3.0, 9))
    np.testing.assert_array_equal(LR.randint(ours, -3, 3, (11,)), theirs.randint(-3, 3, size=11))
    lam = np.arange(256) / 10.0
    levels = np.arange(0, 256, 3).astype(np.uint8)
    np.testing.assert_array_equal(LR.poisson_levels(ours, levels, lam), theirs.poisson(lam[levels]))
    assert _same_state(ours, theirs)
    assert ours.normal() == theirs.normal()


# --------------------------------------------------------------------------- sampler routes


@pytest.fixture(params=["compiled", "numpy"])
def route(request, monkeypatch):
    monkeypatch.setenv(SR.SAMPLER_ENV, request.param)
    return request.param


@pytest.mark.parametrize("spare", [False, True])
def test_draw_normal_is_numpys_on_both_routes(route, spare):
    assert SR.sampler_route("normal") == route
    ours, theirs = np.random.RandomState(11), np.random.RandomState(11)
    if spare:  # a cached spare Gaussian is used first, on both routes
        ours.normal()
        theirs.normal()
    np.testing.assert_array_equal(SR.draw_normal(ours, (33, 17), 0.5, 0.2), theirs.normal(0.5, 0.2, (33, 17)))
    assert _same_state(ours, theirs)


def test_draw_uniform_is_numpys_on_both_routes(route):
    ours, theirs = np.random.RandomState(5), np.random.RandomState(5)
    ours.randint(0, 9, size=3)
    theirs.randint(0, 9, size=3)
    np.testing.assert_array_equal(SR.draw_uniform(ours, (21, 40, 3)), theirs.random_sample((21, 40, 3)))
    np.testing.assert_array_equal(SR.draw_uniform(ours, (70, 90), -1.12, 1.12), theirs.uniform(-1.12, 1.12, (70, 90)))
    np.testing.assert_array_equal(SR.draw_uniform(ours, (3, 4), 2.0, 5.0), theirs.uniform(2.0, 5.0, (3, 4)))
    assert _same_state(ours, theirs)
    with pytest.raises(OverflowError, match="not finite"):
        LR.uniform(ours, (2,), -1e308, 1e308)


def test_draw_randint_is_numpys_on_both_routes(route):
    ours, theirs = np.random.RandomState(6), np.random.RandomState(6)
    for d in (1, 2, 3, 4):  # glass blur's offsets [-d, d)
        np.testing.assert_array_equal(SR.draw_randint(ours, -d, d, (17, 30, 2)), theirs.randint(-d, d, size=(17, 30, 2)))
    assert _same_state(ours, theirs)
    with pytest.raises(ValueError, match="low < high"):
        LR.randint(ours, 3, 3, (2,))


def test_draw_poisson_levels_is_numpys_on_both_routes(route):
    img = np.random.default_rng(1).integers(0, 256, (29, 31, 3), dtype=np.uint8)
    lam = (np.arange(256, dtype=np.uint8) / 255.0) * 25
    ours, theirs = np.random.RandomState(3), np.random.RandomState(3)
    np.testing.assert_array_equal(SR.draw_poisson_levels(ours, img, lam), theirs.poisson((img / 255.0) * 25))
    assert _same_state(ours, theirs)


@pytest.mark.parametrize("name", ["gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "snow", "spatter",
                                  "glass_blur", "elastic_transform"])
def test_noise_kernels_are_the_same_on_both_routes(name, monkeypatch):
    img = np.random.default_rng(2).integers(0, 256, (40, 44, 3), dtype=np.uint8)
    outs = []
    for forced in ("compiled", "numpy"):
        monkeypatch.setenv(SR.SAMPLER_ENV, forced)
        outs.append(corrupt(img, name, 4, rng=np.random.RandomState(8)))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_auto_route_is_measured_once(monkeypatch):
    monkeypatch.delenv(SR.SAMPLER_ENV, raising=False)
    monkeypatch.setattr(SR, "_measured", {})
    first = {kind: SR.sampler_route(kind) for kind in SR.KINDS}
    assert set(first.values()) <= {"compiled", "numpy"}
    assert SR._measured == first  # kept: later calls do not time again
    assert {kind: SR.sampler_route(kind) for kind in first} == first


def test_sampler_route_rejects_bad_settings(monkeypatch):
    with pytest.raises(ValueError, match="kind must be one of 'normal', 'poisson', 'uniform'"):
        SR.sampler_route("gamma")
    monkeypatch.setenv(SR.SAMPLER_ENV, "fastest")
    with pytest.raises(ValueError, match="ROBUSTLAB_LEGACY_SAMPLER must be one of auto, compiled, numpy"):
        SR.sampler_route("normal")


# --------------------------------------------------------------------------- zoom by exactly 1


@pytest.mark.parametrize("centred", [False, True])
def test_zoom_by_one_adds_the_image_itself(centred):
    # zoom blur's first factor is exactly 1: scipy's bilinear zoom then returns every pixel
    # times 1 * 1 plus three products with a zero weight, i.e. the pixel; the shortcut adds
    # the pixels directly and must agree with scipy and with the bilinear loop.
    from scipy.ndimage import zoom

    from robustlab.corruptions import ops as K

    x = np.random.default_rng(6).random((37, 45, 3)).astype(np.float32)
    np.testing.assert_array_equal(K.zoom_sum(x, [1.0], centred=centred), x)
    np.testing.assert_array_equal(K.clipped_zoom(x, 1.0, centred=centred), zoom(x, (1.0, 1.0, 1), order=1))
    both = K.zoom_sum(x, [1.0, 1.07], centred=centred)
    np.testing.assert_array_equal(both, x + K.clipped_zoom(x, 1.07, centred=centred))
