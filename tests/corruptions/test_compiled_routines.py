"""The compiled stand-ins for library routines the references call, checked bit for bit.

``_gaussian.gaussian_filter`` replaces ``scipy.ndimage.gaussian_filter``; ``_legacy_random``
replaces ``RandomState.poisson`` and ``RandomState.normal`` (same draws from the same stream,
same state afterwards); ``_pil_resample`` replaces Pillow's BOX and NEAREST resizes;
``ops.motion_blur`` with ``out_shape`` serves snow's cropped blur.
Each is compared with the library itself on random inputs, so a change of operation order, a
missed draw or a wrong edge rule fails here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from scipy import ndimage

from robustlab.corruptions import ops as K
from robustlab.corruptions import exactmath
from robustlab.corruptions._gaussian import gaussian_filter, gaussian_weights
from robustlab.corruptions._legacy_random import normal, poisson_levels
from robustlab.corruptions._pil_resample import box_resize, nearest_resize

# --------------------------------------------------------------------------- gaussian filter


def scipy_gaussian_filter(x, sigma, *, mode="reflect", truncate=4.0, output=None):
    """``scipy.ndimage.gaussian_filter`` as scipy writes it (one ``correlate1d`` per axis, axis 0
    first, each pass into the output dtype), with robustlab's weights: scipy's own weights come from
    the installed NumPy's ``exp``, which is one unit in the last place off on CPUs with AVX-512
    (see robustlab.corruptions.exactmath), and this test is about the filter, not the weights."""
    sigmas = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (x.ndim,))
    out_dtype = x.dtype if output is None else np.dtype(output)
    current = x
    for axis, sd in enumerate(sigmas):
        if sd <= 1e-15:
            continue
        current = ndimage.correlate1d(current, gaussian_weights(sd, truncate), axis, output=out_dtype, mode=mode)
    return current.astype(out_dtype, copy=current is x)


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 40), w=st.integers(1, 40), channels=st.sampled_from([0, 1, 3]),
       sy=st.sampled_from([0.0, 0.3, 0.7, 1.0, 2.5, 6.0, 30.0]),
       sx=st.sampled_from([0.0, 0.5, 1.0, 3.0, 45.0]),
       mode=st.sampled_from(["nearest", "reflect"]), truncate=st.sampled_from([3.0, 4.0]),
       dtype=st.sampled_from([np.float32, np.float64]), output=st.sampled_from([None, np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_gaussian_filter_is_scipys(h, w, channels, sy, sx, mode, truncate, dtype, output, seed):
    # Radii larger than the image (sigma 30 and 45) exercise the repeated reflection.
    shape = (h, w) if channels == 0 else (h, w, channels)
    x = np.random.default_rng(seed).normal(0, 1, shape).astype(dtype)
    sigma = (sy, sx) if channels == 0 else (sy, sx, 0.0)
    ref = scipy_gaussian_filter(x, sigma, mode=mode, truncate=truncate, output=output)
    got = gaussian_filter(x, sigma, mode=mode, truncate=truncate, output=output)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_gaussian_filter_scalar_sigma_and_non_contiguous_input():
    x = np.random.default_rng(1).random((50, 70))[::2, ::3]
    np.testing.assert_array_equal(gaussian_filter(x, 1.7, mode="nearest"),
                                  ndimage.gaussian_filter(x, 1.7, mode="nearest"))
    # the input is left alone
    before = x.copy()
    gaussian_filter(x, 2.0)
    np.testing.assert_array_equal(x, before)


def test_gaussian_weights_are_scipys_formula_correctly_rounded():
    from scipy.ndimage import _filters

    for sigma, truncate in ((0.5, 4.0), (1.0, 4.0), (6.0, 4.0), (4.27, 3.0), (0.01, 4.0), (1.5, 4.0)):
        radius = int(truncate * sigma + 0.5)
        x = np.arange(-radius, radius + 1)
        phi = exactmath.exp(-0.5 / (sigma * sigma) * x ** 2)
        np.testing.assert_array_equal(gaussian_weights(sigma, truncate), phi / phi.sum())
        # scipy's own kernel: the same up to the installed NumPy's exp (1 ulp on AVX-512 CPUs)
        np.testing.assert_array_max_ulp(gaussian_weights(sigma, truncate),
                                        _filters._gaussian_kernel1d(sigma, 0, radius), maxulp=2)


@pytest.mark.parametrize("args, kwargs, message", [
    ((np.zeros((4, 4, 3)), 1.0), {}, "channel axis"),
    ((np.zeros((4, 4)), 1.0), {"mode": "wrap"}, "mode must be"),
    ((np.zeros(8), 1.0), {}, "2-D or 3-D"),
    ((np.zeros((4, 4), np.uint8), 1.0), {}, "float32/float64"),
    ((np.zeros((4, 4)), (1.0, 1.0, 1.0)), {}, "3 sigmas"),
    ((np.zeros((4, 4)), 1.0), {"output": np.int16}, "output must be"),
])
def test_gaussian_filter_errors_name_the_problem(args, kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        gaussian_filter(*args, **kwargs)


# --------------------------------------------------------------------------- legacy draws


def _rates(seed: int) -> np.ndarray:
    """Rates on both sides of NumPy's switch at 10, zero, tiny and large ones."""
    rng = np.random.default_rng(seed)
    return np.concatenate([[0.0, 1e-12, 9.999999, 10.0, 10.000001, 600.0], rng.uniform(0, 80, 250)])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cached_gauss=st.booleans(),
       shape=st.sampled_from([(1,), (17, 5), (31, 29, 3)]))
