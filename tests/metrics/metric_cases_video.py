"""The metric tester's cases for the metrics of videos and detectors: pm-k and its relatives
(Shankar et al. 2021, Gu et al. 2019), detection AP, VOC AP50, detection pm-k, COCO bbox (against
pycocotools, an independent implementation), and detection under corruption (mPC, rPC, RMSE). Each
pairs a hypothesis strategy of calls with a reference from :mod:`.references`.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math

import numpy as np
from hypothesis import strategies as st

import robustlab.metrics as M

from . import references as R
from .metric_tester import Call, MetricCase

# ---------------------------------------------------------------------------------------------
# pm-k: frames of a few videos, anchors with neighbours in their video


@st.composite
def pm_world(draw, videos=3, neighbours=5):
    """``(pmsets, predictions, labels)``: keys ``vid<v>/<frame>.jpg``, neighbours within 6 frames."""
    pmsets = {}
    for v in range(draw(st.integers(1, videos))):
        for anchor in draw(st.sets(st.integers(10, 40), min_size=1, max_size=2)):
            near = draw(st.lists(st.sampled_from([-6, -4, -3, -2, -1, 1, 2, 3, 5, 6]), unique=True, max_size=neighbours))
            pmsets[f"vid{v}/{anchor:06d}.jpg"] = [f"vid{v}/{anchor + d:06d}.jpg" for d in near]
    frames = sorted({k for a, ns in pmsets.items() for k in (a, *ns)})
    predictions = {k: draw(st.integers(0, 3)) for k in frames}
    labels = {k: draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True)))
              for k in frames}
    return pmsets, predictions, labels


label_modes = st.sampled_from(["frame", "anchor"])


def pmk_calls(k=True):
    return st.builds(lambda w, kk, mode: Call((w[1], w[0], w[2]), {"k": kk, "label_mode": mode} if k else
                                              {"label_mode": mode}),
                     pm_world(), st.one_of(st.none(), st.integers(0, 7)), label_modes)


def ref_pmk(predictions, pmsets, labels, k=None, label_mode="frame"):
    per, kept = R.pmk(predictions, pmsets, labels, k, label_mode)
    return (len(per), sum(v[0] for v in per.values()), sum(v[1] for v in per.values()), kept,
            {a: v[0] for a, v in per.items()}, {a: v[1] for a, v in per.items()}, {a: v[2] for a, v in per.items()})


def pmk_view(r):
    return (r.n_anchors, r.n_anchor_correct, r.n_pmk_correct, r.n_neighbours, dict(r.anchor_correct),
            dict(r.pmk_correct), dict(r.breaking_frame))


def ref_curve(predictions, pmsets, labels, ks=None, label_mode="frame"):
    if ks is None:
        ks = list(range(max([abs(R.offset(a, n)) for a, ns in pmsets.items() for n in ns], default=0) + 1))
    curves = [R.pmk(predictions, pmsets, labels, k, label_mode)[0] for k in ks]
    n = len(pmsets)
    return list(ks), sum(v[0] for v in curves[0].values()) / n if ks else None, \
        [sum(v[1] for v in c.values()) / n for c in curves]


def ref_static_frames(by_model, pmsets, labels, k=None, label_mode="frame"):
    out = {}
    for anchor, neighbours in pmsets.items():
        judge = anchor if label_mode == "anchor" else None
        near = [n for n in neighbours if k is None or abs(R.offset(anchor, n)) <= k]
        wrong = {n: sum(not R.correct(p, labels, n, judge) for p in by_model.values()) for n in near}
        out[anchor] = min(near, key=lambda n: (-wrong[n], abs(R.offset(anchor, n)), neighbours.index(n))) \
            if near else anchor
    return out


@st.composite
def static_calls(draw):
    pmsets, predictions, labels = draw(pm_world())
    models = {f"m{i}": {k: draw(st.integers(0, 3)) for k in predictions} for i in range(draw(st.integers(1, 3)))}
    return Call((models, pmsets, labels), {"k": draw(st.one_of(st.none(), st.integers(0, 6))),
                                           "label_mode": draw(label_modes)})


@st.composite
def static_accuracy_calls(draw):
    pmsets, predictions, labels = draw(pm_world())
    frames = {a: draw(st.sampled_from([a, *ns])) for a, ns in pmsets.items()}
    return Call((predictions, frames, labels), {"label_mode": draw(label_modes)})


def ref_static_accuracy(predictions, frames, labels, label_mode="frame"):
    hits = sum(R.correct(predictions, labels, f, a if label_mode == "anchor" else None) for a, f in frames.items())
    return len(frames), hits, hits / len(frames)


def all_pairs(pmsets):
    return sorted({(a, n) for a, ns in pmsets.items() for n in ns} | {(n, a) for a, ns in pmsets.items() for n in ns})


@st.composite
def conditional_calls(draw):
    pmsets, predictions, labels = draw(pm_world())
    pairs = all_pairs(pmsets)
    if not pairs:
        pairs = [(a, a) for a in pmsets]
    return Call((predictions, labels, draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=6))))


def ref_conditional(predictions, labels, pairs):
    first = [p for p in pairs if R.correct(predictions, labels, p[0])]
    both = [p for p in first if R.correct(predictions, labels, p[1])]
    return len(pairs), len(first), len(both), len(both) / len(first) if first else math.nan


def ref_pairs_at_distance(frames, distance):
    parsed = [(R.frame_of(k), k) for k in frames]
    return sorted((k1, k2) for (v1, f1), k1 in parsed for (v2, f2), k2 in parsed if v1 == v2 and f2 - f1 == distance)


def ref_per_class(predictions, pmsets, labels, label_mode):
    per, _ = R.pmk(predictions, pmsets, labels, None, label_mode)
    classes = {}
    for anchor, (a_ok, p_ok, _) in per.items():
        own = labels[anchor] if isinstance(labels[anchor], list) else [labels[anchor]]
        for c in own:
            classes.setdefault(c, []).append((a_ok, p_ok))
    return {c: (len(v), np.mean([x[0] for x in v]), np.mean([x[1] for x in v])) for c, v in sorted(classes.items())}


def call_per_class(predictions, pmsets, labels, label_mode):
    out = M.per_class_accuracy(M.pmk_accuracy(predictions, pmsets, labels, label_mode=label_mode), labels)
    return {c: (v.n_anchors, v.accuracy_original, v.accuracy_pmk) for c, v in out.items()}


# ---------------------------------------------------------------------------------------------
# detection: a few objects per image, detections near them or anywhere, distinct scores


@st.composite
def box(draw, near=None):
    if near is not None and draw(st.booleans()):
        jitter = draw(st.lists(st.integers(-3, 3), min_size=4, max_size=4))
        x1, y1 = near[0] + jitter[0], near[1] + jitter[1]
        return [float(x1), float(y1), float(max(near[2] + jitter[2], x1 + 1)), float(max(near[3] + jitter[3], y1 + 1))]
    x1, y1, w, h = (draw(st.integers(0, 40)) for _ in range(4))
    return [float(x1), float(y1), float(x1 + 1 + w % 20), float(y1 + 1 + h % 20)]


@st.composite
def image(draw, scores):
    """``(gt, det)`` of one image; ``scores`` hands out distinct detection scores."""
    n = draw(st.integers(0, 4))
    gt = {"boxes": [draw(box()) for _ in range(n)], "labels": [draw(st.integers(1, 3)) for _ in range(n)],
          "ignore": [draw(st.booleans()) and draw(st.booleans()) for _ in range(n)]}
    m = draw(st.integers(0, 5))
    boxes = [draw(box(draw(st.sampled_from(gt["boxes"])) if n else None)) for _ in range(m)]
    det = {"boxes": boxes, "scores": [scores.pop() for _ in range(m)], "labels": [draw(st.integers(1, 3)) for _ in range(m)]}
    return gt, det


def as_arrays(item):
    return {k: (np.asarray(v, float).reshape(-1, 4) if k == "boxes" else np.asarray(v)) for k, v in item.items()}


@st.composite
def images(draw, n=None):
    scores = [i / 1000 for i in range(1, 1000)]
    draw(st.randoms(use_true_random=False)).shuffle(scores)
    pairs = [draw(image(scores)) for _ in range(n or draw(st.integers(1, 4)))]
    return [p[0] for p in pairs], [p[1] for p in pairs]


thresholds = st.sampled_from([0.5, 0.3, 0.75, "vid"])


@st.composite
def ap_calls(draw):
    gts, dets = draw(images())
    return Call(([as_arrays(g) for g in gts], [as_arrays(d) for d in dets]),
                {"iou_threshold": draw(thresholds), "method": draw(st.sampled_from(["all-point", "11-point"])),
                 "rule": draw(st.sampled_from([None, "voc", "best-unmatched"])), "class_agnostic": draw(st.booleans())})


def lists_of(items):
    return [{k: np.asarray(v).tolist() for k, v in item.items()} for item in items]


def ref_ap(gts, dets, iou_threshold=0.5, method="all-point", rule=None, class_agnostic=False):
    return R.ap_per_class(lists_of(gts), lists_of(dets), iou_threshold, method, rule, class_agnostic)


@st.composite
def match_calls(draw):
    (gt,), (det,) = draw(images(1))
    t = [draw(st.sampled_from([0.3, 0.5, 0.7])) for _ in gt["boxes"]]
    return Call((np.asarray(det["boxes"]).reshape(-1, 4), det["scores"], np.asarray(gt["boxes"]).reshape(-1, 4),
                 gt["ignore"], t), {"rule": draw(st.sampled_from(["voc", "best-unmatched"]))})


def ref_match(det_boxes, scores, gt_boxes, ignore, thresholds, rule):
    out = R.match(list(zip(det_boxes.tolist(), scores)), list(zip(gt_boxes.tolist(), ignore, thresholds)), rule)
    return [o == "tp" for o in out], [o == "fp" for o in out]


def ref_match_image(gt, det, iou_threshold=0.5, rule=None, class_agnostic=False):
    rule = rule or ("best-unmatched" if iou_threshold == "vid" else "voc")
    positives, counted = R.image_outcomes(*lists_of([gt, det]), iou_threshold, rule, class_agnostic)
    return sorted(counted), positives


def match_image_view(m):
    return sorted(zip(m.labels.tolist(), m.scores.tolist(), m.tp.tolist())), m.positives


def one_image(call):
    return Call((call.args[0][0], call.args[1][0]), {k: v for k, v in call.kwargs.items() if k != "method"})


def ref_voc_ap50(gts, dets, method):
    per_class = ref_ap(gts, dets, 0.5, method, "voc")
    if not per_class:
        raise R.Undefined
    return float(np.mean(list(per_class.values()))), per_class


@st.composite
def pmk_detection_calls(draw):
    pmsets, _, _ = draw(pm_world(videos=2, neighbours=3))
    frames = sorted({k for a, ns in pmsets.items() for k in (a, *ns)})
    gts, dets = draw(images(len(frames)))
    return Call(({k: as_arrays(g) for k, g in zip(frames, gts)}, {k: as_arrays(d) for k, d in zip(frames, dets)},
                 pmsets), {"iou_threshold": draw(thresholds), "method": draw(st.sampled_from(["all-point", "11-point"]))})


def ref_detection_pmk(gts, dets, pmsets, iou_threshold=0.5, method="all-point", agnostic=False):
    def frame_ap(key):
        per = ref_ap([gts[key]], [dets[key]], iou_threshold, method, None, agnostic)
        return R.mean_or_nan(per.values())

    worst = {}
    for anchor, neighbours in pmsets.items():
        chosen, lowest = anchor, frame_ap(anchor)
        for n in neighbours:
            value = frame_ap(n)
            if not math.isnan(value) and (math.isnan(lowest) or value < lowest):
                chosen, lowest = n, value
        worst[anchor] = chosen
    anchor_pc = ref_ap([gts[a] for a in pmsets], [dets[a] for a in pmsets], iou_threshold, method, None, agnostic)
    pmk_pc = ref_ap([gts[w] for w in worst.values()], [dets[w] for w in worst.values()], iou_threshold, method, None,
                    agnostic)
    if not anchor_pc or not pmk_pc:
        raise R.Undefined
    return R.mean_or_nan(anchor_pc.values()), R.mean_or_nan(pmk_pc.values()), anchor_pc, pmk_pc, worst


def detection_pmk_view(r):
    return r.anchor_map, r.pmk_map, r.anchor_per_class, r.pmk_per_class, r.worst_frame


@st.composite
def coco_calls(draw):
    gts, dets = draw(images())
    gt = {"images": [{"id": i + 1, "width": 64, "height": 64} for i in range(len(gts))], "categories":
          [{"id": c, "name": f"c{c}"} for c in (1, 2, 3)], "annotations": []}
    results = []
    for i, (g, d) in enumerate(zip(gts, dets)):
        for b, label, ignored in zip(g["boxes"], g["labels"], g["ignore"]):
            gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": i + 1, "category_id": label,
                                      "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]],
                                      "area": (b[2] - b[0]) * (b[3] - b[1]), "iscrowd": int(ignored)})
        results += [{"image_id": i + 1, "category_id": label, "score": s, "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]]}
                    for b, s, label in zip(d["boxes"], d["scores"], d["labels"])]
    return Call((gt, results))


def ref_coco(gt, results):
    """pycocotools' COCOeval (the reference implementation of the COCO numbers)."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        if results:
            coco_dt = coco_gt.loadRes(copy.deepcopy(results))
        else:
            coco_dt = COCO()
            coco_dt.dataset = {**copy.deepcopy(gt), "annotations": []}
            coco_dt.createIndex()
        evaluator = COCOeval(coco_gt, coco_dt, "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return dict(zip(["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"],
                    evaluator.stats.tolist()))


