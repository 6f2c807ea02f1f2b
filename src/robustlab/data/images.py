"""Reading, writing and checking images: uint8 HxWx3 RGB numpy arrays at the edges."""

from __future__ import annotations

import contextlib
import contextvars

import io
import os
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError, InputError
from ..fsutil import atomic_path, explain_os_error

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm", ".tif", ".tiff", ".webp")


def is_image_file(path: str | os.PathLike) -> bool:
    """True when the file name has an image extension (case-insensitive)."""
    return str(path).lower().endswith(IMAGE_EXTENSIONS)


def check_image(image: object, *, name: str = "image", min_size: int = 1) -> np.ndarray:
    """Validate an image array and return it as uint8 HxWx3 (grey is repeated to 3 channels).

    Accepts uint8 arrays of shape HxW, HxWx1 or HxWx3. Anything else (float arrays, 4
    channels, wrong rank, smaller than ``min_size`` on a side) raises :class:`InputError`
    naming the problem and the fix.
    """
    if not isinstance(image, np.ndarray):
        raise InputError(f"{name} must be a numpy array (uint8 HxWx3); got {type(image).__name__}. "
                         "Convert PIL images with np.asarray(img.convert('RGB')).")
    if image.dtype != np.uint8:
        hint = (" Scale float images in [0, 1] with (img * 255).round().astype(np.uint8)."
                if image.dtype.kind == "f" else " Convert it with .astype(np.uint8) after clipping to [0, 255].")
        raise InputError(f"{name} must have dtype uint8; got {image.dtype}.{hint}")
    if image.ndim == 2:
        image = image[:, :, None]
    if image.ndim != 3 or image.shape[2] not in (1, 3):
        raise InputError(f"{name} must have shape HxW, HxWx1 or HxWx3; got {image.shape}. "
                         "Drop an alpha channel with img[..., :3]; for CHW arrays use img.transpose(1, 2, 0).")
    h, w = image.shape[:2]
    if h < min_size or w < min_size:
        raise InputError(f"{name} is {h}x{w} pixels; it must be at least {min_size}x{min_size}. "
                         "Upscale it first (e.g. PIL's Image.resize).")
    if image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    return np.ascontiguousarray(image)


#: Default largest image robustlab decodes, in pixels (width x height): Pillow's own
#: decompression-bomb error threshold (2 x ``PIL.Image.MAX_IMAGE_PIXELS`` as Pillow ships it).
#: Larger images are refused with a DataError naming the file (a failed sample, not a crash).
DEFAULT_MAX_PIXELS = 178_956_970
#: Pillow modes of 16-bit single-channel images, decoded by scaling 0..65535 to 0..255.
_GREY16_MODES = ("I;16", "I;16B", "I;16L", "I;16N")
#: Pillow modes converted to RGB by Pillow itself: grey, bilevel, palette, CMYK, and the alpha
#: modes whose alpha is dropped (as torchvision's ``pil_loader`` does, so numbers match).
_TO_RGB_MODES = ("L", "1", "P", "PA", "LA", "RGBA", "RGBX", "RGBa", "La", "CMYK", "YCbCr", "LAB", "HSV")


#: The limit :func:`read_image` applies when it is given none: :data:`DEFAULT_MAX_PIXELS`, or
#: what :func:`max_pixels_limit` sets for the code it wraps (the evaluation engine sets a run's
#: ``--max-pixels`` around each batch it loads, in whatever process loads it).
_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("robustlab_max_pixels", default=None)


@contextlib.contextmanager
def max_pixels_limit(value: int | None):
    """Within this block, :func:`read_image` calls that give no ``max_pixels`` use ``value``
    (None: the default)."""
    token = _LIMIT.set(None if value is None else check_max_pixels(value))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def check_max_pixels(value: int | None) -> int:
    """The pixel limit to apply: ``value`` checked (a positive integer), or the default when None
    (:data:`DEFAULT_MAX_PIXELS`, or the limit a :func:`max_pixels_limit` block set).

    Pillow has no per-call limit, so a ``value`` above Pillow's own (process-wide) threshold
    raises that threshold for this process; robustlab's check in :func:`read_image` then decides.
    """
    if value is None:
        return _LIMIT.get() or DEFAULT_MAX_PIXELS
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"max_pixels must be a positive integer (width x height); got {value!r}.")
    if Image.MAX_IMAGE_PIXELS is not None and 2 * Image.MAX_IMAGE_PIXELS < value:
        Image.MAX_IMAGE_PIXELS = int(value) // 2 + 1
    return int(value)


