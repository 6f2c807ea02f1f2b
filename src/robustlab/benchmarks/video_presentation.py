"""How the video pm-k runs (``imagenet-vid-robust``, ``ytbb-robust``, ``video-pmk``) are shown: pm-0 and
pm-k with their intervals, the accuracy-vs-k curve, per class, conditional accuracy and the static set,
and whether the set was reviewed in full. The report's section extends it
(:mod:`robustlab.report.section_video`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..engine.presentation import HeadlineMetric, MetricRow, Presentation
from .video_metrics import FINALIZE_SUMMARY

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


class VideoShow(Presentation):
    """How pm-k runs are shown (the ``alpha`` of their intervals is their config's)."""

    name = "video"
    title = "Natural perturbations in video (pm-k)"
    headline = (HeadlineMetric("accuracy_original", "pm-0 accuracy", compare=True),
                HeadlineMetric("accuracy_pmk", "pm-k accuracy", compare=True))

    def notes(self, config, metrics: Iterable[MetricRow]) -> list[str]:
        return pmk_notes(metrics, config.alpha)

    def summary(self, config, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        return pmk_summary(metrics)

    def text(self, config, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        return pmk_text(summary, config.alpha)
