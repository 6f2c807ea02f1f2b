"""Digital corruptions: brightness, contrast, elastic_transform, pixelate, jpeg_compression
(benchmark) and saturate (held-out).

Every kernel is ``kernel(image, severity, rs, profile) -> image``: uint8 HxWx3 in and out
(truncated like the references' ``np.uint8``), random draws from ``rs`` in the reference's order.
The numerical routines are the reference's, or re-express them with the same operations in
the same order: scikit-image's HSV formulas in one compiled (numba) pass; Pillow's BOX and
NEAREST resizing, compiled (:mod:`._pil_resample`); OpenCV's libjpeg-turbo for JPEG (same
bytes and pixels as PIL's); SciPy's ``gaussian_filter``, compiled (:mod:`._gaussian`); SciPy's
order-1 ``map_coordinates`` (numba) and OpenCV 4's fixed-point affine warp (NumPy).
Outputs are bit-identical to imagecorruptions 1.1.2 and to Hendrycks' scripts at their
nominal sizes.

Profile differences: ``imagecorruptions`` upsamples pixelate with NEAREST and uses a
size-relative elastic transform without affine; Hendrycks' profiles (``imagenet-c``, ``cifar``,
``tinyimagenet``) upsample with BOX and apply a random affine before the elastic field, with
their per-size tables (applied as they are to images of other sizes).
"""

from __future__ import annotations

from io import BytesIO

import cv2
import numba
import numpy as np
from PIL import Image

from ._gaussian import gaussian_filter
from .ops import unit_to_uint8
from ._sampler_route import draw_uniform
from ._pil_resample import box_resize, nearest_resize

# --------------------------------------------------------------------------- severity tables

BRIGHTNESS = {
    "imagecorruptions": (0.1, 0.2, 0.3, 0.4, 0.5),
    "cifar": (0.05, 0.1, 0.15, 0.2, 0.3),
}
BRIGHTNESS["imagenet-c"] = BRIGHTNESS["tinyimagenet"] = BRIGHTNESS["imagecorruptions"]

CONTRAST = {
    "imagecorruptions": (0.4, 0.3, 0.2, 0.1, 0.05),
    "cifar": (0.75, 0.5, 0.4, 0.3, 0.15),
}
CONTRAST["imagenet-c"] = CONTRAST["tinyimagenet"] = CONTRAST["imagecorruptions"]

#: saturate: (saturation factor, saturation offset)
SATURATE = {
    "imagecorruptions": ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2)),
    "cifar": ((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)),
    "tinyimagenet": ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (30, 0.2)),
}
SATURATE["imagenet-c"] = SATURATE["imagecorruptions"]

JPEG_QUALITY = {
    "imagecorruptions": (25, 18, 15, 10, 7),
    "cifar": (80, 65, 58, 50, 40),
    "tinyimagenet": (65, 58, 50, 40, 25),
}
JPEG_QUALITY["imagenet-c"] = JPEG_QUALITY["imagecorruptions"]

#: pixelate: fraction of the side kept by the downsampling
PIXELATE = {
    "imagecorruptions": (0.6, 0.5, 0.4, 0.3, 0.25),
    "cifar": (0.95, 0.9, 0.85, 0.75, 0.65),
    "tinyimagenet": (0.9, 0.8, 0.7, 0.6, 0.5),
}
PIXELATE["imagenet-c"] = PIXELATE["imagecorruptions"]

#: imagecorruptions elastic: field strength alpha (the sigma is 1 % of each side, the random
#: displacement 0.5 % of the height)
ELASTIC_ALPHA = (250 * 0.05, 250 * 0.065, 250 * 0.085, 250 * 0.1, 250 * 0.12)


def _hendrycks_elastic(size: int, table: tuple[tuple[float, float, float], ...]) -> tuple:
    return tuple((size * a, size * s, size * d) for a, s, d in table)


