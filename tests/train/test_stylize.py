"""robustlab stylize: COCO / VOC / Cityscapes / image folders keep their layout and annotations;
one seeded style per image; resume; unreadable content and style images skipped and listed."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from robustlab.data.detection import read_cityscapes, read_coco, read_voc
from robustlab.data.images import read_image, write_image
from robustlab.errors import InputError
from robustlab.train.stylize import (ASSIGNMENTS_NAME, SUMMARY_NAME, discover_stylize_dataset, style_draws,
                                     stylize_dataset)

from .adain_weights import make_test_weights

COLOURS = ((200, 30, 30), (20, 200, 60), (30, 40, 220))


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    return make_test_weights(tmp_path_factory.mktemp("adain"))


@pytest.fixture(scope="module")
def styles(tmp_path_factory) -> Path:
    """Three flat-colour paintings with texture, and one file that is not an image."""
    folder = tmp_path_factory.mktemp("styles")
    rng = np.random.default_rng(1)
    for k, colour in enumerate(COLOURS):
        img = np.zeros((48, 64, 3)) + colour + rng.normal(0, 25, (48, 64, 3))
        write_image(folder / f"painting_{k}.jpg", np.clip(img, 0, 255).astype(np.uint8), quality=95)
    (folder / "painting_3.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    return folder


def content(rng, h=45, w=61) -> np.ndarray:
    img = rng.normal(110, 20, (h, w, 3))
    img[10:30, 15:40] += 80
    return np.clip(img, 0, 255).astype(np.uint8)


def make_coco(root: Path, n: int = 4) -> Path:
    rng = np.random.default_rng(0)
    images, anns = [], []
    for i in range(n):
        name = f"{i:012d}.jpg"
        write_image(root / "val2017" / name, content(rng), quality=95)
        images.append({"id": i + 1, "file_name": name, "width": 61, "height": 45})
        anns.append({"id": 100 + i, "image_id": i + 1, "category_id": 1, "bbox": [15.0, 10.0, 25.0, 20.0],
                     "area": 500.0, "iscrowd": 0})
    (root / "val2017" / "000000000099.jpg").write_bytes(b"truncated")  # listed, unreadable
    images.append({"id": 99, "file_name": "000000000099.jpg", "width": 61, "height": 45})
    coco = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "thing"}]}
    (root / "annotations").mkdir(parents=True)
    (root / "annotations" / "instances_val2017.json").write_text(json.dumps(coco))
    return root


def test_coco_layout_annotations_styles_and_combined(tmp_path, weights, styles):
    src = make_coco(tmp_path / "coco")
    out = tmp_path / "stylized"
    summary = stylize_dataset(src, styles, out, weights=weights, workers=1, device="cpu", combined=True, seed=5)
    assert summary.layout == "coco" and summary.written == 4 and summary.failed == 1
    kinds = {f.image: f.kind for f in summary.failures}
    assert kinds["val2017/000000000099.jpg"] == "unreadable"
    assert not (out / "val2017" / "000000000099.jpg").exists()  # nothing half-written
    # the same annotation file; the images keep names and sizes, so the boxes still hold
    assert (out / "annotations" / "instances_val2017.json").read_bytes() == \
        (src / "annotations" / "instances_val2017.json").read_bytes()
    stylized = read_coco(out / "annotations" / "instances_val2017.json", out / "val2017", check_files=False)
    for sample in stylized:
        if sample.image_id != 99:
            assert read_image(sample.path).shape == (45, 61, 3)
    # one seeded style per image, recorded; the unreadable style is skipped where drawn, and listed
    assignments = json.loads((out / ASSIGNMENTS_NAME).read_text())
    assert len(assignments) == 4 and set(assignments.values()) <= {f"painting_{k}.jpg" for k in range(3)}
    style_names = sorted(p.name for p in styles.iterdir())
    for rel, chosen in assignments.items():
        draws = [style_names[i] for i in style_draws(5, rel, len(style_names))]
        assert chosen == next(d for d in draws if d != "painting_3.jpg")
    assert style_names[style_draws(5, "val2017/000000000000.jpg", 4)[0]] == "painting_3.jpg"  # drawn first here
    assert kinds["style:painting_3.jpg"] == "style-unreadable"
    assert len(set(assignments.values())) == 3  # the images got different paintings
    # each output takes its painting's dominant colour
    for rel, chosen in assignments.items():
        colour = COLOURS[int(chosen.split("_")[1][0])]
        assert int(np.argmax(read_image(out / rel).reshape(-1, 3).mean(0))) == int(np.argmax(colour))
    # combined: clean (absolute paths) + stylized copies (ids offset), with their annotations
    combined = json.loads((out / "annotations" / "instances_val2017_combined.json").read_text())
    ids = [i["id"] for i in combined["images"]]
    assert ids == [1, 2, 3, 4, 99, 101, 102, 103, 104]
    assert combined["images"][0]["file_name"] == str((src / "val2017" / "000000000000.jpg").resolve())
    assert combined["images"][5]["file_name"] == "000000000000.jpg"
    assert [(a["id"], a["image_id"]) for a in combined["annotations"][4:]] == [(1100, 101), (1101, 102),
                                                                                 (1102, 103), (1103, 104)]
    both = read_coco(out / "annotations" / "instances_val2017_combined.json", out / "val2017", check_files=False)
    assert sum(len(s) for s in both) == 8
    listing = (out / "combined.txt").read_text().splitlines()
    assert listing[0].startswith("#") and len(listing) == 1 + 5 + 4
    assert json.loads((out / SUMMARY_NAME).read_text())["status"] == "complete"


def test_rerun_resumes_and_other_settings_are_refused(tmp_path, weights, styles):
    src = tmp_path / "folder"
    rng = np.random.default_rng(2)
    for cls in ("cat", "dog"):
        for k in range(2):
            write_image(src / cls / f"{k}.png", content(rng, 40, 48))
    out = tmp_path / "out"
    first = stylize_dataset(src, styles, out, weights=weights, workers=1, device="cpu")
    assert first.layout == "class-folders" and first.written == 4
    before = {p: p.read_bytes() for p in out.rglob("*.png")}
    (out / "dog" / "1.png").unlink()
    (out / "cat" / ".0.png.abc.tmp").write_bytes(b"stale")  # a killed run's leftover
    again = stylize_dataset(src, styles, out, weights=weights, workers=1, device="cpu")
    assert again.written == 1 and again.skipped == 3
    assert {p: p.read_bytes() for p in out.rglob("*.png")} == before  # same pixels, any order
    assert not (out / "cat" / ".0.png.abc.tmp").exists()
    with pytest.raises(InputError, match=r"made with alpha 1.0 \(asked: 0.5\)"):
        stylize_dataset(src, styles, out, weights=weights, workers=1, device="cpu", alpha=0.5)
    with pytest.raises(InputError, match="content_size"):
        stylize_dataset(make_coco(tmp_path / "coco"), styles, tmp_path / "o2", weights=weights, content_size=32)


def test_voc_images_stylized_annotations_and_label_maps_copied(tmp_path, weights, styles):
    base = tmp_path / "VOCdevkit" / "VOC2007"
    rng = np.random.default_rng(3)
    ids = ["000001", "000002"]
    for image_id in ids:
        write_image(base / "JPEGImages" / f"{image_id}.jpg", content(rng, 50, 66), quality=95)
        xml = ET.Element("annotation")
        size = ET.SubElement(xml, "size")
        for tag, value in (("width", 66), ("height", 50), ("depth", 3)):
            ET.SubElement(size, tag).text = str(value)
        obj = ET.SubElement(xml, "object")
        ET.SubElement(obj, "name").text = "dog"
        ET.SubElement(obj, "difficult").text = "0"
        box = ET.SubElement(obj, "bndbox")
        for tag, value in (("xmin", 5), ("ymin", 6), ("xmax", 40), ("ymax", 30)):
            ET.SubElement(box, tag).text = str(value)
        (base / "Annotations").mkdir(parents=True, exist_ok=True)
        ET.ElementTree(xml).write(base / "Annotations" / f"{image_id}.xml")
        label_map = np.zeros((50, 66, 3), np.uint8)
        label_map[6:30, 5:40] = (64, 0, 128)
        write_image(base / "SegmentationClass" / f"{image_id}.png", label_map)
    (base / "ImageSets" / "Main").mkdir(parents=True)
    (base / "ImageSets" / "Main" / "test.txt").write_text("\n".join(ids) + "\n")
    out = tmp_path / "stylized"
    summary = stylize_dataset(tmp_path / "VOCdevkit", styles, out, weights=weights, workers=1, device="cpu")
    assert summary.layout == "voc" and summary.written == 2
    a, b = read_voc(tmp_path / "VOCdevkit"), read_voc(out)
    assert [s.boxes.tolist() for s in a] == [s.boxes.tolist() for s in b]
    for image_id in ids:
        src_img = read_image(base / "JPEGImages" / f"{image_id}.jpg")
        out_img = read_image(out / "VOC2007" / "JPEGImages" / f"{image_id}.jpg")
        assert out_img.shape == src_img.shape and np.abs(out_img.astype(int) - src_img).mean() > 10
        assert (out / "VOC2007" / "SegmentationClass" / f"{image_id}.png").read_bytes() == \
            (base / "SegmentationClass" / f"{image_id}.png").read_bytes()  # label maps are not images to restyle


def test_cityscapes_left_images_stylized_gt_copied(tmp_path, weights, styles):
    root = tmp_path / "cityscapes"
    rng = np.random.default_rng(4)
    stem = "aachen_000000_000019"
    write_image(root / "leftImg8bit" / "val" / "aachen" / f"{stem}_leftImg8bit.png", content(rng, 48, 96))
    polygons = {"imgWidth": 96, "imgHeight": 48, "objects": [
        {"label": "car", "polygon": [[10, 10], [40, 10], [40, 30], [10, 30]]}]}
    gt = root / "gtFine" / "val" / "aachen"
    gt.mkdir(parents=True)
    (gt / f"{stem}_gtFine_polygons.json").write_text(json.dumps(polygons))
    write_image(gt / f"{stem}_gtFine_labelIds.png", np.full((48, 96, 3), 26, np.uint8))
    out = tmp_path / "out"
    summary = stylize_dataset(root, styles, out, weights=weights, workers=1, device="cpu")
    assert summary.layout == "cityscapes" and summary.written == 1
    assert [s.boxes.tolist() for s in read_cityscapes(out)] == [s.boxes.tolist() for s in read_cityscapes(root)]
    assert (out / "gtFine" / "val" / "aachen" / f"{stem}_gtFine_labelIds.png").read_bytes() == \
        (gt / f"{stem}_gtFine_labelIds.png").read_bytes()
    found = discover_stylize_dataset(root)
    assert [p.as_posix() for p in found.images] == [f"leftImg8bit/val/aachen/{stem}_leftImg8bit.png"]


def test_combined_listing_trains_on_clean_and_stylized(tmp_path, weights, styles):
    from robustlab.train import read_training_set

    src = tmp_path / "folder"
    rng = np.random.default_rng(5)
    for cls in ("cat", "dog"):
        for k in range(2):
            write_image(src / cls / f"{k}.jpg", content(rng, 40, 48), quality=95)
    out = tmp_path / "out"
    stylize_dataset(src, styles, out, weights=weights, workers=1, device="cpu", combined=True)
    ts = read_training_set(out / "combined.txt")
    assert ts.classes == ("cat", "dog") and ts.targets.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert all(ts.samples.read(i).shape == (40, 48, 3) for i in range(len(ts)))


def test_bad_inputs(tmp_path, weights, styles):
    with pytest.raises(Exception, match="does not exist"):
        stylize_dataset(tmp_path / "nowhere", styles, tmp_path / "o", weights=weights)
    (tmp_path / "empty_styles").mkdir()
    write_image(tmp_path / "data" / "a.png", content(np.random.default_rng(0)))
    with pytest.raises(Exception, match="no style images"):
        stylize_dataset(tmp_path / "data", tmp_path / "empty_styles", tmp_path / "o", weights=weights)
    with pytest.raises(InputError, match="alpha must be in"):
        stylize_dataset(tmp_path / "data", styles, tmp_path / "o", weights=weights, alpha=1.5)
    shutil.rmtree(tmp_path / "data")


@pytest.mark.slow
def test_worker_processes_give_the_same_images(tmp_path, weights, styles):
    src = make_coco(tmp_path / "coco", n=4)
    one = stylize_dataset(src, styles, tmp_path / "one", weights=weights, workers=1, device="cpu")
    two = stylize_dataset(src, styles, tmp_path / "two", weights=weights, workers=2, device="cpu")
    assert one.written == two.written == 4
    for p in (tmp_path / "one" / "val2017").iterdir():
        a, b = read_image(p).astype(int), read_image(tmp_path / "two" / "val2017" / p.name).astype(int)
        assert np.abs(a - b).max() <= 1  # float sums may differ in the last bit across thread counts
