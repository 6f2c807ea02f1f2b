"""One home for predictions, file hashes, holders and leases, run states, `store check`
(SQLite always; PostgreSQL when the marked tests can get a server)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from sqlalchemy import create_engine, text

from robustlab.errors import DataError, StoreError
from robustlab.store import SCHEMA_VERSION, open_store
from robustlab.store.check import check_store
from robustlab.store.home import MARKER_FILE
from robustlab.store.location import PREDICTIONS_ENV
from robustlab.store.predictions import PredictionsChangedError

from .test_store import register, unit_columns

POSTGRES = pytest.param("postgres", marks=pytest.mark.postgres)


@pytest.fixture(params=["sqlite", POSTGRES])
def backend(request, tmp_path):
    """``(location, default predictions folder)`` of a new store on each backend."""
    if request.param == "sqlite":
        return tmp_path / "store", tmp_path / "store" / "predictions"
    return request.getfixturevalue("postgres_url"), tmp_path / "shared" / "predictions"


def make_store(backend, monkeypatch):
    location, folder = backend
    if isinstance(location, str):  # PostgreSQL: the folder comes from the environment, as on a cluster
        monkeypatch.setenv(PREDICTIONS_ENV, str(folder))
    store = open_store(location)
    run_id = register(store)
    store.write_unit(run_id, "fog/1", unit_columns(4, seed=1))
    store.write_unit(run_id, "fog/2", unit_columns(4, seed=2))
    store.close()
    monkeypatch.delenv(PREDICTIONS_ENV, raising=False)
    return location, folder, run_id


# --- one home for predictions ----------------------------------------------------------------


def test_the_catalog_records_its_folder_and_every_later_open_uses_it(backend, monkeypatch, tmp_path):
    """Resuming without ROBUSTLAB_PREDICTIONS_DIR used ./.robustlab/predictions and recomputed
    everything there (fails on the old code)."""
    location, folder, run_id = make_store(backend, monkeypatch)
    assert (folder / MARKER_FILE).is_file()
    monkeypatch.chdir(tmp_path)
    with open_store(location) as store:  # no folder given: the recorded one
        assert store.predictions_dir == folder
        assert store.completed_units(run_id) == {"fog/1", "fog/2"}
    assert not (tmp_path / ".robustlab").exists()


def test_a_driver_told_another_folder_is_refused_naming_both(backend, monkeypatch, tmp_path):
    location, folder, _ = make_store(backend, monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    with pytest.raises(StoreError) as caught:
        open_store(location, predictions_dir=elsewhere)
    assert str(folder) in str(caught.value) and str(elsewhere) in str(caught.value)
    monkeypatch.setenv(PREDICTIONS_ENV, str(elsewhere))
    if isinstance(location, str):
        with pytest.raises(StoreError, match=PREDICTIONS_ENV):
            open_store(location)
    assert not elsewhere.exists()


def test_a_driver_that_cannot_see_the_folder_refuses_to_use_it(backend, monkeypatch, tmp_path):
    location, folder, run_id = make_store(backend, monkeypatch)
    folder.rename(tmp_path / "unmounted")
    with open_store(location) as store:
        assert [r.id for r in store.list_runs()] == [run_id]  # the catalog alone still reads
        for use in (lambda: store.completed_units(run_id), lambda: store.read_predictions(run_id),
                    lambda: store.write_unit(run_id, "fog/3", unit_columns(2))):
            with pytest.raises(StoreError, match="cannot see the predictions folder") as caught:
                use()
            assert str(folder) in str(caught.value) and "does not exist" in str(caught.value)
    assert not folder.exists()  # nothing was written where the catalog does not expect it
    folder.mkdir(parents=True)  # an empty mount point is not the store's folder either
    with open_store(location) as store, pytest.raises(StoreError, match=MARKER_FILE):
        store.unit_meta(run_id)


def test_two_stores_cannot_share_a_predictions_folder(tmp_path):
    with open_store(tmp_path / "a", predictions_dir=tmp_path / "shared"):
        pass
    with pytest.raises(StoreError, match="belongs to another store"):
        open_store(tmp_path / "b", predictions_dir=tmp_path / "shared")


def test_a_moved_folder_is_recorded_with_relocate(tmp_path):
    with open_store(tmp_path / "s", predictions_dir=tmp_path / "p1") as store:
        run_id = register(store)
        store.write_unit(run_id, "u", unit_columns(3))
    shutil.move(tmp_path / "p1", tmp_path / "p2")
    with pytest.raises(StoreError, match="relocate"):
        open_store(tmp_path / "s", predictions_dir=tmp_path / "p2")
    with pytest.raises(StoreError, match="does not hold the predictions"):
        open_store(tmp_path / "s", predictions_dir=tmp_path / "empty", relocate=True)
    with open_store(tmp_path / "s", predictions_dir=tmp_path / "p2", relocate=True) as store:
        assert store.completed_units(run_id) == {"u"}
    with open_store(tmp_path / "s") as store:
        assert store.predictions_dir == tmp_path / "p2"


def test_an_sqlite_store_folder_moves_as_a_whole(tmp_path):
    with open_store(tmp_path / "s") as store:
        run_id = register(store)
        store.write_unit(run_id, "u", unit_columns(3))
    shutil.copytree(tmp_path / "s", tmp_path / "copy")
    with open_store(tmp_path / "copy") as store:
        assert store.predictions_dir == tmp_path / "copy" / "predictions"
        assert store.completed_units(run_id) == {"u"}


# --- schema version 1 -> 2 --------------------------------------------------------------------


def downgrade_to_v1(url: str) -> None:
    """Make a current catalog look as version 1 wrote it (no hashes, no store_info/holders/leases)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        for table in ("store_info", "holders", "leases"):
            conn.execute(text(f"DROP TABLE {table}"))
        conn.execute(text("ALTER TABLE units DROP COLUMN sha256"))
        conn.execute(text("UPDATE robustlab_schema SET version = 1"))
    engine.dispose()


