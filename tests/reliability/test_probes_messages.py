"""Unclear messages of issue 37's probes, each now naming the problem and the fix (each test fails on
the old code). The others of the list are tested beside their fix: a CIFAR `test_batch` whose
labels are a dict (test_probes_inputs.py), a broken plugin and one colliding with `fog`
(tests/test_plugin_safety.py), a factory calling `sys.exit` (tests/models/test_build_inputs.py), a
reference CSV with wrong columns, empty or `;`-separated (test_probes_inputs.py)."""

from __future__ import annotations

import pytest

from .helpers import EVALUATE, assert_error, image_folder, run, run_process


@pytest.mark.parametrize("argv", [
    ("evaluate", "-m", "demo:cnn", "-b", "corrupted", "-d", "{fifo}", "--store", "{tmp}/st"),
    ("corrupt", "{fifo}", "{tmp}/out", "-c", "fog", "-s", "1"),
    ("perturb", "{fifo}", "{tmp}/out"),
    ("video", "sample", "{fifo}", "{tmp}/out"),
    ("finetune", "-m", "demo:cnn", "--data", "{fifo}", "-o", "{tmp}/ft"),
])
def test_a_fifo_given_as_a_folder_is_named_as_a_fifo_not_missing(tmp_path, fifo, argv):
    """They said "does not exist", "is a file" or "missing"."""
    result = run_process(*[a.format(fifo=fifo, tmp=tmp_path) for a in argv], timeout=300)
    line = assert_error(result, "is a FIFO (named pipe), not a folder")
    assert "does not exist" not in line and "missing" not in line


def test_a_crop_larger_than_the_images_advises_the_crop_not_a_tag(tmp_path):
    """Every sample skipped for a too-large --crop advised --tag (the data had not changed)."""
    data = image_folder(tmp_path / "data")
    model = EVALUATE[EVALUATE.index("--model") + 1]
    result = run("evaluate", "--model", model, "--crop", "100", "--workers", "0", "--no-progress", "-b", "corrupted",
                 "-d", data, "--store", tmp_path / "s", "-c", "fog", "-s", "1")
    line = assert_error(result, "every sample of run", "give a --resize at least as large as the --crop")
    assert "--tag" not in line


def test_doctor_names_a_self_check_that_crashed(monkeypatch):
    """A crashing self-check was printed as `[fail] <lambda>`."""
    import robustlab.doctor as doctor

    def broken(meta):
        raise RuntimeError("no encoder")

    monkeypatch.setattr(doctor, "_codec_check", broken)
    report = doctor.run_doctor(self_check=True)
    failed = [c for c in report.checks if c.status == "fail"]
    assert [(c.name, c.detail) for c in failed] == [("codec", "RuntimeError: no encoder")]
    assert "<lambda>" not in report.text()


def test_imagenet_c_bar_help_gives_the_default_it_takes(tmp_path):
    """--help claimed "default: the 15 benchmark corruptions", which -c benchmark then refused."""
    helped = run_process("evaluate", "-b", "imagenet-c-bar", "--help", env={"COLUMNS": "200"})
    assert helped.code == 0
    text = " ".join(helped.out.replace("│", " ").split())
    assert "15 benchmark corruptions" not in text and "default: the set's 10" in text


def test_refused_stylize_weights_exit_1_with_one_line(tmp_path):
    """Refused weights are bad input (exit 1), never a usage error (exit 2)."""
    weights = tmp_path / "w"
    weights.mkdir()
    for name in ("vgg_normalised.pth", "decoder.pth"):
        (weights / name).write_bytes(b"not a checkpoint")
    data = image_folder(tmp_path / "data")
    styles = image_folder(tmp_path / "styles", classes=("s",), per_class=1)
    result = run("stylize", data, "--styles", styles / "s", "-o", tmp_path / "out", "--weights-dir", weights,
                 "--device", "cpu", "-j", "1", "--no-progress")
    assert_error(result, "refusing unverified AdaIN weights", code=1)
