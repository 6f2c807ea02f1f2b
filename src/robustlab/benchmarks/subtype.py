"""Benchmark ``subtype-robustness``: a classifier fine-tuned on the seen subtypes of 25 broad WordNet
types, evaluated on held-out images of those seen subtypes and on the unseen (ImageNet-22K only)
ones (:mod:`robustlab.data.subtypes`; ImageNet-C paper, appendix).

The data is a split folder written by ``robustlab subtypes IMAGENET22K OUT --clean-data VAL``
(``subtypes.json``, ``seen.txt``, ``unseen.txt``); the model gives 25 logits, one per broad type
(``robustlab finetune --data OUT/train.txt --classes subtypes25``: the reference's recipe). Settings
``seen`` and ``unseen``; metrics: accuracy of each with its 95% Clopper-Pearson interval, per broad
type, and the seen - unseen gap. The run's config records the split's subtype lists
(``reference`` or ``wordnet``) and where the seen images come from (``val`` or ``holdout``); with
``holdout`` its notes and the report say that seen accuracy may include training images. ``imagenet_top1`` (the base architecture's ImageNet-1K top-1, percent
or fraction) places the run in the report's figure, as the paper plots both accuracies against
ImageNet-1K accuracy.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data.classification import ImageFolderSamples
from ..data.subtypes import HOLDOUT_WARNING, load_split
from ..data.limits import limit_positions, limit_stats
from ..engine.benchmark import Benchmark, MetricRow, Unit, register_benchmark
from ..engine.classification import setting_counts, top1_errors
from ..engine.config import LimitedConfig, conditional
from ..engine.options import (LIMIT, LIMIT_ORDER, SAVE_LOGITS, TOP_K, Option, check_positive, limit_config,
                              shard_size_option)
from ..engine.presentation import HeadlineMetric, Presentation
from ..engine.setting import Setting, setting_of
from ..errors import InputError
from .natural_shift import accuracy_rows

SETTINGS = ("seen", "unseen")


@dataclass(frozen=True, kw_only=True)
class SubtypeConfig(LimitedConfig):
    """A ``subtype-robustness`` run: the split folder, its 25 broad types, the base model's ImageNet-1K
    top-1 (for the figure), and for splits that record them, the subtype lists (``reference`` or
    ``wordnet``) and where the seen images come from (``val`` or ``holdout``)."""

    broad_types: list[str]
    shard_size: int
    imagenet_top1: float | None
    top_k: int
    save_logits: bool
    num_classes: int
    lists: str | None = conditional()
    seen_from: str | None = conditional()

    def seen_source(self) -> str:
        """``val`` or ``holdout`` (splits made before the choice existed held out)."""
        return self.seen_from or "holdout"


def imagenet_accuracy(value: Any) -> float | None:
    """``imagenet_top1`` as a fraction (given in percent when above 1); None passes through."""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"imagenet_top1 must be a number (the base model's ImageNet-1K top-1, e.g. 76.1); "
                         f"got {value!r}.") from None
    v = v / 100 if v > 1 else v
    if not 0 < v <= 1:
        raise InputError(f"imagenet_top1 must be an accuracy in (0, 100]; got {value!r}.")
    return v


@register_benchmark
class SubtypeRobustness(Benchmark):
    """Seen vs unseen subtype accuracy of a 25-way broad-type classifier (see the module docstring)."""

    name = "subtype-robustness"
    config_class = SubtypeConfig
    presentation = "subtype"
    options = (SAVE_LOGITS, LIMIT, LIMIT_ORDER, shard_size_option(5000),
               Option("imagenet_top1", "float", help="The model's ImageNet top-1 accuracy (a fraction, or percent "
                      "above 1), for the report's comparison."), TOP_K)
    option_hints = {"corruptions": "{name} takes no corruptions.", "severities": "{name} takes no severities."}

    def __init__(self) -> None:
        self._splits: dict[str, tuple[dict, dict[str, list[str]]]] = {}

    def _split(self, root: str) -> tuple[dict, dict[str, list[str]]]:
        if root not in self._splits:
            self._splits[root] = load_split(root)
        return self._splits[root]

    def configure(self, data: str, *, save_logits, limit, limit_order, shard_size, imagenet_top1,
                  top_k) -> SubtypeConfig:
        root = str(Path(data).expanduser().resolve())
        meta, _ = self._split(root)
        recorded = {}
        if meta.get("format") != "robustlab-subtypes/1":  # splits made before the choices keep their run ids
            recorded = {"lists": meta["lists"], "seen_from": meta["seen_from"]}
        config = SubtypeConfig(data=root, broad_types=[t[0] for t in meta["broad_types"]],
                               **limit_config(limit, limit_order), shard_size=check_positive("shard_size", shard_size),
                               imagenet_top1=imagenet_accuracy(imagenet_top1), top_k=check_positive("top_k", top_k),
                               save_logits=bool(save_logits), num_classes=len(meta["broad_types"]), **recorded)
        if config.limit:
            config = config.replace(limit_stats=self._listed(config, SETTINGS[0])[2])
        return config

    def _listed(self, config: SubtypeConfig, setting: str) -> tuple[list[str], np.ndarray, dict | None]:
        """``(files, labels, limit stats)`` of a setting's list under the run's limit."""
        meta, lists = self._split(config.data)
        files = list(lists[setting])
        types = meta["types"]
        labels = np.asarray([types[os.path.basename(os.path.dirname(f))] for f in files], dtype=np.int64)
        if not config.limit:
            return files, labels, None
        keep = limit_positions(files, labels, config.limit, config.order)
        return [files[p] for p in keep], labels[keep], limit_stats(labels, keep, len(files), config.order)

    def plan(self, config: SubtypeConfig):
        for setting in SETTINGS:
            n = len(self._listed(config, setting)[0])
            for k, start in enumerate(range(0, n, config.shard_size)):
                yield Unit.of(Setting(setting), k, {"start": start, "stop": min(n, start + config.shard_size)})

    def samples(self, config: SubtypeConfig, unit: Unit) -> ImageFolderSamples:
        files, labels, _ = self._listed(config, unit.setting.shift)
        start, stop = unit.params["start"], unit.params["stop"]
        return ImageFolderSamples(Path("/"), tuple(files[start:stop]), labels[start:stop], tuple(config.broad_types))

    def metrics(self, config: SubtypeConfig, predictions, related=None) -> list[MetricRow]:
        settings = {u: setting_of(u) for u in predictions}
        counts = setting_counts(predictions, settings)
        rows: list[MetricRow] = [("n_samples", s, float(n)) for s, (n, _, _) in counts.items()]
        rows += accuracy_rows(counts)
        for setting in SETTINGS:
            units = [c for u, c in predictions.items() if settings[u] == setting and len(c["label"])]
            if not units:
                continue
            labels = np.concatenate([c["label"] for c in units])
            right = ~np.concatenate([top1_errors(c) for c in units])
            for t, name in enumerate(config.broad_types):
                mask = labels == t
                if mask.any():
                    rows.append(("type_accuracy", f"{setting}/{name}", float(right[mask].mean())))
        table = {(m, s): v for m, s, v in rows}
        if ("accuracy", "seen") in table and ("accuracy", "unseen") in table:
            rows.append(("seen_unseen_gap", "", table[("accuracy", "seen")] - table[("accuracy", "unseen")]))
        return rows


class SubtypeShow(Presentation):
    """How ``subtype-robustness`` runs are shown: seen and unseen accuracy with intervals, per broad type,
    and their gap. The report's section extends it (:mod:`robustlab.report.section_shifts`)."""

    name = "subtype"
    title = "Subtype robustness"
    headline = (HeadlineMetric("accuracy", "seen", setting="seen"), HeadlineMetric("accuracy", "unseen",
                                                                                   setting="unseen"))

    def notes(self, config: SubtypeConfig, metrics: Iterable[MetricRow]) -> list[str]:
        notes = []
        if config.seen_source() == "holdout":
            notes.append(HOLDOUT_WARNING[0].upper() + HOLDOUT_WARNING[1:] + ".")
        if config.imagenet_top1 is None:
            notes.append("no ImageNet-1K accuracy for the figure: give -o imagenet_top1=<the base model's top-1, e.g. "
                         "76.1>.")
        return notes

    def summary(self, config: SubtypeConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        table = {(m, s): v for m, s, v in metrics}
        out: dict[str, Any] = {"imagenet_top1": config.imagenet_top1,
                               "gap": table.get(("seen_unseen_gap", "")), "lists": config.lists or "wordnet",
                               "seen_from": config.seen_source()}
        for setting in SETTINGS:
            if ("accuracy", setting) in table:
                out[setting] = {"accuracy": table[("accuracy", setting)], "low": table[("accuracy_low", setting)],
                                "high": table[("accuracy_high", setting)],
                                "n": int(table.get(("n_samples", setting), 0)),
                                "per_type": {name: table.get(("type_accuracy", f"{setting}/{name}"))
                                             for name in config.broad_types}}
        return out

    def text(self, config: SubtypeConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        from ..engine.result_text import pct, text_table

        lines = []
        for setting in SETTINGS:
            row = summary.get(setting)
            if row:
                lines.append(f"{setting + ' subtypes':<18} accuracy {pct(row['accuracy'])} "
                             f"[{pct(row['low'])}, {pct(row['high'])}]   n {row['n']}")
        if summary.get("gap") is not None:
            lines.append(f"{'seen - unseen':<18} {100 * summary['gap']:+.1f} points")
        if summary.get("imagenet_top1") is not None:
            lines.append(f"{'ImageNet-1K top-1':<18} {pct(summary['imagenet_top1'])} (given)")
        seen, unseen = summary.get("seen") or {}, summary.get("unseen") or {}
        if seen or unseen:
            lines += ["", "accuracy per broad type (%)"]
            lines += text_table(["type", "seen", "unseen"],
                                [[t, pct((seen.get("per_type") or {}).get(t)), pct((unseen.get("per_type") or {}).get(t))]
                                 for t in config.broad_types], first_width=22)
        return lines
