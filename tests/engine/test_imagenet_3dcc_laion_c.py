"""ImageNet-3DCC and LAION-C, the two plugin-file benchmarks, end to end on tiny trees in their released
layouts: `list`, `evaluate`, `show` and the report; their metrics against RobustBench's published 3DCC
numbers and against the LAION-C authors' superclass scoring, re-implemented here loop by loop."""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import numpy as np
import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.corruptions import corrupt
from robustlab.data.images import read_image, write_image
from robustlab.data.releases.sets import LAION_C_CLASSES
from robustlab.data.wordnet import ilsvrc_wnids
from robustlab.demo.world import CLASS_NAMES, scene_dataset, write_image_folder
from robustlab.engine import evaluate
from robustlab.errors import DataError, InputError
from robustlab.store import open_store
from shared_data import FIXTURES

FAST = dict(workers=0, device="cpu", progress=False)
THREE = ("near_focus", "fog_3d")


# --- ImageNet-3DCC --------------------------------------------------------------------------------------------


def test_the_3dcc_metrics_reproduce_robustbench(tmp_path):
    from robustlab.plugins.imagenet_3dcc import ALEXNET_ACCURACY, summarize_3dcc

    rows = list(csv.reader(open(FIXTURES / "robustbench" / "unaggregated_results_3d.csv")))
    published = json.loads((FIXTURES / "robustbench" / "published_3dcc.json").read_text())["published"]
    assert len(published) == 6
    for row in rows[2:]:
        errors: dict[str, list[float]] = defaultdict(list)
        for corruption, value in zip(rows[0][1:], row[1:]):
            errors[corruption].append(1 - float(value))
        if row[0] == "AlexNet":
            for c, v in errors.items():
                assert [1 - e for e in v] == pytest.approx(ALEXNET_ACCURACY[c], abs=1e-12)
        s = summarize_3dcc(errors)
        assert s["complete"]
        assert 100 * s["mean_accuracy"] == pytest.approx(float(published[row[0]]["corruptions_acc_3d"]), abs=0.005)
        assert 100 * s["mce"] == pytest.approx(float(published[row[0]]["corruptions_mce_3d"]), abs=0.005)
    with pytest.raises(InputError, match="unknown 3DCC corruption 'fog'"):
        summarize_3dcc({"fog": [0.5] * 5})


@pytest.fixture(scope="module")
def tree_3dcc(tmp_path_factory):
    """Two 3DCC corruptions x 5 severities of 20 demo scenes (10 digit classes, class folders 0..9 as they
    occur), each severity a stronger real corruption (a stand-in for the 3DCC effect)."""
    root = tmp_path_factory.mktemp("ImageNet-3DCC")
    scenes = scene_dataset("test", n=20, seed=3)
    stand_in = {"near_focus": "defocus_blur", "fog_3d": "fog"}
    for c in THREE:
        for s in range(1, 6):
            folder = root / c / str(s)
            write_image_folder(scenes, folder, fmt="png")
            for path in sorted(folder.rglob("*.png")):
                write_image(path, corrupt(read_image(path), stand_in[c], s, rng=s))
    return root


