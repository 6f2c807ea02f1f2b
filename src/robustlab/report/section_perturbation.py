"""Report section of the perturbation-sequence benchmarks (``imagenet-p``, ``perturbed``).

Table: per run, mFR and mT5D (the mean over the 10 test perturbations of flip probability and
top-5 distance, each normalised by AlexNet's; "of n" marks a mean over fewer perturbations)
and the mean flip probability. Figures (stride 1, as in the paper): flip probability, flip
rate and top-5 distance per perturbation, with AlexNet's published values as reference; with
the store at hand, the sequences that flip most; and a grid of frames of each perturbation
for one image, read through the run's own sample reader (the frames the model saw).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..benchmarks.corruption_presentation import NOT_COMPARABLE_LABEL, PUBLISHED_ALEXNET
from ..benchmarks.perturbation_presentation import ImageNetPShow, PerturbedShow
from ..engine.presentation import register_presentation
from ..errors import RobustlabError
from . import figures as F
from .collect import metric_table
from .examples import thumbnail
from .section_base import (ReportContext, Section, benchmark_of, common_denominator, comparability, labelled,
                           presentation, ratio_denominator, run_config, run_labels, short_path)

#: Frames per perturbation in the example grid, and sequences in the "flip most" figure.
EXAMPLE_FRAMES = 6
MOST_FLIPPING = 12
STRIDE = "stride-1"


def per_perturbation(result, name: str, stride: str = STRIDE) -> dict[str, float]:
    """``{folder: value}`` of one stored metric at one stride (``flip_probability`` etc.)."""
    suffix = f"/{stride}"
    return {s[:-len(suffix)]: v for m, s, v in result.metrics if m == name and s.endswith(suffix)}


def mean_rates(result) -> dict[str, tuple[float, int | None]]:
    """``{"mFR": (value, None or n perturbations), "mT5D": ...}``: full-benchmark values, else the
    subset's; n counts the perturbations averaged when fewer than the 10 (a subset, or rates
    undefined because the baseline's value is within its sampling error)."""
    t = metric_table(result)
    n_fr = len(per_perturbation(result, "flip_rate"))
    n_t5 = len(per_perturbation(result, "top5_distance_rate"))
    out = {}
    for label, name, n in (("mFR", "mfr", n_fr), ("mT5D", "mt5d", n_t5)):
        for key in (name, f"{name}_subset"):
            if (key, "") in t:
                used = t.get((f"{key}_terms", ""), n)
                out[label] = (t[(key, "")], None if key == name and used == 10 else int(used))
                break
    return out


def _rate_text(value: tuple[float, int | None] | None) -> str:
    if value is None:
        return "–"
    v, n = value
    return f"{100 * v:.1f}" + (f" ({n} of 10)" if n is not None else "")


def divides_by_published(result) -> bool:
    """Whether a run divides by its benchmark's published baseline on the data that baseline was
    measured on (ImageNet-P itself: not the user's own images, not a baseline run)."""
    shown, config = presentation(result), run_config(result)
    return (shown is not None and config is not None and not config.baseline_run and not shown.comparability(config)
            and shown.published_baseline(config) is not None)


def published_reference(results: Sequence) -> bool:
    """Whether the published AlexNet ImageNet-P bars belong in the figures: some run divides by
    them on ImageNet-P data itself (not on the user's own images, not by a baseline run)."""
    return any(divides_by_published(r) for r in results)


def mean_flip_probability(result) -> float | None:
    fp = per_perturbation(result, "flip_probability")
    return float(np.mean(list(fp.values()))) if fp else None


def stability_headline(result, results: Sequence = (), store=None) -> list[str]:
    """``mFR 58.0; mT5D 78.3 vs <baseline>`` (or the subset's, marked), else the mean flip probability.

    Ratios of a ``perturbed`` run normalised by AlexNet's published ImageNet-P numbers carry
    the label "vs published AlexNet (ImageNet), not comparable"."""
    rates = mean_rates(result)
    own = comparability(result)
    parts = [labelled(f"{k} {_rate_text(v)}", own) for k, v in rates.items()]
    fp = mean_flip_probability(result)
    if not parts and fp is not None:
        parts.append(f"mean flip probability {100 * fp:.2f}%")
    if parts and parts[0].startswith("mFR") and not own:
        denominator = ratio_denominator(result, results, store)
        if denominator:
            parts[-1] += f" vs {denominator}"
    return parts