def test_a_version_1_store_is_migrated_and_adopts_its_folder(backend, monkeypatch, tmp_path):
    location, folder, run_id = make_store(backend, monkeypatch)
    with open_store(location) as store:
        url = store.location.url
    downgrade_to_v1(url)
    (folder / MARKER_FILE).unlink()
    migrated = 1
    if isinstance(location, str):  # a driver without the folder: refused (the schema is migrated, no folder recorded)
        monkeypatch.chdir(tmp_path)
        with pytest.raises(StoreError, match="none of their files is under"):
            open_store(location)
        migrated = None
    kwargs = {"predictions_dir": folder} if isinstance(location, str) else {}
    with open_store(location, **kwargs) as store:
        assert store.migrated_from == migrated
        assert store.completed_units(run_id) == {"fog/1", "fog/2"}
        np.testing.assert_array_equal(store.read_unit(run_id, "fog/1")["top5"], unit_columns(4, seed=1)["top5"])
        store.write_unit(run_id, "fog/3", unit_columns(2))  # hashed from now on
        assert [sha is None for _, unit, _, sha in store.unit_files()] == [True, True, False]
    assert (folder / MARKER_FILE).is_file()
    with open_store(location) as store:
        assert store.migrated_from is None and store.predictions_dir == folder
        assert store._db.run(lambda c: c.execute(text("SELECT version FROM robustlab_schema")).scalar(),
                             write=False) == SCHEMA_VERSION


# --- file hashes ------------------------------------------------------------------------------


def test_a_swapped_or_replaced_file_is_detected_when_read(store):
    """A file replaced by another of the same length was read as if it were the unit's (fails on the old code)."""
    run_id = register(store)
    store.write_unit(run_id, "fog/1", unit_columns(4, seed=1))
    store.write_unit(run_id, "fog/2", unit_columns(4, seed=2))
    files = {unit: store.predictions_dir / file for _, unit, file, _ in store.unit_files()}
    one, two = files["fog/1"].read_bytes(), files["fog/2"].read_bytes()
    files["fog/1"].write_bytes(two)
    files["fog/2"].write_bytes(one)
    with pytest.raises(PredictionsChangedError) as caught:
        store.read_predictions(run_id)
    assert isinstance(caught.value, DataError)
    message = str(caught.value)
    assert str(files["fog/1"]) in message and "delete_unit" in message and "replaced" in message
    store.delete_unit(run_id, "fog/1")
    store.delete_unit(run_id, "fog/2")
    assert store.completed_units(run_id) == set()


# --- holders, leases and run states ------------------------------------------------------------


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_claims_share_units_between_holders(store):
    run_id = register(store)
    a, b = store.open_holder(run_id, ttl=60), store.open_holder(run_id, ttl=60)
    assert store.claim_unit(run_id, "u1", a) == ("claimed", None)
    assert store.claim_unit(run_id, "u1", a) == ("claimed", None)  # again: still ours
    state, other = store.claim_unit(run_id, "u1", b)
    assert state == "held" and other.holder == a and other.pid == os.getpid()
    store.write_unit(run_id, "u1", unit_columns(2))
    assert store.claim_unit(run_id, "u1", b) == ("stored", None)
    assert store.claim_unit(run_id, "u2", b)[0] == "claimed"
    store.close_holder(b)  # a holder that ends releases its claims
    assert store.claim_unit(run_id, "u2", a)[0] == "claimed"


def test_a_holder_that_is_gone_loses_its_claims(store):
    run_id = register(store)
    expiring, other = store.open_holder(run_id, ttl=0.5), store.open_holder(run_id, ttl=60)
    assert store.claim_unit(run_id, "u", expiring)[0] == "claimed"
    assert store.claim_unit(run_id, "u", other)[0] == "held"
    time.sleep(1.0)  # no heartbeat: expired
    assert store.claim_unit(run_id, "u", other)[0] == "claimed"
    store.renew_holder(expiring, run_id, ttl=60)  # renewing brings it back, without the lost claim
    assert store.claim_unit(run_id, "u", expiring)[0] == "held"


