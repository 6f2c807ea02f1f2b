"""Writing CIFAR-10-C-bar and CIFAR-10-C as arrays (robustlab.corruptions.cifar_writer), from a
CIFAR-10 python-version test_batch made here in the official format (a protocol-2 pickle of a
dict with b"data" (N, 3072) uint8 and b"labels")."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robustlab.corruptions import cifar_writer
from robustlab.corruptions.api import corrupt_item
from robustlab.corruptions.cbar.released import discover_cbar
from robustlab.corruptions.dataset import corrupt_dataset, make_settings
from robustlab.corruptions.released import read_cifar_c
from robustlab.errors import DataError, InputError
from robustlab.safeload import load_cifar_batch

N = 12


def write_batch(root: Path, n: int = N, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``root/cifar-10-batches-py/test_batch``; returns the images (N, 32, 32, 3) and labels."""
    rs = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:32, 0:32]
    images = np.stack([np.stack([(xx * 8 + i * 7) % 256, (yy * 8) % 256, rs.randint(0, 256, (32, 32))], -1)
                       for i in range(n)]).astype(np.uint8)
    labels = [int(v) for v in rs.randint(0, 10, n)]
    data = images.transpose(0, 3, 1, 2).reshape(n, 3072)  # CIFAR's rows: the R, G and B planes
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    batch = {b"batch_label": b"testing batch 1 of 1", b"labels": labels, b"data": data,
             b"filenames": [f"img_{i}.png".encode() for i in range(n)]}
    (folder / "test_batch").write_bytes(pickle.dumps(batch, protocol=2))
    return images, np.asarray(labels)


def settings(corruptions="ripple,lines", release="cifar10-c-bar", **kw):
    return make_settings(corruptions, release=release, **kw)


def test_each_row_is_the_kernel_output_of_its_test_image(tmp_path):
    images, labels = write_batch(tmp_path / "cifar")
    summary = cifar_writer.corrupt_cifar(tmp_path / "cifar", tmp_path / "out", settings(seed=3), workers=1)
    assert (summary.written, summary.skipped, summary.failed, summary.status) == (2 * 5 * N, 0, 0, "complete")
    for name in ("ripple", "lines"):
        array = np.load(tmp_path / "out" / f"{name}.npy", allow_pickle=False)
        assert array.shape == (5 * N, 32, 32, 3) and array.dtype == np.uint8
        for severity in range(1, 6):
            for i in range(N):
                want = corrupt_item(images[i], name, severity, seed=3, item=str(i), profile="cifar")
                np.testing.assert_array_equal(array[(severity - 1) * N + i], want, err_msg=f"{name}/{severity}/{i}")
    got = np.load(tmp_path / "out" / "labels.npy", allow_pickle=False)
    assert got.dtype == np.int64 and got.tolist() == labels.tolist() * 5
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]


def test_the_readers_of_the_released_layout_read_it(tmp_path):
    images, labels = write_batch(tmp_path / "cifar")
    cifar_writer.corrupt_cifar(tmp_path / "cifar", tmp_path / "out", settings(), workers=1)
    layout = discover_cbar(tmp_path / "out")
    assert layout.set_name == "cifar10-c-bar" and set(layout.folders) == {"ripple", "lines"}
    samples = read_cifar_c(tmp_path / "out", "lines", 4)
    assert len(samples) == N and samples.labels.tolist() == labels.tolist()
    np.testing.assert_array_equal(samples.read(2), corrupt_item(images[2], "lines", 4, seed=0, item="2",
                                                                 profile="cifar"))


