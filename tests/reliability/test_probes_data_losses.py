"""The data losses and the worker flood of issue 37's probes, each with a test that fails on the old
code: a copied store relocated onto the original's predictions folder (a later `store check
--repair` of the copy deleted the original's units), `subtypes` over an existing split, and
`-j 1000` starting a thousand workers."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

from robustlab.data.jobs import cap_workers, default_workers, worker_count
from robustlab.data.subtypes import write_split, split_imagenet22k
from robustlab.data.images import write_image
from robustlab.errors import InputError, RobustlabWarning, StoreError
from robustlab.store import open_store
from robustlab.store.check import check_store

from .helpers import EVALUATE, assert_error, assert_ok, image_folder, run
from store.test_store import register, unit_columns


def store_with_units(path):
    with open_store(path) as store:
        run_id = register(store)
        store.write_unit(run_id, "fog/1", unit_columns(3, seed=1))
        store.write_unit(run_id, "fog/2", unit_columns(3, seed=2))
    return run_id


def test_a_copied_store_cannot_be_relocated_onto_the_originals_folder(tmp_path):
    run_id = store_with_units(tmp_path / "st")
    shutil.copytree(tmp_path / "st", tmp_path / "copy")
    with pytest.raises(StoreError, match="is the predictions folder of the store .*st/catalog.db; the store .*copy"):
        open_store(tmp_path / "copy", predictions_dir=tmp_path / "st" / "predictions", relocate=True)
    result = run("store", "relocate", tmp_path / "st" / "predictions", "--store", tmp_path / "copy")
    assert_error(result, "Two catalogs must not share one predictions folder")
    # the original writes on; the copy's repair never touches the original's units
    with open_store(tmp_path / "st") as store:
        store.write_unit(run_id, "fog/3", unit_columns(3, seed=3))
    with open_store(tmp_path / "copy") as copy:
        assert copy.predictions_dir == tmp_path / "copy" / "predictions"  # the copy keeps its own folder
        check_store(copy, repair=True, min_age=0)
    with open_store(tmp_path / "st") as store:
        assert store.completed_units(run_id) == {"fog/1", "fog/2", "fog/3"}
        assert {p.name for p in (tmp_path / "st" / "predictions" / run_id).iterdir()} == {
            file.split("/")[-1] for _, _, file, _ in store.unit_files()}


def test_a_copy_bound_to_the_originals_folder_by_an_old_version_is_refused(tmp_path):
    """A copy relocated before the marker named its owner: once the original has claimed its
    folder, the copy refuses to use it instead of deleting the original's files."""
    run_id = store_with_units(tmp_path / "st")
    shutil.copytree(tmp_path / "st", tmp_path / "copy")
    marker = tmp_path / "st" / "predictions" / ".robustlab-store"
    store_id = marker.read_text().splitlines()[0]
    marker.write_text(store_id + "\n")  # as the old version wrote it
    with open_store(tmp_path / "st") as store:  # the original claims its folder
        store.write_unit(run_id, "fog/3", unit_columns(3, seed=3))
    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{tmp_path / 'copy' / 'catalog.db'}")
    with engine.begin() as conn:  # what the old `store relocate` recorded
        conn.execute(text("UPDATE store_info SET value=:v WHERE key='predictions_dir'"),
                     {"v": str(tmp_path / "st" / "predictions")})
    engine.dispose()
    with open_store(tmp_path / "copy") as copy:
        with pytest.raises(StoreError, match="belongs to the store .*st/catalog.db, of which this one is a copy"):
            check_store(copy, repair=True, min_age=0)
    with open_store(tmp_path / "st") as store:
        assert store.completed_units(run_id) == {"fog/1", "fog/2", "fog/3"}


def test_relocating_a_moved_folder_still_works(tmp_path):
    run_id = store_with_units(tmp_path / "st")
    shutil.move(tmp_path / "st" / "predictions", tmp_path / "elsewhere")
    with open_store(tmp_path / "st", predictions_dir=tmp_path / "elsewhere", relocate=True) as store:
        assert store.completed_units(run_id) == {"fog/1", "fog/2"}
        assert check_store(store, min_age=0).clean


SEEN = {"n02085620": 0, "n02086240": 0, "n01641577": 1, "n01644373": 1}


@pytest.fixture
def imagenet22k(tmp_path):
    root = tmp_path / "22k"
    rng = np.random.default_rng(0)
    for wnid in [*SEEN, "n02084732", "n01627976"]:
        for k in range(6):
            write_image(root / wnid / f"{wnid}_{k}.JPEG", rng.integers(0, 255, (36, 36, 3)).astype(np.uint8))
    return root


def test_subtypes_over_an_existing_split_is_refused(imagenet22k, tmp_path):
    out = tmp_path / "split"
    def split(seed):  # seen images held out of the 22K copy: the test needs no ImageNet val
        return split_imagenet22k(imagenet22k, holdout=0.5, seed=seed, seen_from="holdout")

    write_split(split(0), out)
    train = (out / "train.txt").read_text()
    write_split(split(0), out)  # the same split again: fine
    with pytest.raises(InputError, match="holds another subtype split already"):
        write_split(split(1), out)
    assert (out / "train.txt").read_text() == train
    result = run("subtypes", imagenet22k, out, "--seed", "2", "--seen-from", "holdout")
    assert_error(result, "holds another subtype split already")
    assert (out / "train.txt").read_text() == train


def test_workers_are_capped_at_the_cpu_count_with_a_message(tmp_path):
    cores = default_workers()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cap_workers(1000) == cores and worker_count(1000) == cores
        assert cap_workers(cores) == cores and cap_workers(0) == 0
    assert any(issubclass(w.category, RobustlabWarning) and f"more than the {cores} CPU core(s)" in str(w.message)
               for w in caught)
    from robustlab.engine.executor import LocalExecutor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert LocalExecutor(workers=1000).workers == cores
    data = image_folder(tmp_path / "data")
    result = run(*[a for a in EVALUATE if a not in ("--workers", "0")], "-j", "1000", "--benchmark", "corrupted",
                 "--data", data, "--store", tmp_path / "store", "-c", "brightness", "-s", "1")
    assert_ok(result)
    assert f"warning: --workers 1000 is more than the {cores} CPU core(s) this process may use" in result.err
