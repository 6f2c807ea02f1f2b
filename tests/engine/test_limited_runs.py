"""A limited run (``robustlab evaluate --limit N``) measures every class alike, records its rule,
and says so in ``show`` and the report (issue 37: the first N files were classes 0 and 1 only)."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from robustlab.store import open_store
from reliability.helpers import assert_ok, run

TEN_CLASSES = '''
import torch
from torch import nn


class Ten(nn.Module):
    def forward(self, x):
        m = x.mean(dim=(1, 2, 3))
        return torch.stack([-(m - k / 10) ** 2 for k in range(10)], dim=1)


def build():
    return Ten()
'''


def ten_class_world(tmp_path):
    data = tmp_path / "data"
    for c in range(10):
        (data / f"class{c}").mkdir(parents=True)
        for i in range(30):
            Image.fromarray(np.full((32, 32, 3), int(25 * c + i % 5), np.uint8)).save(data / f"class{c}" / f"{i:02d}.png")
    model = tmp_path / "ten.py"
    model.write_text(TEN_CLASSES)
    return data, model


def evaluate(data, model, store, *extra):
    return run("evaluate", "-m", f"python:{model}:build", "-b", "corrupted", "-d", data, "--store", store,
               "--resize", "32", "--crop", "32", "-c", "brightness", "-s", "1", "--workers", "0", "--progress", "none",
               "--json", *extra)


def stored_labels(store, run_id):
    with open_store(store) as st:
        predictions = st.read_predictions(run_id)
    by_setting = {}
    for unit, columns in predictions.items():
        by_setting.setdefault(unit.rsplit("/", 1)[0], []).extend(np.asarray(columns["label"]).tolist())
    return by_setting


def test_limit_50_over_10_classes_of_30_stores_5_of_each(tmp_path):
    data, model = ten_class_world(tmp_path)
    store = tmp_path / "store"
    result = evaluate(data, model, store, "--limit", "50")
    assert_ok(result)
    out = json.loads(result.out)
    for setting, labels in stored_labels(store, out["run_id"]).items():
        assert np.bincount(labels, minlength=10).tolist() == [5] * 10, setting
    assert out["config"]["limit_order"] == "balanced"
    assert out["config"]["limit_stats"] == {"order": "balanced", "samples": 50, "of": 300, "classes": 10,
                                            "per_class": [5, 5]}
    shown = run("show", out["run_id"], "--store", store)
    assert_ok(shown)
    assert "limited to 50 of 300 samples, 5 per class of 10 (balanced" in shown.out
    report = tmp_path / "report.md"
    assert_ok(run("report", "--store", store, "--out", report))
    assert "limited to 50 of 300 samples, 5 per class" in report.read_text()
    # the same samples with worker processes
    again = evaluate(data, model, tmp_path / "store2", "--limit", "50", "--workers", "2", "--batch-size", "7")
    assert_ok(again)
    with open_store(store) as a, open_store(tmp_path / "store2") as b:
        ids = lambda st, rid: sorted(i for c in st.read_predictions(rid).values() for i in c["sample_id"])  # noqa: E731
        assert ids(a, out["run_id"]) == ids(b, json.loads(again.out)["run_id"])


def test_limit_order_path_keeps_the_old_rule_and_is_another_run(tmp_path):
    data, model = ten_class_world(tmp_path)
    store = tmp_path / "store"
    balanced = json.loads(evaluate(data, model, store, "--limit", "50").out)
    first = evaluate(data, model, store, "--limit", "50", "--limit-order", "path")
    assert_ok(first)
    first = json.loads(first.out)
    assert first["run_id"] != balanced["run_id"] and first["config"]["limit_order"] == "path"
    labels = stored_labels(store, first["run_id"])["clean"]
    assert np.bincount(labels).tolist() == [30, 20]
    assert any("limited to 50 samples, 0-30 per class of 10 (the first N in path order" in n for n in first["notes"])
