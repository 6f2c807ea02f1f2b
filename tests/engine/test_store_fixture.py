"""A store written by the previous version (before typed configs and presentations, issue 35) is read,
shown and resumed by this one: its runs keep their ids, ``show`` prints what it printed then, and the
interrupted run finishes with the metrics the previous version computed.

The fixture (tests/fixtures/store_v1, made by its make_fixture.py with that version) holds a complete
``adversarial-auc`` run and a ``corrupted`` run two of whose units were deleted. Run ids name the data's
and the model file's paths, so both are copied to the fixed path the fixture was made at.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from robustlab.engine import evaluate, load_result
from robustlab.engine.result_text import format_result
from robustlab.store import open_store

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store_v1"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())
FIXED = Path("/tmp/robustlab-store-fixture-v1")


@pytest.fixture
def old_store(tmp_path):
    """A copy of the fixture's store, with the data and the model file at the paths its runs name."""
    try:
        if (FIXED / "data").exists():
            shutil.rmtree(FIXED / "data")
        FIXED.mkdir(parents=True, exist_ok=True)
        shutil.copytree(FIXTURE / "data", FIXED / "data")
        shutil.copy(FIXTURE / "model.py", FIXED / "model.py")
    except OSError as exc:
        pytest.skip(f"the fixture's runs name files under {FIXED}, which cannot be written here ({exc})")
    store = tmp_path / "store"
    shutil.copytree(FIXTURE / "store", store)
    return store


def model_spec() -> str:
    return f"python:{FIXED / 'model.py'}:build"


def test_the_previous_version_s_runs_are_read_and_shown_as_they_were(old_store):
    with open_store(old_store) as store:
        runs = {r.benchmark: r for r in store.list_runs()}
        assert {b: r.id for b, r in runs.items()} == {b: e["run_id"] for b, e in EXPECTED["runs"].items()}
        adv = EXPECTED["runs"]["adversarial-auc"]
        result = load_result(store, adv["run_id"])
        assert result.config == adv["config"]  # the stored form, read back as it was written
        assert [list(m) for m in result.metrics] == adv["metrics"]
        assert result.to_dict()["summary"] == adv["summary"] and result.notes == adv["notes"]
        assert format_result(result) == adv["show"]
        interrupted = load_result(store, EXPECTED["runs"]["corrupted"]["run_id"])
        assert format_result(interrupted) == EXPECTED["interrupted_show"]
        assert interrupted.run_config.to_dict() == EXPECTED["runs"]["corrupted"]["config"]


def test_the_previous_version_s_interrupted_run_is_resumed_to_the_same_numbers(old_store):
    run = EXPECTED["runs"]["corrupted"]
    with open_store(old_store) as store:
        assert len(store.completed_units(run["run_id"])) == len(run["units"]) - len(EXPECTED["deleted"])
        result = evaluate(model_spec(), "corrupted", FIXED / "data", store=store, progress="none",
                          fingerprint="content", device="cpu", **run["options"])
        assert result.run_id == run["run_id"]  # the same config, hashed to the same id
        assert result.units_computed == len(EXPECTED["deleted"]) and result.units_total == len(run["units"])
        assert sorted(store.completed_units(run["run_id"])) == run["units"]
        assert [list(m) for m in result.metrics] == run["metrics"]
        assert result.to_dict()["summary"] == run["summary"] and result.notes == run["notes"]
        assert format_result(result) == run["show"]
        again = evaluate(model_spec(), "adversarial-auc", FIXED / "data", store=store, progress="none",
                         fingerprint="content", device="cpu", **EXPECTED["runs"]["adversarial-auc"]["options"])
        assert again.run_id == EXPECTED["runs"]["adversarial-auc"]["run_id"] and again.units_computed == 0


def test_showing_a_run_imports_no_renderer(old_store):
    """``show`` reads a run's presentation from the report package, not its renderers: neither matplotlib
    nor Jinja2 is imported (the figures are drawn only when a report is written)."""
    import os
    import subprocess
    import sys

    code = ("import sys, robustlab.engine as e; from robustlab.engine.result_text import format_result; "
            "from robustlab.store import open_store\n"
            f"with open_store({str(old_store)!r}) as s:\n"
            f"    text = format_result(e.load_result(s, {EXPECTED['runs']['corrupted']['run_id']!r}))\n"
            "print('corruption' in text, 'matplotlib' in sys.modules, 'jinja2' in sys.modules)")
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "False", "False"]
