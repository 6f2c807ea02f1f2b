"""Report section: interventions beside the plain model they change (wrappers, fine-tuning).

A run's model is an *intervention* on a base model when its name carries a wrapper chain
(``torchvision:resnet50 [wrap=clahe+ten-crop]``, see :mod:`robustlab.models.wrappers`) or when
it is a ``finetuned:`` model whose manifest (read from its folder when present) names the base
spec and the recipe. For every intervention the table shows the metrics the registered
benchmark families mark for comparison (:attr:`robustlab.engine.HeadlineMetric.compare`: clean
error and mCE of corruption runs, mFR of perturbation runs, pm-0 and pm-k accuracy of video
runs), each beside the plain base model's run on the same benchmark and data, with the change
in points. Nothing is judged: the numbers say what happened.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import figures as F
from .section_base import ReportContext, Section, register_comparison, short_path



def compared_metrics() -> list[tuple[str, str, object]]:
    """``[(column, family, HeadlineMetric)]``: the metrics the registered families mark for the
    comparison, in the order their benchmarks were registered."""
    from ..engine.benchmark import BENCHMARKS, list_benchmarks
    from ..engine.presentation import presentation_class
    from ..errors import RobustlabError

    out, seen = [], set()
    for name in list_benchmarks():
        try:
            shown = presentation_class(BENCHMARKS.get(name))
        except RobustlabError:  # a plugin that does not load: its runs are shown elsewhere
            continue
        family = shown.family_name()
        for metric in shown.headline:
            if family and metric.compare and (family, metric.name) not in seen:
                seen.add((family, metric.name))
                out.append((metric.label, family, metric))
    return out


def describe_recipe(manifest: dict) -> str:
    """A short text of a fine-tuning recipe (``fine-tuned: 5 epochs, vid30, augment paper-noise``)."""
    recipe = manifest.get("recipe", {})
    parts = [f"{recipe.get('epochs', '?')} epoch{'s' if recipe.get('epochs') != 1 else ''}"]
    if recipe.get("subset"):
        parts.append(f"classes {short_path(str(recipe['subset']), 24)}")
    augment = recipe.get("augment") or {}
    if augment:
        parts.append(f"augment {augment.get('spec') or 'custom'}")
    if recipe.get("train") == "head":
        parts.append("head only")
    return "fine-tuned: " + ", ".join(parts)


def intervention_of(model: str) -> tuple[str, str | None]:
    """``(base model name, intervention label or None)`` of a stored model name."""
    from ..models.wrappers import split_wrapped_name

    name, chain = split_wrapped_name(model)
    wrap = f"wrap {chain}" if chain else None
    if name.startswith("finetuned:"):
        from ..errors import RobustlabError
        from ..train.finetuned import read_manifest, split_spec

        folder, _ = split_spec(name[len("finetuned:"):].split(" [")[0])
        try:
            manifest = read_manifest(folder)
        except RobustlabError:
            return model, None  # its folder is not here: shown in the family sections only
        label = describe_recipe(manifest)
        if manifest.get("wrap"):
            label += f", through {manifest['wrap']}"
        return manifest["base"], label + (f" + {wrap}" if wrap else "")
    return name, wrap


def metric_value(result, metric) -> tuple[float, bool] | None:
    """``(value, is a subset)`` of a :class:`~robustlab.engine.HeadlineMetric` in the run, or None."""
    return metric.value(result.metrics)


def _cell(value: tuple[float, bool] | None, reference: tuple[float, bool] | None) -> str:
    if value is None:
        return "–"
    text = f"{100 * value[0]:.1f}" + ("*" if value[1] else "")
    if reference is not None:
        text += f" ({100 * (value[0] - reference[0]):+.1f})"
    return text


@register_comparison("interventions")
def interventions_section(results: Sequence, context: ReportContext | None = None) -> Section | None:
    """The intervention table and a figure of the changes, or None when no run is an intervention."""
    from .section_base import family_of

    plain: dict[tuple[str, str, str], object] = {}
    labelled = []
    for r in results:
        base, label = intervention_of(r.model)
        if label is None:
            plain.setdefault((r.model, r.benchmark, r.dataset), r)
        else:
            labelled.append((base, label, r))
    if not labelled:
        return None
    metrics = compared_metrics()
    families = {fam for _, fam, _ in metrics}
    variants: dict[tuple[str, str], dict[str, tuple]] = {}
    for base, label, r in labelled:
        fam = family_of(r)
        if fam in families:
            variants.setdefault((base, label), {}).setdefault(fam, (r, plain.get((base, r.benchmark, r.dataset))))
    if not variants:
        return None
    sec = Section("interventions", "Interventions beside their plain model",
                  "Each intervention (a preprocessing wrapper, or fine-tuning with a recipe) next to the plain base "
                  "model, on the same benchmark and data. Values in %, the change from the plain model in points in "
                  "brackets; lower clean error, mCE and mFR, and higher pm-k accuracy, mean more robust.",
                  ["model", "intervention", *[m for m, _, _ in metrics], "benchmarks"],
                  legend="Values in %; (±x) = the change from the plain model in percentage points; mCE and mFR are "
                         "% of each run's baseline (the corruption and perturbation sections name it); * = over the "
                         "corruptions or perturbations evaluated, not all 15 or 10.")
    deltas: dict[str, list[float]] = {}
    shown_plain: set[str] = set()
    for (base, label), by_family in sorted(variants.items()):
        if base not in shown_plain:
            shown_plain.add(base)
            refs = {fam: ref for (b, _), fams in variants.items() if b == base for fam, (_, ref) in fams.items() if ref}
            sec.rows.append([base, "none (plain)", *[
                _cell(metric_value(refs[fam], names), None) if fam in refs else "–" for _, fam, names in metrics],
                ", ".join(sorted({refs[f].benchmark for f in refs})) or "–"])
        cells, series = [], []
        for column, fam, names in metrics:
            run, ref = by_family.get(fam, (None, None))
            value = metric_value(run, names) if run is not None else None
            reference = metric_value(ref, names) if ref is not None else None
            cells.append(_cell(value, reference))
            series.append(100 * (value[0] - reference[0]) if value is not None and reference is not None else float("nan"))
        sec.rows.append([base, label, *cells, ", ".join(sorted({run.benchmark for run, _ in by_family.values()}))])
        deltas[f"{short_path(base, 24)} · {label}"] = series
        for fam, (run, ref) in by_family.items():
            if ref is None:
                sec.notes.append(f"{label} on {base}: no plain run of {run.benchmark} on "
                                 f"{short_path(run.dataset)} to compare with; evaluate the plain model on it.")
    if any(v == v for values in deltas.values() for v in values):  # at least one defined change
        sec.figures.append(F.bar_groups(
            "intervention-changes", "Change from the plain model",
            "Change of each metric (points) from the plain base model on the same benchmark and data; for clean "
            "error, mCE and mFR below zero is better, for pm-k accuracy above zero.",
            [m for m, _, _ in metrics], deltas, ylabel="change (points)", reference=0.0, reference_label="plain"))
    if any("*" in cell for row in sec.rows for cell in row):
        sec.notes.append("* over the benchmark corruptions or perturbations evaluated (a subset), not all 15 or 10.")
    return sec


__all__ = ["describe_recipe", "intervention_of", "interventions_section", "metric_value"]
