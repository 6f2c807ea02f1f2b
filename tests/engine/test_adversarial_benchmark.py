"""Benchmark adversarial-auc through robustlab.evaluate: stored correctness, R, resume, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import robustlab
from robustlab.attacks import epsilon_sweep
from robustlab.data.arrays import ArrayDatasetSamples
from robustlab.data.classification import limit_samples
from robustlab.data.standins import digits_dataset
from robustlab.errors import InputError, ModelError
from robustlab.metrics import robustness_auc
from robustlab.studies import build_architecture

torch.set_num_threads(1)
GRID = [0.0, 0.05, 0.1, 0.2]


@pytest.fixture(scope="module")
def trained_lenet():
    """A LeNet trained briefly on the digits stand-in (accuracy well above chance)."""
    from robustlab.studies.adversarial import train_epoch

    model = build_architecture("lenet", seed=0)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    train = digits_dataset(32, split="train")
    for epoch in range(3):
        train_epoch(model, train, opt, batch_size=64, seed=epoch, device=torch.device("cpu"))
    return model.eval()


def run(model, tmp_path, **kw):
    return robustlab.evaluate(model, "adversarial-auc", "digits", store=tmp_path / "store", eps=kw.pop("eps", GRID),
                              limit=kw.pop("limit", 96), shard_size=kw.pop("shard_size", 48), workers=0,
                              batch_size=32, progress=False, **kw)


def test_metrics_equal_a_direct_sweep_and_r(trained_lenet, tmp_path):
    result = run(trained_lenet, tmp_path)
    test_set = digits_dataset(32, split="test")
    x, y = test_set.tensors()
    kept = list(limit_samples(ArrayDatasetSamples(test_set), 96).positions)  # --limit 96: balanced over classes
    assert np.bincount(y[kept].numpy()).min() >= 9
    direct = epsilon_sweep(trained_lenet, (x[kept], y[kept]), GRID)
    table = {(m, s): v for m, s, v in result.metrics}
    acc = [table[("accuracy", f"fgsm/linf/{e:g}")] for e in GRID]
    np.testing.assert_allclose(acc, direct.accuracy)
    assert acc[0] > 0.5 and acc[-1] < acc[0]
    assert table[("R", "fgsm/linf/[0,0.2]")] == pytest.approx(robustness_auc(GRID, direct.accuracy))
    assert table[("relative_change", "fgsm/linf/0.2")] == pytest.approx((acc[-1] - acc[0]) / acc[0])
    assert table[("within_ball", "")] == 1.0
    assert table[("accuracy_low", "fgsm/linf/0.05")] <= acc[1] <= table[("accuracy_high", "fgsm/linf/0.05")]
    assert result.summary["R"] == pytest.approx(table[("R", "fgsm/linf/[0,0.2]")])
    # Per-sample correctness is stored: 2 shards of 48 samples x 4 strengths.
    with robustlab.store.open_store(tmp_path / "store") as st:
        preds = st.read_predictions(result.run_id)
    assert sorted(preds) == ["fgsm/linf/shard-0000", "fgsm/linf/shard-0001"]
    assert preds["fgsm/linf/shard-0000"]["correct"].shape == (48, 4)
    # A finished run is returned at once.
    again = run(trained_lenet, tmp_path)
    assert again.units_computed == 0 and again.metrics == result.metrics


def test_pgd_is_at_most_as_accurate_as_fgsm(trained_lenet, tmp_path):
    fgsm = {(m, s): v for m, s, v in run(trained_lenet, tmp_path, limit=48).metrics}
    pgd = {(m, s): v for m, s, v in run(trained_lenet, tmp_path, limit=48, attack="pgd", steps=10).metrics}
    for e in GRID[1:]:  # PGD-10 with a random start: at least as strong as FGSM, up to a sample or two
        assert pgd[("accuracy", f"pgd/linf/{e:g}")] <= fgsm[("accuracy", f"fgsm/linf/{e:g}")] + 2 / 48
    assert pgd[("accuracy", "pgd/linf/0")] == fgsm[("accuracy", "fgsm/linf/0")]


def test_r_undefined_when_clean_accuracy_is_zero(tmp_path):
    class AlwaysWrong(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x):  # predicts class 10 of 11: never a digit label
            out = torch.zeros(x.shape[0], 11) + self.w * x.mean()
            out[:, 10] = 1.0
            return out

    result = run(AlwaysWrong(), tmp_path, limit=16, num_classes=11)
    assert not any(m == "R" for m, _, _ in result.metrics)
    assert any("R undefined" in n for n in result.notes)


@pytest.mark.parametrize("kwargs, message", [
    ({"eps": [0.1, 0.0]}, "increasing"),
    ({"eps": "0,abc"}, "comma-separated"),
    ({"eps0": 0.07}, "not on the eps grid"),
    ({"attack": "cw"}, "unknown attack"),
    ({"corruptions": "fog"}, "takes attack strengths"),
])
def test_bad_options_are_refused(trained_lenet, tmp_path, kwargs, message):
    with pytest.raises(InputError, match=message):
        run(trained_lenet, tmp_path, **kwargs)


def test_models_without_gradients_are_refused(trained_lenet, tmp_path):
    pytest.importorskip("onnxruntime")
    path = tmp_path / "lenet.onnx"
    torch.onnx.export(trained_lenet, torch.rand(1, 3, 32, 32), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, dynamo=False)
    with pytest.raises(ModelError, match="no gradients"):
        run(f"onnx:{path}", tmp_path, limit=8)
