"""The torch backend's building blocks against the numpy path's and the libraries the
references call (scipy, OpenCV, Pillow), on small inputs (CPU only)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from scipy.ndimage import gaussian_filter as scipy_gaussian

from robustlab.corruptions.ops import disk_kernel
from robustlab.corruptions.ops import glass_shuffle as numpy_glass_shuffle
from robustlab.corruptions.ops import motion_blur as numpy_line_blur
from robustlab.corruptions._plasma import plasma_fractal as numpy_plasma
from robustlab.corruptions.torch.blur import glass_shuffle
from robustlab.corruptions.torch.digital import box_weights, hsv_adjust, nearest_index
from robustlab.corruptions.torch.ops import (
    bilinear_sample,
    border_index,
    clipped_zoom,
    filter2d,
    gaussian_blur,
    line_blur,
    to_levels,
)
from robustlab.corruptions.torch.water import canny, distance_transform, equalize_hist, water_mask
from robustlab.corruptions.torch.weather import plasma_fractal


def planes(a: np.ndarray) -> torch.Tensor:
    """HxWxC numpy -> (1, C, H, W) float64 tensor."""
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)).permute(2, 0, 1)[None]


def back(t: torch.Tensor) -> np.ndarray:
    return t[0].permute(1, 2, 0).numpy()


# --------------------------------------------------------------------------- glass blur

@settings(max_examples=25, deadline=None)
@given(h=st.integers(10, 40), w=st.integers(10, 40), d=st.integers(1, 4), iterations=st.integers(1, 3),
       seed=st.integers(0, 2**31 - 1))
def test_parallel_glass_shuffle_equals_the_sequential_loop(h, w, d, iterations, seed):
    """Pointer jumping gives the reference's sequential copies exactly, for the same offsets."""
    image = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    want = numpy_glass_shuffle(image.copy(), d, iterations, np.random.RandomState(seed))
    rs = np.random.RandomState(seed)
    x = planes(image)
    if h > 2 * d and w > 2 * d:
        for _ in range(iterations):
            x = glass_shuffle(x, torch.from_numpy(rs.randint(-d, d, size=(h - 2 * d, w - 2 * d, 2)))[None], d)
    np.testing.assert_array_equal(back(x).astype(np.uint8), want)


def test_glass_shuffle_is_not_a_one_pass_parallel_copy():
    """The chains matter: copying from the unshuffled image in one pass differs from the loop."""
    rs = np.random.RandomState(3)
    image = np.random.default_rng(3).integers(0, 256, (30, 30, 3), dtype=np.uint8)
    offsets = rs.randint(-2, 2, size=(26, 26, 2))
    exact = back(glass_shuffle(planes(image), torch.from_numpy(offsets)[None], 2)).astype(np.uint8)
    naive = image.copy()
    for a in range(26):
        for b in range(26):
            hh, ww = 28 - a, 28 - b
            naive[hh, ww] = image[hh + offsets[a, b, 1], ww + offsets[a, b, 0]]
    assert (exact != naive).any(axis=2).mean() > 0.05


# --------------------------------------------------------------------------- filters and sampling

@pytest.mark.parametrize("mode", ["nearest", "reflect"])
@pytest.mark.parametrize("sigma", [0.7, 2.0, (1.5, 3.0), 6.0])
def test_gaussian_blur_matches_scipy(mode, sigma):
    image = np.random.default_rng(1).random((33, 47, 3))
    sig = (sigma, sigma, 0) if np.ndim(sigma) == 0 else (*sigma, 0)
    want = scipy_gaussian(image, sig, mode=mode, truncate=4.0)
    got = back(gaussian_blur(planes(image), sigma, mode=mode))
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("size", [(40, 52), (140, 150)])  # separable terms / per-image FFT
@pytest.mark.parametrize("radius, alias", [(3, 0.1), (10, 0.5)])
def test_filter2d_matches_opencv(size, radius, alias):
    image = np.random.default_rng(2).random((*size, 3))
    kernel = disk_kernel(radius, alias)
    want = cv2.filter2D(image, -1, kernel)
    got = back(filter2d(planes(image), kernel, "reflect101"))
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_border_rules_match_numpy_pad():
    line = np.arange(5)
    for mode, numpy_mode in (("nearest", "edge"), ("reflect", "symmetric"), ("reflect101", "reflect")):
        np.testing.assert_array_equal(line[border_index(5, 3, 4, mode)], np.pad(line, (3, 4), mode=numpy_mode))


