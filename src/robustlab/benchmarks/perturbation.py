"""Benchmarks ``imagenet-p`` (released ImageNet-P videos / CIFAR-10-P arrays) and ``perturbed``
(any labelled image folder, sequences generated on the fly), with FP, FR, mFR, T5D and mT5D.

A sample is one perturbation *sequence*; a unit is a perturbation folder and a shard of its
sequences (``"rotate/shard-0003"``); the setting is the folder name as released
(``"rotate"``, ``"gaussian_noise_2"``). Stored columns per sequence:

- ``sample_id`` (str), ``label`` (int64; -1 when the layout has no classes);
- ``n_frames`` (int16): frames T of the sequence;
- ``frame_top5`` (int32, N x T*k): the top-k classes (k = 5, fewer only for models with
  fewer classes) of every frame, best first, frame-major (reshape to (N, T, k)).

Every metric is computed from those columns (:mod:`robustlab.metrics.stability`): per folder
and stride ``d`` (``"rotate/stride-1"``) the flip probability and top-5 distance; for the
difficulty-1 folders of the ImageNet setting also FR and the T5D ratio against the built-in
AlexNet values, and mFR / mT5D over the 10 test perturbations (``"stride-1"``; the headline
``("mfr", "")`` and ``("mt5d", "")`` are stride 1, as in the paper). Per-sequence flip counts,
to see which sequences flip most: :func:`sequence_flips` / :func:`most_flipping_sequences`.

How frames travel through the engine: :meth:`load` applies the model's resize/crop to every
frame (a no-op for 224 px frames and ImageNet models) and returns the (T, H, W, 3) stack as
one sample; a batch stacks them to (B, T, H, W, 3) and :meth:`predict` runs the model on its
B*T frames, in chunks. Batch sizes count sequences (31-41 frames each): use
``--batch-size 4``-``8`` for 224 px models.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.classification import ArraySamples, ImageFolderSamples, SampleView, read_image_folder, resolve_class_map
from ..data.limits import config_limit_order, limit_positions, limit_stats
from ..safeload import as_integer_labels, load_npy
from ..errors import DataError, InputError
from ..metrics.ratios import mean_margin, mean_of_defined, normalised_term
from ..metrics.stability import (
    TEST_PERTURBATIONS,
    flip_counts,
    flip_probability,
    frame_pairs,
    StabilityBaseline,
    get_stability_baseline,
    sequence_flip_probabilities,
    sequence_top5_distances,
    top5_distance,
)
from ..perturbations import frame_count, generate, get_perturbation, list_perturbations
from ..perturbations.registry import stability_baseline
from ..perturbations.dataset import recorded_setting, resolve_perturbations, sequence_seed
from ..perturbations.io import (
    VIDEO_EXTENSIONS,
    is_sequence_entry,
    perturbation_folder,
    read_cifar_p,
    read_sequence,
)
from ..engine.benchmark import Benchmark, HeadlineMetric, MetricRow, Unit, model_device, register_benchmark
from ..engine.records import Batch, Sample
from ..engine.records import sample_id
from ..engine.classification import classify_batch
from ..engine.options import (BASELINE_RUN, CLASS_MAP, LIMIT, LIMIT_ORDER, baseline_option, check_positive, check_seed,
                              class_map_config, limit_config, seed_option, shard_size_option)
from ..engine.schema import Option
from .corruption import PUBLISHED_ALEXNET, own_data_label, own_data_note

#: Stored column of per-frame top-k classes, (N, T*k) int32.
FRAMES_COLUMN = "frame_top5"
#: Frames per model call inside :meth:`predict` (bounds memory for long sequences).
FRAME_CHUNK = 256
#: Strides (difficulties) evaluated unless the ``strides`` option says otherwise.
DEFAULT_STRIDES = (1, 2)


# --- folder names and options ----------------------------------------------------------------


def parse_folder(name: str) -> tuple[str, int] | None:
    """``"rotate"`` -> ("rotate", 1); ``"gaussian_noise_2"`` -> ("gaussian_noise", 2); else None."""
    known = list_perturbations("all")
    if name in known:
        return name, 1
    match = re.fullmatch(r"(.+)_([23])", name)
    if match and match[1] in known and get_perturbation(match[1]).noise:
        return match[1], int(match[2])
    return None


def parse_strides(spec: Any) -> list[int]:
    """Strides (difficulties) from ``"1,2"``, ``2`` or ``[1, 2]``: sorted, unique, >= 1."""
    if spec is None:
        return list(DEFAULT_STRIDES)
    items = spec.split(",") if isinstance(spec, str) else ([spec] if isinstance(spec, (int, np.integer)) else spec)
    try:
        values = sorted({int(str(v).strip()) for v in items if str(v).strip()})
    except ValueError:
        raise InputError(f"strides must be positive integers such as '1,2'; got {spec!r}.") from None
    if not values or values[0] < 1:
        raise InputError(f"strides must be positive integers such as '1,2'; got {spec!r}.")
    return values



def _check_strides(perturbations: Iterable[str], setting: str, strides: list[int]) -> None:
    """InputError when a stride leaves no frame pair in a temporal perturbation's sequences."""
    for p in perturbations:
        if not get_perturbation(p).noise and max(strides) >= frame_count(p, setting):
            raise InputError(f"stride {max(strides)} is too long for {p} sequences of {frame_count(p, setting)} "
                             "frames; use smaller strides.")


