"""Noise corruptions: gaussian_noise, shot_noise, impulse_noise (benchmark), speckle_noise (held-out).

Every kernel is ``kernel(image, severity, rs, profile) -> image``: uint8 HxWx3 in, uint8 HxWx3
out, computed in float64 on ``image / 255.`` as both references do and truncated to uint8 at
the end (``np.uint8``, no rounding). The noise is drawn from ``rs`` with the same calls, shapes
and order as the references draw from the global ``np.random`` (through compiled copies of
NumPy's samplers, :mod:`._legacy_random`, which make the same draws from the same stream and
leave the same state, or through NumPy itself where that measures faster: :mod:`._sampler_route`), so a seeded
RandomState gives bit-identical output to imagecorruptions 1.1.2 (and to hendrycks' scripts at
their nominal sizes) - except impulse_noise, whose reference draws from scikit-image's own
unseeded generator: here it is reproducible from ``rs`` and equal to the reference *in
distribution* (every value independently: salt with probability amount/2, pepper with
amount/2).

Profiles only change the severity tables (the formulas are the same in all four references);
noise kernels work on any image size.
"""

from __future__ import annotations

import numba
import numpy as np

from .ops import severity_param, unit_float, unit_value_to_uint8
from ._sampler_route import draw_normal, draw_poisson_levels, draw_uniform

#: Standard deviation of the additive noise, in units of the [0, 1] intensity range.
GAUSSIAN_SIGMA = {
    "imagecorruptions": (0.08, 0.12, 0.18, 0.26, 0.38),
    "cifar": (0.04, 0.06, 0.08, 0.09, 0.10),
    "tinyimagenet": (0.04, 0.08, 0.12, 0.15, 0.18),
}
#: Poisson rate: photons per unit intensity (fewer = noisier).
SHOT_RATE = {
    "imagecorruptions": (60, 25, 12, 5, 3),
    "cifar": (500, 250, 100, 75, 50),
    "tinyimagenet": (250, 100, 50, 30, 15),
}
#: Fraction of values replaced by salt (1) or pepper (0).
IMPULSE_AMOUNT = {
    "imagecorruptions": (0.03, 0.06, 0.09, 0.17, 0.27),
    "cifar": (0.01, 0.02, 0.03, 0.05, 0.07),
    "tinyimagenet": (0.01, 0.02, 0.05, 0.08, 0.14),
}
#: Standard deviation of the multiplicative noise.
SPECKLE_SIGMA = {
    "imagecorruptions": (0.15, 0.2, 0.35, 0.45, 0.6),
    "cifar": (0.06, 0.1, 0.12, 0.16, 0.2),
    "tinyimagenet": (0.15, 0.2, 0.25, 0.3, 0.35),
}


# The references compute every step as a separate float64 array (x / 255., the noise formula,
# np.clip, * 255, np.uint8). These compiled loops do the same IEEE operations per value in one
# pass (so results are bit-identical), leaving the random draws as the only real cost.

@numba.njit(cache=True, nogil=True, inline="always")
def _to_uint8(v):  # pragma: no cover - compiled
    """np.uint8(np.clip(v, 0, 1) * 255) for one float64 value."""
    return unit_value_to_uint8(v, 0.0, 1.0, 255.0)


@numba.njit(cache=True, nogil=True)
def _additive(image, noise, multiplicative):  # pragma: no cover - compiled
    out = np.empty(image.shape, np.uint8)
    img = image.reshape(-1)
    nse = noise.reshape(-1)
    flat = out.reshape(-1)
    for i in range(img.shape[0]):
        x = img[i] / 255.0
        flat[i] = _to_uint8(x + x * nse[i]) if multiplicative else _to_uint8(x + nse[i])
    return out


@numba.njit(cache=True, nogil=True)
def _counts(counts, rate, shape):  # pragma: no cover - compiled
    out = np.empty(shape, np.uint8)
    cnt = counts.reshape(-1)
    flat = out.reshape(-1)
    for i in range(cnt.shape[0]):
        flat[i] = _to_uint8(cnt[i] / rate)
    return out


@numba.njit(cache=True, nogil=True)
def _salt_and_pepper(image, u, amount):  # pragma: no cover - compiled
    out = np.empty(image.shape, np.uint8)
    img = image.reshape(-1)
    uu = u.reshape(-1)
    flat = out.reshape(-1)
    half = amount * 0.5
    for i in range(img.shape[0]):
        if uu[i] < half:
            flat[i] = 255
        elif uu[i] < amount:
            flat[i] = 0
        else:
            flat[i] = _to_uint8(img[i] / 255.0)
    return out


def gaussian_noise(image: np.ndarray, severity: int, rs: np.random.RandomState, profile: str) -> np.ndarray:
    """Additive Gaussian noise: x + N(0, sigma^2) per value (the draws of one ``rs.normal`` of the image's shape)."""
    sigma = severity_param(GAUSSIAN_SIGMA, profile, severity)
    image = np.ascontiguousarray(image)
    return _additive(image, draw_normal(rs, image.shape, 0.0, sigma), False)


def shot_noise(image: np.ndarray, severity: int, rs: np.random.RandomState, profile: str) -> np.ndarray:
    """Poisson (photon) noise: Poisson(x * rate) / rate per value."""
    rate = severity_param(SHOT_RATE, profile, severity)
    # The reference's rates unit_float(image) * rate, one per grey level; draw_poisson_levels
    # draws exactly rs.poisson's counts for them.
    rates = unit_float(np.arange(256, dtype=np.uint8)) * rate
    counts = draw_poisson_levels(rs, np.ascontiguousarray(image), rates)
    return _counts(counts, float(rate), image.shape)


def impulse_noise(image: np.ndarray, severity: int, rs: np.random.RandomState, profile: str) -> np.ndarray:
    """Salt-and-pepper noise with scikit-image's ``random_noise(mode='s&p')`` semantics.

    Each value (per channel) is flipped with probability ``amount``; a flipped value becomes 1
    (salt) or 0 (pepper) with equal probability. One uniform draw per value decides both
    (u < amount/2: salt; amount/2 <= u < amount: pepper), which has the same distribution as
    scikit-image's two Bernoulli draws. The reference is unseedable, so only the distribution
    can match.
    """
    amount = severity_param(IMPULSE_AMOUNT, profile, severity)
    image = np.ascontiguousarray(image)
    return _salt_and_pepper(image, draw_uniform(rs, image.shape), float(amount))


def speckle_noise(image: np.ndarray, severity: int, rs: np.random.RandomState, profile: str) -> np.ndarray:
    """Multiplicative noise: x + x * N(0, sigma^2) per value."""
    sigma = severity_param(SPECKLE_SIGMA, profile, severity)
    image = np.ascontiguousarray(image)
    return _additive(image, draw_normal(rs, image.shape, 0.0, sigma), True)
