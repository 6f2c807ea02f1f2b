"""The metrics of the perturbation-sequence benchmarks, from their stored per-frame top-k columns
(:mod:`robustlab.metrics.stability`): per folder and stride the flip probability and top-5
distance; against a baseline FR and the T5D ratio, and mFR / mT5D over the 10 test perturbations;
and per sequence its flips.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..engine.presentation import MetricRow
from ..engine.setting import setting_of
from ..errors import DataError
from ..metrics.ratios import mean_margin, mean_of_defined, normalised_term
from ..metrics.stability import (
    TEST_PERTURBATIONS,
    StabilityBaseline,
    flip_counts,
    flip_probability,
    frame_pairs,
    sequence_flip_probabilities,
    sequence_top5_distances,
    top5_distance,
)
from ..perturbations import get_perturbation
from ..perturbations.registry import stability_baseline
from .perturbation_config import FRAMES_COLUMN, parse_folder


def sequence_rankings(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Stored ``frame_top5`` of one unit as rankings (N, T, k) int64."""
    top = np.asarray(columns[FRAMES_COLUMN]).astype(np.int64)
    if len(top) == 0:
        return top.reshape(0, 0, 0)
    t = int(np.asarray(columns["n_frames"])[0])
    return top.reshape(len(top), t, top.shape[1] // t)


def setting_rankings(predictions: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    """``{setting: {"rankings": (N, T, k), "sample_id": (N,), "label": (N,)}}`` over the setting's units."""
    grouped: dict[str, list[Mapping[str, np.ndarray]]] = {}
    for unit, columns in predictions.items():
        if len(columns.get("label", ())):
            grouped.setdefault(setting_of(unit), []).append(columns)
    out = {}
    for setting, parts in grouped.items():
        ranks = [sequence_rankings(c) for c in parts]
        shapes = {r.shape[1:] for r in ranks}
        if len(shapes) > 1:
            raise DataError(f"sequences of {setting} have different frame counts {sorted(shapes)}; every sequence of "
                            "a perturbation must have the same length.")
        out[setting] = {"rankings": np.concatenate(ranks), "sample_id": np.concatenate([c["sample_id"] for c in parts]),
                        "label": np.concatenate([c["label"] for c in parts])}
    return out


def stability_baseline_from_run(predictions: Mapping[str, Mapping[str, np.ndarray]], run: str) -> StabilityBaseline:
    """Flip probability and top-5 distance (stride 1, difficulty 1) of the stored run ``run`` (its
    ``predictions``), as the baseline of FR and the T5D ratios (the role AlexNet plays in the paper).

    Each value carries its sampling margin (95 %, from the spread of its per-sequence values):
    a rate whose baseline value is not above its margin is undefined (e.g. a perturbation the
    baseline model never, or barely, flips on).
    """
    fp: dict[str, float] = {}
    t5: dict[str, float] = {}
    fp_margin: dict[str, float] = {}
    t5_margin: dict[str, float] = {}
    for setting, data in setting_rankings(predictions).items():
        perturbation, difficulty = parse_folder(setting) or (setting, 1)
        if difficulty != 1:
            continue
        noise = get_perturbation(perturbation).noise
        ranks = data["rankings"]
        fp[perturbation] = flip_probability(ranks[..., 0], noise=noise, stride=1)
        fp_margin[perturbation] = mean_margin(sequence_flip_probabilities(ranks[..., 0], noise=noise, stride=1))
        if ranks.shape[2] >= 5:
            t5[perturbation] = top5_distance(ranks, noise=noise, stride=1)
            t5_margin[perturbation] = mean_margin(sequence_top5_distances(ranks, noise=noise, stride=1))
    if not any(v > 0 for v in fp.values()):
        raise DataError(f"baseline run {run} never flips on any perturbation: it cannot normalise "
                        "flip rates; choose another baseline model.")
    return StabilityBaseline(f"run:{run}", fp, t5, source=f"stored run {run}",
                             flip_probability_margin=fp_margin, top5_distance_margin=t5_margin)


def difficulty_applies(noise: bool, folder_difficulty: int, stride: int) -> bool:
    """Whether a folder's sequences measure difficulty ``stride``.

    Temporal perturbations reach difficulty d through the stride (frame j against j - d); noise
    sequences ignore the stride (every frame against the clean one) and reach difficulty d only
    through their difficulty-d folder (``gaussian_noise_2`` for d = 2).
    """
    return folder_difficulty == stride if noise else True


def stability_metrics(predictions: Mapping[str, Mapping[str, np.ndarray]], *, strides: Sequence[int],
                      setting: str = "imagenet", baseline_name: str = "alexnet",
                      baseline: StabilityBaseline | None = None) -> list[MetricRow]:
    """FP, T5D per folder and stride; FR, T5D ratio, mFR, mT5D against the baseline.

    ``baseline``: normalise by it (e.g. :func:`stability_baseline_from_run`); by default the
    built-in ``baseline_name`` (AlexNet) in the ImageNet ``setting``, and none in the cifar setting.

    Difficulty d (``"stride-d"``) aggregates only the perturbations it applies to
    (:func:`difficulty_applies`): the temporal ones at stride d, and the noise ones from their
    difficulty-d folders. A stride-1 (difficulty-1) noise folder never enters a stride-2 mean,
    where its flip rate would repeat its stride-1 value; :func:`stability_notes` names the set
    each aggregate covers. FR rows (``flip_rate``) exist for the same (folder, stride) pairs.
    """
    rows: list[MetricRow] = []
    if baseline is None and setting == "imagenet":
        baseline = stability_baseline(baseline_name)
    fr_terms: dict[int, dict] = {d: {} for d in strides}
    t5_terms: dict[int, dict] = {d: {} for d in strides}
    denominators: set[str] = set()
    for folder, data in setting_rankings(predictions).items():
        perturbation, difficulty = parse_folder(folder) or (folder, 1)
        noise = get_perturbation(perturbation).noise
        ranks = data["rankings"]
        rows.append(("n_sequences", folder, float(len(ranks))))
        for d in strides:
            if not noise and d >= ranks.shape[1]:
                continue  # read-time checks make this impossible for stored runs; never divide by zero
            key = f"{folder}/stride-{d}"
            value = flip_probability(ranks[..., 0], noise=noise, stride=d)
            rows.append(("flip_probability", key, value))
            if ranks.shape[2] >= 5:
                dist = top5_distance(ranks, noise=noise, stride=d)
                rows.append(("top5_distance", key, dist))
            if baseline is not None and difficulty_applies(noise, difficulty, d) and perturbation in baseline.flip_probability:
                denominators.add(perturbation)
                term = normalised_term(perturbation, value, baseline.flip_probability[perturbation],
                                       baseline.margin("flip_probability", perturbation))
                fr_terms[d][perturbation] = term
                if term.defined:
                    rows.append(("flip_rate", key, term.value))
                if ranks.shape[2] >= 5 and perturbation in baseline.top5_distance:
                    term = normalised_term(perturbation, dist, baseline.top5_distance[perturbation],
                                           baseline.margin("top5_distance", perturbation))
                    t5_terms[d][perturbation] = term
                    if term.defined:
                        rows.append(("top5_distance_rate", key, term.value))
    if baseline is not None and (baseline.flip_probability_margin or baseline.top5_distance_margin):
        for p in sorted(denominators):  # the denominators and their margins: why a rate is n/a
            rows += [("fr_baseline", p, baseline.flip_probability[p]),
                     ("fr_baseline_margin", p, baseline.margin("flip_probability", p))]
            if p in baseline.top5_distance:
                rows += [("t5d_rate_baseline", p, baseline.top5_distance[p]),
                         ("t5d_rate_baseline_margin", p, baseline.margin("top5_distance", p))]
    for d in strides:
        for name, terms in (("mfr", fr_terms[d]), ("mt5d", t5_terms[d])):
            present = [p for p in TEST_PERTURBATIONS if p in terms]
            if not present:
                continue
            detail = mean_of_defined(terms[p] for p in present)
            suffix = "" if len(present) == len(TEST_PERTURBATIONS) else "_subset"
            for where in ([f"stride-{d}", ""] if d == 1 else [f"stride-{d}"]):
                rows.append((f"{name}{suffix}_terms", where, float(detail.n_used)))
                if detail.value is not None:
                    rows.append((f"{name}{suffix}", where, detail.value))
    return rows


def sequence_flips(predictions: Mapping[str, Mapping[str, np.ndarray]], *, stride: int = 1) -> list[dict[str, Any]]:
    """Flip count of every stored sequence, most flips first.

    Returns rows ``{"setting", "sample_id", "label", "flips", "pairs", "flip_probability"}``
    (``pairs``: frame pairs compared at ``stride``; noise sequences compare with frame 0).
    """
    out = []
    for setting, data in setting_rankings(predictions).items():
        perturbation, _ = parse_folder(setting) or (setting, 1)
        noise = get_perturbation(perturbation).noise
        preds = data["rankings"][..., 0]
        counts = flip_counts(preds, noise=noise, stride=stride)
        pairs = len(frame_pairs(preds.shape[1], noise=noise, stride=stride)[0])
        out.extend({"setting": setting, "sample_id": str(sid), "label": int(lab), "flips": int(c), "pairs": pairs,
                    "flip_probability": float(c) / pairs} for sid, lab, c in zip(data["sample_id"], data["label"], counts))
    out.sort(key=lambda r: (-r["flip_probability"], r["setting"], r["sample_id"]))
    return out
