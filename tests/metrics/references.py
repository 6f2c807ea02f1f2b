"""Reference computations of robustlab's metrics, written plainly from their definitions
(/work/shared/SPEC.md section 3, the papers it cites, and each metric's documented rules), with
loops where robustlab vectorises, and without importing robustlab. The published numbers they need
(AlexNet's errors, flip probabilities and top-5 distances; the C-bar paper's baselines) are typed
in here from the papers, so they also check robustlab's tables.

The metric tester (``metric_tester.py``) compares every public metric with these.
"""

from __future__ import annotations

import math
import re

import numpy as np
from scipy import stats


class Undefined(Exception):
    """The metric is undefined on these inputs: robustlab must refuse them (InputError)."""


# ---------------------------------------------------------------------------------------------
# published numbers (SPEC.md section 3; Mintun et al. 2021, Table 2)

ALEXNET_C = {
    "gaussian_noise": .886428, "shot_noise": .894468, "impulse_noise": .922640, "defocus_blur": .819880,
    "glass_blur": .826268, "motion_blur": .785948, "zoom_blur": .798360, "snow": .866816, "frost": .826572,
    "fog": .819324, "brightness": .564592, "contrast": .853204, "elastic_transform": .646056, "pixelate": .717840,
    "jpeg_compression": .606500, "speckle_noise": .845388, "gaussian_blur": .787108, "spatter": .717512,
    "saturate": .658248,
}
ALEXNET_CLEAN = 0.435
C_BENCHMARK = list(ALEXNET_C)[:15]
C_HOLDOUT = list(ALEXNET_C)[15:]
C_SUBSETS = {"benchmark": C_BENCHMARK, "common": C_BENCHMARK, "holdout": C_HOLDOUT, "validation": C_HOLDOUT,
             "all": list(ALEXNET_C)}

_P = [("gaussian_noise", 23.65, 4.77), ("shot_noise", 30.06, 5.76), ("motion_blur", 9.30, 1.93),
      ("zoom_blur", 5.94, 1.34), ("snow", 11.93, 2.42), ("brightness", 4.89, 1.19), ("translate", 11.01, 2.63),
      ("rotate", 13.10, 2.95), ("tilt", 7.05, 1.75), ("scale", 23.53, 4.48), ("speckle_noise", 18.65, 3.89),
      ("gaussian_blur", 2.78, 0.70), ("spatter", 5.05, 1.26), ("shear", 10.66, 2.48)]
ALEXNET_FP = {name: fp / 100 for name, fp, _ in _P}
ALEXNET_T5D = {name: t5d for name, _, t5d in _P}
P_TEST = [name for name, _, _ in _P][:10]
P_VALIDATION = [name for name, _, _ in _P][10:]
P_SUBSETS = {"test": P_TEST, "benchmark": P_TEST, "validation": P_VALIDATION, "holdout": P_VALIDATION,
             "all": P_TEST + P_VALIDATION}

CBAR_BASELINE = {  # the plainly trained model of each set, mean error % per corruption, Table 2 order
    "imagenet-c-bar": {"blue_noise_sample": 68.6, "plasma_noise": 71.7, "checkerboard_cutout": 49.4,
                       "cocentric_sine_waves": 84.7, "single_frequency_greyscale": 79.0, "brownish_noise": 37.5,
                       "perlin_noise": 34.3, "sparkles": 32.4, "inverse_sparkles": 76.7, "caustic_refraction": 42.8},
    "cifar10-c-bar": {"blue_noise_sample": 42.9, "brownish_noise": 27.2, "checkerboard_cutout": 23.3,
                      "circular_motion_blur": 11.8, "inverse_sparkles": 43.3, "lines": 26.2, "pinch_and_twirl": 11.3,
                      "ripple": 21.6, "sparkles": 21.0, "transverse_chromatic_abberation": 42.9},
}

Z95 = float(stats.norm.ppf(0.975))


def ratio(numerator, denominator, margin=0.0):
    """A ratio to a baseline: defined when the denominator is above 0 and above its margin."""
    return numerator / denominator if denominator > 0 and denominator > margin else None


def defined_mean(values):
    """(mean of the defined values or None, names used, names left out) of ``{name: value or None}``."""
    used = [k for k, v in values.items() if v is not None]
    return (sum(values[k] for k in used) / len(used) if used else None, used,
            [k for k, v in values.items() if v is None])