def test_poisson_levels_draws_what_numpy_draws(seed, cached_gauss, shape):
    lam = _rates(seed % 1000)
    levels = np.random.default_rng(seed).integers(0, len(lam), shape)
    ours, theirs = np.random.RandomState(seed), np.random.RandomState(seed)
    if cached_gauss:  # a RandomState holding a spare Gaussian keeps it across the draws
        ours.normal()
        theirs.normal()
    np.testing.assert_array_equal(poisson_levels(ours, levels, lam), theirs.poisson(lam[levels]))
    assert ours.normal() == theirs.normal() and ours.random_sample() == theirs.random_sample()


def test_poisson_levels_for_shot_noise_rates_on_an_image():
    img = np.random.default_rng(3).integers(0, 256, (64, 48, 3), dtype=np.uint8)
    for rate in (3, 5, 12, 25, 60, 500):
        lam = (np.arange(256, dtype=np.uint8) / 255.0) * rate
        ours, theirs = np.random.RandomState(rate), np.random.RandomState(rate)
        np.testing.assert_array_equal(poisson_levels(ours, img, lam), theirs.poisson((img / 255.0) * rate))
        np.testing.assert_array_equal(ours.get_state()[1], theirs.get_state()[1])


def test_poisson_levels_rejects_levels_outside_the_table():
    with pytest.raises(IndexError, match="must index the 3 rates"):
        poisson_levels(np.random.RandomState(0), np.array([0, 3]), np.array([1.0, 2.0, 3.0]))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spare=st.booleans(), size=st.integers(0, 301),
       loc=st.sampled_from([0.0, 0.55, -3.0]), scale=st.sampled_from([0.0, 0.08, 1.0, 0.3]))
def test_normal_draws_what_numpy_draws(seed, spare, size, loc, scale):
    # Odd sizes leave a spare value in the state; it must be the one NumPy keeps.
    ours, theirs = np.random.RandomState(seed), np.random.RandomState(seed)
    if spare:
        ours.normal()
        theirs.normal()
    np.testing.assert_array_equal(normal(ours, (size,), loc, scale), theirs.normal(loc, scale, size=(size,)))
    assert ours.get_state()[2:] == theirs.get_state()[2:]
    assert ours.normal() == theirs.normal()