#: Why the sequence benchmarks refuse the corruption benchmarks' options.
SEQUENCE_HINTS = {
    **dict.fromkeys(("corruptions", "severities"), "benchmark {name!r} has perturbations, not corruptions or "
                    "severities: select them with the option perturbations (e.g. -O perturbations=rotate,scale)."),
    "save_logits": "benchmark {name!r} stores per-frame top-5 classes; saving logits of every frame is not supported.",
}
PERTURBATIONS_OPTION = Option("perturbations", "str", help="Perturbation names or subsets, comma-separated (test, "
                       "validation, all, noise, temporal, rotate, ...).", flags=("-p",))
STRIDES_OPTION = Option("strides", "value", help="Strides (difficulties) of the temporal perturbations, e.g. 1,2 "
                 "(default 1,2).")


# --- sample sets: one sample = one sequence ----------------------------------------------------


@dataclass(frozen=True, eq=False)
class SequenceFolderSamples(ImageFolderSamples):
    """Sequences (videos, ``.npy`` files or PNG frame folders) listed relative to ``root``: the files
    of :class:`~robustlab.data.classification.ImageFolderSamples`, each read as a (T, H, W, 3) stack."""

    frames: int | None = None
    stride: int = 1

    def read(self, i: int) -> np.ndarray:
        return read_sequence(self.root / self.files[i], expected_frames=self.frames, stride=self.stride)


@functools.lru_cache(maxsize=32)
def open_cifar_p(path: str, frames: int | None, stride: int) -> np.ndarray:
    """A CIFAR-10-P array (N, T, H, W, 3), checked and memory-mapped, opened once per process."""
    return read_cifar_p(path, expected_frames=frames, stride=stride)


@dataclass(frozen=True, eq=False)
class PerturbedSamples(SampleView):
    """Images of ``base`` turned into perturbation sequences when read (as ``robustlab perturb`` would)."""

    perturbation: str = ""
    setting: str = ""
    difficulty: int = 1
    seed: int = 0

    def read(self, i: int) -> np.ndarray:
        rng = sequence_seed(self.seed, self.base.ids[i], self.perturbation, self.difficulty)
        return generate(self.base.read(i), self.perturbation, setting=self.setting, difficulty=self.difficulty,
                        rng=rng)


# --- listing the released layouts -----------------------------------------------------------------


def imagenet_p_layout(root: Path) -> tuple[str, dict[str, Path]]:
    """``("cifar", {folder: <root>/<folder>.npy})`` or ``("folders", {folder: <root>/<folder>})``.

    Only names of perturbations (with ``_2``/``_3`` for noise difficulties) are picked up.
    """
    if not root.is_dir():
        raise DataError(f"ImageNet-P folder {root} does not exist; it must hold <perturbation>/<class>/<name>.mp4 "
                        "(or CIFAR-10-P <perturbation>.npy arrays).")
    arrays = {p.stem: p for p in sorted(root.glob("*.npy")) if parse_folder(p.stem)}
    if arrays:
        return "cifar", arrays
    folders = {e.name: Path(e.path) for e in sorted(os.scandir(root), key=lambda e: e.name)
               if e.is_dir() and parse_folder(e.name)}
    if not folders:
        raise DataError(f"{root} is not in the ImageNet-P layout: no perturbation folders (rotate/, "
                        "gaussian_noise/, ...) or CIFAR-10-P arrays (rotate.npy, ...) found.")
    return "folders", folders


def list_sequences(folder: Path) -> tuple[list[str], list[str | None]]:
    """Sequences under a perturbation folder: relative ids and their class folder (None when flat)."""
    files: list[str] = []
    classes: list[str | None] = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue
        if is_sequence_entry(entry):
            files.append(entry.name)
            classes.append(None)
        elif entry.is_dir():
            for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
                if is_sequence_entry(sub):
                    files.append(f"{entry.name}/{sub.name}")
                    classes.append(entry.name)
    if not files:
        raise DataError(f"no sequences found in {folder} (looked for {', '.join(VIDEO_EXTENSIONS)}, .npy files and "
                        "PNG frame folders, directly or in class folders).")
    return files, classes


# --- metrics --------------------------------------------------------------------------------------


def _setting_of(unit: str) -> str:
    return unit.rsplit("/", 1)[0]


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
            grouped.setdefault(_setting_of(unit), []).append(columns)
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


