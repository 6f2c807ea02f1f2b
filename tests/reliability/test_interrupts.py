"""A Ctrl-C that a library swallows still stops the run (robustlab.interrupts).

numba compiles a kernel on its first call and calls back into Python through ctypes while it
does; a SIGINT that lands in that callback raised KeyboardInterrupt there, ctypes printed
"Exception ignored" and numba went on to fail with ``RuntimeError: no compiled object yet``. The
corrupt loop recorded the image as failed and ran on, and the command exited 1 (fails on the old
code). These tests swallow a real SIGINT inside a real ctypes callback the same way.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

import pytest

from robustlab import interrupts
from robustlab.corruptions import dataset

from .helpers import image_folder

CALLBACK = ctypes.CFUNCTYPE(None)


def swallow_a_real_sigint() -> None:
    """Send SIGINT to this process while inside a ctypes callback, as numba's compiler is."""
    def callback():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs at one of these bytecodes, inside the callback
            pass

    CALLBACK(callback)()


@pytest.fixture
def installed():
    before, hook = signal.getsignal(signal.SIGINT), sys.unraisablehook
    signal.signal(signal.SIGINT, signal.default_int_handler)
    reported = []  # what reaches the hook install() found: "Exception ignored" reports it lets through
    sys.unraisablehook = reported.append
    interrupts.reset()
    assert interrupts.install()
    yield reported
    signal.signal(signal.SIGINT, before)
    sys.unraisablehook = hook
    interrupts.reset()


def test_a_swallowed_interrupt_is_remembered_and_not_printed(installed):
    swallow_a_real_sigint()  # ctypes swallows the KeyboardInterrupt: nothing raised here
    assert interrupts.requested()
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()
    assert installed == []  # no "Exception ignored ... KeyboardInterrupt" traceback for the user


def test_without_install_the_interrupt_is_lost():
    """The control: with the default handler only an "Exception ignored" report is left (why install exists)."""
    before, hook = signal.getsignal(signal.SIGINT), sys.unraisablehook
    ignored = []
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.unraisablehook = ignored.append
    interrupts.reset()
    try:
        swallow_a_real_sigint()
    finally:
        signal.signal(signal.SIGINT, before)
        sys.unraisablehook = hook
    assert not interrupts.requested()
    assert [type(u.exc_value) for u in ignored] == [KeyboardInterrupt]


def test_install_leaves_an_ignored_sigint_ignored():
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert not interrupts.install()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def corrupt_interrupted_at(item: int, then_fail: bool, tmp_path, monkeypatch) -> tuple[dict, list]:
    """Run `corrupt` whose kernel swallows a real Ctrl-C at the ``item``-th call (as numba's compiler
    does), then raises the library's own error or works; it must end interrupted. Returns the
    summary file and the kernel's calls."""
    src = image_folder(tmp_path / "src", per_class=3, size=32)
    calls = []

    def kernel_that_compiles(image, name, severity, **kwargs):  # corrupt_item's signature
        calls.append(name)
        if len(calls) == item:
            swallow_a_real_sigint()
            if then_fail:
                raise RuntimeError("no compiled object yet")
        return image

    monkeypatch.setattr(dataset, "corrupt_item", kernel_that_compiles)
    settings = dataset.make_settings("gaussian_noise", "1", seed=0)
    with pytest.raises(KeyboardInterrupt):
        dataset.corrupt_dataset(src, tmp_path / "out", settings, workers=1)
    return json.loads((tmp_path / "out" / "robustlab-corrupt.json").read_text()), calls


def test_a_kernel_that_fails_after_a_swallowed_ctrl_c_interrupts_the_run(installed, tmp_path, monkeypatch):
    record, calls = corrupt_interrupted_at(3, True, tmp_path, monkeypatch)
    assert record["status"] == "interrupted"
    assert not record.get("failures"), "the image was recorded as failed by a Ctrl-C"
    assert len(calls) == 3  # and the run stopped there


def test_a_ctrl_c_swallowed_by_a_library_that_then_succeeds_interrupts_the_run(installed, tmp_path, monkeypatch):
    """numba compiled the kernel after all: no error followed the swallowed KeyboardInterrupt, so no
    item loop looked, and `corrupt` ran to the end and exited 0 (a CI failure; fails on the old code)."""
    record, calls = corrupt_interrupted_at(2, False, tmp_path, monkeypatch)
    assert record["status"] == "interrupted" and record["written"] == 2  # the item in hand was kept
    assert len(calls) == 2


def test_the_engine_stops_at_the_batch_after_a_swallowed_ctrl_c(installed, tmp_path):
    """The same during an evaluation: the batch's predictions are kept and the run stops there."""
    import torch

    from robustlab.engine import evaluate
    from robustlab.store import open_store

    src = image_folder(tmp_path / "src", per_class=4, size=32)
    seen = []

    def model(x: torch.Tensor) -> torch.Tensor:
        seen.append(len(x))
        if len(seen) == 2:
            swallow_a_real_sigint()
        return torch.zeros(len(x), 2)

    with pytest.raises(KeyboardInterrupt):
        evaluate(model, "corrupted", src, store=tmp_path / "s", corruptions="brightness", severities="1-2",
                 batch_size=4, workers=0, progress=False, device="cpu", class_map="sorted")
    assert len(seen) == 2
    with open_store(tmp_path / "s") as st:
        (run,) = st.list_runs()
        assert run.status == "interrupted" and run.n_units_done == 1  # its 2 batches; the next unit not begun
