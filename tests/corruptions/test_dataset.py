"""Corrupting a whole dataset: layout, seeds, resume, worker independence, bad sources, errors."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from robustlab.corruptions import corrupt, item_seed, list_corruptions, parse_severities
from robustlab.corruptions.dataset import (
    SUMMARY_NAME,
    WorkItem,
    corrupt_dataset,
    existing_outputs,
    format_summary,
    make_settings,
    output_path,
    output_relative,
    pending_mask,
)
from robustlab.errors import DataError, InputError
from robustlab.seeding import derive_seed

#: Cheap corruptions, preferred for dataset tests (the kernels themselves are tested elsewhere).
FAST = ("brightness", "contrast", "gaussian_noise", "saturate", "shot_noise", "pixelate", "fog", "spatter")


def fast_corruptions(n: int = 2) -> tuple[str, ...]:
    picks = tuple(c for c in FAST if c in list_corruptions("all"))[:n]
    if len(picks) < n:
        pytest.skip(f"needs {n} registered corruptions among {FAST}; registered: {list_corruptions('all')}")
    return picks


def make_image(seed: int, h: int = 40, w: int = 48) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 5, y * 6, (x + y) * 3], -1) + rng.integers(0, 40, (h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def write_folder(root: Path, names: list[str], size: tuple[int, int] = (40, 48)) -> dict[str, np.ndarray]:
    """Lossless PNG sources (so decoded pixels equal the arrays), any relative names."""
    images = {}
    for i, name in enumerate(names):
        img = make_image(i, *size)
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(path, format="PNG")
        images[name] = img
    return images


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != SUMMARY_NAME}


# --- settings and names ----------------------------------------------------------------------


@pytest.mark.parametrize("spec, expected", [
    ("1-5", (1, 2, 3, 4, 5)), ("3", (3,)), ("5,1,3", (1, 3, 5)), ("1-2, 4-5", (1, 2, 4, 5)),
    ("2,2-3", (2, 3)), (4, (4,)), ([2, 1], (1, 2)),
])
def test_parse_severities(spec, expected):
    assert parse_severities(spec) == expected


@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=1, max_size=6))
def test_parse_severities_accepts_any_mix_of_values_and_ranges(parts):
    spec = ",".join(f"{a}" if a == b else f"{min(a, b)}-{max(a, b)}" for a, b in parts)
    expected = sorted({v for a, b in parts for v in range(min(a, b), max(a, b) + 1)})
    assert parse_severities(spec) == tuple(expected)


@given(st.sampled_from(["jpeg", "png"]),
       st.lists(st.text("abcXYZ_0", min_size=1, max_size=5), min_size=1, max_size=3),
       st.sampled_from([".jpg", ".JPEG", ".png", ".PNG", ".tif", ".webp"]))
def test_output_relative_keeps_folders_and_stem_and_is_idempotent(fmt, folders, ext):
    rel = PurePosixPath(*folders[:-1], folders[-1] + ext)
    out = output_relative(rel, fmt)
    assert out.parent == rel.parent and out.stem == rel.stem
    assert out.suffix.lower() in ((".jpg", ".jpeg") if fmt == "jpeg" else (".png",))
    assert output_relative(out, fmt) == out


@pytest.mark.parametrize("spec", ["0", "6", "1-6", "3-1", "a", "1;2", "", [0], [True], "1.5"])
def test_parse_severities_rejects_bad_values(spec):
    with pytest.raises(InputError, match="1..5"):
        parse_severities(spec)


@pytest.mark.parametrize("rel, fmt, expected", [
    ("n01/x.JPEG", "jpeg", "n01/x.JPEG"), ("x.jpg", "jpg", "x.jpg"), ("x.png", "jpeg", "x.jpg"),
    ("x.png", "png", "x.png"), ("a/x.JPEG", "png", "a/x.png"), ("x.tif", "png", "x.png"),
])
def test_output_names_keep_the_source_name_unless_the_extension_contradicts_the_format(rel, fmt, expected):
    assert output_relative(rel, fmt) == PurePosixPath(expected)


def test_output_path_is_the_imagenet_c_layout(tmp_path):
    item = WorkItem("fog", 3, PurePosixPath("n01/x.JPEG"))
    assert output_path(tmp_path, item, "jpeg") == tmp_path / "fog" / "3" / "n01" / "x.JPEG"


def test_item_seed_is_derive_seed_of_path_corruption_severity():
    assert item_seed(7, "n01/x.JPEG", "fog", 3) == derive_seed(7, "n01/x.JPEG", "fog", 3)
    assert item_seed(7, "n01/x.JPEG", "fog", np.int64(3)) == item_seed(7, "n01/x.JPEG", "fog", 3)
    assert item_seed(7, "n01/x.JPEG", "fog", 3) != item_seed(8, "n01/x.JPEG", "fog", 3)
    assert item_seed(7, "n01/x.JPEG", "fog", 3) != item_seed(7, "n01/x.JPEG", "fog", 4)


def test_make_settings_validates():
    name = fast_corruptions(1)[0]
    s = make_settings(name, "1-2", format="png", quality=10)
    assert s.corruptions == (name,) and s.severities == (1, 2) and s.format == "png" and s.quality is None
    with pytest.raises(InputError, match="Did you mean"):
        make_settings(name[:-1] + "x" + name[-1])
    with pytest.raises(InputError, match="output format"):
        make_settings(name, format="gif")
    with pytest.raises(InputError, match="quality"):
        make_settings(name, quality=0)
    with pytest.raises(InputError, match="seed"):
        make_settings(name, seed=-1)
    with pytest.raises(InputError, match="profile"):
        make_settings(name, profile="imagenet_c")


def test_pending_mask_marks_existing_outputs_done_and_deletes_stale_temporaries(tmp_path):
    images = [PurePosixPath("a/x.png"), PurePosixPath("b.png")]
    settings = make_settings("all", "2,4", format="jpeg")
    c0, c1 = settings.corruptions[:2]
    for rel in ["a/x.jpg", "unrelated.jpg"]:
        path = tmp_path / c1 / "4" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"done")
    (tmp_path / c1 / "4" / ".b.jpg.x1y2.tmp").write_bytes(b"half")
    mask = pending_mask(tmp_path, images, settings)
    assert mask.shape == (2, len(settings.corruptions), 2) and mask.sum() == mask.size - 1
    assert not mask[0, 1, 1] and mask[1, 1, 1] and mask[0, 0, 1]
    assert existing_outputs(tmp_path, c1, 4) == {"a/x.jpg", "unrelated.jpg"}
    assert not list(tmp_path.rglob("*.tmp"))
    assert existing_outputs(tmp_path, c0, 1) == set()


# --- running ---------------------------------------------------------------------------------


def test_layout_and_pixels_equal_corrupt_with_the_derived_seed(tmp_path):
    names = fast_corruptions(2)
    images = write_folder(tmp_path / "src", ["n01/a.png", "n01/b.png", "n02/c.png"])
    settings = make_settings(",".join(names), "1,3", seed=5, format="png")
    summary = corrupt_dataset(tmp_path / "src", tmp_path / "out", settings, workers=1)
    assert (summary.images, summary.outputs, summary.written, summary.skipped, summary.failed) == (3, 12, 12, 0, 0)
    assert summary.layout == "class-folders" and summary.status == "complete" and summary.ok
    for name, img in images.items():
        for c in names:
            for s in (1, 3):
                out = np.asarray(Image.open(tmp_path / "out" / c / str(s) / name))
                rng = np.random.RandomState(derive_seed(5, name, c, s))
                np.testing.assert_array_equal(out, corrupt(img, c, s, rng=rng))
    files = {p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*")
             if p.is_file() and not p.name.startswith(".")}  # hidden: the record of the sources
    assert len(files) == 12 + 1 and SUMMARY_NAME in files
    saved = json.loads((tmp_path / "out" / SUMMARY_NAME).read_text())
    assert saved["settings"]["seed"] == 5 and saved["written"] == 12 and saved["status"] == "complete"
    assert "3 images x 2 corruptions x 2 severities = 12 outputs" in format_summary(summary)


def test_jpeg_output_quality_and_renamed_extension(tmp_path):
    name = fast_corruptions(1)[0]
    write_folder(tmp_path / "src", ["a.png"])
    corrupt_dataset(tmp_path / "src", tmp_path / "q85", make_settings(name, "2"), workers=1)
    corrupt_dataset(tmp_path / "src", tmp_path / "q20", make_settings(name, "2", quality=20), workers=1)
    hi, lo = tmp_path / "q85" / name / "2" / "a.jpg", tmp_path / "q20" / name / "2" / "a.jpg"
    assert Image.open(hi).format == "JPEG" and hi.read_bytes()[:2] == b"\xff\xd8"
    assert lo.stat().st_size < hi.stat().st_size


def test_coco_annotations_are_copied_alongside_with_renamed_files(tmp_path):
    name = fast_corruptions(1)[0]
    src = tmp_path / "coco"
    write_folder(src / "val2017", ["1.jpg", "2.jpg"])  # PNG bytes under .jpg names: PIL reads by content
    coco = {"images": [{"id": 1, "file_name": "1.jpg"}, {"id": 2, "file_name": "2.jpg"}],
            "annotations": [{"id": 9, "image_id": 1, "bbox": [1, 2, 3, 4], "category_id": 1}],
            "categories": [{"id": 1, "name": "thing"}]}
    (src / "annotations").mkdir()
    (src / "annotations" / "instances_val2017.json").write_text(json.dumps(coco))
    summary = corrupt_dataset(src, tmp_path / "jpeg", make_settings(name, "1-2"), workers=1)
    assert summary.layout == "coco" and summary.written == 4
    for s in (1, 2):
        copied = tmp_path / "jpeg" / name / str(s) / "annotations" / "instances_val2017.json"
        assert json.loads(copied.read_text()) == coco
        assert (tmp_path / "jpeg" / name / str(s) / "val2017" / "1.jpg").exists()
    # PNG output renames the images, and the annotation file follows
    corrupt_dataset(src, tmp_path / "png", make_settings(name, "1", format="png"), workers=1)
    copied = json.loads((tmp_path / "png" / name / "1" / "annotations" / "instances_val2017.json").read_text())
    assert [i["file_name"] for i in copied["images"]] == ["1.png", "2.png"]
    assert copied["annotations"] == coco["annotations"]
    assert (tmp_path / "png" / name / "1" / "val2017" / "2.png").exists()


def test_resume_skips_existing_outputs_removes_stale_temporaries_and_matches_a_clean_run(tmp_path):
    names = fast_corruptions(2)
    write_folder(tmp_path / "src", ["a.png", "b.png", "c.png"])
    settings = make_settings(",".join(names), "1-2", format="png")
    corrupt_dataset(tmp_path / "src", tmp_path / "clean", settings, workers=1)
    corrupt_dataset(tmp_path / "src", tmp_path / "out", settings, workers=1)
    expected = tree_bytes(tmp_path / "clean")
    # simulate a killed run: some outputs missing, a half-written temporary left behind
    (tmp_path / "out" / names[0] / "2" / "b.png").unlink()
    (tmp_path / "out" / names[1] / "1" / "c.png").unlink()
    stale = tmp_path / "out" / names[1] / "1" / ".c.png.abc123.tmp"
    stale.write_bytes(b"\x89PNG half")
    summary = corrupt_dataset(tmp_path / "src", tmp_path / "out", settings, workers=1)
    assert (summary.written, summary.skipped) == (2, 10)
    assert not list((tmp_path / "out").rglob("*.tmp"))
    assert tree_bytes(tmp_path / "out") == expected


def test_resume_refuses_different_pixel_settings_but_accepts_more_corruptions(tmp_path):
    names = fast_corruptions(2)
    write_folder(tmp_path / "src", ["a.png"])
    corrupt_dataset(tmp_path / "src", tmp_path / "out", make_settings(names[0], "1", seed=1), workers=1)
    with pytest.raises(InputError, match="seed 1 .asked: 2"):
        corrupt_dataset(tmp_path / "src", tmp_path / "out", make_settings(names[0], "1", seed=2), workers=1)
    with pytest.raises(InputError, match="format 'jpeg' .asked: 'png'"):
        corrupt_dataset(tmp_path / "src", tmp_path / "out", make_settings(names[0], "1", seed=1, format="png"))
    more = corrupt_dataset(tmp_path / "src", tmp_path / "out", make_settings(",".join(names), "1-2", seed=1),
                           workers=1)
    assert (more.skipped, more.written) == (1, 3)


def test_identical_bytes_for_one_and_two_workers(tmp_path):
    names = fast_corruptions(2)
    write_folder(tmp_path / "src", [f"d{i % 2}/img{i}.png" for i in range(5)])
    settings = make_settings(",".join(names), "1,5", seed=3)
    one = corrupt_dataset(tmp_path / "src", tmp_path / "w1", settings, workers=1)
    two = corrupt_dataset(tmp_path / "src", tmp_path / "w2", settings, workers=2)
    assert one.written == two.written == 20 and two.workers == 2
    assert tree_bytes(tmp_path / "w1") == tree_bytes(tmp_path / "w2")


def test_bad_sources_are_reported_not_fatal(tmp_path):
    name = fast_corruptions(1)[0]
    write_folder(tmp_path / "src", ["good.png"])
    (tmp_path / "src" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    write_folder(tmp_path / "src", ["tiny.png"], size=(8, 8))
    summary = corrupt_dataset(tmp_path / "src", tmp_path / "out", make_settings(name, "1-2"), workers=1)
    assert (summary.written, summary.failed, summary.outputs) == (2, 4, 6)
    assert summary.status == "complete" and not summary.ok
    failures = {f.image: f for f in summary.failures}
    assert set(failures) == {"broken.jpg", "tiny.png"}
    assert failures["broken.jpg"].kind == "unreadable" and "broken.jpg" in failures["broken.jpg"].error
    assert "at least 32x32" in failures["tiny.png"].error and failures["tiny.png"].outputs_missing == 2
    saved = json.loads((tmp_path / "out" / SUMMARY_NAME).read_text())
    assert {f["image"] for f in saved["failures"]} == {"broken.jpg", "tiny.png"}
    text = format_summary(summary)
    assert "2 source image(s) had problems" in text and "broken.jpg" in text


def test_coco_images_missing_on_disk_are_reported(tmp_path):
    name = fast_corruptions(1)[0]
    write_folder(tmp_path / "src", ["a.png"])
    ann = tmp_path / "instances_x.json"
    ann.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.png"}, {"id": 2, "file_name": "gone.png"}]}))
    summary = corrupt_dataset(tmp_path / "src", tmp_path / "out", make_settings(name, "1"), workers=1,
                              coco_annotations=[ann])
    assert (summary.images, summary.written, summary.failed) == (2, 1, 1)
    assert [(f.image, f.kind) for f in summary.failures] == [("gone.png", "missing")]
    assert (tmp_path / "out" / name / "1" / "instances_x.json").exists()


def test_errors_name_the_problem(tmp_path):
    name = fast_corruptions(1)[0]
    settings = make_settings(name, "1")
    with pytest.raises(DataError, match="does not exist"):
        corrupt_dataset(tmp_path / "missing", tmp_path / "out", settings)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no images found"):
        corrupt_dataset(tmp_path / "empty", tmp_path / "out", settings)
    write_folder(tmp_path / "src", ["x.png", "x.jpg"])
    with pytest.raises(InputError, match="would both be written as x.jpg"):
        corrupt_dataset(tmp_path / "src", tmp_path / "out", settings)
    (tmp_path / "src" / "x.jpg").unlink()
    (tmp_path / "file").write_text("")
    with pytest.raises(DataError, match="cannot create the folder"):
        corrupt_dataset(tmp_path / "src", tmp_path / "file" / "out", settings)
    with pytest.raises(InputError, match="workers"):
        corrupt_dataset(tmp_path / "src", tmp_path / "out", settings, workers=0)
