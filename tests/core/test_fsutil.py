"""Atomic writes: final files appear whole, with normal permissions; failures leave nothing."""

from __future__ import annotations

import os
import stat

import pytest

from robustlab.errors import DataError
from robustlab.fsutil import FILE_MODE, atomic_path, atomic_write_text, read_json


def test_finished_files_get_the_usual_permissions(tmp_path):
    path = atomic_write_text(tmp_path / "a" / "out.txt", "hello")
    assert path.read_text() == "hello"
    assert stat.S_IMODE(path.stat().st_mode) == FILE_MODE
    assert FILE_MODE & 0o044  # readable by group/others under the usual umask 022


def test_a_failure_leaves_nothing_behind(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "out.bin") as tmp:
            tmp.write_bytes(b"partial")
            raise RuntimeError("killed mid-write")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_folder_is_a_clear_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    with pytest.raises(DataError, match="permission denied|not writable"):
        atomic_write_text(ro / "x.txt", "x")


def test_read_json_names_the_file_and_the_fix(tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2]}')
    assert read_json(good) == {"a": [1, 2]}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match=r"bad.json is not valid JSON .* Delete it\.$"):
        read_json(bad, fix="Delete it.")
    with pytest.raises(DataError, match="JSON file .*missing.json does not exist; check the path"):
        read_json(tmp_path / "missing.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DataError, match="not valid JSON"):
        read_json(binary)


def test_a_damaged_study_evaluations_file_is_a_clear_error(tmp_path):
    from robustlab.studies.adversarial import read_evaluations

    path = tmp_path / "evaluations.json"
    path.write_text("[{\"epoch\": 1")
    with pytest.raises(DataError, match=r"evaluations.json is not valid JSON .* Delete .*evaluations.json to evaluate"):
        read_evaluations(path)
    path.write_text('[{"epoch": 1, "unknown_field": 2}]')
    with pytest.raises(DataError, match="does not hold a list of evaluations"):
        read_evaluations(path)