def stability_baseline_from_run(config: Mapping[str, Any],
                                predictions: Mapping[str, Mapping[str, np.ndarray]]) -> StabilityBaseline:
    """Flip probability and top-5 distance (stride 1, difficulty 1) of another stored run, as the
    baseline of FR and the T5D ratios (the role AlexNet plays in the paper).

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
        raise DataError(f"baseline run {config['baseline_run']} never flips on any perturbation: it cannot normalise "
                        "flip rates; choose another baseline model.")
    return StabilityBaseline(f"run:{config['baseline_run']}", fp, t5, source=f"stored run {config['baseline_run']}",
                             flip_probability_margin=fp_margin, top5_distance_margin=t5_margin)


def difficulty_applies(noise: bool, folder_difficulty: int, stride: int) -> bool:
    """Whether a folder's sequences measure difficulty ``stride``.

    Temporal perturbations reach difficulty d through the stride (frame j against j - d); noise
    sequences ignore the stride (every frame against the clean one) and reach difficulty d only
    through their difficulty-d folder (``gaussian_noise_2`` for d = 2).
    """
    return folder_difficulty == stride if noise else True


def stability_metrics(config: Mapping[str, Any], predictions: Mapping[str, Mapping[str, np.ndarray]],
                      baseline: StabilityBaseline | None = None) -> list[MetricRow]:
    """FP, T5D per folder and stride; FR, T5D ratio, mFR, mT5D against the baseline.

    ``baseline``: normalise by it (e.g. :func:`stability_baseline_from_run`); by default the
    configured built-in baseline (AlexNet) in the ImageNet setting, and none in the cifar setting.

    Difficulty d (``"stride-d"``) aggregates only the perturbations it applies to
    (:func:`difficulty_applies`): the temporal ones at stride d, and the noise ones from their
    difficulty-d folders. A stride-1 (difficulty-1) noise folder never enters a stride-2 mean,
    where its flip rate would repeat its stride-1 value; :func:`stability_notes` names the set
    each aggregate covers. FR rows (``flip_rate``) exist for the same (folder, stride) pairs.
    """
    rows: list[MetricRow] = []
    if baseline is None and config.get("setting") == "imagenet":
        baseline = stability_baseline(config.get("baseline", "alexnet"))
    fr_terms: dict[int, dict] = {d: {} for d in config["strides"]}
    t5_terms: dict[int, dict] = {d: {} for d in config["strides"]}
    denominators: set[str] = set()
    for setting, data in setting_rankings(predictions).items():
        perturbation, difficulty = parse_folder(setting) or (setting, 1)
        noise = get_perturbation(perturbation).noise
        ranks = data["rankings"]
        rows.append(("n_sequences", setting, float(len(ranks))))
        for d in config["strides"]:
            if not noise and d >= ranks.shape[1]:
                continue  # read-time checks make this impossible for stored runs; never divide by zero
            key = f"{setting}/stride-{d}"
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
    for d in config["strides"]:
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


def sequence_flips(config: Mapping[str, Any], predictions: Mapping[str, Mapping[str, np.ndarray]], *,
                   stride: int = 1) -> list[dict[str, Any]]:
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


def most_flipping_sequences(run: str, *, store: object = None, stride: int = 1, perturbation: str | None = None,
                            top: int | None = 20) -> list[dict[str, Any]]:
    """The sequences of a stored ``imagenet-p``/``perturbed`` run that flip most (see :func:`sequence_flips`).

    ``perturbation`` keeps one folder (``"rotate"``, ``"gaussian_noise_2"``); ``top=None`` keeps all.
    """
    from ..engine.evaluation import opened_store

    with opened_store(store) as st:
        record = st.get_run(run)
        if record.benchmark not in (ImageNetP.name, Perturbed.name):
            raise InputError(f"run {record.id} is a {record.benchmark!r} run; per-sequence flips exist for "
                             "imagenet-p and perturbed runs.")
        predictions = st.read_predictions(record.id)
    if perturbation is not None:
        predictions = {u: c for u, c in predictions.items() if _setting_of(u) == perturbation}
        if not predictions:
            raise InputError(f"run {record.id} has no sequences of {perturbation!r}.")
    rows = sequence_flips(record.config, predictions, stride=stride)
    return rows if top is None else rows[:top]


def rate_reasons(metrics: Iterable[MetricRow]) -> dict[tuple[str, str], str]:
    """``{("fr" or "t5d_rate", perturbation): why the rate is n/a}`` from a run's stored rows: the
    baseline's value is 0 or within its sampling margin (only baselines measured in a run have one)."""
    table = {(m, s): v for m, s, v in metrics}
    out = {}
    for (m, p), v in table.items():
        if m not in ("fr_baseline", "t5d_rate_baseline"):
            continue
        margin = table.get((f"{m}_margin", p), 0.0)
        if v > margin and v > 0:
            continue
        if m == "fr_baseline":
            out[("fr", p)] = ("the baseline never flips on it" if v <= 0 else
                              f"the baseline flips on only {100 * v:.2f} % of frame pairs, within its sampling error "
                              f"(±{100 * margin:.2f} points, 95 %)")
        else:
            out[("t5d_rate", p)] = ("the baseline's top-5 distance is 0" if v <= 0 else
                                    f"the baseline's top-5 distance {v:.3f} is within its sampling error "
                                    f"(±{margin:.3f}, 95 %)")
    return out


