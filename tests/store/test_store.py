"""The store's API on every backend (SQLite; PostgreSQL when marked tests can get a server)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from robustlab.errors import InputError, StoreError
from robustlab.store import RunNotFoundError, open_store, run_id_for

CONFIG = {"corruptions": ["fog", "snow"], "severities": [1, 2, 3], "batch_size": 64}


def unit_columns(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "sample_id": np.array([f"img_{seed}_{i:05d}.JPEG" for i in range(n)]),
        "label": rng.integers(0, 1000, n),
        "top5": rng.integers(0, 1000, (n, 5)),
        "top5_scores": rng.random((n, 5), dtype=np.float32),
        "correct": rng.random(n) > 0.5,
    }


def register(store, **overrides):
    args = {
        "model": "torchvision:resnet18",
        "benchmark": "imagenet-c",
        "dataset": "/data/imagenet-c",
        "config": CONFIG,
    }
    return store.register_run(**{**args, **overrides})


def test_register_is_deterministic_and_idempotent(store):
    run_id = register(store, model_spec={"weights": "IMAGENET1K_V1"})
    assert (
        run_id
        == register(store)
        == run_id_for("torchvision:resnet18", "imagenet-c", "/data/imagenet-c", CONFIG)
    )
    assert run_id == register(
        store, config=dict(reversed(list(CONFIG.items())))
    )  # key order does not matter
    assert len(run_id) == 12 and int(run_id, 16) >= 0
    assert [r.id for r in store.list_runs()] == [run_id]
    record = store.get_run(run_id)
    assert (record.model, record.benchmark, record.dataset) == (
        "torchvision:resnet18",
        "imagenet-c",
        "/data/imagenet-c",
    )
    assert record.config == CONFIG and record.model_spec == {"weights": "IMAGENET1K_V1"}
    assert record.status == "pending" and record.finished_at is None and record.n_units_done == 0
    assert record.created_at.tzinfo is not None


def test_numpy_values_in_config_hash_like_plain_ones(store):
    plain = register(store, config={"severity": 3, "scale": 0.5, "dims": [1, 2]})
    assert plain == register(
        store, config={"severity": np.int64(3), "scale": np.float32(0.5), "dims": np.array([1, 2])}
    )


@pytest.mark.parametrize(
    "change",
    [
        {"model": "timm:resnet50"},
        {"benchmark": "corrupted"},
        {"dataset": "/other"},
        {"config": {**CONFIG, "batch_size": 32}},
    ],
)
def test_any_change_gives_another_run(store, change):
    assert register(store) != register(store, **change)
    assert len(store.list_runs()) == 2


def test_unserialisable_config_is_refused(store):
    with pytest.raises(InputError, match="config"):
        register(store, config={"transform": object()})
    with pytest.raises(InputError, match="non-finite"):
        register(store, config={"eps": float("nan")})


def test_get_run_by_prefix_and_clear_errors(store):
    ids = [register(store, config={"i": i}) for i in range(40)]
    assert store.get_run(ids[0][:8]).id == ids[0]
    first_chars = [i[0] for i in ids]
    shared = next(c for c in first_chars if first_chars.count(c) > 1)
    with pytest.raises(RunNotFoundError, match="several runs"):
        store.get_run(shared)
    with pytest.raises(RunNotFoundError, match="robustlab runs"):
        store.get_run("zzzz")
    with pytest.raises(RunNotFoundError):
        store.get_run("%")  # LIKE wildcards are matched literally


def test_list_runs_filters(store):
    a = register(store)
    b = register(store, model="timm:vit")
    c = register(store, benchmark="corrupted")
    assert {r.id for r in store.list_runs()} == {a, b, c}
    assert {r.id for r in store.list_runs(model="timm:vit")} == {b}
    assert {r.id for r in store.list_runs(benchmark="imagenet-c")} == {a, b}
    assert store.list_runs(benchmark="corrupted", model="timm:vit") == []


def test_units_round_trip_and_resume_semantics(store):
    run_id = register(store)
    written = {
        f"fog/{s}/shard-{k:04d}": unit_columns(50 + k, seed=10 * s + k)
        for s in (1, 2)
        for k in range(3)
    }
    assert store.completed_units(run_id) == set()
    for unit, columns in written.items():
        store.write_unit(run_id, unit, columns, meta={"seconds": 0.5})
    assert store.completed_units(run_id) == set(written)
    assert store.get_run(run_id).n_units_done == 6
    back = store.read_predictions(run_id)
    assert list(back) == sorted(written)
    for unit, columns in written.items():
        got = store.read_unit(run_id, unit)
        for name, array in columns.items():
            assert got[name].dtype == array.dtype and got[name].shape == array.shape
            np.testing.assert_array_equal(got[name], array)
    some = store.read_predictions(run_id, units=["fog/2/shard-0001", "fog/1/shard-0000"])
    assert list(some) == ["fog/2/shard-0001", "fog/1/shard-0000"]


def test_lazy_predictions_read_each_unit_on_lookup(store):
    run_id = register(store)
    written = {f"fog/1/shard-{k:04d}": unit_columns(20 + k, seed=k) for k in range(3)}
    for unit, columns in written.items():
        store.write_unit(run_id, unit, columns)
    lazy = store.read_predictions(run_id, lazy=True)
    assert not isinstance(lazy, dict) and list(lazy) == sorted(written) and len(lazy) == 3
    assert "fog/1/shard-0001" in lazy and "fog/9/shard-0000" not in lazy
    for unit, columns in lazy.items():
        for name, array in written[unit].items():
            np.testing.assert_array_equal(columns[name], array)
    assert lazy["fog/1/shard-0000"] is not lazy["fog/1/shard-0000"]  # read again, nothing kept
    with pytest.raises(KeyError):
        lazy["fog/9/shard-0000"]
    with pytest.raises(StoreError, match="fog/9"):
        store.read_predictions(run_id, ["fog/9/shard-0000"], lazy=True)


def test_rewriting_a_unit_replaces_it(store):
    run_id = register(store)
    store.write_unit(run_id, "snow/5/shard-0000", unit_columns(10, seed=1))
    store.write_unit(run_id, "snow/5/shard-0000", unit_columns(7, seed=2))
    assert store.get_run(run_id).n_units_done == 1
    assert len(store.read_unit(run_id, "snow/5/shard-0000")["label"]) == 7
    files = list((store.predictions_dir / run_id).iterdir())
    assert len(files) == 1 and files[0].suffix == ".parquet"


def test_a_unit_whose_file_vanished_is_redone_on_resume(store):
    run_id = register(store)
    store.write_unit(run_id, "a", unit_columns(3))
    store.write_unit(run_id, "b", unit_columns(3))
    next((store.predictions_dir / run_id).glob("a-*.parquet")).unlink()
    assert store.completed_units(run_id) == {"b"}
    with pytest.raises(StoreError, match="delete_unit"):
        store.read_unit(run_id, "a")
    store.delete_unit(run_id, "a")
    store.write_unit(run_id, "a", unit_columns(3))
    assert store.completed_units(run_id) == {"a", "b"}


def test_reading_a_unit_not_written_names_it(store):
    run_id = register(store)
    with pytest.raises(StoreError, match="'fog/1/shard-0000'.*not finished"):
        store.read_unit(run_id, "fog/1/shard-0000")


def test_writing_to_an_unknown_run_leaves_nothing(store):
    with pytest.raises(RunNotFoundError):
        store.write_unit("0123456789ab", "u", unit_columns(2))
    assert not (store.predictions_dir / "0123456789ab").exists() or not any(
        (store.predictions_dir / "0123456789ab").iterdir()
    )


def test_bad_columns_do_not_mark_the_unit_done(store):
    run_id = register(store)
    with pytest.raises(InputError, match="different lengths"):
        store.write_unit(run_id, "u", {"a": np.arange(3), "b": np.arange(2)})
    assert store.completed_units(run_id) == set()


def test_metrics_are_replaced_kept_in_order_and_keep_nan_and_inf(store):
    run_id = register(store)
    store.put_metrics(run_id, [("old", "", 1.0)])
    rows = [
        ("mCE", "", 0.7512),
        ("error", "fog/3", 0.25),
        ("error", "fog", float("nan")),
        ("ce", "snow", math.inf),
    ]
    store.put_metrics(run_id, iter(rows))
    got = store.get_metrics(run_id)
    assert [(n, s) for n, s, _ in got] == [(n, s) for n, s, _ in rows]
    assert (
        got[0][2] == 0.7512
        and got[1][2] == 0.25
        and math.isnan(got[2][2])
        and got[3][2] == math.inf
    )
    with pytest.raises(InputError, match="twice"):
        store.put_metrics(run_id, [("a", "", 1), ("a", "", 2)])
    with pytest.raises(InputError, match="number"):
        store.put_metrics(run_id, [("a", "", "high")])
    assert len(store.get_metrics(run_id)) == 4  # a refused put changes nothing


def test_two_drivers_putting_one_runs_metrics_at_once_never_collide(store, store_location):
    """Two drivers that finish one shared run both put its metrics. On PostgreSQL the second one's
    insert met the first one's uncommitted rows and failed with a unique violation (a CI failure
    of the two-driver Ray test; fails on the old code)."""
    import threading

    run_id = register(store)
    rows = [(f"m{i}", s, float(i)) for i in range(20) for s in ("", "fog/1", "fog/2")]
    start, errors = threading.Barrier(2), []

    def driver() -> None:
        try:
            with open_store(**store_location) as own:
                start.wait()
                for _ in range(15):
                    own.put_metrics(run_id, rows)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=driver) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.get_metrics(run_id) == rows


def test_problems_are_recorded_once_per_sample(store):
    run_id = register(store)
    store.record_problem(run_id, "fog/1/shard-0000", "bad.JPEG", "not a JPEG file")
    store.record_problem(run_id, "fog/1/shard-0000", "bad.JPEG", "truncated JPEG")  # a retried unit
    store.record_problem(run_id, "fog/2/shard-0000", "bad.JPEG", "truncated JPEG")
    assert store.problems(run_id) == [
        ("fog/1/shard-0000", "bad.JPEG", "truncated JPEG"),
        ("fog/2/shard-0000", "bad.JPEG", "truncated JPEG"),
    ]


def test_status_changes_and_finish_time(store):
    run_id = register(store)
    store.open_holder(run_id, ttl=60)  # "running" means a live process holds the run
    store.set_run_status(run_id, "running")
    assert store.get_run(run_id).status == "running"
    store.set_run_status(run_id, "complete")
    record = store.get_run(run_id)
    assert record.status == "complete" and record.finished_at >= record.created_at
    store.set_run_status(run_id, "running")
    assert store.get_run(run_id).finished_at is None
    with pytest.raises(InputError, match="complete"):
        store.set_run_status(run_id, "done")


def test_delete_run_removes_rows_and_files(store):
    keep = register(store, config={"keep": True})
    run_id = register(store)
    for target in (keep, run_id):
        store.write_unit(target, "u", unit_columns(4))
        store.put_metrics(target, [("m", "", 1.0)])
        store.record_problem(target, "u", "s", "why")
    store.delete_run(run_id[:6])
    assert [r.id for r in store.list_runs()] == [keep]
    assert not (store.predictions_dir / run_id).exists()
    with pytest.raises(RunNotFoundError):
        store.completed_units(run_id)
    assert store.completed_units(keep) == {"u"} and store.get_metrics(keep) and store.problems(keep)
    assert register(store) == run_id and store.completed_units(run_id) == set()  # a fresh start


def test_store_reopens_and_pickles(store_location):
    with open_store(**store_location) as store:
        run_id = register(store)
        store.write_unit(run_id, "u", unit_columns(3))
        clone = pickle.loads(pickle.dumps(store))
    try:
        assert clone.completed_units(run_id) == {"u"}
    finally:
        clone.close()
    with open_store(**store_location) as again:
        assert again.migrated_from is None and again.completed_units(run_id) == {"u"}


def test_durable_writes_round_trip(store_location):
    with open_store(**store_location, durable=True) as store:
        run_id = register(store)
        store.write_unit(run_id, "u", unit_columns(5))
        np.testing.assert_array_equal(store.read_unit(run_id, "u")["top5"], unit_columns(5)["top5"])


def test_threads_share_one_store(store):
    from concurrent.futures import ThreadPoolExecutor

    run_id = register(store)
    names = [f"t/{k}" for k in range(12)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda u: store.write_unit(run_id, u, unit_columns(4, seed=len(u))), names))
    assert store.completed_units(run_id) == set(names)
