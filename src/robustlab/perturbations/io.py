"""Reading and writing perturbation sequences: H.264 MP4 as released, PNG frames, ``.npy``.

A *sequence* is uint8 (T, H, W, 3) RGB. Three on-disk forms:

==========  =====================================  =========================================
format      one sequence is                        notes
==========  =====================================  =========================================
``mp4``     ``<name>.mp4``                         H.264 (libx264, 1 fps) encoded as
                                                   ImageNet-P was released (below). Lossy.
``png``     ``<name>/0000.png, 0001.png, ...``     lossless frames in a folder
``npy``     ``<name>.npy``                         lossless (T, H, W, 3) array
==========  =====================================  =========================================

Encoder settings, from the release script (``make_imagenet_p.py`` ran ``ffmpeg -r 1 -framerate 1
-i img%d.png -vcodec libx264 ...`` on PNG frames): temporal sequences ``-crf 20``; noise
sequences ``-tune grain`` and no ``-crf`` (x264's default, 23). Both used ``-preset veryslow``;
robustlab defaults to ``medium`` (several times faster; the same rate factor gives very
nearly the same quality, in larger files), ``preset="veryslow"`` reproduces the release's
encoder exactly. Pixel format: ffmpeg encodes RGB PNG input with libx264 as ``yuv444p``
(no chroma subsampling), so robustlab does too; ``pix_fmt="yuv420p"`` gives the more widely
playable variant (even frame sizes only).

Determinism: mp4 files are encoded by :mod:`robustlab.data.h264`, so they are byte-identical
for the same frames, settings and encoder build, whatever the number of workers or CPUs, the CPU
affinity or the preset (one x264 thread, x264's instruction sets pinned to x86-64-v2);
:func:`encoder_versions` names that build and says whether this machine's output is
byte-reproducible (the perturb summary file records it).

The dataset layout is ``<root>/<perturbation>/<class>/<name>.<ext>`` (``<class>`` is absent
for a flat source folder); CIFAR-10-P keeps one ``<perturbation>.npy`` array of shape
(N, T, 32, 32, 3) per perturbation. Every writer is atomic (temporary name, then rename), and
every reader raises :class:`~robustlab.errors.DataError` naming the file when it cannot be
read, has the wrong number of frames, or is shorter than a metric's stride.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

import numpy as np

from ..data.h264 import encoder_record, write_h264
from ..data.images import encode_image, read_image
from ..data.video_reader import open_video
from ..errors import DataError, InputError
from ..fsutil import TMP_SUFFIX, atomic_path, atomic_write_npy, ensure_dir, is_temporary_name
from ..safeload import load_npy

#: On-disk forms of one sequence.
FORMATS = ("mp4", "png", "npy")
#: H.264 settings of the ImageNet-P release: crf of temporal and of noise sequences, frame rate,
#: pixel format ffmpeg picks for RGB input; the preset is robustlab's default (release: veryslow).
MP4_CRF = 20
MP4_NOISE_CRF = 23
MP4_FPS = 1
MP4_PIX_FMT = "yuv444p"
MP4_PRESET = "medium"
#: Extensions read as videos (anything FFmpeg decodes; ``.mp4`` is what robustlab writes).
VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv", ".avi", ".webm")


def check_format(fmt: str) -> str:
    """``"mp4"``, ``"png"`` or ``"npy"`` (case-insensitive; InputError otherwise)."""
    norm = str(fmt).lower().lstrip(".")
    if norm not in FORMATS:
        raise InputError(f"unknown sequence format {fmt!r}: use 'mp4' (H.264 as released), "
                         "'png' (lossless frames) or 'npy' (lossless array).")
    return norm


def check_sequence(frames: object, *, name: str = "sequence") -> np.ndarray:
    """Validate ``frames`` as uint8 (T, H, W, 3) with T >= 1 and return it."""
    arr = np.asarray(frames)
    if arr.dtype != np.uint8 or arr.ndim != 4 or arr.shape[-1] != 3 or arr.shape[0] < 1:
        raise InputError(f"{name} must be uint8 (frames, height, width, 3); got {arr.dtype} {arr.shape}. "
                         "Convert with np.clip(x, 0, 255).astype(np.uint8).")
    return arr


# --- paths -------------------------------------------------------------------------------


def sequence_name(relative: PurePosixPath | str, fmt: str) -> PurePosixPath:
    """Output name of source image ``relative`` (``cls/x.JPEG`` -> ``cls/x.mp4``; png: ``cls/x``)."""
    rel = PurePosixPath(relative)
    fmt = check_format(fmt)
    return rel.with_suffix("") if fmt == "png" else rel.with_suffix(f".{fmt}")


def perturbation_folder(perturbation: str, difficulty: int = 1, *, noise: bool = False) -> str:
    """The release's folder name: ``gaussian_noise``, ``gaussian_noise_2``, ``gaussian_noise_3``...

    Only noise sequences change with the difficulty (a stronger noise level); temporal ones
    are the same sequences read with a larger stride, so their folder has no suffix.
    """
    return f"{perturbation}_{difficulty}" if noise and difficulty != 1 else perturbation


def sequence_path(root: str | os.PathLike, perturbation_dir: str, relative: PurePosixPath | str, fmt: str) -> Path:
    """``<root>/<perturbation_dir>/<class>/<name>.<ext>`` (png: a folder)."""
    return Path(root, perturbation_dir, *sequence_name(relative, fmt).parts)


def is_sequence_entry(entry: os.DirEntry | Path) -> bool:
    """True for a video file, a ``.npy`` file or a folder of numbered PNG frames."""
    name = entry.name
    if name.startswith("."):
        return False
    if entry.is_file():
        return name.lower().endswith(VIDEO_EXTENSIONS + (".npy",))
    if entry.is_dir():
        return _png_frames(Path(entry.path if isinstance(entry, os.DirEntry) else entry), check=False) != []
    return False


# --- writers -----------------------------------------------------------------------------


def encode_mp4(path: str | os.PathLike, frames: np.ndarray, *, noise: bool = False, crf: int | None = None,
               fps: int = MP4_FPS, preset: str = MP4_PRESET, pix_fmt: str = MP4_PIX_FMT) -> None:
    """Encode ``frames`` (uint8 (T, H, W, 3)) as H.264 MP4 at ``path`` (not atomic; see :func:`write_mp4`)."""
    crf = (MP4_NOISE_CRF if noise else MP4_CRF) if crf is None else crf
    write_h264(path, frames, fps=fps, crf=crf, preset=preset, pix_fmt=pix_fmt, tune="grain" if noise else None)


def encoder_versions() -> dict:
    """What decides the bytes of an mp4 (libx264 core, PyAV and libav* versions, the pinned x264
    instruction sets, ``byte_reproducible``): :func:`robustlab.data.h264.encoder_record`."""
    return dict(encoder_record())


def write_mp4(path: str | os.PathLike, frames: np.ndarray, *, noise: bool = False, crf: int | None = None,
              fps: int = MP4_FPS, preset: str = MP4_PRESET, pix_fmt: str = MP4_PIX_FMT) -> Path:
    """Write a sequence as H.264 MP4 the way ImageNet-P was released, atomically.

    Parameters
    ----------
    path : path
        Output ``.mp4`` file (parents are created).
    frames : np.ndarray
        uint8 (T, H, W, 3) RGB.
    noise : bool
        Noise sequence: libx264's ``tune=grain`` (keeps the noise instead of smoothing it away)
        and crf 23, as released; temporal sequences crf 20.
    crf : int, optional
        Override the constant rate factor.
    fps : int
        Frame rate (1 fps, as released).
    preset : str
        x264 preset (``medium``; the release used ``veryslow``).
    pix_fmt : str
        ``yuv444p`` (as ffmpeg encoded the release's RGB frames) or ``yuv420p`` (even H and W only).
    """
    frames = check_sequence(frames, name=f"sequence for {path}")
    if pix_fmt == "yuv420p" and (frames.shape[1] % 2 or frames.shape[2] % 2):
        raise InputError(f"H.264 yuv420p needs an even frame size; {path} would be {frames.shape[1]}x"
                         f"{frames.shape[2]}. Use pix_fmt 'yuv444p', format 'png' or 'npy', or crop to an even size.")
    with atomic_path(path) as tmp:
        try:
            encode_mp4(tmp, frames, noise=noise, crf=crf, fps=fps, preset=preset, pix_fmt=pix_fmt)
        except OSError:
            raise
        except Exception as exc:  # av.error.FFmpegError and friends: name the file
            raise DataError(f"cannot encode {path} as H.264: {exc}") from exc
    return Path(path)


def frame_file_name(index: int) -> str:
    """``0000.png``: zero-padded so that sorting by name is sorting by frame."""
    return f"{index:04d}.png"


def write_png_frames(folder: str | os.PathLike, frames: np.ndarray) -> Path:
    """Write a sequence as a folder of lossless PNG frames ``0000.png`` ..., atomically.

    The frames go to a hidden temporary folder that is renamed to ``folder`` when complete; an
    existing ``folder`` is replaced.
    """
    frames = check_sequence(frames, name=f"sequence for {folder}")
    final = Path(folder)
    ensure_dir(final.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=TMP_SUFFIX, dir=final.parent))
    try:
        for i, frame in enumerate(frames):
            (tmp / frame_file_name(i)).write_bytes(encode_image(frame, "png"))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise DataError(f"cannot write frames to {final}: {exc.strerror or exc}.") from exc
        raise
    return final


def write_sequence(path: str | os.PathLike, frames: np.ndarray, fmt: str | None = None, *, noise: bool = False,
                   preset: str = MP4_PRESET) -> Path:
    """Write one sequence in ``fmt`` (default: from the extension; no extension = png folder).

    ``noise`` and ``preset`` matter for mp4 only (see :func:`write_mp4`).
    """
    p = Path(path)
    fmt = check_format(fmt or p.suffix or "png")
    if fmt == "mp4":
        return write_mp4(p, frames, noise=noise, preset=preset)
    if fmt == "npy":
        return atomic_write_npy(p, check_sequence(frames, name=f"sequence for {p}"))
    return write_png_frames(p, frames)


def remove_stale_temporaries(root: str | os.PathLike) -> int:
    """Delete the temporary files and frame folders a killed writer left under ``root``; count them."""
    removed = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [d for d in dirnames if is_temporary_name(d)]:
            shutil.rmtree(Path(dirpath, name), ignore_errors=True)
            dirnames.remove(name)
            removed += 1
        for name in filenames:
            if is_temporary_name(name):
                Path(dirpath, name).unlink(missing_ok=True)
                removed += 1
    return removed


# --- readers -----------------------------------------------------------------------------


def _png_frames(folder: Path, *, check: bool = True) -> list[Path]:
    try:
        names = sorted(n for n in os.listdir(folder) if n.lower().endswith(".png") and n[:-4].isdigit())
    except OSError as exc:
        if not check:
            return []
        raise DataError(f"cannot read frame folder {folder}: {exc.strerror or exc}.") from exc
    return [folder / n for n in names]


def decode_video(path: str | os.PathLike) -> np.ndarray:
    """All frames of a video file as uint8 (T, H, W, 3) RGB (DataError naming the file on failure)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"sequence file {p} does not exist; check the path.")
    try:
        no_stream = f"{p} has no video stream; it is not a perturbation video."
        with open_video(p, no_stream=no_stream) as (container, stream):
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    except DataError:
        raise
    except Exception as exc:  # av.error.InvalidDataError, EOFError...: corrupt or not a video
        raise DataError(f"cannot decode video {p}: {exc}. The file is corrupt or not a video; "
                        "re-download or regenerate it (robustlab perturb).") from exc
    if not frames:
        raise DataError(f"video {p} holds no frames; re-download or regenerate it.")
    return np.stack(frames)


