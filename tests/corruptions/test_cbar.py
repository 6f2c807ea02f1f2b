"""ImageNet-C-bar / CIFAR-10-C-bar corruptions: pixels of the reference, registry, profiles, sizes.

``tests/fixtures/corruptions/cbar_golden.json`` records the reference's outputs
(facebookresearch/augmentation-corruption, ``imagenet_c_bar/corrupt.py``, after
``np.random.seed(7)``) for a 32 px image under the CIFAR-10-C-bar table and a 48 px image under
the ImageNet-C-bar table, every corruption of each set at severities 1-5, as SHA-256 digests of
the uint8 bytes (made with ``python perf/parity_cbar.py --write-golden ...`` in the pinned
reference environment). The slow test at the end runs the parity harness itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robustlab.corruptions import corrupt, corrupt_batch, get_corruption, list_corruptions, resolve_corruptions
from robustlab.corruptions.cbar import (CBAR_ORDER, CIFAR10_C_BAR, IMAGENET_C_BAR, SETS, severity_folder,
                                        severity_of_folder, severity_parameter)
from robustlab.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((ROOT / "tests" / "fixtures" / "corruptions" / "cbar_golden.json").read_text())
INPUTS = {k: np.asarray(v, dtype=np.uint8) for k, v in GOLDEN["inputs"].items()}
PROFILE = {"cifar10-c-bar": "cifar", "imagenet-c-bar": "imagenet-c"}


@pytest.mark.parametrize("case", sorted(GOLDEN["outputs"]))
def test_matches_the_reference_bit_for_bit(case):
    set_name, name, severity = case.split("/")
    out = corrupt(INPUTS[set_name], name, int(severity), rng=np.random.RandomState(GOLDEN["seed"]),
                  profile=PROFILE[set_name])
    want = GOLDEN["outputs"][case]
    assert out.dtype == np.uint8 and out.shape == INPUTS[set_name].shape
    assert hashlib.sha256(out.tobytes()).hexdigest() == want["sha256"], (
        f"{case}: pixels differ from the reference (sum {int(out.sum(dtype=np.int64))} vs {want['sum']})")


def test_the_golden_record_covers_both_sets():
    assert {k.rsplit("/", 2)[0] for k in GOLDEN["outputs"]} == set(SETS)
    for set_name, table in SETS.items():
        assert {k.split("/")[1] for k in GOLDEN["outputs"] if k.startswith(set_name)} == set(table)


def test_registry_group_and_sets():
    assert list_corruptions("c-bar") == list(CBAR_ORDER) and len(CBAR_ORDER) == 15
    assert set(list_corruptions("imagenet-c-bar")) == set(IMAGENET_C_BAR) and len(IMAGENET_C_BAR) == 10
    assert set(list_corruptions("cifar10-c-bar")) == set(CIFAR10_C_BAR) and len(CIFAR10_C_BAR) == 10
    shared = set(IMAGENET_C_BAR) & set(CIFAR10_C_BAR)
    assert shared == {"blue_noise_sample", "brownish_noise", "checkerboard_cutout", "inverse_sparkles", "sparkles"}
    # ImageNet-C's subsets are untouched
    assert not set(CBAR_ORDER) & set(list_corruptions("all"))
    assert resolve_corruptions("ripple,fog,sparkles") == ["fog", "sparkles", "ripple"]
    assert resolve_corruptions("cifar10-c-bar") == [n for n in CBAR_ORDER if n in CIFAR10_C_BAR]
    c = get_corruption("ripple")
    assert (c.group, c.benchmark, c.seedable) == ("c-bar", True, True)


def test_names_need_no_kernel_import():
    code = ("import sys; from robustlab.corruptions import list_corruptions, resolve_corruptions; "
            "assert len(list_corruptions('c-bar')) == 15; assert len(resolve_corruptions('imagenet-c-bar')) == 10; "
            "assert 'numba' not in sys.modules and 'robustlab.corruptions.cbar.kernels' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})


def test_a_corruption_outside_the_profiles_set_is_refused_with_the_fix():
    img = INPUTS["cifar10-c-bar"]
    with pytest.raises(InputError, match="CIFAR-10-C-bar.*--profile cifar|cifar10-c-bar.*--profile cifar"):
        corrupt(img, "ripple", 1, rng=0)
    with pytest.raises(InputError, match="imagenet-c-bar"):
        corrupt(img, "perlin_noise", 1, rng=0, profile="cifar")
    assert severity_parameter("sparkles", 2, "cifar") == 3.5
    assert severity_parameter("sparkles", 2, "imagecorruptions") == 2.0


def test_released_severity_folders():
    assert [severity_folder(p) for p in IMAGENET_C_BAR["caustic_refraction"]] == ["2.35", "3.20", "4.90", "6.60",
                                                                                  "9.15"]
    assert severity_of_folder("imagenet-c-bar", "caustic_refraction", "4.90") == 3
    assert severity_of_folder("imagenet-c-bar", "caustic_refraction", "2") == 2  # the preprocessed release
    assert severity_of_folder("imagenet-c-bar", "caustic_refraction", "4.91") is None
    assert severity_of_folder("imagenet-c-bar", "ripple", "1") is None


@pytest.mark.parametrize("name", CBAR_ORDER)
def test_seeded_per_item_and_any_size(name):
    profile = "cifar" if name not in IMAGENET_C_BAR else "imagenet-c"
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (40, 57, 3), dtype=np.uint8)
    a = corrupt(img, name, 3, rng=5, profile=profile)
    assert a.shape == img.shape and a.dtype == np.uint8
    assert np.array_equal(a, corrupt(img, name, 3, rng=5, profile=profile))
    # a non-square image is the top-left window of the square canvas of its long side
    canvas = np.zeros((57, 57, 3), np.uint8)
    canvas[:40] = img
    assert np.array_equal(a, corrupt(canvas, name, 3, rng=5, profile=profile)[:40])
    # corrupt_batch: one RandomState per (seed, id, name, severity), independent of the batch
    one = corrupt_batch([img], name, 3, seed=1, ids=["x"], profile=profile)[0]
    two = corrupt_batch([img[::-1].copy(), img], name, 3, seed=1, ids=["y", "x"], profile=profile)[1]
    assert np.array_equal(one, two)


def test_severity_strengthens_the_change():
    img = INPUTS["imagenet-c-bar"]
    for name in ("brownish_noise", "blue_noise_sample", "single_frequency_greyscale"):
        change = [np.abs(corrupt(img, name, s, rng=1).astype(int) - img).mean() for s in range(1, 6)]
        assert change == sorted(change), (name, change)


@pytest.mark.slow
def test_parity_harness_against_the_reference(tmp_path):
    """Runs perf/parity_cbar.py on held-out images (needs the reference code and PyPI for its environment)."""
    sys.path.insert(0, str(ROOT / "perf"))
    try:
        import cbar_refenv
    finally:
        sys.path.pop(0)
    try:
        cbar_refenv.reference_source()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    try:
        cbar_refenv.ensure_cbar_env(verbose=False)
    except RuntimeError as exc:
        pytest.skip(f"the reference environment cannot be built here (no package registry?): {exc}")
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, str(ROOT / "perf" / "parity_cbar.py"), "--sets", "cifar10-c-bar",
                           "--seeds", "11", "--images", "2", "--json", str(out)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())
    assert len(rows) == 10 and all(r["identical_min"] == 1.0 for r in rows)


def test_list_shows_the_sets_and_no_torch_kernel():
    from typer.testing import CliRunner

    from robustlab.cli import app

    out = CliRunner().invoke(app, ["list", "--subset", "cifar10-c-bar"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "pinch_and_twirl" in out.output and "perlin_noise" not in out.output
    assert "numpy only" in out.output and "cifar10-c-bar" in out.output
