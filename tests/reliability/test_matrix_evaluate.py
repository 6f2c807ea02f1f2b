"""The bad-input matrix for `robustlab evaluate` (benchmark ``corrupted`` on a labelled folder,
a tiny 2-class model)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.store import open_store

from .helpers import (
    EVALUATE,
    MODELS,
    assert_error,
    assert_no_temporaries,
    assert_ok,
    image_folder,
    picture,
    run,
    run_process,
    write_16bit_png,
    write_cmyk_jpeg,
    write_png_header_only,
    write_truncated_jpeg,
)



def evaluate(data: Path, store: Path, *extra: str, process: bool = False, **process_options):
    argv = [*EVALUATE, "--benchmark", "corrupted", "--data", str(data), "--store", str(store),
            "-c", "brightness", "-s", "1", "--json", *extra]
    return run_process(*argv, **process_options) if process else run(*argv)


def parsed(result) -> dict:
    assert_ok(result)
    return json.loads(result.out)


def metric(out: dict, name: str, setting: str) -> float:
    return next(m["value"] for m in out["metrics"] if m["name"] == name and m["setting"] == setting)


def problems(out: dict) -> dict[str, str]:
    return {p["sample_id"]: p["message"] for p in out["problems"]}


def predictions(store: Path, run_id: str) -> dict[str, dict[str, np.ndarray]]:
    with open_store(store) as st:
        return st.read_predictions(run_id)


def no_runs(store: Path) -> bool:
    if not (store / "catalog.db").exists():
        return True
    with open_store(store) as st:
        return st.list_runs() == []


# --- the cases ------------------------------------------------------------------------------------


def test_missing_path(tmp_path):
    assert_error(evaluate(tmp_path / "nowhere", tmp_path / "store"), "does not exist")
    assert no_runs(tmp_path / "store")


def test_empty_folder(tmp_path):
    (tmp_path / "data").mkdir()
    assert_error(evaluate(tmp_path / "data", tmp_path / "store"), "no class subfolders")
    (tmp_path / "data" / "cat").mkdir()
    assert_error(evaluate(tmp_path / "data", tmp_path / "store"), "no images found")
    assert no_runs(tmp_path / "store")


def test_unreadable_samples_are_recorded_problems(tmp_path):
    """Non-image files with an image name, a truncated JPEG, a self-referencing link: each is a
    recorded problem naming the file; files without an image extension are not samples."""
    data = image_folder(tmp_path / "data", per_class=2)
    (data / "cat" / "notes.txt").write_text("not a sample")
    (data / "cat" / "fake.png").write_text("text with an image's name")
    write_truncated_jpeg(data / "dog" / "cut.jpg", size=32)
    out = parsed(evaluate(data, tmp_path / "store"))
    found = problems(out)
    assert {"cat/fake.png", "dog/cut.jpg"} <= set(found)
    assert "truncated" in found["dog/cut.jpg"].lower()
    assert metric(out, "n_samples", "clean") == 4


def test_1x1_image_is_treated_alike_in_clean_and_corrupted(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    Image.fromarray(np.zeros((1, 1, 3), np.uint8)).save(data / "cat" / "dot.png")
    out = parsed(evaluate(data, tmp_path / "store"))
    assert metric(out, "n_samples", "clean") == metric(out, "n_samples", "brightness/1") == 4
    assert "cat/dot.png" in problems(out)


def _same_predictions_as(tmp_path: Path, special: str, write) -> None:
    """Evaluate a folder holding ``special`` (written by ``write``, which returns the 8-bit RGB
    image it stands for) and the same folder with that 8-bit image instead: same predictions."""
    a = image_folder(tmp_path / "a", per_class=1)
    b = image_folder(tmp_path / "b", per_class=1)
    rgb = write(a / "cat" / special)
    Image.fromarray(rgb).save(b / "cat" / Path(special).with_suffix(".png").name)  # lossless
    runs = [parsed(evaluate(d, tmp_path / f"store-{d.name}", "--save-logits")) for d in (a, b)]
    got = [predictions(tmp_path / f"store-{d.name}", r["run_id"]) for d, r in zip((a, b), runs)]
    assert got[0].keys() == got[1].keys()
    for unit in got[0]:
        np.testing.assert_array_equal(got[0][unit]["logits"], got[1][unit]["logits"])


def test_16bit_image_is_scaled_not_clipped(tmp_path):
    """Silent wrong result (fails on the old code): a 16-bit PNG was evaluated as a white image."""
    _same_predictions_as(tmp_path, "deep.png", write_16bit_png)


def test_cmyk_image_is_converted(tmp_path):
    _same_predictions_as(tmp_path, "print.jpg", write_cmyk_jpeg)


def test_image_over_the_pixel_limit_is_a_recorded_problem(tmp_path):
    """An image over Pillow's limit used to abort the whole run (fails on the old code)."""
    data = image_folder(tmp_path / "data", per_class=2)
    write_png_header_only(data / "dog" / "bomb.png", 20000, 20000)
    out = parsed(evaluate(data, tmp_path / "store"))
    assert "decompression-bomb" in problems(out)["dog/bomb.png"]
    assert metric(out, "n_samples", "clean") == 4


