"""Training code: seeded and reproducible; CenterNet targets and decoding agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robustlab.demo import training
from robustlab.demo.detector import STRIDE, centernet_loss, centernet_targets, decode

TINY = training.TrainConfig(epochs=1, n_per_epoch=32, batch_size=16)


def _states_equal(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.slow
def test_training_is_reproducible_from_the_seed_and_leaves_global_rng_alone():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: bit-reproducible reductions
    try:
        torch.manual_seed(123)
        before = torch.random.get_rng_state()
        a = training.train_classifier("baseline", seed=5, config=TINY, log=lambda _: None)
        assert torch.equal(torch.random.get_rng_state(), before)
        b = training.train_classifier("baseline", seed=5, config=TINY, log=lambda _: None)
        c = training.train_classifier("baseline", seed=6, config=TINY, log=lambda _: None)
    finally:
        torch.set_num_threads(threads)
    assert _states_equal(a, b)
    assert not _states_equal(a, c)


def test_targets_decode_back_to_the_boxes():
    boxes = [np.array([[10, 20, 40, 52], [60, 8, 84, 40]], np.float32)]
    labels = [np.array([3, 7])]
    t = centernet_targets(boxes, labels, (96, 96))
    assert t["heatmap"].shape == (1, 10, 24, 24) and t["mask"].sum() == 2
    assert t["heatmap"][0, 3].max() == 1 and t["heatmap"][0, 7].max() == 1 and t["heatmap"][0, 0].max() == 0
    logits = torch.logit(t["heatmap"].clamp(1e-4, 1 - 1e-4))
    out = decode(logits, t["size"], t["offset"], (96, 96), max_detections=5, score_threshold=0.5)[0]
    order = torch.argsort(out["labels"])
    assert out["labels"][order].tolist() == [4, 8]  # COCO category id = digit + 1
    np.testing.assert_allclose(out["boxes"][order].numpy(), boxes[0], atol=1e-4)


def test_loss_is_lower_for_the_right_maps():
    boxes, labels = [np.array([[10, 20, 40, 52]], np.float32)], [np.array([3])]
    t = centernet_targets(boxes, labels, (96, 96))
    good = centernet_loss(torch.logit(t["heatmap"].clamp(1e-3, 1 - 1e-3)), t["size"], t["offset"], t)
    bad = centernet_loss(torch.zeros_like(t["heatmap"]), torch.zeros_like(t["size"]), t["offset"], t)
    assert float(good) < 0.5 < 2.0 < float(bad)
    assert STRIDE == 4


def test_coco_ap_perfect_and_empty():
    from robustlab.demo.detection_scenes import coco_dict, make_detection_scenes

    scenes = make_detection_scenes("test", 5, seed=0)
    gt = coco_dict(scenes, [f"{i}.png" for i in range(5)])
    perfect = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 1.0}
               for a in gt["annotations"]]
    assert training.coco_ap(gt, perfect)["AP"] == 1.0
    assert training.coco_ap(gt, [])["AP"] == 0.0


SMALL = training.TrainConfig(epochs=1, n_per_epoch=12, batch_size=6)


def test_noise_augmented_images_get_one_paper_noise_corruption_each_fresh_every_epoch():
    from robustlab.corruptions.transforms import PAPER_NOISE_AUGMENTATION
    from robustlab.demo.world import make_scenes

    config = training.TrainConfig(**{**SMALL.__dict__, "augmentation": "paper-noise"})
    augment = training.augmentation_of("cnn-noise", config, seed=0)
    assert augment.names == PAPER_NOISE_AUGMENTATION and augment.p == 1.0 and augment.severity_choices == (1, 2, 3, 4, 5)
    for epoch in (0, 1):
        images, labels = training.training_images("cnn-noise", epoch, 0, config)
        clean = make_scenes("train", 12, seed=0, start=epoch * 12)
        np.testing.assert_array_equal(labels, clean.labels)
        for i in range(12):
            assert not np.array_equal(images[i], clean.images[i])  # every image is corrupted (p = 1)
            np.testing.assert_array_equal(images[i], augment.apply_one(clean.images[i], (epoch, epoch * 12 + i)))
    draws = {epoch: [augment.choose((epoch, i)) for i in range(12)] for epoch in (0, 1)}
    assert draws[0] != draws[1]  # the same scene index draws again in another epoch
    assert {name for name, _ in draws[0] + draws[1]} <= set(PAPER_NOISE_AUGMENTATION)
    plain, _ = training.training_images("cnn", 0, 0, SMALL)
    np.testing.assert_array_equal(plain, make_scenes("train", 12, seed=0).images)


def test_the_noise_augmented_twin_differs_from_the_cnn_only_by_its_augmentation():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        twin = training.TrainConfig(**{**SMALL.__dict__, "seeds_of": "cnn"})
        augmented = training.TrainConfig(**{**twin.__dict__, "augmentation": "paper-noise"})
        cnn = training.train_classifier("cnn", 0, SMALL, log=lambda _: None)
        same = training.train_classifier("cnn-noise", 0, twin, log=lambda _: None)
        noisy = training.train_classifier("cnn-noise", 0, augmented, log=lambda _: None)
    finally:
        torch.set_num_threads(threads)
    assert _states_equal(cnn, same)  # same start and batch order
    assert not _states_equal(cnn, noisy)


def test_shipped_configs():
    assert training.CONFIGS["cnn-noise"].augmentation == "paper-noise"
    assert training.CONFIGS["cnn-noise"].seeds_of == "cnn"
    assert training.CONFIGS["cnn-noise"].epochs == training.CONFIGS["cnn"].epochs
    assert training.CONFIGS["baseline"].epochs < training.CONFIGS["cnn"].epochs