def test_a_killed_process_on_this_machine_is_gone_at_once(store):
    run_id = register(store)
    holder = store.open_holder(run_id, ttl=600)
    store._db.run(lambda c: c.execute(text("UPDATE holders SET pid = :pid, process = NULL"), {"pid": dead_pid()}),
                  write=True)
    store.set_run_status(run_id, "running")
    assert [h.alive for h in store.holders(run_id)] == [False]
    assert store.get_run(run_id).status == "interrupted"
    other = store.open_holder(run_id, ttl=60)
    assert store.claim_unit(run_id, "u", holder)[0] == "claimed"  # the dead one's id, as if it claimed
    assert store.claim_unit(run_id, "u", other)[0] == "claimed"


def test_running_is_shown_only_while_a_live_process_holds_the_run(store):
    """A run left "running" by a killed process showed "running" forever (fails on the old code)."""
    run_id = register(store)
    store.set_run_status(run_id, "running")
    assert store.get_run(run_id).status == "interrupted"
    assert [r.status for r in store.list_runs()] == ["interrupted"]
    holder = store.open_holder(run_id, ttl=60)
    assert store.get_run(run_id).status == "running"
    store.close_holder(holder)
    assert store.get_run(run_id).status == "interrupted"
    store.set_run_status(run_id, "interrupted")
    record = store.get_run(run_id)
    assert record.status == "interrupted" and record.finished_at is not None


# --- store check ------------------------------------------------------------------------------


def test_store_check_lists_orphans_and_repair_removes_them(store):
    run_id = register(store)
    store.write_unit(run_id, "fog/1", unit_columns(4, seed=1))
    store.write_unit(run_id, "fog/2", unit_columns(4, seed=2))
    store.write_unit(run_id, "fog/3", unit_columns(4, seed=3))
    folder = store.predictions_dir
    files = {unit: folder / file for _, unit, file, _ in store.unit_files()}
    orphan = folder / run_id / "fog_4-0000000000.1234abcd.parquet"  # written, never committed
    shutil.copy(files["fog/1"], orphan)
    stray = folder / "0123456789ab" / "x.parquet"  # a run the catalog does not know
    stray.parent.mkdir()
    stray.write_bytes(b"x")
    tmp = folder / run_id / ".fog_5.parquet.abc.tmp"  # a killed write
    tmp.write_bytes(b"half")
    files["fog/2"].unlink()
    files["fog/3"].write_bytes(files["fog/1"].read_bytes())
    store.set_run_status(run_id, "running")

    found = check_store(store, min_age=0)
    assert sorted(found.orphans) == sorted([orphan, stray, tmp]) and not found.clean
    assert [(u, p) for _, u, p in found.missing] == [("fog/2", files["fog/2"])]
    assert [(u, p) for _, u, p in found.changed] == [("fog/3", files["fog/3"])]
    assert found.stale_runs == [run_id]
    assert orphan.exists() and str(orphan) in found.format()

    repaired = check_store(store, repair=True, min_age=0)
    assert not orphan.exists() and not stray.exists() and not tmp.exists() and not stray.parent.exists()
    assert files["fog/1"].exists() and (folder / MARKER_FILE).exists()
    assert store.get_run(run_id).status == "interrupted"
    assert repaired.missing and repaired.changed and not repaired.clean  # listed, never removed
    store.delete_unit(run_id, "fog/2")
    store.delete_unit(run_id, "fog/3")
    assert check_store(store, min_age=0).clean


def test_store_check_leaves_young_files_and_live_runs_alone(store):
    run_id = register(store)
    holder = store.open_holder(run_id, ttl=60)
    (store.predictions_dir / run_id).mkdir(parents=True)
    being_written = store.predictions_dir / run_id / "u-0.abc.parquet"
    being_written.write_bytes(b"...")
    found = check_store(store, repair=True, min_age=0)
    assert found.in_use == [being_written] and being_written.exists()
    store.close_holder(holder)
    found = check_store(store, repair=True)  # young
    assert found.in_use == [being_written] and being_written.exists()


def test_store_check_command(tmp_path):
    from robustlab.cli import main

    with open_store(tmp_path / "s") as store:
        run_id = register(store)
        store.write_unit(run_id, "u", unit_columns(2))
        orphan = store.predictions_dir / run_id / "v-1.abcd.parquet"
        orphan.write_bytes(b"x")
        os.utime(orphan, (time.time() - 3600, time.time() - 3600))

    def cli(*args):
        saved = sys.argv
        sys.argv = ["robustlab", *args]
        try:
            main()
        except SystemExit as exc:
            return exc.code
        finally:
            sys.argv = saved

    assert cli("store", "check", "--store", str(tmp_path / "s")) == 1 and orphan.exists()
    assert cli("store", "check", "--store", str(tmp_path / "s"), "--repair", "--json") == 0
    assert not orphan.exists()
    assert cli("store", "check", "--store", str(tmp_path / "s")) == 0


def test_check_report_is_json_able(store):
    assert json.loads(json.dumps(check_store(store).to_dict()))["clean"] is True
