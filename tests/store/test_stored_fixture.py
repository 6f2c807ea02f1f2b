"""A store written by an earlier robustlab (tests/fixtures/store/v2, made by make_fixture.py) is
read, listed, shown and resumed by this one exactly as by the code that wrote it.

``expected.json`` holds what the writing code read back: run records, units and their meta,
metrics, skipped samples, every unit's columns (dtype, shape and a hash of the values), and the
JSON of ``robustlab runs`` and ``robustlab show``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.store import SCHEMA_VERSION, RunNotFoundError, open_store
from robustlab.store.check import check_store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "store"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
RUNS = EXPECTED["runs"]


def _fixture_module():
    spec = importlib.util.spec_from_file_location("make_store_fixture", FIXTURES / "make_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _fixture_module()


@pytest.fixture
def old_store(tmp_path) -> Path:
    """A copy of the fixture store (opening one writes to it: the committed files stay as they are)."""
    return Path(shutil.copytree(FIXTURES / "v2", tmp_path / "old-store"))


def _metrics(rows) -> list:
    return [[n, s, None if math.isnan(v) else v] for n, s, v in rows]


def test_the_fixture_is_the_current_schema_and_opens_without_migrating(old_store):
    assert EXPECTED["schema"] == SCHEMA_VERSION  # a new schema version keeps this store and adds another
    with open_store(old_store, must_exist=True) as store:
        assert store.migrated_from is None and store.backup_path is None
        assert store.store_id == EXPECTED["store_id"]
        assert store.predictions_dir == old_store / "predictions"


def test_runs_units_metrics_and_problems_read_as_the_writer_read_them(old_store):
    with open_store(old_store, must_exist=True) as store:
        assert [r.id for r in store.list_runs()] == list(RUNS.values())  # oldest first
        assert [r.id for r in store.list_runs(benchmark="fixture-bench")] == [RUNS["killed"]]
        for role, run in RUNS.items():
            want = EXPECTED["by_run"][role]
            record = store.get_run(run[:7])  # a prefix resolves
            assert (record.id, record.status, record.n_units_done) == (run, want["status"], want["n_units_done"])
            assert record.config == want["config"] and record.model_spec == want["model_spec"]
            assert sorted(store.completed_units(run)) == want["units"]
            assert store.unit_meta(run) == want["unit_meta"]
            assert _metrics(store.get_metrics(run)) == want["metrics"]
            assert [list(p) for p in store.problems(run)] == want["problems"]
            eager = store.read_predictions(run)
            lazy = store.read_predictions(run, lazy=True)
            assert list(eager) == list(lazy) == want["units"]
            for unit, digest in want["predictions"].items():
                assert MAKE.column_digest(eager[unit]) == digest
                assert MAKE.column_digest(lazy[unit]) == digest
        assert store.stale_runs() == EXPECTED["stale_runs"] == [RUNS["killed"]]
        assert [list(f) for f in store.unit_files()] == EXPECTED["unit_files"]
        with pytest.raises(RunNotFoundError, match="no run 'ffffff'"):
            store.get_run("ffffff")


def test_the_killed_run_reads_back_the_arrays_it_was_given(old_store):
    with open_store(old_store, must_exist=True) as store:
        for unit in MAKE.KILLED_UNITS[:2]:
            got = store.read_unit(RUNS["killed"], unit)
            for name, values in MAKE.killed_columns(unit).items():
                assert got[name].dtype == values.dtype and got[name].shape == values.shape, name
                np.testing.assert_array_equal(got[name], values)


def test_check_finds_the_killed_runs_gone_holder_and_nothing_else(old_store):
    with open_store(old_store, must_exist=True) as store:
        report = check_store(store, verify=True)
        assert not report.orphans and not report.missing and not report.changed and report.unverified == 0
        assert report.units == len(EXPECTED["unit_files"])
        assert report.stale_runs == [RUNS["killed"]] and report.gone_holders == 1
        assert [h.alive for h in store.holders(RUNS["killed"])] == [False]


def test_cli_runs_and_show_print_what_they_printed_for_the_writer(old_store):
    runner = CliRunner()
    listed = runner.invoke(app, ["runs", "--store", str(old_store), "--json"])
    assert listed.exit_code == EXPECTED["cli"]["runs"]["exit_code"] == 0, listed.output
    assert json.loads(listed.stdout) == EXPECTED["cli"]["runs"]["json"]
    for role, want in EXPECTED["cli"]["show"].items():
        shown = runner.invoke(app, ["show", RUNS[role], "--store", str(old_store), "--json"])
        assert shown.exit_code == want["exit_code"], shown.output  # 1: the interrupted run has no metrics yet
        assert json.loads(shown.stdout) == want["json"]


def test_the_killed_run_resumes_where_it_stopped(old_store):
    """What a driver does on resume: skip the stored units, claim the rest, commit each once,
    then put the run's metrics and mark it complete."""
    run = RUNS["killed"]
    with open_store(old_store) as store:
        assert store.clear_gone_holders() == 1
        holder = store.open_holder(run, ttl=30)
        stored = store.completed_units(run)
        todo = [u for u in MAKE.KILLED_UNITS if u not in stored]
        assert todo == [MAKE.KILLED_UNITS[2]]
        assert store.claim_unit(run, MAKE.KILLED_UNITS[0], holder) == ("stored", None)
        assert store.claim_unit(run, todo[0], holder) == ("claimed", None)
        store.set_run_status(run, "running")
        assert store.write_unit(run, todo[0], MAKE.killed_columns(todo[0]), {"samples": 5}, replace=False)
        assert not store.write_unit(run, todo[0], MAKE.killed_columns(MAKE.KILLED_UNITS[0]), replace=False)
        store.put_metrics(run, [("error", "fog/1", 0.25), ("error", "fog/2", 0.5), ("mce", "", 1.25)])
        store.set_run_status(run, "complete")
        store.close_holder(holder)
    with open_store(old_store, must_exist=True) as store:
        record = store.get_run(run)
        assert (record.status, record.n_units_done) == ("complete", 3) and record.finished_at is not None
        assert sorted(store.completed_units(run)) == sorted(MAKE.KILLED_UNITS)
        assert MAKE.column_digest(store.read_unit(run, todo[0])) == MAKE.column_digest(MAKE.killed_columns(todo[0]))
        assert store.get_metrics(run)[-1] == ("mce", "", 1.25)
        assert store.stale_runs() == [] and store.holders() == []
        report = check_store(store, verify=True)
        assert report.clean, report.format()