def _read_npy_sequence(p: Path) -> np.ndarray:
    arr = load_npy(p, what="sequence file")
    if arr.dtype != np.uint8 or arr.ndim != 4 or arr.shape[-1] != 3:
        raise DataError(f"{p} must hold uint8 frames (T, H, W, 3); got {arr.dtype} {arr.shape}.")
    return arr


def _read_png_sequence(p: Path) -> np.ndarray:
    files = _png_frames(p)
    if not files:
        raise DataError(f"frame folder {p} holds no numbered PNG frames (0000.png, 0001.png, ...).")
    frames = [read_image(f) for f in files]
    shapes = {f.shape for f in frames}
    if len(shapes) > 1:
        raise DataError(f"frames in {p} have different sizes {sorted(shapes)}; regenerate the sequence.")
    return np.stack(frames)


def check_frame_count(n: int, path: str | os.PathLike, *, expected: int | None = None,
                      stride: int | None = None) -> None:
    """Raise DataError naming ``path`` when a sequence of ``n`` frames has not ``expected`` frames or
    too few for ``stride``."""
    if expected is not None and n != expected:
        raise DataError(f"{path} has {n} frames, expected {expected}; the file is truncated, belongs to another "
                        "perturbation, or was made in the other setting (ImageNet-P and CIFAR-10-P sequences have "
                        "different lengths: pass -O setting=cifar or -O setting=imagenet, or -O frames=any). "
                        "Otherwise re-download or regenerate it.")
    if stride is not None and n <= stride:
        raise DataError(f"{path} has {n} frame(s), too few for stride {stride} (needs at least {stride + 1}); "
                        "use a smaller stride or regenerate the sequence.")


