"""Weather (snow, frost, fog, spatter) and digital (brightness, contrast, elastic_transform,
pixelate, jpeg_compression, saturate) corruption kernels.

Golden fixture ``tests/fixtures/corruptions/weather_digital_golden.npz`` (made once in the
pinned reference environment of ``perf/refenv.py``, seed 3):

- ``imagecorruptions/<name>/<severity>``: imagecorruptions 1.1.2 on a 33x41 colour image,
  severities 1 and 3 (``golden.npz`` covers 2 and 5);
- ``cifar/<name>/<severity>``: Hendrycks' ``make_cifar_c.py`` functions on a 32x32 image,
  severities 1 and 4 (snow through ImageMagick 6.9.11 Q16 via Wand, as Hendrycks does);
- ``imagenet-c/<name>/3``: ``make_imagenet_c.py`` semantics on a 40x40 image for the kernels
  whose ImageNet-C code path differs (frost's raw-texture crop, fog's 256 px plasma map,
  elastic's random affine, BOX pixelate).

The Hendrycks outputs come from a test-only transcription of their functions run in that
environment (OpenCV 4.11, SciPy 1.12, scikit-image 0.20, Wand + ImageMagick 6.9.11); it is
not shipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.corruptions import PROFILES, corrupt, list_corruptions
from robustlab.corruptions import digital, weather
from robustlab.corruptions._plasma import next_power_of_two, plasma_fractal
from robustlab.errors import InputError

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "corruptions" / "weather_digital_golden.npz"
NAMES = ["snow", "frost", "fog", "spatter", "brightness", "contrast", "elastic_transform",
         "pixelate", "jpeg_compression", "saturate"]
RANDOM = ["snow", "frost", "fog", "spatter", "elastic_transform"]


def _load_golden():
    with np.load(GOLDEN) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    inputs = {k.split("/", 1)[1]: arrays.pop(k) for k in list(arrays) if k.startswith("input/")}
    return meta, inputs, arrays


META, INPUTS, OUTPUTS = _load_golden()


def _natural(h: int, w: int, seed: int = 0) -> np.ndarray:
    """A smooth colour image with edges and some texture (uint8 HxWx3)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([128 + 100 * np.sin(x / 9.0), 128 + 100 * np.cos(y / 7.0),
                    ((x // 11 + y // 13) % 2) * 180 + 30], axis=-1)
    return np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)


def _mean_change(name: str, image: np.ndarray, severity: int, seed: int = 0, profile: str = "imagecorruptions") -> float:
    out = corrupt(image, name, severity, rng=np.random.RandomState(seed), profile=profile)
    return float(np.abs(out.astype(np.int16) - image.astype(np.int16)).mean())


# --------------------------------------------------------------------------- registry


def test_registered_in_their_groups():
    assert list_corruptions("weather") == ["snow", "frost", "fog", "spatter"]
    assert list_corruptions("digital") == ["brightness", "contrast", "elastic_transform", "pixelate",
                                           "jpeg_compression", "saturate"]
    held_out = list_corruptions("holdout")
    assert "spatter" in held_out and "saturate" in held_out
    assert not {"snow", "frost", "fog", "brightness", "contrast"} & set(held_out)


# --------------------------------------------------------------------------- golden parity


@pytest.mark.parametrize("case", sorted(OUTPUTS))
def test_matches_reference_golden(case):
    profile, name, severity = case.split("/")
    want = OUTPUTS[case]
    got = corrupt(INPUTS[profile], name, int(severity), rng=np.random.RandomState(META["seed"]), profile=profile)
    assert got.shape == want.shape and got.dtype == np.uint8
    diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
    identical = float(np.mean(diff == 0))
    assert identical >= 0.999 and diff.max() <= 1, f"{case}: {identical:.4%} identical, max diff {diff.max()}"


def test_golden_fixture_is_small_and_covers_every_kernel():
    assert GOLDEN.stat().st_size < 200_000
    for profile in ("imagecorruptions", "cifar"):
        assert {k.split("/")[1] for k in OUTPUTS if k.startswith(profile + "/")} == set(NAMES)


# --------------------------------------------------------------------------- shapes, dtypes, inputs


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", NAMES)
def test_shape_and_dtype_for_every_profile_on_odd_sizes(name, profile):
    image = _natural(33, 97)
    for severity in (1, 5):
        out = corrupt(image, name, severity, rng=1, profile=profile)
        assert out.shape == (33, 97, 3) and out.dtype == np.uint8


@pytest.mark.parametrize("name", NAMES)
def test_grayscale_inputs_give_three_equal_channels_of_the_stacked_image(name):
    grey = _natural(40, 52)[..., 0]
    from_2d = corrupt(grey, name, 3, rng=5)
    from_hw1 = corrupt(grey[..., None], name, 3, rng=5)
    from_rgb = corrupt(np.repeat(grey[..., None], 3, axis=2), name, 3, rng=5)
    assert from_2d.shape == (40, 52, 3)
    np.testing.assert_array_equal(from_2d, from_hw1)
    np.testing.assert_array_equal(from_2d, from_rgb)


@pytest.mark.parametrize("name", NAMES)
def test_large_non_square_image(name):
    image = _natural(427, 640)
    out = corrupt(image, name, 4, rng=2)
    assert out.shape == image.shape and out.dtype == np.uint8
    assert not np.array_equal(out, image)


@pytest.mark.parametrize("shape", [(700, 1000), (1200, 300), (32, 1100)])
def test_frost_covers_images_larger_than_every_texture(shape):
    image = _natural(*shape)
    for seed in range(5):  # randint(5) picks each of the five used textures over these seeds
        out = corrupt(image, "frost", 5, rng=seed)
        assert out.shape == image.shape
    # the texture really covers the whole image: no untouched border strips
    changed = np.any(out != image, axis=-1)
    assert changed[:, -1].mean() > 0.9 and changed[-1, :].mean() > 0.9


def test_rejects_bad_inputs_before_the_kernel():
    with pytest.raises(InputError):
        corrupt(np.zeros((20, 40, 3), np.uint8), "fog", 1)
    with pytest.raises(InputError):
        corrupt(np.zeros((40, 40, 3), np.float32), "frost", 1)
    with pytest.raises(InputError):
        corrupt(np.zeros((40, 40, 3), np.uint8), "snow", 6)
    with pytest.raises(InputError, match="frost"):
        corrupt(np.zeros((40, 40, 3), np.uint8), "frostt", 1)


# --------------------------------------------------------------------------- randomness


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_output_in_any_order(name):
    image = _natural(48, 64)
    first = corrupt(image, name, 3, rng=11)
    corrupt(image, "fog", 2, rng=12)  # unrelated work in between changes nothing
    np.testing.assert_array_equal(first, corrupt(image, name, 3, rng=11))
    np.testing.assert_array_equal(first, corrupt(image, name, 3, rng=np.random.RandomState(11)))


@pytest.mark.parametrize("name", RANDOM)
def test_different_seeds_differ(name):
    image = _natural(64, 80)
    outs = [corrupt(image, name, 3, rng=seed) for seed in range(3)]
    assert not np.array_equal(outs[0], outs[1]) or not np.array_equal(outs[1], outs[2])


@pytest.mark.parametrize("name", ["brightness", "contrast", "pixelate", "jpeg_compression", "saturate"])
def test_deterministic_corruptions_ignore_the_seed(name):
    image = _natural(48, 64)
    np.testing.assert_array_equal(corrupt(image, name, 2, rng=0), corrupt(image, name, 2, rng=99))


def test_global_numpy_random_state_is_untouched():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    for name in NAMES:
        corrupt(_natural(40, 40), name, 3, rng=4)
    assert np.array_equal(np.random.get_state()[1], before)


# --------------------------------------------------------------------------- severity


@pytest.mark.parametrize("name", ["brightness", "contrast", "fog", "frost", "pixelate", "jpeg_compression",
                                  "elastic_transform", "snow"])
def test_effect_grows_with_severity(name):
    image = _natural(96, 128)
    # average over seeds: a single draw of a random corruption need not be monotone
    change = [np.mean([_mean_change(name, image, s, seed) for seed in range(3)]) for s in range(1, 6)]
    assert change[0] > 0
    assert change[4] > change[0]
    if name in ("brightness", "contrast", "pixelate"):
        assert all(b >= a for a, b in zip(change, change[1:])), change


def test_saturate_desaturates_then_oversaturates():
    image = _natural(64, 64)

    def saturation(img):
        mx, mn = img.max(-1).astype(float), img.min(-1).astype(float)
        return float(np.mean((mx - mn) / np.maximum(mx, 1)))

    levels = [saturation(corrupt(image, "saturate", s)) for s in range(1, 6)]
    base = saturation(image)
    assert levels[1] < levels[0] < base < levels[2] < levels[3] <= levels[4]


def test_spatter_switches_from_water_to_mud():
    image = np.full((80, 80, 3), 200, np.uint8)
    water = corrupt(image, "spatter", 1, rng=0).astype(int)
    mud = corrupt(image, "spatter", 5, rng=0).astype(int)
    assert (water >= 200).all()  # water drops only brighten (pale turquoise is added)
    assert (mud <= 200).any() and mud.min() < 100  # mud darkens towards brown


# --------------------------------------------------------------------------- profiles


def test_profiles_change_the_result_where_the_references_differ():
    image = _natural(224, 224)
    ic = corrupt(image, "elastic_transform", 3, rng=0, profile="imagecorruptions")
    inet = corrupt(image, "elastic_transform", 3, rng=0, profile="imagenet-c")
    assert not np.array_equal(ic, inet)
    # PIL's BOX upsampling equals NEAREST except where a sample falls exactly between two
    # source pixels: no such ties at 224 px, some at other sizes
    for s in range(1, 6):
        np.testing.assert_array_equal(corrupt(image, "pixelate", s), corrupt(image, "pixelate", s, profile="imagenet-c"))
    odd = _natural(33, 97)
    assert not np.array_equal(corrupt(odd, "pixelate", 2), corrupt(odd, "pixelate", 2, profile="imagenet-c"))
    # fog: the two agree at 224 px (both draw a 256 px plasma map)
    np.testing.assert_array_equal(corrupt(image, "fog", 3, rng=0), corrupt(image, "fog", 3, rng=0, profile="imagenet-c"))
    # brightness tables: CIFAR's is milder
    assert _mean_change("brightness", image, 5, profile="cifar") < _mean_change("brightness", image, 5)


def test_cifar_elastic_severity_one_is_an_affine_only():
    image = _natural(32, 32)
    out = corrupt(image, "elastic_transform", 1, rng=0, profile="cifar")
    assert out.shape == (32, 32, 3) and not np.array_equal(out, image)


# --------------------------------------------------------------------------- building blocks


def test_frost_textures_ship_with_the_package():
    shapes = [weather.frost_texture(i).shape for i in range(6)]
    assert shapes == [(600, 900, 3), (315, 560, 3), (315, 560, 3), (350, 527, 3), (495, 660, 3), (323, 485, 3)]
    assert weather.frost_texture(0) is weather.frost_texture(0)  # decoded once per process
    assert not weather.frost_texture(0).flags.writeable


def test_frost_never_uses_the_sixth_texture(monkeypatch):
    used = []
    original = weather.frost_layer

    def spy(index, shape, profile):
        used.append(index)
        return original(index, shape, profile)

    monkeypatch.setattr(weather, "frost_layer", spy)
    for seed in range(60):
        corrupt(_natural(40, 40), "frost", 1, rng=seed)
    assert set(used) == {0, 1, 2, 3, 4}


def test_fit_scale_matches_imagecorruptions_rule():
    assert weather.fit_scale((600, 900, 3), (224, 224)) == pytest.approx(1.1)  # fits: still 1.1
    assert weather.fit_scale((315, 560, 3), (427, 640)) == pytest.approx(max(427 / 315, 640 / 560) * 1.1)
    assert weather.fit_scale((315, 560, 3), (400, 100)) == pytest.approx(400 / 315 * 1.1)
    assert weather.fit_scale((315, 560, 3), (100, 700)) == pytest.approx(700 / 560 * 1.1)


@pytest.mark.parametrize("mapsize", [2, 8, 64, 256])
def test_plasma_is_scaled_and_uses_all_draws(mapsize):
    rs = np.random.RandomState(0)
    grid = plasma_fractal(mapsize, 2.0, rs)
    assert grid.shape == (mapsize, mapsize) and grid.dtype == np.float64
    assert grid.min() == 0.0 and grid.max() == 1.0
    reference = np.random.RandomState(0)
    reference.uniform(size=mapsize * mapsize - 1)
    assert rs.uniform() == reference.uniform()  # exactly mapsize**2 - 1 draws were taken


def test_plasma_crop_equals_crop_of_full_map():
    full = plasma_fractal(64, 1.7, np.random.RandomState(3))
    crop = plasma_fractal(64, 1.7, np.random.RandomState(3), shape=(40, 23))
    np.testing.assert_array_equal(full[:40, :23], crop)


def test_plasma_rejects_non_power_of_two():
    with pytest.raises(InputError, match="power of two"):
        plasma_fractal(48, 2.0, np.random.RandomState(0))
    assert [next_power_of_two(n) for n in (1, 2, 3, 224, 256, 257, 640)] == [1, 2, 4, 256, 256, 512, 1024]


def _skimage_hsv_adjust(image, mode, a, b=0.0):
    from skimage.color import hsv2rgb, rgb2hsv

    hsv = rgb2hsv(image / 255.0)
    if mode == digital.SHIFT_VALUE:
        hsv[..., 2] = np.clip(hsv[..., 2] + a, 0, 1)
    else:
        hsv[..., 1] = np.clip(hsv[..., 1] * a + b, 0, 1)
    return (np.clip(hsv2rgb(hsv), 0, 1) * 255).astype(np.uint8)


def _rgb_cube(step: int) -> np.ndarray:
    levels = np.arange(0, 256, step, dtype=np.uint8)
    r, g, b = np.meshgrid(levels, levels, levels, indexing="ij")
    return np.stack([r, g, b], -1).reshape(len(levels), -1, 3)


@pytest.mark.parametrize("mode,a,b", [(0, 0.1, 0), (0, 0.5, 0), (1, 0.3, 0), (1, 0.1, 0), (1, 5, 0.1),
                                      (1, 20, 0.2), (1, 30, 0.2)])
def test_hsv_kernel_equals_scikit_image_on_a_coarse_rgb_cube(mode, a, b):
    cube = _rgb_cube(5)  # 52**3 colours, including ties between channels and greys
    np.testing.assert_array_equal(digital.hsv_adjust(cube, mode, a, b), _skimage_hsv_adjust(cube, mode, a, b))


@pytest.mark.slow
def test_hsv_kernel_equals_scikit_image_on_the_whole_rgb_cube():
    cube = _rgb_cube(1).reshape(256, 256, 256, 3)
    for block in range(0, 256, 32):  # 2M colours at a time keeps memory modest
        part = cube[block:block + 32].reshape(32 * 256, 256, 3)
        for mode, a, b in [(0, 0.3, 0), (1, 2, 0), (1, 20, 0.2)]:
            np.testing.assert_array_equal(digital.hsv_adjust(part, mode, a, b), _skimage_hsv_adjust(part, mode, a, b))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
def test_contrast_table_equals_the_per_pixel_formula(severity, level, seed):
    rng = np.random.default_rng(seed)
    image = np.clip(rng.normal(255 * level, 60, (33, 35, 3)), 0, 255).astype(np.uint8)
    c = digital.CONTRAST["imagecorruptions"][severity - 1]
    x = image / 255.0
    means = np.mean(x, axis=(0, 1), keepdims=True)
    want = (np.clip((x - means) * c + means, 0, 1) * 255).astype(np.uint8)
    np.testing.assert_array_equal(corrupt(image, "contrast", severity), want)


@pytest.mark.parametrize("value", [0, 1, 77, 128, 254, 255])
def test_constant_images(value):
    image = np.full((40, 40, 3), value, np.uint8)
    # the mean is a fixed point, up to the reference's truncation (1/255*255 -> 0.999.. -> 0)
    assert np.abs(corrupt(image, "contrast", 5).astype(int) - value).max() <= 1
    for name in NAMES:
        assert corrupt(image, name, 3, rng=0).dtype == np.uint8


def test_affine_warp_matches_opencv4_arithmetic():
    # Fixed-point reference values: a pure half-pixel shift lands on the 1/32 grid, so the
    # result is the exact average of neighbours; mirrored borders (REFLECT_101).
    image = np.arange(6 * 5 * 1, dtype=np.float32).reshape(6, 5, 1)
    shift = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]])
    out = digital.warp_affine_bilinear(image, shift)
    # output column c samples source column c - 0.5: the mean of columns c-1 and c
    np.testing.assert_array_equal(out[:, 1:, 0], (image[:, :-1, 0] + image[:, 1:, 0]) / 2)
    np.testing.assert_array_equal(out[:, 0, 0], (image[:, 1, 0] + image[:, 0, 0]) / 2)  # column -1 -> 1
    identity = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_array_equal(digital.warp_affine_bilinear(image, identity), image)


