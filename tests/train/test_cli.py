"""The finetune and stylize commands, and evaluate --wrap, through the CLI entry point."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from robustlab.cli import main
from robustlab.data.images import write_image
from robustlab.train.adain import SHA256_ENV

from .adain_weights import make_test_weights
from .conftest import TINY


def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["robustlab", *map(str, args)])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_finetune_then_evaluate_the_spec_with_a_wrapper(monkeypatch, capsys, colour_folder, tmp_path):
    code, out, err = run_cli(monkeypatch, capsys, "finetune", "--model", f"python:{TINY}:make_tiny3", "--data",
                             colour_folder, "--out", tmp_path / "run", "--epochs", "1", "--batch-size", "8",
                             "--lr", "0.05", "--workers", "0", "--no-progress", "--augment", "paper-noise")
    assert code == 0, err
    spec = out.strip().splitlines()[-1]
    assert spec.startswith("finetuned:") and "epoch 1: loss" in err
    code, out, err = run_cli(monkeypatch, capsys, "evaluate", "--model", spec, "--benchmark", "corrupted", "--data",
                             colour_folder, "--corruptions", "contrast", "--severities", "2", "--class-map", "sorted",
                             "--workers", "0", "--device", "cpu", "--store", tmp_path / "store", "--wrap", "clahe",
                             "--json", "--no-progress")
    assert code == 0, err
    result = json.loads(out)
    assert result["model"] == f"{spec} [wrap=clahe]" and result["status"] == "complete"


def test_bad_finetune_input_is_one_clear_line(monkeypatch, capsys, colour_folder, tmp_path):
    code, out, err = run_cli(monkeypatch, capsys, "finetune", "--model", f"python:{TINY}:make_tiny3", "--data",
                             colour_folder, "--out", tmp_path / "run", "--classes", "vid30,doggo")
    assert code == 1 and err.startswith("error: unknown class 'doggo'") and "dog (n02084071)" in err
    assert len(err.strip().splitlines()) == 1


def test_stylize_refuses_unpinned_weights_then_runs_with_pins(monkeypatch, capsys, tmp_path):
    weights = make_test_weights(tmp_path / "weights")
    rng = np.random.default_rng(0)
    write_image(tmp_path / "styles" / "a.png", rng.integers(0, 256, (32, 32, 3)).astype(np.uint8))
    write_image(tmp_path / "data" / "cls" / "x.png", rng.integers(0, 256, (40, 48, 3)).astype(np.uint8))
    monkeypatch.delenv(SHA256_ENV, raising=False)
    args = ["stylize", tmp_path / "data", "--styles", tmp_path / "styles", "--out", tmp_path / "out",
            "--weights-dir", tmp_path / "weights", "--workers", "1", "--device", "cpu", "--no-progress"]
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 1 and "refusing unverified AdaIN weights" in err and not (tmp_path / "out").exists()
    # the CLI's networks are the released width: the small test files are refused as another architecture
    pins = ["--weights-sha256", f"vgg_normalised.pth={weights.digests['encoder']}",
            "--weights-sha256", f"decoder.pth={weights.digests['decoder']}"]
    code, out, err = run_cli(monkeypatch, capsys, *args, *pins)
    assert code == 1 and "another architecture" in err
    code, out, err = run_cli(monkeypatch, capsys, *args, "--weights-sha256", "decoder.pth")
    assert code == 1 and "write NAME=SHA256" in err


@pytest.mark.parametrize("command", ["finetune", "stylize"])
def test_help_lists_the_options(monkeypatch, capsys, command):
    code, out, _ = run_cli(monkeypatch, capsys, command, "--help")
    assert code == 0 and ("--classes" in out if command == "finetune" else "--combined" in out)