# --- examples and the sequences that flip most ------------------------------------------------------


def perturbation_frames(result, frames: int = EXAMPLE_FRAMES
                        ) -> tuple[list[str], list[list[np.ndarray]], list[list[int]], list[int]]:
    """Frames of the first sequence of each perturbation folder of a run, as the run read them.

    Returns ``(folders, rows of thumbnails, frame indices per row, sequence length per row)``;
    each row's indices are spread evenly over its own sequence (first and last included):
    sequences of different perturbations may have different lengths (CIFAR-10-P: translate 16
    frames, motion blur 21, the others 31).
    """
    bench, config = benchmark_of(result), run_config(result)
    if bench is None or config is None:
        raise RobustlabError(f"run {result.run_id} is of a benchmark this robustlab does not know: no frames to show.")
    first_units = {}
    for unit in bench.plan(config):
        first_units.setdefault(str(unit.setting), unit)
    folders, rows, picked, lengths = [], [], [], []
    for folder, unit in first_units.items():
        samples = bench.samples(config, unit)
        if len(samples) == 0:
            continue
        seq = samples.read(0)
        chosen = np.unique(np.linspace(0, len(seq) - 1, frames).round().astype(int)).tolist()
        folders.append(folder)
        rows.append([thumbnail(np.asarray(seq[i])) for i in chosen])
        picked.append(chosen)
        lengths.append(len(seq))
    return folders, rows, picked, lengths


EXAMPLES_TEXT = ("noise sequences start from the clean frame and redraw the noise in every frame, the others change "
                 "the image gradually.")


def examples_grid(result) -> F.Figure | None:
    try:
        folders, rows, picked, lengths = perturbation_frames(result)
    except (RobustlabError, OSError, ValueError):
        return None
    if not rows:
        return None
    width = max(len(r) for r in rows)
    if len({tuple(p) for p in picked}) == 1:  # every sequence as long: one header of frame numbers
        return F.image_grid("perturbation-examples", "Examples: perturbation sequences",
                            f"Frames {', '.join(map(str, picked[0]))} (of 0-{lengths[0] - 1}) of the first sequence of "
                            f"each perturbation, as run {result.run_id[:10]} read them; {EXAMPLES_TEXT}",
                            rows, row_labels=folders, col_labels=[f"frame {i}" for i in picked[0]])
    columns = ["first"] + [""] * (width - 2) + ["last"]
    return F.image_grid("perturbation-examples", "Examples: perturbation sequences",
                        f"{width} frames spread evenly from the first to the last of the first sequence of each "
                        f"perturbation, as run {result.run_id[:10]} read them; the sequences differ in length (the "
                        f"row label says how many frames, each image its frame number). {EXAMPLES_TEXT[0].upper()}"
                        f"{EXAMPLES_TEXT[1:]}",
                        rows, row_labels=[f"{f}\n({n} frames)" for f, n in zip(folders, lengths)],
                        col_labels=columns[:width], cell_labels=[[f"frame {i}" for i in p] for p in picked])


def most_flipping(store, results: Sequence, names: dict[str, str], top: int = MOST_FLIPPING
                  ) -> tuple[list[str], dict[str, list[float]]] | None:
    """The sequences with the highest flip probability (stride 1), averaged over the runs that have them
    (at most ``top``; sequences that never flip are left out).

    Returns category labels ``"<perturbation>: <sequence>"`` and per run the flip
    probabilities (%) on those sequences (NaN where a run lacks one), or None.
    """
    from ..benchmarks.perturbation import sequence_flips

    per_run: dict[str, dict[tuple[str, str], float]] = {}
    for r in results:
        rows = sequence_flips(store.read_predictions(r.run_id), stride=1)
        per_run[names[r.run_id]] = {(x["setting"], x["sample_id"]): x["flip_probability"] for x in rows}
    keys = {k for v in per_run.values() for k in v}
    if not keys:
        return None
    mean = {k: float(np.mean([v[k] for v in per_run.values() if k in v])) for k in keys}
    chosen = [k for k in sorted(keys, key=lambda k: (-mean[k], k))[:top] if mean[k] > 0]
    if not chosen:
        return None
    labels = [f"{s}: {short_path(sid, 24)}" for s, sid in chosen]
    return labels, {name: [100 * v.get(k, np.nan) for k in chosen] for name, v in per_run.items()}


