"""Silent wrong results of issue 37's probes (exit 0, wrong numbers or labels), each now an error or
a correct result, each test failing on the old code. (Finding 1, ImageNet-C-bar's class folders,
is tested with the released-layout check; finding 2, a plugin replacing a built-in, in
tests/test_plugin_safety.py; finding 4, model identity, in tests/models/test_build_inputs.py;
finding 8, labels, and 9, reference points, in test_probes_inputs.py.)"""

from __future__ import annotations

import json

import numpy as np

from robustlab.engine.benchmark import get_benchmark

from .helpers import EVALUATE, MODELS, assert_error, assert_ok, image_folder, run


def evaluate(data, store, *extra):
    return run(*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", store, "-c", "brightness", "-s", "1",
               "--json", *extra)


def test_3_finetune_output_inside_a_class_folder_is_refused(tmp_path):
    """`finetune -o data/tiny/0` was accepted, and every later evaluation of data/tiny skipped class 0."""
    data = image_folder(tmp_path / "tiny", classes=("0", "1"))
    before = json.loads(evaluate(data, tmp_path / "s1").out)
    result = run("finetune", "-m", f"python:{MODELS}:make_mean_colour", "--data", data, "-o", data / "0",
                 "--epochs", "1", "--workers", "0", "--device", "cpu", "--no-progress")
    assert_error(result, "holds images", "it is data, not an output folder")
    assert not (data / "0" / "finetuned.json").exists() and not (data / "0" / "checkpoint.pt").exists()
    after = json.loads(evaluate(data, tmp_path / "s2").out)
    assert after["metrics"] == before["metrics"]  # class 0 is still evaluated
    assert_error(run("finetune", "-m", f"python:{MODELS}:make_mean_colour", "--data", data, "-o", data,
                     "--epochs", "1", "--workers", "0", "--device", "cpu", "--no-progress"), "holds images")


def test_5_an_option_given_as_a_flag_and_with_o_must_agree(tmp_path):
    """`--seed 2 -O seed=1` silently ran seed 1."""
    data = image_folder(tmp_path / "data")
    result = evaluate(data, tmp_path / "store", "--seed", "2", "-O", "seed=1")
    assert_error(result, "seed is given twice with different values (--seed 2 and -O seed=1)")
    result = evaluate(data, tmp_path / "store", "-O", "seed=1", "--seed", "2")
    assert_error(result, "seed is given twice")
    assert_ok(evaluate(data, tmp_path / "store", "--seed", "1", "-O", "seed=1"))  # the same value: fine


def test_6_num_classes_is_checked_against_the_model_on_every_batch(tmp_path):
    """`--num-classes 11` (or 0) on a 10-logit model ran to completion."""
    data = image_folder(tmp_path / "data")
    assert_error(evaluate(data, tmp_path / "store", "--num-classes", "3"),
                 "returned 2 logits per image, but it declares 3 classes")
    assert_error(evaluate(data, tmp_path / "store", "--num-classes", "0"), "num_classes (--num-classes) must be a "
                 "positive integer")
    assert_ok(evaluate(data, tmp_path / "store", "--num-classes", "2"))


def test_7_zero_row_cifar_arrays_are_an_error_not_a_complete_run(tmp_path):
    """Zero-row CIFAR-10-C-bar arrays gave a run marked complete with no metrics."""
    root = tmp_path / "CIFAR-10-C-Bar"
    root.mkdir()
    for name in ("blue_noise_sample", "brownish_noise", "checkerboard_cutout", "inverse_sparkles", "pinch_and_twirl",
                 "ripple", "circular_motion_blur", "lines", "sparkles", "transverse_chromatic_abberation"):
        np.save(root / f"{name}.npy", np.zeros((0, 32, 32, 3), np.uint8))
    np.save(root / "labels.npy", np.zeros(0, np.int64))
    result = run(*EVALUATE, "--benchmark", "imagenet-c-bar", "--data", root, "--store", tmp_path / "store", "--json")
    assert_error(result, "has no samples to measure", "0 samples")
    assert json.loads(result.out)["status"] == "failed"


def test_10_a_partial_clean_data_is_not_labelled_imagenet_val():
    """A --clean-data of 6 images was labelled "ImageNet val, ImageNet-R's 200 classes"."""
    from robustlab.engine.presentation import presentation_of

    bench = get_benchmark("imagenet-r")
    shown = presentation_of(bench)
    config = bench.config_class(data="/d", classes_per_unit=100, top_k=5, save_logits=False, clean_data=None,
                                clean_run=None, projection=[[i] for i in range(200)], num_classes=None)
    rows = [("accuracy", "shifted", 0.5), ("n_samples", "shifted", 20.0), ("accuracy", "clean", 0.6),
            ("n_samples", "clean", 6.0)]
    pair = shown.summary(config, rows)["accuracy_pair"]
    assert pair["original_set"] == "ImageNet val, ImageNet-R's 200 classes: 6 of its 10,000 images only"
    full = shown.summary(config, rows[:3] + [("n_samples", "clean", 10000.0)])["accuracy_pair"]
    assert full["original_set"] == "ImageNet val, ImageNet-R's 200 classes"
