"""Benchmark ``laion-c`` in one plugin file: LAION-C (Li, Klein, Brendel, Geirhos & Zimmermann, *LAION-C:
An Out-of-Distribution Benchmark for Web-Scale Vision Models*, ICML 2025), read from its released
layout, scored as its authors score it, with its report section.

- **Data**: the release (``robustlab data fetch laion-c``: Zenodo record 14051887) in the layout
  its evaluation code reads, ``<root>/<distortion>/intensity_level_<1..5>/<superclass>/<image>``,
  for 6 distortions (glitched, mosaic, stickers, vertical_lines, geometric_shapes,
  luminance_checkerboard) and 16 superclass folders. The settings are checked for the same classes
  and files before the run (``--allow-incomplete`` to evaluate a tree that is not, recorded).
- **Metric** (the authors' ``laionc/evaluation.py``): a 1,000-class ImageNet model's logits go
  through a softmax over the 1,000 classes; a superclass scores the *mean* probability of its
  ImageNet classes (``laionc/mappings/category_mapping.json``: the 16 superclasses and their 285
  wnids, :data:`SUPERCLASSES`); the prediction is the best-scoring superclass, and accuracy is the
  share of images whose prediction is their folder's superclass, per distortion and intensity
  level. The mean accuracy over the 30 cells is the leaderboard's "Avg. Accuracy".
- The reference feeds the released 224 x 224 images to the model resized to 224 x 224 (no crop):
  give the model that preprocessing (``--resize 224 --crop 224`` keeps 224-pixel images as they are).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robustlab.benchmarks.corruption_units import classes_per_unit, folder_units
from robustlab.corruptions.checks import parse_severities
from robustlab.data.classification import class_folders, read_image_folder
from robustlab.data.releases.consistency import check_released_settings, layout_notes, layout_summary
from robustlab.data.releases.sets import LAION_C
from robustlab.data.wordnet import ilsvrc_wnids
from robustlab.engine.benchmark import Benchmark, MetricRow, Unit, model_device, register_benchmark
from robustlab.engine.classification import classify_batch, error_rows, setting_counts
from robustlab.engine.config import RunConfig, conditional
from robustlab.engine.options import (ALLOW_INCOMPLETE, CLASSES_PER_UNIT, LIMIT, SAVE_LOGITS, TOP_K, Option,
                                      check_positive)
from robustlab.engine.presentation import HeadlineMetric, Presentation, register_presentation
from robustlab.engine.result_text import text_table
from robustlab.engine.setting import Setting, setting_of
from robustlab.errors import DataError, unknown_name
from robustlab.report import figures as F
from robustlab.report.collect import Estimate, metric_table
from robustlab.report.section_base import CI_LEGEND, ReportContext, Section, first_value, label, pct, short_path

FAMILY = "laion-c"
LAYOUT = "<root>/<distortion>/intensity_level_<1..5>/<superclass>/<image> (LAION-C)"
#: The ImageNet-1k wnids of each superclass, as the authors' category_mapping.json lists them (its order
#: is the superclasses' label order here).
SUPERCLASSES = {
    "fruit": "n07742313 n07745940 n07747607 n07749582 n07753275 n07753592",
    "fish": (
        "n01440764 n01443537 n01484850 n01491361 n01494475 n02066245 n02071294 n02607072 n02640242 "
        "n02641379 n02643566 n02655020"
    ),
    "tools": "n04154565 n03995372 n03481172 n04208210 n03498962 n03041632 n03000684",
    "instruments": (
        "n02676566 n02787622 n03272010 n04536866 n02804610 n03372029 n03394916 n03452741 n03494278 "
        "n02672831 n03495258 n04141076 n04515003"
    ),
    "ball": "n02799071 n02802426 n04118538 n04254680 n04540053 n04409515",
    "primate": (
        "n02480495 n02480855 n02481823 n02483362 n02483708 n02484975 n02486261 n02486410 n02487347 "
        "n02488291 n02488702 n02489166 n02490219 n02492035 n02492660 n02493509 n02493793 n02494079"
    ),
    "snakes": (
        "n01728572 n01728920 n01729322 n01729977 n01735189 n01737021 n01739381 n01740131 n01742172 "
        "n01744401 n01748264 n01749939 n01751748 n01753488 n01755581 n01756291"
    ),
    "timekeeping": "n02708093 n03196217 n04548280 n04328186 n03197337 n04355338",
    "chair": "n02791124 n03376595 n04099969 n04429376 n04344873 n03891251",
    "butterfly": "n02276258 n02277742 n02279972 n02280649 n02281406 n02281787",
    "boat": "n02951358 n03344393 n03662601 n04273569 n04612504 n03447447 n03095699",
    "cat": "n02123045 n02123159 n02123394 n02123597 n02124075 n02125311",
    "bottle": "n02823428 n03937543 n03983396 n04557648 n04560804 n04579145 n04591713",
    "car_truck": (
        "n03345487 n03417042 n03770679 n03796401 n03930630 n03977966 n04461696 n04467665 n02814533 "
        "n03100240 n04285008"
    ),
    "bird": (
        "n01514859 n01530575 n01531178 n01532829 n01534433 n01537544 n01558993 n01560419 n01582220 "
        "n01592084 n01601694 n01614925 n01616318 n01622779 n01795545 n01796340 n01797886 n01798484 "
        "n01817953 n01818515 n01819313 n01820546 n01824575 n01828970 n01829413 n01833805 n01843065 "
        "n01843383 n01855032 n01855672 n01860187 n02002556 n02002724 n02006656 n02007558 n02009229 "
        "n02009912 n02011460 n02013706 n02017213 n02018207 n02018795 n02025239 n02027492 n02028035 "
        "n02033041 n02037110 n02051845 n02056570"
    ),
    "dog": (
        "n02085782 n02085936 n02086079 n02086240 n02086646 n02086910 n02087046 n02087394 n02088094 "
        "n02088238 n02088364 n02088466 n02088632 n02089078 n02089867 n02089973 n02090379 n02090622 "
        "n02090721 n02091032 n02091134 n02091244 n02091467 n02091635 n02091831 n02092002 n02092339 "
        "n02093256 n02093428 n02093647 n02093754 n02093859 n02093991 n02094114 n02094258 n02094433 "
        "n02095314 n02095570 n02095889 n02096051 n02096294 n02096437 n02096585 n02097047 n02097130 "
        "n02097209 n02097298 n02097474 n02097658 n02098105 n02098286 n02099267 n02099429 n02099601 "
        "n02099712 n02099849 n02100236 n02100583 n02100735 n02100877 n02101006 n02101388 n02101556 "
        "n02102040 n02102177 n02102318 n02102480 n02102973 n02104029 n02104365 n02105056 n02105162 "
        "n02105251 n02105505 n02105641 n02105855 n02106030 n02106166 n02106382 n02106550 n02106662 "
        "n02107142 n02107312 n02107574 n02107683 n02107908 n02108000 n02108422 n02108551 n02108915 "
        "n02109047 n02109525 n02109961 n02110063 n02110185 n02110627 n02110806 n02110958 n02111129 "
        "n02111277 n02111500 n02112018 n02112350 n02112706 n02113023 n02113624 n02113712 n02113799 "
        "n02113978"
    ),
}


def superclass_members() -> np.ndarray:
    """A (1000, 16) 0/1 matrix: column j marks superclass j's ImageNet classes (index = sorted wnid)."""
    index = {w: i for i, w in enumerate(ilsvrc_wnids())}
    members = np.zeros((len(index), len(SUPERCLASSES)), dtype=np.float64)
    for j, wnids in enumerate(SUPERCLASSES.values()):
        members[[index[w] for w in wnids.split()], j] = 1.0
    return members


