"""open_clip: and hf: models through whole runs on tiny local models: ImageNet-R from the command line
and from Python, a folder of your own with the folder names as zero-shot classes, and a second run
after an edit that is a new run, not stored numbers."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner
from .conftest import make_folder

from robustlab.cli import app
from robustlab.data.images import read_image
from robustlab.data.natural_shifts import imagenet_r_indices, subset_wnids
from robustlab.engine import evaluate
from robustlab.errors import ModelError
from robustlab.models import load_model
from robustlab.store import open_store
from tiny_sources import hf_recipe_logits, imagenet_id2label, open_clip_recipe_logits, robustlab_logits, \
    tiny_hf_vit, tiny_open_clip

pytest.importorskip("open_clip")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROBUSTLAB_CACHE", str(tmp_path_factory.mktemp("robustlab-cache")))
        yield


@pytest.fixture(scope="module")
def imagenet_r(tmp_path_factory):
    base = tmp_path_factory.mktemp("imagenet-r-data")
    wnids = subset_wnids(imagenet_r_indices())[:3]
    return make_folder(base / "imagenet-r", wnids, 3, size=(40, 52), seed=11), \
        make_folder(base / "val", wnids, 2, size=(44, 36), seed=12)


def stored(store_path, run_id, setting: str = "shifted") -> dict[str, int]:
    """{sample id: stored top-1 class} of a run's units of ``setting``."""
    with open_store(str(store_path), must_exist=True) as st:
        units = st.read_predictions(run_id)
    return {str(i): int(t[0]) for key, cols in units.items() if key.startswith(f"{setting}/")
            for i, t in zip(cols["sample_id"], cols["top5_index"])}


def test_open_clip_on_imagenet_r_from_the_command_line(tmp_path, cache, imagenet_r):
    root, val = imagenet_r
    config, checkpoint = tiny_open_clip(tmp_path / "clip")
    store = tmp_path / "store"
    args = ["evaluate", "-m", f"open_clip:{config}:{checkpoint}", "-b", "imagenet-r", "-d", str(root), "--store",
            str(store), "--device", "cpu", "--progress", "none", "--json", "--clean-data", str(val),
            "--zero-shot-classes", "subset"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout[out.stdout.index("{"):])
    assert result["config"]["zero_shot_classes"] == "subset"
    assert result["summary"]["shifted"]["n"] == 9 and result["summary"]["clean"]["n"] == 6
    # every stored prediction is the adapter's, whose equality with open_clip's recipe tests/models checks
    model = load_model(f"open_clip:{config}:{checkpoint}", device="cpu")
    from robustlab.benchmarks.natural_shift import ImageNetR

    bench = ImageNetR()
    head = model.for_labels(bench.zero_shot_labels(bench.config_of(result["config"])))
    preds = stored(store, result["run_id"])
    shifted = sorted(preds)
    assert len(shifted) == 9
    logits = robustlab_logits(head, [read_image(root / f) for f in shifted])
    assert [preds[f] for f in shifted] == logits.argmax(1).tolist()
    # the same model with other image weights is another run, computed anew
    state = torch.load(checkpoint, weights_only=True)
    state["visual.conv1.weight"] = -state["visual.conv1.weight"]
    edited = tmp_path / "clip" / "edited.pt"
    torch.save(state, edited)
    again = CliRunner().invoke(app, [a if a != f"open_clip:{config}:{checkpoint}" else f"open_clip:{config}:{edited}"
                                     for a in args])
    assert again.exit_code == 0, again.output
    second = json.loads(again.stdout[again.stdout.index("{"):])
    assert second["run_id"] != result["run_id"] and second["units_computed"] == second["units_total"] > 0
    assert second["model_hash"] != result["model_hash"]


