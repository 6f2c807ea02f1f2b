"""The effective-robustness figure in a real browser at 1280 px: the reference models, the trend and
its band (split in two on ImageNet-A), the report's models by family; shown at its natural size
(readable), inside the window, with no text over text or over data."""

from __future__ import annotations

import pytest

from robustlab.report.figures import WIDE_FIGURE_PX
from robustlab.report.render import render_html
from robustlab.report.section_base import ReportContext

from .browser_checks import assert_figures_not_blank, browser, open_report  # noqa: F401
from .svg_layout import assert_no_overlap
from .test_report_shifts import TESTBED, pair_result, table_run

pytestmark = pytest.mark.browser

IMAGENET_A = ("val-on-imagenet-a-classes", "imagenet-a")
V2 = ("val", "imagenetv2-matched-frequency-format-val")


def report_runs():
    runs = [table_run(m, "imagenet-a", IMAGENET_A) for m in ("resnet50", "alexnet", "densenet121")]
    runs += [table_run(m, "imagenetv2-matched-frequency", V2) for m in ("resnet50", "vgg16", "resnet152")]
    clip = table_run("vit_b_32_clip_zeroshot", "imagenet-a", IMAGENET_A)
    runs.append(type(clip)(**{**clip.__dict__, "model": "open_clip:ViT-B-32:openai", "run_id": "c" * 16}))
    clip_v2 = table_run("vit_b_32_clip_zeroshot", "imagenetv2-matched-frequency", V2)
    runs.append(type(clip)(**{**clip_v2.__dict__, "model": "open_clip:ViT-B-32:openai", "run_id": "d" * 16}))
    runs.append(pair_result("hf:google/vit-base-patch16-224", 0.81, 0.70))
    return runs


def test_effective_robustness_figures_render_readably_at_1280_px(browser, tmp_path):  # noqa: F811
    html = render_html(report_runs(), title="effective robustness", context=ReportContext(reference_points=TESTBED))
    path = tmp_path / "report.html"
    path.write_text(html)
    page = open_report(browser, path, tmp_path / "effective.png")
    assert page.locator("section#effective-robustness").count() == 1
    figures = page.locator("section#effective-robustness figure.rl-figure")
    assert figures.count() == 2
    for i in range(figures.count()):
        svg = figures.nth(i).locator("svg").first
        box = svg.bounding_box()
        natural = float(svg.get_attribute("width").removesuffix("pt")) * 4 / 3
        assert natural > WIDE_FIGURE_PX
        assert box["width"] == pytest.approx(natural, rel=0.02)  # not scaled down: its 9-10 pt text stays readable
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1280  # and inside the window
        caption = figures.nth(i).inner_text()
        assert "standard models of imagenet_testbed_top1s_natural.csv" in caption
    assert "split at resnet50" in figures.nth(0).inner_text() or "split at resnet50" in figures.nth(1).inner_text()
    assert_figures_not_blank(page)
    assert assert_no_overlap(page) == 2
    page.close()
