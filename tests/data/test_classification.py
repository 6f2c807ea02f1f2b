"""Classification readers: image folders, ImageNet-C, CIFAR-10-C, on-the-fly corruption."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robustlab.corruptions import corrupt
from robustlab.corruptions.released import imagenet_c_settings, read_cifar_c, read_imagenet_c
from robustlab.corruptions.views import corrupt_on_the_fly
from robustlab.data.classification import read_image_folder, resolve_class_map
from robustlab.data.images import write_image
from robustlab.data.wordnet import ilsvrc_wnids
from robustlab.errors import DataError, InputError
from robustlab.seeding import derive_seed

WNIDS = ["n01440764", "n01443537", "n01484850"]


def _folder(root, classes, per_class=2, size=(40, 48), seed=0):
    rng = np.random.default_rng(seed)
    for c in classes:
        for k in range(per_class):
            write_image(root / c / f"img_{k}.JPEG", rng.integers(0, 256, (*size, 3), dtype=np.uint8))
    return root


def test_image_folder_sorted_names_and_labels(tmp_path):
    _folder(tmp_path, ["dog", "cat", "bird"])
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    s = read_image_folder(tmp_path)
    assert s.classes == ("bird", "cat", "dog")
    assert s.ids[:3] == ("bird/img_0.JPEG", "bird/img_1.JPEG", "cat/img_0.JPEG")
    assert s.labels.tolist() == [0, 0, 1, 1, 2, 2]
    img = s.read(0)
    assert img.dtype == np.uint8 and img.shape == (40, 48, 3)
    assert len(read_image_folder(tmp_path, limit=3)) == 3
    sub = s.subset(2, 4)
    assert sub.ids == s.ids[2:4] and sub.labels.tolist() == [1, 1]


def test_wnid_folders_get_imagenet_indices(tmp_path):
    _folder(tmp_path, [WNIDS[2], WNIDS[0]])
    s = read_image_folder(tmp_path)
    index = {w: i for i, w in enumerate(ilsvrc_wnids())}
    assert len(s.classes) == 1000
    assert sorted(set(s.labels.tolist())) == sorted([index[WNIDS[0]], index[WNIDS[2]]])
    assert resolve_class_map([WNIDS[2], WNIDS[0]], "sorted")[0] == {WNIDS[0]: 0, WNIDS[2]: 1}


def test_explicit_class_maps(tmp_path):
    _folder(tmp_path, ["a", "b"])
    by_dict = read_image_folder(tmp_path, {"a": 7, "b": 2})
    assert set(by_dict.labels.tolist()) == {7, 2} and len(by_dict.classes) == 8
    path = tmp_path.parent / "map.json"
    path.write_text(json.dumps(["b", "x", "a"]))
    by_file = read_image_folder(tmp_path, str(path))
    assert by_file.labels.tolist() == [2, 2, 0, 0]
    with pytest.raises(DataError, match=r"\['b'\].*not in the class map"):
        read_image_folder(tmp_path, {"a": 0})
    with pytest.raises(DataError, match="not ImageNet-1k wnids"):
        read_image_folder(tmp_path, "imagenet")


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_image_folder(tmp_path / "nope")
    with pytest.raises(DataError, match="no class subfolders"):
        read_image_folder(tmp_path)
    _folder(tmp_path, ["a"])
    with pytest.raises(DataError, match=r"class folder .*b is missing"):
        read_image_folder(tmp_path, classes=["a", "b"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no images found"):
        read_image_folder(tmp_path, classes=["empty"])


def test_corrupt_jpeg_read_names_the_file(tmp_path):
    _folder(tmp_path, ["a"])
    (tmp_path / "a" / "img_0.JPEG").write_bytes(b"\xff\xd8\xff not really a jpeg")
    s = read_image_folder(tmp_path)
    with pytest.raises(DataError, match="img_0.JPEG"):
        s.read(0)
    assert s.read(1).shape == (40, 48, 3)


def test_imagenet_c_layout(tmp_path):
    for c in ("fog", "brightness"):
        for sev in (1, 2):
            _folder(tmp_path / c / str(sev), WNIDS[:2], per_class=1, size=(32, 32))
    assert imagenet_c_settings(tmp_path) == {"brightness": [1, 2], "fog": [1, 2]}
    s = read_imagenet_c(tmp_path, "fog", 2)
    assert s.root == tmp_path / "fog" / "2" and len(s) == 2
    with pytest.raises(DataError, match=r"fog/3 is missing"):
        read_imagenet_c(tmp_path, "fog", 3)
    with pytest.raises(DataError, match="not in the ImageNet-C layout"):
        imagenet_c_settings(tmp_path / "fog" / "1" / WNIDS[0])


def _cifar_c(root, n=4):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (5 * n, 32, 32, 3), dtype=np.uint8)
    labels = np.tile(np.arange(n) % 10, 5)
    np.save(root / "fog.npy", images)
    np.save(root / "labels.npy", labels)
    return images, labels


def test_cifar_c_severity_major(tmp_path):
    images, labels = _cifar_c(tmp_path)
    s3 = read_cifar_c(tmp_path, "fog", 3)
    assert len(s3) == 4 and s3.classes[0] == "airplane"
    np.testing.assert_array_equal(s3.read(1), images[9])
    np.testing.assert_array_equal(s3.labels, labels[8:12])
    assert len(read_cifar_c(tmp_path, "fog", 5, limit=2)) == 2
    with pytest.raises(DataError, match="snow.npy is missing.*fog"):
        read_cifar_c(tmp_path, "snow", 1)
    with pytest.raises(InputError):
        read_cifar_c(tmp_path, "fog", 6)
    np.save(tmp_path / "labels.npy", labels[:7])
    with pytest.raises(DataError, match="7 labels"):
        read_cifar_c(tmp_path, "fog", 1)


def test_on_the_fly_corruption_is_deterministic_per_sample(tmp_path):
    _folder(tmp_path, ["a", "b"], per_class=2, size=(36, 50))
    base = read_image_folder(tmp_path)
    fly = corrupt_on_the_fly(base, "gaussian_noise", 3, seed=5)
    third = fly.read(2)
    assert third.shape == (36, 50, 3)  # native resolution, before any model resize
    expected = corrupt(base.read(2), "gaussian_noise", 3,
                       rng=np.random.RandomState(derive_seed(5, base.ids[2], "gaussian_noise", 3)))
    np.testing.assert_array_equal(third, expected)
    np.testing.assert_array_equal(fly.subset(2, 4).read(0), third)  # order/shard independent
    assert not np.array_equal(corrupt_on_the_fly(base, "gaussian_noise", 3, seed=6).read(2), third)
    with pytest.raises(InputError):
        corrupt_on_the_fly(base, "gaussian_noize", 3)


def test_on_the_fly_on_arrays(tmp_path):
    _cifar_c(tmp_path)
    base = read_cifar_c(tmp_path, "fog", 1)
    out = corrupt_on_the_fly(base, "brightness", 2).read(0)
    assert out.shape == (32, 32, 3) and not np.array_equal(out, base.read(0))


def test_sample_views_compose_and_keep_ids_labels_and_subsets(tmp_path):
    from robustlab.data.classification import PreparedSamples, SizeCheckedSamples, read_image_folder
    from robustlab.data.images import write_image
    from robustlab.errors import DataError

    for k in range(4):
        write_image(tmp_path / ("a" if k < 2 else "b") / f"{k}.png", np.full((40, 50, 3), 40 * k, np.uint8))
    base = read_image_folder(tmp_path, "sorted")
    view = SizeCheckedSamples(PreparedSamples(base, _top_rows), 32)
    part = view.subset(1, 3)
    assert type(part) is SizeCheckedSamples and type(part.base) is PreparedSamples and part.min_size == 32
    assert list(part.ids) == ["a/1.png", "b/2.png"] and part.labels.tolist() == [0, 1] and part.classes == ("a", "b")
    assert part.fingerprint() == base.subset(1, 3).fingerprint()
    with pytest.raises(DataError, match="b/2.png is 50x10 pixels"):
        part.read(1)
    assert PreparedSamples(base, _top_rows).subset(3, 4).read(0).shape == (10, 50, 3)


def _top_rows(image):
    return image[:10]
