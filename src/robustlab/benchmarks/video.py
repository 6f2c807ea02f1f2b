"""Benchmarks ``imagenet-vid-robust``, ``ytbb-robust`` and ``video-pmk``: natural perturbations
from video (pm-k accuracy, Shankar et al. 2021).

One inference pass covers every frame of the set once (an anchor's neighbours are read once
however many anchors share them); units are shards of the sorted frame keys
(``"frames/shard-0000"``). Per frame the store keeps the model's scores over the *set's*
classes (column ``logits``: 1000-way logits projected with the set's ImageNet class map and
the chosen merge, or a detector's best box score per class, column ``class_scores``) and the
top-1 class (``prediction``; ``n_classes`` = "no class", e.g. a detector that found nothing).
Everything else is computed afterwards from those stored columns:

- ``accuracy_original`` (pm-0, the anchors alone) and ``accuracy_pmk`` (pm-k at the run's
  ``k``, 10 by default), each with an exact Clopper-Pearson interval (``*_low``, ``*_high``);
- the accuracy-vs-k curve ``accuracy_pmk`` / ``"k=0"`` .. ``"k=10"`` (with intervals);
- per class: ``class_accuracy_original`` / ``class_accuracy_pmk`` (setting ``class/<name>``);
- Gu et al.'s conditional accuracy P(neighbour correct | anchor correct) for pairs exactly
  ``d`` frames apart (``conditional_accuracy`` / ``"d=<d>"``);
- how many anchors each offset broke first (``n_broken_at_offset`` / ``"offset=<d>"``; the
  per-anchor list is :func:`anchor_failures`);
- with ``static_runs`` (stored runs of other models on the same set), the accuracy on the
  model-independent "static" set (:func:`static_set` computes it from a store directly);
- for a set written by ``robustlab video finalize`` or the review app, how many of its pairs
  were not reviewed (``n_pairs_unreviewed``) or reviewed by only some annotators
  (``n_pairs_partly_reviewed``), from its ``finalize_summary.json`` (:func:`review_rows`);
  the run's notes say so whenever either is above 0.

Label modes: ImageNet-Vid-Robust judges each frame against its own labels; YTBB-Robust
against its anchor's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.images import read_image
from ..data.fingerprint import files_fingerprint
from ..errors import DataError, InputError
from ..metrics.pmk import (
    AccuracyCount,
    conditional_accuracy,
    frame_offsets,
    parse_frame_key,
    per_class_accuracy,
    pmk_accuracies,
    static_accuracy,
    static_frames,
)
from ..metrics.stats import clopper_pearson
from ..models.projection import MERGES, groups_from_map, project_logits
from ..models.protocol import check_logits
from ..engine.benchmark import Benchmark, HeadlineMetric, MetricRow, Unit, model_device, register_benchmark
from ..engine.records import Batch
from ..engine.options import SAVE_LOGITS, TOP_K, shard_size_option
from ..engine.schema import Option

FRAMES = "frames"
#: The headline pm-k (the papers' pm-10) and the end of the accuracy-vs-k curve.
DEFAULT_K = 10


# --- the frames of a set, as a sample set for the executor ------------------------------------------


@dataclass(frozen=True, eq=False)
class FrameSamples:
    """Frames named by key (path relative to ``root``), with one integer label each.

    ``labels`` holds each frame's first label, or -1 for a frame judged by its anchor's
    labels (YTBB neighbours); pm-k scoring uses the set's full label sets, not this column.
    """

    root: Path
    keys: tuple[str, ...]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def ids(self) -> tuple[str, ...]:
        return self.keys

    def read(self, i: int) -> np.ndarray:
        """Frame ``i`` as uint8 HxWx3 RGB (DataError naming the file when unreadable)."""
        return read_image(self.root / self.keys[i])

    def fingerprint(self, mode: str = "stat") -> str:
        return files_fingerprint(((k, self.root / k) for k in self.keys), mode, extra=(self.labels.tolist(),))


# --- options ---------------------------------------------------------------------------------------




def _positive(name: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _projection(class_map: Any, pmk_set, merge: str) -> dict[str, Any]:
    """The config's ``projection``: how model outputs become scores over the set's classes.

    ``class_map``: None/"auto" (the set's ImageNet map when it has one, else none), "none"
    (the model already predicts the set's classes), a JSON file or a mapping
    (``{source index: target index}`` or ``{target index: [source indices]}``).
    """
    n = len(pmk_set.class_names)
    if merge not in MERGES:
        raise InputError(f"merge {merge!r} is unknown; use one of {', '.join(MERGES)} (max is the papers').")
    if class_map is None or (isinstance(class_map, str) and class_map == "auto"):
        if not pmk_set.class_idx_map:
            return {"source": "none", "groups": None, "merge": None}
        return {"source": "set", "groups": groups_from_map(pmk_set.class_idx_map, n), "merge": merge}
    if isinstance(class_map, str) and class_map.lower() == "none":
        return {"source": "none", "groups": None, "merge": None}
    if isinstance(class_map, (str, os.PathLike)):
        path = Path(class_map).expanduser()
        if not path.is_file():
            raise DataError(f"class map file {path} does not exist; give a JSON file {{model class: set class}} "
                            "or {set class: [model classes]}, 'auto' (the set's ImageNet map) or 'none'.")
        try:
            class_map = json.loads(path.read_text())
        except ValueError as exc:
            raise DataError(f"class map file {path} is not valid JSON ({exc}).") from None
    if not isinstance(class_map, Mapping):
        raise InputError(f"class_map must be 'auto', 'none', a JSON file or a mapping; got {class_map!r:.80}.")
    try:
        groups = groups_from_map(class_map, n)
    except (TypeError, ValueError) as exc:
        raise InputError(f"class map entries must be integer class indices ({exc}).") from None
    return {"source": "file", "groups": groups, "merge": merge}


# --- per-frame predictions ---------------------------------------------------------------------------


def _top_k(scores: torch.Tensor, k: int) -> dict[str, np.ndarray]:
    k = min(k, scores.shape[1])
    probs = torch.softmax(scores, dim=1)
    values, index = torch.topk(probs, k, dim=1)
    return {"top5_index": index.to(torch.int32).cpu().numpy(), "top5_score": values.cpu().numpy()}


def classify_frames(model: torch.nn.Module, x: torch.Tensor, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Columns for one batch of a classifier: scores over the set's classes and the top-1 class.

    Returns ``logits`` (N, n_classes) float32 (projected when the run has a class map; classes
    no model class maps to score -inf), ``prediction`` (N,) int64, ``top5_index`` /
    ``top5_score`` (softmax over the set's classes) and, with ``save_logits``, the model's own
    ``source_logits``.
    """
    proj = config["projection"]
    with torch.inference_mode():
        raw = model(x)
    name = getattr(model, "name", type(model).__name__)
    raw = check_logits(raw, x.shape[0], name, None if proj["groups"] else config["n_classes"]).float()
    if proj["groups"]:
        needed = 1 + max((i for g in proj["groups"] for i in g), default=-1)
        if raw.shape[1] < needed:
            raise InputError(f"model {name!r} returns {raw.shape[1]} classes but the class map refers to class "
                             f"{needed - 1}; for a model trained on the set's own {config['n_classes']} classes "
                             "use --class-map none.")
        scores = project_logits(raw, proj["groups"], proj["merge"])
    else:
        scores = raw
    out = {"logits": scores.cpu().numpy().astype(np.float32), "prediction": scores.argmax(dim=1).cpu().numpy()
           .astype(np.int64)}
    out.update(_top_k(scores, int(config["top_k"])))
    if config.get("save_logits"):
        out["source_logits"] = raw.cpu().numpy()
    return out


def detect_frames(model: torch.nn.Module, x: torch.Tensor, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Columns for one batch of a detector used as a classifier: the most confident box's class.

    ``class_scores`` (N, n_classes) float32 is the best box score per set class (0 when no box
    of that class); ``prediction`` is the class of the most confident box whose label maps to
    a set class, or ``n_classes`` ("no class", always wrong) when there is none.
    """
    proj = config["projection"]
    n = config["n_classes"]
    name = getattr(model, "name", type(model).__name__)
    if proj["source"] == "set":
        raise InputError(f"{name!r} is a detector: its box labels are not ImageNet classes, so the set's ImageNet "
                         "class map does not apply. Give --class-map none (labels are already the set's class "
                         "indices) or a JSON file {detector label: set class}.")
    to_target: dict[int, int] = {}
    if proj["groups"]:
        for target, sources in enumerate(proj["groups"]):
            for s in sources:
                to_target[int(s)] = target
    with torch.inference_mode():
        outputs = model(x)
    scores = np.zeros((len(outputs), n), dtype=np.float32)
    prediction = np.full(len(outputs), n, dtype=np.int64)
    for i, out in enumerate(outputs):
        labels = out["labels"].cpu().numpy().astype(np.int64)
        box_scores = out["scores"].cpu().numpy().astype(np.float32)
        mapped = np.array([to_target.get(int(c), -1) for c in labels] if proj["groups"] else
                          [c if 0 <= c < n else -1 for c in labels], dtype=np.int64)
        keep = mapped >= 0
        if keep.any():
            np.maximum.at(scores[i], mapped[keep], box_scores[keep])
            best = np.flatnonzero(keep)[np.argmax(box_scores[keep])]
            prediction[i] = mapped[best]
    top = torch.from_numpy(scores)
    k = min(int(config["top_k"]), n)
    values, index = torch.topk(top, k, dim=1)
    return {"class_scores": scores, "prediction": prediction, "top5_index": index.to(torch.int32).numpy(),
            "top5_score": values.numpy()}


def frame_predictions(predictions: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, int]:
    """``{frame key: top-1 class}`` from a run's stored units (all units merged)."""
    out: dict[str, int] = {}
    for columns in predictions.values():
        if "prediction" not in columns:
            raise DataError("stored units have no 'prediction' column; they were not written by a video "
                            "benchmark run.")
        out.update(zip(columns["sample_id"].tolist(), columns["prediction"].astype(np.int64).tolist()))
    return out


# --- metrics -----------------------------------------------------------------------------------------


def judged_labels(pmk_set) -> dict[str, list[int]]:
    """The labels each frame is judged by: its own (``frame`` mode) or its anchor's (``anchor``)."""
    if pmk_set.label_mode == "frame":
        return pmk_set.labels
    out = dict(pmk_set.labels)
    for anchor, neighbours in pmk_set.pmsets.items():
        for n in neighbours:
            out[n] = pmk_set.labels[anchor]
    return out


def _complete(preds: Mapping[str, int], frames: Iterable[str], no_class: int) -> tuple[dict[str, int], list[str]]:
    """Predictions for every frame; frames without one (unreadable) count as wrong (``no_class``)."""
    out = dict(preds)
    missing = [f for f in frames if f not in out]
    for f in missing:
        out[f] = no_class
    return out, missing


def _interval_rows(name: str, setting: str, n_correct: int, n: int, alpha: float) -> list[MetricRow]:
    lo, hi = clopper_pearson(n_correct, n, alpha=alpha)
    return [(name, setting, n_correct / n), (f"{name}_low", setting, lo), (f"{name}_high", setting, hi)]


def pmk_metric_rows(pmk_set, predictions: Mapping[str, int], *, k: int = DEFAULT_K, alpha: float = 0.05,
                    static_predictions: Mapping[str, Mapping[str, int]] | None = None) -> list[MetricRow]:
    """Every metric of a video benchmark run from per-frame predictions (see the module docstring).

    Parameters
    ----------
    pmk_set : robustlab.video.PmkSet
    predictions : {frame key: class}
        Top-1 class per frame; missing frames count as wrong.
    k : int
        The headline pm-k; the curve covers 0..k.
    alpha : float
        1 - confidence of the Clopper-Pearson intervals.
    static_predictions : {model: predictions}, optional
        Other models' predictions; with them, ``static_accuracy`` of this model on the
        model-independent set chosen by all of them and this one.
    """
    n_classes = len(pmk_set.class_names)
    preds, missing = _complete(predictions, pmk_set.frame_keys, n_classes)
    labels = judged_labels(pmk_set)
    results = pmk_accuracies(preds, pmk_set.pmsets, labels, ks=range(k + 1), label_mode=pmk_set.label_mode)
    head = results[k]
    n = head.n_anchors
    rows: list[MetricRow] = [("n_anchors", "", float(n)), ("n_neighbours", "", float(head.n_neighbours)),
                             ("n_frames", "", float(len(pmk_set.frame_keys))),
                             ("n_frames_unreadable", "", float(len(missing))), ("k", "", float(k))]
    rows += _interval_rows("accuracy_original", "", head.n_anchor_correct, n, alpha)
    rows += _interval_rows("accuracy_pmk", "", head.n_pmk_correct, n, alpha)
    rows.append(("accuracy_drop", "", head.drop))
    for kk, r in results.items():
        rows += _interval_rows("accuracy_pmk", f"k={kk}", r.n_pmk_correct, n, alpha)
        rows.append(("n_neighbours", f"k={kk}", float(r.n_neighbours)))
    for c, acc in per_class_accuracy(head, pmk_set.labels).items():
        setting = f"class/{pmk_set.class_names[c] if c < n_classes else c}"
        rows += [("class_n_anchors", setting, float(acc.n_anchors)),
                 ("class_accuracy_original", setting, acc.accuracy_original),
                 ("class_accuracy_pmk", setting, acc.accuracy_pmk)]
    offsets = frame_offsets(pmk_set.pmsets)
    pairs_at: dict[int, list[tuple[str, str]]] = {}
    for anchor, row in offsets.items():
        for neighbour, offset in row.items():
            pairs_at.setdefault(abs(offset), []).append((anchor, neighbour))
    for d in range(1, k + 1):
        if d not in pairs_at:
            continue
        cond = conditional_accuracy(preds, labels, pairs_at[d])
        rows += [("conditional_n_pairs", f"d={d}", float(cond.n_pairs)),
                 ("conditional_accuracy", f"d={d}", cond.value)]
    broken = [abs(offsets[a][f]) for a, f in head.breaking_frame.items() if f is not None and f != a]
    for d in range(1, k + 1):
        rows.append(("n_broken_at_offset", f"offset={d}", float(broken.count(d))))
    if static_predictions:
        everyone = {"this run": preds}
        for model, other in static_predictions.items():
            everyone[model] = _complete(other, pmk_set.frame_keys, n_classes)[0]
        frames = static_frames(everyone, pmk_set.pmsets, labels, k=k, label_mode="frame")
        acc = static_accuracy(preds, frames, labels, label_mode="frame")
        rows += _interval_rows("static_accuracy", "", acc.n_correct, acc.n, alpha)
        rows.append(("static_n_models", "", float(len(everyone))))
    return rows


#: Written beside pmsets.json by ``robustlab video finalize`` (and the review app's Finalize).
FINALIZE_SUMMARY = "finalize_summary.json"


def review_rows(pmk_set) -> list[MetricRow]:
    """How completely the set was reviewed, from the ``finalize_summary.json`` beside its
    ``pmsets.json`` (none for a set without one, e.g. the published ImageNet-Vid-Robust).

    ``n_pairs_unreviewed``: the review app's count of tasks of the open round without any
    answer when the set was finalized (else finalize's count of candidate pairs without any
    review); ``n_pairs_partly_reviewed`` (review app only): tasks answered by only some
    annotators; ``review_open_round``: the round that was open.
    """
    pmsets_file = (getattr(pmk_set, "info", None) or {}).get("pmsets_file")
    if not pmsets_file:
        return []
    path = Path(pmsets_file).with_name(FINALIZE_SUMMARY)
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    if not isinstance(summary, dict):
        return []
    review = summary.get("review") if isinstance(summary.get("review"), dict) else {}
    counts = {"n_pairs_unreviewed": review.get("unreviewed", summary.get("pairs_unreviewed")),
              "n_pairs_partly_reviewed": review.get("partly_reviewed"), "review_open_round": review.get("open_round")}
    return [(name, "", float(v)) for name, v in counts.items()
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0]


def review_note(metrics: Iterable[MetricRow]) -> str | None:
    """The run's note on an incompletely reviewed set (None when it was reviewed in full)."""
    t = _table(metrics)
    unreviewed = int(t.get(("n_pairs_unreviewed", ""), 0))
    partly = int(t.get(("n_pairs_partly_reviewed", ""), 0))
    if not unreviewed and not partly:
        return None
    rnd = t.get(("review_open_round", ""))
    where = f" of round {int(rnd)}" if rnd else ""
    return (f"incomplete review: {unreviewed} pair(s){where} had no review answer"
            + (f" and {partly} had answers from only some annotators" if partly else "")
            + f" when the set was finalized ({FINALIZE_SUMMARY}); the set holds only what was decided.")


def _table(metrics: Iterable[MetricRow]) -> dict[tuple[str, str], float]:
    return {(m, s): v for m, s, v in metrics}


def pmk_summary(metrics: Iterable[MetricRow]) -> dict[str, Any]:
    """Structured view of a run's stored metric rows (for ``show`` and ``to_dict``)."""
    t = _table(metrics)
    if ("accuracy_original", "") not in t:
        return {}
    k = int(t[("k", "")])

    def with_ci(name: str, setting: str = "") -> dict[str, float] | None:
        if (name, setting) not in t:
            return None
        return {"value": t[(name, setting)], "low": t[(f"{name}_low", setting)], "high": t[(f"{name}_high", setting)]}

    classes = sorted({s[6:] for m, s in t if s.startswith("class/")})
    return {
        "k": k, "n_anchors": int(t[("n_anchors", "")]), "n_neighbours": int(t[("n_neighbours", "")]),
        "pm0": with_ci("accuracy_original"), f"pm{k}": with_ci("accuracy_pmk"), "drop": t[("accuracy_drop", "")],
        "curve": {str(kk): with_ci("accuracy_pmk", f"k={kk}") for kk in range(k + 1)},
        "per_class": {c: {"n_anchors": int(t[("class_n_anchors", f"class/{c}")]),
                          "accuracy_original": t[("class_accuracy_original", f"class/{c}")],
                          "accuracy_pmk": t[("class_accuracy_pmk", f"class/{c}")]} for c in classes},
        "conditional_accuracy": dict(sorted(((s[2:], v) for (m, s), v in t.items() if m == "conditional_accuracy"),
                                            key=lambda item: int(item[0]))),
        "broken_at_offset": dict(sorted(((s[7:], int(v)) for (m, s), v in t.items() if m == "n_broken_at_offset"),
                                        key=lambda item: int(item[0]))),
        "static_accuracy": with_ci("static_accuracy"),
        **({"review": {"pairs_unreviewed": int(t[("n_pairs_unreviewed", "")]),
                       "pairs_partly_reviewed": int(t.get(("n_pairs_partly_reviewed", ""), 0))}}
           if ("n_pairs_unreviewed", "") in t else {}),
    }


def pmk_text(summary: Mapping[str, Any], alpha: float = 0.05) -> list[str]:
    """``robustlab show`` layout: the pm-k curve over k with Clopper-Pearson intervals (and a text
    bar per k), the drop, accuracy per class, conditional accuracy and the static set."""
    from ..engine.result_text import pct, text_table

    if not summary:
        return []
    k = summary["k"]
    rows = []
    for kk, v in summary["curve"].items():
        if v is None:
            continue
        bar = "#" * int(round(40 * v["value"])) if np.isfinite(v["value"]) else ""
        rows.append([kk, pct(v["value"]), pct(v["low"]), pct(v["high"]), bar])
    lines = [f"pm-k accuracy (%): an anchor counts when it and every reviewed neighbour within +-k frames are "
             f"correct; {100 * (1 - alpha):g}% Clopper-Pearson intervals ({summary['n_anchors']} anchors, "
             f"{summary['n_neighbours']} neighbours)"]
    lines += text_table(["k", "pm-k", "low", "high", ""], rows)
    lines += ["", f"{'pm-0 (anchors alone)':<34}{pct(summary['pm0']['value']):>7}",
              f"{'pm-' + str(k):<34}{pct(summary[f'pm{k}']['value']):>7}",
              f"{'drop (points)':<34}{pct(summary['drop']):>7}"]
    if summary.get("static_accuracy"):
        lines.append(f"{'static (model-independent) set':<34}{pct(summary['static_accuracy']['value']):>7}")
    if summary.get("per_class"):
        lines += ["", "per class (%)"]
        lines += text_table(["class", "anchors", "pm-0", f"pm-{k}"],
                            [[c, str(v["n_anchors"]), pct(v["accuracy_original"]), pct(v["accuracy_pmk"])]
                             for c, v in summary["per_class"].items()], first_width=12)
    if summary.get("conditional_accuracy"):
        lines += ["", "P(frame at offset d correct | anchor correct), Gu et al. (%): "
                  + ", ".join(f"d={d} {pct(v)}" for d, v in summary["conditional_accuracy"].items())]
    return lines


def _pct(v: float) -> str:
    return "-" if v is None or not np.isfinite(v) else f"{100 * v:.1f}"


def pmk_notes(metrics: Iterable[MetricRow], alpha: float = 0.05) -> list[str]:
    """Human-readable lines: pm-0 and pm-k with intervals, the k curve, conditional accuracy."""
    s = pmk_summary(metrics)
    if not s:
        return []
    k, pm0, pmk = s["k"], s["pm0"], s[f"pm{s['k']}"]
    lines = [f"pm-0 (anchor accuracy) {_pct(pm0['value'])}% [{_pct(pm0['low'])}, {_pct(pm0['high'])}], "
             f"pm-{k} {_pct(pmk['value'])}% [{_pct(pmk['low'])}, {_pct(pmk['high'])}], drop {_pct(s['drop'])} points "
             f"({s['n_anchors']} anchors, {s['n_neighbours']} neighbours; {100 * (1 - alpha):g}% Clopper-Pearson "
             "intervals)",
             "accuracy vs k (%): " + ", ".join(f"k={kk} {_pct(v['value'])}" for kk, v in s["curve"].items())]
    if s["conditional_accuracy"]:
        lines.append("Gu et al. P(neighbour correct | anchor correct) (%): " + ", ".join(
            f"d={d} {_pct(v)}" for d, v in s["conditional_accuracy"].items()))
    if s["static_accuracy"]:
        st = s["static_accuracy"]
        lines.append(f"static (model-independent) set accuracy {_pct(st['value'])}% "
                     f"[{_pct(st['low'])}, {_pct(st['high'])}]")
    t = _table(metrics)
    if t.get(("n_frames_unreadable", ""), 0):
        lines.append(f"{int(t[('n_frames_unreadable', '')])} frames could not be read and count as misclassified.")
    note = review_note(metrics)
    if note:
        lines.append(note)
    return lines


# --- the benchmarks ------------------------------------------------------------------------------------


class VideoPmk(Benchmark):
    """Base of the pm-k benchmarks; subclasses say how to read the set (options: :attr:`options`)."""

    task = "classification"
    default_label_mode = "frame"
    family, family_title = "video", "Natural perturbations in video (pm-k)"
    headline = (HeadlineMetric("accuracy_original", "pm-0 accuracy", compare=True),
                HeadlineMetric("accuracy_pmk", "pm-k accuracy", compare=True))
    options = (
        Option("metadata", "path", help="Folder of the set's JSON files (default: the data folder, then its "
               "metadata/)."),
        Option("class_map", "str", help="auto (the set's ImageNet map), none (the model predicts the set's classes) "
               "or a JSON file."),
        Option("merge", "str", "max", help="How ImageNet logits merge into a set class: max, sum, mean or median."),
        Option("k", "int", DEFAULT_K, help="Neighbour frames on each side of the anchor."),
        shard_size_option(2000),
        Option("limit", "int", help="Only the first N anchors."),
        Option("alpha", "float", 0.05, help="1 - confidence of the intervals."),
        Option("static_runs", "value", help="Stored run ids of other models on this set (the static set)."),
        TOP_K, SAVE_LOGITS,
    )
    option_hints = {"label_mode": "{name} fixes label_mode (the set says how its frames are judged); label_mode is "
                                  "a video-pmk option."}

    def __init__(self) -> None:
        self._sets: dict[str, Any] = {}

    # subclasses: read the set (metadata only; frames checked separately)
    def read_set(self, root: Path, metadata: Path | None, config: Mapping[str, Any]):  # pragma: no cover
        raise NotImplementedError

    def configure(self, data: str, *, metadata, class_map, merge, k, shard_size, limit, alpha, static_runs, top_k,
                  save_logits, label_mode: str | None = None) -> dict[str, Any]:
        """``label_mode``: an option of the subclasses that declare it (default :attr:`default_label_mode`)."""
        root = Path(data).expanduser().resolve()
        if not root.is_dir():
            raise DataError(f"{self.name}: data folder {root} does not exist; give the folder holding the frames.")
        label_mode = label_mode or self.default_label_mode
        if label_mode not in ("frame", "anchor"):
            raise InputError(f"label_mode {label_mode!r} is unknown; use frame or anchor.")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < float(alpha) < 1:
            raise InputError(f"alpha must be a number in (0, 1); got {alpha!r}.")
        if static_runs is not None:
            if isinstance(static_runs, str):
                static_runs = [r for r in static_runs.split(",") if r.strip()]
            if not isinstance(static_runs, (list, tuple)) or not all(isinstance(r, str) for r in static_runs):
                raise InputError(f"static_runs must be a list of run ids; got {static_runs!r}.")
        config: dict[str, Any] = {
            "data": str(root),
            "metadata": str(Path(metadata).expanduser().resolve()) if metadata is not None else None,
            "label_mode": label_mode, "k": _positive("k", k, minimum=0),
            "limit": None if limit is None else _positive("limit", limit),
            "shard_size": _positive("shard_size", shard_size), "alpha": float(alpha),
            "top_k": _positive("top_k", top_k), "save_logits": bool(save_logits),
        }
        if static_runs:
            config["static_runs"] = sorted(set(static_runs))
        pmk_set = self.pmk_set(config)
        config["n_classes"] = len(pmk_set.class_names)
        config["projection"] = _projection(class_map, pmk_set, merge)
        from ..video.readers import check_frames_exist

        check_frames_exist(root, pmk_set.frame_keys, what=self.name)
        return config

    def pmk_set(self, config: Mapping[str, Any]):
        """The run's set (cached), restricted to the first ``limit`` anchors."""
        key = json.dumps([config["data"], config["metadata"], config["label_mode"], config["k"], config["limit"]])
        if key not in self._sets:
            metadata = Path(config["metadata"]) if config["metadata"] else None
            full = self.read_set(Path(config["data"]), metadata, config)
            if config["limit"]:
                from ..video.readers import PmkSet

                anchors = sorted(full.pmsets)[:config["limit"]]
                full = PmkSet(full.name, {a: full.pmsets[a] for a in anchors}, full.labels, full.label_mode,
                              full.class_names, full.class_idx_map, full.root, full.info)
            if config["k"] < max((abs(o) for row in full.offsets().values() for o in row.values()), default=0):
                full = full.within(config["k"])
            self._sets[key] = full
        return self._sets[key]

    def num_classes(self, config: Mapping[str, Any]) -> int | None:
        return None  # checked in predict (the projection's source size or the set's classes)

    def plan(self, config: Mapping[str, Any]) -> list[Unit]:
        n = len(self.pmk_set(config).frame_keys)
        size = config["shard_size"]
        return [Unit(f"{FRAMES}/shard-{i:04d}", FRAMES, {"start": start, "stop": min(n, start + size)})
                for i, start in enumerate(range(0, n, size))]

    def samples(self, config: Mapping[str, Any], unit: Unit) -> FrameSamples:
        pmk_set = self.pmk_set(config)
        keys = tuple(pmk_set.frame_keys[unit.params["start"]:unit.params["stop"]])
        labels = np.array([pmk_set.labels[k][0] if k in pmk_set.labels else -1 for k in keys], dtype=np.int64)
        return FrameSamples(Path(config["data"]), keys, labels)

    def predict(self, model: torch.nn.Module, batch: Batch, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        device = model_device(model)
        if getattr(model, "task", "classification") == "detection":
            return detect_frames(model, batch.inputs(device), config)
        return classify_frames(model, batch.stacked_inputs(device), config)

    def related_runs(self, config: Mapping[str, Any]) -> dict[str, str]:
        return {f"static:{r}": r for r in config.get("static_runs") or []}

    def metrics(self, config, predictions, related=None) -> list[MetricRow]:
        pmk_set = self.pmk_set(config)
        own = frame_predictions(predictions)
        others = {}
        for alias, units in (related or {}).items():
            if not alias.startswith("static:"):
                continue
            other = frame_predictions(units)
            lacking = [f for f in own if f not in other]
            if lacking:
                raise DataError(f"stored run {alias[7:]} has no prediction for frame {lacking[0]!r} (and "
                                f"{len(lacking) - 1} more) of this set; static_runs must be runs on the same set.")
            others[alias[7:]] = other
        return pmk_metric_rows(pmk_set, own, k=config["k"], alpha=config["alpha"],
                               static_predictions=others or None) + review_rows(pmk_set)

    def notes(self, config, metrics) -> list[str]:
        return pmk_notes(metrics, config.get("alpha", 0.05))

    def summary(self, config, metrics) -> dict[str, Any]:
        return pmk_summary(metrics)

    def text(self, config, summary, metrics) -> list[str]:
        return pmk_text(summary, config.get("alpha", 0.05))


@register_benchmark
class ImageNetVidRobust(VideoPmk):
    """ImageNet-Vid-Robust: ``DATA/val/ILSVRC2015_val_XXXXXXXX/NNNNNN.JPEG`` plus ``pmsets.json``,
    ``labels.json`` (and ``class_idx_map.json``); 30 classes, each frame judged by its own labels."""

    name = "imagenet-vid-robust"

    def read_set(self, root, metadata, config):
        from ..video.readers import read_imagenet_vid_robust

        return read_imagenet_vid_robust(root, metadata=metadata, check_frames=False)


@register_benchmark
class YtbbRobust(VideoPmk):
    """YTBB-Robust: ``DATA/<ytid>_<ms>/frame-<n>.jpg`` plus the review files; the authors' filters
    are applied and every frame is judged by its anchor's labels."""

    name = "ytbb-robust"
    default_label_mode = "anchor"

    def read_set(self, root, metadata, config):
        from ..video.readers import read_ytbb_robust

        return read_ytbb_robust(root, metadata=metadata, k=max(config["k"], 1), check_frames=False)


@register_benchmark
class GenericVideoPmk(VideoPmk):
    """Any set in the ``pmsets.json`` / ``labels.json`` format (e.g. built with ``robustlab video
    sample`` / ``finalize``); ``label_mode`` frame (default) or anchor."""

    name = "video-pmk"
    options = (*VideoPmk.options, Option("label_mode", "str", help="How a frame is judged: frame (its own labels, "
                                         "default) or anchor (its anchor's)."))
    option_hints = {}

    def read_set(self, root, metadata, config):
        from ..video.readers import read_pmk_set

        return read_pmk_set(root, metadata=metadata, label_mode=config["label_mode"], check_frames=False)


# --- reading stored runs: failures and the static set ------------------------------------------------


def _run_set(store, run: str):
    from ..engine.benchmark import get_benchmark

    record = store.get_run(run)
    bench = get_benchmark(record.benchmark)
    if not isinstance(bench, VideoPmk):
        raise InputError(f"run {record.id} is a {record.benchmark!r} run, not a video pm-k run.")
    return record, bench, bench.pmk_set(record.config)


@dataclass(frozen=True)
class AnchorFailure:
    """What broke one anchor: the anchor itself or the nearest misclassified neighbour.

    ``offset`` is 0 when the anchor itself is wrong; ``labels`` are the labels the breaking
    frame was judged by.
    """

    anchor: str
    frame: str
    offset: int
    prediction: int
    labels: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"anchor": self.anchor, "frame": self.frame, "offset": self.offset, "prediction": self.prediction,
                "labels": list(self.labels)}


def anchor_failures(store, run: str, *, k: int | None = None) -> list[AnchorFailure]:
    """Per-anchor failures of a stored video run: which frame (and offset) broke each anchor.

    Parameters
    ----------
    store : robustlab.store.Store
    run : str
        Run id or unique prefix of an ``imagenet-vid-robust`` / ``ytbb-robust`` / ``video-pmk`` run.
    k : int, optional
        Neighbours with ``|offset| <= k`` (default the run's k).

    Returns
    -------
    list of AnchorFailure
        One per anchor that is not pm-k correct, sorted by anchor key.
    """
    record, _, pmk_set = _run_set(store, run)
    k = record.config["k"] if k is None else _positive("k", k, minimum=0)
    preds, _ = _complete(frame_predictions(store.read_predictions(record.id)), pmk_set.frame_keys,
                         len(pmk_set.class_names))
    labels = judged_labels(pmk_set)
    result = pmk_accuracies(preds, pmk_set.pmsets, labels, ks=[k], label_mode=pmk_set.label_mode)[k]
    out = []
    for anchor in sorted(result.breaking_frame):
        frame = result.breaking_frame[anchor]
        if frame is None:
            continue
        offset = parse_frame_key(frame)[1] - parse_frame_key(anchor)[1]
        out.append(AnchorFailure(anchor, frame, offset, preds[frame], tuple(labels[frame])))
    return out


@dataclass(frozen=True)
class StaticSetResult:
    """The model-independent set over several stored runs and each run's accuracy on it.

    Attributes
    ----------
    frames : dict
        ``{anchor: frame}``: per anchor, the neighbour most of the runs misclassify.
    accuracy : dict
        ``{run id: AccuracyCount}``.
    models : dict
        ``{run id: model name}``.
    """

    frames: dict[str, str]
    accuracy: dict[str, AccuracyCount]
    models: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"frames": dict(self.frames),
                "runs": [{"run_id": r, "model": self.models[r], **a.to_dict()} for r, a in self.accuracy.items()]}


def _same_set(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    keys = ("data", "metadata", "label_mode", "k", "limit", "n_classes")
    return all(a.get(key) == b.get(key) for key in keys)


def static_set(store, run: str, *, runs: Iterable[str] | None = None, k: int | None = None) -> StaticSetResult:
    """The static (model-independent) set across stored runs of different models on one set.

    Parameters
    ----------
    store : robustlab.store.Store
    run : str
        A stored video run (id or prefix); it fixes the set.
    runs : iterable of str, optional
        The other runs to use; default every complete run of the same benchmark on the same set
        (same data folder, metadata, label mode, k and limit) found with ``store.list_runs``.
    k : int, optional
        Neighbours with ``|offset| <= k`` (default the run's k).
    """
    record, bench, pmk_set = _run_set(store, run)
    if runs is None:
        chosen = [r for r in store.list_runs(benchmark=record.benchmark)
                  if r.status == "complete" and _same_set(r.config, record.config)]
    else:
        chosen = [store.get_run(r) for r in runs]
        for r in chosen:
            if r.benchmark != record.benchmark or not _same_set(r.config, record.config):
                raise InputError(f"run {r.id} ({r.benchmark} on {r.dataset}) is not a run on the same set as "
                                 f"{record.id}; the static set compares models on one set.")
    if record.id not in {r.id for r in chosen}:
        chosen.insert(0, record)
    k = record.config["k"] if k is None else _positive("k", k, minimum=0)
    n_classes = len(pmk_set.class_names)
    preds = {r.id: _complete(frame_predictions(store.read_predictions(r.id)), pmk_set.frame_keys, n_classes)[0]
             for r in chosen}
    labels = judged_labels(pmk_set)
    frames = static_frames(preds, pmk_set.pmsets, labels, k=k, label_mode="frame")
    accuracy = {rid: static_accuracy(p, frames, labels, label_mode="frame") for rid, p in preds.items()}
    return StaticSetResult(frames, accuracy, {r.id: r.model for r in chosen})
