"""The corruption registry: each corruption declared once; names, subsets, baselines, the CLI's list and
the documentation's table derive from it; kernels load on first use; a plugin's corruption shows
up everywhere a built-in one does."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.corruptions import corrupt, corrupt_batch, get_corruption, list_corruptions, resolve_corruptions
from robustlab.corruptions.registry import (CORRUPTIONS, IMAGENET_C, corruption_baseline, corruption_table, declare,
                                            published_errors, register, registered)
from robustlab.errors import InputError
from robustlab.metrics.corruption import ALL_CORRUPTIONS, BENCHMARK_CORRUPTIONS, get_corruption_baseline


def test_names_and_subsets_need_no_kernel_import():
    code = ("import sys; from robustlab.corruptions import list_corruptions, resolve_corruptions, get_corruption; "
            "assert list_corruptions('benchmark') and get_corruption('fog').group == 'weather'; "
            "assert resolve_corruptions('weather,contrast') == ['snow', 'frost', 'fog', 'contrast', 'spatter']; "
            "import robustlab.metrics.corruption; "
            "loaded = [m for m in ('numba', 'cv2', 'robustlab.corruptions.blur', 'robustlab.corruptions.weather') "
            "if m in sys.modules]; assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("corruption", registered(), ids=lambda c: c.name)
def test_every_declared_kernel_loads_and_corrupts(corruption):
    assert callable(corruption.kernel)
    profile = "cifar" if corruption.sets == ("cifar10-c-bar",) else "imagenet-c"
    out = corrupt(np.full((40, 40, 3), 120, np.uint8), corruption.name, 2, rng=0, profile=profile)
    assert out.shape == (40, 40, 3) and out.dtype == np.uint8


def test_subsets_derive_from_the_declarations():
    imagenet_c = [c for c in registered() if IMAGENET_C in c.sets]
    assert list_corruptions("all") == [c.name for c in imagenet_c] == list(ALL_CORRUPTIONS)
    assert list_corruptions("benchmark") == [c.name for c in imagenet_c if c.benchmark] == list(BENCHMARK_CORRUPTIONS)
    assert list_corruptions("holdout") == [c.name for c in imagenet_c if not c.benchmark]
    assert list_corruptions("noise") == [c.name for c in registered() if c.group == "noise"]
    assert list_corruptions("registered") == CORRUPTIONS.names()
    # the AlexNet baseline is the errors declared with the corruptions, one per ImageNet-C member
    assert dict(get_corruption_baseline("alexnet").errors) == published_errors("alexnet")
    assert set(published_errors("alexnet")) == set(ALL_CORRUPTIONS)


@pytest.fixture
def plugin_corruption():
    """A third party's corruption without a torch kernel, registered at import (and removed after)."""

    @register("test_plugin_tint", group="test-plugin-group", sets=("test-plugin-set",))
    def tint(image, severity, rs, profile):
        return np.clip(image.astype(np.int16) + 10 * severity, 0, 255).astype(np.uint8)

    yield "test_plugin_tint"
    CORRUPTIONS.remove("test_plugin_tint")


def test_a_registered_corruption_appears_in_list_resolve_the_cli_and_the_docs_table(plugin_corruption):
    name = plugin_corruption
    assert name in list_corruptions("registered") and name not in list_corruptions("all")
    assert list_corruptions("test-plugin-group") == [name] == list_corruptions("test-plugin-set")
    assert resolve_corruptions(name) == [name]
    assert resolve_corruptions(f"fog,{name}") == ["fog", name]
    assert corrupt(np.zeros((32, 32, 3), np.uint8), name, 2).max() == 20
    assert f"`{name}`" in corruption_table()
    listed = CliRunner().invoke(app, ["list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and name in listed.output and "numpy only" in listed.output


def test_a_plugins_declared_baseline_error_joins_the_benchmarks_baseline():
    """The metrics' built-in AlexNet baseline is ImageNet-C's published table (robustlab.suites); the
    benchmark's baseline adds what a registered corruption declares for it."""
    declare("test_plugin_baseline", group="test-plugin-group", kernel=".weather:fog", baselines={"alexnet": 0.8})
    try:
        assert "test_plugin_baseline" not in get_corruption_baseline("alexnet").errors
        base = corruption_baseline("alexnet")
        assert base.errors["test_plugin_baseline"] == 0.8 and base.clean_error == 0.435
        assert {c: base.errors[c] for c in ALL_CORRUPTIONS} == dict(get_corruption_baseline("alexnet").errors)
    finally:
        CORRUPTIONS.remove("test_plugin_baseline")
    assert corruption_baseline("alexnet") is get_corruption_baseline("alexnet")
    with pytest.raises(InputError, match="corruption baseline"):
        corruption_baseline("resnet")


def test_a_corruption_without_a_torch_kernel_is_refused_with_the_fix(plugin_corruption):
    torch = pytest.importorskip("torch")
    with pytest.raises(InputError, match="has no torch kernel.*numpy"):
        corrupt_batch(torch.zeros((1, 32, 32, 3), dtype=torch.uint8), plugin_corruption, 1)


def test_bad_declarations_are_refused():
    with pytest.raises(InputError, match="registered twice"):
        declare("fog", group="weather", kernel=".weather:fog")
    with pytest.raises(InputError, match="subset, group or set name"):
        declare("noise", group="x", kernel=".weather:fog")
    with pytest.raises(InputError, match="torch_rounding"):
        declare("test_plugin_bad", group="x", kernel=".weather:fog", torch_rounding="ceil")
    assert "test_plugin_bad" not in CORRUPTIONS
    assert get_corruption("fog").torch_rounding == "floor" and get_corruption("pixelate").torch_rounding == "round"
