"""Error types of robustlab. Every message names the bad value and says how to fix it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class RobustlabError(Exception):
    """Base class of every error robustlab raises on purpose."""


class InputError(RobustlabError, ValueError):
    """A value handed to robustlab is malformed (wrong dtype, shape, range, name...)."""


class DataError(RobustlabError):
    """A file or folder on disk is missing, unreadable or not in the expected format."""


class ModelError(RobustlabError):
    """A model misbehaved: wrong output shape, NaN outputs, no gradients where needed."""


class StoreError(RobustlabError):
    """The results store is locked, from an incompatible schema, or inconsistent."""


class OfflineError(RobustlabError):
    """Something had to be downloaded and the network is not reachable."""


class RobustlabWarning(UserWarning):
    """Something a command did differently from what it was asked, and says so (a skipped plugin,
    a worker count capped at the CPUs): the command line prints it as one ``warning: ...`` line."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ' Did you mean 'x'?' for the closest choice, or '' when none is close."""
    close = difflib.get_close_matches(str(name), list(choices), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> InputError:
    """Build the standard error for an unknown registry name, with a suggestion."""
    choices = sorted(choices)
    return InputError(
        f"unknown {kind} {name!r}.{did_you_mean(name, choices)} "
        f"Known {kind}s: {', '.join(choices)}."
    )


#: The line torch puts between the worker's message and the original traceback when it re-raises
#: an exception from a DataLoader worker process in the main process.
_WORKER_TRACEBACK_MARK = "Original Traceback (most recent call last):"


def one_line_message(exc: BaseException) -> str:
    """The message of ``exc`` as one line, for a terminal or a log.

    Newlines are folded into spaces. An exception re-raised from a worker process with the
    worker's traceback inside its message (as torch's DataLoader does) is reduced to the
    original exception's own message, without the traceback.

    Parameters
    ----------
    exc : BaseException
        Any exception.

    Returns
    -------
    str
        One line (no newline characters); the exception type's name when it has no message.
    """
    text = str(exc)
    if _WORKER_TRACEBACK_MARK in text:
        last = [line for line in text.split(_WORKER_TRACEBACK_MARK, 1)[1].splitlines() if line.strip()]
        if last:
            # "robustlab.errors.InputError: the message" -> "the message"
            head, sep, message = last[-1].partition(": ")
            text = message if sep and " " not in head else last[-1]
    line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return line or type(exc).__name__