# ---------------------------------------------------------------------------------------------
# adversarial robustness over an epsilon interval (Kunhardt, Deza & Poggio)


def trapezoid(x, y):
    return sum((x[i + 1] - x[i]) * (y[i] + y[i + 1]) / 2 for i in range(len(x) - 1))


def robustness_auc(eps, acc, eps0=None, eps1=None):
    i0 = 0 if eps0 is None else list(eps).index(eps0)
    i1 = len(eps) - 1 if eps1 is None else list(eps).index(eps1)
    if acc[i0] == 0:
        raise Undefined
    return trapezoid(eps[i0:i1 + 1], acc[i0:i1 + 1]) / (acc[i0] * (eps[i1] - eps[i0]))


# ---------------------------------------------------------------------------------------------
# common corruptions


def severity_sum(value):
    """sum_s E[c, s] of five errors, or five times their given mean."""
    return sum(value) if isinstance(value, (list, tuple)) else 5 * value


def corruption_error(errors, baseline, c):
    base = baseline[c]
    return severity_sum(errors[c]) / severity_sum(base)


def relative_corruption_error(errors, clean, baseline, baseline_clean, c):
    """relative CE_c; None when the baseline's rise is not above 0 or the model's errors do not move
    (its five errors and its clean error all equal)."""
    e = errors[c]
    if isinstance(e, (list, tuple)) and len(set([*e, clean])) == 1:
        return None
    rise = severity_sum(e) - 5 * clean
    base_rise = severity_sum(baseline[c]) - 5 * baseline_clean
    return ratio(rise, base_rise)


def cbar_baseline(set_name):
    return {c: v / 100 for c, v in CBAR_BASELINE[set_name].items()}


# ---------------------------------------------------------------------------------------------
# perturbation stability (ImageNet-P)


def compared_pairs(n, noise, stride):
    return [(0, j) for j in range(1, n)] if noise else [(j - stride, j) for j in range(stride, n)]


def sequence_flips(predictions, noise, stride):
    return [sum(seq[a] != seq[b] for a, b in compared_pairs(len(seq), noise, stride)) for seq in predictions]


def top5_distance_paper(sigma):
    """d(sigma) = sum_{i=1..5} sum_{j=min(i,sigma(i))+1..max(i,sigma(i))} [1 <= j-1 <= 5] (Appendix C)."""
    total = 0
    for i in range(1, 6):
        lo, hi = min(i, sigma[i - 1]), max(i, sigma[i - 1])
        total += sum(1 for j in range(lo + 1, hi + 1) if 1 <= j - 1 <= 5)
    return total


def pair_top5_distance(earlier, later):
    """The reference code's sum_{r=1..5} |(r-1) - min(sigma(r)-1, 5)|, sigma(r) the later rank of the
    class ranked r earlier (a class that left the later top 5 counts as rank 6)."""
    top = list(later[:5])
    return sum(abs(r - (top.index(earlier[r]) if earlier[r] in top else 5)) for r in range(5))


def zipf_pair(earlier, later):
    c = len(earlier)
    new_rank = {cls: r + 1 for r, cls in enumerate(later)}
    return sum(abs(1 / r - 1 / new_rank[earlier[r - 1]]) / r for r in range(1, c + 1))


# ---------------------------------------------------------------------------------------------
# pm-k (Shankar et al. 2021; Gu et al. 2019)

_DIGITS = re.compile(r"\d+")


def frame_of(key):
    """(video folder, frame number: the last run of digits of the file name)."""
    video, _, name = key.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return video, int(_DIGITS.findall(stem)[-1])


def offset(anchor, neighbour):
    return frame_of(neighbour)[1] - frame_of(anchor)[1]


def correct(predictions, labels, frame, judge=None):
    wanted = labels[judge or frame]
    return predictions[frame] in (wanted if isinstance(wanted, (list, tuple)) else [wanted])


def pmk(predictions, pmsets, labels, k=None, label_mode="frame"):
    """Per anchor: (anchor correct, every kept neighbour correct too, breaking frame), and the
    neighbours kept."""
    out, kept = {}, 0
    for anchor, neighbours in pmsets.items():
        a_ok = correct(predictions, labels, anchor)
        judge = anchor if label_mode == "anchor" else None
        near = [n for n in neighbours if k is None or abs(offset(anchor, n)) <= k]
        kept += len(near)
        wrong = [n for n in near if not correct(predictions, labels, n, judge)]
        nearest = min(wrong, key=lambda n: (abs(offset(anchor, n)), neighbours.index(n))) if wrong else None
        out[anchor] = (a_ok, a_ok and not wrong, anchor if not a_ok else nearest)
    return out, kept


