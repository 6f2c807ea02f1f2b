"""Figure layout: no legend or label over plotted data, no text over text, wide figures get a row.

The browser tests render real reports (and every figure function with demo-sized data: 19
corruptions, three models, long legend labels, labelled scatter points) in headless Chromium
at 1280 px and measure the SVG text and data geometry (see ``svg_layout``). A deliberately bad
figure proves the check can fail.
"""

from __future__ import annotations

import jinja2
import matplotlib.pyplot as plt
import numpy as np
import pytest

from robustlab.report import figures as F
from robustlab.report import write_report
from robustlab.report.section_base import Section
from robustlab.report.section_detection import rmse_scatter
from robustlab.report.section_perturbation import horizontal_bars
from robustlab.report.section_video import paired_class_bars
from robustlab.store import open_store

from .browser_checks import browser  # noqa: F401
from .svg_layout import assert_no_overlap, svg_layout_problems

CORRUPTIONS = ["gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur",
               "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate",
               "jpeg_compression", "speckle_noise", "gaussian_blur", "spatter", "saturate"]
MODELS = ["demo:baseline", "demo:cnn", "demo:cnn-noise"]


def page_of(figures: list[F.Figure], path):
    """The report template with one section holding ``figures`` (what a report does with them)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("robustlab.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    html = env.get_template("report.html.j2").render(
        title="figures", version="test", store="", n_runs=0, summary_columns=[], summary_rows=[],
        sections=[Section("figures", "Figures", "Every figure function with demo-sized data.", figures=figures)])
    path.write_text(html)
    return path


def demo_sized_figures() -> list[F.Figure]:
    rng = np.random.default_rng(0)
    # tall bars reaching the top right corner, where a default legend would sit
    ce = {m: list(rng.uniform(20, 100, len(CORRUPTIONS)) + (0 if i else 8)) for i, m in enumerate(MODELS)}
    ce["demo:baseline"] = [100.0] * len(CORRUPTIONS)
    figs = [F.bar_groups("ce", "CE", "", CORRUPTIONS, ce, ylabel="corruption error CE (%)", reference=100,
                         reference_label="baseline (100)")]
    sev = {m: [5 + 10 * i + 12 * s for s in range(6)] for i, m in enumerate(MODELS)}
    figs.append(F.lines("sev", "severity", "", list(range(6)), sev, xlabel="severity", ylabel="top-1 error (%)"))
    figs.append(F.lines("pmk", "pm-k", "", list(range(11)), {m: list(np.linspace(90 - 20 * i, 60 - 20 * i, 11))
                                                            for i, m in enumerate(MODELS)},
                        xlabel="k", ylabel="accuracy (%)", ylim=(0, 100),
                        bands={m: (list(np.linspace(80 - 20 * i, 45 - 20 * i, 11)),
                                   list(np.linspace(97 - 20 * i, 75 - 20 * i, 11))) for i, m in enumerate(MODELS)}))
    from robustlab.metrics.stats import linear_fit

    xs, ys = [0.55, 0.75, 0.9, 0.95], [0.3, 0.45, 0.6, 0.8]
    pts = {f"model {i}": (x, y, (x - 0.05, min(1, x + 0.04)), (y - 0.08, y + 0.08)) for i, (x, y) in enumerate(zip(xs, ys))}
    figs.append(F.scatter_with_fit("scatter", "scatter", "", pts, xlabel="clean accuracy (%)",
                                   ylabel="accuracy under corruption (%)", fit=linear_fit(xs, ys)))
    diffs = rng.normal(0, 8, len(CORRUPTIONS))
    verdicts = ["lower" if d < -5 else "higher" if d > 5 else "unclear" for d in diffs]
    figs.append(F.difference_bars("diff", "difference", "", CORRUPTIONS, diffs, [(d - 4, d + 4) for d in diffs],
                                  verdicts, ylabel="error difference (points)",
                                  legend_labels={"lower": "demo:cnn-noise errs less (95% interval below 0)",
                                                 "higher": "demo:cnn-noise errs more (interval above 0)",
                                                 "unclear": "no clear difference (interval contains 0)"}))
    # the detection section's labelled scatter: 15 corruptions, some points close together
    rmse = [14, 15, 24, 45, 46, 47, 55, 79, 80, 22, 25, 22, 29, 38, 52]
    rpc = [0.94, 0.84, 0.74, 0.69, 0.67, 0.66, 0.76, 0.70, 0.67, 0.50, 0.45, 0.43, 0.26, 0.05, 0.08]
    names = CORRUPTIONS[:15]
    figs.append(rmse_scatter({"demo:detector": (rmse, rpc, names, (0.57, -0.0002))}, metric="AP"))
    seqs = [f"{p}: {i}/000{j}.png" for p, i, j in zip(["translate", "shot_noise", "rotate"] * 4, range(12), range(12))]
    figs.append(horizontal_bars("flips", "flips", "", seqs, {m: list(rng.uniform(0, 40, 12)) for m in MODELS},
                                xlabel="flip probability (%)"))
    figs.append(paired_class_bars("classes", "classes", "", [str(c) for c in range(10)],
                                  {m: (list(rng.uniform(50, 100, 10)), list(rng.uniform(20, 100, 10))) for m in MODELS},
                                  ylabel="accuracy (%)"))
    return figs


def bad_figure() -> F.Figure:
    """A legend over tall bars, two labels on top of each other and a label on a bar (what the
    check must catch)."""
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(np.arange(6), [95, 96, 97, 98, 99, 100], label="a model with a long name")
    ax.legend(loc="upper right")
    ax.annotate("first label", (2, 50))
    ax.annotate("second label", (2.3, 51))
    ax.text(5, 20, "on a bar", ha="center")
    F.tag_data_artists(fig)
    import io

    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return F.Figure("bad", "bad", "", svg=buf.getvalue()[buf.getvalue().index("<svg"):])


def test_legends_inside_the_axes_are_moved_above_them():
    fig, ax = plt.subplots()
    ax.bar(range(4), [9, 10, 10, 9], label="bars")
    ax.plot(range(4), [5, 6, 7, 8], label="line")
    ax.legend(loc="upper right")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert ax.get_legend().get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    F.move_legends_off_data(fig)
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == entries and sorted(entries) == ["bars", "line"]
    assert legend.get_window_extent(renderer).y0 >= ax.get_window_extent(renderer).y1
    plt.close(fig)


def test_point_labels_do_not_overlap_each_other_or_points():
    fig, ax = plt.subplots(figsize=(4, 3))
    xs, ys = [1, 1.05, 1.1, 2, 3], [1, 1.02, 0.98, 2, 3]
    ax.plot(xs, ys, "o")
    ax.set_xlim(0, 4)
    ax.set_ylim(0, 4)
    left_out = F.label_points(ax, xs, ys, ["alpha", "beta", "gamma", "delta", "epsilon"])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert len(boxes) + len(left_out) == 5 and len(boxes) >= 3
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)
        for x, y in zip(xs, ys):
            px, py = ax.transData.transform((x, y))
            assert not (a.x0 - 2 <= px <= a.x1 + 2 and a.y0 - 2 <= py <= a.y1 + 2)
    plt.close(fig)


def test_wide_figures_take_a_whole_row(tmp_path):
    narrow = F.lines("n", "n", "", [0, 1], {"a": [0, 1]}, xlabel="x", ylabel="y")
    wide = F.bar_groups("w", "w", "", CORRUPTIONS, {m: list(range(19)) for m in MODELS}, ylabel="y")
    assert narrow.width_px < F.WIDE_FIGURE_PX < wide.width_px
    assert not narrow.wide and wide.wide
    html = page_of([narrow, wide], tmp_path / "page.html")
    text = html.read_text()
    assert 'class="rl-figure" id="fig-n"' in text and 'class="rl-figure wide" id="fig-w"' in text


@pytest.mark.browser
def test_the_check_finds_a_legend_over_data_and_overlapping_labels(browser, tmp_path):  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(page_of([bad_figure()], tmp_path / "bad.html").as_uri())
    problems = svg_layout_problems(page)["fig-bad"]
    assert any(p.startswith("legend legend_1 covers data rl-data") for p in problems), problems
    assert any("overlaps text" in p for p in problems), problems
    assert any(p.startswith("text ") and "covers data rl-data-0-5" in p for p in problems), problems
    page.close()


@pytest.mark.browser
def test_demo_sized_figures_have_no_overlap(browser, tmp_path):  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(page_of(demo_sized_figures(), tmp_path / "figures.html").as_uri())
    assert assert_no_overlap(page) == 8
    page.close()


@pytest.mark.browser
def test_report_figures_have_no_overlap(report_store, browser, tmp_path):  # noqa: F811
    store, _ = report_store
    with open_store(store) as st:
        path = write_report(st, tmp_path / "report.html")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(path.as_uri())
    assert assert_no_overlap(page) >= 5
    page.close()
