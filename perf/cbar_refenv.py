"""The reference of ImageNet-C-bar / CIFAR-10-C-bar (facebookresearch/augmentation-corruption),
run in its own pinned environment as an oracle.

The reference code is never copied into this repository: at run time it is checked out from a
git clone (by default the mirror ``/work/.mirror/facebookresearch+augmentation-corruption/repo``;
set ``ROBUSTLAB_CBAR_REFERENCE`` to a clone or a bare git directory of
https://github.com/facebookresearch/augmentation-corruption) into a temporary folder, and
``imagenet_c_bar/corrupt.py`` is imported from there inside the environment.

The environment (``perf/.refenv-cbar``, gitignored): the reference pins (its
``imagenet_c_bar/requirements.txt``) are numpy 1.22, scipy 1.5.2 and scikit-image 0.16.2,
which have no wheels for Python 3.11, the only interpreter the harnesses build from. The
environment holds the nearest releases that install there, with the same behaviour the
kernels depend on: NumPy 1.x value-based casting (a float64 scalar times a float32 array stays
float32), ``np.int`` still present, ``scipy.fftpack`` and ``scipy.ndimage`` splines, and
``skimage.draw.line_aa``. OpenCV, Wand and simplejson, also pinned there, are not used by
``corrupt.py`` and are left out.

Python API::

    from cbar_refenv import ensure_cbar_env, run_cbar_reference, CbarJob
    out = run_cbar_reference(images, [CbarJob(0, "ripple", 5.5, seed=3)])   # [(uint8 HxWx3, seconds)]
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from refenv import BENCH_DIR, build_pinned_env, reference_env

#: Where the environment lives (override with ROBUSTLAB_CBAR_REFENV).
CBAR_ENV_DIR = Path(os.environ.get("ROBUSTLAB_CBAR_REFENV", BENCH_DIR / ".refenv-cbar"))
#: A clone (or bare git directory) of facebookresearch/augmentation-corruption.
DEFAULT_REFERENCE = "/work/.mirror/facebookresearch+augmentation-corruption/repo"
REFERENCE_URL = "https://github.com/facebookresearch/augmentation-corruption"
#: The commit the parity was established against (the mirror's HEAD when it was written).
REFERENCE_COMMIT = "ba4d5a5"
#: The reference pins numpy==1.22, scipy==1.5.2, scikit-image==0.16.2, pillow>=8.2.0; these are the
#: nearest releases with Python 3.11 wheels, and the dependencies of scikit-image, pinned exactly.
REQUIREMENTS = (
    "numpy==1.23.5",
    "scipy==1.9.3",
    "scikit-image==0.20.0",
    "Pillow==10.4.0",
    "imageio==2.38.1",
    "lazy-loader==0.6",
    "networkx==3.6.1",
    "packaging==26.4",
    "PyWavelets==1.8.0",
    "tifffile==2026.3.3",
)
#: Bump when the recipe above changes.
RECIPE_VERSION = "cbar-1"

# Run inside the environment: import the checked-out corrupt.py, run each job after
# np.random.seed(seed), save outputs and per-call wall times.
_WORKER = r'''
import json, sys, time, warnings
warnings.filterwarnings("ignore")
ref_dir, src, jobs_path, dst, repeat, clock = sys.argv[1:7]
timer = time.process_time if clock == "cpu" else time.perf_counter
sys.path.insert(0, ref_dir)
import numpy as np
import transform_finder
with np.load(src) as data:
    images = [data[f"img{i}"] for i in range(len(data.files))]
jobs = json.load(open(jobs_path))
outs, secs = {}, []
for k, (i, name, param, seed) in enumerate(jobs):
    image = images[i]
    best = float("inf")
    for _ in range(int(repeat)):
        np.random.seed(seed)
        t0 = timer()
        transform = transform_finder.transform_dict[name](severity=param, im_size=image.shape[0])
        out = transform(image)
        best = min(best, timer() - t0)
    secs.append(best)
    outs[f"out{k}"] = np.asarray(out)
np.savez(dst, seconds=np.asarray(secs), **outs)
'''


def ensure_cbar_env(*, rebuild: bool = False, verbose: bool = True) -> Path:
    """Build the C-bar reference environment if needed (once, a minute or two) and return its Python."""
    check = ("import numpy, scipy.fftpack, scipy.ndimage, skimage.draw, skimage.color, PIL; "
             "assert hasattr(numpy, 'int'); print('ok')")
    return build_pinned_env(CBAR_ENV_DIR, REQUIREMENTS, recipe=RECIPE_VERSION, what="C-bar reference environment",
                            check_code=check, rebuild=rebuild, verbose=verbose)


def reference_source() -> str:
    """The clone or git directory of the reference named by ROBUSTLAB_CBAR_REFERENCE (or the default mirror).

    Raises FileNotFoundError with the fix when there is none.
    """
    source = os.environ.get("ROBUSTLAB_CBAR_REFERENCE", DEFAULT_REFERENCE)
    if not Path(source).exists():
        raise FileNotFoundError(f"the C-bar reference code is not at {source}: clone {REFERENCE_URL} and set "
                                "ROBUSTLAB_CBAR_REFERENCE to the clone.")
    return source


def checkout_reference(dst: Path, source: str | None = None) -> Path:
    """Check out ``imagenet_c_bar/`` of the reference into ``dst``; return that folder.

    ``source``: a working clone (its files are used as they are) or a git directory, whose
    ``HEAD`` is exported with ``git archive`` (the git directory itself is only read).
    """
    source = source or reference_source()
    src = Path(source)
    if (src / "imagenet_c_bar" / "corrupt.py").is_file():
        return src / "imagenet_c_bar"
    dst.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", f"--git-dir={src}", "archive", "--format=tar", "HEAD", "imagenet_c_bar"],
                             check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(dst)], input=archive.stdout, check=True, capture_output=True)
    return dst / "imagenet_c_bar"


@dataclass(frozen=True)
class CbarJob:
    """One reference call: ``np.random.seed(seed)``, then ``transform_dict[name](severity=param,
    im_size=side of images[image])(images[image])``."""

    image: int
    name: str
    param: float
    seed: int = 0


def run_cbar_reference(images: Sequence[np.ndarray], jobs: Iterable[CbarJob], *, repeat: int = 1,
                       python: Path | None = None, source: str | None = None,
                       clock: str = "wall") -> list[tuple[np.ndarray, float]]:
    """Run ``jobs`` in the C-bar reference environment; one (uint8 output, seconds) per job.

    ``images`` must be square uint8 SxSx3 (the reference knows one size, ``im_size``). The
    seconds are the time of building the transform and calling it (the minimum over ``repeat``
    calls, each after re-seeding), in one single-threaded subprocess; ``clock``: ``wall``
    (perf_counter) or ``cpu`` (process_time).
    """
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu'; got {clock!r}")
    jobs = list(jobs)
    python = python or ensure_cbar_env()
    with tempfile.TemporaryDirectory(prefix="robustlab-cbar-ref-") as tmp:
        t = Path(tmp)
        ref_dir = checkout_reference(t / "reference", source)
        np.savez(t / "in.npz", **{f"img{i}": np.asarray(img) for i, img in enumerate(images)})
        (t / "jobs.json").write_text(json.dumps([[j.image, j.name, float(j.param), int(j.seed)] for j in jobs]))
        (t / "worker.py").write_text(_WORKER)
        proc = subprocess.run([str(python), str(t / "worker.py"), str(ref_dir), str(t / "in.npz"),
                               str(t / "jobs.json"), str(t / "out.npz"), str(int(repeat)), clock],
                              env=reference_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the C-bar reference run failed:\n{proc.stderr[-4000:]}")
        with np.load(t / "out.npz") as data:
            secs = data["seconds"]
            return [(data[f"out{k}"], float(secs[k])) for k in range(len(jobs))]
