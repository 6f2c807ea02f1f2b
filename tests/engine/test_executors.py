"""Executors as plugins: names, options and the errors a user can act on (no Ray cluster needed)."""

from __future__ import annotations

import sys
import time

import pytest

from robustlab.engine import EXECUTORS, evaluate, get_executor
from robustlab.engine.executor import LocalExecutor
from robustlab.errors import InputError


def test_known_executors_and_unknown_name_lists_them(tmp_path):
    assert {"local", "ray"} <= set(EXECUTORS.names())
    assert isinstance(get_executor("local", workers=0), LocalExecutor)
    with pytest.raises(InputError, match="local.*ray|ray.*local"):
        evaluate("demo:cnn", "corrupted", tmp_path, store=tmp_path / "s", executor="dask")
    assert not (tmp_path / "s").exists()


def test_ray_missing_names_the_extra_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if it were not installed
    with pytest.raises(InputError, match=r'pip install "robustlab\[ray\]"'):
        evaluate("demo:cnn", "corrupted", tmp_path, store=tmp_path / "s", executor="ray")
    assert not (tmp_path / "s").exists()


def test_unreachable_ray_address_fails_fast_and_writes_nothing(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    start = time.time()
    with pytest.raises(InputError, match="cannot reach the Ray cluster at 127.0.0.1:1"):
        evaluate("demo:cnn", "corrupted", tmp_path, store=tmp_path / "s", executor="ray", ray_address="127.0.0.1:1")
    assert time.time() - start < 30
    assert not (tmp_path / "s").exists()


def test_executor_options_are_checked(tmp_path):
    with pytest.raises(InputError, match="workers"):
        get_executor("local", workers=-1)
    with pytest.raises(InputError, match="--executor ray"):
        evaluate("demo:cnn", "corrupted", tmp_path, store=tmp_path / "s", ray_address="127.0.0.1:6379")