@pytest.mark.parametrize("method", ["views", "fft"])
def test_line_blur_matches_the_numpy_motion_blur(method):
    image = np.random.default_rng(4).random((37, 45, 3))
    angles = [-40.0, 12.5, 44.0]
    batch = torch.cat([planes(image)] * 3)
    got = line_blur(batch, 15, 8, angles, method=method)
    for i, angle in enumerate(angles):
        np.testing.assert_allclose(back(got[i:i + 1]), numpy_line_blur(image, 15, 8, angle), atol=1e-12)
    window = line_blur(batch, 12, 4, angles, (30, 40), method=method)
    np.testing.assert_allclose(back(window[1:2]), numpy_line_blur(image, 12, 4, 12.5, (30, 40)), atol=1e-12)


@pytest.mark.parametrize("shape, factor", [((41, 37), 1.0), ((41, 37), 1.06), ((41, 37), 1.31), ((41, 37), 2.5),
                                           ((40, 136), 1.24 + 2e-16)])  # scipy zeroes the last column here
@pytest.mark.parametrize("centred", [False, True])
def test_clipped_zoom_matches_the_numpy_path(shape, factor, centred):
    from robustlab.corruptions.ops import clipped_zoom as numpy_zoom

    image = np.random.default_rng(5).random((*shape, 3))
    got = back(clipped_zoom(planes(image), factor, centred=centred))
    np.testing.assert_allclose(got, numpy_zoom(image, factor, centred=centred), atol=1e-9)
    full = back(clipped_zoom(planes(image), factor, full=True))
    np.testing.assert_allclose(full, numpy_zoom(image, factor, full=True), atol=1e-9)


def test_bilinear_sample_matches_scipy_map_coordinates_with_mirrored_borders():
    from scipy.ndimage import map_coordinates

    rng = np.random.default_rng(6)
    image = rng.random((20, 30))
    rows = rng.uniform(-25, 45, (20, 30))
    cols = rng.uniform(-35, 65, (20, 30))
    want = map_coordinates(image, (rows, cols), order=1, mode="reflect")
    got = bilinear_sample(torch.from_numpy(image)[None, None], torch.from_numpy(rows)[None],
                          torch.from_numpy(cols)[None], "reflect")[0, 0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-9)


# --------------------------------------------------------------------------- digital

def test_hsv_adjust_matches_scikit_image_over_a_colour_grid():
    from skimage.color import hsv2rgb, rgb2hsv

    levels = np.arange(0, 256, 15, dtype=np.float64) / 255
    rgb = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1).reshape(-1, 1, 3)
    for shift, factor, offset in ((0.3, 1.0, 0.0), (0.0, 5.0, 0.1), (0.0, 0.1, 0.0)):
        hsv = rgb2hsv(rgb)
        hsv[..., 2] = np.clip(hsv[..., 2] + shift, 0, 1)
        hsv[..., 1] = np.clip(hsv[..., 1] * factor + offset, 0, 1)
        want = hsv2rgb(hsv)
        got = back(hsv_adjust(planes(rgb), shift, factor, offset))
        np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("n_in, n_out", [(224, 56), (44, 26), (26, 44), (427, 170), (33, 33), (135, 451), (192, 640)])
def test_box_weights_and_nearest_index_follow_pillow(n_in, n_out):
    line = np.random.default_rng(7).integers(0, 256, (1, n_in), dtype=np.uint8)
    want = np.asarray(Image.fromarray(line).resize((n_out, 1), Image.BOX), dtype=np.float64)[0]
    got = box_weights(n_in, n_out) @ line[0].astype(np.float64)
    assert np.abs(got - want).max() <= 0.5 + 1e-9  # Pillow rounds to 8 bits
    want_nearest = np.asarray(Image.fromarray(line).resize((n_out, 1), Image.NEAREST))[0]
    index = nearest_index(n_in, n_out)
    np.testing.assert_array_equal(np.where(index >= 0, line[0][index], 0), want_nearest)


# --------------------------------------------------------------------------- weather

class ReplayUniforms:
    """Stands in for a RandomState: hands numpy's plasma_fractal the torch draws, in order."""

    def __init__(self, unit: np.ndarray) -> None:
        self.unit, self.at = unit, 0

    def uniform(self, low, high, shape):
        n = int(np.prod(shape))
        u = self.unit[self.at:self.at + n].reshape(shape)
        self.at += n
        return low + (high - low) * (u + 1) / 2


