"""Ties a multiprocessing forkserver, and every process it forks, to the process that started it.

:func:`robustlab.data.jobs.pool_context` lists this module first in the forkserver's preload,
so the forkserver imports it before anything else. Imported there, it asks the kernel to kill
the forkserver when the main process dies, even by SIGKILL (instead of letting it finish
importing torch and idle on), and registers a fork hook so that each worker it forks is
killed when the forkserver dies: from the first instant of the worker's life, before it has
unpickled its task or run any initializer. Imported anywhere else, the module does nothing.
"""

from __future__ import annotations

import os
import sys

from .jobs import exit_with_parent, set_parent_death_signal


def running_in_forkserver() -> bool:
    """True when this code runs inside ``multiprocessing.forkserver.main`` (its preload phase)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "main" and code.co_filename.replace("\\", "/").endswith("multiprocessing/forkserver.py"):
            return True
        frame = frame.f_back
    return False


def _die_with_forkserver(forkserver_pid: int) -> None:
    """In a freshly forked worker: be killed when the forkserver (its parent) dies."""
    set_parent_death_signal()
    if os.getppid() != forkserver_pid:  # the forkserver died between fork and prctl
        os._exit(1)


if running_in_forkserver():
    if exit_with_parent(watch=False) or not sys.platform.startswith("linux"):
        _pid = os.getpid()
        os.register_at_fork(after_in_child=lambda: _die_with_forkserver(_pid))
    if not sys.platform.startswith("linux"):  # no kernel help: a watch thread instead
        exit_with_parent(watch=True)
