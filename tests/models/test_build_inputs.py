"""A model's identity covers the state its build reads outside the state dict (issue 37): a `.npy`
weights file a `python:` factory loads, a tensor kept as a plain attribute, a JSON config read at
build, an environment variable, and a module imported inside `forward()`. Before, changing any of
them kept the model hash, so a rerun answered from the store with the old state's numbers."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import numpy as np
import pytest
import torch
from torch import nn

from robustlab.errors import ModelError
from robustlab.models.build_inputs import BuildInputs, input_identity, record_build_inputs
from robustlab.models.identity import identify_model, model_hash
from robustlab.store import open_store
from reliability.helpers import assert_error, assert_ok, image_folder, run

FACTORY = '''
import json, os
import numpy as np
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self, weights, scale):
        super().__init__()
        self.weights = torch.as_tensor(weights, dtype=torch.float32)  # a plain attribute, not a buffer
        self.scale = scale

    def forward(self, x):
        {forward}
        return x.mean(dim=(2, 3))[:, :2] * self.weights * self.scale


def build():
    weights = np.load(os.path.join(os.path.dirname(__file__), "w.npy"))
    with open(os.path.join(os.path.dirname(__file__), "config.json")) as fh:
        scale = json.load(fh)["scale"]
    scale *= float(os.environ.get("ROBUSTLAB_TEST_SCALE", "1"))
    return Scaled(weights, scale)
'''


def write_factory(folder, forward="pass"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.py").write_text(FACTORY.replace("{forward}", forward))
    np.save(folder / "w.npy", np.array([1.0, 1.0], np.float32))
    (folder / "config.json").write_text(json.dumps({"scale": 1.0}))
    return f"python:{folder / 'model.py'}:build"


def digest(spec):
    return identify_model(spec).digest


def test_a_replaced_npy_file_a_json_config_and_an_environment_variable_change_the_identity(tmp_path, monkeypatch):
    monkeypatch.delenv("ROBUSTLAB_TEST_SCALE", raising=False)
    spec = write_factory(tmp_path / "m")
    first = identify_model(spec)
    inputs = first.model.source["inputs"]
    assert set(inputs["files"]) == {os.path.realpath(tmp_path / "m" / "w.npy"),
                                    os.path.realpath(tmp_path / "m" / "config.json")}
    assert inputs["environment"] == {"ROBUSTLAB_TEST_SCALE": None}
    assert digest(spec) == first.digest  # nothing changed: the same model
    np.save(tmp_path / "m" / "w.npy", np.array([-1.0, 5.0], np.float32))
    after_npy = digest(spec)
    assert after_npy != first.digest
    (tmp_path / "m" / "config.json").write_text(json.dumps({"scale": 2.0}))
    after_json = digest(spec)
    assert after_json != after_npy
    monkeypatch.setenv("ROBUSTLAB_TEST_SCALE", "3")
    assert digest(spec) != after_json


def test_a_tensor_kept_as_a_plain_attribute_counts():
    class Local(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.w = torch.tensor(w)
            self._calls = 0  # a counter: not part of the identity

        def forward(self, x):
            return x * self.w

    a, b = Local([1.0, 2.0]), Local([1.0, 3.0])
    assert model_hash(a) != model_hash(b)
    a2 = Local([1.0, 2.0])
    a2._calls = 7
    assert model_hash(a) == model_hash(a2)


def test_a_module_imported_inside_forward_is_part_of_the_code(tmp_path, monkeypatch):
    helper = tmp_path / "m" / "late_helper_37.py"
    spec = write_factory(tmp_path / "m", forward="import late_helper_37; x = late_helper_37.shift(x)")
    helper.write_text("def shift(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path / "m"))
    sys.modules.pop("late_helper_37", None)
    before = digest(spec)
    assert "late_helper_37" not in sys.modules  # found without being imported
    helper.write_text("def shift(x):\n    return 1 - x\n")
    assert digest(spec) != before


def test_what_a_module_reads_at_import_stays_with_the_cached_module(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    np.save(folder / "w.npy", np.array([1.0, 2.0], np.float32))
    (folder / "model.py").write_text(textwrap.dedent('''
        import os
        import numpy as np
        import torch
        from torch import nn
        W = np.load(os.path.join(os.path.dirname(__file__), "w.npy"))  # read once, when the file is run

        class Net(nn.Module):
            def forward(self, x):
                return x.mean(dim=(2, 3))[:, :2] * torch.as_tensor(W)

        def build():
            return Net()
        '''))
    spec = f"python:{folder / 'model.py'}:build"
    first = identify_model(spec)
    assert os.path.realpath(folder / "w.npy") in first.model.source["inputs"]["files"]
    assert digest(spec) == first.digest  # the cached module: the same inputs
    np.save(folder / "w.npy", np.array([5.0, 6.0], np.float32))
    changed = identify_model(spec)
    assert changed.digest != first.digest
    x = torch.ones(1, 3, 4, 4)
    assert changed.model(x).tolist() == [[5.0, 6.0]]  # the module was run again: not the stale W


def test_library_and_system_files_are_not_inputs():
    with record_build_inputs() as inputs:
        torch.load  # noqa: B018 - a library's own files opened from library code are not recorded
        with open(os.devnull, "rb"):
            pass
    described = input_identity(inputs)
    assert "files" not in described
    assert input_identity(BuildInputs()) == {}


def test_rerun_after_the_npy_file_changed_is_a_new_run_not_the_stored_one(tmp_path):
    spec = write_factory(tmp_path / "m")
    data = image_folder(tmp_path / "data")
    args = ["evaluate", "-m", spec, "-b", "corrupted", "-d", data, "--store", tmp_path / "store", "--resize", "32",
            "--crop", "32", "--workers", "0", "--progress", "none", "-c", "brightness", "-s", "1", "--json"]
    first = run(*args)
    assert_ok(first)
    np.save(tmp_path / "m" / "w.npy", np.array([-1.0, -1.0], np.float32))  # every prediction flips
    second = run(*args)
    assert_ok(second)
    a, b = json.loads(first.out), json.loads(second.out)
    assert a["run_id"] != b["run_id"] and b["units_computed"] > 0 and a["model_hash"] != b["model_hash"]
    with open_store(tmp_path / "store") as st:
        top1 = [np.concatenate([c["top5_index"][:, 0] for _, c in sorted(st.read_predictions(r).items())])
                for r in (a["run_id"], b["run_id"])]
    assert (top1[0] != top1[1]).all()  # the new weights' predictions, not the stored ones


def test_a_factory_calling_sys_exit_is_a_clear_error(tmp_path):
    (tmp_path / "exits.py").write_text("import sys\n\ndef build():\n    sys.exit(3)\n")
    with pytest.raises(ModelError, match=r"build\(\) called sys.exit\(3\) instead of returning the model"):
        identify_model(f"python:{tmp_path / 'exits.py'}:build")
    data = image_folder(tmp_path / "data")
    result = run("evaluate", "-m", f"python:{tmp_path / 'exits.py'}:build", "-b", "corrupted", "-d", data,
                 "--store", tmp_path / "store", "--workers", "0", "--progress", "none")
    assert_error(result, "called sys.exit(3)")