def test_plasma_fractal_is_the_numpy_definition():
    generators = [torch.Generator().manual_seed(s) for s in (1, 2)]
    got = plasma_fractal(generators, 32, 1.7, device=torch.device("cpu"), dtype=torch.float64)
    for i, seed in enumerate((1, 2)):
        total = 3 * sum(4 ** k for k in range(5))
        unit = (-1 + 2 * torch.rand(total, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)).numpy()
        want = numpy_plasma(32, 1.7, ReplayUniforms(unit))
        np.testing.assert_allclose(got[i].numpy(), want, atol=1e-9)


RIDGE = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]])


def opencv_water_mask(liquid: np.ndarray, intensity: float):
    """The reference's chain, with OpenCV (the definition the torch code re-expresses)."""
    liquid8 = (liquid * 255).astype(np.uint8)
    edges = cv2.Canny(liquid8, 50, 150)
    dist = cv2.distanceTransform(255 - edges, cv2.DIST_L2, 5)
    _, dist = cv2.threshold(dist, 20, 20, cv2.THRESH_TRUNC)
    dist = cv2.blur(dist, (3, 3)).astype(np.uint8)
    dist = cv2.equalizeHist(dist)
    dist = cv2.filter2D(dist, cv2.CV_8U, RIDGE)
    dist = cv2.blur(dist, (3, 3)).astype(np.float32)
    mask = liquid8 * dist
    return mask / np.max(mask) * np.float32(intensity), edges


@pytest.mark.parametrize("sigma, threshold", [(4, 0.69), (2, 0.68)])
def test_water_mask_follows_opencvs_chain(sigma, threshold):
    liquid = np.random.default_rng(sigma).normal(0.65, 0.3, (70, 90))
    liquid = scipy_gaussian(liquid, sigma, mode="nearest", truncate=4.0)
    liquid[liquid < threshold] = 0
    want, edges = opencv_water_mask(liquid, 0.6)
    x = torch.from_numpy(liquid).float()[None, None]
    found = canny(to_levels(x), 50, 150)[0, 0].numpy()
    np.testing.assert_array_equal(found, edges > 0)
    distance = distance_transform(torch.from_numpy(edges > 0)[None, None], 1e9)[0, 0].numpy()
    np.testing.assert_allclose(distance, cv2.distanceTransform(255 - edges, cv2.DIST_L2, 5), atol=1e-3)
    got = water_mask(x, 0.6)[0, 0].numpy()
    assert np.abs(got - want).max() < 5e-3 and np.mean(np.abs(got - want) < 1e-5) > 0.999


def test_equalize_hist_matches_opencv_constant_images_included():
    rng = np.random.default_rng(8)
    levels = rng.integers(0, 21, (3, 30, 40)).astype(np.uint8)
    levels[2] = 7
    got = equalize_hist(torch.from_numpy(levels).float()[:, None])[:, 0].numpy()
    np.testing.assert_array_equal(got, np.stack([cv2.equalizeHist(a) for a in levels]))


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize(("n", "factor"), [(32, 1.5), (35, 1.25), (57, 1.06), (64, 1.33), (41, 2.5), (7, 1.25)])
def test_clipped_zoom_has_one_window_in_both_backends(n, factor, centred, full):
    """The numpy and the torch clipped zoom take their windows from one function (one rounding,
    scipy's: round(crop * factor), including the half-way cases), and agree on the pixels."""
    from scipy.ndimage import zoom as scipy_zoom

    from robustlab.corruptions.ops import clipped_zoom as numpy_zoom, zoom_window
    from robustlab.corruptions.torch.ops import clipped_zoom as torch_zoom

    top, crop, n_out, start, count = zoom_window(n, factor, centred, full)
    assert n_out == scipy_zoom(np.zeros((crop, 1)), (factor, 1), order=1).shape[0]
    image = np.random.default_rng(n).random((n, n + 3, 3))
    want = numpy_zoom(image, factor, centred=centred, full=full)
    got = torch_zoom(torch.from_numpy(image).permute(2, 0, 1)[None], factor, centred=centred, full=full)
    got = got[0].permute(1, 2, 0).numpy()
    assert want.shape == got.shape and want.shape[0] == count
    np.testing.assert_allclose(got, want, atol=1e-9)
