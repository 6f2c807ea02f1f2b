"""Library-level checks behind the matrix: image decoding per mode, metric and attack input
validation, safe loading, listings, stores. Regression tests of silent wrong results say
"fails on the old code"."""

from __future__ import annotations

import json
import os
import pickle

import cv2
import numpy as np
import pytest
import torch
from PIL import Image

from robustlab.corruptions.dataset import SUMMARY_NAME as CORRUPT_SUMMARY
from robustlab.data.classification import read_image_folder, resolve_class_map
from robustlab.data.folders import OUTPUT_MARKERS, RECORD_FORMATS, find_images
from robustlab.data.images import DEFAULT_MAX_PIXELS, read_image, scale_16bit
from robustlab.errors import DataError, InputError
from robustlab.metrics import flip_rate, mfr, relative_change, robustness_auc
from robustlab.metrics.detection import average_precision, box_iou, mean_ap
from robustlab.metrics.under_corruption import performance_under_corruption, rpc_undefined_reason
from robustlab.perturbations.dataset import SUMMARY_NAME as PERTURB_SUMMARY
from robustlab.safeload import load_checkpoint, load_npy
from robustlab.store.location import CATALOG_FILE, hide_password, resolve_location

from .helpers import EVALUATE, assert_ok, image_folder, picture, run, sixteen_bit_grey


# --- decoding every image mode ----------------------------------------------------------------------


def test_scale_16bit_maps_the_full_range():
    values = np.array([0, 128, 129, 32896, 65407, 65535], np.uint16)
    np.testing.assert_array_equal(scale_16bit(values), [0, 0, 1, 128, 255, 255])
    v = np.arange(65536, dtype=np.uint32)
    np.testing.assert_array_equal(scale_16bit(v), np.round(v * 255 / 65535).astype(np.uint8))


def test_16bit_grey_png_is_scaled(tmp_path):
    """Silent wrong result (fails on the old code): clipped to 255, so read as white."""
    grey = sixteen_bit_grey(24)
    Image.fromarray(grey).save(tmp_path / "g.png")
    got = read_image(tmp_path / "g.png")
    np.testing.assert_array_equal(got, np.repeat(scale_16bit(grey)[:, :, None], 3, axis=2))


