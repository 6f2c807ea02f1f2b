"""A pinned virtual environment holding the reference corruption code, and a way to run it.

imagecorruptions 1.1.2 no longer imports on a current NumPy / scikit-image stack (it needs
``pkg_resources``, passes ``multichannel=True`` to ``skimage.filters.gaussian`` and uses
``np.float_``). This module builds, once, ``perf/.refenv`` (gitignored) with the pinned
stack it was written for, and runs it as an oracle in a subprocess, exchanging ``.npz`` files.

Python API (used by the parity and speed harnesses)::

    from refenv import ensure_refenv, run_reference, run_reference_jobs, ReferenceJob

    python = ensure_refenv()                    # builds on first use (a few minutes), then instant
    out = run_reference(images, ["fog", "glass_blur"], [1, 3], seed=0)
    out.images[(0, "fog", 3)]                   # uint8 HxWx3, imagecorruptions after np.random.seed(0)
    out.seconds[(0, "fog", 3)]                  # wall time of that one call inside the reference env
    run_reference(images, ["fog"], [3], seed=0, repeat=3)   # seconds = min of 3 calls

Command line::

    python perf/refenv.py build           # build (or check) the environment
    python perf/refenv.py info            # print the pinned versions inside it
    python perf/refenv.py rebuild         # delete and build again

Optional: :func:`run_imagemagick_motion_blur` runs hendrycks' ImageMagick motion blur (Wand) in
the same environment, for the statistical parity of the hendrycks profiles' motion_blur.

The environment: Python 3.11, imagecorruptions==1.1.2 (installed with ``--no-deps``),
numpy==1.26.*, scikit-image==0.20.*, scipy==1.12.*, setuptools<81, Pillow and
opencv-python-headless<4.12 (the last line of OpenCV wheels built against NumPy 1.x; installing
imagecorruptions' declared ``opencv-python`` as well would put two cv2 builds in one env). A
``sitecustomize`` shim maps ``skimage.filters.gaussian(..., multichannel=...)`` to
``channel_axis`` and restores ``np.float_`` where missing, so ``import imagecorruptions`` works
unchanged there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
#: Where the reference environment lives (override with ROBUSTLAB_REFENV).
REFENV_DIR = Path(os.environ.get("ROBUSTLAB_REFENV", BENCH_DIR / ".refenv"))
#: The interpreter the environment is built from (override with ROBUSTLAB_REFENV_PYTHON).
BASE_PYTHON = os.environ.get("ROBUSTLAB_REFENV_PYTHON", "python3.11")

#: The reference stack, pinned exactly (the golden files under tests/fixtures/corruptions were made
#: with these), including the dependencies of scikit-image.
REQUIREMENTS = (
    "numpy==1.26.4",
    "scipy==1.12.0",
    "scikit-image==0.20.0",
    "setuptools==65.5.0",
    "Pillow==10.4.0",
    "opencv-python-headless==4.11.0.86",
    "imageio==2.38.1",
    "lazy-loader==0.6",
    "networkx==3.6.1",
    "packaging==26.4",
    "PyWavelets==1.9.0",
    "tifffile==2026.3.3",
)
#: NumPy's float64 exp on CPUs with AVX-512F is its own vectorised approximation, 1 ulp off the
#: correctly rounded value for some arguments (motion blur's Gaussian taps among them), while other
#: CPUs call the C library: the reference itself gives different pixels on different machines
#: (6 of the 60 small-image golden cells on an AVX-512 EPYC). The reference runs with NumPy's
#: AVX-512 dispatch off, so it takes the C library's correctly rounded path on every machine, the
#: path robustlab.corruptions.exactmath reproduces.
REFERENCE_ENV = {
    "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR",
}
REFERENCE_PACKAGE = "imagecorruptions==1.1.2"
#: Bump when the recipe above changes: an environment built from an older recipe is rebuilt.
RECIPE_VERSION = "2"
_STAMP = ".robustlab-refenv.json"

# Installed as sitecustomize.py in the environment: adapt the newer scikit-image / NumPy API to
# what imagecorruptions 1.1.2 calls, at import time of the module concerned (a post-import hook,
# so an interpreter that never imports skimage pays nothing).
_SHIM = r'''
"""robustlab reference-env shim: lets imagecorruptions 1.1.2 run on scikit-image >= 0.19."""
import functools
import importlib.abc
import sys

import numpy as _np

if not hasattr(_np, "float_"):
    _np.float_ = _np.float64


def _patch_gaussian(module):
    original = getattr(module, "gaussian", None)
    if original is None or getattr(original, "_robustlab_shim", False):
        return
    @functools.wraps(original)
    def gaussian(*args, multichannel=None, **kwargs):
        if multichannel is not None and "channel_axis" not in kwargs:
            kwargs["channel_axis"] = -1 if multichannel else None
        return original(*args, **kwargs)
    gaussian._robustlab_shim = True
    module.gaussian = gaussian


class _AfterImport(importlib.abc.MetaPathFinder):
    """Patch skimage.filters right after it is first imported."""
    def find_spec(self, fullname, path, target=None):
        if fullname != "skimage.filters":
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)
            def exec_module(self, module):
                loader.exec_module(module)
                _patch_gaussian(module)
        spec.loader = _Loader()
        return spec


if "skimage.filters" in sys.modules:
    _patch_gaussian(sys.modules["skimage.filters"])
else:
    sys.meta_path.insert(0, _AfterImport())
'''

# Run inside the environment: read images + jobs, run each job after np.random.seed(seed),
# save outputs and per-call wall times.
_WORKER = r'''
import json, sys, time, warnings
import cv2
import numpy as np
warnings.filterwarnings("ignore")
cv2.setNumThreads(1)  # one core, like the OpenMP/BLAS limits in the environment
from imagecorruptions import corrupt

src, jobs_path, dst, repeat, clock = sys.argv[1:6]
timer = time.process_time if clock == "cpu" else time.perf_counter
with np.load(src) as data:
    images = [data[f"img{i}"] for i in range(len(data.files))]
jobs = json.load(open(jobs_path))
outs, secs = {}, []
for k, (i, name, severity, seed) in enumerate(jobs):
    best = float("inf")
    for _ in range(int(repeat)):
        np.random.seed(seed)
        t0 = timer()
        out = corrupt(images[i], corruption_name=name, severity=severity)
        best = min(best, timer() - t0)
    secs.append(best)
    outs[f"out{k}"] = np.asarray(out)
np.savez(dst, seconds=np.asarray(secs), **outs)
'''


def refenv_python(root: Path = REFENV_DIR) -> Path:
    """Path of the environment's interpreter (it may not exist yet)."""
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _stamp_ok(root: Path, recipe: str = RECIPE_VERSION) -> bool:
    try:
        stamp = json.loads((root / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp.get("recipe") == recipe and refenv_python(root).exists()


def _pip(python: Path, *args: str) -> None:
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
    subprocess.run(cmd, check=True)


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def build_pinned_env(root: Path, requirements: Sequence[str], *, recipe: str, what: str,
                     extra_installs: Sequence[Sequence[str]] = (), shim: str | None = None,
                     check_code: str | None = None, rebuild: bool = False, verbose: bool = True) -> Path:
    """Build (once) a virtual environment at ``root`` holding exactly ``requirements``; return its Python.

    ``extra_installs``: further ``pip install`` argument lists run after the requirements (e.g.
    ``["--no-deps", "pkg==1.0"]``); ``shim``: the text of a ``sitecustomize.py`` put into the
    environment; ``check_code``: Python run inside it at the end, which must exit 0. Idempotent:
    a finished build leaves a stamp holding ``recipe``; a later call with the same recipe returns at
    once, another recipe rebuilds. The build happens in a temporary sibling directory, renamed into
    place when complete, so an interrupted build is redone from scratch.

    Raises
    ------
    RuntimeError
        When the base interpreter (``python3.11``) is missing or an install step fails, naming
        the step and the fix.
    """
    root = Path(root)
    if rebuild and root.exists():
        shutil.rmtree(root)
    if _stamp_ok(root, recipe):
        return refenv_python(root)
    base = shutil.which(BASE_PYTHON) or (BASE_PYTHON if Path(BASE_PYTHON).exists() else None)
    if base is None:
        raise RuntimeError(f"cannot build the {what}: {BASE_PYTHON!r} not found. Install Python 3.11 "
                           "or point ROBUSTLAB_REFENV_PYTHON at a 3.11 interpreter.")
    tmp = root.with_name(root.name + ".building")
    if tmp.exists():
        shutil.rmtree(tmp)
    if verbose:
        print(f"building the {what} in {root} (once; a few minutes)...", file=sys.stderr)
    # venv module of the *base* interpreter, so the env gets Python 3.11 whatever runs this file.
    subprocess.run([base, "-m", "venv", str(tmp)], check=True)
    py = refenv_python(tmp)
    try:
        _pip(py, *requirements)
        for args in extra_installs:
            _pip(py, *args)
        if shim is not None:
            (_site_packages(py) / "sitecustomize.py").write_text(shim)
        if check_code is not None:
            subprocess.run([str(py), "-c", check_code], check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"building the {what} failed at {exc.cmd!r}: {exc.stderr or ''}"
                           "Check network access to PyPI, or delete the directory and retry.") from exc
    (tmp / _STAMP).write_text(json.dumps({"recipe": recipe, "requirements": list(requirements),
                                          "extra": [list(a) for a in extra_installs]}))
    if root.exists():
        shutil.rmtree(root)
    tmp.rename(root)
    # venv scripts hard-code their directory; the interpreter itself is relocatable for `-m`/-c use.
    return refenv_python(root)


def ensure_refenv(*, rebuild: bool = False, root: Path = REFENV_DIR, verbose: bool = True) -> Path:
    """Build the reference environment if needed and return its Python interpreter.

    Idempotent (see :func:`build_pinned_env`): later calls return at once.

    Raises
    ------
    RuntimeError
        When the base interpreter (``python3.11``) is missing or an install step fails, naming
        the step and the fix.
    """
    check = ("import imagecorruptions, numpy, skimage, scipy, cv2, PIL; "
             "import numpy as np; from imagecorruptions import corrupt; "
             "x = (np.arange(32*32*3) % 251).astype(np.uint8).reshape(32, 32, 3); "
             "corrupt(x, corruption_name='gaussian_blur', severity=1); "
             "corrupt(x, corruption_name='glass_blur', severity=1); "
             "print('ok')")
    return build_pinned_env(root, REQUIREMENTS, recipe=RECIPE_VERSION, what="reference environment",
                            extra_installs=[["--no-deps", REFERENCE_PACKAGE]], shim=_SHIM, check_code=check,
                            rebuild=rebuild, verbose=verbose)


def reference_env() -> dict[str, str]:
    """The environment of a process of the reference env: one thread, no user site or PYTHONPATH,
    NumPy's AVX-512 dispatch off (:data:`REFERENCE_ENV`)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONNOUSERSITE": "1", **REFERENCE_ENV}
    env.pop("PYTHONPATH", None)
    return env


@dataclass(frozen=True)
class ReferenceJob:
    """One reference call: ``np.random.seed(seed)`` then ``corrupt(images[image], name, severity)``."""

    image: int
    name: str
    severity: int
    seed: int = 0


@dataclass
class ReferenceResult:
    """Outputs (uint8 HxWx3) and wall seconds per call, keyed by (image index, name, severity)."""

    images: dict[tuple, np.ndarray] = field(default_factory=dict)
    seconds: dict[tuple, float] = field(default_factory=dict)


def run_reference_jobs(images: Sequence[np.ndarray], jobs: Iterable[ReferenceJob], *,
                       python: Path | None = None, repeat: int = 1,
                       clock: str = "wall") -> list[tuple[np.ndarray, float]]:
    """Run ``jobs`` in the reference environment; one (output, seconds) per job, in order.

    ``images`` are uint8 arrays (HxW or HxWx3) passed to imagecorruptions unchanged. The
    reference runs in one subprocess, one job after another on one core; the seconds are the
    time of the ``corrupt`` call alone (no process start, no file exchange), the minimum over
    ``repeat`` calls (each after re-seeding; the output is the last call's). ``clock``:
    ``wall`` (perf_counter) or ``cpu`` (process_time: the process's CPU seconds, steadier on a
    busy machine; the reference is single-threaded).
    """
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu'; got {clock!r}")
    jobs = list(jobs)
    python = python or ensure_refenv()
    with tempfile.TemporaryDirectory(prefix="robustlab-ref-") as tmp:
        t = Path(tmp)
        np.savez(t / "in.npz", **{f"img{i}": np.asarray(img) for i, img in enumerate(images)})
        (t / "jobs.json").write_text(json.dumps([[j.image, j.name, int(j.severity), int(j.seed)] for j in jobs]))
        (t / "worker.py").write_text(_WORKER)
        env = reference_env()
        proc = subprocess.run([str(python), str(t / "worker.py"), str(t / "in.npz"), str(t / "jobs.json"),
                               str(t / "out.npz"), str(int(repeat)), clock], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the reference run failed:\n{proc.stderr[-4000:]}")
        with np.load(t / "out.npz") as data:
            secs = data["seconds"]
            return [(data[f"out{k}"], float(secs[k])) for k in range(len(jobs))]


def run_reference(images: Sequence[np.ndarray], names: Sequence[str], severities: Sequence[int] = (1, 2, 3, 4, 5),
                  seed: int = 0, *, python: Path | None = None, repeat: int = 1,
                  clock: str = "wall") -> ReferenceResult:
    """imagecorruptions 1.1.2 on every (image, name, severity), each after ``np.random.seed(seed)``.

    Returns a :class:`ReferenceResult` keyed by ``(image index, name, severity)``; seconds are
    the minimum over ``repeat`` calls.
    """
    keys = [(i, n, s) for i in range(len(images)) for n in names for s in severities]
    results = run_reference_jobs(images, [ReferenceJob(i, n, s, seed) for i, n, s in keys], python=python,
                                 repeat=repeat, clock=clock)
    out = ReferenceResult()
    for key, (img, sec) in zip(keys, results):
        out.images[key] = img
        out.seconds[key] = sec
    return out


# --------------------------------------------------------------------------- ImageMagick (optional)

#: hendrycks' make_*_c.py motion-blur their images with ImageMagick's MotionBlurImage through
#: Wand. Optional: needs the system library (Debian: ``apt-get install libmagickwand-dev``);
#: Wand itself is pip-installed into the reference env on first use.
WAND_PACKAGE = "Wand==0.6.*"

_WAND_WORKER = r'''
import ctypes, sys
from io import BytesIO
import cv2, numpy as np
from PIL import Image
from wand.image import Image as WandImage
from wand.api import library
library.MagickMotionBlurImage.argtypes = (ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_double)
src, dst = sys.argv[1:3]
with np.load(src) as data:
    images = [data[f"img{i}"] for i in range(len(data.files) - 1)]
    jobs = data["jobs"]
outs = {}
for k, (i, radius, sigma, angle) in enumerate(jobs):
    buf = BytesIO()
    Image.fromarray(images[int(i)]).save(buf, format="PNG")     # as hendrycks: PNG -> Wand
    with WandImage(blob=buf.getvalue()) as im:
        library.MagickMotionBlurImage(im.wand, float(radius), float(sigma), float(angle))
        blob = im.make_blob()
    out = cv2.imdecode(np.frombuffer(blob, np.uint8), cv2.IMREAD_UNCHANGED)
    outs[f"out{k}"] = out[..., [2, 1, 0]] if out.ndim == 3 else np.stack([out] * 3, axis=-1)
np.savez(dst, **outs)
'''


def ensure_wand(python: Path | None = None) -> Path:
    """Install Wand into the reference env if missing; RuntimeError when ImageMagick is absent."""
    python = python or ensure_refenv()
    probe = [str(python), "-c", "import wand.image"]
    if subprocess.run(probe, capture_output=True).returncode != 0:
        _pip(python, WAND_PACKAGE)
        proc = subprocess.run(probe, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("Wand cannot load ImageMagick's MagickWand library; install it "
                               f"(Debian: apt-get install libmagickwand-dev). {proc.stderr.strip()[-300:]}")
    return python


def run_imagemagick_motion_blur(images: Sequence[np.ndarray], jobs: Iterable[tuple[int, float, float, float]],
                                *, python: Path | None = None) -> list[np.ndarray]:
    """ImageMagick's motion blur as hendrycks applies it, one uint8 HxWx3 output per job.

    ``jobs`` are ``(image index, radius, sigma, angle)``; the image goes through PNG, Wand's
    MagickMotionBlurImage and back through OpenCV, exactly as ``make_imagenet_c.py`` does.
    """
    jobs = np.asarray(list(jobs), dtype=np.float64).reshape(-1, 4)
    python = ensure_wand(python)
    with tempfile.TemporaryDirectory(prefix="robustlab-im-") as tmp:
        t = Path(tmp)
        np.savez(t / "in.npz", jobs=jobs, **{f"img{i}": np.asarray(img) for i, img in enumerate(images)})
        (t / "worker.py").write_text(_WAND_WORKER)
        proc = subprocess.run([str(python), str(t / "worker.py"), str(t / "in.npz"), str(t / "out.npz")],
                              env=reference_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the ImageMagick run failed:\n{proc.stderr[-4000:]}")
        with np.load(t / "out.npz") as data:
            return [data[f"out{k}"] for k in range(len(jobs))]


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["build", "rebuild", "info"], nargs="?", default="build")
    args = parser.parse_args(argv)
    python = ensure_refenv(rebuild=args.action == "rebuild")
    print(python)
    if args.action == "info":
        code = ("import sys, numpy, scipy, skimage, cv2, PIL; from importlib.metadata import version; "
                "print('python', sys.version.split()[0]); "
                "[print(p, version(p)) for p in ('imagecorruptions', 'numpy', 'scipy', 'scikit-image', "
                "'opencv-python-headless', 'Pillow', 'setuptools')]")
        subprocess.run([str(python), "-c", code], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
