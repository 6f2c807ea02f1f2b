"""The outputs of an adversarial-robustness study: table (Markdown, CSV), JSON and an HTML page.

``report.html`` is one self-contained file (robustlab's report template, inline SVG): the
table of R per condition and attacked epoch, Welch's t-tests, R over training for every
condition, and for every "pretrain then train" condition (§4.3, "visual hysteresis") its R
against the from-scratch twin's with the t-test's p-value. The same figures are written as
``figures/<key>.svg``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import jinja2

from .. import __version__
from ..formatting import number_text
from ..fsutil import atomic_write_text, ensure_dir
from ..report import figures as F
from ..report.section_base import Section
from .config import StudyConfig

#: Files a study writes at its top level (besides ``runs/`` and ``figures/``).
OUTPUT_FILES = ("study.json", "table.md", "table.csv", "report.html")
TABLE_COLUMNS = ["condition", "architecture", "data", "start", "epoch", "n", "clean acc (mean ± SD)", "R (mean ± SD)"]


def _p_text(c: dict) -> str:
    return f"p = {c['p']:.4g}" if not math.isnan(c["p"]) else f"p undefined ({c['note']})"


def table_rows(result) -> list[list[str]]:
    """The study table as text cells (columns :data:`TABLE_COLUMNS`)."""
    return [[r["condition"], r["architecture"], r["dataset"], r["start"], str(r["epoch"]), str(r["n"]),
             f"{number_text(r['clean_mean'])} ± {number_text(r['clean_sd'])}",
             f"{number_text(r['R_mean'])} ± {number_text(r['R_sd'])}"]
            for r in result.rows]


def comparison_rows(comparisons: list[dict]) -> list[list[str]]:
    return [[c["a"], c["b"], c["kind"], str(c["epoch"]), f"{c['n_a']} / {c['n_b']}",
             f"{number_text(c['mean_a'])} / {number_text(c['mean_b'])}", number_text(c["t"]), number_text(c["p"], 4),
             "yes" if c["significant"] else "no"] for c in comparisons]


COMPARISON_COLUMNS = ["a", "b", "kind", "epoch", "n (a / b)", "mean R (a / b)", "t", "p", "significant"]


def study_markdown(result) -> str:
    """The table and the t-tests as Markdown (``table.md``; also printed by the CLI)."""
    def table(columns: list[str], rows: list[list[str]]) -> list[str]:
        return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
                + ["| " + " | ".join(row) + " |" for row in rows])

    lines = table(TABLE_COLUMNS, table_rows(result))
    if result.comparisons:
        lines += ["", "Welch's t-tests on R:", ""] + table(COMPARISON_COLUMNS, comparison_rows(result.comparisons))
    return "\n".join(lines) + "\n"


def study_csv(result) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    keys = ["condition", "architecture", "dataset", "start", "epoch", "n", "R_mean", "R_sd", "clean_mean", "clean_sd"]
    writer.writerow(keys)
    for r in result.rows:
        writer.writerow([r[k] if not isinstance(r[k], float) else f"{r[k]:.6f}" for k in keys])
    return buf.getvalue()


# --- figures ---------------------------------------------------------------------------------------


def _series(result, condition: str, epochs: list[int]) -> tuple[list[float], tuple[list[float], list[float]]]:
    means, lows, highs = [], [], []
    for ep in epochs:
        r = result.row(condition, ep)
        sd = 0.0 if math.isnan(r["R_sd"]) else r["R_sd"]
        means.append(r["R_mean"])
        lows.append(r["R_mean"] - sd)
        highs.append(r["R_mean"] + sd)
    return means, (lows, highs)


def r_over_training(cfg: StudyConfig, result) -> F.Figure | None:
    """R (mean ± SD over seeds) against the attacked epoch, one line per condition."""
    if all(len(c.eval_epochs) < 2 for c in cfg.conditions):
        return None
    xs, ys, bands = {}, {}, {}
    for c in cfg.conditions:
        epochs = list(c.eval_epochs)
        xs[c.name] = epochs
        ys[c.name], bands[c.name] = _series(result, c.name, epochs)
    return F.lines("r-over-training", "R over training",
                   f"Mean R over the seeds ({len(cfg.seeds)} per condition) at each attacked epoch; shaded: ± 1 SD "
                   f"across seeds. Attack: {cfg.attack.upper()}, eps {cfg.eps[0]:g}-{cfg.eps[-1]:g}.",
                   xs, ys, bands=bands, xlabel="training epoch", ylabel="R (normalised AUC of accuracy vs eps)")


def hysteresis_figure(cfg: StudyConfig, result, pretrained: str, scratch: str) -> F.Figure:
    """R of a pretrained condition and its from-scratch twin at their shared attacked epochs."""
    cond = cfg.condition(pretrained)
    source = cond.pretrain or cond.pretrain_checkpoint
    epochs = [ep for ep in cond.eval_epochs if ep in cfg.condition(scratch).eval_epochs]
    tests = {c["epoch"]: c for c in result.comparisons
             if c["a"] == pretrained and c["b"] == scratch}
    labels = {pretrained: f"{pretrained} (pretrained: {source})", scratch: f"{scratch} (from scratch)"}
    ys, bands = {}, {}
    for name in (scratch, pretrained):
        ys[labels[name]], bands[labels[name]] = _series(result, name, epochs)
    last = tests.get(epochs[-1])
    verdict = (f" Welch's t-test at epoch {epochs[-1]}: t = {number_text(last['t'])}, {_p_text(last)}"
               + (" (significant at alpha = {:g}).".format(cfg.alpha_test) if last["significant"] else ".")
               if last else "")
    return F.lines(f"pretrain-vs-scratch-{pretrained}", f"Pretrain then train: {pretrained} vs {scratch}",
                   f"Visual hysteresis (§4.3): R on {cond.describe_data()} of models that start from a fully trained "
                   f"{source} model, against models trained from scratch with the same recipe; mean ± 1 SD over "
                   f"{len(cfg.seeds)} seeds.{verdict}",
                   epochs, ys, bands=bands, xlabel="training epoch on the second dataset",
                   ylabel="R (normalised AUC of accuracy vs eps)")


# --- the page ------------------------------------------------------------------------------------------


def study_sections(cfg: StudyConfig, result) -> list[Section]:
    """The report's sections: t-tests, pretrain-then-train comparisons, R over training."""
    sections = []
    configured = [c for c in result.comparisons if c["kind"] == "configured"]
    if configured:
        sections.append(Section("comparisons", "Welch's t-tests",
                                f"Two-sided Welch t-test of R between conditions over seeds (alpha = {cfg.alpha_test:g}).",
                                COMPARISON_COLUMNS, comparison_rows(configured)))
    pairs = cfg.pretrain_pairs()
    if pairs:
        sec = Section("pretrain", "Pretrain then train (visual hysteresis)",
                      "Each pretrained condition starts every seed from the fully trained model of another dataset "
                      "(same seed), trains on its own dataset with the same recipe and is tested there; Welch's "
                      "t-test compares its R with training from scratch.",
                      COMPARISON_COLUMNS, comparison_rows([c for c in result.comparisons
                                                           if c["kind"] == "pretrain-vs-scratch"]))
        sec.figures = [hysteresis_figure(cfg, result, p, s) for p, s in pairs]
        sections.append(sec)
    over = r_over_training(cfg, result)
    if over is not None:
        sections.append(Section("training", "R over training", "R at every attacked epoch.", figures=[over]))
    notes = Section("settings", "Settings",
                    f"Recipe {cfg.recipe!r} resolved per condition; seeds {list(cfg.seeds)}; evaluated on "
                    + ("the full test set" if cfg.eval_samples is None else f"{cfg.eval_samples} test images")
                    + f" (the same for every model); attack {cfg.attack}, eps {list(cfg.eps)}.",
                    ["condition", "epochs", "lr", "attacked epochs", "momentum", "weight decay", "batch", "lr / 10 after"],
                    [[c.name, str(c.recipe.epochs), f"{c.recipe.lr:g}", ", ".join(map(str, c.eval_epochs)),
                      f"{c.recipe.momentum:g}", f"{c.recipe.weight_decay:g}", str(c.recipe.batch_size),
                      f"epoch {c.recipe.drop_epoch}"] for c in cfg.conditions])
    unmatched = [k for k, ok in result.matched_init.items() if not ok]
    notes.notes.append("initial weights matched across datasets for every seed" if not unmatched else
                       f"initial weights NOT matched for {', '.join(unmatched)}")
    sections.append(notes)
    return sections