def test_the_arrays_do_not_depend_on_the_worker_count_or_chunking(tmp_path, monkeypatch):
    write_batch(tmp_path / "cifar")
    cifar_writer.corrupt_cifar(tmp_path / "cifar", tmp_path / "one", settings(), workers=1)
    monkeypatch.setattr(cifar_writer, "CHUNK", 5)  # 3 chunks a severity, done out of order by 2 processes
    cifar_writer.corrupt_cifar(tmp_path / "cifar", tmp_path / "two", settings(), workers=2)
    for name in ("ripple.npy", "lines.npy", "labels.npy"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_a_rerun_skips_complete_arrays_and_remakes_the_rest(tmp_path):
    write_batch(tmp_path / "cifar")
    out = tmp_path / "out"
    cifar_writer.corrupt_cifar(tmp_path / "cifar", out, settings(), workers=1)
    kept = (out / "ripple.npy").stat().st_mtime_ns
    before = (out / "lines.npy").read_bytes()
    (out / "lines.npy").write_bytes(before[:1000])  # a truncated file is not complete
    stale = out / ".lines.npy.abc.tmp"
    stale.write_bytes(b"half")
    summary = cifar_writer.corrupt_cifar(tmp_path / "cifar", out, settings(), workers=1)
    assert (summary.written, summary.skipped) == (5 * N, 5 * N)
    assert (out / "lines.npy").read_bytes() == before and (out / "ripple.npy").stat().st_mtime_ns == kept
    assert not stale.exists()


def test_an_interrupted_run_leaves_no_partial_array_and_resumes(tmp_path, monkeypatch):
    write_batch(tmp_path / "cifar")
    out = tmp_path / "out"
    monkeypatch.setattr(cifar_writer, "CHUNK", 4)
    seen = []

    def progress(n):
        seen.append(n)
        if len(seen) == 20:  # in the second corruption's array (15 chunks each)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cifar_writer.corrupt_cifar(tmp_path / "cifar", out, settings(), workers=1, progress=progress)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "labels.npy", "lines.npy", "robustlab-corrupt.json"]  # lines first (the set's order), ripple not written
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    summary = cifar_writer.corrupt_cifar(tmp_path / "cifar", out, settings(), workers=1)
    assert (summary.written, summary.skipped) == (5 * N, 5 * N)
    assert cifar_writer.array_complete(out / "ripple.npy", 5 * N)


def test_other_settings_are_refused_and_a_changed_source_remakes_the_arrays(tmp_path):
    write_batch(tmp_path / "cifar")
    out = tmp_path / "out"
    cifar_writer.corrupt_cifar(tmp_path / "cifar", out, settings(), workers=1)
    with pytest.raises(InputError, match="seed 0 .asked: 1"):
        cifar_writer.corrupt_cifar(tmp_path / "cifar", out, settings(seed=1), workers=1)
    old = (out / "lines.npy").read_bytes()
    write_batch(tmp_path / "cifar", seed=5)  # other labels and blue planes
    summary = cifar_writer.corrupt_cifar(tmp_path / "cifar", out, settings(), workers=1)
    assert summary.sources_changed == ["test_batch"] and summary.written == 2 * 5 * N
    assert (out / "lines.npy").read_bytes() != old


def test_bad_choices_are_refused_with_the_fix(tmp_path):
    write_batch(tmp_path / "cifar")
    with pytest.raises(InputError, match="leave out --severities"):
        cifar_writer.corrupt_cifar(tmp_path / "cifar", tmp_path / "o", settings(severities="1-3"))
    with pytest.raises(InputError, match="writes only its own corruptions"):
        settings("ripple,caustic_refraction")
    with pytest.raises(InputError, match="leave out --format and --quality"):
        settings(format="png")
    with pytest.raises(InputError, match="is written as arrays"):
        corrupt_dataset(tmp_path / "cifar", tmp_path / "o", settings())
    with pytest.raises(DataError, match="holds no CIFAR-10 test_batch"):
        cifar_writer.corrupt_cifar(tmp_path, tmp_path / "o", settings())
    with pytest.raises(DataError, match="does not exist"):
        cifar_writer.corrupt_cifar(tmp_path / "nowhere", tmp_path / "o", settings())
    assert not (tmp_path / "o").exists()


def test_a_pickle_that_would_run_code_is_refused_unrun(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    folder = tmp_path / "cifar" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    (folder / "test_batch").write_bytes(pickle.dumps({b"data": Payload(), b"labels": [0]}, protocol=2))
    with pytest.raises(DataError, match="refuses to load it"):
        load_cifar_batch(folder / "test_batch")
    assert not marker.exists()
    (folder / "test_batch").write_bytes(b"\x80\x02}q\x00(U\x04data")  # cut short
    with pytest.raises(DataError, match="truncated or damaged|not a complete pickle"):
        load_cifar_batch(folder / "test_batch")
    (folder / "test_batch").write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 11]}))
    with pytest.raises(DataError, match="labels outside 0..9"):
        load_cifar_batch(folder / "test_batch")


def test_the_batch_file_is_read_as_cifar_lays_it_out(tmp_path):
    images, labels = write_batch(tmp_path, n=3)
    got, got_labels = load_cifar_batch(tmp_path / "cifar-10-batches-py" / "test_batch")
    np.testing.assert_array_equal(got, images)
    assert got.flags.c_contiguous and got_labels.tolist() == labels.tolist()


def test_cifar10_c_writes_the_nineteen(tmp_path):
    write_batch(tmp_path / "cifar", n=2)
    summary = cifar_writer.corrupt_cifar(tmp_path / "cifar", tmp_path / "out", settings(None, "cifar10-c"), workers=1)
    assert summary.failed == 0 and summary.settings.profile == "cifar" and len(summary.settings.corruptions) == 19
    assert len(list((tmp_path / "out").glob("*.npy"))) == 20
    assert np.load(tmp_path / "out" / "labels.npy").dtype == np.uint8  # as make_cifar_c.py writes it


def test_the_command_line_writes_the_set(tmp_path):
    write_batch(tmp_path / "cifar")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-m", "robustlab.cli", "corrupt", str(tmp_path / "cifar"),
                           str(tmp_path / "out"), "--set", "cifar10-c-bar", "-c", "sparkles", "-j", "1",
                           "--no-progress"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert f"{N} images x 1 corruptions x 5 severities = {5 * N} outputs" in done.stdout
    assert cifar_writer.array_complete(tmp_path / "out" / "sparkles.npy", 5 * N)
    refused = subprocess.run([sys.executable, "-m", "robustlab.cli", "corrupt", str(tmp_path / "cifar"),
                              str(tmp_path / "other"), "--set", "cifar10-c-bar", "--max-pixels", "100"],
                             capture_output=True, text=True, env=env)
    assert refused.returncode == 1 and "leave out --max-pixels (image folders only)" in refused.stderr, refused.stderr
    assert not (tmp_path / "other").exists()
