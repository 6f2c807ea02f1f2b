"""The perturbation-stability section: figures, numbers recomputed from stored predictions, examples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robustlab.engine import evaluate, get_benchmark
from robustlab.benchmarks.perturbation import most_flipping_sequences
from robustlab.perturbations.dataset import make_settings, perturb_dataset
from robustlab.report import collect_results, render_html, write_report
from robustlab.report.render import headline
from robustlab.report.section_perturbation import most_flipping, perturbation_frames
from robustlab.report.sections import run_labels
from robustlab.store import open_store

try:
    from ..engine.conftest import WNIDS, make_folder
    from ..engine.tiny_models import ChannelModel, TinyCNN
except ImportError:  # tests/ without __init__.py: its folders are top-level packages
    from engine.conftest import WNIDS, make_folder
    from engine.tiny_models import ChannelModel, TinyCNN

#: 31 frames in both settings, so 32 px sequences pass as ImageNet-P (imagenet setting) quickly
PERTURBATIONS = "gaussian_noise,rotate,scale,brightness"
PERTURBATION_FIGURES = ("flip-probability", "flip-rate", "top5-distance", "most-flipping-sequences",
                        "perturbation-examples")


def add_perturbation_runs(store: Path, root: Path) -> None:
    """Three models on written 32 px sequences (imagenet-p), one on sequences made on the fly (perturbed)."""
    images = make_folder(root / "images", WNIDS, 2, size=(32, 32), seed=11)
    perturb_dataset(images, root / "seqs", make_settings(PERTURBATIONS, setting="cifar", format="npy", seed=3),
                    workers=1)
    models = {"channel": ChannelModel(1000), "tiny-a": TinyCNN(1000, seed=1), "tiny-b": TinyCNN(1000, seed=2)}
    for name, model in models.items():
        model.name = name
        evaluate(model, "imagenet-p", root / "seqs", store=store, workers=0, batch_size=6, setting="imagenet",
                 progress=False)
    evaluate(models["tiny-a"], "perturbed", images, store=store, workers=0, batch_size=6, setting="cifar",
             perturbations="rotate", progress=False)


@pytest.fixture(scope="module")
def perturbation_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-perturbation")
    add_perturbation_runs(root / "store", root)
    return root / "store"


def test_every_perturbation_figure_is_there(perturbation_store, tmp_path):
    with open_store(perturbation_store) as st:
        html = write_report(st, tmp_path / "r.html").read_text()
    for key in PERTURBATION_FIGURES:
        assert f'id="fig-{key}"' in html, key
    assert "Perturbation stability (ImageNet-P)" in html
    assert "published AlexNet (ImageNet-P)" in html  # ImageNet-P runs divide by the paper's values: bars shown
    assert "<script" not in html


def test_numbers_equal_those_recomputed_from_stored_predictions(perturbation_store):
    with open_store(perturbation_store) as st:
        results = collect_results(st)
        recomputed = {r.run_id: {(m, s): v for m, s, v in
                                 get_benchmark(r.benchmark).metrics(r.run_config, st.read_predictions(r.run_id))}
                      for r in results}
    assert len(results) == 4
    html = render_html(results)
    for r in results:
        t = recomputed[r.run_id]
        assert t == {(m, s): v for m, s, v in r.metrics}
        fps = [v for (m, s), v in t.items() if m == "flip_probability" and s.endswith("/stride-1")]
        mean_fp = f"{100 * np.mean(fps):.2f}"
        if r.benchmark == "imagenet-p":  # 4 of the 10 test perturbations: the subset means, marked
            mfr, mt5d = f"{100 * t[('mfr_subset', '')]:.1f} (4 of 10)", f"{100 * t[('mt5d_subset', '')]:.1f} (4 of 10)"
            assert f"<td>{mfr}</td><td>{mt5d}</td><td>{mean_fp}</td>" in html
            assert headline(r) == f"mFR {mfr}; mT5D {mt5d} vs published AlexNet"
        else:  # cifar setting: no AlexNet normalisation
            assert f"<td>–</td><td>–</td><td>{mean_fp}</td>" in html
            assert headline(r) == f"mean flip probability {mean_fp}%"


def test_most_flipping_sequences_match_the_plugin(perturbation_store):
    with open_store(perturbation_store) as st:
        run = next(r for r in collect_results(st) if r.model == "tiny-b")
        labels, series = most_flipping(st, [run], run_labels([run]), top=5)
    top = [x for x in most_flipping_sequences(run.run_id, store=perturbation_store, top=5) if x["flip_probability"]]
    assert top and series["tiny-b"] == pytest.approx([100 * x["flip_probability"] for x in top])
    assert labels[0].startswith(f"{top[0]['setting']}: ")
    assert series["tiny-b"][0] > 0


def test_example_frames_are_the_frames_the_run_read(perturbation_store):
    with open_store(perturbation_store) as st:
        run = next(r for r in collect_results(st) if r.benchmark == "imagenet-p")
    folders, rows, picked, lengths = perturbation_frames(run)
    assert folders == run.config["folders"] and all(p == [0, 6, 12, 18, 24, 30] for p in picked)
    assert set(lengths) == {31}
    seq = np.load(sorted((Path(run.config["data"]) / "rotate").rglob("*.npy"))[0])
    np.testing.assert_array_equal(rows[folders.index("rotate")][2], seq[12])
    assert not np.array_equal(rows[folders.index("rotate")][0], rows[folders.index("rotate")][-1])


def test_rates_name_their_baseline_run_and_no_published_bars_beside_own_data(tmp_path):
    """perturbed (cifar setting) runs normalised by a baseline run: the flip-rate figure and the
    table name that run, and AlexNet's published ImageNet-P bars (other images, 224 px) are absent."""
    images = make_folder(tmp_path / "images", WNIDS, 2, size=(32, 32), seed=11)
    store = tmp_path / "store"
    opts = dict(store=store, workers=0, batch_size=6, setting="cifar", perturbations="rotate,scale,translate",
                progress=False)
    base_model, model = TinyCNN(1000, seed=1), TinyCNN(1000, seed=2)
    base_model.name, model.name = "tiny-base", "tiny-b"
    base = evaluate(base_model, "perturbed", images, baseline_run="self", **opts)
    evaluate(model, "perturbed", images, baseline_run=base.run_id, **opts)
    with open_store(store) as st:
        html = write_report(st, tmp_path / "r.html").read_text()
    assert "AlexNet" not in html
    assert f"tiny-base (run {base.run_id[:10]})" in html  # the "normalised by" column
    assert "flip rate FR (% of tiny-base)" in html
    # CIFAR-10-P lengths differ (translate 16 frames, rotate and scale 31): each row names its own frames
    assert "the sequences differ in length" in html and "Frames 0, 6, 12" not in html
