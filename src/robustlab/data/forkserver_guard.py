"""Ties a multiprocessing forkserver, and every process it forks, to the process that started it.

:func:`robustlab.data.jobs.pool_context` lists this module first in the forkserver's preload,
so the forkserver imports it before anything else. Imported there, it asks the kernel to kill
the forkserver when the main process dies, even by SIGKILL (instead of letting it finish
importing torch and idle on), and registers a fork hook so that each worker it forks is
killed when the forkserver dies: from the first instant of the worker's life, before it has
unpickled its task or run any initializer. It also makes the forkserver ignore Ctrl-C from the
start (not only after its preload), so an interrupted command prints one line, no forkserver
traceback. Imported anywhere else, the module does nothing.
"""

from __future__ import annotations

import os
import signal
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
    # Ctrl-C reaches the whole process group; the forkserver ignores it only once its preload
    # is done, so a Ctrl-C while it imports torch printed a KeyboardInterrupt traceback after
    # the command's own "interrupted" line. It ends with its parent (below), and its workers
    # inherit the ignore, as they would from the forkserver's own handler.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if exit_with_parent(watch=False) or not sys.platform.startswith("linux"):
        _pid = os.getpid()
        os.register_at_fork(after_in_child=lambda: _die_with_forkserver(_pid))
    if not sys.platform.startswith("linux"):  # no kernel help: a watch thread instead
        exit_with_parent(watch=True)
