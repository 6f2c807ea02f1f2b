"""Images in every encoding users have, and special files in data folders.

16-bit (and other deep) images decode to ``round(v * 255 / full scale)`` in every layout and
photometric interpretation PNG, PNM/PAM and TIFF allow; a FIFO or another special file in a
data folder is a problem to report, never a file to open (reading a FIFO blocks for ever).
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
import tifffile
from PIL import Image

from robustlab.data.fingerprint import files_fingerprint
from robustlab.data.images import read_image
from robustlab.errors import DataError

from .helpers import EVALUATE, MODELS, assert_error, image_folder, run_process
from .test_matrix_builders import command

H, W = 7, 9
RNG = np.random.default_rng(3)
GREY = RNG.integers(0, 65536, (H, W), dtype=np.uint16)
RGB = RNG.integers(0, 65536, (H, W, 3), dtype=np.uint16)
ALPHA = RNG.integers(0, 65536, (H, W), dtype=np.uint16)
CMYK = RNG.integers(0, 65536, (H, W, 4), dtype=np.uint16)


def eight(values: np.ndarray, maxval: int = 65535) -> np.ndarray:
    """The reference scaling, in floating point: round(v * 255 / maxval), halves up."""
    return np.floor(values.astype(np.float64) * 255 / maxval + 0.5).astype(np.uint8)


def grey3(grey: np.ndarray) -> np.ndarray:
    return np.repeat(grey[:, :, None], 3, axis=2)


def write_png(path: Path, samples: np.ndarray, colour_type: int) -> None:
    """A 16-bit PNG written byte by byte (grey 0, RGB 2, grey+alpha 4, RGBA 6)."""
    rows = samples.reshape(H, -1)
    raw = b"".join(b"\0" + row.astype(">u2").tobytes() for row in rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", W, H, 16, colour_type, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                     + chunk(b"IEND", b""))


def write_pnm(path: Path, magic: str, samples: np.ndarray, maxval: int) -> None:
    if magic in ("P2", "P3"):
        path.write_text(f"{magic}\n{W} {H}\n{maxval}\n" + " ".join(map(str, samples.ravel())) + "\n")
    else:
        path.write_bytes(f"{magic}\n{W} {H}\n{maxval}\n".encode() + samples.astype(">u2").tobytes())


def write_pam(path: Path, samples: np.ndarray, tupltype: str) -> None:
    depth = 1 if samples.ndim == 2 else samples.shape[2]
    path.write_bytes(f"P7\nWIDTH {W}\nHEIGHT {H}\nDEPTH {depth}\nMAXVAL 65535\nTUPLTYPE {tupltype}\nENDHDR\n".encode()
                     + samples.astype(">u2").tobytes())


def palette_case(path: Path) -> np.ndarray:
    index = RNG.integers(0, 300, (H, W), dtype=np.uint16)
    colormap = RNG.integers(0, 65536, (3, 65536), dtype=np.uint16)
    tifffile.imwrite(path, index, photometric="palette", colormap=colormap)
    return eight(np.moveaxis(colormap[:, index], 0, -1))


CASES = {
    "png grey": ("a.png", lambda p: write_png(p, GREY, 0), grey3(eight(GREY))),
    "png grey+alpha": ("a.png", lambda p: write_png(p, np.dstack([GREY, ALPHA]), 4), grey3(eight(GREY))),
    "png rgb": ("a.png", lambda p: write_png(p, RGB, 2), eight(RGB)),
    "png rgba": ("a.png", lambda p: write_png(p, np.dstack([RGB, ALPHA]), 6), eight(RGB)),
    "pgm binary": ("a.pgm", lambda p: write_pnm(p, "P5", GREY, 65535), grey3(eight(GREY))),
    "pgm ascii": ("a.pgm", lambda p: write_pnm(p, "P2", GREY, 65535), grey3(eight(GREY))),
    "pgm maxval 1023": ("a.pgm", lambda p: write_pnm(p, "P5", GREY >> 6, 1023), grey3(eight(GREY >> 6, 1023))),
    "ppm binary": ("a.ppm", lambda p: write_pnm(p, "P6", RGB, 65535), eight(RGB)),
    "ppm ascii": ("a.ppm", lambda p: write_pnm(p, "P3", RGB, 65535), eight(RGB)),
    "ppm maxval 4095": ("a.ppm", lambda p: write_pnm(p, "P6", RGB >> 4, 4095), eight(RGB >> 4, 4095)),
    "pam grey": ("a.pam", lambda p: write_pam(p, GREY, "GRAYSCALE"), grey3(eight(GREY))),
    "pam grey+alpha": ("a.pam", lambda p: write_pam(p, np.dstack([GREY, ALPHA]), "GRAYSCALE_ALPHA"),
                       grey3(eight(GREY))),
    "pam rgb": ("a.pam", lambda p: write_pam(p, RGB, "RGB"), eight(RGB)),
    "pam rgba": ("a.pam", lambda p: write_pam(p, np.dstack([RGB, ALPHA]), "RGB_ALPHA"), eight(RGB)),
    "tiff minisblack": ("a.tif", lambda p: tifffile.imwrite(p, GREY, photometric="minisblack"), grey3(eight(GREY))),
    "tiff miniswhite": ("a.tif", lambda p: tifffile.imwrite(p, GREY, photometric="miniswhite"),
                        grey3(eight(65535 - GREY.astype(np.int64)))),
    "tiff big-endian": ("a.tif", lambda p: tifffile.imwrite(p, GREY, photometric="minisblack", byteorder=">"),
                        grey3(eight(GREY))),
    "tiff deflate": ("a.tif", lambda p: tifffile.imwrite(p, RGB, photometric="rgb", compression="zlib"), eight(RGB)),
    "tiff rgb": ("a.tif", lambda p: tifffile.imwrite(p, RGB, photometric="rgb"), eight(RGB)),
    "tiff rgb planar": ("a.tif", lambda p: tifffile.imwrite(p, np.moveaxis(RGB, -1, 0), photometric="rgb",
                                                            planarconfig="separate"), eight(RGB)),
    "tiff rgb tiled": ("a.tif", lambda p: tifffile.imwrite(p, RGB, photometric="rgb", tile=(16, 16)), eight(RGB)),
    "tiff rgba": ("a.tif", lambda p: tifffile.imwrite(p, np.dstack([RGB, ALPHA]), photometric="rgb",
                                                      extrasamples=["unassalpha"]), eight(RGB)),
    "tiff grey+alpha": ("a.tif", lambda p: tifffile.imwrite(p, np.dstack([GREY, ALPHA]), photometric="minisblack",
                                                            extrasamples=["unassalpha"]), grey3(eight(GREY))),
    "tiff palette": ("a.tif", palette_case, None),
    "tiff cmyk": ("a.tif", lambda p: tifffile.imwrite(p, CMYK, photometric="separated"),
                  np.asarray(Image.fromarray(eight(CMYK), "CMYK").convert("RGB"))),
    "tiff lzw (libtiff via OpenCV)": ("a.tif", lambda p: cv2.imwrite(str(p), RGB[..., ::-1]), eight(RGB)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_deep_images_decode_to_the_right_8bit_values(tmp_path, name):
    """MinIsWhite was not inverted; planar RGB, palette and grey+alpha TIFFs, 16-bit CMYK and PAM
    were unreadable or wrong (fails on the old code)."""
    filename, write, expected = CASES[name]
    path = tmp_path / filename
    made = write(path)
    expected = made if expected is None else expected
    np.testing.assert_array_equal(read_image(path), expected)


@pytest.mark.parametrize("dtype, message", [(np.float32, "floating-point"), (np.int16, "integer samples (signed)"),
                                            (np.uint32, "32-bit integer")])
def test_deep_tiffs_without_an_8bit_scale_are_refused(tmp_path, dtype, message):
    tifffile.imwrite(tmp_path / "a.tif", GREY.astype(dtype))
    with pytest.raises(DataError, match=re.escape(message)):
        read_image(tmp_path / "a.tif")


# --- special files -----------------------------------------------------------------------------------


def fifo_folder(root: Path) -> Path:
    data = image_folder(root, per_class=2)
    os.mkfifo(data / "cat" / "pipe.png")
    return data


@pytest.mark.parametrize("builder", ["corrupt", "perturb"])
def test_a_fifo_is_a_reported_problem_not_a_hang(builder, tmp_path):
    """corrupt and perturb hung for ever on a FIFO named like an image (fails on the old code)."""
    data = fifo_folder(tmp_path / "data")
    result = run_process(*command(builder, data, tmp_path / "out"), timeout=120)
    assert "cat/pipe.png" in result.out and "FIFO" in result.out, result.out + result.err


@pytest.mark.parametrize("fingerprint", ["stat", "content"])
def test_evaluate_skips_a_fifo_as_a_problem(tmp_path, fingerprint):
    data = fifo_folder(tmp_path / "data")
    result = run_process(*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", tmp_path / "store", "-c",
                         "fog", "-s", "1", "--fingerprint", fingerprint, "--json", timeout=120)
    assert result.code == 0, result.err
    assert "cat/pipe.png" in result.out and "FIFO" in result.out


def test_fingerprints_never_open_a_special_file(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a").write_bytes(b"x")
    for mode in ("stat", "content"):
        assert files_fingerprint([("pipe", tmp_path / "pipe"), ("a", tmp_path / "a")], mode).startswith(mode)


def test_video_sample_and_finetune_do_not_hang_on_a_fifo(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    os.mkfifo(videos / "clip.mp4")
    assert_error(run_process("video", "sample", videos, tmp_path / "out", timeout=120), "FIFO")
    data = fifo_folder(tmp_path / "data")
    assert_error(run_process("finetune", "--model", f"python:{MODELS}:make_mean_colour", "--data", data, "--out",
                             tmp_path / "ft", "--workers", "0", "--device", "cpu", "--no-progress", timeout=120),
                 "pipe.png", "FIFO")
