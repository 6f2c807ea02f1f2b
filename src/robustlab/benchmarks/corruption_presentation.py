"""How the common-corruption runs (``imagenet-c``, ``corrupted``) are shown: their notes (why a ratio is
n/a, what a subset or an on-the-fly run measured), their summary (``robustlab show --json``) and the
``robustlab show`` layout (CE, relative CE and the error per severity, in percent, as the paper). The
report's section and headline extend these presentations (:mod:`robustlab.report.section_corruption`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..data.releases.consistency import layout_notes, layout_summary
from ..engine.presentation import HeadlineMetric, MetricRow, Presentation
from ..metrics.corruption import BENCHMARK_CORRUPTIONS, N_SEVERITIES, flat_error
from .corruption_config import SELF, CorruptedConfig, ImageNetCConfig

#: How ratios are labelled when a benchmark on a user's own data (``corrupted``, ``perturbed``)
#: divides by a built-in published baseline: AlexNet's ImageNet-C / ImageNet-P numbers.
NOT_COMPARABLE_LABEL = "vs published AlexNet (ImageNet), not comparable"
#: What the ratios of the ImageNet-C and ImageNet-P families divide by without a baseline run.
PUBLISHED_ALEXNET = "published AlexNet"


def own_data_label(baseline_run: str | None, setting: str = "imagenet") -> str | None:
    """:data:`NOT_COMPARABLE_LABEL` for a run on the user's own data (``corrupted``, ``perturbed``:
    their :meth:`~robustlab.engine.Benchmark.comparability`) whose CE / FR / T5D ratios divide by
    the published AlexNet (ImageNet) numbers, else None.

    That is a run without ``baseline_run`` (and, for sequences, in the ImageNet setting):
    AlexNet never saw that data, so the ratio is not the paper's mCE / mFR and compares with
    nothing published. A baseline model evaluated on the same data (``--baseline-run``) makes
    the ratios comparable across models.
    """
    if baseline_run:
        return None
    if setting != "imagenet":
        return None  # the cifar setting reports no ratios
    return NOT_COMPARABLE_LABEL

#: The ImageNet-C family's presentation (``imagenet-c``, ``corrupted``).
CORRUPTION_FAMILY = "corruption"
CORRUPTION_TITLE = "Common corruptions (ImageNet-C)"
CORRUPTION_HEADLINE = (
    HeadlineMetric("clean_error", "clean error", compare=True),
    HeadlineMetric("mce", "mCE", "mce_subset", compare=True),
    HeadlineMetric("relative_mce", "rel. mCE", "relative_mce_subset"),
)

def own_data_note(kind: str, data: str) -> str:
    """The note explaining :data:`NOT_COMPARABLE_LABEL` for ``kind`` (e.g. "CE, mCE and relative mCE")."""
    return (f"{kind} are {NOT_COMPARABLE_LABEL}: the errors on {data} are divided by AlexNet's published "
            "ImageNet numbers, which measure other images. Evaluate a baseline model on the same data and give "
            "--baseline-run <its run id> (or -O baseline_run=self) for ratios that compare models.")

def ce_baseline_text(own: str | None, baseline_run: str | None, baseline: str, *, cifar: bool = False) -> str:
    """What a corruption run's CE divides by, for ``summary["ce_baseline"]`` (JSON, ``show``)."""
    if baseline_run == SELF:
        return "this run itself (CE = 100 by construction)"
    if baseline_run:
        return f"stored run {baseline_run} on the same data"
    if cifar:
        return "none: CE is not reported for CIFAR-10-C"
    return own or f"published {baseline} errors on ImageNet-C"

def on_the_fly_note(config: ImageNetCConfig) -> str:
    """What an ``imagenet-c --on-the-fly`` run measured and how it differs from the released files."""
    where = ("after batching, on the model's device (torch backend; within the parity bounds of the numpy "
             "kernels, see docs/torch-backend.md)" if config.corruption_backend == "torch"
             else "in the loading workers (numpy backend, the faithful kernels)")
    geometry = ("resize 256 and centre crop 224 (images already 224x224 kept as they are: --keep-input-size, "
                "not the reference)" if config.keep_input_size else "resize 256, centre crop 224")
    return (f"ImageNet-C made on the fly from the clean images in {config.data}: {geometry}, "
            f"then each corruption {where}, seed {config.seed}. Unlike the released files, the images are not "
            "JPEG-compressed (quality 85) and each image's noise comes from its own seed: errors are close to those on "
            "the released files, not bit-identical.")


def _points(before: float, after: float) -> str:
    """``"37.3 -> 36.1 %"``: an error before and after, in percent."""
    return f"{100 * before:.1f} → {100 * after:.1f} %"


