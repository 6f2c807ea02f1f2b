"""Training data: frame sets, listings, class subsets, crops, batch order, augmentation in the collate."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.corruptions.transforms import RandomCorruption
from robustlab.data.images import write_image
from robustlab.errors import DataError, InputError
from robustlab.models import Preprocessing
from robustlab.train import read_training_set, resolve_class_subset
from robustlab.train.data import (KeyedImages, TrainingCollate, TrainingImages, epoch_batches,
                                  random_resized_crop_box)

from .conftest import colour_image, make_folder


def make_frame_set(root, with_classes: bool = True):
    """Two videos; frame keys video/NNNNNN.jpg; one multi-label frame; labels.json names a missing frame too."""
    rng = np.random.default_rng(0)
    labels = {}
    pmsets = {}
    for v, cls in (("vid_a", 0), ("vid_b", 2)):
        keys = [f"{v}/{n:06d}.jpg" for n in range(4)]
        for k in keys:
            write_image(root / k, colour_image(cls, rng, size=(36, 40)))
            labels[k] = [cls]
        pmsets[keys[1]] = [keys[0], keys[2], keys[3]]
    labels["vid_b/000003.jpg"] = [1, 2]
    (root / "pmsets.json").write_text(json.dumps(pmsets))
    (root / "labels.json").write_text(json.dumps(labels))
    if with_classes:
        (root / "classes.json").write_text(json.dumps(["airplane", "bear", "dog"]))
    return root


def test_frame_set_trains_on_every_labelled_frame(tmp_path):
    ts = read_training_set(make_frame_set(tmp_path / "frames"))
    assert ts.classes == ("airplane", "bear", "dog") and len(ts) == 8
    assert ts.source["kind"] == "frames:video-pmk"
    multi = ts.samples.ids.index("vid_b/000003.jpg")
    assert ts.label_sets[multi] == (1, 2) and ts.targets[multi] == 1
    assert ts.samples.read(0).shape == (36, 40, 3)
    # a WordNet subset by VID names: airplane -> 0, dog -> 1; bear is left out (the multi-label frame keeps dog)
    sub = read_training_set(tmp_path / "frames", classes=resolve_class_subset("airplane,dog"))
    assert sub.classes == ("airplane", "dog") and len(sub) == 8
    assert sorted(set(sub.targets.tolist())) == [0, 1] and sub.label_sets is None


def test_frame_set_without_class_names_reads_as_imagenet_vid_robust(tmp_path):
    ts = read_training_set(make_frame_set(tmp_path / "frames", with_classes=False))
    assert len(ts.classes) == 30 and ts.classes[:3] == ("airplane", "antelope", "bear")
    assert ts.source["kind"] == "frames:imagenet-vid-robust"
    assert ts.imagenet_rows is not None and len(ts.imagenet_rows) == 30  # from the WordNet class map


def test_fine_tuning_on_frames_with_multi_label_targets(tmp_path):
    from robustlab.models import load_model
    from robustlab.train import finetune

    from .conftest import TINY

    spec = finetune(f"python:{TINY}:make_tiny1000", make_frame_set(tmp_path / "frames", with_classes=False),
                    out=tmp_path / "run", classes="vid30", epochs=1, batch_size=4, workers=0, progress=False)
    model = load_model(spec, device="cpu")
    assert model.num_classes == 30


def test_listing_labels_by_parent_folder(tmp_path, colour_folder):
    listing = tmp_path / "combined.txt"
    lines = [str(colour_folder / "cat" / "000.png"), "styl/cat/000.png", "styl/dog/001.png", "# a comment", ""]
    write_image(tmp_path / "styl" / "cat" / "000.png", colour_image(0, np.random.default_rng(1)))
    write_image(tmp_path / "styl" / "dog" / "001.png", colour_image(1, np.random.default_rng(2)))
    listing.write_text("\n".join(lines))
    ts = read_training_set(listing)
    assert ts.classes == ("cat", "dog") and ts.targets.tolist() == [0, 0, 1]
    assert ts.samples.read(1).shape == (40, 44, 3) and ts.samples.read(0).shape == (40, 44, 3)
    (tmp_path / "bad.txt").write_text("a/readme.md\n")
    with pytest.raises(DataError, match="without an image extension"):
        read_training_set(tmp_path / "bad.txt")


def test_class_subset_over_imagenet_folders_follows_wordnet(tmp_path):
    # Chihuahua (dog), tabby (domestic_cat), tench (no VID class), jeep (car)
    root = make_folder(tmp_path / "train", ("n02085620", "n02123045", "n01440764", "n03594945"), 2)
    ts = read_training_set(root, classes=resolve_class_subset("vid30"))
    assert ts.classes[6] == "car" and len(ts.classes) == 30
    by_file = dict(zip(ts.samples.ids, ts.targets.tolist()))
    assert {f.split("/")[0]: t for f, t in by_file.items()} == {"n02085620": 8, "n02123045": 9, "n03594945": 6}
    assert ts.source["classes"] == "vid30" and ts.source["images"] == 6


def test_resolve_class_subset_names_wnids_and_errors():
    s = resolve_class_subset("Domestic cat, n02084071")
    assert s.names == ("domestic_cat", "dog") and s.synsets == ("n02121808", "n02084071")
    with pytest.raises(InputError, match="ambiguous.*Give the wnid"):
        resolve_class_subset("crane")
    with pytest.raises(InputError, match="twice"):
        resolve_class_subset("dog,n02084071")
    with pytest.raises(InputError, match=r"Near matches: dog \(n02084071\)"):
        resolve_class_subset("n02084072")


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 400), w=st.integers(1, 400), seed=st.integers(0, 2**31))
def test_random_resized_crop_box_lies_inside_the_image(h, w, seed):
    top, left, ch, cw = random_resized_crop_box(h, w, np.random.default_rng(seed))
    assert 0 <= top and 0 <= left and ch >= 1 and cw >= 1 and top + ch <= h and left + cw <= w


def test_crop_area_and_aspect_follow_torchvision_ranges():
    rng = np.random.default_rng(0)
    boxes = [random_resized_crop_box(300, 400, rng) for _ in range(2000)]
    areas = np.array([ch * cw / (300 * 400) for _, _, ch, cw in boxes])
    ratios = np.array([cw / ch for _, _, ch, cw in boxes])
    assert areas.min() > 0.07 and areas.max() <= 1.0 and 0.4 < np.median(areas) < 0.65
    assert ratios.min() > 0.7 and ratios.max() < 1.4


def test_epoch_batches_are_seeded_permutations_without_single_image_batches():
    a = epoch_batches(17, 8, seed=0, epoch=0)
    assert [len(b) for b in a] == [8, 9]  # 8 + 8 + 1: the single image joins the batch before
    assert sorted(i for b in a for _, i in b) == list(range(17)) and all(e == 0 for b in a for e, _ in b)
    assert a == epoch_batches(17, 8, seed=0, epoch=0) != epoch_batches(17, 8, seed=0, epoch=1)
    with pytest.raises(InputError):
        epoch_batches(5, 0, seed=0, epoch=0)


def test_training_images_are_model_sized_and_seeded(colour_folder):
    ts = read_training_set(colour_folder)
    images = TrainingImages(ts.samples, Preprocessing(resize=36, crop=32), "random", seed=1)
    idx, a = images[(0, 3)]
    assert idx == 3 and a.shape == (32, 32, 3) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, images[(0, 3)][1])
    assert not np.array_equal(a, images[(1, 3)][1])  # a new crop every epoch
    center = TrainingImages(ts.samples, Preprocessing(resize=36, crop=32), "center")
    np.testing.assert_array_equal(center[(0, 3)][1], center[(5, 3)][1])
    with pytest.raises(InputError, match="fixed input size"):
        TrainingImages(ts.samples, Preprocessing(), "random")


def test_collate_augments_each_image_by_its_epoch_and_index(colour_folder):
    ts = read_training_set(colour_folder)
    keyed = KeyedImages(TrainingImages(ts.samples, Preprocessing(resize=36, crop=32), "center"))
    calls = []

    class Recording:
        def __call__(self, images, ids):
            calls.append((images.shape, list(ids)))
            return images[:, ::-1]

    batch = [keyed[(2, i)] for i in (4, 1)]
    indices, pixels = TrainingCollate(Recording())(batch)
    assert calls == [((2, 32, 32, 3), [(2, 4), (2, 1)])]
    assert indices.tolist() == [4, 1] and tuple(pixels.shape) == (2, 32, 32, 3)
    # the real transform: one corruption per image, fixed by (seed, epoch, index) whatever the batch
    paper = RandomCorruption("paper-noise", seed=5)
    alone = TrainingCollate(paper)([keyed[(2, 1)]])[1][0]
    together = TrainingCollate(paper)(batch)[1][1]
    np.testing.assert_array_equal(alone.numpy(), together.numpy())
    clean = TrainingCollate(None)([keyed[(2, 1)]])[1][0]
    assert not np.array_equal(alone.numpy(), clean.numpy())