def superclass_scores(logits: np.ndarray) -> np.ndarray:
    """(N, 1000) logits -> (N, 16) superclass scores: the mean softmax probability of each superclass's
    ImageNet classes (the softmax is over all 1,000 classes, as the reference computes it)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    probs = np.exp(z)
    probs /= probs.sum(axis=1, keepdims=True)
    members = superclass_members()
    return probs @ members / members.sum(axis=0)


def parse_distortions(spec: str | Sequence[str] | None) -> list[str]:
    """Distortion names (comma-separated or a list; None or ``all``: the 6), in the reference's order."""
    if spec is None:
        return list(LAION_C)
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if names == ["all"]:
        return list(LAION_C)
    for name in names:
        if name not in LAION_C:
            raise unknown_name("LAION-C distortion", name, LAION_C)
    return [d for d in LAION_C if d in names]


def setting_folder(root: str | Path, distortion: str, level: int) -> Path:
    return Path(root, distortion, f"intensity_level_{level}")


@dataclass(frozen=True, kw_only=True)
class LaionCConfig(RunConfig):
    """A ``laion-c`` run: the released folders of the chosen distortions and intensity levels, scored over
    the 16 superclasses (``class_map``: their names in label order) from a 1,000-class model's output."""

    distortions: list[str]
    intensities: list[int]
    class_map: list[str]
    limit: int | None
    classes_per_unit: int
    top_k: int
    save_logits: bool
    num_classes: int
    subset: dict[str, Any] | None = conditional()
    incomplete: dict[str, Any] | None = conditional()

    def settings(self) -> list[Setting]:
        return [Setting(d, lv) for d in self.distortions for lv in self.intensities]