# --- the section ------------------------------------------------------------------------------------------


INTRO = ("Each sequence shows one image under a gradually growing perturbation (or, for noise, fresh noise in every "
         "frame). The flip probability is how often the top-1 prediction changes between consecutive frames (noise: "
         "between a frame and the clean first frame); the top-5 distance measures how much the top-5 ranking changes. "
         "FR and T5D divide them by the baseline's (the table's \"normalised by\" column names it); mFR and mT5D "
         "average those over the 10 test perturbations (100 = the baseline; lower is more stable).")
LEGEND = ("mFR and mT5D are % of the baseline named in \"normalised by\" (100 = the baseline). \"(9 of 10)\": the "
          "mean of the perturbations whose rate is defined; a rate is undefined where the baseline's flip probability "
          "(or top-5 distance) is within its sampling error (the notes say where), or not measured.")


class _Series:
    """Per-perturbation values the section's figures collect run by run."""

    def __init__(self) -> None:
        self.fp: dict[str, dict[str, float]] = {}
        self.fr: dict[str, dict[str, float]] = {}
        self.t5d: dict[str, dict[str, float]] = {}
        self.not_comparable: list[str] = []
        self.denominators: list[str | None] = []


def perturbation_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("perturbation", "Perturbation stability (ImageNet-P)", INTRO,
                  ["model", "benchmark", "dataset", "sequences", "mFR", "mT5D", "mean flip probability (%)",
                   "normalised by", "run"], legend=LEGEND)
    store = context.store if context is not None else None
    names = run_labels(results)
    series = _Series()
    for r in results:
        add_run(sec, series, r, names[r.run_id], results, store)
    sec.figures += rate_figures(series, results)
    if store is not None:
        try:
            most = most_flipping(store, results, names)
        except (RobustlabError, OSError, KeyError):
            most = None
        if most is not None:
            labels, values = most
            sec.figures.append(horizontal_bars(
                "most-flipping-sequences", "The sequences that flip most",
                f"The {len(labels)} sequences with the highest flip probability (stride 1, averaged over the models): "
                "the share (%) of frame pairs whose top-1 prediction differs, per model.",
                labels, values, xlabel="flip probability of the sequence (%)"))
    for r in results:  # one example grid: the first run whose data is readable here
        grid = examples_grid(r)
        if grid is not None:
            sec.figures.append(grid)
            break
    return sec


def add_run(sec: Section, series: _Series, r, label: str, results: Sequence, store) -> None:
    """One run's table row, notes and per-perturbation values."""
    rates = mean_rates(r)
    n_seq = int(sum(v for m, _, v in r.metrics if m == "n_sequences"))
    mfp = mean_flip_probability(r)
    own = comparability(r)
    denominator = ratio_denominator(r, results, store) if rates else None
    sec.rows.append([r.model, r.benchmark, short_path(r.dataset), str(n_seq),
                     labelled(_rate_text(rates.get("mFR")), own if "mFR" in rates else None),
                     labelled(_rate_text(rates.get("mT5D")), own if "mT5D" in rates else None),
                     "–" if mfp is None else f"{100 * mfp:.2f}", denominator or "–", r.run_id[:10]])
    if per_perturbation(r, "flip_probability"):
        series.fp[label] = per_perturbation(r, "flip_probability")
    if per_perturbation(r, "flip_rate"):
        series.fr[labelled(label, own)] = per_perturbation(r, "flip_rate")
        series.denominators.append(denominator)
        if own:
            series.not_comparable.append(label)
    if per_perturbation(r, "top5_distance"):
        series.t5d[label] = per_perturbation(r, "top5_distance")
    sec.notes += [f"{label}: {n}" for n in r.notes]


def published_baseline_values(results: Sequence):
    """AlexNet's published ImageNet-P values when they belong in the figures (some run divides by them
    on ImageNet-P data itself), else None."""
    if not published_reference(results):
        return None
    from ..metrics.stability import get_stability_baseline

    return get_stability_baseline(next(run_config(r).baseline for r in results if divides_by_published(r)))