def stability_summary(metrics: Iterable[MetricRow]) -> dict[str, Any]:
    """``{"mfr", "mt5d", "perturbations": {folder: {"stride-1": {"fp", "fr", "t5d", "t5d_rate"}}}}``;
    an undefined rate has ``"fr_na"`` / ``"t5d_rate_na"`` (the reason) instead of a value, and
    ``mfr_terms`` / ``mt5d_terms`` say how many perturbations the means average."""
    metrics = list(metrics)
    out: dict[str, Any] = {"perturbations": {}}
    short = {"flip_probability": "fp", "flip_rate": "fr", "top5_distance": "t5d", "top5_distance_rate": "t5d_rate"}
    reasons = rate_reasons(metrics)
    for name, setting, value in metrics:
        if name in short:
            folder, stride = setting.rsplit("/", 1)
            out["perturbations"].setdefault(folder, {}).setdefault(stride, {})[short[name]] = value
        elif name.startswith(("mfr", "mt5d")):
            out[name if setting == "" else f"{name}/{setting}"] = value
    for folder, by_stride in out["perturbations"].items():
        perturbation, difficulty = parse_folder(folder) or (folder, 1)
        noise = perturbation in list_perturbations("all") and get_perturbation(perturbation).noise
        for stride, values in by_stride.items():
            if not difficulty_applies(noise, difficulty, int(stride.rsplit("-", 1)[-1])):
                continue
            for key in ("fr", "t5d_rate"):
                if key not in values and (key, perturbation) in reasons:
                    values[f"{key}_na"] = reasons[(key, perturbation)]
    return out


#: The legend of ``show``'s stability table and the report's: what the rates divide by.
STABILITY_LEGEND = ("FP = share of frame pairs whose top-1 prediction differs (%); FR = FP / the baseline's FP (%, "
                    "100 = the baseline); T5D = mean top-5 distance (rank positions); T5D rate = T5D / the baseline's "
                    "(%); n/a = undefined (the baseline's value is within its sampling error; the notes say why); "
                    "- = not measured at that difficulty.")


def stability_text(metrics: Iterable[MetricRow]) -> list[str]:
    """``robustlab show`` layout: per perturbation folder and difficulty (stride) the flip
    probability, the flip rate, the top-5 distance and its rate; then mFR and mT5D per difficulty."""
    from ..engine.result_text import pct, text_table

    summary = stability_summary(metrics)

    def rate(v: Mapping[str, Any], key: str) -> str:
        return "n/a" if v.get(f"{key}_na") else pct(v.get(key))

    rows = []
    for folder, by_stride in summary["perturbations"].items():
        for stride, v in sorted(by_stride.items(), key=lambda kv: int(kv[0].rsplit("-", 1)[-1])):
            rows.append([folder, stride.rsplit("-", 1)[-1], pct(v.get("fp"), 2), rate(v, "fr"),
                         "-" if v.get("t5d") is None else f"{v['t5d']:.3f}", rate(v, "t5d_rate")])
    lines = ["flip probability FP (%), flip rate FR (%), top-5 distance T5D and its rate (%), per difficulty (stride)"]
    lines += text_table(["perturbation", "difficulty", "FP", "FR", "T5D", "T5D rate"], rows, first_width=18)
    lines.append(f"legend: {STABILITY_LEGEND}")
    aggregates = [(k, v) for k, v in summary.items() if k != "perturbations" and "_terms" not in k.split("/")[0]]
    if aggregates:
        lines.append("")
        for key, value in sorted(aggregates, key=lambda kv: (kv[0].split("/")[-1], kv[0])):
            name, _, setting = key.partition("/")
            label = {"mfr": "mFR", "mt5d": "mT5D", "mfr_subset": "mFR (subset)", "mt5d_subset": "mT5D (subset)"}.get(
                name, name)
            where = f" at difficulty {setting.rsplit('-', 1)[-1]}" if setting else " (difficulty 1, the headline)"
            terms_key = f"{name}_terms" + (f"/{setting}" if setting else "")
            of = _terms_text(summary, name, setting)
            lines.append(f"{label + where:<40}{pct(value):>7}{of}" if terms_key in summary else
                         f"{label + where:<40}{pct(value):>7}")
    return lines


