"""Report sections of the new shifts: ImageNet-C-bar, and effective robustness across runs."""

from __future__ import annotations

import pytest

from robustlab.engine.evaluation import EvaluationResult
from robustlab.report.effective import effective_lines, shift_groups
from robustlab.report.render import headline
from robustlab.report.section_base import ReportContext
from robustlab.report.sections import build_sections


def pair_result(model: str, original: float, shifted: float, shift: str = "imagenetv2-matched-frequency",
                n: int = 10000) -> EvaluationResult:
    pair = {"shift": shift, "original_set": "ImageNet val", "original": original, "original_n": 50000,
            "shifted": shifted, "shifted_n": n,
            "testbed_columns": ["val", "imagenetv2-matched-frequency-format-val" if shift.startswith("imagenetv2")
                                else shift]}
    return EvaluationResult(run_id=f"{abs(hash((model, shift))):016x}", model=model, benchmark="natural-shift",
                            dataset="/d/v2", config={}, status="complete",
                            metrics=[("top1_accuracy", "", shifted)], summary={"accuracy_pair": pair})


RUNS = [pair_result("resnet18", 0.698, 0.571), pair_result("resnet50", 0.761, 0.634),
        pair_result("resnet152", 0.783, 0.670), pair_result("robust-model", 0.70, 0.62)]


def test_effective_robustness_section_with_trend_and_intervals():
    sections = {s.key: s for s in build_sections(RUNS)}
    sec = sections["effective-robustness"]
    assert len(sec.rows) == 4 and len(sec.figures) == 1 and "<svg" in sec.figures[0].svg
    row = next(r for r in sec.rows if r[0] == "robust-model")
    value = float(row[5].split()[0])
    assert value > 2  # well above the trend of the three plain ResNets
    group = shift_groups(RUNS)[0]
    assert group.fit.n == 4 and group.fit.transform == "logit"
    text = "\n".join(effective_lines(group, RUNS[3].run_id))
    assert "*robust-model" in text and "logit axes" in text


def test_fewer_than_three_runs_get_no_fit_with_the_reason():
    sec = next(s for s in build_sections(RUNS[:2]) if s.key == "effective-robustness")
    assert all(r[5] == "–" for r in sec.rows)
    assert any("at least 3 runs" in n for n in sec.notes)
    assert "No trend" in sec.figures[0].caption


def test_reference_points_complete_the_trend(tmp_path):
    csv = tmp_path / "robustness_top1s.csv"
    csv.write_text("model,val,imagenetv2-matched-frequency-format-val,imagenet-a\n"
                   "a,76.0,63.5,1.0\nb,80.0,68.9,5.0\nc,84.0,74.0,30.0\n")
    sec = next(s for s in build_sections(RUNS[:2], ReportContext(reference_points=csv))
               if s.key == "effective-robustness")
    assert all(r[5] != "–" for r in sec.rows)  # 2 runs + 3 reference points: a trend
    other = [pair_result(m, x, y, shift="imagenet-sketch") for m, x, y in (("m", 0.7, 0.3), ("n", 0.75, 0.35))]
    sec = next(s for s in build_sections(other, ReportContext(reference_points=csv)) if s.key == "effective-robustness")
    assert any("has no rows for this shift" in n for n in sec.notes)


def test_cbar_section_and_headline():
    summary = {"set": "imagenet-c-bar", "clean_error": 0.24, "mean_error_bar": 0.577, "mce_bar": 1.0,
               "corruptions": {"sparkles": {"mean_error": 0.324, "ce_bar": 1.0, "errors": {}}}}
    r = EvaluationResult(run_id="c" * 16, model="resnet50", benchmark="imagenet-c-bar", dataset="/d/cbar", config={},
                         status="complete", metrics=[("n_samples", "clean", 1000.0)], summary=summary)
    sec = next(s for s in build_sections([r]) if s.key == "corruption-bar")
    assert sec.rows[0][4] == "57.7" and sec.rows[0][5] == "100.0" and sec.rows[0][3].startswith("76.0 [")
    assert headline(r) == "mean error 57.7 · mCE-bar 100.0" or "mean error 57.7" in headline(r)


@pytest.mark.parametrize("n", [None, 100])
def test_runs_without_sizes_get_no_interval(n):
    runs = [pair_result(f"m{i}", 0.6 + 0.05 * i, 0.45 + 0.05 * i, n=n) for i in range(4)]
    sec = next(s for s in build_sections(runs) if s.key == "effective-robustness")
    assert ("[" in sec.rows[0][5]) == (n is not None)