# ---------------------------------------------------------------------------------------------
# detection


def iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(iw, 0) * max(ih, 0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def vid_threshold(w, h):
    return min(0.5, w * h / ((w + 10) * (h + 10)))


def match(dets, gts, rule):
    """Greedy matching of one image and class. ``dets``: [(box, score)], ``gts``: [(box, ignored,
    threshold)]. Returns per detection "tp", "fp" or None (matched an ignored object: not counted).
    Detections go by descending score; "voc" takes the object of highest IoU (a hit if above its
    threshold and free, a duplicate if taken), "best-unmatched" the free object of highest IoU among
    those above their thresholds."""
    outcome = [None] * len(dets)
    taken = [False] * len(gts)
    for d in sorted(range(len(dets)), key=lambda i: -dets[i][1]):
        ious = [iou(dets[d][0], g[0]) for g in gts]
        if rule == "voc":
            if not gts:
                outcome[d] = "fp"
                continue
            j = max(range(len(gts)), key=lambda i: (ious[i], -i))
            if ious[j] < gts[j][2]:
                outcome[d] = "fp"
            elif not gts[j][1]:
                outcome[d] = "fp" if taken[j] else "tp"
                taken[j] = True
        else:
            free = [i for i in range(len(gts)) if ious[i] >= gts[i][2] and not taken[i]]
            if not free:
                outcome[d] = "fp"
                continue
            j = max(free, key=lambda i: (ious[i], -i))
            if not gts[j][1]:
                outcome[d] = "tp"
                taken[j] = True
    return outcome


def average_precision(recall, precision, method):
    if method == "11-point":  # VOC07's devkit: thresholds np.arange(0, 1.1, 0.1), i.e. i * 0.1 in floats
        return sum(max([p for r, p in zip(recall, precision) if r >= t], default=0.0)
                   for t in [i * 0.1 for i in range(11)]) / 11
    area, previous = 0.0, 0.0
    for i, r in enumerate(recall):
        if r > previous:
            area += (r - previous) * max(precision[i:])
            previous = r
    return area


def image_outcomes(gt, det, threshold, rule, agnostic):
    """One image: ({label: non-ignored objects}, [(label, score, is_tp)] of the counted detections)."""
    g_labels = [0] * len(gt["labels"]) if agnostic else list(gt["labels"])
    d_labels = [0] * len(det["labels"]) if agnostic else list(det["labels"])
    ignore = gt.get("ignore", [False] * len(g_labels))
    positives = {}
    for label, ign in zip(g_labels, ignore):
        positives[label] = positives.get(label, 0) + (not ign)
    counted = []
    for label in sorted(set(d_labels)):
        di = [i for i, lab in enumerate(d_labels) if lab == label]
        gi = [i for i, lab in enumerate(g_labels) if lab == label]
        gts = []
        for i in gi:
            box = gt["boxes"][i]
            t = vid_threshold(box[2] - box[0], box[3] - box[1]) if threshold == "vid" else threshold
            gts.append((box, ignore[i], t))
        for i, result in zip(di, match([(det["boxes"][i], det["scores"][i]) for i in di], gts, rule)):
            if result is not None:
                counted.append((label, det["scores"][i], result == "tp"))
    return positives, counted


def ap_per_class(gts, dets, threshold=0.5, method="all-point", rule=None, agnostic=False):
    rule = rule or ("best-unmatched" if threshold == "vid" else "voc")
    positives, counted = {}, []
    for gt, det in zip(gts, dets):
        pos, cnt = image_outcomes(gt, det, threshold, rule, agnostic)
        for label, n in pos.items():
            positives[label] = positives.get(label, 0) + n
        counted += cnt
    out = {}
    for label in sorted(positives):
        if positives[label] == 0:
            continue
        hits = [tp for lab, _, tp in sorted((c for c in counted if c[0] == label), key=lambda c: -c[1])]
        tp = np.cumsum(hits) if hits else np.zeros(0)
        fp = np.cumsum([not h for h in hits]) if hits else np.zeros(0)
        out[label] = average_precision(list(tp / positives[label]), list(tp / np.maximum(tp + fp, 1)), method) \
            if hits else 0.0
    return out


def mean_or_nan(values):
    return float(np.mean(list(values))) if values else math.nan