@register_benchmark
class LaionC(Benchmark):
    """LAION-C's released folders, scored by superclass top-1 accuracy (see the module docstring)."""

    name = "laion-c"
    config_class = LaionCConfig
    presentation = FAMILY
    options = (
        Option("distortions", "str", help="LAION-C distortions, comma-separated, or all (default): "
               + ", ".join(LAION_C) + ".", flags=("-c",)),
        Option("intensities", "str", help="Intensity levels, e.g. 1-5 (default) or 1,3.", flags=("-s",)),
        LIMIT, CLASSES_PER_UNIT, TOP_K, SAVE_LOGITS, ALLOW_INCOMPLETE,
    )
    option_hints = {"class_map": "{name} scores the 16 superclass folders by name; there is no class map to give.",
                    "corruptions": "{name} calls them distortions: give --distortions (-c).",
                    "severities": "{name} calls them intensity levels: give --intensities (-s).",
                    "clean_data": "{name} has no clean split: the LAION-C paper reports the distorted accuracies only."}

    def configure(self, data: str, *, distortions, intensities, limit, classes_per_unit, top_k, save_logits,
                  allow_incomplete) -> LaionCConfig:
        root = Path(data).expanduser().resolve()
        if not root.is_dir():
            raise DataError(f"LAION-C folder {root} does not exist; the layout is {LAYOUT}. Fetch it with: "
                            "robustlab data fetch laion-c")
        chosen = parse_distortions(distortions)
        levels = list(parse_severities(intensities if intensities is not None else "1-5"))
        folders = {str(Setting(d, lv)): setting_folder(root, d, lv) for d in chosen for lv in levels}
        for setting, folder in folders.items():
            if not folder.is_dir():
                raise DataError(f"LAION-C folder {folder} is missing; the layout is {LAYOUT}. Fetch the set (robustlab "
                                "data fetch laion-c) or leave it out with --distortions/--intensities.")
            foreign = sorted(set(class_folders(folder)) - set(SUPERCLASSES))
            if foreign:
                raise DataError(f"{folder} holds {', '.join(foreign[:3])}, which are not LAION-C superclasses "
                                f"({', '.join(SUPERCLASSES)}); the layout is {LAYOUT}.")
        limit = check_positive("limit", limit)
        per_unit = check_positive("classes_per_unit", classes_per_unit)
        top_k = min(check_positive("top_k", top_k), len(SUPERCLASSES))
        checked = check_released_settings(folders, list(SUPERCLASSES), allow_incomplete=bool(allow_incomplete),
                                          release="laion-c", what=f"the LAION-C tree {root}")
        return LaionCConfig(data=str(root), distortions=chosen, intensities=levels, class_map=checked.class_map,
                            limit=limit, classes_per_unit=per_unit, top_k=top_k, save_logits=bool(save_logits),
                            num_classes=1000, incomplete=checked.incomplete, subset=checked.subset)

    def plan(self, config: LaionCConfig):
        return folder_units(((s, setting_folder(config.data, s.shift, s.level)) for s in config.settings()),
                            classes_per_unit(config.limit, config.classes_per_unit))

    def samples(self, config: LaionCConfig, unit: Unit):
        return read_image_folder(unit.params["folder"], config.class_map, classes=unit.params["classes"],
                                 limit=config.limit)

    def predict(self, model, batch, config: LaionCConfig) -> dict[str, np.ndarray]:
        out = classify_batch(model, batch.stacked_inputs(model_device(model)), top_k=1, save_logits=True,
                             num_classes=1000)
        scores = superclass_scores(out["logits"])
        k = int(config.top_k)
        index = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        columns = {"top5_index": index.astype(np.int32),
                   "top5_score": np.take_along_axis(scores, index, axis=1).astype(np.float32)}
        if config.save_logits:
            columns["logits"] = out["logits"]
        return columns

    def metrics(self, config: LaionCConfig, predictions, related=None) -> list[MetricRow]:
        counts = setting_counts(predictions, {u: setting_of(u) for u in predictions})
        rows = list(error_rows(counts))
        accuracy = {s: 1 - e1 / n for s, (n, e1, _) in counts.items() if n}
        rows += [("accuracy", s, v) for s, v in accuracy.items()]
        complete = True
        for d in config.distortions:
            cells = [accuracy.get(f"{d}/{lv}") for lv in config.intensities]
            if all(c is not None for c in cells):
                rows.append(("mean_accuracy", d, float(np.mean(cells))))
            complete = complete and all(c is not None for c in cells)
        full = complete and config.distortions == list(LAION_C) and config.intensities == [1, 2, 3, 4, 5]
        if accuracy:
            rows.append(("mean_accuracy" if full else "mean_accuracy_subset", "", float(np.mean(list(accuracy.values())))))
        return rows


