"""The bad-input matrix for the dataset builders, `robustlab corrupt` and `robustlab perturb`.

Each case drives the command line as a user does and checks the exit code (docs/errors.md),
that an error is one line without a traceback, and that nothing partial or stale is written.
Regression tests of silent wrong results say so in their docstring ("fails on the old code").
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path, PurePosixPath

import numpy as np
import pytest
from PIL import Image

from robustlab.corruptions import corrupt_item
from robustlab.corruptions.dataset import SUMMARY_NAME as CORRUPT_SUMMARY
from robustlab.perturbations.dataset import SUMMARY_NAME as PERTURB_SUMMARY
from robustlab.perturbations.dataset import make_settings as perturb_settings
from robustlab.perturbations.dataset import perturb_image

from .helpers import (
    assert_complete_images,
    assert_error,
    assert_no_temporaries,
    assert_ok,
    files_under,
    image_folder,
    picture,
    run,
    run_process,
    write_16bit_png,
    write_cmyk_jpeg,
    write_png_header_only,
    write_truncated_jpeg,
)

BUILDERS = ("corrupt", "perturb")


def command(builder: str, src: Path, dst: Path, *extra: str, fmt: str | None = None) -> list[str]:
    """The builder's command line: one cheap shift, lossless output, one process."""
    if builder == "corrupt":
        return ["corrupt", str(src), str(dst), "-c", "brightness", "-s", "1", "--format", fmt or "png", "-j", "1",
                "--no-progress", *extra]
    return ["perturb", str(src), str(dst), "-p", "rotate", "--setting", "cifar", "--format", fmt or "npy", "-j", "1",
            "--no-progress", *extra]


def outputs(builder: str, dst: Path) -> dict[str, Path]:
    """The outputs made, by source image (relative path without extension)."""
    if builder == "corrupt":
        base = dst / "brightness" / "1"
        return {p.relative_to(base).with_suffix("").as_posix(): p for p in base.rglob("*.png")} if base.exists() else {}
    base = dst / "rotate"
    found = [p for p in base.rglob("*.npy")] + [p for p in base.rglob("*") if p.is_dir() and any(p.glob("0000.png"))]
    return {p.relative_to(base).with_suffix("").as_posix(): p for p in found} if base.exists() else {}


def expected_output(builder: str, image: np.ndarray, relative: str) -> np.ndarray:
    """What the builder must write for the uint8 RGB ``image`` named ``relative``."""
    if builder == "corrupt":
        return corrupt_item(image, "brightness", 1, seed=0, item=PurePosixPath(relative).as_posix())
    return perturb_image(image, relative, "rotate", perturb_settings("rotate", setting="cifar", format="npy"))


def read_output(builder: str, path: Path) -> np.ndarray:
    if builder == "corrupt":
        return np.asarray(Image.open(path).convert("RGB"))
    return np.load(path)


def summary_of(builder: str, dst: Path) -> dict:
    return json.loads((dst / (CORRUPT_SUMMARY if builder == "corrupt" else PERTURB_SUMMARY)).read_text())


def failures(builder: str, dst: Path) -> dict[str, str]:
    return {f["image"]: f["error"] for f in summary_of(builder, dst)["failures"]}


# --- the cases ------------------------------------------------------------------------------------


@pytest.mark.parametrize("builder", BUILDERS)
def test_missing_path(builder, tmp_path):
    result = run(*command(builder, tmp_path / "nowhere", tmp_path / "out"))
    assert_error(result, "does not exist")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("builder", BUILDERS)
def test_empty_folder(builder, tmp_path):
    (tmp_path / "src").mkdir()
    assert_error(run(*command(builder, tmp_path / "src", tmp_path / "out")), "no images found")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("builder", BUILDERS)
