"""The bad-input matrix for the commands that read a store: `runs`, `show`, `report`,
`export-detection` (and `evaluate` writing into a damaged one)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from robustlab.store import open_store

from .helpers import EVALUATE, assert_error, assert_ok, image_folder, run, run_process

READERS = {
    "runs": lambda store, run_id, tmp: ["runs", "--store", store],
    "show": lambda store, run_id, tmp: ["show", run_id, "--store", store],
    "report": lambda store, run_id, tmp: ["report", "--store", store, "--out", tmp / "report.md"],
    "export-detection": lambda store, run_id, tmp: ["export-detection", run_id, tmp / "out.json", "--store", store],
}


@pytest.fixture(scope="module")
def classification_store(tmp_path_factory) -> tuple[Path, str]:
    """A store holding one complete `corrupted` (classification) run."""
    root = tmp_path_factory.mktemp("store-commands")
    data = image_folder(root / "data", per_class=2)
    result = run(*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", root / "store", "-c", "brightness",
                 "-s", "1", "--json")
    assert_ok(result)
    return root / "store", json.loads(result.out)["run_id"]


@pytest.fixture
def store_copy(classification_store, tmp_path) -> tuple[Path, str]:
    store, run_id = classification_store
    shutil.copytree(store, tmp_path / "store")
    return tmp_path / "store", run_id


@pytest.mark.parametrize("command", READERS)
def test_missing_store_is_refused_not_created(command, classification_store, tmp_path):
    """A typo in --store silently gave an empty store (fails on the old code)."""
    typo = tmp_path / "stroe"
    assert_error(run(*READERS[command](typo, "0123456789ab", tmp_path)), "no store at", str(typo))
    assert not typo.exists()


@pytest.mark.parametrize("command", ["runs", pytest.param("show", marks=pytest.mark.slow),
                                     pytest.param("report", marks=pytest.mark.slow)])
def test_read_only_store_is_readable(command, store_copy, tmp_path):
    """Reading needed write access (fails on the old code)."""
    store, run_id = store_copy
    paths = [store, *store.rglob("*")]
    for p in paths:
        p.chmod(0o555 if p.is_dir() else 0o444)
    out = tmp_path / "elsewhere"
    out.mkdir()
    try:
        result = run_process(*READERS[command](store, run_id, out), obey_permissions=True)
    finally:
        for p in paths:
            p.chmod(0o755 if p.is_dir() else 0o644)
    assert_ok(result)
    assert run_id in result.out or (out / "report.md").is_file()


@pytest.mark.parametrize("command", READERS)
def test_damaged_catalog_is_named_with_a_recovery_hint(command, store_copy, tmp_path):
    """A damaged catalog.db gave a traceback (fails on the old code)."""
    store, run_id = store_copy
    catalog = store / "catalog.db"
    data = bytearray(catalog.read_bytes())
    for i in range(4096, len(data), 7):  # keep the header page, scramble the rest
        data[i] = (data[i] * 31 + 7) % 256
    catalog.write_bytes(bytes(data))
    line = assert_error(run(*READERS[command](store, run_id, tmp_path)), str(catalog), "damaged")
    assert ".recover" in line


def test_a_file_that_is_not_a_store(tmp_path):
    fake = tmp_path / "results.db"
    fake.write_text("name,value\n")
    assert_error(run("runs", "--store", fake), "not an SQLite database")


def test_evaluate_into_a_damaged_store(store_copy, tmp_path):
    store, _ = store_copy
    catalog = store / "catalog.db"
    catalog.write_bytes(catalog.read_bytes()[:5000])
    data = image_folder(tmp_path / "data", per_class=1)
    assert_error(run(*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", store, "-c", "fog", "-s", "1"),
                 "damaged")


@pytest.mark.parametrize("command", ["show", "export-detection"])
def test_unknown_run(command, store_copy, tmp_path):
    store, _ = store_copy
    assert_error(run(*READERS[command](store, "fffffff", tmp_path)), "no run 'fffffff'", "robustlab runs")


def test_export_detection_refuses_a_classification_run(store_copy, tmp_path):
    """It wrote empty bbox dicts and exited 0 (fails on the old code)."""
    store, run_id = store_copy
    for name in ("out.json", "out.pkl", "out.csv"):
        line = assert_error(run("export-detection", run_id, tmp_path / name, "--store", store), run_id)
        assert "corrupted run, not a detection run" in line
        assert not (tmp_path / name).exists()


def test_report_names_the_store_not_an_internal_object(tmp_path):
    """`report` printed a StoreLocation(...) object (fails on the old code)."""
    with open_store(tmp_path / "store") as st:
        st.register_run("m", "corrupted", "d", {})  # a run, but none complete
    line = assert_error(run("report", "--store", tmp_path / "store", "--out", tmp_path / "r.html"),
                        "no complete runs", str(tmp_path / "store"))
    assert "StoreLocation" not in line and not (tmp_path / "r.html").exists()
    assert_error(run("report", "--store", tmp_path / "store", "--format", "pdf", "--out", tmp_path / "r"), "'pdf'")


@pytest.mark.parametrize("url", ["postgresql://ana:s3cret-pw@127.0.0.1:1/results",
                                 "postgresql://127.0.0.1:1/results?user=ana&password=s3cret-pw"])
@pytest.mark.parametrize("command", ["runs", "report"])
def test_no_message_prints_a_store_password(url, command, tmp_path):
    pytest.importorskip("psycopg")
    result = run(*READERS[command](url, "0123456789ab", tmp_path))
    line = assert_error(result, "cannot reach the store database")
    assert "s3cret-pw" not in result.err + result.out and "***" in line


def test_report_into_an_impossible_place(store_copy, tmp_path):
    store, _ = store_copy
    (tmp_path / "file").write_text("x")
    assert_error(run("report", "--store", store, "--out", tmp_path / "file" / "report.html"), str(tmp_path / "file"),
                 "a file is in the way")
