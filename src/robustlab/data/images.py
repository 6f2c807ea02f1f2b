"""Reading, writing and checking images: uint8 HxWx3 RGB numpy arrays at the edges."""

from __future__ import annotations

import contextlib
import contextvars

import io
import os
import struct
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError, InputError, RobustlabError
from ..fsutil import atomic_path, explain_os_error, open_regular

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm", ".pbm", ".pnm", ".pam", ".tif", ".tiff",
                    ".webp")


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


def scale_to_8bit(values: np.ndarray, maxval: int) -> np.ndarray:
    """Map samples in 0..``maxval`` to uint8 by ``round(v * 255 / maxval)`` (halves up).

    ``maxval`` is the format's full scale: 65535 for 16-bit samples, 4095 for 12-bit TIFF,
    a PNM header's MAXVAL. Values above ``maxval`` raise :class:`DataError`.
    """
    if maxval == 65535:
        return scale_16bit(values)
    v = values.astype(np.uint64)
    if v.size and int(v.max()) > maxval:
        raise DataError(f"sample value {int(v.max())} is above the image's full scale {maxval}; the file is corrupt.")
    return ((2 * 255 * v + maxval) // (2 * maxval)).astype(np.uint8)


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


#: The first bytes of a TIFF (little- and big-endian, classic and BigTIFF) and of a PAM (P7).
_TIFF_MAGIC = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
_PAM_MAGIC = b"P7"


def _too_large(path: Path, width: int, height: int, limit: int) -> DataError:
    return DataError(f"image {path} is {width}x{height} = {width * height:,} pixels, over the limit of {limit:,} "
                     "(a decompression-bomb guard); raise it with --max-pixels if the image is genuine.")


def _read_deep_tiff(path: Path, limit: int) -> np.ndarray | None:
    """A TIFF with more than 8 bits per sample, decoded with tifffile (Pillow drops the low
    byte of some layouts, ignores MinIsWhite at 16 bit and cannot open others); None for an
    8-bit TIFF, which Pillow decodes.

    Every photometric interpretation a deep TIFF may have is decoded by a stated rule:
    MinIsBlack as grey, MinIsWhite inverted (``maxval - v``) then grey, RGB, palette (16-bit
    colour map), Separated (CMYK: scaled to 8 bit, then Pillow's CMYK conversion, as 8-bit
    CMYK) and YCbCr (likewise); extra samples (alpha) are dropped; planar or interleaved, tiled
    or striped, either byte order. Samples scale by ``round(v * 255 / (2**bits - 1))``.
    Floating-point, signed and other photometric interpretations (CIELab, LogLuv...) are
    refused: they have no defined 8-bit RGB.
    """
    from tifffile import PHOTOMETRIC

    tif = _open_tiff(path)
    if tif is None:
        return None  # not a TIFF tifffile can parse: Pillow reports it as unreadable
    with tif:
        if not len(tif.pages):
            return None
        page = tif.pages[0]
        bits = int(page.bitspersample)
        if bits <= 8:
            return None
        height, width = int(page.imagelength), int(page.imagewidth)
        if width * height > limit:
            raise _too_large(path, width, height, limit)
        if int(page.sampleformat) != 1 or bits > 16:  # 1: unsigned integers
            kind = {2: "integer samples (signed)", 3: "floating-point samples"}.get(int(page.sampleformat),
                                                                                    "integer samples")
            raise DataError(f"image {path} holds {bits}-bit {kind}, which have no defined 8-bit scale; "
                            "convert it to an 8- or 16-bit image.")
        photometric = PHOTOMETRIC(page.photometric)
        colormap = page.colormap
        data = _page_samples(path, page, bits, photometric)
    return _deep_to_rgb(path, data.reshape(height, width, -1), bits, photometric, colormap)


def _open_tiff(path: Path):
    """``tifffile.TiffFile(path)``, or None when tifffile cannot parse it (its log kept quiet: a
    damaged file is reported once, by Pillow's error)."""
    import logging

    import tifffile

    quiet = logging.getLogger("tifffile")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        return tifffile.TiffFile(path)
    except (tifffile.TiffFileError, ValueError, IndexError, KeyError, EOFError, MemoryError, struct.error):
        return None
    finally:
        quiet.setLevel(level)


def _page_samples(path: Path, page, bits: int, photometric) -> np.ndarray:
    """The samples of a deep TIFF page, samples last (tifffile; OpenCV for the simple layouts when
    the compression needs imagecodecs and it is missing)."""
    from tifffile import PHOTOMETRIC

    axes = page.axes
    simple = int(page.planarconfig) == 1 and (
        (photometric in (PHOTOMETRIC.MINISBLACK, PHOTOMETRIC.MINISWHITE) and page.samplesperpixel == 1)
        or (photometric == PHOTOMETRIC.RGB and page.samplesperpixel in (3, 4)))
    try:
        data = page.asarray()
    except ValueError as exc:
        if "imagecodecs" not in str(exc):
            raise DataError(f"cannot decode the {bits}-bit TIFF {path}: {exc}. The file is damaged; "
                            "re-export it.") from None
        if not simple:  # OpenCV (libtiff) decodes only these layouts right
            raise DataError(f"decoding the {bits}-bit TIFF {path} ({page.compression.name} compression, "
                            f"{photometric.name}) needs the imagecodecs package: pip install imagecodecs, or "
                            "save the image uncompressed or with deflate compression.") from None
        data = _opencv_samples(path)
    except Exception as exc:  # noqa: BLE001 - tifffile and its codecs raise many kinds for damaged data
        raise DataError(f"cannot decode the {bits}-bit TIFF {path}: {type(exc).__name__}: {exc}. The file is "
                        "damaged; re-export it.") from None
    axes = axes if data.ndim == len(axes) else "YXS"[:data.ndim]
    if "S" in axes and axes.index("S") < axes.index("Y"):  # planar: samples first
        data = np.moveaxis(data, axes.index("S"), -1)
    return data


def _deep_to_rgb(path: Path, data: np.ndarray, bits: int, photometric, colormap) -> np.ndarray:
    """uint8 RGB of deep TIFF samples (H, W, S) by their photometric interpretation (see
    :func:`_read_deep_tiff`)."""
    from tifffile import PHOTOMETRIC

    maxval = (1 << bits) - 1
    if photometric in (PHOTOMETRIC.MINISBLACK, PHOTOMETRIC.MINISWHITE):
        grey = data[..., 0]
        if photometric == PHOTOMETRIC.MINISWHITE:
            grey = maxval - grey.astype(np.int64)
        return np.repeat(scale_to_8bit(grey, maxval)[:, :, None], 3, axis=2)
    if photometric == PHOTOMETRIC.RGB and data.shape[2] >= 3:
        return scale_to_8bit(data[..., :3], maxval)
    if photometric == PHOTOMETRIC.PALETTE and colormap is not None:
        index = data[..., 0].astype(np.int64)
        if index.size and int(index.max()) >= colormap.shape[1]:
            raise DataError(f"image {path} has palette indices beyond its colour map; the file is corrupt.")
        return scale_16bit(np.moveaxis(colormap[:, index], 0, -1))  # TIFF colour maps are 16-bit
    if photometric in (PHOTOMETRIC.SEPARATED, PHOTOMETRIC.YCBCR) and data.shape[2] >= (4 if photometric ==
                                                                                          PHOTOMETRIC.SEPARATED else 3):
        mode = "CMYK" if photometric == PHOTOMETRIC.SEPARATED else "YCbCr"
        eight = scale_to_8bit(data[..., :len(mode) if mode == "CMYK" else 3], maxval)
        return np.asarray(Image.fromarray(np.ascontiguousarray(eight), mode).convert("RGB"), dtype=np.uint8).copy()
    raise DataError(f"image {path} is a {bits}-bit TIFF with photometric interpretation {photometric.name}, which "
                    "has no defined 8-bit RGB here; convert it to 8- or 16-bit RGB or grey.")


def _opencv_samples(path: Path) -> np.ndarray:
    """The raw samples of a simple (contiguous grey or RGB) deep TIFF as OpenCV (libtiff)
    decodes them, in file order: OpenCV's BGR put back to RGB, MinIsWhite left uninverted."""
    import cv2

    decoded = cv2.imdecode(np.fromfile(path, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    if decoded is None or decoded.dtype != np.uint16:
        raise DataError(f"cannot decode the TIFF {path}; re-export it uncompressed.")
    return decoded[..., [2, 1, 0, 3][:decoded.shape[2]]] if decoded.ndim == 3 else decoded


def _read_pam(path: Path, limit: int) -> np.ndarray:
    """A PAM (P7) image, which Pillow does not read: any DEPTH (1 or 2: grey, with alpha; 3 or
    4: RGB, with alpha), any MAXVAL up to 65535 (big-endian 16-bit samples above 255); alpha
    dropped, samples scaled by ``round(v * 255 / MAXVAL)``."""
    data = path.read_bytes()
    end = data.find(b"ENDHDR\n")
    fields: dict[str, str] = {}
    if end < 0:
        raise DataError(f"cannot read the PAM image {path}: no ENDHDR line; the file is corrupt.")
    for line in data[2:end].decode("ascii", "replace").splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2:
            fields[words[0].upper()] = words[1]
    try:
        width, height, depth, maxval = (int(fields[k]) for k in ("WIDTH", "HEIGHT", "DEPTH", "MAXVAL"))
    except (KeyError, ValueError):
        raise DataError(f"cannot read the PAM image {path}: its header lacks WIDTH, HEIGHT, DEPTH or MAXVAL.") from None
    if width * height > limit:
        raise _too_large(path, width, height, limit)
    if not (1 <= maxval <= 65535 and 1 <= depth <= 4 and width > 0 and height > 0):
        raise DataError(f"cannot read the PAM image {path}: DEPTH {depth} / MAXVAL {maxval} is not an image robustlab "
                        "reads (grey, grey+alpha, RGB, RGBA up to 16 bits).")
    dtype = np.dtype(">u2" if maxval > 255 else "u1")
    count = width * height * depth
    body = np.frombuffer(data, dtype=dtype, count=count, offset=end + 7) if len(data) - end - 7 >= count * dtype.itemsize \
        else None
    if body is None:
        raise DataError(f"the PAM image {path} is truncated; re-export it.")
    pixels = body.reshape(height, width, depth)
    rgb = np.repeat(pixels[..., :1], 3, axis=2) if depth <= 2 else pixels[..., :3]
    return np.ascontiguousarray(scale_to_8bit(rgb, maxval))


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


def read_image(path: str | os.PathLike, *, max_pixels: int | None = None, prepare=None) -> np.ndarray:
    """Read an image file as uint8 HxWx3 RGB.

    Every mode is decoded explicitly: 8-bit RGB as is; grey, bilevel and palette images
    repeated/expanded to RGB; CMYK and YCbCr converted by Pillow; alpha (RGBA, LA, palette
    transparency) dropped, as torchvision's loader does. Deeper samples are scaled to 8 bit by
    ``round(v * 255 / full scale)`` (:func:`scale_to_8bit`; 65535 for 16 bit, a PNM's MAXVAL,
    ``2**bits - 1`` for a 12-bit TIFF), never clipped, in every layout the formats allow: PNG
    grey, grey+alpha, RGB, RGBA; PNM (P2/P3/P5/P6, any MAXVAL) and PAM (P7); TIFF MinIsBlack,
    MinIsWhite (inverted first), RGB(A), palette, CMYK and YCbCr, planar or interleaved (TIFFs
    deeper than 8 bit are read with tifffile). Floating-point, signed and 32-bit integer images
    are refused (no defined scale), and so is a special file (a FIFO would block the reader).

    Parameters
    ----------
    path : path
        The image file.
    max_pixels : int, optional
        Largest image accepted, in pixels (width x height); default
        :data:`DEFAULT_MAX_PIXELS`. The size is checked from the header, before decoding.
    prepare : callable, optional
        A uint8 HxWx3 -> uint8 function applied to the image (e.g. a model's resize and crop,
        :class:`robustlab.models.preprocessing.Geometry`). When it also has a ``pil`` form
        (PIL image -> PIL image, the same pixels) and the file decodes to 8-bit RGB, that form
        runs on the decoder's image, so only the prepared image is converted to numpy (the
        reader's hot path: one conversion, no copies of the full-size image).

    Returns
    -------
    np.ndarray
        uint8 (H, W, 3) RGB (possibly read-only: copy it before writing into it).

    Raises
    ------
    DataError
        Naming the file: missing, unreadable, corrupt or truncated, over ``max_pixels``, or in
        a sample format without a defined 8-bit scale.
    """
    p = Path(path)
    limit = check_max_pixels(max_pixels)
    pil = getattr(prepare, "pil", None)
    try:
        with open_regular(path, "image file") as fh:  # one open: regular files only (a FIFO would block)
            head = fh.read(4)
            image = None
            if head.startswith(_TIFF_MAGIC):
                image = _read_deep_tiff(p, limit)
            elif head.startswith(_PAM_MAGIC):
                image = _read_pam(p, limit)
            if image is None:
                fh.seek(0)
                with Image.open(fh) as img:
                    width, height = img.size
                    if width * height > limit:
                        raise _too_large(p, width, height, limit)
                    sixteen_bit_colour = _is_16bit_colour(img)  # from the tiles, which load() clears
                    img.load()
                    if pil is not None and img.mode == "RGB" and not sixteen_bit_colour:
                        return np.asarray(pil(img))
                    image = _to_rgb8(img, p, sixteen_bit_colour=sixteen_bit_colour)
    except RobustlabError:
        raise
    except Image.DecompressionBombError as exc:
        raise DataError(f"image {p} is over Pillow's decompression-bomb limit ({exc}); raise the limit with "
                        "--max-pixels if the image is genuine.") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        reason = explain_os_error(exc, p, "read") if isinstance(exc, OSError) and exc.errno else \
            f"cannot read image {p}: {exc}. The file is corrupt or not an image; re-download it or remove it from the dataset."
        raise DataError(reason) from exc
    return image if prepare is None else prepare(image)


#: The first bytes of a JPEG file (SOI and the first marker's prefix).
JPEG_MAGIC = b"\xff\xd8\xff"


def read_jpeg_bytes(path: str | os.PathLike, *, max_pixels: int | None = None) -> np.ndarray | None:
    """The bytes of a JPEG file as a 1-D uint8 array, to be decoded on a device (``--decode
    gpu``), after the checks :func:`read_image` makes before decoding (a regular file, a JPEG whose
    header Pillow reads, at most ``max_pixels``); None when the file is not a JPEG (it is then
    decoded on the CPU as usual)."""
    p = Path(path)
    limit = check_max_pixels(max_pixels)
    try:
        with open_regular(path, "image file") as fh:
            data = fh.read()
        if not data.startswith(JPEG_MAGIC):
            return None
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            if img.mode not in ("RGB", "L"):
                return None  # CMYK and other JPEGs: Pillow's conversion, on the CPU
    except RobustlabError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise DataError(f"cannot read image {p}: {exc}. The file is corrupt or not an image; re-download it or "
                        "remove it from the dataset.") from exc
    if width * height > limit:
        raise _too_large(p, width, height, limit)
    return np.frombuffer(bytearray(data), np.uint8)  # writable: torch takes it without a copy


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
