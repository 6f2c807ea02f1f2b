"""Fixtures of the reliability matrix."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def fifo(tmp_path):
    """A FIFO (named pipe) named like a CSV file: opening it for reading would block for ever."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs (POSIX)")
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path