def relative_ce_reasons(metrics: Iterable[MetricRow]) -> dict[str, str]:
    """``{corruption: why its relative CE is n/a}`` from a run's stored rows (corruptions with a
    stored baseline change and no relative CE). The reason names the baseline's error before
    and after, and its sampling margin."""
    table = {(m, s): v for m, s, v in metrics}
    base_clean = table.get(("relative_ce_baseline_clean_error", ""))
    out = {}
    for (m, c), change in table.items():
        if m != "relative_ce_baseline_change" or ("relative_ce", c) in table or base_clean is None:
            continue
        if ("relative_ce_model_flat", c) in table:
            errors = [table.get(("error", f"{c}/{s}")) for s in range(1, N_SEVERITIES + 1)]
            why = flat_error(errors, table[("clean_error", "")], int(table[("relative_ce_model_flat", c)])) \
                if None not in errors and ("clean_error", "") in table else None
            out[c] = why or "this model's error does not move with severity"
            continue
        margin = table.get(("relative_ce_baseline_margin", c), 0.0)
        moved = _points(base_clean, base_clean + change)
        if change < 0:
            out[c] = f"the baseline's error falls under it ({moved}), so there is no rise to divide by"
        elif change == 0:
            out[c] = f"the baseline's error does not change under it ({moved})"
        else:
            out[c] = (f"the baseline's error rises only {100 * change:.1f} points ({moved}), within its sampling "
                      f"error (±{100 * margin:.1f} points, 95 %)")
    return dict(sorted(out.items(), key=lambda kv: _corruption_order(kv[0])))


def _corruption_order(name: str) -> tuple[int, str]:
    from ..metrics.corruption import ALL_CORRUPTIONS

    return (ALL_CORRUPTIONS.index(name) if name in ALL_CORRUPTIONS else len(ALL_CORRUPTIONS), name)


def ce_reasons(metrics: Iterable[MetricRow]) -> dict[str, str]:
    """``{corruption: why its CE is n/a}``: the baseline's error there is within its sampling error."""
    table = {(m, s): v for m, s, v in metrics}
    return {c: ("the baseline makes no errors there" if v <= 0 else
                f"the baseline's error there ({100 * v:.1f} %) is within its sampling error "
                f"(±{100 * table.get(('ce_baseline_margin', c), 0.0):.1f} points, 95 %)")
            for (m, c), v in sorted(table.items(), key=lambda kv: _corruption_order(kv[0][1]))
            if m == "ce_baseline_error"}


def relative_ce_direction_notes(metrics: Iterable[MetricRow]) -> list[str]:
    """For defined relative CE terms outside 0-1000 %: which model's error moved, and which way."""
    table = {(m, s): v for m, s, v in metrics}
    clean, base_clean = table.get(("clean_error", "")), table.get(("relative_ce_baseline_clean_error", ""))
    notes = []
    for (m, c), value in sorted(table.items()):
        if m != "relative_ce" or 0 <= value <= 10:
            continue
        mine, base = table.get(("mean_error", c)), table.get(("relative_ce_baseline_change", c))
        if mine is None or clean is None or base is None or base_clean is None:
            notes.append(f"relative CE of {c} is {100 * value:.1f} %, outside 0-1000 %.")
            continue
        theirs = _points(base_clean, base_clean + base)
        if value < 0:
            notes.append(f"relative CE of {c} is {100 * value:.1f} %: this model's error falls under it "
                         f"({_points(clean, mine)}) while the baseline's rises ({theirs}); below 0 means the "
                         "corruption helps this model.")
        else:
            notes.append(f"relative CE of {c} is {100 * value:.0f} %: this model's error rises "
                         f"{100 * (mine - clean):.1f} points ({_points(clean, mine)}) while the baseline's rises only "
                         f"{100 * base:.1f} ({theirs}).")
    return notes