def render_study_html(cfg: StudyConfig, result, *, title: str = "Adversarial robustness study",
                      sections: list[Section] | None = None) -> str:
    """The self-contained HTML page of a study (``sections``: :func:`study_sections`, built when None)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("robustlab.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    n_models = len({(e.condition, e.seed) for e in result.evaluations})
    return env.get_template("report.html.j2").render(
        title=title, version=__version__, subtitle=f"{len(cfg.conditions)} conditions, {n_models} trained models",
        summary_intro="Mean ± SD over seeds of clean accuracy and of R (the normalised area under accuracy vs "
                      "attack strength: 1 = no loss; 0.5 = a linear fall to 0) per condition and attacked epoch.",
        footer="Every number is recomputable from runs/*/seed-*/evaluations.json.",
        summary_columns=TABLE_COLUMNS, summary_rows=table_rows(result),
        sections=study_sections(cfg, result) if sections is None else sections)


def write_outputs(cfg: StudyConfig, result, out: Path) -> list[Path]:
    """Write ``study.json``, ``table.md``, ``table.csv``, ``report.html`` and ``figures/*.svg``."""
    out = Path(out)
    atomic_write_text(out / "study.json", json.dumps(result.to_dict(), indent=1))
    atomic_write_text(out / "table.md", study_markdown(result))
    atomic_write_text(out / "table.csv", study_csv(result))
    sections = study_sections(cfg, result)
    atomic_write_text(out / "report.html", render_study_html(cfg, result, sections=sections))
    written = [out / name for name in OUTPUT_FILES]
    figures = [f for sec in sections for f in sec.figures]
    if figures:
        ensure_dir(out / "figures")
        for fig in figures:
            atomic_write_text(out / "figures" / f"{fig.key}.svg", fig.svg)
            written.append(out / "figures" / f"{fig.key}.svg")
    return written