# ---------------------------------------------------------------------------------------------
# detection under corruption


@st.composite
def robustness_calls(draw):
    classes = draw(st.integers(1, 3))
    cell = st.lists(st.integers(0, 20), min_size=classes, max_size=classes).map(lambda v: [x / 20 for x in v])
    clean = draw(cell)
    results = {c: {0: {"AP": clean}, **{s: {"AP": draw(cell)} for s in range(1, 6)}} for c in R.ALEXNET_C}
    if classes == 1:
        results = {c: {s: {"AP": v["AP"][0]} for s, v in by.items()} for c, by in results.items()}
    return Call((results,), {"corruptions": draw(st.sampled_from(["benchmark", "holdout", "all", ["fog", "snow"]])),
                             "rpc": draw(st.sampled_from(["ratio-of-means", "mean-of-ratios"]))})


def ref_robustness(results, corruptions="benchmark", rpc="ratio-of-means"):
    names = R.C_SUBSETS[corruptions] if isinstance(corruptions, str) else corruptions
    clean = np.atleast_1d(np.asarray(results[names[0]][0]["AP"], float))
    cells = {(c, s): np.atleast_1d(np.asarray(results[c][s]["AP"], float)) for c in names for s in range(1, 6)}
    if rpc == "mean-of-ratios" and np.any(clean == 0):
        raise R.Undefined

    def relative(keys):
        per_class = np.mean([cells[k] for k in keys], axis=0)
        if rpc == "ratio-of-means":
            return per_class.mean() / clean.mean() if clean.mean() else math.nan
        return np.mean(per_class / clean)

    return {"AP": (clean.mean(), np.mean([v.mean() for v in cells.values()]), relative(list(cells)),
                   {c: np.mean([cells[c, s].mean() for s in range(1, 6)]) for c in names},
                   {s: np.mean([cells[c, s].mean() for c in names]) for s in range(1, 6)})}


