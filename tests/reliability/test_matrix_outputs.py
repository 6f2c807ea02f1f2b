"""Outputs and sources are never confused: every builder marks its output tree, never reads an
output as a source (its own or another's), never counts a source image as one of its outputs
whatever the nesting of the two folders, and never writes into another command's output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.data.folders import find_images
from robustlab.train.adain import SHA256_ENV
from robustlab.train.stylize import SUMMARY_NAME as STYLIZE_SUMMARY
from robustlab.train.stylize import stylize_dataset
from train.adain_weights import make_test_weights

from .helpers import MODELS, assert_error, assert_ok, files_under, image_folder, run
from .test_matrix_builders import command

#: The record each writer leaves at the root of its output (the format, where the name is common).
RECORDS = {
    "corrupt": ("robustlab-corrupt.json", "{}"),
    "perturb": ("robustlab-perturb.json", "{}"),
    "stylize": ("robustlab-stylize.json", "{}"),
    "video sample": ("sample.json", json.dumps({"format": "robustlab-video-sample/1"})),
    "finetune": ("finetuned.json", json.dumps({"format": "robustlab-finetuned/1"})),
    "store": ("catalog.db", ""),
}


def styles(folder: Path) -> Path:
    rng = np.random.default_rng(1)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(2):
        Image.fromarray(rng.integers(0, 256, (32, 32, 3)).astype(np.uint8)).save(folder / f"s{i}.png")
    return folder


@pytest.fixture(scope="module")
def adain(tmp_path_factory):
    return make_test_weights(tmp_path_factory.mktemp("adain"))


def stylize(src: Path, dst: Path, tmp_path: Path, weights):
    return stylize_dataset(src, styles(tmp_path / "styles"), dst, weights=weights, workers=1, device="cpu")


def writer_command(writer: str, src: Path, dst: Path, tmp_path: Path) -> list:
    """The command line of ``writer`` reading ``src`` and writing into ``dst``."""
    if writer in ("corrupt", "perturb"):
        return command(writer, src, dst)
    if writer == "stylize":
        weights = make_test_weights(tmp_path / "weights")
        return ["stylize", src, "--styles", styles(tmp_path / "styles"), "--out", dst, "--weights-dir",
                weights.encoder.parent, "--weights-sha256", f"vgg_normalised.pth={weights.digests['encoder']}",
                "--weights-sha256", f"decoder.pth={weights.digests['decoder']}", "--device", "cpu", "--no-progress"]
    if writer == "video sample":
        return ["video", "sample", src, dst]
    return ["finetune", "--model", f"python:{MODELS}:make_mean_colour", "--data", src, "--out", dst, "--workers", "0",
            "--device", "cpu", "--no-progress"]


def test_stylize_marks_its_output_and_never_reads_it_back(tmp_path, adain):
    """Silent wrong result (fails on the old code): stylize output inside its input was
    re-ingested by stylize itself (4 -> 8 images, nesting one level deeper per rerun) and by
    every other listing."""
    data = image_folder(tmp_path / "data", per_class=2)
    for _ in range(2):
        summary = stylize(data, data / "styled", tmp_path, adain)
        assert summary.images == 4 and summary.failed == 0
    assert (data / "styled" / STYLIZE_SUMMARY).is_file()
    assert not (data / "styled" / "styled").exists()
    assert {p.as_posix() for p in find_images(data)} == {"cat/0.png", "cat/1.png", "dog/0.png", "dog/1.png"}
    assert_ok(run(*command("corrupt", data, tmp_path / "corrupted")))
    assert json.loads((tmp_path / "corrupted" / "robustlab-corrupt.json").read_text())["images"] == 4


@pytest.mark.parametrize("builder", ["corrupt", "perturb", "stylize"])
def test_no_builder_counts_a_source_as_its_output(builder, tmp_path, adain):
    """Silent wrong result (fails on the old code): stylize into its own source folder counted
    every source image as an output already made and wrote nothing; corrupt and perturb with the
    source inside the output folder could overwrite the source images."""
    out = tmp_path / "out"
    src = image_folder(out / ("brightness/1" if builder == "corrupt" else "rotate"), per_class=1)
    before = files_under(tmp_path)
    for source, dst, message in ((src, out, "lies inside the output folder"), (src, src, "source folder itself")):
        if builder == "stylize":
            with pytest.raises(Exception, match=message):
                stylize(source, dst, tmp_path / "aux", adain)
        else:
            assert_error(run(*command(builder, source, dst)), message)
    assert {k: v for k, v in files_under(tmp_path).items() if not k.startswith("aux/")} == before


@pytest.mark.parametrize("writer", ["corrupt", "perturb", "stylize", "video sample", "finetune"])
def test_no_builder_writes_into_another_commands_output(writer, tmp_path, monkeypatch):
    """perturb, stylize and video sample wrote into another builder's output tree (fails on the
    old code); the rule holds for every writer, for the tree's root and any folder inside it."""
    monkeypatch.delenv(SHA256_ENV, raising=False)
    src = image_folder(tmp_path / "data", per_class=1)
    for owner, (name, text) in RECORDS.items():
        if owner == writer:
            continue
        tree = tmp_path / owner.replace(" ", "-")
        tree.mkdir()
        (tree / name).write_text(text)
        assert_error(run(*writer_command(writer, src, tree, tmp_path)), "output folder of", name)
        if owner != "store":
            assert_error(run(*writer_command(writer, src, tree / "inner", tmp_path)), f"lies inside {tree}")
        assert sorted(p.name for p in tree.iterdir()) == [name]
    # a user's own sample.json (not robustlab's) does not make a folder an output tree
    own = tmp_path / "own"
    own.mkdir()
    (own / "sample.json").write_text(json.dumps({"format": "my-lab/2"}))
    result = run(*writer_command(writer, src, own, tmp_path))
    assert "output folder of" not in result.err


def test_listings_skip_every_output_tree(tmp_path):
    data = image_folder(tmp_path / "data", per_class=1)
    for owner, (name, text) in RECORDS.items():
        tree = image_folder(data / owner.replace(" ", "-"), per_class=1)
        (tree / name).write_text(text)
    own = image_folder(data / "mine", per_class=1)
    (own / "sample.json").write_text("{}")  # not robustlab's: an ordinary data folder
    found = {p.as_posix() for p in find_images(data)}
    assert found == {"cat/0.png", "dog/0.png", "mine/cat/0.png", "mine/dog/0.png"}
    assert not any(os.sep in name and name.split("/")[0] in RECORDS for name in found)
