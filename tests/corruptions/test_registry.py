"""The corruption registry names the 19 without importing their kernels, and agrees with them."""

from __future__ import annotations

import subprocess
import sys

from robustlab.corruptions import get_corruption, list_corruptions
from robustlab.corruptions.registry import BUILTIN, CANONICAL_ORDER


def test_names_and_subsets_need_no_kernel_import():
    code = ("import sys; from robustlab.corruptions import list_corruptions, resolve_corruptions; "
            "assert len(list_corruptions()) == 19 and len(list_corruptions('benchmark')) == 15; "
            "assert resolve_corruptions('weather,contrast') == ['snow', 'frost', 'fog', 'contrast', 'spatter']; "
            "loaded = [m for m in ('numba', 'cv2', 'robustlab.corruptions.blur', 'robustlab.corruptions.weather') "
            "if m in sys.modules]; assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_builtin_table_matches_the_registered_kernels():
    assert sorted(BUILTIN) == sorted(CANONICAL_ORDER)
    for name, (group, benchmark, module) in BUILTIN.items():
        c = get_corruption(name)  # imports the kernel module
        assert (c.group, c.benchmark) == (group, benchmark), name
        assert c.kernel.__module__ == f"robustlab.corruptions.{module}", name
    assert list_corruptions("holdout") == ["speckle_noise", "gaussian_blur", "spatter", "saturate"]
    assert list_corruptions("noise") == ["gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise"]
