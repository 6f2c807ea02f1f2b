"""Detection metrics: COCO parity with pycocotools, VOC AP by hand, VID thresholds, pm-k by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustlab.errors import InputError
from robustlab.metrics.detection import (
    COCO_STAT_NAMES,
    ap_per_class,
    average_precision,
    box_iou,
    check_iou_threshold,
    coco_metrics,
    detection_pmk,
    localization_pmk,
    per_image_ap,
    sanitize_detections,
    to_coco_ground_truth,
    to_coco_results,
    vid_iou_threshold,
    voc_ap50,
)


def gt(boxes, labels, **flags):
    return {"boxes": np.asarray(boxes, float).reshape(-1, 4), "labels": np.asarray(labels), **flags}


def det(boxes, scores, labels):
    return {"boxes": np.asarray(boxes, float).reshape(-1, 4), "scores": np.asarray(scores, float),
            "labels": np.asarray(labels)}


NO_DETECTIONS = det(np.zeros((0, 4)), [], [])


# --- COCO ------------------------------------------------------------------------------------


def random_coco_set(seed: int, n_images: int = 8, n_categories: int = 3):
    """Random GT (with crowd boxes and empty images) and detections (jittered GT + clutter)."""
    rng = np.random.default_rng(seed)
    cats = [{"id": 10 + k, "name": f"c{k}"} for k in range(n_categories)]
    images, anns, results = [], [], []
    for i in range(n_images):
        w, h = int(rng.integers(200, 640)), int(rng.integers(200, 480))
        images.append({"id": i + 1, "width": w, "height": h, "file_name": f"{i}.jpg"})
        n_obj = 0 if i == 0 else int(rng.integers(0, 6))  # image 1 has no objects at all
        for _ in range(n_obj):
            bw, bh = rng.uniform(4, w / 2), rng.uniform(4, h / 2)
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            cat = int(rng.integers(0, n_categories)) + 10
            crowd = int(rng.random() < 0.15)
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": cat, "iscrowd": crowd,
                         "bbox": [x, y, bw, bh], "area": bw * bh})
            for _ in range(int(rng.integers(0, 3))):  # 0-2 noisy detections per object
                jitter = rng.normal(0, 0.15, 4) * [bw, bh, bw, bh]
                c = cat if rng.random() < 0.85 else int(rng.integers(0, n_categories)) + 10
                results.append({"image_id": i + 1, "category_id": c, "score": float(rng.random()),
                                "bbox": [x + jitter[0], y + jitter[1], max(1.0, bw + jitter[2]),
                                         max(1.0, bh + jitter[3])]})
        for _ in range(int(rng.integers(0, 4))):  # clutter, also on the empty image
            bw, bh = rng.uniform(4, w / 3), rng.uniform(4, h / 3)
            results.append({"image_id": i + 1, "category_id": int(rng.integers(0, n_categories)) + 10,
                            "score": float(rng.random()),
                            "bbox": [rng.uniform(0, w - bw), rng.uniform(0, h - bh), bw, bh]})
    return {"images": images, "annotations": anns, "categories": cats}, results


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_coco_faster_coco_eval_equals_pycocotools(seed):
    gt_set, results = random_coco_set(seed)
    assert any(a["iscrowd"] for a in gt_set["annotations"]) or seed != 0
    fast = coco_metrics(gt_set, results)
    ref = coco_metrics(gt_set, results, backend="pycocotools")
    assert list(fast) == list(COCO_STAT_NAMES)
    for name in COCO_STAT_NAMES:
        assert fast[name] == pytest.approx(ref[name], abs=1e-9), name
    assert 0 < fast["AP"] < 1  # a non-trivial set


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(1, 6), st.integers(1, 4))
def test_coco_parity_property(seed, n_images, n_categories):
    gt_set, results = random_coco_set(seed, n_images, n_categories)
    if not gt_set["annotations"]:
        return
    fast = coco_metrics(gt_set, results)
    ref = coco_metrics(gt_set, results, backend="pycocotools")
    assert np.allclose([fast[k] for k in COCO_STAT_NAMES], [ref[k] for k in COCO_STAT_NAMES], rtol=0, atol=1e-9)


def test_coco_perfect_and_empty_detections():
    gt_set, _ = random_coco_set(5)
    perfect = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 1.0}
               for a in gt_set["annotations"] if not a["iscrowd"]]
    assert coco_metrics(gt_set, perfect)["AP"] == pytest.approx(1.0)
    for backend in ("faster-coco-eval", "pycocotools"):
        assert coco_metrics(gt_set, [], backend=backend)["AP"] == 0.0


def test_coco_round_trip_from_arrays():
    samples = [dict(image_id=1, width=100, height=80, boxes=np.array([[10, 10, 50, 40]]), labels=np.array([3])),
               dict(image_id=2, width=100, height=80, boxes=np.zeros((0, 4)), labels=np.zeros(0, int))]
    gt_set = to_coco_ground_truth(samples, {3: "cat"})
    assert gt_set["annotations"][0]["bbox"] == [10.0, 10.0, 40.0, 30.0]
    results = to_coco_results([1, 2], [det([[10, 10, 50, 40]], [0.9], [3]), NO_DETECTIONS])
    assert coco_metrics(gt_set, results)["AP50"] == pytest.approx(1.0)


def test_coco_rejects_bad_results():
    gt_set, results = random_coco_set(1)
    with pytest.raises(InputError, match="unknown category_id 99"):
        coco_metrics(gt_set, results + [{"image_id": 1, "category_id": 99, "bbox": [0, 0, 1, 1], "score": 0.5}])
    with pytest.raises(InputError, match=r"results\[0\]\.score contains NaN"):
        coco_metrics(gt_set, [{"image_id": 1, "category_id": 10, "bbox": [0, 0, 1, 1], "score": float("nan")}])
    with pytest.raises(InputError, match="image_id 12345"):
        coco_metrics(gt_set, [{"image_id": 12345, "category_id": 10, "bbox": [0, 0, 1, 1], "score": 0.5}])
    with pytest.raises(InputError, match="lacks"):
        coco_metrics({"images": []}, [])


# --- VOC AP by hand --------------------------------------------------------------------------


def test_average_precision_hand_worked():
    # scores .9 tp, .8 fp, .7 tp, .6 fp with 3 positives: recall 1/3 1/3 2/3 2/3, precision 1 .5 2/3 .5
    rec = np.array([1, 1, 2, 2]) / 3
    prec = np.array([1, 0.5, 2 / 3, 0.5])
    assert average_precision(rec, prec, method="11-point") == pytest.approx(6 / 11)  # 4 x 1 + 3 x 2/3
    assert average_precision(rec, prec, method="all-point") == pytest.approx(5 / 9)  # 1/3 + 1/3 x 2/3
    with pytest.raises(InputError):
        average_precision(rec, prec, method="101-point")


def test_voc_ap50_end_to_end_hand_worked():
    g = gt([[0, 0, 10, 10], [20, 20, 30, 30], [40, 40, 50, 50]], [0, 0, 0])
    d = det([[0, 0, 10, 10], [60, 60, 70, 70], [20, 20, 30, 30], [80, 80, 90, 90]], [.9, .8, .7, .6], [0] * 4)
    assert voc_ap50([g], [d])[0] == pytest.approx(6 / 11)
    assert voc_ap50([g], [d], method="all-point")[0] == pytest.approx(5 / 9)


def test_voc_difficult_and_duplicates_hand_worked():
    # image A: g1 and a difficult g2; detections g1 (.9, tp), g2 (.8, ignored), g1 again (.7, duplicate = fp)
    a = gt([[0, 0, 10, 10], [20, 20, 30, 30]], [0, 0], difficult=[False, True])
    da = det([[0, 0, 10, 10], [20, 20, 30, 30], [0, 0, 10, 10]], [.9, .8, .7], [0, 0, 0])
    b = gt([[5, 5, 15, 15]], [0])
    db = det([[5, 5, 15, 15]], [.6], [0])
    # counted: .9 tp, .7 fp, .6 tp; 2 positives -> recall .5 .5 1, precision 1 .5 2/3
    m11, per_class = voc_ap50([a, b], [da, db])
    assert m11 == pytest.approx(28 / 33) and set(per_class) == {0}  # (6 x 1 + 5 x 2/3) / 11
    assert voc_ap50([a, b], [da, db], method="all-point")[0] == pytest.approx(5 / 6)


def test_voc_matching_counts_iou_exactly_half_as_mmdetection_does():
    g = gt([[0, 0, 10, 10]], [0])
    d = det([[0, 0, 10, 20]], [1.0], [0])  # IoU exactly 0.5
    assert box_iou(d["boxes"], g["boxes"])[0, 0] == 0.5
    # mmdetection's eval_map: ious_max >= iou_thr is a match (robustlab used > before).
    assert voc_ap50([g], [d])[0] == pytest.approx(1.0)
    assert ap_per_class([g], [d], iou_threshold=0.5, rule="voc")[0] == pytest.approx(1.0)
    assert ap_per_class([g], [d], iou_threshold=0.5, rule="best-unmatched")[0] == pytest.approx(1.0)
    # just below the threshold is a miss for both rules
    below = det([[0, 0, 10, 20.001]], [1.0], [0])
    assert box_iou(below["boxes"], g["boxes"])[0, 0] < 0.5
    assert voc_ap50([g], [below])[0] == 0.0
    assert ap_per_class([g], [below], iou_threshold=0.5, rule="best-unmatched")[0] == 0.0
    # detection pm-k at its default fixed IoU 0.5 uses the same boundary
    assert per_image_ap(g, d) == pytest.approx(1.0) and per_image_ap(g, below) == 0.0


def test_classes_without_ground_truth_are_not_scored_and_missing_detections_score_zero():
    g = gt([[0, 0, 10, 10]], [1])
    d = det([[0, 0, 10, 10], [50, 50, 60, 60]], [.9, .8], [1, 7])
    assert ap_per_class([g], [d]) == {1: pytest.approx(1.0)}
    assert ap_per_class([g], [NO_DETECTIONS]) == {1: 0.0}


# --- VID thresholds --------------------------------------------------------------------------


def test_vid_iou_threshold_values():
    assert vid_iou_threshold(10, 10) == pytest.approx(100 / 400)
    assert vid_iou_threshold(20, 40) == 0.5  # 800 / 1500 > .5
    assert vid_iou_threshold(1000, 1000) == 0.5
    assert vid_iou_threshold(0, 50) == 0.0
    np.testing.assert_allclose(vid_iou_threshold([10, 30], [10, 10]), [0.25, 300 / 800])
    with pytest.raises(InputError):
        vid_iou_threshold(-1, 5)


@given(st.floats(0, 5000), st.floats(0, 5000))
def test_vid_threshold_property(w, h):
    t = float(vid_iou_threshold(w, h))
    assert 0 <= t <= 0.5
    assert t == pytest.approx(min(0.5, w * h / ((w + 10) * (h + 10))))


def test_vid_threshold_lets_small_objects_match():
    g = gt([[0, 0, 10, 10]], [0])
    d = det([[2, 2, 12, 12]], [1.0], [0])  # IoU 64 / 136 = 0.47
    assert ap_per_class([g], [d], iou_threshold=0.5)[0] == 0.0
    assert ap_per_class([g], [d], iou_threshold="vid")[0] == pytest.approx(1.0)
    # the papers' fixed IoU 0.5 is per_image_ap's default; VID thresholds are the option
    assert per_image_ap(g, d) == 0.0
    assert per_image_ap(g, d, iou_threshold="vid") == pytest.approx(1.0)


def test_detection_pmk_defaults_to_a_fixed_iou_of_half_and_offers_vid_thresholds():
    # a small object (10 x 10 px: VID threshold 0.25) found in the anchor, found loosely (IoU 0.47)
    # in the neighbour: at IoU 0.5 the neighbour is the worst frame, with VID thresholds it is not
    g = gt([[0, 0, 10, 10]], [0])
    ground_truth = {"A": g, "N": g}
    detections = {"A": det([[0, 0, 10, 10]], [1.0], [0]), "N": det([[2, 2, 12, 12]], [1.0], [0])}
    fixed = detection_pmk(ground_truth, detections, {"A": ["N"]})
    assert fixed.worst_frame == {"A": "N"} and fixed.pmk_map == 0.0 and fixed.anchor_map == 1.0
    vid = detection_pmk(ground_truth, detections, {"A": ["N"]}, iou_threshold="vid")
    assert vid.worst_frame == {"A": "A"} and vid.pmk_map == 1.0
    assert localization_pmk(ground_truth, detections, {"A": ["N"]}).pmk_map == 0.0
    assert localization_pmk(ground_truth, detections, {"A": ["N"]}, iou_threshold="vid").pmk_map == 1.0


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.0001, 2, float("nan"), "0", "half", True, None])
def test_iou_thresholds_outside_zero_one_are_refused(bad):
    g = gt([[0, 0, 10, 10]], [0])
    d = det([[0, 0, 10, 10]], [1.0], [0])
    with pytest.raises(InputError, match="iou_threshold"):
        check_iou_threshold(bad)
    with pytest.raises(InputError, match="iou_threshold"):
        detection_pmk({"A": g}, {"A": d}, {"A": []}, iou_threshold=bad)
    with pytest.raises(InputError, match="iou_threshold"):
        per_image_ap(g, d, iou_threshold=bad)


def test_iou_threshold_accepts_one_vid_and_numeric_text():
    assert check_iou_threshold(1) == 1.0 and check_iou_threshold("0.5") == 0.5
    assert check_iou_threshold("VID") == "vid" and check_iou_threshold(np.float32(0.7)) == pytest.approx(0.7)


# --- detection pm-k by hand ------------------------------------------------------------------


def pmk_world():
    box0, box1 = [0, 0, 40, 40], [50, 50, 90, 90]
    ground_truth = {
        "A": gt([box0], [0]),
        "N1": gt([box0, box1], [0, 1]),
        "N2": gt([box0], [0]),
        "B": gt([box1], [1]),
        "M1": gt([box1], [1]),
    }
    detections = {
        "A": det([box0], [.9], [0]),                              # AP 1
        "N1": det([box0], [.8], [0]),                             # class 0: 1, class 1: 0 -> .5
        "N2": det([[200, 200, 240, 240], box0], [.95, .5], [0, 0]),  # fp then tp -> .5
        "B": det([box1], [.7], [1]),                              # AP 1
        # M1 has no detections entry: it counts as no detections (AP 0, it has ground truth)
    }
    pmsets = {"A": ["N1", "N2"], "B": []}
    return ground_truth, detections, pmsets


def test_detection_pmk_hand_computed():
    ground_truth, detections, pmsets = pmk_world()
    res = detection_pmk(ground_truth, detections, pmsets)
    assert res.frame_ap == {"A": 1.0, "N1": 0.5, "N2": 0.5, "B": 1.0}
    assert res.worst_frame == {"A": "N1", "B": "B"}  # tie N1/N2 at .5 keeps the first listed
    assert res.anchor_map == pytest.approx(1.0)
    # frames N1, B: class 0 AP 1; class 1: two positives, one found at precision 1 -> .5
    assert res.pmk_per_class == {0: pytest.approx(1.0), 1: pytest.approx(0.5)}
    assert res.pmk_map == pytest.approx(0.75)
    assert res.n_anchors == 2


def test_localization_pmk_hand_computed():
    ground_truth, detections, pmsets = pmk_world()
    res = localization_pmk(ground_truth, detections, pmsets)
    assert res.class_agnostic and res.worst_frame["A"] == "N1"
    # class-agnostic over N1 and B: 3 objects, 2 found, no false positives -> AP 2/3
    assert res.pmk_map == pytest.approx(2 / 3)
    assert res.anchor_map == pytest.approx(1.0)


def test_detection_pmk_missing_detections_count_as_none_and_bad_keys_fail():
    ground_truth, detections, _ = pmk_world()
    res = detection_pmk(ground_truth, detections, {"B": ["M1"]})
    assert res.worst_frame == {"B": "M1"} and res.pmk_map == 0.0
    with pytest.raises(InputError, match="no ground truth"):
        detection_pmk(ground_truth, detections, {"A": ["nope"]})
    with pytest.raises(InputError, match="empty"):
        detection_pmk(ground_truth, detections, {})


def test_per_image_ap_without_ground_truth_is_nan():
    assert math.isnan(per_image_ap(gt(np.zeros((0, 4)), []), det([[0, 0, 5, 5]], [.5], [0])))


# --- detector output handling ----------------------------------------------------------------


def test_nan_scores_and_bad_boxes_are_clear_errors():
    g = gt([[0, 0, 10, 10]], [0])
    with pytest.raises(InputError, match="score 1 is nan"):
        voc_ap50([g], [det([[0, 0, 10, 10], [1, 1, 5, 5]], [.5, np.nan], [0, 0])])
    with pytest.raises(InputError, match="not finite"):
        voc_ap50([g], [det([[0, 0, np.nan, 10]], [.5], [0])])
    with pytest.raises(InputError, match="x2 < x1"):
        voc_ap50([g], [det([[10, 0, 0, 10]], [.5], [0])])
    with pytest.raises(InputError, match="labels has 2 entries"):
        voc_ap50([g], [{"boxes": np.zeros((1, 4)), "scores": [.5], "labels": [0, 1]}])
    with pytest.raises(InputError, match="one detection entry"):
        voc_ap50([g, g], [NO_DETECTIONS])


def test_sanitize_clips_outside_boxes_and_rejects_unknown_labels():
    out = sanitize_detections(det([[-5, -5, 20, 20], [90, 10, 130, 50]], [.9, .8], [1, 2]),
                              width=100, height=60)
    np.testing.assert_array_equal(out["boxes"], [[0, 0, 20, 20], [90, 10, 100, 50]])
    empty = sanitize_detections(NO_DETECTIONS, width=100, height=60)
    assert empty["boxes"].shape == (0, 4)
    with pytest.raises(InputError, match=r"category ids \[2\]"):
        sanitize_detections(det([[0, 0, 1, 1], [0, 0, 1, 1]], [.9, .8], [1, 2]), width=10, height=10,
                            known_labels=[0, 1])


# --- brute force cross-check -----------------------------------------------------------------


def brute_force_voc_ap(images, n_classes):
    """Independent VOC AP: per class, loop detections by score, AP = sum over hits of max later precision / npos."""
    out = {}
    for c in range(n_classes):
        npos = sum(int(np.sum((g["labels"] == c) & ~g["difficult"])) for g, _ in images)
        if npos == 0:
            continue
        entries = [(s, i, b) for i, (_, d) in enumerate(images)
                   for s, b, lab in zip(d["scores"], d["boxes"], d["labels"]) if lab == c]
        entries.sort(key=lambda e: -e[0])
        taken = [set() for _ in images]
        flags = []
        for _, i, box in entries:
            g = images[i][0]
            idx = [j for j in range(len(g["boxes"])) if g["labels"][j] == c]
            if not idx:
                flags.append(False)
                continue
            ious = [box_iou(box[None], g["boxes"][j][None])[0, 0] for j in idx]
            best = idx[int(np.argmax(ious))]
            if max(ious) >= 0.5:
                if g["difficult"][best]:
                    continue
                flags.append(best not in taken[i])
                taken[i].add(best)
            else:
                flags.append(False)
        hits = np.cumsum(flags)
        prec = [hits[k] / (k + 1) for k in range(len(flags))]
        out[c] = sum(max(prec[k:]) for k in range(len(flags)) if flags[k]) / npos
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_voc_all_point_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    images = []
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(0, 5))
        xy = rng.uniform(0, 50, (n, 2))
        boxes = np.c_[xy, xy + rng.uniform(5, 30, (n, 2))]
        g = {"boxes": boxes, "labels": rng.integers(0, 2, n), "difficult": rng.random(n) < 0.2}
        m = int(rng.integers(0, 7))
        src = boxes[rng.integers(0, n, m)] if n else rng.uniform(0, 50, (m, 4))
        noisy = src + rng.normal(0, 4, (m, 4))
        d = {"boxes": np.c_[np.minimum(noisy[:, :2], noisy[:, 2:]), np.maximum(noisy[:, :2], noisy[:, 2:])],
             "scores": rng.permutation(m) / max(m, 1) + rng.uniform(0, 1e-3, m), "labels": rng.integers(0, 2, m)}
        images.append((g, d))
    ours = ap_per_class([g for g, _ in images], [d for _, d in images], method="all-point")
    expected = brute_force_voc_ap(images, 2)
    assert set(ours) == set(expected)
    for c in expected:
        assert ours[c] == pytest.approx(expected[c], abs=1e-12)
