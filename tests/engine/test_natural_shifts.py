"""Natural-shift benchmarks end to end on synthetic folders in each released layout, with the real
class lists: ImageNetV2, ImageNet-A, ImageNet-R, ImageNet-Sketch and ObjectNet."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from .conftest import WNIDS, class_image, make_folder

from robustlab.benchmarks.natural_shift import crop_border, has_red_border
from robustlab.data.images import write_image
from robustlab.data.natural_shifts import (imagenet_a_indices, imagenet_r_indices, objectnet_folders,
                                           objectnet_to_imagenet, subset_wnids)
from robustlab.data.wordnet import ilsvrc_wnids
from robustlab.engine import evaluate
from robustlab.errors import DataError, InputError, ModelError
from robustlab.metrics.stats import clopper_pearson


class ChannelAt(nn.Module):
    """1,000 ImageNet logits: column ``columns[k]`` scores 20 x the mean of colour channel k (k < 3)."""

    def __init__(self, columns, num_classes: int = 1000) -> None:
        super().__init__()
        self.columns = list(columns)
        self.num_classes = num_classes
        self.scale = nn.Parameter(torch.tensor(20.0))

    def forward(self, x):
        out = torch.full((x.shape[0], self.num_classes), -20.0, dtype=x.dtype)
        means = x.mean(dim=(2, 3)) * self.scale
        for k, col in enumerate(self.columns):
            out[:, col] = means[:, k]
        return out


def run(model, benchmark, data, tmp_path, **options):
    return evaluate(model, benchmark, data, store=tmp_path / "store", workers=0, device="cpu", progress=False,
                    **options)


def test_the_shipped_class_lists():
    a, r = imagenet_a_indices(), imagenet_r_indices()
    assert len(a) == len(set(a)) == 200 and len(r) == len(set(r)) == 200
    assert a[:3] == [6, 11, 13] and a[-1] == 988 and subset_wnids(a)[0] == "n01498041"  # stingray
    assert r[:3] == [1, 2, 4]
    assert len(objectnet_folders()) == 313
    overlap = objectnet_to_imagenet()
    assert len(overlap) == 113 and overlap["alarm_clock"] == [409, 530]  # analog and digital clock
    claimed = [i for ids in overlap.values() for i in ids]
    assert len(claimed) == len(set(claimed))


def test_imagenetv2_released_layout_and_clean_pair(tmp_path):
    root = make_folder(tmp_path / "imagenetv2-matched-frequency-format-val", ("0", "1", "2"), 4, seed=1)
    clean = make_folder(tmp_path / "val", WNIDS, 4, seed=2)
    result = run(ChannelAt([0, 1, 2]), "imagenetv2", root, tmp_path, clean_data=str(clean))
    s = result.summary
    assert s["set"] == "imagenetv2-matched-frequency" and s["shifted"]["n"] == 12 and s["clean"]["n"] == 12
    acc = result.metric("accuracy", "shifted")
    lo, hi = clopper_pearson(round(acc * 12), 12)
    assert result.metric("accuracy_low", "shifted") == pytest.approx(lo) and s["shifted"]["accuracy_high"] == pytest.approx(hi)
    assert result.metric("top5_accuracy", "shifted") >= acc
    pair = s["accuracy_pair"]
    assert pair["testbed_columns"] == ["val", "imagenetv2-matched-frequency-format-val"] and pair["shifted_n"] == 12
    assert "ImageNetV2" not in result.table() or "imagenetv2-matched-frequency" in result.table()


def test_imagenetv2_variant_and_layout_errors(tmp_path):
    odd = make_folder(tmp_path / "my-v2", ("0", "1"), 1)
    with pytest.raises(InputError, match="variant=<matched-frequency|threshold0.7|top-images>"):
        run(ChannelAt([0, 1, 2]), "imagenetv2", odd, tmp_path)
    assert run(ChannelAt([0, 1, 2]), "imagenetv2", odd, tmp_path, variant="top-images").summary["set"] == \
        "imagenetv2-top-images"
    wnid_named = make_folder(tmp_path / "imagenetv2-threshold0.7-format-val", WNIDS, 1)
    with pytest.raises(DataError, match=r"released layout <root>/<ImageNet class index 0..999>/<image>"):
        run(ChannelAt([0, 1, 2]), "imagenetv2", wnid_named, tmp_path)


@pytest.mark.parametrize("benchmark,indices", [("imagenet-a", imagenet_a_indices()),
                                               ("imagenet-r", imagenet_r_indices())])
def test_200_class_subsets_project_the_1000_logits(tmp_path, benchmark, indices):
    wnids = subset_wnids(indices)[:3]
    root = make_folder(tmp_path / benchmark, wnids, 4, seed=3)
    val = make_folder(tmp_path / "val", wnids, 4, seed=4)
    make_folder(tmp_path / "val-extra", ["n01440764"], 4, seed=8)  # a class outside the subset too
    (tmp_path / "val-extra" / "n01440764").rename(val / "n01440764")
    model = ChannelAt(indices[:3])
    result = run(model, benchmark, root, tmp_path, clean_data=str(val))
    # labels are positions among the 200; the model's columns for them are the subset's first three
    assert result.summary["classes"] == 200
    assert result.summary["clean"]["n"] == 12  # the outside class is not evaluated
    assert result.metric("accuracy", "shifted") > 0.5
    with pytest.raises(ModelError, match=f"gives 10 logits per image, but {benchmark} projects the 1000 "
                                         "ImageNet-1k logits to its 200 classes"):
        run(ChannelAt([0, 1, 2], num_classes=10), benchmark, root, tmp_path / "other")
    bad = make_folder(tmp_path / "bad", [wnids[0], "n01440764"], 1)  # tench is in neither subset
    with pytest.raises(DataError, match=r"<root>/<wnid>/<image> with .*200 ImageNet wnids: 'n01440764'"):
        run(model, benchmark, bad, tmp_path)


def test_imagenet_sketch_layout(tmp_path):
    root = make_folder(tmp_path / "sketch", WNIDS, 3, seed=5)
    result = run(ChannelAt([0, 1, 2]), "imagenet-sketch", root, tmp_path)
    assert result.summary["shifted"]["n"] == 9 and "clean" not in result.summary
    assert any("no clean accuracy" in n for n in result.notes)
    numbered = make_folder(tmp_path / "numbered", ("0", "1"), 1)
    with pytest.raises(DataError, match="ImageNet-Sketch: 1,000 wnid folders"):
        run(ChannelAt([0, 1, 2]), "imagenet-sketch", numbered, tmp_path)


def framed(image: np.ndarray) -> np.ndarray:
    out = image.copy()
    out[0, :] = out[-1, :] = out[:, 0] = out[:, -1] = (255, 0, 0)
    return out


def test_objectnet_mapping_border_crop_and_note(tmp_path):
    overlap = objectnet_to_imagenet()
    folders = ["alarm_clock", "backpack", "banana"]
    outside = next(f for f in objectnet_folders() if f not in overlap)
    rng = np.random.default_rng(6)
    images = tmp_path / "objectnet-1.0" / "images"
    for label, folder in enumerate(folders):
        for k in range(3):
            img = class_image(label, rng, (40, 48))
            write_image(images / folder / f"{k}.png", img if (folder, k) == ("banana", 2) else framed(img))
    write_image(images / outside / "0.png", framed(class_image(0, rng, (40, 48))))
    order = sorted(overlap)
    # columns: the first ImageNet class of each of the three ObjectNet classes
    model = ChannelAt([overlap[f][0] for f in folders])
    wnids = ilsvrc_wnids()
    val = make_folder(tmp_path / "val", [wnids[overlap[f][-1]] for f in folders], 2, seed=7)
    from robustlab.models.preprocessing import Preprocessing

    result = run(model, "objectnet", tmp_path / "objectnet-1.0", tmp_path, clean_data=str(val),
                 preprocessing=Preprocessing(resize=32, crop=32))
    s = result.summary
    assert s["classes"] == 113 and s["shifted"]["n"] == 9  # the non-overlapping folder is not evaluated
    assert result.metric("images_without_border", "shifted") == 1
    assert any("1 ObjectNet image(s) had no 1-pixel red border" in n for n in result.notes)
    assert s["accuracy_pair"]["testbed_columns"] == ["val-on-objectnet-classes", "objectnet-1.0-beta"]
    # labels index the sorted 113 folders; a class scores the max of its ImageNet columns, so the model's
    # analog-clock column answers for alarm_clock, and val's digital-clock images are alarm clocks too
    assert order[:3] == folders and result.metric("accuracy", "shifted") > 0.5
    from robustlab.data.images import read_image

    expected = np.mean([int(np.argmax(read_image(path).reshape(-1, 3).mean(axis=0))) == k
                        for k, f in enumerate(folders) for path in sorted((val / wnids[overlap[f][-1]]).iterdir())])
    assert s["clean"]["n"] == 6 and s["clean"]["accuracy"] == pytest.approx(expected)
    with pytest.raises(DataError, match="ObjectNet class folder"):
        run(model, "objectnet", make_folder(tmp_path / "not-objectnet", ("cat",), 1), tmp_path)


def test_border_detection():
    img = np.full((10, 12, 3), 90, np.uint8)
    assert not has_red_border(img)
    cropped, had = crop_border(framed(img))
    assert had and cropped.shape == (8, 10, 3) and (cropped == 90).all()
    same, had = crop_border(img)
    assert not had and same is img