@pytest.mark.parametrize("suffix", [".png", ".tif"])
@pytest.mark.parametrize("channels", [3, 4])
def test_16bit_colour_is_scaled_exactly(tmp_path, suffix, channels):
    """16-bit RGB(A) is scaled with rounding (Pillow alone keeps only the high byte)."""
    grey = sixteen_bit_grey(24)
    rgb = np.stack([grey, 65535 - grey, (grey // 3) + 255], -1)
    data = np.concatenate([rgb, np.full((24, 24, 1), 40000, np.uint16)], -1) if channels == 4 else rgb
    path = tmp_path / f"c{suffix}"
    cv2.imwrite(str(path), data[..., [2, 1, 0, 3][:channels]])  # OpenCV writes BGR(A)
    np.testing.assert_array_equal(read_image(path), scale_16bit(rgb))


def test_each_8bit_mode_is_decoded_explicitly(tmp_path):
    rgb = picture(24, seed=1)
    cases = {
        "grey.png": (Image.fromarray(rgb).convert("L"), lambda im: np.repeat(np.asarray(im)[:, :, None], 3, 2)),
        "bilevel.png": (Image.fromarray(rgb).convert("1"), lambda im: np.repeat(np.asarray(im.convert("L"))[:, :, None],
                                                                                3, 2)),
        "palette.png": (Image.fromarray(rgb).convert("P"), lambda im: np.asarray(im.convert("RGB"))),
        "la.png": (Image.fromarray(rgb).convert("LA"), lambda im: np.repeat(np.asarray(im.convert("L"))[:, :, None],
                                                                           3, 2)),
        "rgba.png": (Image.fromarray(np.dstack([rgb, np.full((24, 24), 7, np.uint8)])), lambda im: rgb),
        "cmyk.jpg": (Image.fromarray(rgb).convert("CMYK"), lambda im: np.asarray(im.convert("RGB"))),
    }
    for name, (img, expected) in cases.items():
        img.save(tmp_path / name)
        with Image.open(tmp_path / name) as reread:
            want = expected(reread)
        got = read_image(tmp_path / name)
        assert got.dtype == np.uint8 and got.shape == (24, 24, 3), name
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_palette_with_transparency_drops_alpha(tmp_path):
    img = Image.new("P", (8, 8))
    img.putpalette([255, 0, 0, 0, 0, 255] + [0] * 762)
    img.paste(1, (0, 0, 4, 8))
    img.info["transparency"] = 0
    img.save(tmp_path / "p.png", transparency=0)
    got = read_image(tmp_path / "p.png")
    assert tuple(got[0, 0]) == (0, 0, 255) and tuple(got[0, 7]) == (255, 0, 0)


def test_formats_without_an_8bit_scale_are_refused(tmp_path):
    Image.fromarray(np.full((4, 4), 0.5, np.float32)).save(tmp_path / "f.tif")
    with pytest.raises(DataError, match="floating-point"):
        read_image(tmp_path / "f.tif")
    Image.fromarray(np.full((4, 4), 70000, np.int32)).save(tmp_path / "i.tif")
    with pytest.raises(DataError, match="32-bit integer"):
        read_image(tmp_path / "i.tif")


def test_pixel_limit(tmp_path):
    Image.fromarray(picture(20)).save(tmp_path / "a.png")
    assert read_image(tmp_path / "a.png", max_pixels=400).shape == (20, 20, 3)
    with pytest.raises(DataError, match="20x20 = 400 pixels, over the limit of 399"):
        read_image(tmp_path / "a.png", max_pixels=399)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match="max_pixels"):
            read_image(tmp_path / "a.png", max_pixels=bad)
    assert DEFAULT_MAX_PIXELS == 2 * 89_478_485  # Pillow's decompression-bomb error threshold


# --- listings -------------------------------------------------------------------------------------


def test_output_markers_match_the_writers():
    from robustlab.train.finetuned import MANIFEST_FORMAT as FINETUNED_FORMAT
    from robustlab.train.finetuned import MANIFEST_NAME as FINETUNED_MANIFEST
    from robustlab.train.stylize import SUMMARY_NAME as STYLIZE_SUMMARY
    from robustlab.video.sampling import MANIFEST as SAMPLE_MANIFEST
    from robustlab.video.sampling import MANIFEST_FORMAT as SAMPLE_FORMAT

    assert {CORRUPT_SUMMARY, PERTURB_SUMMARY, STYLIZE_SUMMARY, SAMPLE_MANIFEST, FINETUNED_MANIFEST,
            CATALOG_FILE} == set(OUTPUT_MARKERS)
    assert SAMPLE_FORMAT.startswith(RECORD_FORMATS[SAMPLE_MANIFEST])
    assert FINETUNED_FORMAT.startswith(RECORD_FORMATS[FINETUNED_MANIFEST])


def test_listings_skip_outputs_stores_and_loops(tmp_path):
    data = image_folder(tmp_path / "data", per_class=1)
    for inside in ("corrupted", "results", "sub/deeper"):
        image_folder(data / inside, per_class=1)
    (data / "corrupted" / CORRUPT_SUMMARY).write_text("{}")
    (data / "results" / CATALOG_FILE).write_bytes(b"")
    (data / "store.db").write_bytes(b"")  # a store given as a file: its predictions/ beside it
    image_folder(data / "predictions", per_class=1)
    os.symlink(".", data / "loop")
    names = {p.as_posix() for p in find_images(data)}
    assert names == {"cat/0.png", "dog/0.png", "sub/deeper/cat/0.png", "sub/deeper/dog/0.png"}
    (data / "sub" / "deeper" / PERTURB_SUMMARY).write_text("{}")
    assert {p.as_posix() for p in find_images(data)} == {"cat/0.png", "dog/0.png"}
    assert read_image_folder(data, "sorted").classes == ("cat", "dog", "sub")


def test_class_map_values_are_checked():
    with pytest.raises(InputError, match="index 1000000"):
        resolve_class_map(["cat"], {"cat": 1_000_000})  # would allocate a million names before
    with pytest.raises(InputError, match="more than once"):
        resolve_class_map(["cat"], ["cat", "cat"])


# --- metrics ----------------------------------------------------------------------------------------


def test_robustness_auc_refuses_accuracies_above_1():
    """Silent wrong result (fails on the old code): percentages gave a plausible R."""
    with pytest.raises(InputError, match="accuracy must be fractions in \\[0, 1\\].*divide by 100"):
        robustness_auc([0, 0.1, 0.2], [90.0, 60.0, 30.0])
    with pytest.raises(InputError, match="accuracy must be fractions"):
        robustness_auc([0, 0.1, 0.2], [1.2, 1.1, 1.0])
    with pytest.raises(InputError, match="eps must be >= 0"):
        robustness_auc([-0.1, 0, 0.1], [1, 0.5, 0.2])
    with pytest.raises(InputError, match="NaN or infinite"):
        robustness_auc([0, 0.1, np.inf], [1, 0.5, 0.2])
    with pytest.raises(InputError, match="f_eps must be fractions"):
        relative_change(1.5, 0.5)
    assert robustness_auc([0, 0.1, 0.2], [1.0, 0.5, 0.0]) == pytest.approx(0.5)


def test_flip_probabilities_are_fractions():
    with pytest.raises(InputError, match="divide by 100"):
        flip_rate(23.65, "rotate")
    with pytest.raises(InputError, match="flip_probabilities\\['rotate'\\]"):
        mfr({"rotate": 1.5})
    with pytest.raises(InputError, match="baseline\\['rotate'\\]"):
        flip_rate(0.1, "rotate", baseline={"rotate": 3.0})


def test_detection_metrics_validate_ranges():
    cells = {"fog": {0: {"AP": 36.3}, 1: {"AP": 18.0}}}
    with pytest.raises(InputError, match="percentages"):
        performance_under_corruption(cells, corruptions=["fog"], severities=[1])
    with pytest.raises(InputError, match="-1, COCO's marker"):
        performance_under_corruption({"fog": {0: {"APs": -1.0}, 1: {"APs": 0.1}}}, corruptions=["fog"],
                                     severities=[1])
    with pytest.raises(InputError, match="recall must be fractions"):
        average_precision(np.array([0.5, 1.5]), np.array([1.0, 1.0]))
    with pytest.raises(InputError, match=r"per_class\[1\] must be fractions"):
        mean_ap({1: 1.5})
    with pytest.raises(InputError, match="finite"):
        box_iou(np.array([[0, 0, 1, np.nan]]), np.array([[0, 0, 1, 1]]))


def test_rpc_nan_is_explained():
    perf = performance_under_corruption({"fog": {0: {"AP": 0.0}, 1: {"AP": 0.0}}}, corruptions=["fog"],
                                        severities=[1])["AP"]
    assert np.isnan(perf.rPC)
    assert "clean performance P is 0" in rpc_undefined_reason(perf.P, perf.rPC)
    assert rpc_undefined_reason(0.5, 0.4) is None


def test_attacks_refuse_unbounded_eps_and_labels_out_of_range():
    from robustlab.attacks import epsilon_sweep, fgsm, pgd

    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3))
    x = torch.rand(2, 3, 2, 2)
    with pytest.raises(InputError, match="eps must be a finite"):
        fgsm(model, x, torch.tensor([0, 1]), float("inf"))
    with pytest.raises(InputError, match="class index 5, but the model outputs 3 classes"):
        fgsm(model, x, torch.tensor([0, 5]), 0.1)
    with pytest.raises(InputError, match="negative class index"):
        pgd(model, x, torch.tensor([0, -1]), 0.1)
    with pytest.raises(InputError, match="class index 3"):  # would be counted "never correct" silently
        epsilon_sweep(model, (x, torch.tensor([0, 3])), [0.0, 0.1])
    with pytest.raises(InputError, match="non-integer"):
        fgsm(model, x, torch.tensor([0.5, 1.0]), 0.1)