def test_other_bit_generators_are_served_by_numpy():
    lam = np.array([0.5, 20.0])
    levels = np.array([[0, 1], [1, 0]])
    a, b = np.random.RandomState(np.random.PCG64(5)), np.random.RandomState(np.random.PCG64(5))
    np.testing.assert_array_equal(poisson_levels(a, levels, lam), b.poisson(lam[levels]))
    np.testing.assert_array_equal(normal(a, (3, 2), 1.0, 2.0), b.normal(1.0, 2.0, size=(3, 2)))


# --------------------------------------------------------------------------- motion blur window


@pytest.mark.parametrize("channels", [0, 3])
def test_motion_blur_window_is_the_top_left_of_the_full_blur(channels):
    # Snow blurs a zoomed layer slightly larger than the image and keeps the image's size; the
    # window's edges still clamp at the full layer's border, so it equals a crop of the full blur.
    shape = (41, 37) if channels == 0 else (41, 37, channels)
    x = np.random.default_rng(2).random(shape)
    full = K.motion_blur(x, 12, 8, -100.0)
    np.testing.assert_array_equal(K.motion_blur(x, 12, 8, -100.0, (39, 30)), full[:39, :30])
    with pytest.raises(ValueError, match="larger than the layer"):
        K.motion_blur(x, 12, 8, -100.0, (42, 30))


# --------------------------------------------------------------------------- Pillow resizes


def _pillow(img: np.ndarray, size: tuple[int, int], method) -> np.ndarray:
    return np.asarray(Image.fromarray(img).resize(size, method))


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 120), w=st.integers(1, 120), out_w=st.integers(1, 160), out_h=st.integers(1, 160),
       seed=st.integers(0, 2**16))
def test_box_resize_is_pillows_horizontal_then_vertical_pass(h, w, out_w, out_h, seed):
    # Pillow up to 12 always resizes horizontally first; Pillow 13 goes vertical first for some
    # strongly non-proportional resizes. One-axis resizes are the same in every release, so the
    # two-step resize pins the order the references' Pillow used.
    img = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    two_step = _pillow(_pillow(img, (out_w, h), Image.BOX), (out_w, out_h), Image.BOX)
    np.testing.assert_array_equal(box_resize(img, (out_w, out_h)), two_step)


@pytest.mark.parametrize("shape", [(224, 224), (427, 640), (97, 75), (33, 301)])
@pytest.mark.parametrize("c", [0.6, 0.5, 0.4, 0.3, 0.25])
def test_pixelate_resizes_equal_pillow(shape, c):
    # pixelate's proportional reductions (and enlargements back): Pillow in one call.
    h, w = shape
    img = np.random.default_rng(int(c * 100)).integers(0, 256, (h, w, 3), dtype=np.uint8)
    small = (int(w * c), int(h * c))
    np.testing.assert_array_equal(box_resize(img, small), _pillow(img, small, Image.BOX))
    down = box_resize(img, small)
    np.testing.assert_array_equal(nearest_resize(down, (w, h)), _pillow(down, (w, h), Image.NEAREST))
    np.testing.assert_array_equal(box_resize(down, (w, h)), _pillow(down, (w, h), Image.BOX))


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 90), w=st.integers(1, 90), out_w=st.integers(1, 300), out_h=st.integers(1, 300),
       seed=st.integers(0, 2**16))
def test_nearest_resize_is_pillows(h, w, out_w, out_h, seed):
    img = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    np.testing.assert_array_equal(nearest_resize(img, (out_w, out_h)), _pillow(img, (out_w, out_h), Image.NEAREST))


def test_resize_checks_its_input():
    img = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(TypeError, match="uint8 HxWxC"):
        box_resize(img.astype(np.float32), (4, 4))
    with pytest.raises(ValueError, match="at least 1x1"):
        nearest_resize(img, (0, 4))
    out = box_resize(img, (8, 8))
    assert out is not img and np.array_equal(out, img)