def test_hf_on_imagenet_r_equals_transformers_image_by_image(tmp_path, imagenet_r):
    root, val = imagenet_r
    folder = tiny_hf_vit(tmp_path / "vit", imagenet_id2label())
    result = evaluate(f"hf:{folder}", "imagenet-r", root, clean_data=str(val), store=tmp_path / "s", workers=0,
                      device="cpu", progress=False)
    preds = stored(tmp_path / "s", result.run_id)
    shifted = sorted(preds)
    want = hf_recipe_logits(folder, [read_image(root / f) for f in shifted])[:, imagenet_r_indices()]
    assert [preds[f] for f in shifted] == want.argmax(1).tolist()  # the model's 1,000 logits projected to the 200
    config = json.loads((folder / "config.json").read_text())
    config["layer_norm_eps"] = 0.5
    (folder / "config.json").write_text(json.dumps(config))
    edited = evaluate(f"hf:{folder}", "imagenet-r", root, clean_data=str(val), store=tmp_path / "s", workers=0,
                      device="cpu", progress=False)
    assert edited.run_id != result.run_id and edited.units_total > 0
    pets = tiny_hf_vit(tmp_path / "pets", {0: "cat", 1: "dog"})
    with pytest.raises(ModelError, match="not ImageNet-1k's 1,000 classes"):
        evaluate(f"hf:{pets}", "imagenet-r", root, store=tmp_path / "s", workers=0, device="cpu", progress=False)


def test_a_zero_shot_model_on_a_folder_of_your_own_uses_the_folder_names(tmp_path, cache, labelled_root):
    config, checkpoint = tiny_open_clip(tmp_path / "clip")
    result = evaluate(f"open_clip:{config}:{checkpoint}", "corrupted", labelled_root, corruptions="brightness",
                      severities="1", store=tmp_path / "s", workers=0, device="cpu", progress=False)
    clean = stored(tmp_path / "s", result.run_id, "clean")
    files = sorted(clean)
    assert len(files) == 9
    want = open_clip_recipe_logits(config, checkpoint, [read_image(labelled_root / f) for f in files],
                                   ["cat", "dog", "fox"])
    assert [clean[f] for f in files] == want.argmax(1).tolist()


@pytest.mark.slow
def test_open_clip_default_head_projects_clips_1000_classes(tmp_path, cache, imagenet_r):
    """The default zero_shot_classes=imagenet: CLIP's 1,000-class head (80,000 prompts), projected to the 200."""
    root, val = imagenet_r
    config, checkpoint = tiny_open_clip(tmp_path / "clip")
    result = evaluate(f"open_clip:{config}:{checkpoint}", "imagenet-r", root, clean_data=str(val),
                      store=tmp_path / "s", workers=0, device="cpu", progress=False)
    assert "zero_shot_classes" not in result.config
    preds = stored(tmp_path / "s", result.run_id)
    shifted = sorted(preds)
    model = load_model(f"open_clip:{config}:{checkpoint}", device="cpu")
    logits = robustlab_logits(model, [read_image(root / f) for f in shifted])[:, imagenet_r_indices()]
    assert [preds[f] for f in shifted] == logits.argmax(1).tolist()


def test_attacks_on_a_zero_shot_model_use_the_folder_names_too(tmp_path, cache, labelled_root):
    config, checkpoint = tiny_open_clip(tmp_path / "clip")
    result = evaluate(f"open_clip:{config}:{checkpoint}", "adversarial-auc", labelled_root, eps=[0.0, 0.05],
                      store=tmp_path / "s", workers=0, device="cpu", progress=False, class_map="sorted")
    clean = next(v for n, setting, v in result.metrics if n == "accuracy" and setting.endswith("/0"))
    files = sorted(f"{c}/{p.name}" for c in ("cat", "dog", "fox") for p in (labelled_root / c).iterdir())
    want = open_clip_recipe_logits(config, checkpoint, [read_image(labelled_root / f) for f in files],
                                   ["cat", "dog", "fox"]).argmax(1)
    labels = torch.tensor([("cat", "dog", "fox").index(f.split("/")[0]) for f in files])
    assert clean == pytest.approx(float((want == labels).float().mean()))  # the head over cat, dog and fox