#: Hendrycks elastic: (alpha, sigma, affine jitter) in pixels. The ImageNet script multiplies
#: by 244 where 224 was meant; kept, since that is what ImageNet-C was made with.
ELASTIC_HENDRYCKS = {
    "imagenet-c": _hendrycks_elastic(244, ((2, 0.7, 0.1), (2, 0.08, 0.2), (0.05, 0.01, 0.02),
                                           (0.07, 0.01, 0.02), (0.12, 0.01, 0.02))),
    "cifar": _hendrycks_elastic(32, ((0, 0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06),
                                     (0.1, 0.04, 0.05), (0.1, 0.03, 0.03))),
    "tinyimagenet": _hendrycks_elastic(64, ((0, 0, 0.08), (0.05, 0.3, 0.06), (0.1, 0.08, 0.06),
                                            (0.1, 0.03, 0.03), (0.16, 0.03, 0.02))),
}


# --------------------------------------------------------------------------- HSV (scikit-image)

SHIFT_VALUE, SCALE_SATURATION = 0, 1


@numba.njit(cache=True, nogil=True)
def _hsv_adjust(image, mode, a, b):  # pragma: no cover - compiled
    # Per pixel: skimage.color.rgb2hsv, then V + a (mode 0) or S * a + b (mode 1) clipped to
    # [0, 1], then skimage.color.hsv2rgb, clip, * 255 and truncate. Same float64 operations in
    # the same order as scikit-image's array code (hue by the max channel, blue winning ties
    # over green over red; (h / 6) % 1; sector = floor(h * 6) % 6).
    rows, cols = image.shape[0], image.shape[1]
    out = np.empty((rows, cols, 3), np.uint8)
    for y in range(rows):
        for x in range(cols):
            r = image[y, x, 0] / 255.0
            g = image[y, x, 1] / 255.0
            bl = image[y, x, 2] / 255.0
            v = max(max(r, g), bl)
            delta = v - min(min(r, g), bl)
            if delta == 0.0:
                h = 0.0
                s = 0.0
            else:
                s = delta / v
                if bl == v:
                    h = 4.0 + (r - g) / delta
                elif g == v:
                    h = 2.0 + (bl - r) / delta
                else:
                    h = (g - bl) / delta
                h = (h / 6.0) % 1.0
            if mode == 0:
                v = min(max(v + a, 0.0), 1.0)
            else:
                s = min(max(s * a + b, 0.0), 1.0)
            h6 = h * 6.0
            sector = np.floor(h6)
            f = h6 - sector
            p = v * (1.0 - s)
            q = v * (1.0 - f * s)
            t = v * (1.0 - (1.0 - f) * s)
            k = int(sector) % 6
            if k == 0:
                c0, c1, c2 = v, t, p
            elif k == 1:
                c0, c1, c2 = q, v, p
            elif k == 2:
                c0, c1, c2 = p, v, t
            elif k == 3:
                c0, c1, c2 = p, q, v
            elif k == 4:
                c0, c1, c2 = t, p, v
            else:
                c0, c1, c2 = v, p, q
            out[y, x, 0] = np.uint8(min(max(c0, 0.0), 1.0) * 255.0)
            out[y, x, 1] = np.uint8(min(max(c1, 0.0), 1.0) * 255.0)
            out[y, x, 2] = np.uint8(min(max(c2, 0.0), 1.0) * 255.0)
    return out


def hsv_adjust(image: np.ndarray, mode: int, a: float, b: float = 0.0) -> np.ndarray:
    """Shift HSV value (``mode=SHIFT_VALUE``: V + a) or scale saturation (``SCALE_SATURATION``:
    S * a + b), clipped to [0, 1], of a uint8 HxWx3 RGB image; uint8 HxWx3 out (truncated).

    Bit-identical to ``np.uint8(np.clip(hsv2rgb(adjusted(rgb2hsv(image / 255.))), 0, 1) * 255)``
    with scikit-image's functions (checked over the whole RGB cube in the tests), in one
    compiled pass.
    """
    return _hsv_adjust(np.ascontiguousarray(image), int(mode), float(a), float(b))


