"""The adversarial family's presentation (``adversarial-auc``) and report section: accuracy and normalised
accuracy vs eps, R. The ``show`` side is :class:`robustlab.benchmarks.adversarial.AdversarialShow`'s."""

from __future__ import annotations

from collections.abc import Sequence

from ..benchmarks.adversarial import AdversarialShow
from ..engine.presentation import register_presentation
from . import figures as F
from .collect import Estimate, metric_table
from .section_base import CI_LEGEND, ReportContext, Section, run_labels, short_path


def adversarial_headline(result, results: Sequence = (), store=None) -> list[str]:
    """``clean acc 75.0 [53.3, 90.2]; R (FGSM) 0.023``, marked when accuracy is not monotone in eps."""
    s, t = result.summary or {}, metric_table(result)
    parts = []
    curve = s.get("curve") or []
    if curve:
        parts.append("clean acc " + Estimate.from_fraction(curve[0]["accuracy"], t.get(("n", ""))).percent())
    attack = str(s.get("attack", "")).upper()
    parts.append(f"R ({attack}) {s['R']:.3f}" if s.get("R") is not None else f"R ({attack}) undefined")
    if s.get("non_monotone"):
        parts[-1] += " (accuracy not monotone in eps)"
    return parts


def adversarial_section(results: Sequence, context: ReportContext | None = None) -> Section:
    sec = Section("adversarial", "Adversarial robustness over an epsilon interval",
                  "Accuracy under attack f(eps) for strengths eps in pixel units of [0, 1], and R, the area under "
                  "f(eps)/f(eps0) over the interval divided by its length (1: no loss; 0.5: a linear fall to 0).",
                  ["model", "dataset", "attack", "clean accuracy % [95% CI]", "R", "run"],
                  legend=f"{CI_LEGEND}. R = the area under f(eps)/f(eps0) over [eps0, eps1] divided by the interval's "
                         "length: 1 = no loss, 0.5 = a linear fall to 0, near 0 = accuracy gone at the first step. "
                         "\"not monotone\": accuracy climbs back at larger eps, so the attack fails there and R "
                         "overstates robustness (the notes say where; compare PGD).")
    norm_x, norm_y, acc_y, acc_band = {}, {}, {}, {}
    names = run_labels(results)
    for r in results:
        s, t = r.summary or {}, metric_table(r)
        curve = s.get("curve") or []
        n = t.get(("n", ""))
        clean = Estimate.from_fraction(curve[0]["accuracy"], n) if curve else None
        rv = s.get("R")
        r_text = "–" if rv is None else f"{rv:.3f}" + (" (not monotone)" if s.get("non_monotone") else "")
        sec.rows.append([r.model, short_path(r.dataset), f"{s.get('attack', '?')} {s.get('norm', '')}",
                         clean.percent() if clean else "–", r_text, r.run_id[:10]])
        attack = str(s.get("attack", "")).upper()
        name = (f"{names[r.run_id]} ({attack}, R = {rv:.3f})" if rv is not None else
                f"{names[r.run_id]} ({attack}, R undefined)")
        eps = [p["eps"] for p in curve]
        if eps and all(p.get("normalised") is not None for p in curve):
            norm_x[name], norm_y[name] = eps, [p["normalised"] for p in curve]
        if eps:
            acc_y[name] = [100 * p["accuracy"] for p in curve]
            if all(p.get("low") is not None for p in curve):
                acc_band[name] = ([100 * p["low"] for p in curve], [100 * p["high"] for p in curve])
            norm_x.setdefault(name, eps)
        sec.notes += [f"{names[r.run_id]}: {n_}" for n_ in r.notes]
    sec.notes += attack_comparison(results)
    if norm_y:
        sec.figures.append(F.lines("normalised-accuracy-vs-eps", "Normalised accuracy vs attack strength",
                                   "f(eps) / f(eps0): accuracy under attack relative to clean accuracy; R (legend) is "
                                   "the area under this curve over the interval, divided by its length.",
                                   norm_x, norm_y, xlabel="attack strength eps (L-inf, pixel units of [0, 1])",
                                   ylabel="normalised accuracy f(eps)/f(eps0)", ylim=(0, 1.05)))
    if acc_y:
        sec.figures.append(F.lines("accuracy-vs-eps", "Accuracy vs attack strength",
                                   "Top-1 accuracy (%) under attack with 95% Clopper-Pearson bands.",
                                   {k: norm_x[k] for k in acc_y}, acc_y, bands=acc_band,
                                   xlabel="attack strength eps (pixel units of [0, 1])", ylabel="accuracy (%)"))
    return sec


def attack_comparison(results: Sequence) -> list[str]:
    """One note per model evaluated with both FGSM and PGD on the same data: the two R side by side."""
    by_model: dict[tuple[str, str], dict[str, float]] = {}
    for r in results:
        s = r.summary or {}
        if s.get("R") is not None:
            by_model.setdefault((r.model, r.dataset), {})[str(s.get("attack", "")).upper()] = s["R"]
    notes = []
    for (model, _), rs in by_model.items():
        if "FGSM" in rs and "PGD" in rs:
            notes.append(f"{model}: R with FGSM {rs['FGSM']:.3f}, with PGD {rs['PGD']:.3f}"
                         + (" (FGSM's is higher: its accuracy climbs back where PGD's does not; read PGD's)"
                            if rs["FGSM"] > rs["PGD"] + 1e-9 else "") + ".")
    return notes


@register_presentation
class AdversarialPresentation(AdversarialShow):
    """``adversarial-auc`` runs: shown as :class:`AdversarialShow`, with this module's section and headline."""

    section_builder = staticmethod(adversarial_section)
    headline_builder = staticmethod(adversarial_headline)