def test_snow_blur_taps_follow_the_angle():
    from robustlab.corruptions.ops import motion_blur_kernel

    weights, dys, dxs = motion_blur_kernel(10, 4, -90.0, (100, 100))
    assert len(weights) == 21 and np.isclose(weights.sum(), 1) and np.all(np.diff(weights) < 0)
    assert np.all(dxs == 0) and list(dys[:3]) == [0, 1, 2]  # straight down the rows


@pytest.mark.parametrize("profile", ["imagecorruptions", "cifar", "tinyimagenet"])
def test_jpeg_equals_pil_encode_and_decode(profile):
    # the references encode and decode with PIL; robustlab uses OpenCV's libjpeg-turbo, which
    # must give the same pixels (guards against an OpenCV or Pillow built with another libjpeg)
    from io import BytesIO

    from PIL import Image

    for severity, seed in zip(range(1, 6), range(5)):
        image = _natural(45 + seed, 67, seed=seed)
        buffer = BytesIO()
        Image.fromarray(image).save(buffer, "JPEG", quality=digital.JPEG_QUALITY[profile][severity - 1])
        buffer.seek(0)
        got = corrupt(image, "jpeg_compression", severity, profile=profile)
        np.testing.assert_array_equal(got, np.asarray(Image.open(buffer)))


@pytest.mark.parametrize("spread", [0.5, 4.0, 300.0])
def test_displacement_sampler_equals_scipy_map_coordinates(spread):
    from scipy.ndimage import map_coordinates

    rng = np.random.default_rng(int(spread * 10))
    h, w = 37, 53
    image = rng.random((h, w, 3), dtype=np.float32)
    dy = rng.uniform(-spread, spread, (h, w)).astype(np.float32)
    dx = rng.uniform(-spread, spread, (h, w)).astype(np.float32)
    coords = np.stack([np.arange(h)[:, None] + dy.astype(np.float64),
                       np.arange(w)[None, :] + dx.astype(np.float64)])
    want = np.stack([map_coordinates(image[..., k], coords, order=1, mode="reflect") for k in range(3)], -1)
    np.testing.assert_array_equal(digital.warp_by_field(image, dy, dx), want)
