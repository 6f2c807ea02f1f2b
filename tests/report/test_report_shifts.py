"""Report sections of the new shifts: ImageNet-C-bar, and effective robustness across runs."""

from __future__ import annotations

import json

import pytest

from robustlab.engine.evaluation import EvaluationResult
import matplotlib.pyplot as plt

from robustlab.report.effective import draw_trend, effective_lines, model_family, shift_groups, trend_figure
from shared_data import FIXTURES
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
    sec = next(s for s in build_sections(RUNS[:2], ReportContext(reference_points=csv, fit_on="all"))
               if s.key == "effective-robustness")
    assert all(r[5] != "–" for r in sec.rows)  # fitted on every point: 2 runs + 3 reference points
    sec = next(s for s in build_sections(RUNS[:2], ReportContext(reference_points=csv))
               if s.key == "effective-robustness")  # the default: the table's standard models, and a, b, c are not
    assert all(r[5] == "–" for r in sec.rows)
    assert any("None of the 3 reference rows is a standard model" in n and "--fit-on all" in n for n in sec.notes)
    other = [pair_result(m, x, y, shift="imagenet-sketch") for m, x, y in (("m", 0.7, 0.3), ("n", 0.75, 0.35))]
    sec = next(s for s in build_sections(other, ReportContext(reference_points=csv)) if s.key == "effective-robustness")
    assert any("has no rows for this shift" in n for n in sec.notes)


TESTBED = FIXTURES / "metrics" / "imagenet_testbed_top1s_natural.csv"
LITERALS = json.loads((FIXTURES / "metrics" / "imagenet_testbed_effective_robustness.json").read_text())["shifts"]


def table_run(model: str, shift: str, columns: tuple[str, str]) -> EvaluationResult:
    """A run whose accuracy pair is the testbed table's row of ``model`` (as if measured here)."""
    import csv as csvlib

    row = next(r for r in csvlib.DictReader(TESTBED.open()) if r["model"] == model)
    pair = {"shift": shift, "original_set": "ImageNet val", "original": float(row[columns[0]]) / 100,
            "original_n": None, "shifted": float(row[columns[1]]) / 100, "shifted_n": None,
            "testbed_columns": list(columns)}
    return EvaluationResult(run_id=f"{abs(hash((model, shift))):016x}", model=model, benchmark=shift,
                            dataset="/d", config={}, status="complete", metrics=[], summary={"accuracy_pair": pair})


@pytest.mark.parametrize("shift", ["imagenet-r", "objectnet", "imagenet-a"])
def test_runs_against_the_testbeds_table_get_the_testbeds_numbers(shift):
    """The report's default (standard models of the table) gives what the testbed's own code gives."""
    columns = tuple(LITERALS[shift]["columns"])
    models = ["resnet50", "efficientnet-l2-noisystudent", "vit_b_32_clip_zeroshot"]
    runs = [table_run(m, shift, columns) for m in models]
    group = shift_groups(runs, reference_points=TESTBED)[0]
    assert not any(group.fitted) and len(group.fitted_references) == LITERALS[shift]["fitted"]
    for model, er in zip(models, group.er):
        assert 100 * er.value == pytest.approx(LITERALS[shift]["effective_robustness"][model], abs=1e-9)
    text = "\n".join(effective_lines(group))
    assert f"the {LITERALS[shift]['fitted']} standard models of imagenet_testbed_top1s_natural.csv" in text
    if shift == "imagenet-a":
        assert "split at resnet50 (original 91.9 %, 0 % shifted)" in text and "(51 points)" in text
    everything = shift_groups(runs, reference_points=TESTBED, fit_on="all")[0]
    # every row and run; on ImageNet-A resnet50 (0 %, table and run) is the split and in neither line
    assert all(everything.fitted) and everything.fit.n == LITERALS[shift]["rows"] + 3 - 2 * (shift == "imagenet-a")


def test_without_a_table_zero_shot_runs_are_measured_not_fitted():
    clip = pair_result("open_clip:ViT-B-32:laion2b_s34b_b79k", 0.66, 0.60)
    group = shift_groups([*RUNS[:3], clip])[0]
    assert group.fitted == [True, True, True, False] and group.fit.n == 3
    assert 100 * group.er[3].value > 5
    assert [model_family(r.model) for r in (clip, pair_result("torchvision:resnet50", 0.7, 0.6),
                                            pair_result("python:m.py:f", 0.7, 0.6))] == \
        ["CLIP zero-shot", "ImageNet-trained", "other"]


def test_fit_on_a_file_of_model_names(tmp_path):
    names = tmp_path / "fit.txt"
    names.write_text("resnet18\nresnet50\nresnet152\n")
    group = shift_groups(RUNS, fit_on=str(names))[0]
    assert group.fitted == [True, True, True, False]
    assert "the 3 models listed in" in group.describe_fit()


def test_the_figure_draws_families_and_a_split_trend():
    runs = [table_run(m, "imagenet-a", ("val-on-imagenet-a-classes", "imagenet-a")) for m in ("resnet50", "alexnet")]
    runs.append(table_run("vit_b_32_clip_zeroshot", "imagenet-a", ("val-on-imagenet-a-classes", "imagenet-a")))
    runs[-1] = EvaluationResult(**{**runs[-1].__dict__, "model": "open_clip:ViT-B-32:openai"})
    group = shift_groups(runs, reference_points=TESTBED)[0]
    figure = trend_figure(group, "er")
    assert figure.wide  # a whole report row: shown unscaled at 1280 px
    assert "split at resnet50" in figure.caption and "85 standard models" in figure.caption
    fig, unnamed = draw_trend(group)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["reference models, in the fit (85)", "reference models, not in the fit (250)", "y = x (no drop)",
                      "trend below the split (slope 0.69)", "95% band of the trend",
                      "trend above the split (slope 2.96)", "open_clip:ViT-B-32:openai (CLIP zero-shot)",
                      "resnet50 (other)", "alexnet (other)"]  # few models: each named in the legend
    assert not fig.axes[0].texts and not unnamed
    plt.close(fig)
    many = [pair_result(f"torchvision:net{i}", 0.60 + 0.03 * i, 0.45 + 0.03 * i) for i in range(8)]
    fig, unnamed = draw_trend(shift_groups(many)[0])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "ImageNet-trained (8)" in labels  # many: one legend entry, the names beside the points
    assert sorted([t.get_text() for t in fig.axes[0].texts] + unnamed) == sorted(r.model for r in many)
    plt.close(fig)


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