def test_max_pixels_option(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    Image.fromarray(picture(40, seed=5)).save(data / "cat" / "big.png")
    out = parsed(evaluate(data, tmp_path / "store", "--max-pixels", "1100"))
    assert "over the limit of 1,100" in problems(out)["cat/big.png"]


def test_symlink_loops_are_neither_followed_nor_classes(tmp_path):
    """A link back to the dataset root was counted as a class (fails on the old code: the
    2-class model then did not fit the 3 'classes')."""
    data = image_folder(tmp_path / "data", per_class=2)
    os.symlink(".", data / "again")
    os.symlink("..", data / "cat" / "up")
    os.symlink("self.png", data / "cat" / "self.png")
    out = parsed(evaluate(data, tmp_path / "store"))
    assert out["config"]["num_classes"] == 2 and metric(out, "n_samples", "clean") == 4
    assert "symbolic links" in problems(out)["cat/self.png"]


@pytest.mark.slow  # a process of its own (root must drop its privilege); corrupt/perturb cover the case by default
def test_unreadable_file_is_a_recorded_problem(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    locked = data / "dog" / "locked.png"
    Image.fromarray(picture(32, seed=9)).save(locked)
    locked.chmod(0)
    out = parsed(evaluate(data, tmp_path / "store", process=True, obey_permissions=True))
    assert "permission denied" in problems(out)["dog/locked.png"]


@pytest.mark.slow  # a process of its own; `runs` on a read-only store is in the default suite
def test_read_only_store_is_refused_for_writing(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    store = tmp_path / "store"
    parsed(evaluate(data, store))
    paths = [store, *store.rglob("*")]
    for p in paths:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        result = evaluate(data, store, "--severities", "2", process=True, obey_permissions=True)
    finally:
        for p in paths:
            p.chmod(0o755 if p.is_dir() else 0o644)
    assert_error(result, "read-only")


def test_full_disk_stops_with_one_line_and_no_partial_file(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    result = evaluate(data, tmp_path / "store", process=True, max_file_bytes=20_000)
    assert_error(result, "the disk is full")
    assert_no_temporaries(tmp_path / "store")


def test_bad_class_map_entries(tmp_path):
    data = image_folder(tmp_path / "data", per_class=1)
    bad = tmp_path / "map.json"
    for text, message in (('{"cat": "zero", "dog": 1}', "index 'zero'"), ('{"cat": 0}', "not in the class map"),
                          ('["cat", 1]', "class names (strings)"), ('["cat", "dog", "cat"]', "more than once")):
        bad.write_text(text)
        assert_error(evaluate(data, tmp_path / "store", "--class-map", str(bad)), message)
    assert no_runs(tmp_path / "store")


def test_bad_class_map_json(tmp_path):
    data = image_folder(tmp_path / "data", per_class=1)
    bad = tmp_path / "map.json"
    bad.write_text("{cat: 0")
    assert_error(evaluate(data, tmp_path / "store", "--class-map", str(bad)), "cannot read class map")
    assert_error(evaluate(data, tmp_path / "store", "--class-map", "imagnet"), "Did you mean 'imagenet'")


def _model_spec_args(data: Path, store: Path) -> list[str]:
    return ["--benchmark", "corrupted", "-c", "fog", "-s", "1", "--data", str(data), "--store", str(store),
            "--workers", "0", "--no-progress"]


def test_unknown_names(tmp_path):
    data = image_folder(tmp_path / "data", per_class=1)
    store = tmp_path / "store"
    base = [*EVALUATE, "--data", str(data), "--store", str(store)]
    assert_error(run(*base, "--benchmark", "imagenet-d"), "unknown benchmark 'imagenet-d'")
    assert_error(run(*base, "--benchmark", "corrupted", "-c", "fogg"), "Did you mean 'fog'")
    assert no_runs(store)
    spec = _model_spec_args(data, store)
    assert_error(run("evaluate", "--model", "python:models.py", *spec), "python:<module>:<callable>")
    assert_error(run("evaluate", "--model", f"python:{MODELS}:make_two_class:extra", *spec), "more than one ':'")
    assert_error(run("evaluate", "--model", f"python:{MODELS}:make_tow_class", *spec), "make_two_class")
    line = assert_error(run("evaluate", "--model", f"python:{MODELS}:make_failing", *spec), "make_failing")
    assert "weights file is gone" in line


def test_model_that_cannot_be_built_leaves_no_run(tmp_path):
    data = image_folder(tmp_path / "data", per_class=1)
    assert_error(run("evaluate", "--model", f"python:{MODELS}:make_failing", *_model_spec_args(data, tmp_path / "s")))
    assert no_runs(tmp_path / "s")


def test_store_inside_the_data_folder_is_not_a_class(tmp_path):
    """A store inside the data folder was counted as a class (fails on the old code: 3 'classes'
    for the 2-class model)."""
    data = image_folder(tmp_path / "data", per_class=2)
    first = parsed(evaluate(data, data / "zz-results"))
    second = parsed(evaluate(data, data / "zz-results"))
    assert first["config"]["num_classes"] == 2 and first["run_id"] == second["run_id"]
    assert first["metrics"] == second["metrics"]


def test_error_in_a_worker_process_is_one_line(tmp_path):
    """An InputError raised in a DataLoader worker (-j1) reached the user with the worker's traceback."""
    data = image_folder(tmp_path / "data", per_class=2)
    Image.fromarray(picture(48, seed=4)).save(data / "dog" / "wide.png")  # another size, no --resize
    argv = ["evaluate", "--model", f"python:{MODELS}:make_two_class", "--benchmark", "corrupted", "--data", str(data),
            "--store", str(tmp_path / "store"), "-c", "brightness", "-s", "1", "--workers", "1", "--batch-size", "8",
            "--no-progress"]
    assert_error(run(*argv), "different sizes", "--resize")


def test_model_raising_in_forward_names_model_and_sample(tmp_path):
    data = image_folder(tmp_path / "data", per_class=1)
    result = run("evaluate", "--model", f"python:{MODELS}:make_raising", "--resize", "32", "--crop", "32",
                 "--benchmark", "corrupted", "--data", str(data), "--store", str(tmp_path / "store"), "-c", "fog",
                 "-s", "1", "--workers", "0", "--no-progress")
    assert_error(result, "make_raising", "cat/0.png")


def test_changed_data_is_not_answered_with_old_numbers(tmp_path):
    data = image_folder(tmp_path / "data", per_class=2)
    first = parsed(evaluate(data, tmp_path / "store"))
    for name in ("0.png", "1.png"):  # every cat image becomes a dog-coloured one
        Image.fromarray(picture(32, seed=50, dominant=1)).save(data / "cat" / name)
        stamp = time.time() + 5
        os.utime(data / "cat" / name, (stamp, stamp))
    result = evaluate(data, tmp_path / "store")
    if result.code == 0:
        second = json.loads(result.out)
        assert second["run_id"] != first["run_id"]
        assert metric(second, "error", "clean") != metric(first, "error", "clean")
    else:
        assert_error(result, "changed")