def test_coco_bbox_types_are_checked(tmp_path):
    from robustlab.data.detection import read_coco

    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.jpg").write_bytes(b"")
    base = {"images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
            "categories": [{"id": 1, "name": "x"}],
            "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]}]}
    for box, message in (("abcd", "four numbers"), (["1", 1, 2, 2], "four numbers"), ([1, None, 2, 2], "four numbers"),
                         ([True, 1, 2, 2], "four numbers"), ([1, 1, -2, 2], ">= 0"), ([1, 1, 2], "four numbers")):
        base["annotations"][0]["bbox"] = box
        (tmp_path / "a.json").write_text(json.dumps(base))
        with pytest.raises(DataError, match=f"annotation 7 has bbox .*{message}"):
            read_coco(tmp_path / "a.json", tmp_path / "img")


# --- safe loading -----------------------------------------------------------------------------------


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("echo should never run",))


def test_safe_loading_never_advises_unsafe_options(tmp_path):
    (tmp_path / "hostile.pt").write_bytes(pickle.dumps({"model": _RunsCode()}))
    torch.save({"model": torch.zeros(2)}, tmp_path / "ok.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "ok.pt").read_bytes()[:100])
    (tmp_path / "empty.pt").write_bytes(b"")
    for name, message in (("hostile.pt", "refuses to load it"), ("cut.pt", "truncated or corrupt"),
                          ("empty.pt", "empty or truncated"), ("none.pt", "does not exist")):
        with pytest.raises(DataError, match=message) as info:
            load_checkpoint(tmp_path / name, required_keys=["model"])
        assert "weights_only" not in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(DataError, match="lacks 'epoch'"):
        load_checkpoint(tmp_path / "ok.pt", required_keys=["model", "epoch"])
    assert torch.equal(load_checkpoint(tmp_path / "ok.pt")["model"], torch.zeros(2))

    np.save(tmp_path / "objects.npy", np.array([{}], dtype=object), allow_pickle=True)
    np.save(tmp_path / "plain.npy", np.arange(6))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "plain.npy").read_bytes()[:140])
    (tmp_path / "photo.npy").write_bytes(b"\xff\xd8\xff\xe0 not numpy")
    for name, message in (("objects.npy", "holds Python objects"), ("cut.npy", "not a complete .npy array"),
                          ("photo.npy", "not a .npy array file")):
        for mmap_mode in (None, "r"):
            with pytest.raises(DataError, match=message) as info:
                load_npy(tmp_path / name, mmap_mode=mmap_mode)
            assert "allow_pickle" not in str(info.value)
    np.testing.assert_array_equal(load_npy(tmp_path / "plain.npy"), np.arange(6))


