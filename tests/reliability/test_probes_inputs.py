"""Hostile inputs of issue 37's probes: files that are not files (FIFOs, devices) given on the
command line, labels that are not class indices, reference-points CSVs that are not what they
seem. Each was a hang, a silent wrong result or an unclear message; each test fails on the old code."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from robustlab.corruptions.released import read_cifar_c
from robustlab.errors import DataError, InputError
from robustlab.metrics.effective_robustness import read_reference_points
from robustlab.report.effective import reference_points_for
from robustlab.safeload import load_cifar_batch

from .helpers import SRC, assert_error, run_process

@pytest.mark.parametrize("argv", [
    ("import-mmdet", "{fifo}"), ("import-mmdet", "/dev/zero"),
    ("show", "abc", "--reference-points", "{fifo}"), ("show", "abc", "--reference-points", "/dev/zero"),
    ("report", "--reference-points", "{fifo}"),
    ("video", "sample", "{tmp}", "{tmp}/out", "--labels", "/dev/zero"),
    ("video", "sample", "{tmp}", "{tmp}/out", "--labels", "{fifo}"),
])
def test_a_fifo_or_device_given_as_a_file_is_refused_by_kind_not_read(tmp_path, fifo, argv):
    """Each of these hung (a FIFO blocks its reader; /dev/zero never ends or fills the memory)."""
    args = [a.format(fifo=fifo, tmp=tmp_path) for a in argv]
    result = run_process(*args, timeout=120)
    kind = "FIFO (named pipe)" if str(fifo) in args else "character device"
    assert_error(result, f"is a {kind}, not a regular file")


def test_password_stdin_from_dev_zero_ends_with_an_error(tmp_path):
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run([sys.executable, "-m", "robustlab.cli", "review", "add-user", "bob", "--role", "annotator",
                               "--db", str(tmp_path / "r.db"), "--password-stdin"], stdin=zero, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 1 and "is not a password" in proc.stderr, proc.stderr
    assert not (tmp_path / "r.db").exists()


def write_batch(path, labels):
    path.write_bytes(pickle.dumps({b"data": np.zeros((3, 3072), np.uint8), b"labels": labels}, protocol=2))
    return path


@pytest.mark.parametrize("labels, message", [
    ([0, 2.7, 1], "must be whole class indices; 1 of 3 are not (e.g. 2.7 at position 1)"),
    ({"a": 1}, "must be a list or array of class indices (integers); it is a dict"),
    (["cat", "dog", "cat"], "they hold str values"),
])
def test_cifar_batch_labels_that_are_not_class_indices_are_refused(tmp_path, labels, message):
    """2.7 was truncated to class 2; a dict gave 'unexpected TypeError'."""
    with pytest.raises(DataError, match="labels") as caught:
        load_cifar_batch(write_batch(tmp_path / "test_batch", labels))
    assert message in str(caught.value)


def test_cifar_c_labels_npy_with_fractions_is_refused(tmp_path):
    np.save(tmp_path / "fog.npy", np.zeros((10, 32, 32, 3), np.uint8))
    np.save(tmp_path / "labels.npy", np.array([0, 1.0, 2.7, 3, 4, 0, 1, 2, 3, 4]))
    with pytest.raises(DataError, match=r"must be whole class indices.*2\.7"):
        read_cifar_c(tmp_path, "fog", 1)
    np.save(tmp_path / "labels.npy", np.array([0, 1.0, 2, 3, 4, 0, 1, 2, 3, 4]))  # whole floats are fine
    assert read_cifar_c(tmp_path, "fog", 1).labels.tolist() == [0, 1]


def test_reference_points_mixing_fractions_and_percents_are_refused(tmp_path):
    """Read entirely as percent, the fraction rows moved the ER slope from 1.908 to 1.105."""
    path = tmp_path / "refs.csv"
    path.write_text("model,original,shifted\na,76.1,63.5\nb,0.80,0.69\nc,70.2,57.0\n")
    with pytest.raises(DataError, match="mixes fractions and percents: b has 0.8 / 0.69"):
        read_reference_points(path)
    path.write_text("model,original,shifted\na,76.1,63.5\nb,80.0,69.0\n")
    assert [p.original for p in read_reference_points(path)] == pytest.approx([0.761, 0.80])


@pytest.mark.parametrize("text, message", [
    ("", "is empty"),
    ("model;original;shifted\na;76.1;63.5\n", "separated by ';', not comma-separated"),
    ("net,top1,top1_shift\na,76.1,63.5\n", "lacks the column(s) model, original, shifted"),
])
def test_reference_points_that_cannot_be_read_are_errors_not_ignored(tmp_path, text, message):
    """Each was silently no reference points at all."""
    path = tmp_path / "refs.csv"
    path.write_text(text)
    with pytest.raises(DataError) as caught:
        reference_points_for(path, {"shift": "imagenetv2", "testbed_columns": ("val", "imagenetv2-matched")})
    assert message in str(caught.value)


def test_password_line_is_bounded_in_process():
    from robustlab.review.server import MAX_PASSWORD_LINE, read_password

    assert read_password(True, io.StringIO("secret\n")) == "secret"
    with pytest.raises(InputError, match="is not a password"):
        read_password(True, io.StringIO("x" * (MAX_PASSWORD_LINE + 10)))