def rate_figures(series: _Series, results: Sequence) -> list[F.Figure]:
    """Flip probability, flip rate and top-5 distance per perturbation (stride 1), with AlexNet's published
    values beside the ImageNet-P runs."""
    base = published_baseline_values(results)
    base_label = f"{PUBLISHED_ALEXNET} (ImageNet-P)" if base is not None else ""
    rate_base = common_denominator(series.denominators)
    rate_short = rate_base.split(" (run ", 1)[0].split(" (see", 1)[0]
    folders = _folder_order(series.fp)
    figures = []
    if series.fp:
        values = {m: [100 * v.get(f, np.nan) for f in folders] for m, v in series.fp.items()}
        if base is not None:
            values[base_label] = [100 * base.flip_probability.get(f, np.nan) for f in folders]
        figures.append(F.bar_groups(
            "flip-probability", "Flip probability per perturbation",
            "How often (%) the top-1 prediction changes from one frame to the next (noise: from the clean first "
            "frame), stride 1" + (f"; {base_label}: the paper's values, which the ImageNet-P runs' rates divide by."
                                  if base else "."),
            folders, values, ylabel="flip probability (%)"))
    if series.fr:
        rate_folders = [f for f in folders if any(f in v for v in series.fr.values())]
        figures.append(F.bar_groups(
            "flip-rate", "Flip rate per perturbation",
            f"Flip probability divided by that of {rate_base} (%), stride 1; the dashed line is {rate_short} (100). "
            "mFR is the mean over the 10 test perturbations; a missing bar is an undefined rate (the baseline's flip "
            "probability within its sampling error)."
            + (f" {', '.join(series.not_comparable)}: {NOT_COMPARABLE_LABEL} (flip probabilities on their own data "
               "divided by AlexNet's published ImageNet-P values)." if series.not_comparable else ""),
            rate_folders, {m: [100 * v.get(f, np.nan) for f in rate_folders] for m, v in series.fr.items()},
            ylabel=f"flip rate FR (% of {rate_short})", reference=100, reference_label=f"{rate_short} (100)"))
    if series.t5d:
        t_folders = [f for f in folders if any(f in v for v in series.t5d.values())]
        values = {m: [v.get(f, np.nan) for f in t_folders] for m, v in series.t5d.items()}
        if base is not None:
            values[base_label] = [base.top5_distance.get(f, np.nan) for f in t_folders]
        figures.append(F.bar_groups(
            "top5-distance", "Top-5 distance per perturbation",
            "Mean top-5 distance between consecutive frames (stride 1): 0 when the five best classes keep their "
            "order, larger the more they move (in rank positions)"
            + (f"; {base_label}: the paper's values." if base is not None else "."),
            t_folders, values, ylabel="top-5 distance (rank positions)"))
    return figures


def horizontal_bars(key: str, title: str, caption: str, categories: Sequence[str], series: dict[str, list[float]],
                    *, xlabel: str) -> F.Figure:
    """Grouped horizontal bars (long category names read left to right), first category on top."""
    n_cat, n_ser = len(categories), max(1, len(series))
    plt = F.pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 0.9 + n_cat * (0.12 + 0.08 * n_ser)))
    height = 0.8 / n_ser
    y = np.arange(n_cat)
    for i, (name, values) in enumerate(series.items()):
        ax.barh(y + (i - (n_ser - 1) / 2) * height, values, height, label=name)
    ax.set_yticks(y, categories, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    F.legend_above(ax)
    return F.Figure(key, title, caption, svg=F.figure_svg(fig))


def _folder_order(per_model: dict[str, dict[str, float]]) -> list[str]:
    """Folders in the registry's order (the paper's), then any others alphabetically."""
    from ..perturbations import list_perturbations

    known = list_perturbations("all")
    present = {f for v in per_model.values() for f in v}

    def key(folder: str):
        base = folder.rsplit("_", 1)[0] if folder not in known and folder.rsplit("_", 1)[0] in known else folder
        return (known.index(base) if base in known else len(known), folder)

    return sorted(present, key=key)


@register_presentation
class ImageNetPPresentation(ImageNetPShow):
    """``imagenet-p`` runs: the released videos and CIFAR-10-P arrays."""

    section_builder = staticmethod(perturbation_section)
    headline_builder = staticmethod(stability_headline)


@register_presentation
class PerturbedPresentation(PerturbedShow):
    """``perturbed`` runs: the user's own folder, turned into sequences on the fly."""

    section_builder = staticmethod(perturbation_section)
    headline_builder = staticmethod(stability_headline)
