"""The entry point's contract (docs/errors.md): exit codes 0/1/2/3/130, one line per error,
``--debug`` for the traceback, help texts printed as written."""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
import typer

from robustlab import cli
from robustlab.errors import DataError, one_line_message

from .helpers import SRC, assert_error, image_folder, run, sigint_as_a_terminal_sends_it


@contextmanager
def extra_command(name: str, exc: BaseException):
    """Register a command that raises ``exc`` on the real app (the entry point under test)."""
    @cli.app.command(name, hidden=True)
    def _raises() -> None:
        raise exc

    try:
        yield
    finally:
        cli.app.registered_commands.pop()


def test_usage_errors_exit_2():
    result = run("corrupt", "--no-such-option")
    assert result.code == 2 and "No such option" in result.err and "Traceback" not in result.err
    result = run("corrupt")
    assert result.code == 2 and "Missing argument" in result.err
    assert run().code == 2  # no command: the help, as a usage error
    assert run("--version").code == 0


@pytest.mark.parametrize("exc, code, message", [
    (DataError("the data is bad; fix it."), 1, "error: the data is bad; fix it."),
    (OSError(errno.ENOSPC, "No space left on device", "/out/x.png"), 1, "the disk is full"),
    (PermissionError(errno.EACCES, "Permission denied", "/data/x.png"), 1, "permission denied"),
    (MemoryError(), 1, "out of memory"),
    (ValueError("boom"), 3, "unexpected ValueError: boom"),
])
def test_each_kind_of_error_has_its_exit_code_and_one_line(exc, code, message):
    with extra_command("raise-for-test", exc):
        result = run("raise-for-test")
    line = assert_error(result, message, code=code)
    if code == 3:
        assert "--debug" in line


def test_keyboard_interrupt_exits_130_without_traceback():
    with extra_command("raise-for-test", KeyboardInterrupt()):
        result = run("raise-for-test")
    assert result.code == 130 and "Traceback" not in result.err


def test_debug_shows_the_traceback(monkeypatch):
    with extra_command("raise-for-test", DataError("the data is bad")):
        plain = run("raise-for-test")
        debug = run("--debug", "raise-for-test")
        monkeypatch.setenv(cli.DEBUG_ENV, "1")
        by_env = run("raise-for-test")
    assert "Traceback" not in plain.err
    for result in (debug, by_env):
        assert result.code == 1 and "Traceback (most recent call last)" in result.err
        assert result.err.strip().splitlines()[-1] == "error: the data is bad"


def test_worker_tracebacks_are_reduced_to_their_message():
    wrapped = RuntimeError("Caught InputError in DataLoader worker process 0.\nOriginal Traceback (most recent call "
                           "last):\n  File \"x.py\", line 1, in f\nrobustlab.errors.InputError: images differ in size")
    assert one_line_message(wrapped) == "images differ in size"
    assert one_line_message(DataError("two\nlines")) == "two lines"


def _command_params(command, path=()):
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_params(sub, (*path, name))
    for param in getattr(command, "params", []):
        if getattr(param, "help", None):
            yield path, param


def test_help_texts_print_their_brackets(monkeypatch):
    """`video sample --help` lost the literal "[indices]" (fails on the old code)."""
    monkeypatch.setenv("COLUMNS", "400")  # one line per option: no box border inside a text
    root = typer.main.get_command(cli.app)
    checked = 0
    for path, param in _command_params(root):
        wanted = re.findall(r"\[[a-z][^\]]*\]", param.help.replace("\\[", "["))
        if not wanted:
            continue
        text = " ".join(run(*path, "--help").out.split())
        for literal in wanted:
            assert literal in text, f"{' '.join(path)} {param.name}: {literal!r} missing from the help"
        checked += 1
    assert checked >= 1


def test_ctrl_c_exits_130_and_keeps_finished_outputs(tmp_path):
    src = image_folder(tmp_path / "src", per_class=12, size=64)
    # faulthandler: CI saw this process die once of SIGSEGV (-11) with nothing on stderr, not reproduced
    # in 69 tries here; a crash now prints the thread stacks into the assertion's message
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "robustlab.cli", "corrupt", str(src), str(tmp_path / "out"), "-c",
                             "all", "-s", "1-5", "-j", "1", "--no-progress"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_a_terminal_sends_it)
    deadline = time.time() + 120
    while time.time() < deadline and not any((tmp_path / "out").rglob("*.jpg")):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "Traceback" not in err
    assert not list((tmp_path / "out").rglob("*.tmp"))


def test_messages_name_only_options_that_exist(tmp_path):
    """A message advised `--eps`, which no command has (fails on the old code)."""
    line = assert_error(run("evaluate", "--model", "python:x.py:f", "--benchmark", "adversarial-auc", "--data",
                            tmp_path, "--store", tmp_path / "s", "-c", "fog", "--no-progress"), "-O eps=")
    assert "--eps" not in line
