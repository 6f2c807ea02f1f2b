"""How the perturbation-sequence runs (``imagenet-p``, ``perturbed``) are shown: what each rate divides by
and why one is n/a, which perturbations each mean averages, and the ``robustlab show`` layout (flip
probability, flip rate, top-5 distance and its rate per folder and difficulty). Their summary is left
empty on purpose (``show`` prints the table from the metric rows; :func:`stability_summary` is the
structured view). The report's section extends these (:mod:`robustlab.report.section_perturbation`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..engine.presentation import HeadlineMetric, MetricRow, Presentation
from ..metrics.stability import TEST_PERTURBATIONS
from ..perturbations import get_perturbation, list_perturbations
from .corruption_presentation import PUBLISHED_ALEXNET, own_data_label, own_data_note
from .perturbation_config import PerturbedConfig, SequenceConfig, parse_folder
from .perturbation_metrics import difficulty_applies


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
    aggregates = [(k, v) for k, v in summary.items() if k != "perturbations" and "_terms" not in k.partition("/")[0]]
    if aggregates:
        lines.append("")
        for key, value in sorted(aggregates, key=lambda kv: (kv[0].rpartition("/")[2], kv[0])):
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


def difficulty_coverage_notes(strides: Iterable[int], metrics: Iterable[MetricRow]) -> list[str]:
    """One note per stride above 1 naming the perturbations its mFR / mT5D average."""
    metrics = list(metrics)
    notes = []
    for d in strides:
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


def stability_notes(metrics: Iterable[MetricRow], *, strides: Sequence[int], setting: str = "imagenet",
                    baseline_run: str | None = None) -> list[str]:
    """What the rates divide by, which mean averages which perturbations, which rate is n/a and why."""
    metrics = list(metrics)
    names = {m for m, _, _ in metrics}
    by_run = baseline_run
    if setting != "imagenet" and not by_run:
        return ["FR, mFR and the T5D ratios use ImageNet's AlexNet baseline and are not reported in the cifar "
                "setting; compare flip probabilities and top-5 distances, or give baseline_run."]
    source = "this run itself (FR = 100 by construction)" if by_run == "self" else f"stored run {by_run}"
    notes = [f"FR and the T5D ratios are normalised by {source} (stride-1 values)."] if by_run else []
    if "mfr" not in names:
        missing = [p for p in TEST_PERTURBATIONS if not any(s.startswith(f"{p}/") for _, s, _ in metrics)]
        if missing:
            notes.append(f"mFR needs the 10 test perturbations; missing {', '.join(missing)}. mfr_subset is the mean "
                         "FR over those evaluated.")
    if any(d != 1 for d in strides):
        notes.append("rates at stride 2+ are normalised by the baseline's stride-1 (difficulty 1) values"
                     + (" (AlexNet publishes only those)." if not by_run else "."))
        notes += difficulty_coverage_notes(strides, metrics)
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


class SequenceShow(Presentation):
    """What ``imagenet-p`` and ``perturbed`` runs share: the family, its title and headline, the notes
    and the layout."""

    family = "perturbation"
    title = "Perturbation stability (ImageNet-P)"
    headline = (HeadlineMetric("mfr", "mFR", "mfr_subset", compare=True),
                HeadlineMetric("mt5d", "mT5D", "mt5d_subset"))

    def published_baseline(self, config: SequenceConfig) -> str | None:
        return PUBLISHED_ALEXNET if config.setting in (None, "imagenet") else None

    def notes(self, config: SequenceConfig, metrics: Iterable[MetricRow]) -> list[str]:
        return stability_notes(metrics, strides=config.strides, setting=config.setting, baseline_run=config.baseline_run)

    def text(self, config: SequenceConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        return stability_text(metrics)

    def summary(self, config: SequenceConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        # Left empty on purpose: the engine's text table prints every metric row when the summary
        # is empty; the structured view is stability_summary(result.metrics).
        return {}


class ImageNetPShow(SequenceShow):
    """``imagenet-p``: the released videos and CIFAR-10-P arrays."""

    name = "imagenet-p"


class PerturbedShow(SequenceShow):
    """``perturbed``: the user's own folder; its rates divide by AlexNet's ImageNet-P values unless a
    baseline run is given, which makes them compare with nothing published."""

    name = "perturbed"

    def comparability(self, config: PerturbedConfig) -> str | None:
        return own_data_label(config.baseline_run, config.setting)

    def notes(self, config: PerturbedConfig, metrics: Iterable[MetricRow]) -> list[str]:
        metrics = list(metrics)
        notes = super().notes(config, metrics)
        if self.comparability(config) and any(m == "flip_rate" for m, _, _ in metrics):
            notes.insert(0, own_data_note("FR, mFR and the T5D ratios (mT5D)", config.data))
        return notes
