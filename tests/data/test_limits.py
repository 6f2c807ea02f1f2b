"""``--limit N``: the same number of samples from each class, chosen by a seeded hash of each
sample id (robustlab.data.limits), the same in every run, order and worker count; ``--limit-order
path`` keeps the first N. Before, a limit took the first N files in path order: the first classes only."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from robustlab.data.classification import limit_samples, limited_rows, read_image_folder, ArraySamples
from robustlab.data.limits import limit_note, limit_positions, limit_stats
from robustlab.errors import InputError


def class_folder(root, classes=10, per_class=30):
    for c in range(classes):
        (root / f"c{c}").mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(np.full((4, 4, 3), (c * 20 + i) % 256, np.uint8)).save(root / f"c{c}" / f"{i:02d}.png")
    return root


def test_a_limit_of_50_over_10_classes_takes_5_of_each(tmp_path):
    samples = read_image_folder(class_folder(tmp_path), limit=50)
    assert np.bincount(samples.labels).tolist() == [5] * 10
    assert samples.limited == {"order": "balanced", "samples": 50, "of": 300, "classes": 10, "per_class": [5, 5]}
    # not the first 5 of each class: a hash of the id picks them
    assert [f for f in samples.files if f.startswith("c0/")] != [f"c0/{i:02d}.png" for i in range(5)]
    # the old rule, asked for by name: the first 50 in path order, classes 0 and 1 only
    first = read_image_folder(tmp_path, limit=50, limit_order="path")
    assert np.bincount(first.labels).tolist() == [30, 20]


def test_the_choice_is_the_same_for_a_units_classes_and_in_a_copy(tmp_path):
    whole = read_image_folder(class_folder(tmp_path / "a"), limit=20)
    part = read_image_folder(tmp_path / "a", limit=20, classes=["c3", "c7"])
    assert part.files == tuple(f for f in whole.files if f.startswith(("c3/", "c7/")))
    copy = read_image_folder(class_folder(tmp_path / "b"), limit=20)  # another folder, the same relative paths
    assert copy.files == whole.files


def test_fewer_than_one_per_class_and_short_classes(tmp_path):
    root = class_folder(tmp_path, classes=4, per_class=6)
    for p in sorted((root / "c2").iterdir())[1:]:
        p.unlink()  # class 2 keeps 1 image
    five = read_image_folder(root, limit=5)  # 4 classes: 1 each, one class gets a second
    assert sorted(np.bincount(five.labels, minlength=4).tolist()) == [1, 1, 1, 2]
    twelve = read_image_folder(root, limit=12)  # 3 each, class 2 has only 1: the others do not make up for it
    assert np.bincount(twelve.labels).tolist() == [3, 3, 1, 3]
    assert twelve.limited["per_class"] == [1, 3]


def test_unknown_order_is_refused(tmp_path):
    with pytest.raises(InputError, match="limit order 'first'"):
        read_image_folder(class_folder(tmp_path, 2, 2), limit=1, limit_order="first")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=80), st.integers(1, 90), st.randoms(use_true_random=False))
def test_balanced_positions_do_not_depend_on_listing_order(labels, limit, rnd):
    keys = [f"c{label}/img{i}" for i, label in enumerate(labels)]
    chosen = {keys[p] for p in limit_positions(keys, labels, limit)}
    order = list(range(len(keys)))
    rnd.shuffle(order)
    shuffled = {keys[i] for i in np.asarray(order)[limit_positions([keys[i] for i in order],
                                                                    [labels[i] for i in order], limit)]}
    assert chosen == shuffled
    counts = np.bincount([labels[keys.index(k)] for k in chosen], minlength=7)
    available = np.bincount(labels, minlength=7)
    present = available > 0
    share = limit // int(present.sum())
    # every class gets its share (or all it has), and never more than one above it
    assert np.all(counts[present] >= np.minimum(share, available[present]))
    assert np.all(counts[present] <= share + 1)
    assert len(chosen) <= limit


def test_cifar_rows_take_the_same_images_in_every_severity(tmp_path):
    labels = np.tile(np.arange(10), 20)  # 200 rows per severity
    path = tmp_path / "fog.npy"
    np.save(path, np.zeros((1000, 2, 2, 3), np.uint8))
    sev = [limited_rows(ArraySamples(path, s * 200, (s + 1) * 200, labels), 30) for s in range(5)]
    offsets = [[int(i) - s * 200 for i in x.ids] for s, x in enumerate(sev)]
    assert all(o == offsets[0] for o in offsets)
    assert np.bincount(sev[2].labels).tolist() == [3] * 10
    assert sev[2].subset(5, 10).ids == sev[2].ids[5:10]


def test_in_memory_sets_and_notes():
    class Rows:
        labels = np.repeat(np.arange(3), 10)
        ids = tuple(f"digits/{i}" for i in range(30))
        classes = ("0", "1", "2")

        def __len__(self):
            return 30

        def read(self, i):
            return np.full((2, 2, 3), i, np.uint8)

    limited = limit_samples(Rows(), 9)
    assert np.bincount(limited.labels).tolist() == [3, 3, 3]
    assert int(limited.read(0)[0, 0, 0]) == int(limited.ids[0].split("/")[1])
    stats = limit_stats(Rows.labels, limit_positions(Rows.ids, Rows.labels, 9), 30, "balanced")
    note = limit_note({"limit": 9, "limit_order": "balanced", "limit_stats": stats})
    assert note.startswith("limited to 9 of 30 samples, 3 per class of 3 (balanced")
    assert limit_note({"limit": None}) is None
