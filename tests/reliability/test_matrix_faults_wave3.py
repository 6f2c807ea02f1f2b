"""No data loss, bounded runs, and clear errors instead of tracebacks (the second red-team's
findings): report -o, zero-byte catalogs, concurrent finetune, huge --resize/--crop, eps,
missing devices, binary configs, Ctrl-C in a forkserver, refused checkpoints."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from robustlab.data.builds import output_lock

from .helpers import EVALUATE, MODELS, SRC, assert_error, assert_ok, image_folder, run, sigint_as_a_terminal_sends_it

FINETUNE = ["--model", f"python:{MODELS}:make_mean_colour", "--workers", "0", "--device", "cpu", "--no-progress"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A store with one complete run."""
    root = tmp_path_factory.mktemp("stored")
    data = image_folder(root / "data", per_class=2)
    assert_ok(run(*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", root / "store", "-c", "fog",
                  "-s", "1"))
    return root / "store"


# --- no data loss ----------------------------------------------------------------------------------


def test_report_never_replaces_the_catalog_or_a_file_it_did_not_write(stored, tmp_path):
    """`report --store st -o st/catalog.db` replaced the catalog with HTML: every run was lost
    (fails on the old code)."""
    catalog = stored / "catalog.db"
    before = catalog.read_bytes()
    assert_error(run("report", "--store", stored, "-o", catalog), "inside the results store")
    assert_error(run("report", "--store", stored, "-o", stored / "predictions" / "r.html"), "inside")
    assert_error(run("report", "--store", stored, "-o", stored / "report.md"), "inside the results store")
    assert catalog.read_bytes() == before
    mine = tmp_path / "thesis.md"
    mine.write_text("# my thesis, three years of work\n")
    assert_error(run("report", "--store", stored, "-o", mine), "not a report robustlab wrote")
    assert mine.read_text().startswith("# my thesis")
    for name in ("r.html", "r.md", "r.csv", "r.json"):  # its own reports it replaces
        for _ in range(2):
            assert_ok(run("report", "--store", stored, "-o", tmp_path / name))
    assert json.loads(run("runs", "--store", stored, "--json").out)


def test_a_zero_byte_catalog_is_an_error_not_a_new_store(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "catalog.db").write_bytes(b"")
    for argv in (["runs", "--store", store],
                 [*EVALUATE, "--benchmark", "corrupted", "--data", image_folder(tmp_path / "d", per_class=1),
                  "--store", store, "-c", "fog", "-s", "1"]):
        assert_error(run(*argv), "is empty (0 bytes)", "Restore it from a backup")
    assert (store / "catalog.db").stat().st_size == 0


def test_two_finetunes_into_one_folder_one_fails_clearly(tmp_path):
    """finetune did not lock its output folder: two runs wrote one checkpoint (fails on the old code)."""
    data = image_folder(tmp_path / "data", per_class=2)
    out = tmp_path / "ft"
    out.mkdir()
    with output_lock(out, "robustlab finetune (the other run)"):
        assert_error(run("finetune", *FINETUNE, "--data", data, "--out", out), "is being written by another run",
                     "the other run")
    assert_ok(run("finetune", *FINETUNE, "--data", data, "--out", out))


# --- bounds -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra, message", [
    (["--resize", "100000", "--crop", "32"], "over the limit"),
    (["--crop", "60000"], "over the limit"),
    (["--resize", "9000", "--crop", "9000", "--batch-size", "512"], "GiB"),
])
def test_huge_resize_or_crop_is_refused_before_it_runs(tmp_path, extra, message):
    """--resize 100000 grew to 20 GB and met the OOM killer (fails on the old code)."""
    data = image_folder(tmp_path / "data", per_class=1)
    argv = ["evaluate", "--model", f"python:{MODELS}:make_two_class", "--workers", "0", "--no-progress",
            "--benchmark", "corrupted", "--data", data, "--store", tmp_path / "store", "-c", "fog", "-s", "1", *extra]
    start = time.perf_counter()
    assert_error(run(*argv), message)
    assert time.perf_counter() - start < 60


@pytest.mark.parametrize("eps, message", [("0.5", None), ("[0.5, 0.1]", "strictly increasing"),
                                          ("2", "[0, 1]"), ("true", "numbers"), ('"a,b"', "comma-separated"),
                                          ("[0, \"x\"]", "numbers only"), ("-0.1", "non-negative")])
