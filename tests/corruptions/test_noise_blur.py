"""Unit and property tests of the noise and blur kernels and their numeric helpers.

The helpers are checked against direct transcriptions of the reference algorithms (slow Python
loops on tiny inputs) and against the library routines the references call, so a change that
breaks faithful mode fails here even without the reference environment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.ndimage import zoom as scipy_zoom

from robustlab.corruptions import PROFILES, corrupt, get_corruption, list_corruptions
from robustlab.corruptions import ops as K
from robustlab.corruptions import exactmath
from robustlab.corruptions.blur import zoom_factors
from robustlab.errors import InputError

NOISE = ["gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise"]
BLUR = ["defocus_blur", "glass_blur", "motion_blur", "zoom_blur", "gaussian_blur"]
MINE = NOISE + BLUR
RANDOM = NOISE + ["glass_blur", "motion_blur"]
DETERMINISTIC = ["defocus_blur", "zoom_blur", "gaussian_blur"]


def textured(h: int, w: int, seed: int = 0) -> np.ndarray:
    """Mid-range colour image with edges and texture (so every corruption visibly changes it)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([60 + 120 * ((x // 5 + y // 7) % 2), 40 + 150 * x / w, 200 - 140 * y / h], axis=-1)
    img = img + rng.normal(0, 12, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def effect(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


# --------------------------------------------------------------------------- registry


def test_registered_with_groups():
    assert set(NOISE) <= set(list_corruptions("noise"))
    assert set(BLUR) <= set(list_corruptions("blur"))
    assert not get_corruption("impulse_noise").seedable
    assert all(get_corruption(n).seedable for n in MINE if n != "impulse_noise")
    assert not get_corruption("speckle_noise").benchmark and not get_corruption("gaussian_blur").benchmark


# --------------------------------------------------------------------------- shapes, dtypes, profiles


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", MINE)
def test_shape_dtype_odd_size(name, profile):
    img = textured(33, 97)
    out = corrupt(img, name, 3, rng=1, profile=profile)
    assert out.dtype == np.uint8 and out.shape == (33, 97, 3)
    assert effect(out, img) > 0.5, "the corruption left the image (almost) unchanged"


@pytest.mark.parametrize("name", MINE)
def test_grey_input(name):
    grey = textured(40, 52)[:, :, 1]
    out = corrupt(grey, name, 2, rng=3)
    assert out.shape == (40, 52, 3) and out.dtype == np.uint8
    same = corrupt(np.repeat(grey[:, :, None], 3, axis=2), name, 2, rng=3)
    np.testing.assert_array_equal(out, same)
    if name in BLUR:  # channel-symmetric: a grey image stays grey
        assert (out[:, :, 0] == out[:, :, 1]).all() and (out[:, :, 1] == out[:, :, 2]).all()
    assert np.array_equal(corrupt(grey[:, :, None], name, 2, rng=3), out)


@pytest.mark.parametrize("bad", [0, 6, 2.0, True, "3"])
def test_bad_severity(bad):
    with pytest.raises(InputError, match="severity"):
        corrupt(textured(32, 32), "glass_blur", bad, rng=0)


def test_too_small_and_bad_dtype():
    with pytest.raises(InputError, match="at least 32"):
        corrupt(textured(31, 64), "zoom_blur", 1, rng=0)
    with pytest.raises(InputError, match="uint8"):
        corrupt(textured(32, 32).astype(np.float32), "gaussian_noise", 1, rng=0)


def test_unknown_name_suggests():
    with pytest.raises(InputError, match="glass_blur"):
        corrupt(textured(32, 32), "glas_blur", 1, rng=0)


# --------------------------------------------------------------------------- randomness


@pytest.mark.parametrize("name", MINE)
def test_same_seed_same_output(name):
    img = textured(48, 64)
    a = corrupt(img, name, 4, rng=np.random.RandomState(7))
    b = corrupt(img, name, 4, rng=7)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", RANDOM)
def test_different_seeds_differ(name):
    img = textured(48, 64)
    a, b = corrupt(img, name, 3, rng=1), corrupt(img, name, 3, rng=2)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_deterministic_kernels_ignore_seed(name):
    img = textured(48, 64)
    np.testing.assert_array_equal(corrupt(img, name, 3, rng=1), corrupt(img, name, 3, rng=2))


def test_random_state_advances_like_the_reference():
    # Two corruptions from one RandomState = two calls of the reference after one np.random.seed.
    img = textured(40, 40)
    rs = np.random.RandomState(5)
    first = corrupt(img, "gaussian_noise", 1, rng=rs)
    second = corrupt(img, "gaussian_noise", 1, rng=rs)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, corrupt(img, "gaussian_noise", 1, rng=5))


# --------------------------------------------------------------------------- severity


def sharpness(img: np.ndarray) -> float:
    """Mean absolute difference between neighbouring pixels (falls as blur grows)."""
    f = img.astype(np.float64)
    return float(np.abs(np.diff(f, axis=0)).mean() + np.abs(np.diff(f, axis=1)).mean())


@pytest.mark.parametrize("name", NOISE)
def test_noise_grows_with_severity(name):
    img = textured(64, 80)
    effects = [effect(corrupt(img, name, s, rng=11), img) for s in range(1, 6)]
    assert all(b > a for a, b in zip(effects, effects[1:])), effects


@pytest.mark.parametrize("name", BLUR)
def test_blur_grows_with_severity(name):
    img = textured(96, 112)
    sharp = [sharpness(corrupt(img, name, s, rng=11)) for s in range(1, 6)]
    assert all(b <= a * 1.02 for a, b in zip(sharp, sharp[1:])), sharp
    assert sharp[-1] < sharp[0] * 0.8 < sharpness(img), sharp


@pytest.mark.parametrize("profile", ["cifar", "tinyimagenet"])
@pytest.mark.parametrize("name", MINE)
def test_small_profiles_milder_at_1_than_5(name, profile):
    img = textured(64, 64)
    mild, strong = (corrupt(img, name, s, rng=2, profile=profile) for s in (1, 5))
    if name in NOISE:
        assert effect(strong, img) > effect(mild, img)
    else:
        assert sharpness(strong) < sharpness(mild)


# --------------------------------------------------------------------------- noise statistics


def test_gaussian_noise_statistics():
    flat = np.full((200, 200, 3), 128, np.uint8)
    out = corrupt(flat, "gaussian_noise", 1, rng=0).astype(float)
    # sigma .08 of 255 = 20.4 grey levels; truncation lowers the mean by ~0.5
    assert abs(out.std() - 0.08 * 255) < 0.5
    assert abs(out.mean() - 127.5) < 0.5


@pytest.mark.parametrize("severity,amount", [(1, 0.03), (5, 0.27)])
def test_impulse_noise_salt_and_pepper_fractions(severity, amount):
    flat = np.full((200, 200, 3), 128, np.uint8)
    out = corrupt(flat, "impulse_noise", severity, rng=0)
    n = out.size
    salt, pepper = np.mean(out == 255), np.mean(out == 0)
    sd = math.sqrt(amount / 2 * (1 - amount / 2) / n)
    assert abs(salt - amount / 2) < 5 * sd and abs(pepper - amount / 2) < 5 * sd
    assert np.isin(out, [0, 128, 255]).all()
    # independent per channel, as scikit-image's s&p
    hit = out != 128
    assert abs(np.mean(hit.all(axis=2)) - amount ** 3) < 0.01


def test_shot_noise_is_poisson():
    flat = np.full((150, 150, 3), 255, np.uint8)  # x = 1: Poisson(60)/60 clipped at 1
    out = corrupt(flat, "shot_noise", 1, rng=0)
    # P(Poisson(60) >= 60) ~ 0.534: those stay at 255
    assert abs(np.mean(out == 255) - 0.534) < 0.02


# --------------------------------------------------------------------------- helpers vs the reference algorithms


def reference_glass_loop(x: np.ndarray, d: int, iterations: int, rs: np.random.RandomState) -> np.ndarray:
    """The reference's per-pixel loop, transcribed (tuple 'swap' of NumPy views)."""
    x = x.copy()
    for _ in range(iterations):
        for h in range(x.shape[0] - d, d, -1):
            for w in range(x.shape[1] - d, d, -1):
                dx, dy = rs.randint(-d, d, size=(2,))
                hp, wp = h + dy, w + dx
                x[h, w], x[hp, wp] = x[hp, wp], x[h, w]
    return x


@pytest.mark.parametrize("d,iterations", [(1, 2), (2, 1), (3, 2), (4, 1)])
def test_glass_shuffle_matches_reference_loop(d, iterations):
    x = textured(35, 41)
    want = reference_glass_loop(x, d, iterations, np.random.RandomState(3))
    got = K.glass_shuffle(x.copy(), d, iterations, np.random.RandomState(3), chunk_values=97)
    np.testing.assert_array_equal(got, want)


def test_glass_shuffle_is_a_copy_not_a_swap():
    # the quirk: the multiset of pixels changes (duplicates appear), as in the reference
    x = np.repeat((np.arange(40 * 40) % 251).reshape(40, 40, 1), 3, axis=2).astype(np.uint8)
    y = K.glass_shuffle(x.copy(), 2, 1, np.random.RandomState(0))
    assert not np.array_equal(np.sort(x.reshape(-1, 3), axis=0), np.sort(y.reshape(-1, 3), axis=0))


def reference_shift(image, dx, dy):
    """imagecorruptions' roll-and-replicate shift, transcribed."""
    if dx < 0:
        shifted = np.roll(image, shift=image.shape[1] + dx, axis=1)
        shifted[:, dx:] = shifted[:, dx - 1:dx]
    elif dx > 0:
        shifted = np.roll(image, shift=dx, axis=1)
        shifted[:, :dx] = shifted[:, dx:dx + 1]
    else:
        shifted = image
    if dy < 0:
        shifted = np.roll(shifted, shift=image.shape[0] + dy, axis=0)
        shifted[dy:, :] = shifted[dy - 1:dy, :]
    elif dy > 0:
        shifted = np.roll(shifted, shift=dy, axis=0)
        shifted[:dy, :] = shifted[dy:dy + 1, :]
    return shifted


def reference_motion(x, radius, sigma, angle):
    width = 2 * radius + 1
    # the reference's formula; exp correctly rounded, as the reference's C library gives it (NumPy's
    # own exp is 1 ulp off for some taps on AVX-512 CPUs: robustlab.corruptions.exactmath)
    k = exactmath.exp(-np.arange(width) ** 2 / (2 * sigma ** 2)) / (np.sqrt(2 * np.pi) * sigma)
    k = k / k.sum()
    point = (width * np.sin(np.deg2rad(angle)), width * np.cos(np.deg2rad(angle)))
    hyp = math.hypot(*point)
    blurred = np.zeros_like(x, dtype=np.float32)
    for i in range(width):
        dy = -math.ceil(((i * point[0]) / hyp) - 0.5)
        dx = -math.ceil(((i * point[1]) / hyp) - 0.5)
        if abs(dy) >= x.shape[0] or abs(dx) >= x.shape[1]:
            break
        blurred = blurred + k[i] * reference_shift(x, dx, dy)
    return blurred


@pytest.mark.parametrize("angle", [-44.9, -13.0, 0.0, 27.5, 44.99])
@pytest.mark.parametrize("radius,sigma", [(10, 3), (20, 15), (6, 1.5)])
def test_motion_blur_matches_reference_shifts(radius, sigma, angle):
    x = textured(34, 45)
    np.testing.assert_array_equal(K.motion_blur(x, radius, sigma, angle), reference_motion(x, radius, sigma, angle))
    layer = np.random.default_rng(0).random((33, 40))  # float 2-D layer, as snow uses it
    np.testing.assert_array_equal(K.motion_blur(layer, radius, sigma, angle),
                                  reference_motion(layer, radius, sigma, angle))


def test_motion_kernel_stops_at_image_border():
    w, dy, dx = K.motion_blur_kernel(20, 15, 45.0, (16, 48))
    assert 10 < len(w) < 41 and np.all(np.abs(dy) < 16) and np.all(np.abs(dx) < 48)
    assert len(K.motion_blur_kernel(20, 15, 45.0, (32, 32))[0]) == 41


def scipy_clipped_zoom(img, z, centred):
    h, w = img.shape[:2]
    ch0, ch1 = int(np.ceil(h / float(z))), int(np.ceil(w / float(z)))
    t0, t1 = (h - ch0) // 2, (w - ch1) // 2
    out = scipy_zoom(img[t0:t0 + ch0, t1:t1 + ch1], (z, z, 1), order=1)
    if centred:
        a, b = (out.shape[0] - h) // 2, (out.shape[1] - w) // 2
        return out[a:a + h, b:b + w]
    return out[:h, :w]


@settings(max_examples=40, deadline=None)
@given(h=st.integers(32, 90), w=st.integers(32, 90), z=st.floats(1.0, 4.6),
       f64=st.booleans(), centred=st.booleans())
def test_clipped_zoom_bit_identical_to_scipy(h, w, z, f64, centred):
    img = np.random.default_rng(h * 1000 + w).random((h, w, 3)).astype(np.float64 if f64 else np.float32)
    np.testing.assert_array_equal(K.clipped_zoom(img, z, centred=centred), scipy_clipped_zoom(img, z, centred))


def test_clipped_zoom_full_and_flat():
    img = np.random.default_rng(0).random((45, 37))
    full = K.clipped_zoom(img, 2.5, full=True)
    t0, t1 = (45 - 18) // 2, (37 - 15) // 2
    np.testing.assert_array_equal(full, scipy_zoom(img[t0:t0 + 18, t1:t1 + 15], 2.5, order=1))


def test_zoom_sum_equals_float32_loop():
    x = (textured(41, 53) / 255.0).astype(np.float32)
    factors = zoom_factors("imagecorruptions", 5)
    want = np.zeros_like(x)
    for f in factors:
        want += scipy_clipped_zoom(x, f, False)
    np.testing.assert_array_equal(K.zoom_sum(x, factors), want)


def test_gaussian_smooth_matches_skimage():
    from skimage.filters import gaussian

    x = textured(37, 50) / 255.0
    for sigma in (0.4, 1, 3):
        np.testing.assert_allclose(K.gaussian_smooth(x, sigma), gaussian(x, sigma=sigma, channel_axis=-1),
                                   rtol=0, atol=1e-15)


def test_disk_kernel():
    for radius, alias in [(3, 0.1), (10, 0.5), (0.3, 0.4)]:
        k = K.disk_kernel(radius, alias)
        assert k.dtype == np.float32 and k.shape[0] == k.shape[1] == 2 * max(8, int(radius)) + 1
        # ~1: OpenCV's reflect-101 border adds a little mass where the disk touches the grid edge
        assert abs(float(k.sum()) - 1) < 0.02
        assert np.allclose(k, k.T) and np.allclose(k, k[::-1, ::-1])


def test_severity_param_falls_back_for_imagenet_c():
    table = {"imagecorruptions": (1, 2, 3, 4, 5), "cifar": (6, 7, 8, 9, 10)}
    assert K.severity_param(table, "imagenet-c", 2) == 2
    assert K.severity_param(table, "cifar", 5) == 10
    with pytest.raises(KeyError):
        K.severity_param(table, "tinyimagenet", 1)


# --------------------------------------------------------------------------- profile semantics


def test_imagenet_c_motion_blur_uses_the_same_line_kernel():
    # Same table at 224 px and the same ImageMagick-equivalent line blur: equal outputs.
    img = textured(48, 48)
    np.testing.assert_array_equal(corrupt(img, "motion_blur", 2, rng=4),
                                  corrupt(img, "motion_blur", 2, rng=4, profile="imagenet-c"))
    assert not np.array_equal(corrupt(img, "motion_blur", 2, rng=4),
                              corrupt(img, "motion_blur", 2, rng=4, profile="cifar"))


def test_centred_zoom_differs_only_with_two_spare_pixels():
    # The zoomed crop is round(ceil(n / f) * f) <= n + 1 px for f <= 1.5 (zoom blur): top-left
    # and centred trims coincide. Snow's factors (2..4.5) leave more and the trims differ.
    x = (textured(91, 91) / 255.0).astype(np.float32)
    extras = []
    for f in (1.07, 1.13, 1.29, 2.5, 4.5):
        a = K.clipped_zoom(x, f)
        b = K.clipped_zoom(x, f, centred=True)
        assert a.shape == b.shape == x.shape
        extras.append(K.clipped_zoom(x, f, full=True).shape[0] - 91)
        assert np.array_equal(a, b) == (extras[-1] < 2), (f, extras)
    assert max(extras[:3]) <= 1 and max(extras) >= 2, extras


@settings(max_examples=25, deadline=None)
@given(h=st.integers(32, 72), w=st.integers(32, 72), severity=st.integers(1, 5),
       name=st.sampled_from(MINE), profile=st.sampled_from(PROFILES), seed=st.integers(0, 2**32 - 1))
def test_property_any_size(h, w, severity, name, profile, seed):
    img = textured(h, w, seed=h + w)
    out = corrupt(img, name, severity, rng=seed, profile=profile)
    assert out.shape == (h, w, 3) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, corrupt(img, name, severity, rng=seed, profile=profile))