def brightness(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Brighter: HSV value + c (clipped to 1). Draws nothing."""
    return hsv_adjust(image, SHIFT_VALUE, BRIGHTNESS[profile][severity - 1])


def saturate(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """More or less saturated: HSV saturation * a + b (clipped to [0, 1]). Draws nothing."""
    factor, offset = SATURATE[profile][severity - 1]
    return hsv_adjust(image, SCALE_SATURATION, factor, offset)


# --------------------------------------------------------------------------- contrast

def contrast(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Lower contrast: each channel pulled towards its mean by factor c. Draws nothing.

    The channel means are computed exactly as the reference (float64 mean of image / 255);
    the per-value mapping is then a 256-entry table per channel, bit-identical to evaluating
    the reference's formula on every pixel.
    """
    c = CONTRAST[profile][severity - 1]
    means = np.mean(image / 255.0, axis=(0, 1))
    levels = np.arange(256)[:, None] / 255.0
    table = unit_to_uint8((levels - means) * c + means)  # 256 x 3: one table per channel
    return cv2.LUT(np.ascontiguousarray(image), table.reshape(256, 1, 3))


# --------------------------------------------------------------------------- pixelate / jpeg

def pixelate(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Blocky: BOX downsampling by c, then NEAREST (imagecorruptions) or BOX (Hendrycks) back up.

    Pillow's resampling, as the references, recompiled (:mod:`._pil_resample`): the same pixels
    as the Pillow the references pinned (10.x), which resizes horizontally first. Draws nothing.
    """
    c = PIXELATE[profile][severity - 1]
    h, w = image.shape[:2]
    small = box_resize(image, (int(w * c), int(h * c)))
    if profile == "imagecorruptions":
        return nearest_resize(small, (w, h))
    return box_resize(small, (w, h))


def jpeg_compression(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """JPEG artefacts: encoded at a low quality and decoded again. Draws nothing.

    The references encode and decode with PIL. OpenCV's libjpeg-turbo does the same baseline
    encoding (``jpeg_set_quality`` tables, 4:2:0 chroma, no optimisation): the bytes and the
    decoded pixels are identical to PIL's (checked in the tests), without PIL's RGBX copies.
    """
    quality = JPEG_QUALITY[profile][severity - 1]
    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    ok, encoded = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV built without JPEG support
        buffer = BytesIO()
        Image.fromarray(image).save(buffer, "JPEG", quality=quality)
        encoded = np.frombuffer(buffer.getbuffer(), np.uint8)
    return cv2.cvtColor(cv2.imdecode(encoded, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


# --------------------------------------------------------------------------- elastic

@numba.njit(cache=True, nogil=True)
def _reflect_coordinate(c, n):  # pragma: no cover - compiled
    # scipy.ndimage's mapping of an out-of-range coordinate, mode 'reflect' (half-sample)
    if c < 0:
        if n <= 1:
            return 0.0
        period = 2 * n
        if c < -period:
            c = period * np.int64(-c / period) + c
        return c + period if c < -n else -c - 1
    if c > n - 1:
        if n <= 1:
            return 0.0
        period = 2 * n
        c -= period * np.int64(c / period)
        if c >= n:
            c = period - c - 1
    return c


@numba.njit(cache=True, nogil=True)
def _reflect_index(i, n):  # pragma: no cover - compiled
    # integer neighbour index mirrored into [0, n) (half-sample: -1 -> 0, n -> n - 1)
    if n <= 1:
        return 0
    period = 2 * n
    if i < 0:
        i = period * (-i // period) + i
        return i + period if i < -n else -i - 1
    if i >= n:
        i -= period * (i // period)
        if i >= n:
            i = period - i - 1
    return i


@numba.njit(cache=True, nogil=True)
def _sample_displaced(image, dy, dx):  # pragma: no cover - compiled
    # out[y, x, k] = bilinear sample of image[..., k] at (y + dy, x + dx), as
    # scipy.ndimage.map_coordinates(order=1, mode='reflect'): weights w0 = 1 - frac,
    # w1 = 1 - w0, products (value * w_row) * w_col summed row-major in float64, cast to float32.
    h, w, channels = image.shape
    out = np.empty((h, w, channels), np.float32)
    for y in range(h):
        for x in range(w):
            cy = _reflect_coordinate(np.float64(y) + np.float64(dy[y, x]), h)
            cx = _reflect_coordinate(np.float64(x) + np.float64(dx[y, x]), w)
            if not (cy > -1.0 and cx > -1.0):  # scipy's constant (cval 0) fallback
                for k in range(channels):
                    out[y, x, k] = 0.0
                continue
            fy = np.floor(cy)
            fx = np.floor(cx)
            wy0 = 1.0 - (cy - fy)
            wy1 = 1.0 - wy0
            wx0 = 1.0 - (cx - fx)
            wx1 = 1.0 - wx0
            y0 = _reflect_index(np.int64(fy), h)
            y1 = _reflect_index(np.int64(fy) + 1, h)
            x0 = _reflect_index(np.int64(fx), w)
            x1 = _reflect_index(np.int64(fx) + 1, w)
            for k in range(channels):
                t = 0.0
                t += np.float64(image[y0, x0, k]) * wy0 * wx0
                t += np.float64(image[y0, x1, k]) * wy0 * wx1
                t += np.float64(image[y1, x0, k]) * wy1 * wx0
                t += np.float64(image[y1, x1, k]) * wy1 * wx1
                out[y, x, k] = np.float32(t)
    return out


def warp_by_field(image: np.ndarray, dy: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """Sample float32 HxWxC ``image`` at (row + dy, col + dx), bilinear, mirrored borders.

    Bit-identical to the reference's ``scipy.ndimage.map_coordinates(image, (rows, cols,
    channels), order=1, mode='reflect')`` (checked against SciPy 1.12 and 1.17, coordinates
    far outside the image included), in one compiled pass without coordinate arrays.

    Parameters
    ----------
    image : np.ndarray
        float32, HxWxC.
    dy, dx : np.ndarray
        float32 HxW displacements in pixels (rows, columns).

    Returns
    -------
    np.ndarray
        float32, HxWxC.
    """
    return _sample_displaced(np.ascontiguousarray(image, dtype=np.float32), dy, dx)


def _smooth_field(rs: np.random.RandomState, shape: tuple[int, int], amplitude: float,
                  sigma: object, alpha: float) -> np.ndarray:
    """alpha * Gaussian-smoothed uniform(-amplitude, amplitude) noise, float32 (one draw)."""
    noise = draw_uniform(rs, shape, -amplitude, amplitude)
    return (gaussian_filter(noise, sigma, mode="reflect", truncate=3) * alpha).astype(np.float32)


def _reflect101(index: np.ndarray, n: int) -> np.ndarray:
    """Indices mirrored into [0, n) without repeating the edge (OpenCV BORDER_REFLECT_101)."""
    if n == 1:
        return np.zeros_like(index)
    period = 2 * (n - 1)
    index = np.abs(index) % period
    return np.where(index >= n, period - index, index)


def warp_affine_bilinear(image: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``cv2.warpAffine(image, matrix, (W, H), borderMode=cv2.BORDER_REFLECT_101)``, as OpenCV 4.

    OpenCV 4 (the line Hendrycks' scripts and the reference environment run) inverts the
    matrix, maps every output pixel to a source position in fixed point (1/1024, rounded to
    1/32 pixel) and blends the four neighbours with float32 weights in a fixed order; OpenCV 5
    changed this arithmetic. Re-expressed here in NumPy so the result is bit-identical to
    OpenCV 4.x whatever OpenCV is installed (checked against 4.11).

    Parameters
    ----------
    image : np.ndarray
        float32, HxWxC.
    matrix : np.ndarray
        2x3 forward affine transform (source -> destination), as cv2.getAffineTransform gives.

    Returns
    -------
    np.ndarray
        float32, HxWxC.
    """
    h, w = image.shape[:2]
    m = np.asarray(matrix, dtype=np.float64).ravel().copy()
    det = m[0] * m[4] - m[1] * m[3]
    det = 1.0 / det if det != 0 else 0.0
    m[0], m[4] = m[4] * det, m[0] * det
    m[1] *= -det
    m[3] *= -det
    m[2], m[5] = -m[0] * m[2] - m[1] * m[5], -m[3] * m[2] - m[4] * m[5]
    cols, rows = np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64)
    # source position in 1/32 pixel: (row term + column term) in 1/1024, rounded half-up to 1/32
    col_x = np.rint(m[0] * cols * 1024).astype(np.int64)
    col_y = np.rint(m[3] * cols * 1024).astype(np.int64)
    row_x = np.rint((m[1] * rows + m[2]) * 1024).astype(np.int64) + 16
    row_y = np.rint((m[4] * rows + m[5]) * 1024).astype(np.int64) + 16
    sx = (row_x[:, None] + col_x[None, :]) >> 5
    sy = (row_y[:, None] + col_y[None, :]) >> 5
    fx = (sx & 31).astype(np.float32) * np.float32(1 / 32)
    fy = (sy & 31).astype(np.float32) * np.float32(1 / 32)
    x0, x1 = _reflect101(sx >> 5, w), _reflect101((sx >> 5) + 1, w)
    y0, y1 = _reflect101(sy >> 5, h), _reflect101((sy >> 5) + 1, h)
    one = np.float32(1)
    out = image[y0, x0] * ((one - fy) * (one - fx))[..., None]
    out += image[y0, x1] * ((one - fy) * fx)[..., None]
    out += image[y1, x0] * (fy * (one - fx))[..., None]
    out += image[y1, x1] * (fy * fx)[..., None]
    return out


