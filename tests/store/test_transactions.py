"""The store's transactions are named functions of a connection: each can be run, and several
composed, in one transaction of its own (SQLite and PostgreSQL)."""

from __future__ import annotations

import numpy as np
import pytest

from robustlab.errors import InputError, StoreError
from robustlab.store import RunNotFoundError, run_id_for
from robustlab.store.holders import claim, insert_holder, remove_gone_holders
from robustlab.store.identity import canonical_json, resolve_run
from robustlab.store.results import metric_rows, read_metrics, replace_metrics
from robustlab.store.runs import delete_run_rows, insert_run, read_run, read_runs, write_status
from robustlab.store.units import commit_unit, rows_to_read, unit_rows


def _run_row(model: str) -> dict:
    config = {"k": 1}
    return {"id": run_id_for(model, "bench", "data", config), "model": model, "benchmark": "bench",
            "dataset": "data", "config_json": canonical_json(config), "model_spec_json": None,
            "status": "pending", "created_at": 1.0e9, "finished_at": None}


def test_one_transaction_composes_several_and_rolls_back_as_one(store):
    row = _run_row("m")

    def register_and_fail(conn):
        insert_run(conn, row)
        replace_metrics(conn, row["id"], metric_rows([("error", "", 0.5)]))
        assert read_run(conn, row["id"]).status == "pending"  # seen inside the transaction
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        store._db.run(register_and_fail, write=True)
    assert store.list_runs() == []  # nothing of the failed transaction stayed

    def register_and_finish(conn):
        insert_run(conn, row)
        write_status(conn, row["id"], "complete", 2.0e9)
        replace_metrics(conn, row["id"], metric_rows([("error", "", 0.5), ("error", "fog", float("nan"))]))
        return read_metrics(conn, row["id"])

    rows = store._db.run(register_and_finish, write=True)
    assert [tuple(r) for r in rows] == [("error", "", 0.5), ("error", "fog", None)]
    (record,) = store._db.run(read_runs, write=False)
    assert (record.id, record.status, record.finished_at.timestamp()) == (row["id"], "complete", 2.0e9)
    assert store.get_metrics(row["id"])[1][2] != store.get_metrics(row["id"])[1][2]  # NaN, read back


def test_resolve_run_names_one_run_or_says_why_not(store):
    first, second = _run_row("d"), _run_row("l")  # ids 787d152b2e49 and 7e2cafd98c01
    for row in (first, second):
        store._db.run(lambda conn, row=row: insert_run(conn, row), write=True)

    def resolve(name):
        return store._db.run(lambda conn: resolve_run(conn, name, "the-catalog"), write=False)

    assert resolve(first["id"]) == first["id"]
    assert resolve(first["id"][:6]) == first["id"]
    with pytest.raises(RunNotFoundError, match=r"no run 'zz' in the store the-catalog: list the runs"):
        resolve("zz")
    with pytest.raises(RunNotFoundError, match=r"run prefix '7' matches several runs \(787d152b2e49, 7e2cafd98c01\)"):
        resolve("7")
    with pytest.raises(InputError, match="id or an id prefix"):
        resolve("")


def test_a_hash_collision_is_refused(store):
    row = _run_row("a")
    store._db.run(lambda conn: insert_run(conn, row), write=True)
    other = {**row, "model": "b"}  # same id, another run
    with pytest.raises(StoreError, match="hash collision"):
        store._db.run(lambda conn: insert_run(conn, other), write=True)


def test_commit_claim_and_delete_as_functions(store):
    run = store.register_run("m", "bench", "data", {"k": 2})
    folder = store.require_predictions()
    store.write_unit(run, "u1", {"x": np.arange(3)})
    (file,) = [f for (u, f) in store._db.run(lambda c: unit_rows(c, run, "unit", "file"), write=False)]
    row = {"run_id": run, "unit": "u1", "file": "elsewhere.parquet", "n_rows": 3, "meta_json": "{}",
           "written_at": 1.0, "sha256": None}
    # committed once: a second commit that does not replace keeps the stored file
    assert not store._db.run(lambda c: commit_unit(c, row, False, folder, "w"), write=True)
    rid, rows = store._db.run(lambda c: rows_to_read(c, run, None), write=False)
    assert rid == run and rows["u1"].file == file
    with pytest.raises(RunNotFoundError, match="no run 'ffffffffffff' in the store w"):
        store._db.run(lambda c: commit_unit(c, {**row, "run_id": "f" * 12}, True, folder, "w"), write=True)

    store._db.run(lambda c: insert_holder(c, run, "h-gone", -1.0), write=True)  # expired at once
    store._db.run(lambda c: insert_holder(c, run, "h-live", 60.0), write=True)
    assert store._db.run(lambda c: claim(c, run, "u1", "h-live", folder), write=True) == ("stored", None)
    assert store._db.run(lambda c: claim(c, run, "u2", "h-gone", folder), write=True) == ("claimed", None)
    # a gone holder's claim is taken over; a live holder's is not
    assert store._db.run(lambda c: claim(c, run, "u2", "h-live", folder), write=True) == ("claimed", None)
    state, other = store._db.run(lambda c: claim(c, run, "u2", "h-gone", folder), write=True)
    assert state == "held" and other.holder == "h-live" and other.alive
    assert store._db.run(remove_gone_holders, write=True) == 1

    assert store._db.run(lambda c: delete_run_rows(c, run), write=True) == run
    assert store.list_runs() == [] and store.holders() == [] and store.unit_files() == []


@pytest.mark.parametrize("rows, message", [
    ([("error", "", "x")], "must be \\(name, setting, value\\) with a number value"),
    ([("", "", 1.0)], "name must be a non-empty string"),
    ([("error", "", 1.0), ("error", "", 2.0)], "is given twice"),
])
def test_metric_rows_refuse_bad_rows(rows, message):
    with pytest.raises(InputError, match=message):
        metric_rows(rows)
