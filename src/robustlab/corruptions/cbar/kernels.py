"""The 15 C-bar kernels (declared in the corruption registry by :mod:`.catalog`, group ``c-bar``).

Each kernel draws its random parameters from ``rs`` with the calls, shapes and order the
reference's ``sample_parameters`` draws them from the global ``np.random`` (and seeds its inner
``RandomState(seed)`` the same way), so ``np.random.RandomState(s)`` here gives the pixels the
reference gives after ``np.random.seed(s)`` (``perf/parity_cbar.py`` checks it). Severities
1..5 map to the reference's severity parameter through the ImageNet-C-bar or CIFAR-10-C-bar
table of the profile (:func:`.tables.severity_parameter`).

The reference knows square images of one side S (its ``im_size``), and its size-dependent
parameters scale with S. Here S is the image's side; a non-square image is corrupted as the
top-left HxW window of an SxS canvas (S = max(H, W), the rest black), so every kernel keeps the
reference's geometry at any size.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .fields import (caustic_field, cos_sin, fourier_power, perlin_tables, perlin_turbulence, plasma_field,
                     sine_rings, single_frequency)
from .overlays import checkerboard_mask, sparkle_pass
from .sampling import caustic_refraction_warp, pinch_and_twirl_cells, ripple_warp
from .tables import severity_parameter

__all__ = ["level"]

CBarKernel = Callable[[np.ndarray, float, np.random.RandomState], np.ndarray]


def level(parameter: float, maxval: float) -> float:
    """The reference's ``float_parameter``: ``parameter * maxval / 10`` (parameter on the 0..10 scale)."""
    return float(parameter) * maxval / 10.0


def _clip_uint8(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0, 255).astype(np.uint8)


def _square(kernel: CBarKernel) -> Callable[[np.ndarray, int, np.random.RandomState, str], np.ndarray]:
    """Decorator: the registry's kernel signature around a square-image kernel ``kernel(image, parameter, rs)``
    (the severity becomes the profile's severity parameter; a non-square image is corrupted on a
    square canvas)."""
    name = kernel.__name__

    def wrapped(image: np.ndarray, severity: int, rs: np.random.RandomState, profile: str) -> np.ndarray:
        parameter = severity_parameter(name, severity, profile)
        h, w = image.shape[:2]
        if h == w:
            return kernel(image, parameter, rs)
        side = max(h, w)
        canvas = np.zeros((side, side, 3), np.uint8)
        canvas[:h, :w] = image
        return np.ascontiguousarray(kernel(canvas, parameter, rs)[:h, :w])

    wrapped.__name__ = name
    wrapped.__qualname__ = name
    wrapped.__doc__ = kernel.__doc__
    wrapped.__wrapped__ = kernel
    return wrapped


# --------------------------------------------------------------------------- Fourier noises


