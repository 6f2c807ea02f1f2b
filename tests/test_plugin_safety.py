"""An installed plugin can neither take robustlab down nor change a built-in name (issue 37: one
broken plugin killed every command, `list` included, without naming itself; a plugin registering
`corrupted` ran and was stored as `corrupted`; one registering `fog` got a message about a set)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from robustlab.errors import InputError
from robustlab.registry import PluginWarning, Registry

ROOT = Path(__file__).resolve().parents[1]

PLUGINS = {
    "broken_plugin.py": "import a_module_that_is_not_installed  # noqa\n",
    "shadow_benchmark.py": '''
from robustlab.engine import Benchmark, register_benchmark


@register_benchmark
class Shadow(Benchmark):
    name = "corrupted"
''',
    "shadow_fog.py": '''
import numpy as np
from robustlab.corruptions.registry import register


@register("fog", group="weather", sets=("benchmark",))
def fog(image, severity, rs, profile):
    return np.zeros_like(image)
''',
    "good_benchmark.py": '''
from robustlab.engine import Benchmark, register_benchmark


@register_benchmark
class Good(Benchmark):
    name = "good-shift"
''',
}
ENTRY_POINTS = """\
[robustlab.benchmarks]
broken = broken_plugin
shadow = shadow_benchmark
good = good_benchmark

[robustlab.corruptions]
fog = shadow_fog
"""


def install(site: Path) -> None:
    for name, code in PLUGINS.items():
        (site / name).write_text(code)
    info = site / "hostile_plugins-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)


def robustlab(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(site)]), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "robustlab.cli", *args], capture_output=True, text=True, env=env,
                           timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    install(site)
    return site


def test_a_broken_plugin_is_named_and_skipped_and_list_still_works(site):
    listed = robustlab(site, "list", "benchmarks")
    assert listed.returncode == 0, listed.stderr
    assert "corrupted" in listed.stdout and "good-shift" in listed.stdout  # robustlab's and the good plugin's
    warning = [line for line in listed.stderr.splitlines() if "'broken'" in line]
    assert warning and warning[0].startswith("warning: plugin 'broken' (module broken_plugin, from hostile-plugins)")
    assert "ModuleNotFoundError" in warning[0] and "Traceback" not in listed.stderr
    corruptions = robustlab(site, "list")
    assert corruptions.returncode == 0 and "gaussian_noise" in corruptions.stdout


def test_a_plugin_may_not_replace_a_built_in_benchmark_or_corruption(site):
    listed = robustlab(site, "list", "benchmarks")
    shadow = [line for line in listed.stderr.splitlines() if "'shadow'" in line]
    assert shadow and "benchmark 'corrupted' is a built-in name of robustlab; a plugin may not replace it" in shadow[0]
    fog = robustlab(site, "list")
    line = next(line for line in fog.stderr.splitlines() if "'fog'" in line)
    assert "corruption 'fog' is a built-in name of robustlab; a plugin may not replace it" in line
    assert "corruption set" not in line
    # the name still means robustlab's benchmark
    code = ("from robustlab.engine.benchmark import BENCHMARKS; import warnings; warnings.simplefilter('ignore');"
            "print(BENCHMARKS.get('corrupted').__module__)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(site)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.stdout.strip() == "robustlab.benchmarks.corruption", proc.stderr


class FakeEntryPoint:
    def __init__(self, name, load):
        self.name, self.value, self.load, self.dist = name, f"{name}_module", load, None


def test_registry_rolls_back_what_a_failing_plugin_registered(monkeypatch):
    registry: Registry = Registry("widget", entry_points="robustlab.test-widgets")
    registry.add("builtin", object())

    def half_then_fail():
        registry.add("half", object())
        raise RuntimeError("boom")

    def clash():
        registry.add("builtin", object())

    eps = [FakeEntryPoint("half", half_then_fail), FakeEntryPoint("clash", clash),
           FakeEntryPoint("fine", lambda: registry.add("fine", object()))]
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: eps)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert registry.names() == ["builtin", "fine"]
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    assert any("plugin 'half' (module half_module) was skipped" in m and "RuntimeError: boom" in m for m in messages)
    assert any("'builtin' is a built-in name" in m for m in messages)
    with pytest.raises(InputError, match="Skipped plugins: plugin 'half'"):
        registry.get("half")
