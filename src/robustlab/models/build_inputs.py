"""What a model's own code reads while it is built: files and environment variables.

A ``python:`` factory may load state that no state dict carries: a ``.npy`` weights file kept
as a plain tensor, a JSON config whose numbers become attributes, an environment variable. The
model's identity (:mod:`robustlab.models.identity`) must change when those do, or a rerun would
answer from the store with the numbers of the old state. So the build is *recorded*:

- every file opened (Python's ``open`` audit event: ``open``, ``io.open``, ``os.open``,
  ``pathlib``, ``numpy.load``, ``torch.load``, ``json.load`` of an opened file...) while a frame
  of the user's own code (a local file: not robustlab, the standard library or an installed
  package, see :func:`robustlab.models.code_identity.is_local_code`) is on the stack; files of
  installed packages and of the standard library are left out (their versions name them);
- every environment variable read (``os.environ[...]``, ``os.environ.get``, ``os.getenv``,
  ``in os.environ``) from such a frame, with its value (or its absence).

:func:`input_identity` then names each file by the SHA-256 of its bytes (``missing`` once it is
gone) and each variable by its value. What module-level code of a ``python:`` file reads when it
is first imported is recorded too and kept with the module, so a later build from the cached
module names the same inputs; a cached module whose recorded files changed is imported again.

What is *not* seen: state read while the model runs (a file opened in ``forward``), state
fetched over the network, and randomness that is not seeded. Keep such state in the state dict
(a buffer), or in a file the factory opens.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .code_identity import is_local_code

#: How many frames above an event are searched for the user's code.
_STACK_DEPTH = 64
#: The attribute of an imported model module holding what its first import read (BuildInputs).
INPUTS_ATTRIBUTE = "__robustlab_inputs__"
#: Files read as code (the import system), named by the code identity instead.
_CODE_SUFFIXES = (".py", ".pyc", ".pyd", ".so")


@dataclass
class BuildInputs:
    """The files and environment variables a build read (see the module docstring)."""

    files: set[str] = field(default_factory=set)
    environment: dict[str, str | None] = field(default_factory=dict)

    def merge(self, other: BuildInputs | None) -> BuildInputs:
        if other is not None:
            self.files |= other.files
            self.environment.update(other.environment)
        return self

    def __bool__(self) -> bool:
        return bool(self.files or self.environment)


_state = threading.local()
_hook_lock = threading.Lock()
_hook_installed = False


def _recording() -> list[BuildInputs]:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


@functools.lru_cache(maxsize=4096)
def _local_frame(module_name: str, filename: str) -> bool:
    return is_local_code(module_name, filename)


def _from_user_code(depth: int = 2) -> bool:
    """Whether a frame of the user's own code is among the callers (the event is theirs)."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return False
    for _ in range(_STACK_DEPTH):
        if frame is None:
            return False
        if _local_frame(frame.f_globals.get("__name__", "") or "", frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


def _audit(event: str, args: tuple) -> None:
    if event != "open":
        return
    stack = getattr(_state, "stack", None)
    if not stack or getattr(_state, "busy", False):
        return
    path = args[0] if args else None
    if isinstance(path, int) or path is None:  # a file descriptor: its file was recorded when opened
        return
    _state.busy = True
    try:
        if _from_user_code(2):
            stack[-1].files.add(os.fspath(path) if not isinstance(path, bytes) else os.fsdecode(path))
    except Exception:  # noqa: BLE001 - an audit hook must never break the program it watches
        pass
    finally:
        _state.busy = False


def _install_hook() -> None:
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            sys.addaudithook(_audit)  # cannot be removed: it does nothing outside a recording
            _hook_installed = True


@contextlib.contextmanager
def record_build_inputs() -> Iterator[BuildInputs]:
    """Record the files and environment variables the user's code reads inside the block."""
    _install_hook()
    inputs = BuildInputs()
    stack = _recording()
    environ_class = type(os.environ)
    original = environ_class.__getitem__

    def getitem(self, key):
        try:
            value = original(self, key)
        except KeyError:
            value = None
            raise
        finally:
            if self is os.environ and stack and not getattr(_state, "busy", False):
                _state.busy = True
                try:
                    if _from_user_code(2) and isinstance(key, str):
                        stack[-1].environment[key] = value
                finally:
                    _state.busy = False
        return value

    stack.append(inputs)
    patched = len(stack) == 1
    if patched:
        environ_class.__getitem__ = getitem
    try:
        yield inputs
    finally:
        stack.pop()
        if patched:
            environ_class.__getitem__ = original
        if stack:  # a nested recording's reads belong to the outer build too
            stack[-1].merge(inputs)


def file_digest(path: str) -> str:
    """``sha256:<hex>`` of a regular file, ``missing`` when it is gone, or its kind (a folder, a
    FIFO...: never opened)."""
    from ..fsutil import special_file_kind

    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    kind = special_file_kind(st.st_mode)
    if kind is not None:
        return kind
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    return f"sha256:{h.hexdigest()}"


def input_identity(inputs: BuildInputs | None) -> dict[str, Any]:
    """The recorded inputs as the identity names them: ``{"files": {path: digest}, "environment":
    {name: value or None}}`` (empty parts left out; {} when nothing was read)."""
    if not inputs:
        return {}
    out: dict[str, Any] = {}
    files = {os.path.realpath(p) for p in inputs.files}
    files = {p for p in files if not p.endswith(_CODE_SUFFIXES) and not os.path.isdir(p)
             and is_local_code("", p, data=True)}
    if files:
        out["files"] = {p: file_digest(p) for p in sorted(files)}
    if inputs.environment:
        out["environment"] = dict(sorted(inputs.environment.items()))
    return out


def inputs_changed(identity: dict[str, Any]) -> bool:
    """Whether a file named by an :func:`input_identity` no longer has the recorded bytes."""
    return any(file_digest(p) != d for p, d in (identity.get("files") or {}).items())


def describe_path(path: str) -> str:
    """A path as messages show it (relative to the working folder when below it)."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