# --- stores -----------------------------------------------------------------------------------------


def test_passwords_never_shown():
    url = "postgresql://ana:pa/ss@w0rd@db.example:5432/results?sslmode=require&password=other"
    shown = hide_password(url)
    assert "pa/ss" not in shown and "w0rd" not in shown and "other" not in shown
    assert shown == "postgresql://ana:***@db.example:5432/results?sslmode=require&password=***"
    location = resolve_location("postgresql://ana:secret@db/results")
    assert "secret" not in repr(location) and "secret" not in str(location) and "secret" not in location.describe()


def test_imagenet_p_takes_the_setting_perturb_recorded(tmp_path):
    """A CIFAR-setting folder from `robustlab perturb` was scored as ImageNet-P, its flip rates
    normalised by ImageNet's AlexNet (fails on the old code)."""
    src = image_folder(tmp_path / "src", per_class=2)
    assert_ok(run("perturb", src, tmp_path / "p", "-p", "rotate,gaussian_noise", "--setting", "cifar", "--format",
                  "npy", "-j", "1", "--no-progress"))
    args = [*EVALUATE, "--benchmark", "imagenet-p", "--data", tmp_path / "p", "--store", tmp_path / "s"]
    result = run(*args, "--json")
    assert_ok(result)
    out = json.loads(result.out)
    assert out["config"]["setting"] == "cifar"
    assert not any(m["name"] == "flip_rate" for m in out["metrics"])
    explicit = run(*args, "-O", "setting=imagenet", "--json")  # an explicit choice is followed
    assert_ok(explicit)
    assert json.loads(explicit.out)["config"]["setting"] == "imagenet"