def test_imagenet_3dcc_end_to_end(tree_3dcc, tmp_path):
    from robustlab.plugins.imagenet_3dcc import ALEXNET_ACCURACY
    from robustlab.report import write_report

    runner = CliRunner()
    listed = runner.invoke(app, ["list", "benchmarks"])
    assert listed.exit_code == 0 and "imagenet-3dcc" in listed.output and "laion-c" in listed.output
    store = tmp_path / "store"
    result = evaluate("demo:cnn", "imagenet-3dcc", tree_3dcc, store=store, class_map=list(CLASS_NAMES), **FAST)
    errors = {c: [result.metric("error", f"{c}/{s}") for s in range(1, 6)] for c in THREE}
    for c in THREE:
        alexnet = np.mean([1 - a for a in ALEXNET_ACCURACY[c]])
        assert result.metric("ce", c) == pytest.approx(np.mean(errors[c]) / alexnet)
    assert result.metric("mce_subset") == pytest.approx(np.mean([result.metric("ce", c) for c in THREE]))
    assert result.metric("mean_accuracy_subset") == pytest.approx(1 - np.mean(list(errors.values())))
    assert errors["fog_3d"][4] > errors["fog_3d"][0]  # the stronger the corruption, the more errors
    assert result.config["subset"]["of_classes"] == 1000
    assert any("subset: 10 of 1,000 classes, 20 images per setting" in n for n in result.notes)
    assert any("missing far_focus, bit_error, color_quant" in n for n in result.notes)
    shown = runner.invoke(app, ["show", result.run_id, "--store", str(store)])
    assert shown.exit_code == 0 and "ImageNet-3DCC: top-1 errors and CE" in shown.output and "mCE (subset)" in \
        shown.output
    with open_store(store) as st:
        html = write_report(st, tmp_path / "report.html").read_text()
    assert "ImageNet-3DCC (3D common corruptions)" in html and "Mean error per 3DCC corruption" in html
    assert f"mCE (subset) {100 * result.metric('mce_subset'):.1f}" in html


def test_imagenet_3dcc_refuses_what_it_cannot_read(tree_3dcc, tmp_path):
    with pytest.raises(InputError, match="unknown 3DCC corruption 'near_focuss'. Did you mean 'near_focus'"):
        evaluate("demo:cnn", "imagenet-3dcc", tree_3dcc, store=tmp_path / "s", corruptions="near_focuss", **FAST)
    with pytest.raises(DataError, match=r"far_focus/1 is missing; fetch it \(robustlab data fetch imagenet-3dcc "
                                        r"--parts far_focus\)"):
        evaluate("demo:cnn", "imagenet-3dcc", tree_3dcc, store=tmp_path / "s", corruptions="far_focus", **FAST)
    with pytest.raises(DataError, match="does not exist; the layout is .*robustlab data fetch imagenet-3dcc"):
        evaluate("demo:cnn", "imagenet-3dcc", tmp_path / "nowhere", store=tmp_path / "s", **FAST)


# --- LAION-C ------------------------------------------------------------------------------------------------

#: One ImageNet class per superclass the test uses, and the colour channel that scores it.
CHANNELS = {"fish": ("n01440764", 0), "cat": ("n02123045", 1), "dog": ("n02085782", 2)}


