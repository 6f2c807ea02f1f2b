"""Every command group is registered on the CLI (a merge once dropped finetune and stylize)."""

from __future__ import annotations

import subprocess
import sys

import pytest

COMMANDS = ("corrupt", "list", "report", "perturb", "import-mmdet", "export-detection", "evaluate", "runs", "show",
            "demo", "study", "video", "review", "finetune", "stylize", "doctor", "data")


def test_every_command_is_listed_in_help():
    out = subprocess.run([sys.executable, "-m", "robustlab.cli", "--help"], capture_output=True, text=True,
                         timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    listed = {line.split()[1] for line in out.stdout.splitlines() if line.startswith("│ ") and len(line.split()) > 1}
    missing = [c for c in COMMANDS if c not in listed]
    assert not missing, f"commands missing from robustlab --help: {missing}\n{out.stdout}"


@pytest.mark.parametrize("chosen, options", [
    ((), ("--executor", "--tag", "--fingerprint", "--wrap")),
    (("-e", "ray"), ("--ray-address", "--actors", "--stall-timeout")),  # the executor's schema, with -e NAME
    (("-b", "imagenet-c"), ("--baseline-run", "--clean-data", "--on-the-fly", "--allow-incomplete")),  # with -b NAME
    (("-b", "laion-c"), ("--distortions", "--intensities", "--allow-incomplete")),  # a plugin file's, the same way
])
def test_evaluate_help_lists_the_engine_options(chosen, options):
    out = subprocess.run([sys.executable, "-m", "robustlab.cli", "evaluate", *chosen, "--help"], capture_output=True,
                         text=True, timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    for option in options:
        assert option in out.stdout, option
