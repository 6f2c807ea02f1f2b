"""``show`` / ``--json`` of corruption runs whose relative CE is undefined for some corruptions:
n/a with the reason, never a number; relative mCE over the defined terms, saying how many. The
case is the full demo's (150 scenes, the shipped baseline's error falls under zoom blur)."""

from __future__ import annotations

import numpy as np

from robustlab.benchmarks.corruption import (
    CE_LEGEND,
    CorruptedConfig,
    baseline_from_run,
    corruption_metrics,
    corruption_notes,
    corruption_summary_dict,
    corruption_text,
)
from robustlab.engine.setting import setting_of
from robustlab.metrics import BENCHMARK_CORRUPTIONS

N = 150
# errors (counts of 150) per severity 1-5, and clean: the full demo's baseline and demo:cnn
BASELINE = {"clean": [56], "zoom_blur": [53, 52, 56, 53, 57], "pixelate": [57, 53, 65, 66, 75],
            "jpeg_compression": [55, 55, 58, 59, 61]}
CNN = {"clean": [9], "zoom_blur": [12, 12, 17, 19, 23], "pixelate": [13, 11, 15, 22, 21],
       "jpeg_compression": [12, 10, 15, 15, 14]}
#: the other benchmark corruptions: the baseline's error clearly rises (and the CNN's too)
for c in BENCHMARK_CORRUPTIONS:
    BASELINE.setdefault(c, [70, 80, 90, 100, 110])
    CNN.setdefault(c, [20, 30, 45, 60, 80])


def predictions(counts: dict[str, list[int]]) -> dict[str, dict[str, np.ndarray]]:
    """Stored columns with ``k`` wrong top-1 predictions of N per setting."""
    out = {}
    for c, ks in counts.items():
        for s, k in enumerate(ks, start=1):
            setting = "clean" if c == "clean" else f"{c}/{s}"
            labels = np.zeros(N, np.int64)
            top = np.zeros((N, 5), np.int32)
            top[:k, 0] = 1
            top[:, 1] = 2
            out[f"{setting}/shard-0000"] = {"label": labels, "top5_index": top}
    return out


CONFIG = CorruptedConfig(data="/data", corruptions=list(BENCHMARK_CORRUPTIONS), severities=[1, 2, 3, 4, 5], seed=0,
                         profile="imagecorruptions", class_map="auto", shard_size=150, clean=True, baseline="alexnet",
                         baseline_run="b" * 12, top_k=5, save_logits=False, num_classes=3)


def metrics_of(counts):
    preds = predictions(counts)
    base = baseline_from_run(predictions(BASELINE), CONFIG.corruptions, CONFIG.baseline_run)
    return corruption_metrics(preds, {u: setting_of(u) for u in preds}, corruptions=CONFIG.corruptions,
                              baseline=base)


def test_undefined_relative_ce_is_na_with_the_reason_in_show_and_json():
    rows = metrics_of(CNN)
    assert not any(m == "relative_ce" and c in ("zoom_blur", "pixelate", "jpeg_compression") for m, c, _ in rows)
    summary = corruption_summary_dict(CONFIG, rows)
    zoom = summary["corruptions"]["zoom_blur"]
    assert zoom["relative_ce"] is None
    assert zoom["relative_ce_na"].startswith("the baseline's error falls under it (37.3 → 36.1 %)")
    assert "within its sampling error (±8.5 points, 95 %)" in summary["corruptions"]["pixelate"]["relative_ce_na"]
    assert summary["relative_mce_terms"] == 12 and summary["relative_mce_of"] == 15
    text = corruption_text(CONFIG, summary)
    zoom_line = next(line for line in text if line.startswith("zoom_blur"))
    assert zoom_line.split()[2] == "n/a"  # CE is defined, relative CE is not: never a number
    assert any(line.startswith("relative mCE") and "(12 of 15 corruptions" in line for line in text)
    assert f"legend: {CE_LEGEND}" in text
    notes = corruption_notes(rows, clean_hint="")
    rel = next(n for n in notes if n.startswith("relative CE n/a for zoom_blur"))
    assert "Relative mCE averages the other 12 of 15 benchmark corruptions." in rel
    assert not any("Read mCE instead" in n for n in notes)


def test_the_warning_names_whose_error_moved_and_which_way():
    """A defined but negative relative CE: this model's error falls while the baseline's rises."""
    helped = {**CNN, "fog": [5, 5, 6, 6, 7]}  # fewer errors than on clean data (9)
    notes = corruption_notes(metrics_of(helped), clean_hint="")
    fog = next(n for n in notes if n.startswith("relative CE of fog"))
    assert "this model's error falls under it (6.0 → 3.9 %) while the baseline's rises (37.3 → 60.0 %)" in fog
    assert "barely changes" not in " ".join(notes)


def test_fgsm_accuracy_that_climbs_back_is_flagged_with_the_likely_cause():
    """The demo baseline's FGSM curve: 0 % at eps 0.05-0.1, back to 6 % at 0.3 (150 scenes)."""
    from robustlab.attacks import PAPER_EPS_GRID
    from robustlab.benchmarks.adversarial import AdversarialAUC, AdversarialShow, accuracy_rise, setting_name

    config = AdversarialAUC().config_for("digits", attack="fgsm", eps=list(PAPER_EPS_GRID), limit=4)
    assert (config.eps0, config.eps1) == (0.0, 0.3)
    acc = [0.627, 0.153, 0.02, 0.0, 0.0, 0.007, 0.04, 0.053, 0.06]
    metrics = [("n", "", 150.0)] + [("accuracy", setting_name("fgsm", "linf", e), a) for e, a in zip(PAPER_EPS_GRID, acc)]
    table = {(m, s): v for m, s, v in metrics}
    assert accuracy_rise(config, table) == ((0.05, 0.0), (0.3, 0.06))
    shown = AdversarialShow()
    notes = shown.notes(config, metrics)
    note = next(n for n in notes if "not monotone" in n)
    assert "0.0 % at eps 0.05 to 6.0 % at eps 0.3" in note and "gradient masking" in note and "attack=pgd" in note
    assert shown.summary(config, metrics)["non_monotone"]["eps_high"] == 0.3
    # the CNN's curve: 0 -> 0.7 % is one scene of 150, within a sample: not flagged
    flat = [0.94, 0.307, 0.06, 0.0, 0.0, 0.0, 0.0, 1 / 150, 1 / 150]
    table = {**table, **{("accuracy", setting_name("fgsm", "linf", e)): a for e, a in zip(PAPER_EPS_GRID, flat)}}
    assert accuracy_rise(config, table) is None


def test_nested_is_a_pgd_option():
    from robustlab.benchmarks.adversarial import AdversarialAUC
    from robustlab.errors import InputError

    bench = AdversarialAUC()
    import pytest

    with pytest.raises(InputError, match="nested applies to PGD only"):
        bench.config_for("digits", attack="fgsm", nested=True, limit=4)
    assert "nested" not in bench.config_for("digits", attack="pgd", limit=4).to_dict()  # off: the run's id unchanged
    assert bench.config_for("digits", attack="pgd", nested="true", limit=4).nested is True