class SuperclassChannelModel(nn.Module):
    """1,000 logits: -20 everywhere but three ImageNet classes (a fish, a cat, a dog), each scoring
    20 x the mean of one colour channel; a pure red image is a fish, green a cat, blue a dog."""

    def __init__(self) -> None:
        super().__init__()
        index = {w: i for i, w in enumerate(ilsvrc_wnids())}
        self.columns = [index[w] for w, _ in CHANNELS.values()]
        self.scale = nn.Parameter(torch.tensor(20.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.full((x.shape[0], 1000), -20.0)
        for column, (_, channel) in zip(self.columns, CHANNELS.values()):
            out[:, column] = self.scale * x[:, channel].mean(dim=(1, 2))
        return out


def colour(channel: int) -> np.ndarray:
    image = np.zeros((32, 32, 3), np.uint8)
    image[..., channel] = 255
    return image


@pytest.fixture(scope="module")
def tree_laion_c(tmp_path_factory):
    """Two distortions x 5 intensity levels x 3 superclass folders of 2 pure-colour images: at level L, the
    first L - 1 of the folders' second images carry a wrong colour, so accuracy falls with L exactly."""
    root = tmp_path_factory.mktemp("LAION-C")
    names = list(CHANNELS)
    for d in ("mosaic", "stickers"):
        for level in range(1, 6):
            for k, name in enumerate(names):
                folder = root / d / f"intensity_level_{level}" / name
                write_image(folder / "a.png", colour(CHANNELS[name][1]))
                wrong = k < level - 1
                write_image(folder / "b.png", colour(CHANNELS[names[(k + 1) % 3]][1] if wrong else CHANNELS[name][1]))
    return root


def reference_top1(logits: np.ndarray) -> list[str]:
    """The LAION-C authors' prediction, loop by loop as laionc/evaluation.py computes it: softmax over the
    1,000 classes, per superclass the mean probability of its classes, the best superclass."""
    from robustlab.plugins.laion_c import SUPERCLASSES

    superclass_of = {w: name for name, wnids in SUPERCLASSES.items() for w in wnids.split()}
    categories = [superclass_of.get(w) for w in ilsvrc_wnids()]
    out = []
    for row in logits:
        probs = np.exp(row - row.max())
        probs /= probs.sum()
        by_class = defaultdict(list)
        for cls, p in zip(categories, probs):
            if cls is not None:
                by_class[cls].append(p)
        means = {cls: sum(v) / len(v) for cls, v in by_class.items()}
        out.append(max(means, key=means.get))
    return out


def test_superclass_scores_match_the_reference_loop():
    from robustlab.plugins.laion_c import SUPERCLASSES, superclass_scores

    logits = np.random.default_rng(0).normal(0, 3, (40, 1000))
    logits[:, :50] += 4  # fish and others in the lead, so ties do not decide
    ours = [list(SUPERCLASSES)[i] for i in superclass_scores(logits).argmax(axis=1)]
    assert ours == reference_top1(logits)
    assert sum(len(v.split()) for v in SUPERCLASSES.values()) == 285
    assert tuple(SUPERCLASSES) == LAION_C_CLASSES  # the catalog's class folders are the plugin's superclasses


def test_laion_c_end_to_end(tree_laion_c, tmp_path):
    from robustlab.report import write_report

    store = tmp_path / "store"
    model = SuperclassChannelModel()
    result = evaluate(model, "laion-c", tree_laion_c, store=store, distortions="mosaic,stickers", **FAST)
    for d in ("mosaic", "stickers"):
        for level in range(1, 6):
            assert result.metric("accuracy", f"{d}/{level}") == pytest.approx(1 - min(level - 1, 3) / 6)
    expected = np.mean([1 - min(level - 1, 3) / 6 for level in range(1, 6)])
    assert result.metric("mean_accuracy", "mosaic") == pytest.approx(expected)
    assert result.metric("mean_accuracy_subset") == pytest.approx(expected)
    assert result.config["num_classes"] == 1000 and result.config["class_map"][:3] == ["fruit", "fish", "tools"]
    with open_store(store) as st:
        columns = next(iter(st.read_predictions(result.run_id).values()))
    assert columns["top5_index"].shape[1] == 5 and columns["top5_score"].dtype == np.float32
    shown = CliRunner().invoke(app, ["show", result.run_id, "--store", str(store)])
    assert "LAION-C: superclass top-1 accuracy" in shown.output and "mean accuracy (subset)" in shown.output
    with open_store(store) as st:
        html = write_report(st, tmp_path / "report.html").read_text()
    assert "LAION-C (out-of-distribution distortions)" in html and "Accuracy by intensity level" in html
    with pytest.raises(InputError, match="unknown LAION-C distortion 'glitch'. Did you mean 'glitched'"):
        evaluate(model, "laion-c", tree_laion_c, store=store, distortions="glitch", **FAST)
    with pytest.raises(DataError, match="glitched/intensity_level_1 is missing"):
        evaluate(model, "laion-c", tree_laion_c, store=store, **FAST)


def test_laion_c_refuses_foreign_folders_and_an_incomplete_tree(tree_laion_c, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tree_laion_c, copy)
    (copy / "mosaic" / "intensity_level_2" / "dog" / "b.png").unlink()
    with pytest.raises(DataError, match=r"mosaic/2/dog lacks 1 of 2 files \(e.g. b.png\)"):
        evaluate(SuperclassChannelModel(), "laion-c", copy, store=tmp_path / "s", distortions="mosaic", **FAST)
    (copy / "mosaic" / "intensity_level_3" / "horse").mkdir()
    with pytest.raises(DataError, match="holds horse, which are not LAION-C superclasses"):
        evaluate(SuperclassChannelModel(), "laion-c", copy, store=tmp_path / "s", distortions="mosaic", **FAST)