def test_non_image_files_are_ignored_or_reported(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    (src / "README.txt").write_text("not an image")
    (src / "cat" / "labels.csv").write_text("a,b\n")
    (src / "cat" / "fake.png").write_text("a text file with an image's name")
    result = run(*command(builder, src, tmp_path / "out"))
    assert_ok(result)
    assert "fake.png: [unreadable]" in result.out
    assert set(outputs(builder, tmp_path / "out")) == {"cat/0", "dog/0"}
    assert "cat/fake.png" in failures(builder, tmp_path / "out")


@pytest.mark.parametrize("builder", BUILDERS)
def test_truncated_image_is_a_reported_failure(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    write_truncated_jpeg(src / "cat" / "cut.jpg", size=32)
    result = run(*command(builder, src, tmp_path / "out"))
    assert_ok(result)
    assert "cut.jpg: [unreadable]" in result.out and "truncated" in failures(builder, tmp_path / "out")["cat/cut.jpg"]
    assert "cat/cut" not in outputs(builder, tmp_path / "out")
    assert_complete_images(tmp_path / "out")


@pytest.mark.parametrize("builder", BUILDERS)
def test_1x1_image_is_a_reported_failure(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    Image.fromarray(np.zeros((1, 1, 3), np.uint8)).save(src / "dog" / "dot.png")
    result = run(*command(builder, src, tmp_path / "out"))
    assert_ok(result)
    assert "1x1 pixels" in failures(builder, tmp_path / "out")["dog/dot.png"]
    assert set(outputs(builder, tmp_path / "out")) == {"cat/0", "dog/0"}


@pytest.mark.parametrize("builder", BUILDERS)
def test_16bit_image_is_scaled_not_clipped(builder, tmp_path):
    """Silent wrong result (fails on the old code): a 16-bit PNG was read as white."""
    src = image_folder(tmp_path / "src", per_class=1)
    eight_bit = write_16bit_png(src / "cat" / "deep.png")
    assert_ok(run(*command(builder, src, tmp_path / "out")))
    got = read_output(builder, outputs(builder, tmp_path / "out")["cat/deep"])
    np.testing.assert_array_equal(got, expected_output(builder, eight_bit, "cat/deep.png"))


@pytest.mark.parametrize("builder", BUILDERS)
def test_cmyk_image_is_converted(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    rgb = write_cmyk_jpeg(src / "dog" / "print.jpg")
    assert_ok(run(*command(builder, src, tmp_path / "out")))
    got = read_output(builder, outputs(builder, tmp_path / "out")["dog/print"])
    np.testing.assert_array_equal(got, expected_output(builder, rgb, "dog/print.jpg"))


@pytest.mark.parametrize("builder", BUILDERS)
def test_decompression_bomb_is_skipped_not_fatal(builder, tmp_path):
    """An image over Pillow's limit aborted the whole run (fails on the old code)."""
    src = image_folder(tmp_path / "src", per_class=1)
    write_png_header_only(src / "dog" / "bomb.png", 20000, 20000)  # 400 million pixels, by its header
    result = run(*command(builder, src, tmp_path / "out"))
    assert_ok(result)
    assert "decompression-bomb" in failures(builder, tmp_path / "out")["dog/bomb.png"]
    assert set(outputs(builder, tmp_path / "out")) == {"cat/0", "dog/0"}


@pytest.mark.parametrize("builder", BUILDERS)
def test_max_pixels_option(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    Image.fromarray(picture(40, seed=5)).save(src / "cat" / "big.png")  # 1,600 pixels
    assert_ok(run(*command(builder, src, tmp_path / "out", "--max-pixels", "1100")))
    assert "over the limit of 1,100" in failures(builder, tmp_path / "out")["cat/big.png"]
    assert set(outputs(builder, tmp_path / "out")) == {"cat/0", "dog/0"}
    assert_error(run(*command(builder, src, tmp_path / "out3", "--max-pixels", "0")), "max_pixels")
    assert not (tmp_path / "out3").exists()


@pytest.mark.parametrize("builder", BUILDERS)
def test_symlink_loops_neither_hang_nor_count(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    os.symlink("self.png", src / "cat" / "self.png")  # a link to itself
    os.symlink("..", src / "cat" / "up")  # a folder loop
    result = run(*command(builder, src, tmp_path / "out"))
    assert_ok(result)
    assert "symbolic links" in failures(builder, tmp_path / "out")["cat/self.png"]
    assert set(outputs(builder, tmp_path / "out")) == {"cat/0", "dog/0"}


@pytest.mark.parametrize("builder", BUILDERS)
def test_unreadable_file_is_a_reported_failure(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    locked = src / "dog" / "locked.png"
    Image.fromarray(picture(32, seed=9)).save(locked)
    locked.chmod(0)
    result = run_process(*command(builder, src, tmp_path / "out"), obey_permissions=True)
    assert_ok(result)
    assert "permission denied" in failures(builder, tmp_path / "out")["dog/locked.png"]
    assert set(outputs(builder, tmp_path / "out")) == {"cat/0", "dog/0"}


@pytest.mark.parametrize("builder", BUILDERS)
def test_read_only_output_is_refused(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    dst = tmp_path / "out"
    dst.mkdir()
    dst.chmod(0o555)
    try:
        result = run_process(*command(builder, src, dst), obey_permissions=True)
    finally:
        dst.chmod(0o755)
    assert_error(result, str(dst), "not writable")
    assert files_under(dst) == {}


@pytest.mark.parametrize("builder", BUILDERS)
def test_full_disk_stops_with_one_line_and_no_partial_file(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=2, size=48, noise=40)  # outputs of about 7 kB
    result = run_process(*command(builder, src, tmp_path / "out"), max_file_bytes=3000)
    assert_error(result, "the disk is full")
    assert_no_temporaries(tmp_path / "out")
    assert_complete_images(tmp_path / "out")
    for path in outputs(builder, tmp_path / "out").values():  # whatever was finished is whole
        read_output(builder, path)


@pytest.mark.parametrize("builder", BUILDERS)
def test_malformed_summary_file(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    dst = tmp_path / "out"
    dst.mkdir()
    name = CORRUPT_SUMMARY if builder == "corrupt" else PERTURB_SUMMARY
    for bad in ("{not json", '{"settings": [1, 2]}', "[]"):
        (dst / name).write_text(bad)
        assert_error(run(*command(builder, src, dst)), name, "malformed")
        assert outputs(builder, dst) == {}


@pytest.mark.parametrize("builder", BUILDERS)
def test_unknown_names(builder, tmp_path):
    src = image_folder(tmp_path / "src", per_class=1)
    if builder == "corrupt":
        line = assert_error(run("corrupt", src, tmp_path / "out", "-c", "fogg", "--no-progress"), "'fogg'")
        assert "Did you mean 'fog'" in line
        assert_error(run("corrupt", src, tmp_path / "out", "--profile", "imagenet-x"), "imagenet-x")
        assert_error(run("corrupt", src, tmp_path / "out", "-s", "7"), "severities")
    else:
        line = assert_error(run("perturb", src, tmp_path / "out", "-p", "rotat", "--no-progress"), "'rotat'")
        assert "Did you mean 'rotate'" in line
        assert_error(run("perturb", src, tmp_path / "out", "--setting", "imagenett"), "imagenett")
        assert_error(run("perturb", src, tmp_path / "out", "--preset", "fastest"), "fastest")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("builder", BUILDERS)
def test_output_inside_input_is_not_read_back(builder, tmp_path):
    """Silent wrong result (fails on the old code): corrupt grew 4 -> 8 -> 12 images, perturb
    (png frames) 2 -> 64 sequences, by reading its own output as input."""
    src = image_folder(tmp_path / "src", per_class=2)
    dst = src / "derived"
    for _ in range(2):
        result = run(*command(builder, src, dst, fmt="png"))
        assert_ok(result)
        assert summary_of(builder, dst)["images"] == 4
    assert set(outputs(builder, dst)) == {"cat/0", "cat/1", "dog/0", "dog/1"}
    assert_error(run(*command(builder, src, src, fmt="png")), "is the source folder itself")


@pytest.mark.parametrize("builder", BUILDERS)
def test_data_changed_between_runs(builder, tmp_path):
    """Silent stale result (fails on the old code): a source replaced between two runs kept the
    output of its old content."""
    src = image_folder(tmp_path / "src", per_class=2)
    dst = tmp_path / "out"
    assert_ok(run(*command(builder, src, dst)))
    new = picture(32, seed=99)
    Image.fromarray(new).save(src / "cat" / "0.png")
    stamp = time.time() + 5
    os.utime(src / "cat" / "0.png", (stamp, stamp))
    (src / "dog" / "1.png").unlink()
    Image.fromarray(picture(32, seed=77)).save(src / "dog" / "2.png")
    result = run(*command(builder, src, dst))
    assert_ok(result)
    got = read_output(builder, outputs(builder, dst)["cat/0"])
    np.testing.assert_array_equal(got, expected_output(builder, new, "cat/0.png"))
    assert "1 source image(s) changed since the last run" in result.out
    assert "1 source image(s) are gone since the last run" in result.out and "dog/1.png" in result.out
    assert {"cat/0", "cat/1", "dog/2"} <= set(outputs(builder, dst))
    saved = summary_of(builder, dst)
    assert saved["sources_changed"] == ["cat/0.png"] and saved["sources_removed"] == ["dog/1.png"]