def read_sequence(path: str | os.PathLike, *, expected_frames: int | None = None,
                  stride: int | None = None) -> np.ndarray:
    """Read one sequence written in any of :data:`FORMATS` (or any video FFmpeg decodes).

    Parameters
    ----------
    path : path
        A video file, a ``.npy`` file or a folder of numbered PNG frames.
    expected_frames : int, optional
        Raise DataError when the sequence has another number of frames.
    stride : int, optional
        Raise DataError when the sequence has ``stride`` frames or fewer (no pair to compare).

    Returns
    -------
    np.ndarray
        uint8 (T, H, W, 3) RGB.
    """
    p = Path(path)
    if p.is_dir():
        frames = _read_png_sequence(p)
    elif p.suffix.lower() == ".npy":
        if not p.is_file():
            raise DataError(f"sequence file {p} does not exist; check the path.")
        frames = _read_npy_sequence(p)
    else:
        frames = decode_video(p)
    check_frame_count(len(frames), p, expected=expected_frames, stride=stride)
    return frames


# --- CIFAR-10-P --------------------------------------------------------------------------


def write_cifar_p(path: str | os.PathLike, sequences: np.ndarray) -> Path:
    """Write CIFAR-10-P sequences: one uint8 (N, T, H, W, 3) ``.npy`` array, atomically."""
    arr = np.asarray(sequences)
    if arr.dtype != np.uint8 or arr.ndim != 5 or arr.shape[-1] != 3:
        raise InputError(f"CIFAR-10-P arrays are uint8 (N, frames, H, W, 3); got {arr.dtype} {arr.shape}.")
    return atomic_write_npy(path, arr)


def read_cifar_p(path: str | os.PathLike, *, expected_frames: int | None = None, stride: int | None = None,
                 mmap: bool = True) -> np.ndarray:
    """Open a CIFAR-10-P array ``<perturbation>.npy`` of shape (N, T, 32, 32, 3), uint8.

    Memory-mapped by default (the released files are 10,000 sequences each). DataError naming
    the file when it is unreadable, has another shape, or another number of frames than
    ``expected_frames`` or too few for ``stride``.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"CIFAR-10-P file {p} does not exist; check the path.")
    arr = load_npy(p, what="CIFAR-10-P file", mmap_mode="r" if mmap else None)
    if arr.dtype != np.uint8 or arr.ndim != 5 or arr.shape[-1] != 3:
        raise DataError(f"{p} must be uint8 (sequences, frames, H, W, 3) as CIFAR-10-P; got {arr.dtype} {arr.shape}.")
    check_frame_count(arr.shape[1], p, expected=expected_frames, stride=stride)
    return arr