def robustness_view(out):
    return {m: (p.P, p.mPC, p.rPC, p.per_corruption, p.per_severity) for m, p in out.items()}


@st.composite
def rmse_calls(draw):
    names = draw(st.lists(st.sampled_from(list(R.ALEXNET_C)), min_size=1, max_size=4, unique=True))
    sevs = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3, unique=True))
    rmse = {c: {s: draw(st.integers(0, 255)) / 2 for s in sevs} for c in names}
    rel = {c: {s: draw(st.integers(0, 100)) / 100 for s in sevs} for c in names}
    return Call((rmse, rel), {"by": draw(st.sampled_from(["corruption", "cell"]))})


def ref_rmse_vs_rpc(rmse, rel, by="corruption"):
    if by == "cell":
        rows = [(c, s, rmse[c][s], rel[c][s]) for c in rel for s in sorted(rel[c])]
    else:
        rows = [(c, None, np.mean([rmse[c][s] for s in rel[c]]), np.mean(list(rel[c].values()))) for c in rel]
    x, y = np.array([r[2] for r in rows], float), np.array([r[3] for r in rows], float)
    if len(rows) < 2 or x.max() == x.min():
        raise R.Undefined
    slope = np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2)
    r = np.sum((x - x.mean()) * (y - y.mean())) / math.sqrt(np.sum((x - x.mean()) ** 2) * np.sum((y - y.mean()) ** 2)) \
        if y.max() > y.min() else math.nan
    return [list(row) for row in rows], slope, y.mean() - slope * x.mean(), r