# --- its report section ------------------------------------------------------------------------------------


def section_laion_c(results: Sequence, context: ReportContext | None = None) -> Section:
    """One row per run (mean accuracy with its interval, and per distortion), and accuracy against
    intensity level per model."""
    sec = Section(FAMILY, "LAION-C (out-of-distribution distortions)",
                  "Superclass top-1 accuracy under LAION-C's 6 distortions (Li et al., ICML 2025), designed to be "
                  "out of distribution even for models trained on web-scale data, at 5 intensity levels. A 1,000-class "
                  "model's softmax probabilities are averaged over each of 16 superclasses' ImageNet classes, as the "
                  "authors score it; higher is better (chance is 1 in 16).",
                  ["model", "dataset", "mean accuracy % [95% CI]", *LAION_C, "run"], legend=CI_LEGEND + " (over all "
                  "images evaluated); per distortion: the mean accuracy over its intensity levels.")
    curves: dict[str, list[float]] = {}
    for r in results:
        t, s = metric_table(r), r.summary or {}
        total = sum(n for (m, setting), n in t.items() if m == "n_samples")
        mean = first_value(s, "mean_accuracy", "mean_accuracy_subset")
        head = Estimate.from_fraction(mean, total).percent() if mean is not None else "–"
        per = s.get("distortions") or {}
        sec.rows.append([r.model, short_path(r.dataset), head + ("" if s.get("mean_accuracy") is not None else " (subset)"),
                         *(pct((per.get(d) or {}).get("mean_accuracy")) for d in LAION_C), r.run_id[:10]])
        levels = []
        for lv in range(1, 6):
            found = [row["accuracy"].get(str(lv)) for row in per.values() if row.get("accuracy")]
            found = [v for v in found if v is not None]
            levels.append(100 * float(np.mean(found)) if found else np.nan)
        if per:
            curves[label(r)] = levels
        sec.notes += [f"{label(r)}: {n}" for n in r.notes]
    if curves:
        sec.figures.append(F.lines("laion-c-accuracy-by-intensity", "Accuracy by intensity level",
                                   "Superclass top-1 accuracy (%) averaged over the distortions evaluated, per intensity "
                                   "level (chance is 6.25 %).", list(range(1, 6)), curves,
                                   xlabel="intensity level", ylabel="accuracy (%)", ylim=(0, 100)))
    return sec


