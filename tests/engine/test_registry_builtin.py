"""The built-in benchmarks are named without importing their modules, and each name resolves."""

from __future__ import annotations

import subprocess
import sys

from robustlab.benchmarks import BUILTIN
from robustlab.engine import get_benchmark, list_benchmarks


def test_every_builtin_name_resolves_to_its_class():
    assert set(BUILTIN) <= set(list_benchmarks())
    for name in BUILTIN:
        assert get_benchmark(name).name == name


def test_looking_up_one_family_imports_only_its_module():
    code = ("import sys; from robustlab.engine import get_benchmark, list_benchmarks; list_benchmarks(); "
            "get_benchmark('mmdet-results'); "
            "print(sorted(m for m in sys.modules if m.startswith('robustlab.benchmarks.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    loaded = eval(out.stdout.strip())
    assert "robustlab.benchmarks.detection_mmdet" in loaded  # mmdet-results's module, with what it reads
    assert "robustlab.benchmarks.video" not in loaded and "robustlab.benchmarks.adversarial" not in loaded
    assert "robustlab.benchmarks.detection" not in loaded  # not even the corrupted-detection benchmarks'
    assert not any(m.startswith("robustlab.report") for m in loaded)