def _fourier_noise(side: int, rs: np.random.RandomState, brownish: bool) -> np.ndarray:
    """A real noise field with the spectrum magnitude of :func:`.fields.fourier_power` and random,
    conjugate-symmetric phases (drawn from ``rs``), normalised to unit standard deviation."""
    from scipy.fftpack import ifft2

    phases = rs.uniform(low=0, high=2 * np.pi, size=(side, side // 2))
    if side % 2 == 0:
        phases = np.concatenate((phases, phases[::-1, ::-1]), axis=1)
    else:
        centre = rs.uniform(low=0, high=2 * np.pi, size=(side // 2, 1))
        centre = np.concatenate((centre, np.array([[0.0]]), centre[::-1, :]), axis=0)
        phases = np.concatenate((phases, centre, phases[::-1, ::-1]), axis=1)
    cos, sin = cos_sin(phases)
    power = fourier_power(side, brownish)
    spectrum = power * cos + 1j * (power * sin)
    spectrum = np.roll(spectrum, side // 2, axis=(0, 1))
    noise = np.real(ifft2(spectrum))
    return noise / np.std(noise)


@_square
def blue_noise_sample(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Keeps the pixels where a blue-noise field exceeds a threshold; the others go black."""
    seed = rs.randint(low=0, high=2**32)
    threshold = level(parameter, 3.0) - 2.5
    noise = _fourier_noise(image.shape[0], np.random.RandomState(seed=seed), brownish=False)
    return image * (noise > threshold)[:, :, None].astype(np.uint8)


@_square
def brownish_noise(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Adds low-frequency (1/f^2) noise, one field per channel."""
    seed = rs.randint(low=0, high=2**32)
    intensity = level(parameter, 64)
    inner = np.random.RandomState(seed=seed)
    noise = np.stack([_fourier_noise(image.shape[0], inner, brownish=True) for _ in range(3)], axis=2)
    return _clip_uint8(image + intensity * noise)


# --------------------------------------------------------------------------- procedural fields


@_square
def single_frequency_greyscale(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Adds one grey sine grating of random frequency, direction and phase."""
    freq_mag = rs.uniform(low=-np.pi, high=np.pi)
    freq_2 = rs.uniform(low=-abs(freq_mag), high=abs(freq_mag))
    freq = np.array([freq_mag, freq_2])[rs.permutation(2)]
    phase = rs.uniform(low=0, high=2 * np.pi)
    intensity = level(parameter, 196)
    noise = single_frequency(image.shape[0], float(freq[0]), float(freq[1]), float(phase))
    return _clip_uint8(image + intensity * noise[:, :, None])


@_square
def cocentric_sine_waves(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Adds wavy concentric rings around a random centre."""
    side = image.shape[0]
    offset = rs.uniform(low=0, high=side, size=2)
    freq = rs.uniform(low=0, high=10)
    amplitude = rs.uniform(low=0, high=side / 10)
    ring_width = rs.uniform(low=0, high=side / 10)
    intensity = level(parameter, 128)
    noise = sine_rings(side, float(offset[0]), float(offset[1]), freq, amplitude, ring_width)
    return _clip_uint8(image + intensity * noise[:, :, None])


@_square
def plasma_noise(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Blends in a coloured plasma pattern."""
    side = image.shape[0]
    time = rs.uniform(low=0.0, high=6 * np.pi)
    iterations = rs.randint(low=4, high=7)
    sharpness = rs.uniform(low=0.5, high=1.0)
    scale = rs.uniform(low=0.075, high=0.2) * side
    intensity = level(parameter, 64)
    # the reference's state vector i before each iteration (the same for every pixel)
    state = np.array([1.0, 1.0, 1.0, 0.0])
    states = []
    for _ in range(iterations):
        states.append(state.copy())
        state = state * np.array([1.93, 1.15, 2.25 - sharpness, time * state[1]])
    s = np.array(states)
    noise = plasma_field(side, time, scale, s[:, 0].copy(), s[:, 1].copy(), s[:, 2].copy(), s[:, 3].copy())
    return _clip_uint8((1 - intensity / 255) * image + intensity * noise)


@_square
def perlin_noise(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Blends in grey Perlin turbulence (5 octaves)."""
    side = image.shape[0]
    step = 1.0 / (32 * side / 224)
    alpha = level(parameter, 0.50)
    seed = rs.randint(low=0, high=2**32)
    p, g = perlin_tables(np.random.RandomState(seed=seed))
    noise = perlin_turbulence(side, p, g, step, 16.0, 0.5, 0.5)
    kept = np.float32(1 - alpha) * image.astype(np.float32)
    return _clip_uint8(kept + (255 * alpha) * noise[:, :, None])


# --------------------------------------------------------------------------- overlays


@_square
def sparkles(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Five white stars of 50-200 rays at random places."""
    side = image.shape[0]
    centers = rs.uniform(low=0, high=side, size=(5, 2))
    radius = level(parameter, 0.1) * side
    seed = rs.randint(low=0, high=2**32)
    nrays = rs.randint(low=50, high=200, size=5)
    inner = np.random.RandomState(seed=seed)
    out = image
    for center, rays in zip(centers, nrays):
        lengths = np.maximum(1, radius + 25 / 100.0 * radius * inner.randn(int(rays)))
        out = sparkle_pass(out.astype(np.float32), float(center[0]), float(center[1]), radius, lengths, 1.0, False)
    return _clip_uint8(out)


@_square
def inverse_sparkles(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """White everywhere except inside one star of rays near the centre."""
    side = image.shape[0]
    center = rs.uniform(low=0.25, high=0.75, size=2) * side
    radius = 0.25 * side
    amount = 100 - level(parameter, 65)
    seed = rs.randint(low=0, high=2**32)
    rays = rs.randint(low=50, high=200)
    lengths = radius + 25 / 100.0 * radius * np.random.RandomState(seed=seed).randn(int(rays))
    out = sparkle_pass(image.astype(np.float32), float(center[0]), float(center[1]), radius, lengths,
                       (100 - amount) / 50.0, True)
    return _clip_uint8(out)


@_square
def checkerboard_cutout(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Greys out random squares of a rotated checkerboard (128 grey)."""
    side = image.shape[0]
    angle = rs.uniform(low=0, high=2 * np.pi)
    scale = np.maximum(rs.uniform(low=0.1, high=0.25) * side, 1)
    fraction = level(parameter, 1.0)
    seed = rs.randint(low=0, high=2**32)
    cells = (int(4 * side // scale), int(4 * side // scale))
    grid = np.random.RandomState(seed=seed).uniform(size=cells) < fraction
    mask = checkerboard_mask(side, side, math.cos(angle), math.sin(angle), float(scale), grid)
    out = image.copy()
    out[mask] = 128
    return out


@_square
def lines(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Draws anti-aliased grey (128) lines across the image, mostly in one direction."""
    from skimage.draw import line_aa

    side = image.shape[0]
    angle = rs.uniform(low=0.0, high=2 * np.pi)
    variation = rs.uniform(low=0.1, high=1.0)
    seed = rs.randint(low=0, high=2**32)
    n_lines = int(level(parameter, 1.0) * side)
    length = 1.0 * side
    inner = np.random.RandomState(seed=seed)
    out = image.copy()
    for _ in range(n_lines):  # a loop over lines (each drawn by a compiled routine), not pixels
        x = side * inner.uniform()
        y = side * inner.uniform()
        a = angle + 2 * np.pi * variation * (inner.uniform() - 0.5)
        s = math.sin(a) * length
        c = math.cos(a) * length
        rows, cols, val = line_aa(int(x - c), int(y - s), int(x + c), int(y + s))
        keep = (rows >= 0) & (cols >= 0) & (rows < side) & (cols < side)
        rows, cols, val = rows[keep], cols[keep], val[keep].reshape(-1, 1)
        out[rows, cols, :] = (1.0 - val) * out[rows, cols, :].astype(np.float32) + val * 128
    return out


# --------------------------------------------------------------------------- warps and blurs


@_square
def pinch_and_twirl(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Twirls a grid of circular patches, each by a random direction (5x5 at 224 px, 3x3 at 32 px)."""
    side = image.shape[0]
    cells = 5 if side == 224 else max(3, round(5 * side / 224))
    strength = level(parameter, np.pi / 2)
    angles = np.array([rs.choice([1, -1]) * strength for _ in range(cells**2)]).reshape(cells, cells)
    amount = level(parameter, 0.4) + 0.1
    return _clip_uint8(pinch_and_twirl_cells(image, cells, angles.astype(np.float64), amount))


@_square
def ripple(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Displaces rows and columns by sine waves of random wavelength and phase."""
    side = image.shape[0]
    amplitudes = np.array([level(parameter, 0.025)] * 2) * side
    wavelengths = rs.uniform(low=0.1, high=0.3, size=2) * side
    phases = rs.uniform(low=0, high=2 * np.pi, size=2)
    return _clip_uint8(ripple_warp(np.ascontiguousarray(image), amplitudes, wavelengths, phases))


@_square
def caustic_refraction(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Looks at the image through rippled water: caustic-lens refraction and lighting."""
    from .._gaussian import gaussian_weights
    from scipy.ndimage import correlate1d

    side = image.shape[0]
    time = rs.uniform(low=0.5, high=2.0)
    size = rs.uniform(low=0.75, high=1.25) * side
    lens_scale = level(parameter, 0.5 * side)
    lighting = level(parameter, 2.0)
    field = np.repeat(caustic_field(side, time, size)[:, :, None], 3, axis=2)
    # scipy.ndimage.gaussian_filter(field, sigma=1) over all three axes, with machine-independent weights
    weights = gaussian_weights(1.0, 4.0)[::-1]
    for axis in range(3):
        field = correlate1d(field, weights, axis=axis, mode="reflect")
    values, any64 = caustic_refraction_warp(image.astype(np.float32) / np.float32(255), field, 4.0, lens_scale,
                                            lighting)
    scaled = values * 255.0 if any64 else values.astype(np.float32) * np.float32(255)
    return np.clip(scaled.astype(np.uint8), 0, 255)


@_square
def circular_motion_blur(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """The average of 21 rotations of the image (cubic spline) with Gaussian weights: a spin blur."""
    from scipy.ndimage import rotate

    from ..exactmath import exp as exact_exp

    amount = level(parameter, 15)
    steps = [2 * i / 20 - 1 for i in range(21)]
    factors = exact_exp(np.array([-2 * s**2 for s in steps]))
    unit = image.astype(np.float32) / np.float32(255)
    out = np.zeros_like(unit)
    for step, factor in zip(steps, factors):
        out += np.float32(factor) * rotate(unit, step * amount, reshape=False)
    out /= np.float32(sum(float(f) for f in factors))
    return np.clip(out * np.float32(255), 0, 255).astype(np.uint8)


@_square
def transverse_chromatic_abberation(image: np.ndarray, parameter: float, rs: np.random.RandomState) -> np.ndarray:
    """Scales the three colour channels differently about the centre (1, 1 + s/2, 1 + s, in random order)."""
    from scipy.ndimage import zoom

    side = image.shape[0]
    scale = level(parameter, 0.5)
    scales = np.array([1.0, 1.0 + scale / 2, 1.0 + scale])[rs.permutation(3)]
    out = image.copy()
    for c in range(3):
        zoomed = zoom(image[:, :, c], scales[c], prefilter=False)
        edge = (zoomed.shape[0] - side) // 2
        out[:, :, c] = zoomed[edge:edge + side, edge:edge + side]
    return out