def headline_laion_c(result, results: Sequence = (), store=None) -> list[str]:
    """``mean acc 54.8`` (percent; "(subset)" when not all 30 settings were evaluated)."""
    s = result.summary or {}
    value = first_value(s, "mean_accuracy", "mean_accuracy_subset")
    return [] if value is None else [f"mean acc{'' if s.get('mean_accuracy') is not None else ' (subset)'} {pct(value)}"]


# --- its presentation: show text, report section and headline in one registered object ----------------------


@register_presentation
class LaionCPresentation(Presentation):
    """How ``laion-c`` runs are shown: superclass top-1 accuracy per distortion and intensity level; in the
    report, :func:`section_laion_c` and :func:`headline_laion_c`."""

    name = FAMILY
    title = "LAION-C (out-of-distribution distortions)"
    section_builder = staticmethod(section_laion_c)
    headline_builder = staticmethod(headline_laion_c)
    headline = (HeadlineMetric("mean_accuracy", "mean acc.", "mean_accuracy_subset"),)

    def notes(self, config: LaionCConfig, metrics: Iterable[MetricRow]) -> list[str]:
        notes = layout_notes(config.subset, config.incomplete)
        if not any(m == "mean_accuracy" and s == "" for m, s, _ in metrics):
            notes.append("the mean accuracy over the 6 distortions at intensity levels 1-5 needs all 30 settings; "
                         "mean_accuracy_subset averages the ones evaluated.")
        notes.append("superclass top-1: the mean softmax probability of each superclass's ImageNet classes decides, "
                     "as in the authors' evaluation (laionc/evaluation.py).")
        return notes

    def summary(self, config: LaionCConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        t = {(m, s): v for m, s, v in metrics}
        out: dict[str, Any] = {**layout_summary(config.subset, config.incomplete), "distortions": {
            d: {"accuracy": {str(lv): t.get(("accuracy", f"{d}/{lv}")) for lv in config.intensities},
                "mean_accuracy": t.get(("mean_accuracy", d))} for d in config.distortions}}
        for key in ("mean_accuracy", "mean_accuracy_subset"):
            if t.get((key, "")) is not None:
                out[key] = t[(key, "")]
        return out

    def text(self, config: LaionCConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        levels = list(config.intensities)
        rows = [[d, *(pct(row["accuracy"].get(str(lv))) for lv in levels), pct(row.get("mean_accuracy"))]
                for d, row in (summary.get("distortions") or {}).items()]
        lines = ["LAION-C: superclass top-1 accuracy (%) per intensity level"]
        lines += text_table(["distortion", *(f"i{lv}" for lv in levels), "mean"], rows, first_width=24)
        lines.append("")
        for key, text in (("mean_accuracy", "mean accuracy (leaderboard)"), ("mean_accuracy_subset", "mean accuracy (subset)")):
            if summary.get(key) is not None:
                lines.append(f"{text:<34}{pct(summary[key]):>7}")
        return lines
