"""The adversarial study runner: end to end on stand-in data, matched weights, resume, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from robustlab.errors import InputError
from robustlab.studies import build_architecture, config_from_dict, load_config, run_study, weights_fingerprint
from robustlab.studies.adversarial import condition_data
from robustlab.studies.data import StudyData

torch.set_num_threads(1)

TINY = {
    "study": {"seeds": 2, "epochs": 2, "checkpoints": [1, 2], "lr": 0.05, "batch_size": 32, "eval_samples": 64,
              "eps": [0.0, 0.05, 0.1, 0.2], "device": "cpu"},
    "conditions": [
        {"name": "digits-lenet", "architecture": "lenet", "dataset": "digits"},
        {"name": "textures-lenet", "architecture": "lenet", "dataset": "textures"},
    ],
    "comparisons": [{"a": "digits-lenet", "b": "textures-lenet"}],
}


@pytest.mark.slow
def test_tiny_study_runs_end_to_end_and_resumes(tmp_path):
    cfg = config_from_dict(TINY)
    logs: list[str] = []
    result = run_study(cfg, tmp_path, log=logs.append)
    assert len(result.rows) == 4 and len(result.comparisons) == 2
    assert all(r["n"] == 2 for r in result.rows)
    assert all(0 <= r["R_mean"] <= 1.5 for r in result.rows)
    assert all(c["n_a"] == c["n_b"] == 2 and 0 <= c["p"] <= 1 for c in result.comparisons)
    # Initial weights matched across the two datasets for each seed.
    assert result.matched_init == {"lenet/seed-0": True, "lenet/seed-1": True}
    inits = {(e.condition, e.seed): e.init_fingerprint for e in result.evaluations}
    assert inits[("digits-lenet", 0)] == inits[("textures-lenet", 0)] != inits[("digits-lenet", 1)]
    assert (tmp_path / "table.md").read_text().count("digits-lenet") >= 2
    saved = json.loads((tmp_path / "study.json").read_text())
    assert len(saved["evaluations"]) == 8 and saved["config"]["conditions"][0]["recipe"]["epochs"] == 2
    # Re-running resumes from the stored evaluations: nothing is trained again.
    logs.clear()
    again = run_study(cfg, tmp_path, log=logs.append)
    assert logs == [] and again.rows == result.rows


def test_an_interrupted_run_resumes_from_its_checkpoint_to_the_same_result(tmp_path):
    one = {**TINY, "conditions": TINY["conditions"][:1], "comparisons": [],
           "study": {**TINY["study"], "seeds": [0], "eval_samples": 32, "eps": [0.0, 0.1]}}
    cfg = config_from_dict(one)

    def stop_after_epoch_1(line: str) -> None:
        if " epoch 1:" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(cfg, tmp_path / "a", log=stop_after_epoch_1)
    assert torch.load(tmp_path / "a" / "runs" / "digits-lenet" / "seed-0" / "checkpoint.pt", weights_only=True)["epoch"] == 1
    logs: list[str] = []
    resumed = run_study(cfg, tmp_path / "a", log=logs.append)
    assert [line.split(" epoch ")[1].split(":")[0] for line in logs] == ["2"]  # epoch 1 not retrained
    straight = run_study(cfg, tmp_path / "b", log=lambda s: None)
    assert [e.accuracy for e in resumed.evaluations] == [e.accuracy for e in straight.evaluations]


def test_a_run_folder_refuses_other_training_settings(tmp_path):
    one = {**TINY, "conditions": TINY["conditions"][:1], "comparisons": [],
           "study": {**TINY["study"], "seeds": [0], "epochs": 1, "checkpoints": [1], "eval_samples": 16,
                     "eps": [0.0, 0.1]}}
    run_study(config_from_dict(one), tmp_path, log=lambda s: None)
    changed = {**one, "study": {**one["study"], "lr": 0.1}}
    with pytest.raises(InputError, match="different settings.*condition"):
        run_study(config_from_dict(changed), tmp_path, log=lambda s: None)


# --- the paper recipe, resolved per architecture ---------------------------------------------


def test_paper_recipe_is_resolved_per_architecture():
    cfg = config_from_dict({"study": {"recipe": "paper"}, "conditions": [
        {"name": "l", "architecture": "lenet", "dataset": "mnist"},
        {"name": "f", "architecture": "fc", "dataset": "cifar10"},
        {"name": "r", "architecture": "resnet50", "dataset": "cifar10"}]})
    small, fc, resnet = (c.recipe for c in cfg.conditions)
    assert small == fc
    assert (small.epochs, small.lr, small.checkpoints) == (300, 0.01, (1, 10, 25, 50, 150, 300))
    assert (resnet.epochs, resnet.lr, resnet.checkpoints) == (125, 0.1, (1, 10, 25, 50, 100, 125))
    for r in (small, resnet):
        assert (r.momentum, r.weight_decay, r.batch_size, r.lr_drop_fraction) == (0.9, 5e-4, 125, 0.5)
    assert small.drop_epoch == 150 and resnet.drop_epoch == 62
    assert cfg.conditions[1].width == 7500 and cfg.eval_samples is None  # the full test set by default


def test_quick_recipe_and_overrides():
    cfg = config_from_dict({"study": {"epochs": 4}, "conditions": [
        {"name": "a", "architecture": "resnet50", "dataset": "digits"},
        {"name": "b", "architecture": "lenet", "dataset": "digits", "lr": 0.05, "checkpoints": [2, 4]}]})
    a, b = (c.recipe for c in cfg.conditions)
    assert (a.epochs, a.lr, a.checkpoints) == (4, 0.01, (4,))
    assert (b.epochs, b.lr, b.checkpoints) == (4, 0.05, (2, 4))
    # a shortened paper run keeps the paper's attacked epochs up to its end, and its last epoch
    short = config_from_dict({"study": {"recipe": "paper", "epochs": 30}, "conditions": [
        {"name": "a", "architecture": "lenet", "dataset": "digits"}]}).conditions[0].recipe
    assert short.checkpoints == (1, 10, 25, 30) and short.drop_epoch == 15


def test_lr_is_divided_by_ten_after_half_the_epochs(tmp_path):
    raw = {"study": {"seeds": [0], "epochs": 2, "lr": 0.02, "eval_samples": 8, "eps": [0.0, 0.1], "device": "cpu"},
           "conditions": [{"name": "d", "architecture": "lenet", "dataset": "digits"}]}
    run_study(config_from_dict(raw), tmp_path, log=lambda s: None)
    state = torch.load(tmp_path / "runs" / "d" / "seed-0" / "checkpoint.pt", weights_only=True)
    group = state["optimizer"]["param_groups"][0]
    assert group["lr"] == pytest.approx(0.002) and group["momentum"] == 0.9 and group["weight_decay"] == 5e-4
    assert state["scheduler"]["milestones"] == {1: 1}  # after epoch 1 of 2


def test_fc_has_7500_hidden_units_by_default_and_width_is_an_option():
    fc = build_architecture("fc", seed=0)
    assert fc.net[1].out_features == 7500 and fc(torch.rand(2, 3, 32, 32)).shape == (2, 10)
    assert build_architecture("fc", seed=0, width=64).net[1].out_features == 64
    cfg = config_from_dict({"conditions": [{"name": "f", "architecture": "fc", "dataset": "digits", "width": 32}]})
    assert cfg.conditions[0].width == 32 and cfg.conditions[0].model_family == "fc-32"
    with pytest.raises(InputError, match="does not take width"):
        build_architecture("lenet", seed=0, width=3)


def test_matched_initial_weights_do_not_touch_global_rng():
    state = torch.random.get_rng_state()
    a = build_architecture("lenet", seed=3)
    b = build_architecture("lenet", seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    assert weights_fingerprint(a) == weights_fingerprint(b) != weights_fingerprint(build_architecture("lenet", seed=4))
    assert build_architecture("resnet50", seed=0, num_classes=10)(torch.rand(2, 3, 32, 32)).shape == (2, 10)


# --- data: Fusion pairs per model, test images and subsets shared by every model -----------------


FUSION = {"study": {"eval_samples": 100}, "conditions": [
    {"name": "digit-task", "architecture": "lenet", "dataset": "fusion", "fusion": ["digits", "textures"], "task": "a"},
    {"name": "object-task", "architecture": "fc", "dataset": "fusion", "fusion": ["digits", "textures"], "task": "b"},
    {"name": "plain", "architecture": "lenet", "dataset": "digits"}]}


def test_fusion_training_pairs_are_redrawn_per_epoch_and_per_model():
    cfg = config_from_dict(FUSION)
    data = StudyData(cfg.data_root, cfg.data_seed)
    digit, obj, _ = cfg.conditions
    train_s0, test = condition_data(digit, data, seed=0)
    e0, e1 = train_s0(0).images.copy(), train_s0(1).images.copy()
    assert e0.shape[1:] == (32, 32, 3) and not np.array_equal(e0, e1)           # re-paired every epoch
    assert not np.array_equal(e0, condition_data(digit, data, seed=1)[0](0).images)  # another seed
    assert not np.array_equal(e0, condition_data(obj, data, seed=0)[0](0).images)    # another condition
    np.testing.assert_array_equal(e1, condition_data(digit, data, seed=0)[0](1).images)  # reproducible
    assert set(np.unique(test.labels)) <= set(range(10))


def test_test_images_and_evaluation_subsets_are_the_same_for_every_model_and_condition():
    cfg = config_from_dict(FUSION)
    digit, obj, plain = cfg.conditions
    data, other = StudyData(cfg.data_root, cfg.data_seed), StudyData(cfg.data_root, cfg.data_seed)
    t_digit, t_obj = data.test_set(digit), other.test_set(obj)
    np.testing.assert_array_equal(t_digit.images, t_obj.images)  # same pixels whatever the task or seed
    assert not np.array_equal(t_digit.labels, t_obj.labels)      # labels follow the task
    pick = data.evaluation_indices(len(t_digit), cfg.eval_samples)
    assert len(pick) == 100 and np.all(np.diff(pick) > 0)
    np.testing.assert_array_equal(pick, other.evaluation_indices(len(data.test_set(plain)), 100))
    assert data.evaluation_indices(len(t_digit), None) is None
    assert not np.array_equal(pick, StudyData(cfg.data_root, 1).evaluation_indices(len(t_digit), 100))


def test_evaluation_uses_the_full_test_set_by_default(tmp_path):
    raw = {"study": {"seeds": [0], "epochs": 1, "eps": [0.0, 0.1], "device": "cpu"},
           "conditions": [{"name": "d", "architecture": "lenet", "dataset": "digits"}]}
    result = run_study(config_from_dict(raw), tmp_path, log=lambda s: None)
    n_test = len(StudyData("unused").base("digits", "test"))
    assert result.evaluations[0].n_images == n_test == 449


# --- pretrain then train (§4.3): a hand-made case --------------------------------------------


PRETRAIN = {
    "study": {"seeds": [0, 1, 2], "epochs": 2, "checkpoints": [1, 2], "lr": 0.05, "batch_size": 32, "eval_samples": 96,
              "eps": [0.0, 0.05, 0.1], "device": "cpu"},
    "conditions": [
        {"name": "textures-lenet", "architecture": "lenet", "dataset": "textures"},
        {"name": "digits-after-textures", "architecture": "lenet", "dataset": "digits", "pretrain": "textures-lenet"},
        {"name": "digits-lenet", "architecture": "lenet", "dataset": "digits"},
    ],
}


def test_pretrain_then_train_table_welch_and_plot(tmp_path):
    cfg = config_from_dict(PRETRAIN)
    assert cfg.condition("digits-after-textures").scratch == "digits-lenet"  # found automatically
    assert [c.name for c in cfg.training_order()][0] == "textures-lenet"
    result = run_study(cfg, tmp_path, log=lambda s: None)
    # the table: the pretrained condition has its rows, n = 3 seeds
    row = result.row("digits-after-textures", 2)
    assert row["n"] == 3 and row["start"] == "pretrained: textures-lenet" and 0 < row["R_mean"] <= 1.5
    # every pretrained seed started from the fully trained source model of the same seed
    for seed in cfg.seeds:
        source = build_architecture("lenet", seed=seed)
        source.load_state_dict(torch.load(tmp_path / "runs" / "textures-lenet" / f"seed-{seed}" / "checkpoint.pt",
                                          weights_only=True)["model"])
        start = {e.init_fingerprint for e in result.evaluations if e.condition == "digits-after-textures" and e.seed == seed}
        assert start == {weights_fingerprint(source)}
    # matched initial weights are checked on the from-scratch conditions only
    assert result.matched_init == {f"lenet/seed-{s}": True for s in cfg.seeds}
    # Welch's t-test, pretrained vs scratch, at both attacked epochs
    tests = [c for c in result.comparisons if c["kind"] == "pretrain-vs-scratch"]
    assert [(c["a"], c["b"], c["epoch"]) for c in tests] == [("digits-after-textures", "digits-lenet", 1),
                                                             ("digits-after-textures", "digits-lenet", 2)]
    assert all(0 <= c["p"] <= 1 and c["n_a"] == c["n_b"] == 3 for c in tests)
    # ... in the Markdown table, the HTML report (with its figure) and the SVG
    table = (tmp_path / "table.md").read_text()
    assert "pretrain-vs-scratch" in table and f"{tests[-1]['p']:.4f}" in table
    html = (tmp_path / "report.html").read_text()
    assert "Pretrain then train (visual hysteresis)" in html and 'id="fig-pretrain-vs-scratch-digits-after-textures"' in html
    assert f"p = {tests[-1]['p']:.4g}" in html and html.count("<svg") >= 2
    svg = (tmp_path / "figures" / "pretrain-vs-scratch-digits-after-textures.svg").read_text()
    assert svg.startswith("<svg")
    # the same model from a file (pretrain_checkpoint with {seed}) trains identically
    from_files = {"study": {**PRETRAIN["study"], "seeds": [1]}, "conditions": [
        {"name": "digits-lenet", "architecture": "lenet", "dataset": "digits"},
        {"name": "digits-after-textures", "architecture": "lenet", "dataset": "digits",
         "pretrain_checkpoint": str(tmp_path / "runs" / "textures-lenet" / "seed-{seed}" / "checkpoint.pt")}]}
    again = run_study(config_from_dict(from_files), tmp_path / "files", log=lambda s: None)
    assert [e.accuracy for e in again.evaluations if e.condition == "digits-after-textures"] == \
        [e.accuracy for e in result.evaluations if e.condition == "digits-after-textures" and e.seed == 1]


def test_missing_pretrain_checkpoint_fails_before_any_training(tmp_path):
    raw = {**PRETRAIN, "conditions": [
        {"name": "digits-lenet", "architecture": "lenet", "dataset": "digits"},
        {"name": "after", "architecture": "lenet", "dataset": "digits", "pretrain_checkpoint": "nowhere/seed-{seed}.pt"}]}
    (tmp_path / "nowhere").mkdir()
    torch.save({"model": build_architecture("lenet", seed=0).state_dict()}, tmp_path / "nowhere" / "seed-0.pt")
    cfg = config_from_dict(raw, base_dir=tmp_path)
    with pytest.raises(Exception, match=r"pretrain checkpoint .*nowhere/seed-1\.pt does not exist \(2 of 3 seeds "
                                        r"missing\).*Nothing was trained"):
        run_study(cfg, tmp_path / "out", log=lambda s: None)
    assert not (tmp_path / "out" / "runs").exists()
    # a checkpoint of another architecture: refused before training too
    for s in cfg.seeds:
        torch.save(build_architecture("fc", seed=s, width=8).state_dict(), tmp_path / "nowhere" / f"seed-{s}.pt")
    with pytest.raises(Exception, match="does not fit the architecture"):
        run_study(cfg, tmp_path / "out", log=lambda s: None)
    assert not (tmp_path / "out" / "runs").exists()


# --- bad input -------------------------------------------------------------------------------


LENET = {"name": "x", "architecture": "lenet", "dataset": "digits"}


@pytest.mark.parametrize("raw, message", [
    ({"conditions": []}, "no \\[\\[conditions\\]\\]"),
    ({"conditions": [{"name": "x", "architecture": "vgg", "dataset": "digits"}]},
     "unknown architecture 'vgg'; known architectures: lenet, fc, resnet50"),
    ({"study": {"recipe": "papr"}, "conditions": [LENET]}, "unknown recipe 'papr'; known recipes: paper, quick"),
    ({"conditions": [{"name": "x", "architecture": "lenet", "dataset": "imagenet"}]}, "unknown dataset"),
    ({"conditions": [{"name": "x", "architecture": "lenet"}]}, "lacks dataset"),
    ({"study": {"eps": [0.1, 0.0]}, "conditions": [LENET]}, "increasing"),
    ({"study": {"epochs": 2, "checkpoints": [3]}, "conditions": [LENET]}, "outside"),
    ({"study": {"lr_schedule": 1}, "conditions": [LENET]}, "unknown \\[study\\] keys"),
    ({"study": {"eval_samples": 0}, "conditions": [LENET]}, "eval_samples"),
    ({"study": {"lr": -1}, "conditions": [LENET]}, "lr must be positive"),
    ({"study": {"attack": "cw"}, "conditions": [LENET]}, "unknown attack 'cw'"),
    ({"conditions": [{**LENET, "width": 10}]}, "does not take width"),
    ({"conditions": [{**LENET, "architecture": "fc", "width": 0}]}, "width must be a positive integer"),
    ({"conditions": [{**LENET, "colour": 1}]}, "unknown keys \\['colour'\\]"),
    ({"conditions": [LENET], "comparisons": [{"a": "x", "b": "y"}]}, "unknown condition"),
    ({"conditions": [LENET, {**LENET, "name": "p", "pretrain": "nope"}]}, "pretrain names 'nope'"),
    ({"conditions": [LENET, {**LENET, "name": "p", "pretrain": "x", "pretrain_checkpoint": "a.pt"}]}, "not both"),
    ({"conditions": [{**LENET, "dataset": "textures"}, {**LENET, "name": "p", "pretrain": "x"}]},
     "compared with training from scratch; add a condition"),
    ({"conditions": [LENET, {**LENET, "name": "f", "architecture": "fc"}, {**LENET, "name": "p", "pretrain": "f"}]},
     "pretraining continues the same architecture"),
    ({"conditions": [LENET, {**LENET, "name": "p", "pretrain": "q"}, {**LENET, "name": "q", "pretrain": "p"}]},
     "cycle"),
])
def test_bad_configs_are_refused_clearly(raw, message):
    with pytest.raises(InputError, match=message):
        config_from_dict(raw)


def test_load_config_reads_toml(tmp_path):
    p = tmp_path / "study.toml"
    p.write_text('[study]\nseeds = [0, 5]\nepochs = 3\n\n[[conditions]]\nname = "a"\narchitecture = "fc"\ndataset = "digits"\n')
    cfg = load_config(p)
    recipe = cfg.conditions[0].recipe
    assert cfg.seeds == (0, 5) and recipe.checkpoints == (3,) and recipe.lr == 0.01 and recipe.batch_size == 125
    assert cfg.recipe == "quick" and cfg.base_dir == str(tmp_path)
    (tmp_path / "bad.toml").write_text("[study\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_config(tmp_path / "bad.toml")


@pytest.mark.slow
def test_cli_runs_a_study(tmp_path):
    from typer.testing import CliRunner

    from robustlab.cli import app

    cfg = tmp_path / "study.toml"
    cfg.write_text('[study]\nseeds = [0, 1]\nepochs = 1\neval_samples = 32\neps = [0.0, 0.1]\ndevice = "cpu"\n\n'
                   '[[conditions]]\nname = "fc-digits"\narchitecture = "fc"\nwidth = 64\ndataset = "digits"\n')
    res = CliRunner().invoke(app, ["study", "adversarial", "--config", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "| fc-digits | fc-64 | digits | scratch | 1 | 2 |" in res.output
    assert (tmp_path / "out" / "table.csv").read_text().startswith("condition,architecture")
    assert (tmp_path / "out" / "report.html").is_file() and "report.html" in res.output