def _terms_text(summary: Mapping[str, Any], name: str, setting: str) -> str:
    """``"  (9 of 10 perturbations: the defined terms)"`` when a mean left out undefined rates."""
    used = summary.get(f"{name}_terms" + (f"/{setting}" if setting else ""))
    of = sum(1 for folder, by_stride in summary["perturbations"].items()
             if (parse_folder(folder) or (folder, 1))[0] in TEST_PERTURBATIONS
             and any(k in by_stride.get(setting or "stride-1", {}) for k in (
                 ("fr", "fr_na") if name.startswith("mfr") else ("t5d_rate", "t5d_rate_na"))))
    return f"  ({int(used)} of {of} perturbations: the defined terms)" if used is not None and used < of else ""


def difficulty_coverage(metrics: Iterable[MetricRow], stride: int) -> list[str]:
    """The perturbations an aggregate at ``stride`` covers (those with a flip rate there), in
    the paper's order."""
    metrics = list(metrics)
    suffix = f"/stride-{stride}"
    with_baseline = {s for m, s, _ in metrics if m == "fr_baseline"}  # includes those whose FR is n/a
    covered = {parse_folder(s[:-len(suffix)])[0] for m, s, _ in metrics
               if m == "flip_rate" and s.endswith(suffix) and parse_folder(s[:-len(suffix)])}
    for m, s, _ in metrics:
        parsed = parse_folder(s[:-len(suffix)]) if m == "flip_probability" and s.endswith(suffix) else None
        if parsed and parsed[0] in with_baseline and difficulty_applies(get_perturbation(parsed[0]).noise, parsed[1],
                                                                         stride):
            covered.add(parsed[0])
    known = list_perturbations("all")
    return sorted(covered, key=lambda p: (known.index(p) if p in known else len(known), p))