def scale_16bit(values: np.ndarray) -> np.ndarray:
    """Map 16-bit samples (0..65535) to uint8 (0..255) by ``round(v * 255 / 65535)``.

    Parameters
    ----------
    values : np.ndarray
        Integer array (uint16 or wider) with values in 0..65535, any shape.

    Returns
    -------
    np.ndarray
        uint8 array of the same shape; 65535 -> 255, 32896 -> 128, 0 -> 0.
    """
    # v / 257 is v * 255 / 65535 exactly; (v + 128) // 257 rounds it to the nearest integer.
    return ((values.astype(np.uint32) + 128) // 257).astype(np.uint8)


def _is_16bit_colour(img: Image.Image) -> bool:
    """RGB/RGBA whose samples are 16-bit on disk (16-bit PNG or TIFF): Pillow would keep
    only the high byte of each, so robustlab decodes them itself."""
    if img.mode not in ("RGB", "RGBA"):
        return False
    for tile in getattr(img, "tile", None) or ():
        args = tile[3] if len(tile) > 3 else None
        rawmode = args[0] if isinstance(args, tuple) and args else args
        if isinstance(rawmode, str) and ";16" in rawmode:
            return True
    return False


def _decode_16bit_colour(path: Path) -> np.ndarray:
    import cv2

    data = np.fromfile(path, dtype=np.uint8)
    decoded = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    if decoded is None or decoded.dtype != np.uint16 or decoded.ndim != 3:
        raise DataError(f"cannot decode the 16-bit colour image {path}; convert it to 8-bit PNG or JPEG.")
    rgb = cv2.cvtColor(decoded, cv2.COLOR_BGRA2RGB if decoded.shape[2] == 4 else cv2.COLOR_BGR2RGB)
    return scale_16bit(rgb)


def _to_rgb8(img: Image.Image, path: Path, *, sixteen_bit_colour: bool) -> np.ndarray:
    mode = img.mode
    if sixteen_bit_colour:
        return _decode_16bit_colour(path)
    if mode == "RGB":
        return np.asarray(img, dtype=np.uint8).copy()
    if mode in _GREY16_MODES or mode == "I":
        grey = np.asarray(img)
        if mode == "I" and grey.size and (int(grey.min()) < 0 or int(grey.max()) > 65535):
            raise DataError(f"image {path} is a 32-bit integer image with values in [{int(grey.min())}, "
                            f"{int(grey.max())}], which have no defined 8-bit scale; convert it to 8 or 16 bit.")
        return np.repeat(scale_16bit(grey)[:, :, None], 3, axis=2)
    if mode == "F":
        raise DataError(f"image {path} holds floating-point samples, which have no defined 8-bit scale; "
                        "convert it to an 8- or 16-bit image.")
    if mode in ("I;16S", "I;32", "I;32B", "I;32L", "I;32S", "F;32F", "F;16"):  # pragma: no cover - rare TIFFs
        raise DataError(f"image {path} has the unusual sample format {mode}; convert it to an 8- or 16-bit image.")
    if mode == "P" and "transparency" in img.info:
        img = img.convert("RGBA")  # the palette's transparency, then dropped below like any alpha
    return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()


def read_image(path: str | os.PathLike, *, max_pixels: int | None = None) -> np.ndarray:
    """Read an image file as uint8 HxWx3 RGB.

    Every mode is decoded explicitly: 8-bit RGB as is; grey, bilevel and palette images
    repeated/expanded to RGB; CMYK and YCbCr converted by Pillow; alpha (RGBA, LA, palette
    transparency) dropped, as torchvision's loader does; 16-bit grey and 16-bit RGB(A) PNG/TIFF
    scaled to 8 bit (``round(v * 255 / 65535)``, see :func:`scale_16bit`), never clipped.
    Floating-point and 32-bit integer images are refused (no defined scale).

    Parameters
    ----------
    path : path
        The image file.
    max_pixels : int, optional
        Largest image accepted, in pixels (width x height); default
        :data:`DEFAULT_MAX_PIXELS`. The size is checked from the header, before decoding.

    Returns
    -------
    np.ndarray
        uint8 (H, W, 3) RGB.

    Raises
    ------
    DataError
        Naming the file: missing, unreadable, corrupt or truncated, over ``max_pixels``, or in
        a sample format without a defined 8-bit scale.
    """
    p = Path(path)
    limit = check_max_pixels(max_pixels)
    try:
        with Image.open(p) as img:
            width, height = img.size
            if width * height > limit:
                raise DataError(f"image {p} is {width}x{height} = {width * height:,} pixels, over the limit of "
                                f"{limit:,} (a decompression-bomb guard); raise it with --max-pixels if the "
                                "image is genuine.")
            sixteen_bit_colour = _is_16bit_colour(img)  # from the tiles, which load() clears
            img.load()
            return _to_rgb8(img, p, sixteen_bit_colour=sixteen_bit_colour)
    except FileNotFoundError:
        raise DataError(f"image file {p} does not exist; check the dataset path.") from None
    except DataError:
        raise
    except Image.DecompressionBombError as exc:
        raise DataError(f"image {p} is over Pillow's decompression-bomb limit ({exc}); raise the limit with "
                        "--max-pixels if the image is genuine.") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        reason = explain_os_error(exc, p, "read") if isinstance(exc, OSError) and exc.errno else \
            f"cannot read image {p}: {exc}. The file is corrupt or not an image; re-download it or remove it from the dataset."
        raise DataError(reason) from exc


def encode_image(image: np.ndarray, fmt: str = "png", *, quality: int = 85) -> bytes:
    """Encode uint8 HxWx3 as PNG or JPEG bytes (JPEG: the given quality, 4:2:0 like PIL's default)."""
    image = check_image(image)
    fmt = fmt.lower()
    buf = io.BytesIO()
    pil = Image.fromarray(image)
    if fmt in ("jpg", "jpeg"):
        if not 1 <= int(quality) <= 100:
            raise InputError(f"JPEG quality {quality} is out of range: use 1..100.")
        pil.save(buf, format="JPEG", quality=int(quality))
    elif fmt == "png":
        pil.save(buf, format="PNG")
    else:
        raise InputError(f"unknown image format {fmt!r}: use 'png' or 'jpeg'.")
    return buf.getvalue()


def write_image(path: str | os.PathLike, image: np.ndarray, *, quality: int = 85) -> Path:
    """Write uint8 HxWx3 atomically; the format follows the extension (.png, .jpg/.jpeg)."""
    p = Path(path)
    ext = p.suffix.lower().lstrip(".")
    fmt = "jpeg" if ext in ("jpg", "jpeg") else ext
    data = encode_image(image, fmt, quality=quality)
    with atomic_path(p) as tmp:
        tmp.write_bytes(data)
    return p
