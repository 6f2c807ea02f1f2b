"""Remember a Ctrl-C even when library code swallows the KeyboardInterrupt it raised.

Python turns SIGINT into ``KeyboardInterrupt`` at the next bytecode. When that bytecode runs
inside a callback from C (numba compiling a kernel calls back into Python through ctypes), the
C side prints "Exception ignored" and carries on, and the library then fails with an unrelated
error (numba: ``RuntimeError: no compiled object yet``). A loop that reports a failed item and
keeps going would then record the image as failed and run on: the user's Ctrl-C is lost.

:func:`install` (the command line calls it) replaces the default handler by one that also
remembers the request; :func:`requested` tells a loop that it was made, and :func:`check` raises
``KeyboardInterrupt`` again where an item's error is about to be swallowed.
"""
from __future__ import annotations

import signal
import sys
import threading

_requested = threading.Event()


def _on_sigint(signum, frame) -> None:
    _requested.set()
    raise KeyboardInterrupt


def _quiet_swallowed_interrupt(unraisable) -> None:
    # The "Exception ignored in <ctypes callback>" report of a swallowed Ctrl-C is a traceback the
    # user did not ask for: the request is remembered and the run ends as interrupted anyway.
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _requested.is_set():
        return
    _previous_unraisablehook(unraisable)


_previous_unraisablehook = sys.unraisablehook


def install() -> bool:
    """Remember SIGINT from now on (main thread only); False when SIGINT is ignored or not ours to take.

    A process started with SIGINT ignored (a background job) keeps ignoring it; a handler set by
    the embedding application is left alone.
    """
    global _previous_unraisablehook
    if threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGINT)
    if current is _on_sigint:
        return True
    if current is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _on_sigint)
    if sys.unraisablehook is not _quiet_swallowed_interrupt:
        _previous_unraisablehook = sys.unraisablehook
        sys.unraisablehook = _quiet_swallowed_interrupt
    return True


def requested() -> bool:
    """True once SIGINT arrived after :func:`install` (whether or not its KeyboardInterrupt survived)."""
    return _requested.is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if an interrupt was requested: call it before swallowing an item's error."""
    if _requested.is_set():
        raise KeyboardInterrupt


def reset() -> None:
    """Forget an earlier request (for a caller that handled it and goes on, such as a test)."""
    _requested.clear()