def rmse_view(a):
    return [[r["corruption"], r["severity"], r["rmse"], r["rpc"]] for r in a.rows], a.slope, a.intercept, a.pearson_r


@st.composite
def mmdet_calls(draw):
    coco = draw(st.booleans())
    number = st.sampled_from([0, 0.25, 0.5, 1, -1])
    cell = (st.fixed_dictionaries({"bbox": st.fixed_dictionaries({"AP": number, "AP50": number})})
            if coco else st.lists(st.fixed_dictionaries({"ap": number}), min_size=1, max_size=3))
    raw = {c: {draw(st.sampled_from([s, str(s)])): draw(cell) for s in draw(st.sets(st.integers(0, 5), min_size=1))}
           for c in draw(st.sets(st.sampled_from(list(R.ALEXNET_C)), min_size=1, max_size=3))}
    return Call((raw,))


def ref_mmdet(raw):
    out = {}
    for c, by in raw.items():
        cells = {}
        for s, cell in by.items():
            cells[int(s)] = ({"AP50": [x["ap"] for x in cell]} if isinstance(cell, list)
                             else {k: v for k, v in cell["bbox"].items()})
        out[c] = dict(sorted(cells.items()))
    return out


def pixels(shape):
    return st.lists(st.integers(0, 255), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))).map(
        lambda v: np.array(v, np.uint8).reshape(shape))