def _random_affine(image: np.ndarray, jitter: float, rs: np.random.RandomState) -> np.ndarray:
    """Hendrycks' random affine: three anchor points jittered by uniform(-jitter, jitter).

    The anchors are built in (row, col) order but handed to OpenCV as (x, y), as the reference
    does; borders mirrored (BORDER_REFLECT_101).
    """
    size = image.shape[:2]
    centre = np.float32(size) // 2
    half = min(size) // 3
    src = np.float32([centre + half, [centre[0] + half, centre[1] - half], centre - half])
    dst = src + rs.uniform(-jitter, jitter, size=src.shape).astype(np.float32)
    return warp_affine_bilinear(image, cv2.getAffineTransform(src, dst))


def elastic_transform(image: np.ndarray, severity: int, rs: np.random.RandomState,
        profile: str) -> np.ndarray:
    """Local elastic distortion: pixels displaced along a smooth random field.

    imagecorruptions: field sigma 1 % of each side, displacement draws uniform(+-0.5 % of the
    height) scaled by alpha; draws dx then dy. Hendrycks' profiles first apply a random affine
    (6 uniform draws), then draw dx and dy as uniform(-1, 1) fields.
    """
    x = image.astype(np.float32) / 255.0
    shape = image.shape[:2]
    if profile == "imagecorruptions":
        sigma = np.array(shape) * 0.01
        alpha = ELASTIC_ALPHA[severity - 1]
        amplitude = shape[0] * 0.005
    else:
        alpha, sigma, jitter = ELASTIC_HENDRYCKS[profile][severity - 1]
        amplitude = 1.0
        x = _random_affine(x, jitter, rs)
    dx = _smooth_field(rs, shape, amplitude, sigma, alpha)
    dy = _smooth_field(rs, shape, amplitude, sigma, alpha)
    return unit_to_uint8(warp_by_field(x, dy, dx))