def test_eps_is_a_sorted_list_of_fractions(tmp_path, eps, message):
    """eps=0.5 was a TypeError traceback, exit 3 (fails on the old code)."""
    data = image_folder(tmp_path / "data", per_class=2)
    argv = [*EVALUATE, "--benchmark", "adversarial-auc", "--data", data, "--store", tmp_path / "store",
            "-O", f"eps={eps}"]
    result = run(*argv)
    if message is None:
        assert_ok(result)
    else:
        assert_error(result, message)


# --- tracebacks to clear errors ------------------------------------------------------------------


@pytest.mark.parametrize("device", ["mps", "cuda:7", "meta"])
def test_a_device_this_machine_lacks_is_one_clear_line(tmp_path, device):
    if device == "cuda:7" and torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 GPUs")
    if device == "mps" and getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    data = image_folder(tmp_path / "data", per_class=1)
    assert_error(run(*EVALUATE, "--benchmark", "corrupted", "--data", data, "--store", tmp_path / "store", "-c",
                     "fog", "-s", "1", "--device", device), device.split(":")[0])
    assert_error(run("finetune", *FINETUNE[:-5], "--workers", "0", "--no-progress", "--data", data, "--out",
                     tmp_path / "ft", "--device", device), "device")
    assert not (tmp_path / "ft").exists()


def test_a_binary_config_is_one_clear_line(tmp_path):
    config = tmp_path / "study.toml"
    config.write_bytes(bytes(range(256)))
    assert_error(run("study", "adversarial", "--config", config, "-o", tmp_path / "out"), "not a text file")
    assert_error(run("study", "adversarial", "--config", tmp_path, "-o", tmp_path / "out"), "is a folder")


SLOW_PRELOAD = """
import sys, time
from robustlab.data.jobs import pool_context
sys.path.insert(0, {folder!r})
ctx = pool_context(["slow_import"])
try:
    ctx.Process(target=print).start()  # starts the forkserver, which imports slow_import
    time.sleep(30)
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
"""


def test_ctrl_c_while_the_forkserver_preloads_prints_no_traceback(tmp_path):
    """Ctrl-C during finetune printed a forkserver traceback after "interrupted" (the forkserver
    was still importing torch; fails on the old code)."""
    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(20)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(tmp_path)])}
    proc = subprocess.Popen([sys.executable, "-c", SLOW_PRELOAD.format(folder=str(tmp_path))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=sigint_as_a_terminal_sends_it)
    time.sleep(4)  # the forkserver is importing slow_import now
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err, err


class _RunsCode:
    def __reduce__(self):
        return (print, ("code ran",))


@pytest.mark.parametrize("where", ["finetune --init", "finetuned:", "AdaIN weights"])
def test_a_refused_checkpoint_never_advises_turning_the_protection_off(tmp_path, where):
    hostile = tmp_path / "hostile.pt"
    torch.save({"weight": _RunsCode()}, hostile)
    if where == "finetune --init":
        data = image_folder(tmp_path / "data", per_class=2)
        result = run("finetune", *FINETUNE, "--data", data, "--out", tmp_path / "ft", "--init", hostile)
    elif where == "finetuned:":
        from robustlab.models.weights import file_sha256
        from robustlab.train.finetuned import MANIFEST_FORMAT

        folder = tmp_path / "ft"
        folder.mkdir()
        (folder / "model.pt").write_bytes(hostile.read_bytes())
        manifest = {"format": MANIFEST_FORMAT, "base": f"python:{MODELS}:make_mean_colour", "head": None,
                    "preprocessing": {"resize": 32, "crop": 32}, "num_classes": 2,
                    "weights_sha256": file_sha256(folder / "model.pt")}
        (folder / "finetuned.json").write_text(json.dumps(manifest))
        data = image_folder(tmp_path / "data", per_class=1)
        result = run(*EVALUATE[:2], f"finetuned:{folder}", *EVALUATE[3:], "--benchmark", "corrupted", "--data", data,
                     "--store", tmp_path / "store", "-c", "fog", "-s", "1")
    else:
        from robustlab.train.adain import AdaIN, AdainWeights

        with pytest.raises(Exception) as info:
            AdaIN.from_weights(AdainWeights(hostile, hostile))
        result = type("R", (), {"code": 1, "err": f"error: {info.value}", "out": ""})()
    assert result.code == 1
    assert "weights_only" not in result.err and "refuses to load it" in result.err, result.err
    assert "code ran" not in result.out
