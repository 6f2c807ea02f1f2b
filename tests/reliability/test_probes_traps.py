"""A newcomer's traps of issue 37, each with a test that fails on the old code: a chance-level model's
"relative mCE 0.0", runs that look identical, a relative `python:` path that finds no run, help
texts (`<bool>`, no `--no-X`, `-o` with two meanings, `--model` without demo:/results:/finetuned:),
the report's CE chart, fits and legends, and ImageNet-C-bar's resize of 224x224 images."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from robustlab.cli import app
from robustlab.corruptions import dataset as corrupt_dataset
from robustlab.report.collect import short_model
from robustlab.report.section_base import run_labels

from .helpers import EVALUATE, assert_error, assert_ok, image_folder, run

ROOT = Path(__file__).resolve().parents[2]

CONSTANT = """
import torch
from torch import nn


class AlwaysFirst(nn.Module):
    def forward(self, x):
        out = torch.zeros(x.shape[0], 2)
        out[:, 0] = 1.0
        return out


def build():
    return AlwaysFirst()
"""


def test_a_chance_level_model_gets_no_relative_ce(tmp_path):
    """66.7 % error at every severity got "relative mCE 0.0" under "Lower is better"."""
    (tmp_path / "const.py").write_text(CONSTANT)
    data = image_folder(tmp_path / "data")
    result = run("evaluate", "-m", f"python:{tmp_path / 'const.py'}:build", "-b", "corrupted", "-d", data,
                 "--store", tmp_path / "store", "--resize", "32", "--crop", "32", "--workers", "0", "--progress",
                 "none", "-c", "brightness,contrast", "-s", "1-5", "--json")
    assert_ok(result)
    out = json.loads(result.out)
    assert out["summary"]["relative_mce_subset"] is None if "relative_mce_subset" in out["summary"] else True
    assert not [m for m in out["metrics"] if m["name"].startswith("relative_mce") and not m["name"].endswith("_terms")]
    rel = out["summary"]["corruptions"]["brightness"]
    assert rel["relative_ce"] is None
    assert "this model's error does not move with severity (50.0 % clean and at every severity" in rel["relative_ce_na"]
    shown = run("show", out["run_id"], "--store", tmp_path / "store")
    assert "relative CE n/a for brightness: this model's error does not move with severity" in shown.out
    assert not re.search(r"relative mCE\S*\s+0\.0", shown.out)


def test_runs_and_show_tell_runs_of_one_model_apart(tmp_path):
    data = image_folder(tmp_path / "data", per_class=3)
    store = tmp_path / "store"
    for limit in ("2", "4"):
        assert_ok(run(*EVALUATE, "-b", "corrupted", "-d", data, "--store", store, "-c", "brightness", "-s", "1",
                      "--limit", limit))
    listed = run("runs", "--store", store)
    assert_ok(listed)
    assert "limit=2" in listed.out and "limit=4" in listed.out
    model = EVALUATE[EVALUATE.index("--model") + 1]
    shown = run("show", "--store", store, "-b", "corrupted", "-m", model)
    assert_error(shown, "2 runs of benchmark corrupted and model", "which differ in their settings", "limit=2",
                 "limit=4", "Give one run id.")
    assert "narrow it" not in shown.err  # both were given already
    as_json = json.loads(run("runs", "--store", store, "--json").out)
    assert sorted(r["settings"]["limit"] for r in as_json) == [2, 4]


def test_runs_show_the_attack_of_adversarial_runs(tmp_path):
    from robustlab.engine.listing import format_runs
    from robustlab.store import open_store

    with open_store(tmp_path / "store") as st:
        for attack in ("fgsm", "pgd"):
            st.register_run("python:/m.py:build", "adversarial-auc", "/data", {"data": "/data", "attack": attack,
                                                                               "eps": [0, 0.1], "steps": 10})
        text = format_runs(st.list_runs())
    assert "attack=fgsm" in text and "attack=pgd" in text


def test_a_relative_python_path_finds_its_run_again(tmp_path, monkeypatch):
    (tmp_path / "mymodel.py").write_text(CONSTANT)
    data = image_folder(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    result = run("evaluate", "-m", "python:mymodel.py:build", "-b", "corrupted", "-d", "data", "--store", "st",
                 "--resize", "32", "--crop", "32", "--workers", "0", "--progress", "none", "-c", "brightness",
                 "-s", "1", "--json")
    assert_ok(result)
    assert json.loads(result.out)["model"].startswith(f"python:{tmp_path}/mymodel.py:build")
    shown = run("show", "--store", "st", "-m", "python:mymodel.py:build")
    assert_ok(shown)
    assert json.loads(result.out)["run_id"] in shown.out
    assert json.loads(result.out)["run_id"] in run("runs", "--store", "st", "-m", "python:mymodel.py:build").out
    del data


def command_helps():
    import typer

    top = typer.main.get_command(app)

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*path, name])
        else:
            yield path, cmd

    return list(walk(top, []))


def test_help_texts_show_no_bool_and_the_negation_of_every_option_flag():
    for path in (["evaluate", "-b", "imagenet-c"], ["corrupt"], ["report"], ["runs"], ["show"], ["store", "check"],
                 ["finetune"], ["demo"]):
        result = run(*path, "--help")
        assert result.code == 0, result.err
        assert "<bool>" not in result.out, path
    helped = run("evaluate", "-b", "imagenet-c", "--help").out
    for flag in ("--clean", "--save-logits", "--on-the-fly"):
        assert re.search(rf"{flag}\s+--no-{flag[2:]}", helped), flag
    for source in ("torchvision:", "timm:", "onnx:", "python:", "finetuned:", "results:", "demo:"):
        assert source in helped
    assert "-O" in helped


def test_each_short_option_has_one_meaning():
    meaning: dict[str, set[str]] = {}
    for path, cmd in command_helps():
        for param in cmd.params:
            for short in [o for o in (*param.opts, *getattr(param, "secondary_opts", ())) if not o.startswith("--")
                          and o.startswith("-")]:
                meaning.setdefault(short, set()).add(next(o for o in param.opts if o.startswith("--")))
    assert {s: m for s, m in meaning.items() if len(m) > 1} == {}
    assert meaning["-o"] == {"--out"}


def test_o_in_evaluate_says_what_to_give_instead(tmp_path):
    data = image_folder(tmp_path / "data")
    result = run(*EVALUATE, "-b", "corrupted", "-d", data, "--store", tmp_path / "s", "-o", "shard_size=2")
    assert_error(result, "-o is not an option of evaluate", "-O KEY=VALUE")


def test_legends_keep_the_source_and_tell_two_runs_of_one_model_apart():
    long = "python:/home/someone/projects/robustness/experiments/models/resnet_variant_final.py:build"
    short = short_model(long)
    assert short.startswith("python:…") and short.endswith("final.py:build") and len(short) <= 28

    class Run:
        def __init__(self, rid, limit):
            self.run_id, self.model, self.benchmark, self.dataset = rid, long, "corrupted", "/data/x"
            self.config = {"data": "/data/x", "limit": limit, "seed": 0}

    labels = run_labels([Run("a" * 12, 50), Run("b" * 12, 100)])
    assert labels["a" * 12] != labels["b" * 12]
    assert labels["a" * 12].endswith("limit=50") and labels["b" * 12].endswith("limit=100")


def test_ce_chart_marks_held_out_corruptions(tmp_path):
    from robustlab.report.section_corruption import HELD_OUT_MARK, corruption_section

    class Result:
        run_id, model, benchmark, dataset, notes, problems = "r" * 12, "demo:cnn", "imagenet-c", "/d", [], []
        config = {"data": "/d"}
        metrics = []
        summary = {"clean_error": 0.3, "corruptions": {
            "fog": {"ce": 0.8, "errors": {"1": 0.4}, "mean_error": 0.4},
            "speckle_noise": {"ce": 0.9, "errors": {"1": 0.5}, "mean_error": 0.5}}}

    sec = corruption_section([Result()])
    chart = next(f for f in sec.figures if f.key == "ce-per-corruption")
    assert f"{HELD_OUT_MARK} held out: speckle_noise" in chart.caption
    assert f"speckle_noise {HELD_OUT_MARK}".encode() in chart.svg.encode() or "speckle_noise" in chart.svg


def test_no_fitted_line_where_the_correlation_is_not_significant():
    from robustlab.report.section_detection import rmse_scatter

    xs = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    flat = [0.61, 0.60, 0.62, 0.59, 0.61, 0.60]
    falling = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    fig = rmse_scatter({"flat": (xs, flat, list("abcdef"), (0.6, 0.0001)),
                        "falling": (xs, falling, list("abcdef"), (1.0, -0.01))}, metric="AP")
    assert "No line for flat (r = " in fig.caption and "falling" not in fig.caption.split("No line for")[1]


def test_readme_gives_the_test_commands_duration():
    text = " ".join((ROOT / "README.md").read_text().split())
    assert re.search(r"`make test` takes about \d+ min on 2 idle cores", text), "README says how long `make test` takes"


def write_224(root):
    rng = np.random.default_rng(0)
    (root / "a").mkdir(parents=True)
    img = rng.integers(0, 255, (224, 224, 3)).astype(np.uint8)
    Image.fromarray(img).save(root / "a" / "x.png")
    return img


def test_imagenet_c_bar_resizes_a_224_image_as_the_reference_does(tmp_path):
    """A 224x224 image went through unchanged; make_imagenet_c_bar.py resizes it to 256 and crops 224."""
    img = write_224(tmp_path / "src")
    follow = corrupt_dataset.ReferenceGeometry()(img)
    assert follow.shape == (224, 224, 3) and np.mean(follow != img) > 0.5  # zoomed
    assert corrupt_dataset.ReferenceGeometry(keep_input_size=True)(img) is img
    big = np.random.default_rng(1).integers(0, 255, (300, 400, 3)).astype(np.uint8)
    from robustlab.models.preprocessing import Preprocessing

    old = Preprocessing(resize=256, crop=224, interpolation="bilinear").prepare_image(big)
    assert np.array_equal(corrupt_dataset.ReferenceGeometry()(big), old)  # other sizes: exactly as before
    common = ["corrupt", tmp_path / "src", None, "--set", "imagenet-c-bar", "-c", "sparkles", "-s", "1", "--format",
              "png", "-j", "1", "--no-progress"]
    for keep, dst in ((False, tmp_path / "ref"), (True, tmp_path / "keep")):
        args = [dst if a is None else a for a in common] + (["--keep-input-size"] if keep else [])
        assert_ok(run(*args))
        assert json.loads((dst / "robustlab-corrupt.json").read_text())["settings"]["keep_input_size"] is keep
    out_ref = next((tmp_path / "ref").rglob("x.png"))
    out_keep = next((tmp_path / "keep").rglob("x.png"))
    assert not np.array_equal(np.asarray(Image.open(out_ref)), np.asarray(Image.open(out_keep)))
    # resuming with the other choice would mix two pixel rules in one folder
    assert_error(run(*[tmp_path / "ref" if a is None else a for a in common], "--keep-input-size"),
                 "keep_input_size False (asked: True)")
    assert_error(run("corrupt", tmp_path / "src", tmp_path / "plain", "-c", "fog", "-s", "1", "--keep-input-size"),
                 "--keep-input-size applies to --set imagenet-c-bar")