def difficulty_coverage_notes(config: Mapping[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
    """One note per stride above 1 naming the perturbations its mFR / mT5D average."""
    metrics = list(metrics)
    notes = []
    for d in config["strides"]:
        if d == 1:
            continue
        covered = difficulty_coverage(metrics, d)
        if not covered:
            continue
        name = "mfr" if any(m == "mfr" and s == f"stride-{d}" for m, s, _ in metrics) else "mfr_subset"
        noise = [p for p in TEST_PERTURBATIONS if get_perturbation(p).noise]
        absent = [p for p in noise if p not in covered]
        notes.append(f"{name} / mt5d at stride-{d} (difficulty {d}) average {len(covered)} perturbations: "
                     f"{', '.join(covered)}."
                     + ((f" Noise sequences ignore the stride, so {', '.join(absent)} enter difficulty {d} only "
                         f"through their difficulty-{d} folders ({', '.join(f'{p}_{d}' for p in absent)}), "
                         "which this run does not have." if d <= 3 else
                         f" Noise sequences ignore the stride and have difficulties 1-3 only, so {', '.join(absent)} "
                         f"have no difficulty-{d} value.") if absent else ""))
    return notes


def stability_notes(config: Mapping[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
    names = {m for m, _, _ in metrics}
    by_run = config.get("baseline_run")
    if config.get("setting") != "imagenet" and not by_run:
        return ["FR, mFR and the T5D ratios use ImageNet's AlexNet baseline and are not reported in the cifar "
                "setting; compare flip probabilities and top-5 distances, or give baseline_run."]
    source = "this run itself (FR = 100 by construction)" if by_run == "self" else f"stored run {by_run}"
    notes = [f"FR and the T5D ratios are normalised by {source} (stride-1 values)."] if by_run else []
    if "mfr" not in names:
        missing = [p for p in TEST_PERTURBATIONS if not any(s.startswith(f"{p}/") for _, s, _ in metrics)]
        if missing:
            notes.append(f"mFR needs the 10 test perturbations; missing {', '.join(missing)}. mfr_subset is the mean "
                         "FR over those evaluated.")
    if any(d != 1 for d in config["strides"]):
        notes.append("rates at stride 2+ are normalised by the baseline's stride-1 (difficulty 1) values"
                     + (" (AlexNet publishes only those)." if not by_run else "."))
        notes += difficulty_coverage_notes(config, metrics)
    if "top5_distance" not in names:
        notes.append("top-5 distances need at least 5 classes; the model has fewer.")
    reasons = rate_reasons(metrics)
    for key, label, mean in (("fr", "FR", "mFR"), ("t5d_rate", "the T5D ratio", "mT5D")):
        undefined = {p: why for (k, p), why in reasons.items() if k == key}
        if undefined:
            used = next((v for m, s, v in metrics if m in (f"{mean.lower()}_terms", f"{mean.lower()}_subset_terms")
                         and s == ""), None)
            notes.append(f"{label} n/a for " + "; ".join(f"{p}: {why}" for p, why in undefined.items()) + "."
                         + (f" {mean} averages the other {int(used)} test perturbations." if used else
                            f" {mean} has no defined term." if used is not None else ""))
    return notes


# --- the shared plugin behaviour ------------------------------------------------------------------


class _SequenceBenchmark(Benchmark):
    """Frame stacks in, per-frame top-5 out, stability metrics from the stored columns."""

    option_hints = SEQUENCE_HINTS
    family = "perturbation"
    family_title = "Perturbation stability (ImageNet-P)"
    headline = (HeadlineMetric("mfr", "mFR", "mfr_subset", compare=True),
                HeadlineMetric("mt5d", "mT5D", "mt5d_subset"))

    def published_baseline(self, config: Mapping[str, Any]) -> str | None:
        return PUBLISHED_ALEXNET if config.get("setting") in (None, "imagenet") else None

    def load(self, samples, i: int, prepare) -> Sample:
        frames = samples.read(i)
        return Sample(sample_id(samples, i), int(samples.labels[i]), np.stack([prepare(f) for f in frames]))

    def predict(self, model: torch.nn.Module, batch: Batch, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        model = self.for_data_classes(model, config)  # zero-shot and hf: models take the data's classes
        x = batch.inputs(model_device(model))  # (B, T, 3, H, W), or a list of (T, 3, H, W)
        stacks = [x] if not isinstance(x, list) else [s.unsqueeze(0) for s in x]
        columns = []
        for stack in stacks:
            b, t = stack.shape[:2]
            frames = stack.reshape(b * t, *stack.shape[2:])
            tops = [classify_batch(model, frames[s:s + FRAME_CHUNK], top_k=5, num_classes=self.num_classes(config))
                    ["top5_index"] for s in range(0, b * t, FRAME_CHUNK)]
            top = np.concatenate(tops)
            columns.append({"n_frames": np.full(b, t, dtype=np.int16), FRAMES_COLUMN: top.reshape(b, t * top.shape[1])})
        if len(columns) > 1 and len({c[FRAMES_COLUMN].shape[1] for c in columns}) > 1:
            raise InputError(f"sequences of unit {batch.unit} have different numbers of frames; a perturbation "
                             "folder's sequences must all have the same length.")
        return {k: np.concatenate([c[k] for c in columns]) for k in columns[0]}

    def related_runs(self, config: Mapping[str, Any]) -> dict[str, str]:
        run = config.get("baseline_run")
        return {"baseline_run": run} if run and run != "self" else {}

    def metrics(self, config, predictions, related=None) -> list[MetricRow]:
        if config.get("baseline_run") == "self":  # the run is its own baseline: FR = 100
            base = stability_baseline_from_run(config, predictions)
        elif related and "baseline_run" in related:
            base = stability_baseline_from_run(config, related["baseline_run"])
        else:
            base = None
        return stability_metrics(config, predictions, base)

    def notes(self, config, metrics) -> list[str]:
        return stability_notes(config, list(metrics))

    def text(self, config, summary, metrics) -> list[str]:
        return stability_text(metrics)

    def summary(self, config, metrics) -> dict[str, Any]:
        # Left empty on purpose: the engine's text table prints every metric row when the summary
        # is empty; the structured view is stability_summary(result.metrics).
        return {}


def _shards(setting: str, n: int, shard_size: int, **params: Any) -> list[Unit]:
    return [Unit(f"{setting}/shard-{k:04d}", setting, {**params, "start": s, "stop": min(n, s + shard_size)})
            for k, s in enumerate(range(0, n, shard_size))]


# --- imagenet-p -------------------------------------------------------------------------------------


@register_benchmark
class ImageNetP(_SequenceBenchmark):
    """Released ImageNet-P videos (``<root>/<perturbation>/<wnid>/<name>.mp4``; also ``.npy`` files and PNG
    frame folders as ``robustlab perturb`` writes them) or CIFAR-10-P arrays (``<root>/<perturbation>.npy``,
    optional ``labels.npy``).

    Its options are :attr:`options`; ``perturbations`` defaults to every perturbation folder present.
    """

    name = "imagenet-p"
    options = (
        PERTURBATIONS_OPTION, STRIDES_OPTION,
        Option("setting", "str", help="Frame counts to expect: imagenet (default for folders) or cifar (default for "
               "arrays)."),
        Option("frames", "str", "released", help="released (every sequence has the released number of frames) or "
               "any (any length longer than the largest stride, the same within a folder)."),
        CLASS_MAP, Option("limit", "int", help="Only N sequences of each folder, the same number from each class "
                          "(see --limit-order)."), LIMIT_ORDER, shard_size_option(500),
        baseline_option("alexnet"), BASELINE_RUN,
    )

    def __init__(self) -> None:
        self._listing: dict[tuple[str, str, Any], tuple[list[str], list[str | None], list[str]]] = {}

    def configure(self, data: str, *, perturbations, strides, setting, frames, class_map, limit, limit_order,
                  shard_size, baseline, baseline_run) -> dict[str, Any]:
        root = Path(data).expanduser().resolve()
        layout, found = imagenet_p_layout(root)
        if perturbations is not None:
            wanted = set(resolve_perturbations(perturbations))
            folders = [f for f in found if parse_folder(f)[0] in wanted]
            if not folders:
                raise DataError(f"none of {', '.join(sorted(wanted))} is under {root} (found: {', '.join(found)}).")
        else:
            folders = list(found)
        made_in = recorded_setting(root)  # a folder robustlab perturb wrote says which setting it used (default)
        setting = setting or made_in or ("cifar" if layout == "cifar" else "imagenet")
        if setting not in ("imagenet", "cifar"):
            raise InputError(f"setting must be imagenet or cifar; got {setting!r}.")
        if frames not in ("released", "any"):
            raise InputError(f"frames must be 'released' (the released frame counts) or 'any'; got {frames!r}.")
        get_stability_baseline(baseline)
        config: dict[str, Any] = {
            "data": str(root), "layout": layout, "folders": folders, "strides": parse_strides(strides),
            "setting": setting, "frames": frames, **limit_config(limit, limit_order),
            "shard_size": check_positive("shard_size", shard_size), "baseline": baseline,
            "baseline_run": baseline_run,
        }
        if frames == "released":
            _check_strides([parse_folder(f)[0] for f in folders], setting, config["strides"])
        if layout == "cifar":
            labels = root / "labels.npy"
            config["labels"] = str(labels) if labels.is_file() else None
            config["num_classes"] = 10 if config["labels"] else None
            if config["limit"]:
                config["limit_stats"] = self._cifar_rows(config, folders[0])[1]
            return config
        config["class_map"] = class_map_config(class_map)
        classes = sorted({c for f in folders for c in self._list(config, f)[2]})
        config["num_classes"] = len(resolve_class_map(classes, config["class_map"])[1]) if classes else None
        if config["limit"]:
            config["limit_stats"] = self._list(config, folders[0])[3]
        return config

    def _list(self, config: Mapping[str, Any], folder: str):
        """``(files, class folders, classes present, limit stats)`` of a sequence folder under the limit."""
        order = config_limit_order(config)
        key = (config["data"], folder, config["limit"], order)
        if key not in self._listing:
            files, classes = list_sequences(Path(config["data"], folder))
            stats = None
            if config["limit"]:
                codes = [c if c is not None else "" for c in classes]
                keep = limit_positions(files, codes, config["limit"], order)
                stats = limit_stats(codes, keep, len(files), order)
                files, classes = [files[p] for p in keep], [classes[p] for p in keep]
            self._listing[key] = (files, classes, sorted({c for c in classes if c is not None}), stats)
        return self._listing[key]

    def _labels(self, config: Mapping[str, Any]) -> np.ndarray | None:
        """The CIFAR-10-P labels (``labels.npy``), None when the arrays have none."""
        if not config.get("labels"):
            return None
        return as_integer_labels(load_npy(config["labels"], what="CIFAR-10-P labels"),
                                 f"CIFAR-10-P labels {config['labels']}")

    def _cifar_rows(self, config: Mapping[str, Any], folder: str) -> tuple[tuple[int, ...] | None, dict | None]:
        """``(rows taken, limit stats)`` of a CIFAR-10-P array under the limit (``(None, None)``: every row)."""
        if not config["limit"]:
            return None, None
        n = len(read_cifar_p(Path(config["data"], f"{folder}.npy"), expected_frames=self._frames(config, folder),
                             stride=self._max_stride(config, folder)))
        labels = self._labels(config)
        if labels is not None and len(labels) < n:
            raise DataError(f"{config['labels']} has {len(labels)} labels, fewer than the {n} sequences of "
                            f"{folder}.npy.")
        order = config_limit_order(config)
        labels = None if labels is None else labels[:n]
        keep = limit_positions([str(i) for i in range(n)], labels, config["limit"], order)
        return tuple(int(p) for p in keep), limit_stats(labels, keep, n, order)

    def _frames(self, config: Mapping[str, Any], folder: str) -> int | None:
        return frame_count(parse_folder(folder)[0], config["setting"]) if config["frames"] == "released" else None

    def _max_stride(self, config: Mapping[str, Any], folder: str) -> int | None:
        noise = get_perturbation(parse_folder(folder)[0]).noise
        return None if noise else max(config["strides"])

    def plan(self, config: Mapping[str, Any]) -> list[Unit]:
        units: list[Unit] = []
        for folder in config["folders"]:
            if config["layout"] == "cifar":
                arr = read_cifar_p(Path(config["data"], f"{folder}.npy"), expected_frames=self._frames(config, folder),
                                   stride=self._max_stride(config, folder))
                n = len(arr) if not config["limit"] else len(self._cifar_rows(config, folder)[0])
            else:
                n = len(self._list(config, folder)[0])
            units.extend(_shards(folder, n, config["shard_size"]))
        return units

    def samples(self, config: Mapping[str, Any], unit: Unit):
        folder, start, stop = unit.setting, unit.params["start"], unit.params["stop"]
        frames, stride = self._frames(config, folder), self._max_stride(config, folder) or 0
        if config["layout"] == "cifar":
            rows = self._cifar_rows(config, folder)[0] if config_limit_order(config) == "balanced" else None
            taken = list(range(start, stop)) if rows is None else [rows[i] for i in range(start, stop)]
            labels = self._labels(config)
            if labels is not None:
                if len(labels) <= max(taken, default=-1):
                    raise DataError(f"{config['labels']} has {len(labels)} labels, fewer than the {stop} sequences of "
                                    f"{folder}.npy.")
                labels = labels[taken]
            else:
                labels = np.full(len(taken), -1, np.int64)
            return ArraySamples(Path(config["data"], f"{folder}.npy"), start, stop, labels, rows=rows,
                                opener=functools.partial(open_cifar_p, frames=frames, stride=stride))
        files, classes, _, _ = self._list(config, folder)
        names = sorted({c for c in classes if c is not None})
        index, class_names = resolve_class_map(names, config["class_map"]) if names else ({}, ())
        labels = np.asarray([index[c] if c is not None else -1 for c in classes[start:stop]], dtype=np.int64)
        return SequenceFolderSamples(Path(config["data"], folder), tuple(files[start:stop]), labels, class_names,
                                     frames, stride)


# --- perturbed --------------------------------------------------------------------------------------


@register_benchmark
class Perturbed(_SequenceBenchmark):
    """Any labelled image folder (``<root>/<class>/<image>``), each image turned into perturbation
    sequences on the fly, with the seeds of ``robustlab perturb`` (identical sequences).

    Its options are :attr:`options`.
    """

    name = "perturbed"
    options = (
        PERTURBATIONS_OPTION,
        Option("setting", "str", "imagenet", help="imagenet (224 px frames from Resize 256) or cifar (square images "
               "as they are)."),
        Option("difficulty", "int", 1, help="Noise level of the noise sequences: 1, 2 or 3."),
        seed_option(0, "Base seed; each sequence gets its own derived seed (as robustlab perturb)."),
        STRIDES_OPTION, CLASS_MAP, LIMIT, LIMIT_ORDER, shard_size_option(500), baseline_option("alexnet"), BASELINE_RUN,
    )

    def __init__(self) -> None:
        self._base_cache: dict[str, ImageFolderSamples] = {}

    def configure(self, data: str, *, perturbations, setting, difficulty, seed, strides, class_map, limit, limit_order,
                  shard_size, baseline, baseline_run) -> dict[str, Any]:
        if setting not in ("imagenet", "cifar"):
            raise InputError(f"setting must be imagenet or cifar; got {setting!r}.")
        if difficulty not in (1, 2, 3) or isinstance(difficulty, bool):
            raise InputError(f"difficulty must be 1, 2 or 3; got {difficulty!r}.")
        get_stability_baseline(baseline)
        chosen = resolve_perturbations(perturbations if perturbations is not None else "test")
        config = {
            "data": str(Path(data).expanduser().resolve()), "perturbations": list(chosen),
            "folders": [perturbation_folder(p, int(difficulty), noise=get_perturbation(p).noise) for p in chosen],
            "setting": setting, "difficulty": int(difficulty), "seed": check_seed(seed),
            "strides": parse_strides(strides), "class_map": class_map_config(class_map),
            **limit_config(limit, limit_order), "shard_size": check_positive("shard_size", shard_size),
            "baseline": baseline, "baseline_run": baseline_run,
        }
        _check_strides(chosen, setting, config["strides"])
        base = self._base(config)
        config["num_classes"] = len(base.classes)
        if config["limit"]:
            config.update(limit_config(limit, limit_order, base))
        return config

    def comparability(self, config: Mapping[str, Any]) -> str | None:
        return own_data_label(config)

    def notes(self, config, metrics) -> list[str]:
        metrics = list(metrics)
        notes = stability_notes(config, metrics)
        if self.comparability(config) and any(m == "flip_rate" for m, _, _ in metrics):
            notes.insert(0, own_data_note("FR, mFR and the T5D ratios (mT5D)", config["data"]))
        return notes

    def _base(self, config: Mapping[str, Any]) -> ImageFolderSamples:
        key = repr((config["data"], config["class_map"], config["limit"], config_limit_order(config)))
        if key not in self._base_cache:
            self._base_cache[key] = read_image_folder(config["data"], config["class_map"], limit=config["limit"],
                                                      limit_order=config_limit_order(config))
        return self._base_cache[key]

    def plan(self, config: Mapping[str, Any]) -> list[Unit]:
        n = len(self._base(config))
        return [u for p, folder in zip(config["perturbations"], config["folders"])
                for u in _shards(folder, n, config["shard_size"], perturbation=p)]

    def samples(self, config: Mapping[str, Any], unit: Unit):
        base = self._base(config).subset(unit.params["start"], unit.params["stop"])
        return PerturbedSamples(base, unit.params["perturbation"], config["setting"], config["difficulty"],
                                config["seed"])