def corruption_notes(metrics: Iterable[MetricRow], *, clean_hint: str, cifar: bool = False) -> list[str]:
    """Why mCE is a subset's, which CE and relative CE are n/a and why, where a relative CE is outside
    0-1000 %, and why relative mCE is missing (``clean_hint``: how to get a clean error)."""
    metrics = list(metrics)
    names = {(m, s) for m, s, _ in metrics}
    table = {(m, s): v for m, s, v in metrics}
    notes = []
    if cifar:
        return ["CE and mCE use ImageNet's AlexNet baseline and are not reported for CIFAR-10-C; "
                "compare the per-severity errors and their mean instead."]
    have = [c for c in BENCHMARK_CORRUPTIONS if ("ce", c) in names or ("ce_baseline_error", c) in names]
    if ("mce", "") not in names and ("mce_terms", "") not in names:
        missing = [c for c in BENCHMARK_CORRUPTIONS if c not in have]
        if missing:
            notes.append(f"mCE needs the 15 benchmark corruptions at severities 1-5; {len(have)} complete, missing "
                         f"{', '.join(missing)}. mce_subset is the mean CE over the complete ones.")
    ce_na = ce_reasons(metrics)
    if ce_na:
        notes.append("CE n/a for " + "; ".join(f"{c}: {why}" for c, why in ce_na.items())
                     + ". mCE averages the defined terms only.")
    rel_na = relative_ce_reasons(metrics)
    if rel_na:
        key = "relative_mce" if ("relative_mce_terms", "") in names else "relative_mce_subset"
        used = table.get((f"{key}_terms", ""))
        evaluated = len([c for c in BENCHMARK_CORRUPTIONS if ("relative_ce_baseline_change", c) in names])
        notes.append("relative CE n/a for " + "; ".join(f"{c}: {why}" for c, why in rel_na.items()) + "."
                     + (f" Relative mCE averages the other {int(used)} of {evaluated} benchmark corruptions."
                        if used is not None and used > 0 else " No benchmark corruption has a defined relative CE."))
    notes += relative_ce_direction_notes(metrics)
    if ("clean_error", "") not in names:
        notes.append(f"relative mCE unavailable: no clean error for this run ({clean_hint}).")
    return notes


