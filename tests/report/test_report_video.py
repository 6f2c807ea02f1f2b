"""The video pm-k section: figures, numbers equal to those recomputed from stored predictions, examples."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from robustlab.engine import get_benchmark
from robustlab.report import collect_results, render_html, write_report
from robustlab.report.render import headline
from robustlab.report.section_video import anchor_examples, anchor_grid
from robustlab.store import open_store

try:
    from ..engine.test_video_benchmarks import CodeModel, frame_key, make_code_model3, make_vid_set, run
except ImportError:  # tests/ without __init__.py: its folders are top-level packages
    from engine.test_video_benchmarks import CodeModel, frame_key, make_code_model3, make_vid_set, run

VIDEO_FIGURES = ("pmk-vs-k", "original-vs-perturbed", "per-class-accuracy", "errors-by-offset", "conditional-accuracy",
                 "anchor-vs-neighbour")


def video_models() -> dict[str, CodeModel]:
    """Three models on the tiny set: exact (code -> class), one that confuses codes 1 and 2, one always 'cat'."""
    exact = make_code_model3()
    swap = torch.eye(13, 3) * 10
    swap[[1, 2]] = swap[[2, 1]]
    cat_only = CodeModel(torch.zeros(13, 3) + torch.tensor([5.0, 0, 0]))
    return {"exact": exact, "swap12": CodeModel(swap), "cat-only": cat_only}


def add_video_runs(store: Path, data: Path) -> None:
    make_vid_set(data)
    for name, model in video_models().items():
        model.name = name
        run(model, "video-pmk", data, store)


@pytest.fixture(scope="module")
def video_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-video")
    add_video_runs(root / "store", root / "vid")
    return root / "store", root / "vid"


def same_rows(a, b) -> bool:
    """Metric rows equal, NaN equal to NaN (e.g. conditional accuracy with no correct anchor)."""
    a, b = sorted(a, key=lambda r: r[:2]), sorted(b, key=lambda r: r[:2])
    return [r[:2] for r in a] == [r[:2] for r in b] and np.array_equal([r[2] for r in a], [r[2] for r in b],
                                                                       equal_nan=True)


def test_every_video_figure_is_there(video_store, tmp_path):
    store, _ = video_store
    with open_store(store) as st:
        html = write_report(st, tmp_path / "r.html").read_text()
    for key in VIDEO_FIGURES:
        assert f'id="fig-{key}"' in html, key
    assert "Natural perturbations from video (pm-k)" in html
    # three models: no fitted line or band from so few points (a 95% band from 3 points says nothing)
    assert "No fitted line or confidence band: 3 models" in html
    assert "<script" not in html


def test_numbers_equal_those_recomputed_from_stored_predictions(video_store):
    store, _ = video_store
    with open_store(store) as st:
        results = collect_results(st)
        assert len(results) == 3
        recomputed = {}
        for r in results:
            rows = get_benchmark(r.benchmark).metrics(r.run_config, st.read_predictions(r.run_id))
            assert same_rows(rows, r.metrics)
            recomputed[r.model] = {(m, s): v for m, s, v in rows}
    html = render_html(results)
    for r in results:
        t = recomputed[r.model]

        def ci(name):
            return (f"{100 * t[(name, '')]:.1f} [{100 * t[(f'{name}_low', '')]:.1f}, "
                    f"{100 * t[(f'{name}_high', '')]:.1f}]")

        assert f"<td>{r.model}</td><td>video-pmk</td>" in html
        assert f"<td>{ci('accuracy_original')}</td><td>{ci('accuracy_pmk')}</td><td>10</td>" in html, r.model
        drop = 100 * (t[("accuracy_original", "")] - t[("accuracy_pmk", "")])
        assert f"<td>{drop:.1f}</td>" in html
        assert headline(r) == f"pm-0 {ci('accuracy_original')}; pm-10 {ci('accuracy_pmk')}"
    exact = next(r for r in results if r.model == "exact")
    assert headline(exact) == "pm-0 83.3 [35.9, 99.6]; pm-10 50.0 [11.8, 88.2]"  # hand-worked in tests/engine


def test_anchor_examples_show_what_broke_each_anchor(video_store):
    store, _ = video_store
    with open_store(store) as st:
        exact = next(r for r in collect_results(st) if r.model == "exact")
        examples = anchor_examples(st, exact)
        grid = anchor_grid(st, exact, "exact")
    # v0 broken at +5 (predicted dog), v1 at +1 (fox); v2's anchor itself is wrong: listed last
    assert [(e.anchor, e.frame, e.offset) for e in examples] == [
        (frame_key(0, 0), frame_key(0, 5), 5), (frame_key(1, 0), frame_key(1, 1), 1),
        (frame_key(2, 0), frame_key(2, 0), 0)]
    assert [e.frame_prediction for e in examples] == ["dog", "fox", "cat"]
    assert examples[0].row_label() == "true: cat\nanchor: cat (right)\n+5 frames: dog (wrong)"
    assert examples[2].row_label() == "true: fox\nanchor: cat (wrong)"
    assert grid is not None and grid.png_data_uri.startswith("data:image/png;base64,")


def test_without_store_or_frames_the_grid_is_skipped(tmp_path):
    data = tmp_path / "vid"
    make_vid_set(data)
    result = run(make_code_model3(), "video-pmk", data, tmp_path / "store")
    html = render_html([result])  # no store: no example grid, every other figure
    assert 'id="fig-pmk-vs-k"' in html and 'id="fig-anchor-vs-neighbour"' not in html
    shutil.rmtree(data / "val" / "ILSVRC2015_val_00000000")  # one anchor's frames gone: its row is left out
    with open_store(tmp_path / "store") as st:
        assert anchor_grid(st, result, "m") is not None
        shutil.rmtree(data / "val")  # every frame gone: no grid, no error
        assert anchor_grid(st, result, "m") is None
        html = write_report(st, tmp_path / "r.html").read_text()
    assert 'id="fig-anchor-vs-neighbour"' not in html and 'id="fig-errors-by-offset"' in html
