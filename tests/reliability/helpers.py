"""Drive the ``robustlab`` command line as a user does, and build the bad inputs of the matrix.

``run`` calls the console-script entry point (:func:`robustlab.cli.main`) in this process
(fast); ``run_process`` starts ``python -m robustlab.cli`` in a fresh process, for the cases
that need one: a file-size limit (a full disk), permissions that root would ignore, SIGKILL.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"
MODELS = Path(__file__).with_name("models.py")


def sigint_as_a_terminal_sends_it() -> None:
    """``preexec_fn`` of a child a test will interrupt with SIGINT: restore SIGINT's default action.

    A shell starts background jobs (``make test &``, a CI runner's detached step) with SIGINT
    ignored, children inherit that, and Python then never raises KeyboardInterrupt: the Ctrl-C tests
    would see the command finish with exit 0. A terminal's Ctrl-C reaches a process that has the
    default action, which is what these tests mean to test.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
#: Arguments every evaluate call of the matrix shares: a tiny 2-class model, no workers.
EVALUATE = ["evaluate", "--model", f"python:{MODELS}:make_two_class", "--resize", "32", "--crop", "32",
            "--workers", "0", "--no-progress"]


@dataclass
class Result:
    """What a command did: its exit code and what it printed."""

    code: int
    out: str
    err: str


def run(*argv: str | os.PathLike) -> Result:
    """Run ``robustlab ARGV`` through :func:`robustlab.cli.main` in this process."""
    out, err = io.StringIO(), io.StringIO()
    saved_argv = sys.argv
    sys.argv = ["robustlab", *map(str, argv)]  # as the console script sees it
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved_argv
    return Result(code, out.getvalue(), err.getvalue())


def drop_permission_override() -> list[str]:
    """The command prefix that makes root obey file permissions (skips the test when impossible).

    root ignores read and write permissions (CAP_DAC_OVERRIDE); ``setpriv`` drops that
    capability for the command it runs. Other users need nothing.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, which ignores file permissions, and setpriv (util-linux) is not there "
                    "to drop that privilege")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def _limit_file_size(max_bytes: int):
    def limit() -> None:
        # Writing past the limit then fails with EFBIG (the process would be killed by SIGXFSZ
        # otherwise): what a full disk looks like to the program, with no disk filled.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))
    return limit


def run_process(*argv: str | os.PathLike, max_file_bytes: int | None = None, obey_permissions: bool = False,
                timeout: float = 300, env: dict | None = None) -> Result:
    """Run ``python -m robustlab.cli ARGV`` in a new process (with a file-size limit, or
    obeying file permissions even as root)."""
    prefix = drop_permission_override() if obey_permissions else []
    cmd = [*prefix, sys.executable, "-m", "robustlab.cli", *map(str, argv)]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
                   **(env or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=environment,
                          preexec_fn=None if max_file_bytes is None else _limit_file_size(max_file_bytes))
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_error(result: Result, *fragments: str, code: int = 1) -> str:
    """The command failed with ``code`` and one line ``error: ...`` holding ``fragments``; no traceback.

    The error is the last line on stderr and the only one starting ``error:``; progress lines a
    command printed before it (``video sample`` lists each video) may precede it.
    """
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert result.code == code, f"exit {result.code}, expected {code}\nstdout: {result.out}\nstderr: {result.err}"
    assert "Traceback" not in result.err, result.err
    errors = [line for line in lines if line.startswith("error")]
    assert len(errors) == 1 and lines[-1] == errors[0] and errors[0].startswith("error: "), result.err
    for fragment in fragments:
        assert fragment in errors[0], f"{fragment!r} not in {errors[0]!r}"
    return errors[0]


def assert_ok(result: Result) -> None:
    assert result.code == 0, f"exit {result.code}\nstdout: {result.out}\nstderr: {result.err}"
    assert "Traceback" not in result.err, result.err


def files_under(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes); {} when ``root`` does not exist."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_no_temporaries(root: Path) -> None:
    """No half-written file is left: robustlab's temporaries are hidden ``*.tmp`` files/folders."""
    left = [p for p in root.rglob("*.tmp")] if root.exists() else []
    assert not left, f"temporary files left behind: {left}"


def assert_complete_images(root: Path) -> None:
    """Every non-hidden image file under ``root`` decodes completely (nothing truncated)."""
    for path in root.rglob("*"):
        if path.is_file() and path.suffix.lower() in (".png", ".jpg", ".jpeg") and not path.name.startswith("."):
            with Image.open(path) as img:
                img.load()


# --- inputs --------------------------------------------------------------------------------------


def picture(size: int = 32, seed: int = 0, dominant: int | None = None) -> np.ndarray:
    """A deterministic uint8 (size, size, 3) image with smooth structure (JPEG-friendly)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size]
    base = rng.uniform(40, 200, 3)
    if dominant is not None:
        base[dominant] += 50
    img = base + 30 * np.sin(x[..., None] / 3.0 + rng.uniform(0, 6, 3)) + 20 * np.cos(y[..., None] / 4.0)
    return np.clip(img, 0, 255).astype(np.uint8)


def image_folder(root: Path, classes=("cat", "dog"), per_class: int = 2, size: int = 32, noise: float = 0) -> Path:
    """``root/<class>/<k>.png`` images whose dominant colour channel is their class index
    (``noise``: the standard deviation of added noise, which makes the files large)."""
    for label, name in enumerate(classes):
        for k in range(per_class):
            path = root / name / f"{k}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            img = picture(size, seed=10 * label + k, dominant=label).astype(np.float64)
            img += np.random.default_rng(k).normal(0, noise, img.shape) if noise else 0
            Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(path)
    return root


def write_truncated_jpeg(path: Path, size: int = 64) -> Path:
    buf = io.BytesIO()
    Image.fromarray(picture(size, seed=7)).save(buf, format="JPEG", quality=90)
    data = buf.getvalue()
    path.write_bytes(data[: len(data) * 6 // 10])
    return path


def sixteen_bit_grey(size: int = 32) -> np.ndarray:
    """uint16 (size, size) grey levels spanning 0..65535 (mid-grey mostly: clipping would show)."""
    y, x = np.mgrid[0:size, 0:size]
    return ((x * 1000 + y * 700) % 65536).astype(np.uint16)


def write_16bit_png(path: Path, size: int = 32) -> np.ndarray:
    """A 16-bit grey PNG; returns the uint8 RGB image it stands for (``round(v / 257)``)."""
    grey = sixteen_bit_grey(size)
    Image.fromarray(grey).save(path)
    eight = ((grey.astype(np.uint32) + 128) // 257).astype(np.uint8)
    return np.repeat(eight[:, :, None], 3, axis=2)


def write_cmyk_jpeg(path: Path, size: int = 32) -> np.ndarray:
    """A CMYK JPEG; returns the RGB image robustlab should read from it (Pillow's conversion)."""
    Image.fromarray(picture(size, seed=3)).convert("CMYK").save(path, quality=95)
    with Image.open(path) as img:
        return np.asarray(img.convert("RGB"))


def write_png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG whose header claims ``width`` x ``height`` pixels (a decompression bomb's
    signature) without the pixel data: readers must refuse it from the header alone."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
                     + chunk(b"IEND", b""))
    return path