def corruption_summary_dict(config: ImageNetCConfig | CorruptedConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
    """The run's summary (``--json``, ``show``): per corruption the errors, CE and relative CE
    (None with ``ce_na`` / ``relative_ce_na`` saying why where undefined), and the means, with
    ``relative_mce_terms`` (and ``mce_terms`` when a CE is undefined): how many terms they average."""
    metrics = list(metrics)
    table: dict[tuple[str, str], float] = {(m, s): v for m, s, v in metrics}
    rel_na, ce_na = relative_ce_reasons(metrics), ce_reasons(metrics)
    corruptions = {}
    for c in config.corruptions:
        sev = {s: table.get(("error", f"{c}/{s}")) for s in config.severities}
        corruptions[c] = {"errors": {str(s): v for s, v in sev.items()}, "mean_error": table.get(("mean_error", c)),
                          "ce": table.get(("ce", c)), "relative_ce": table.get(("relative_ce", c))}
        if c in ce_na:
            corruptions[c]["ce_na"] = ce_na[c]
        if c in rel_na:
            corruptions[c]["relative_ce_na"] = rel_na[c]
    out = {"clean_error": table.get(("clean_error", "")), "corruptions": corruptions}
    for key in ("mce", "relative_mce", "mean_corruption_accuracy"):
        out[key] = table.get((key, ""))
        if table.get((f"{key}_subset", "")) is not None:
            out[f"{key}_subset"] = table[(f"{key}_subset", "")]
    for key in ("mce", "relative_mce"):
        for form in (key, f"{key}_subset"):
            if (f"{form}_terms", "") in table:
                out[f"{form}_terms"] = int(table[(f"{form}_terms", "")])
                out[f"{form}_of"] = len([c for c in BENCHMARK_CORRUPTIONS if c in corruptions and (
                    ("relative_ce_baseline_change", c) in table if key == "relative_mce"
                    else (("ce", c) in table or ("ce_baseline_error", c) in table))])
    if rel_na and out.get("relative_mce") is None and out.get("relative_mce_subset") is None:
        out["relative_mce_na"] = "no benchmark corruption has a defined relative CE"
    return out


#: The legend of ``show``'s corruption table and the report's: what the columns divide by.
CE_LEGEND = ("CE = the model's mean error under a corruption / the baseline's; relCE = the model's rise in error "
             "over its clean error / the baseline's rise; both in %, 100 = the baseline; n/a = undefined (the "
             "baseline's number is within its sampling error; the notes say why); s1-s5 = top-1 error (%) per severity.")


def corruption_text(config: ImageNetCConfig | CorruptedConfig, summary: Mapping[str, Any]) -> list[str]:
    """``robustlab show`` layout: per corruption CE, relative CE and the error per severity, then
    clean error, mCE, relative mCE and mean corruption accuracy (all in percent). Undefined
    ratios print ``n/a`` with the reason, never a number."""
    from ..engine.result_text import pct, text_table

    def ratio(row: Mapping[str, Any], key: str) -> str:
        return "n/a" if row.get(f"{key}_na") else pct(row.get(key))

    lines: list[str] = []
    corruptions = summary.get("corruptions") or {}
    if corruptions:
        sev = list(config.severities)
        rows = [[name, ratio(row, "ce"), ratio(row, "relative_ce")]
                + [pct(row["errors"].get(str(s))) for s in sev] + [pct(row.get("mean_error"))]
                for name, row in corruptions.items()]
        lines += ["errors and corruption errors (%)"]
        lines += text_table(["corruption", "CE", "relCE"] + [f"s{s}" for s in sev] + ["mean"], rows, first_width=18)
        lines += [f"legend: {CE_LEGEND}", ""]
    labels = {"clean_error": "clean error", "mce": "mCE", "mce_subset": "mCE (subset)",
              "relative_mce": "relative mCE", "relative_mce_subset": "relative mCE (subset)",
              "mean_corruption_accuracy": "mean corruption accuracy",
              "mean_corruption_accuracy_subset": "mean corruption accuracy (subset)"}
    for key, label in labels.items():
        if summary.get(key) is not None:
            terms = summary.get(f"{key}_terms")
            of = f"  ({terms} of {summary.get(f'{key}_of')} corruptions: the defined terms)" if (
                terms is not None and terms != summary.get(f"{key}_of")) else ""
            lines.append(f"{label:<34}{pct(summary[key]):>7}{of}")
    if summary.get("relative_mce_na"):
        lines.append(f"{'relative mCE':<34}{'n/a':>7}  ({summary['relative_mce_na']})")
    if summary.get("ce_baseline"):
        lines.append(f"{'CE normalised by':<34}{summary['ce_baseline'].removeprefix('vs ')}")
    return lines


class CorruptionShow(Presentation):
    """What ``imagenet-c`` and ``corrupted`` runs share: their family, its title and headline."""

    family = CORRUPTION_FAMILY
    title = CORRUPTION_TITLE
    headline = CORRUPTION_HEADLINE


class ImageNetCShow(CorruptionShow):
    """``imagenet-c``: the released layouts and ImageNet-C made on the fly."""

    name = "imagenet-c"

    def published_baseline(self, config: ImageNetCConfig) -> str | None:
        return None if config.layout == "cifar" else PUBLISHED_ALEXNET

    def notes(self, config: ImageNetCConfig, metrics: Iterable[MetricRow]) -> list[str]:
        clean_data = "<CIFAR-10 root>" if config.layout == "cifar" else "<ImageNet val folder>"
        notes = corruption_notes(metrics, clean_hint="ImageNet-C has no clean split: give --clean-data "
                                 f"{clean_data} or --clean-run <run id>", cifar=config.layout == "cifar")
        if config.on_the_fly:
            notes.insert(0, on_the_fly_note(config))
        return layout_notes(config.subset, config.incomplete) + notes

    def summary(self, config: ImageNetCConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        out = {**corruption_summary_dict(config, metrics),
               "ce_baseline": ce_baseline_text(self.comparability(config), config.baseline_run, config.baseline,
                                               cifar=config.layout == "cifar"),
               **layout_summary(config.subset, config.incomplete)}
        if config.on_the_fly:
            out["on_the_fly"] = {"corruption_backend": config.corruption_backend, "seed": config.seed,
                                 "profile": config.profile}
        return out

    def text(self, config: ImageNetCConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        lines = corruption_text(config, summary)
        fly = summary.get("on_the_fly")
        if fly:
            lines.append(f"{'corrupted on the fly':<34}{fly['corruption_backend']} backend, seed {fly['seed']}")
        return lines


class CorruptedShow(CorruptionShow):
    """``corrupted``: the user's own folder; its ratios divide by AlexNet's ImageNet-C errors unless a
    baseline run is given, which makes them compare with nothing published."""

    name = "corrupted"

    def comparability(self, config: CorruptedConfig) -> str | None:
        return own_data_label(config.baseline_run)

    def published_baseline(self, config: CorruptedConfig) -> str | None:
        return PUBLISHED_ALEXNET

    def notes(self, config: CorruptedConfig, metrics: Iterable[MetricRow]) -> list[str]:
        metrics = list(metrics)
        clean_hint = ("every clean sample was skipped (see the skipped samples)" if config.clean
                      else "the run was made with clean=False")
        notes = corruption_notes(metrics, clean_hint=clean_hint)
        if self.comparability(config) and any(m == "ce" for m, _, _ in metrics):
            notes.insert(0, own_data_note("CE, mCE and relative mCE", config.data))
        return notes

    def summary(self, config: CorruptedConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        return {**corruption_summary_dict(config, metrics),
                "ce_baseline": ce_baseline_text(self.comparability(config), config.baseline_run, config.baseline)}

    def text(self, config: CorruptedConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        return corruption_text(config, summary)