CASES: dict[str, MetricCase] = {
    # pm-k
    "pmk_accuracy": MetricCase(pmk_calls(), ref_pmk, pmk_view),
    "pmk_accuracy_curve": MetricCase(
        st.builds(lambda c, ks: Call(c.args, {**c.kwargs, **({"ks": ks} if ks is not None else {})}),
                  pmk_calls(k=False), st.one_of(st.none(), st.lists(st.integers(0, 7), min_size=1, max_size=4))),
        ref_curve, lambda c: (list(c.ks), c.accuracy_original, list(c.accuracy_pmk))),
    "static_frames": MetricCase(static_calls(), ref_static_frames),
    "static_accuracy": MetricCase(static_accuracy_calls(), ref_static_accuracy, lambda r: (r.n, r.n_correct, r.accuracy)),
    "conditional_accuracy": MetricCase(conditional_calls(), ref_conditional,
                                       lambda r: (r.n_pairs, r.n_first_correct, r.n_both_correct, r.value)),
    "frame_offsets": MetricCase(pm_world().map(lambda w: Call((w[0],))),
                                lambda pmsets: {a: {n: R.offset(a, n) for n in ns} for a, ns in pmsets.items()}),
    "pmset_pairs": MetricCase(st.builds(lambda w, d: Call((w[0], d)), pm_world(), st.integers(1, 6)),
                              lambda pmsets, d: [(a, n) for a, ns in pmsets.items() for n in ns
                                                 if abs(R.offset(a, n)) == d], lambda pairs: [tuple(p) for p in pairs]),
    "pairs_at_distance": MetricCase(
        st.builds(lambda w, d: Call((sorted({k for a, ns in w[0].items() for k in (a, *ns)}), d)), pm_world(),
                  st.integers(1, 6)), ref_pairs_at_distance, lambda pairs: [tuple(p) for p in pairs]),
    "parse_frame_key": MetricCase(
        st.builds(lambda v, f, pre, ext: Call((f"{v}/{pre}{f:0{len(str(f)) + 1}d}.{ext}",)),
                  st.sampled_from(["val/ILSVRC2015_val_00007011", "KxDh7a8_AmU_44666", "a/b"]),
                  st.integers(0, 99999), st.sampled_from(["", "frame-", "img_"]), st.sampled_from(["JPEG", "jpg", "png"])),
        R.frame_of, tuple),
    "per_class_accuracy": MetricCase(st.builds(lambda w, mode: Call((w[1], w[0], w[2], mode)), pm_world(), label_modes),
                                     ref_per_class, call=call_per_class),
    # detection
    "box_iou": MetricCase(st.builds(lambda a, b: Call((np.array(a).reshape(-1, 4), np.array(b).reshape(-1, 4))),
                                    st.lists(box(), max_size=4), st.lists(box(), max_size=4)),
                          lambda a, b: [[R.iou(x, y) for y in b.tolist()] for x in a.tolist()]),
    "clip_boxes": MetricCase(st.builds(lambda b, w, h: Call((np.array(b).reshape(-1, 4), w, h)), st.lists(box(), max_size=4),
                                       st.integers(0, 50), st.integers(0, 50)),
                             lambda b, w, h: [[min(max(v, 0), w if i % 2 == 0 else h) for i, v in enumerate(row)]
                                              for row in b.tolist()]),
    "vid_iou_threshold": MetricCase(st.builds(lambda w: Call((np.array(w[0]), np.array(w[1]))), st.integers(1, 5).flatmap(
        lambda n: st.tuples(*(st.lists(st.floats(0, 300), min_size=n, max_size=n) for _ in range(2))))),
        lambda w, h: [R.vid_threshold(a, b) for a, b in zip(w.tolist(), h.tolist())]),
    "average_precision": MetricCase(
        st.integers(1, 8).flatmap(lambda n: st.builds(lambda r, p, m: Call((sorted(r), p), {"method": m}),
                                                      st.lists(st.integers(0, 10).map(lambda v: v / 10), min_size=n, max_size=n),
                                                      st.lists(st.integers(0, 10).map(lambda v: v / 10), min_size=n, max_size=n),
                                                      st.sampled_from(["all-point", "11-point"]))),
        lambda r, p, method: R.average_precision(r, p, method)),
    "mean_ap": MetricCase(st.dictionaries(st.integers(0, 9), st.floats(0, 1), min_size=1).map(lambda d: Call((d,))),
                          lambda d: float(np.mean(list(d.values())))),
    "ground_truth_arrays": MetricCase(
        images(1).map(lambda g: Call(({"boxes": g[0][0]["boxes"], "labels": g[0][0]["labels"],
                                       "difficult": g[0][0]["ignore"]},))),
        lambda gt: (gt["boxes"], gt["labels"], gt["difficult"])),
    "detection_arrays": MetricCase(images(1).map(lambda g: Call((g[1][0],))),
                                   lambda det: (det["boxes"], det["scores"], det["labels"])),
    "sanitize_detections": MetricCase(
        st.builds(lambda g, w: Call((g[1][0],), {"width": w, "height": w}), images(1), st.integers(5, 45)),
        lambda det, width, height: {"boxes": [[min(max(v, 0), width) for v in b] for b in det["boxes"]],
                                    "scores": det["scores"], "labels": det["labels"]}),
    "match_detections": MetricCase(match_calls(), ref_match),
    "match_image": MetricCase(ap_calls().map(one_image), ref_match_image, match_image_view),
    "ap_per_class": MetricCase(ap_calls(), ref_ap),
    "ap_from_matches": MetricCase(
        ap_calls(), lambda g, d, method, **k: ref_ap(g, d, method=method, **k),
        call=lambda g, d, method, **k: M.ap_from_matches([M.match_image(a, b, **k) for a, b in zip(g, d)], method=method)),
    "voc_ap50": MetricCase(ap_calls().map(lambda c: Call(c.args, {"method": c.kwargs["method"]})), ref_voc_ap50),
    "per_image_ap": MetricCase(ap_calls().map(lambda c: Call((c.args[0][0], c.args[1][0]),
                                                               {k: c.kwargs[k] for k in ("iou_threshold", "method",
                                                                                         "class_agnostic")})),
                               lambda gt, det, iou_threshold, method, class_agnostic: R.mean_or_nan(
                                   ref_ap([gt], [det], iou_threshold, method, None, class_agnostic).values())),
    "detection_pmk": MetricCase(pmk_detection_calls(), ref_detection_pmk, detection_pmk_view, examples=15),
    "localization_pmk": MetricCase(pmk_detection_calls(), lambda *a, **k: ref_detection_pmk(*a, **k, agnostic=True),
                                   detection_pmk_view, examples=15),
    "coco_metrics": MetricCase(coco_calls(), ref_coco, rtol=1e-6, atol=1e-9, examples=12),
    # detection under corruption
    "performance_under_corruption": MetricCase(robustness_calls(), ref_robustness, robustness_view),
    "normalise_robustness_results": MetricCase(mmdet_calls(), ref_mmdet),
    "image_rmse": MetricCase(st.builds(lambda a, b: Call((a, b)), pixels((3, 2, 3)), pixels((3, 2, 3))),
                             lambda a, b: math.sqrt(np.mean((a.astype(float) - b.astype(float)) ** 2))),
    "rmse_vs_rpc": MetricCase(rmse_calls(), ref_rmse_vs_rpc, rmse_view, rtol=1e-7, atol=1e-10),
}
