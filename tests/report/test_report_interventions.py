"""The interventions section: wrapped and fine-tuned models beside their plain model (mCE, mFR, pm-k)."""

from __future__ import annotations

import json

import numpy as np

from robustlab.engine.evaluation import EvaluationResult
from robustlab.report.section_interventions import intervention_of, interventions_section
from robustlab.report.sections import build_sections


def result(model: str, benchmark: str, dataset: str, **metrics: float) -> EvaluationResult:
    return EvaluationResult(run_id=f"{abs(hash((model, benchmark, dataset))):016x}", model=model, benchmark=benchmark,
                            dataset=dataset, config={}, status="complete",
                            metrics=[(name, "", value) for name, value in metrics.items()])


def manifest(folder, base: str, **recipe) -> None:
    folder.mkdir(parents=True)
    (folder / "finetuned.json").write_text(json.dumps({
        "format": "robustlab-finetuned/1", "base": base, "wrap": None,
        "recipe": {"epochs": 5, "subset": "vid30", "augment": {"spec": "paper-noise"}, "train": "all", **recipe}}))


def test_wrapped_and_fine_tuned_runs_beside_the_plain_run(tmp_path):
    manifest(tmp_path / "ft", "torchvision:resnet50")
    ft = f"finetuned:{tmp_path / 'ft'}@0123456789ab"
    results = [
        result("torchvision:resnet50", "imagenet-c", "/d/c", mce=0.767, clean_error=0.239),
        result("torchvision:resnet50", "imagenet-p", "/d/p", mfr=0.580),
        result("torchvision:resnet50", "imagenet-vid-robust", "/d/v", accuracy_pmk=0.702, accuracy_original=0.848),
        result("torchvision:resnet50 [wrap=clahe]", "imagenet-c", "/d/c", mce=0.745, clean_error=0.2350),
        result("torchvision:resnet50 [wrap=clahe]", "imagenet-p", "/d/p", mfr_subset=0.60),
        result(ft, "imagenet-vid-robust", "/d/v", accuracy_pmk=0.71, accuracy_original=0.84),
        result("torchvision:resnet50 [wrap=ten-crop]", "imagenet-c", "/other", mce=0.70),
        result("timm:vit_small", "imagenet-c", "/d/c", mce=0.6),  # no intervention: not in the section
    ]
    sec = interventions_section(results)
    rows = {row[1]: row for row in sec.rows}
    assert sec.columns[:7] == ["model", "intervention", "clean error", "mCE", "mFR", "pm-0 accuracy", "pm-k accuracy"]
    assert rows["none (plain)"][2:7] == ["23.9", "76.7", "58.0", "84.8", "70.2"]
    assert rows["wrap clahe"][2:7] == ["23.5 (-0.4)", "74.5 (-2.2)", "60.0* (+2.0)", "–", "–"]
    tuned = rows["fine-tuned: 5 epochs, classes vid30, augment paper-noise"]
    assert tuned[0] == "torchvision:resnet50" and tuned[5:7] == ["84.0 (-0.8)", "71.0 (+0.8)"]
    assert rows["wrap ten-crop"][3] == "70.0"  # its data has no plain run: no change given, and a note says so
    assert any("no plain run of imagenet-c on /other" in n for n in sec.notes)
    assert any(n.startswith("* over the benchmark") for n in sec.notes)
    assert [row[0] for row in sec.rows].count("timm:vit_small") == 0
    assert sec.figures and sec.figures[0].key == "intervention-changes"
    corruption_only = [r for r in results if r.benchmark == "imagenet-c"]  # the family sections need real configs
    assert [s.key for s in build_sections(corruption_only)] == ["corruption", "interventions"]


def test_no_intervention_no_section(tmp_path):
    results = [result("torchvision:resnet50", "imagenet-c", "/d", mce=0.767),
               result(f"finetuned:{tmp_path / 'gone'}@0123456789ab", "imagenet-c", "/d", mce=0.7)]
    assert interventions_section(results) is None  # the fine-tuned folder is not here: no base to compare
    assert "interventions" not in [s.key for s in build_sections(results)]


def test_intervention_names():
    assert intervention_of("m [num_classes=30, wrap=clahe+ten-crop]") == ("m [num_classes=30]", "wrap clahe+ten-crop")
    assert intervention_of("torchvision:resnet50") == ("torchvision:resnet50", None)


def test_report_from_a_store_with_a_wrapped_run(tmp_path):
    import robustlab
    from robustlab.data.images import write_image
    from robustlab.report import write_report

    rng = np.random.default_rng(0)
    for cls in range(3):
        for i in range(4):
            img = rng.integers(0, 120, (36, 36, 3)).astype(np.uint8)
            img[..., cls] += 60
            write_image(tmp_path / "data" / f"c{cls}" / f"{i}.png", img)

    class Colour(__import__("torch").nn.Module):
        def forward(self, x):
            return 10 * x.mean(dim=(2, 3))

    from robustlab.models import Classifier, Preprocessing

    common = dict(store=tmp_path / "store", corruptions="brightness", severities="1-5", workers=0, progress=False,
                  class_map="sorted", device="cpu")
    model = Classifier(Colour(), name="python:colour", preprocessing=Preprocessing(resize=36, crop=32), num_classes=3)
    plain = robustlab.evaluate(model, "corrupted", tmp_path / "data", **common)
    wrapped = robustlab.evaluate(model, "corrupted", tmp_path / "data", wrap="clahe", **common)
    assert wrapped.model == "python:colour [wrap=clahe]"
    from robustlab.engine import opened_store

    with opened_store(tmp_path / "store") as st:
        path = write_report(st, tmp_path / "report.md")
    text = path.read_text()
    assert "## Interventions beside their plain model" in text
    mce_plain, mce_wrapped = plain.metric("mce_subset"), wrapped.metric("mce_subset")
    expected = f"{100 * mce_wrapped:.1f}* ({100 * (mce_wrapped - mce_plain):+.1f})"
    assert expected in text and f"{100 * mce_plain:.1f}*" in text
