"""What the dataset builders (``robustlab corrupt``, ``robustlab perturb``) share: the frame of one
task (:func:`run_source_task`: read a source, write its outputs), the check that no two sources
share an output, the summary of a run, the failures it lists, and the resume check against the
settings already on disk.

A builder writes ``DST/<summary file>`` (JSON) at the start and the end of a run. Rerunning
into the same destination resumes it, but only with the settings that change the outputs
unchanged (``resume_keys``): mixing outputs of two seeds would give an inconsistent dataset.
While it runs, a builder holds an exclusive lock on DST (:func:`output_lock`), so a second run
into the same folder stops at once, naming the process that holds it, instead of deleting the
first one's temporary files.

A builder also records the source images it was given (relative path, size, modification
time: :func:`source_stamps`) in ``DST/.robustlab-sources.json``. When it resumes, a source that
changed since (another size or time) has its outputs made again, so DST never keeps outputs of
an image's old content; sources removed since are reported (their outputs are left in place).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .. import __version__, interrupts
from ..errors import DataError, InputError, RobustlabError
from ..fsutil import atomic_write_text, explain_os_error

T = TypeVar("T")

#: The lock file a running builder holds in its destination (hidden: listings skip it).
LOCK_NAME = ".robustlab.lock"
#: The record of the sources a builder was given (hidden: listings skip it).
SOURCES_NAME = ".robustlab-sources.json"


@dataclass(frozen=True)
class TaskResult:
    """What one builder task (one source image) settled: ``written`` outputs, ``failed`` ones not
    produced, and when something went wrong its ``kind`` ("unreadable": a bad source; "error":
    a kernel or generator raised) and ``message``. :meth:`BuildSummary.record` counts it."""

    relative: str
    written: int
    failed: int = 0
    kind: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class SourceTask:
    """What every builder task names: its source image, the destination root, the source's path
    relative to its dataset (``/``-separated), and the largest image it may read, in pixels (None:
    :data:`robustlab.data.images.DEFAULT_MAX_PIXELS`). Each builder adds what it makes of it."""

    source: str
    dst: str
    relative: str
    max_pixels: int | None = field(default=None, kw_only=True)


@dataclass
class SourceFailure:
    """A source image that produced no (or not all) outputs, and why."""

    image: str
    kind: str
    error: str
    outputs_missing: int


@dataclass
class BuildSummary:
    """What a run did. ``written + skipped + failed == outputs``; ``tool`` names the command."""

    tool: ClassVar[str] = "robustlab"

    source: str
    destination: str
    layout: str
    settings: Any
    images: int
    outputs: int
    written: int = 0
    skipped: int = 0
    failed: int = 0
    failures: list[SourceFailure] = field(default_factory=list)
    seconds: float = 0.0
    status: str = "running"
    workers: int = 1
    #: Sources whose size or time changed since the last run into DST (their outputs were made again).
    sources_changed: list[str] = field(default_factory=list)
    #: Sources of an earlier run into DST that are gone (their outputs are still in DST).
    sources_removed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_image: dict[str, SourceFailure] = {}

    @property
    def ok(self) -> bool:
        """True when every output exists and nothing raised."""
        return self.failed == 0

    def record(self, result: TaskResult) -> int:
        """Count one task's result (``written``, ``failed``, ``kind``, ``relative``, ``message``);
        failures of one source image are merged into one entry. Returns the outputs it settled."""
        self.written += result.written
        self.failed += result.failed
        if result.kind is not None:
            known = self._by_image.get(result.relative)
            if known is None:
                known = SourceFailure(result.relative, result.kind, result.message or "", 0)
                self._by_image[result.relative] = known
                self.failures.append(known)
            elif result.kind == "error" and result.message and result.message not in known.error:
                known.error += f"; {result.message}"
            known.outputs_missing += result.failed
        return result.written + result.failed

    def record_all(self, results: Iterable[Any], progress: Callable[[int], None] | None = None) -> None:
        """:meth:`record` every result as it arrives, telling ``progress`` how many outputs each settled.

        A Ctrl-C that a library swallowed while the task ran (and then carried on) stops the run
        here, after the task's outputs are counted (:mod:`robustlab.interrupts`)."""
        for result in results:
            done = self.record(result)
            if progress is not None:
                progress(done)
            interrupts.check()

    def text(self, headline: str, summary_name: str, max_failures: int = 20) -> str:
        """The terminal's summary of a run: ``headline`` (what was built where), the counts, the
        changed or removed sources and the bad ones (the first ``max_failures``)."""
        return "\n".join([headline, self.count_line(), *self.change_lines(),
                          *self.failure_lines(summary_name, max_failures)])

    def count_line(self) -> str:
        """``written 10, already there 2, failed 0 (3.1 s, 4 workers)``: the terminal's count line."""
        return (f"written {self.written}, already there {self.skipped}, failed {self.failed} "
                f"({self.seconds:.1f} s, {self.workers} worker{'s' if self.workers != 1 else ''})")

    def change_lines(self, max_names: int = 5) -> list[str]:
        """Terminal notes on sources changed or removed since the last run into DST (empty when none)."""
        lines = []
        for names, what in ((self.sources_changed, "changed since the last run; their outputs were made again"),
                            (self.sources_removed, "are gone since the last run; their outputs are still in "
                                                   f"{self.destination} (delete them, or use a fresh destination)")):
            if names:
                more = f" ... and {len(names) - max_names} more" if len(names) > max_names else ""
                lines.append(f"note: {len(names)} source image(s) {what}: {', '.join(names[:max_names])}{more}")
        return lines

    def failure_lines(self, summary_name: str, max_failures: int = 20) -> list[str]:
        """The terminal lines listing bad sources (the first ``max_failures``), empty when none."""
        if not self.failures:
            return []
        lines = [f"{len(self.failures)} source image(s) had problems:"]
        lines += [f"  {f.image}: [{f.kind}] {f.error}" for f in self.failures[:max_failures]]
        if len(self.failures) > max_failures:
            lines.append(f"  ... and {len(self.failures) - max_failures} more")
        lines.append(f"full list: {Path(self.destination) / summary_name}")
        return lines

    def to_json(self) -> dict:
        d = asdict(self)
        d["settings"] = asdict(self.settings)
        return {"tool": self.tool, "version": __version__, **d}


def run_source_task(relative: str, load: Callable[[], Any], outputs: Sequence[T], write: Callable[[Any, T], None],
                    name: Callable[[T], str]) -> TaskResult:
    """One builder task: load one source, then make each of its ``outputs`` in turn.

    A source that ``load`` cannot read (a RobustlabError) produces nothing ("unreadable"). An
    output whose ``write`` raises ends the task as "error", keeping the outputs written before it
    and naming the output (``name(output)``); a Ctrl-C swallowed inside it still interrupts the
    run, and a DataError (the destination failed: disk full, permissions) stops the run.
    """
    try:
        source = load()
    except RobustlabError as exc:
        return TaskResult(relative, 0, len(outputs), "unreadable", str(exc))
    written = 0
    for output in outputs:
        try:
            write(source, output)
        except DataError:
            raise
        except Exception as exc:  # a kernel or generator failed on this source: report it, keep going
            interrupts.check()  # unless it failed because Ctrl-C was swallowed inside it
            return TaskResult(relative, written, len(outputs) - written, "error",
                              f"{name(output)}: {type(exc).__name__}: {exc}")
        written += 1
    return TaskResult(relative, written)


def check_unique_outputs(images: Iterable[T], output_name: Callable[[T], Any], advice: str) -> None:
    """Raise InputError when two sources would be written to the same output name, ending the
    message with ``advice`` (e.g. ``"; rename one of them."``)."""
    seen: dict[Any, T] = {}
    for rel in images:
        out = output_name(rel)
        if out in seen:
            raise InputError(f"{seen[out]} and {rel} would both be written as {out}{advice}")
        seen[out] = rel


def check_resume(dst: Path, summary_name: str, settings: Any, resume_keys: tuple[str, ...], *,
                 what: str = "outputs", missing: dict[str, Any] | None = None) -> None:
    """Refuse to resume into ``dst`` when its stored settings differ in any of ``resume_keys``.
    ``missing``: for a key a summary written before it existed lacks, ``{key: old settings -> the
    value those outputs were made with}``."""
    path = dst / summary_name
    if not path.exists():
        return
    try:
        old = json.loads(path.read_text(encoding="utf-8"))["settings"]
        if not isinstance(old, dict):
            raise TypeError(f"'settings' is a {type(old).__name__}, not an object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path} is unreadable or malformed ({type(exc).__name__}: {exc}); it records the settings "
                        f"of the outputs in {dst}. Delete it to resume with the settings given now, or choose "
                        "another destination.") from exc
    new = asdict(settings)
    for key, made_with in (missing or {}).items():
        if key not in old:
            old[key] = made_with(old)
    diff = [f"{k} {old.get(k)!r} (asked: {new[k]!r})" for k in resume_keys if old.get(k) != new[k]]
    if diff:
        raise InputError(f"{dst} already holds {what} made with {', '.join(diff)}; mixing them would give "
                         "an inconsistent dataset. Use the same settings to resume, or another destination.")


def check_destination(dst: str | os.PathLike, tool: str, record: str, *,
                      source: str | os.PathLike | None = None) -> None:
    """Refuse an output folder a builder must not write into, before anything is written.

    - ``dst`` is, or lies inside, the output tree of another robustlab command (or of an
      earlier run of this one whose root is above ``dst``), or is a results store: its record
      (:data:`robustlab.data.folders.OUTPUT_RECORDS`) is found in ``dst`` or an ancestor
      (a results store only in ``dst`` itself). ``dst`` holding this builder's own ``record``
      is a resume, which is allowed.
    - ``source`` is ``dst`` itself, or lies inside it: its images would sit among the outputs,
      where an output could overwrite a source image or a source image be counted as an
      output. A ``dst`` *inside* ``source`` is fine: listings leave it out.

    Parameters
    ----------
    dst : path
        The output folder (need not exist yet).
    tool : str
        The command, for messages (``"robustlab perturb"``).
    record : str
        The file this builder marks its output with (``robustlab-perturb.json``).
    source : path, optional
        The folder the builder reads.

    Raises
    ------
    InputError
        Naming the folder, what owns it and what to do.
    """
    from .folders import output_owner

    target = Path(os.path.realpath(dst))
    for folder in (target, *target.parents):
        here = folder == target
        found = output_owner(folder, ignore=(record,) if here else ("catalog.db",))
        if found is None:
            continue
        name, owner = found
        where = f"{dst} is the output folder of {owner}" if here else f"{dst} lies inside {folder}, the output folder of {owner}"
        raise InputError(f"{where} (it holds {name}); {tool} would mix its files into it. Choose another output folder.")
    if source is not None:
        check_source_outside(target, dst, source)
    if not (target / record).exists():  # a resume writes where it wrote before
        image = first_image(target)
        if image is not None:
            raise InputError(f"the output folder {dst} holds images ({image}, ...): it is data, not an output folder. "
                             f"{tool} marks its output folder, and every listing then skips that folder, so those "
                             "images would vanish from every later evaluation of the dataset. Choose a new or empty "
                             "output folder.")


def check_source_outside(target: Path, dst: str | os.PathLike, source: str | os.PathLike) -> None:
    """Refuse a source folder that is the output folder ``dst`` (``target``: its real path), or
    lies inside it (see :func:`check_destination`)."""
    src = os.path.realpath(source)
    if src == str(target):
        raise InputError(f"the output folder {dst} is the source folder itself; give another output folder (one "
                         "beside it, or a subfolder of it: listings leave robustlab's outputs out).")
    if Path(src).is_relative_to(target):
        raise InputError(f"the source folder {source} lies inside the output folder {dst}: outputs could overwrite "
                         "source images, or source images be taken for outputs. Give an output folder outside the "
                         "source (one beside it, or a subfolder of it: listings leave robustlab's outputs out).")


def first_image(folder: Path) -> Path | None:
    """An image file in ``folder`` or in one of its subfolders (a class layout), or None (also
    when ``folder`` does not exist). Hidden entries are skipped; at most a few hundred entries
    of each folder are looked at."""
    from .images import is_image_file

    def scan(path: Path):
        try:
            with os.scandir(path) as entries:
                return [e for _, e in zip(range(500), entries) if not e.name.startswith(".")]
        except OSError:
            return []

    top = scan(folder)
    for entry in top:
        if is_image_file(entry.name) and entry.is_file():
            return Path(entry.path)
    for entry in top:
        if entry.is_dir(follow_symlinks=False):
            found = next((Path(e.path) for e in scan(Path(entry.path)) if is_image_file(e.name) and e.is_file()), None)
            if found is not None:
                return found
    return None


def source_stamps(root: Path, relatives: Iterable[Any]) -> dict[str, list[int]]:
    """``{relative path: [size in bytes, modification time in ns]}`` of the source files.

    A file that cannot be stat'ed (vanished, unreadable folder) gets ``[-1, -1]``: it reads as
    changed when it comes back.
    """
    stamps: dict[str, list[int]] = {}
    for rel in relatives:
        key = str(rel)
        try:
            st = os.stat(os.path.join(root, key))
            stamps[key] = [int(st.st_size), int(st.st_mtime_ns)]
        except OSError:
            stamps[key] = [-1, -1]
    return stamps


def source_changes(dst: Path, stamps: dict[str, list[int]]) -> tuple[list[str], list[str]]:
    """Sources (changed, removed) since the stamps recorded in ``dst`` (sorted; empty when none
    were recorded: a destination from an earlier robustlab, or a new one)."""
    path = Path(dst) / SOURCES_NAME
    try:
        old = json.loads(path.read_text(encoding="utf-8"))["sources"]
        if not isinstance(old, dict):
            raise TypeError("not an object")
    except FileNotFoundError:
        return [], []
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path} is unreadable or malformed ({type(exc).__name__}: {exc}); it records the source "
                        "images of the outputs in this folder. Delete it to resume without that check, or choose "
                        "another destination.") from exc
    changed = sorted(k for k, v in stamps.items() if k in old and old[k] != v)
    removed = sorted(k for k in old if k not in stamps)
    return changed, removed


def renew_sources(dst: Path, root: Path, relatives: Iterable[Any],
                  remove_outputs: Callable[[list[str]], Any]) -> tuple[list[str], list[str]]:
    """A builder's source check on (re)starting into ``dst``: the sources (changed, removed) since
    the stamps recorded there; ``remove_outputs(changed)`` deletes what the changed ones made, so
    it is made again; then the current stamps are recorded."""
    stamps = source_stamps(root, relatives)
    changed, removed = source_changes(dst, stamps)
    remove_outputs(changed)
    record_sources(dst, stamps)
    return changed, removed


def record_sources(dst: Path, stamps: dict[str, list[int]]) -> Path:
    """Write the source stamps to ``dst/.robustlab-sources.json`` atomically."""
    return atomic_write_text(Path(dst) / SOURCES_NAME, json.dumps({"format": 1, "sources": stamps}) + "\n")


def _lock_holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or "another process"


@contextlib.contextmanager
def output_lock(dst: Path, tool: str) -> Iterator[Path]:
    """Hold an exclusive lock on the output folder ``dst`` for the duration of a run.

    The lock is an advisory ``flock`` on ``dst/.robustlab.lock``, released when the block
    ends or the process dies (even by SIGKILL), so a killed run never leaves a stale lock. The
    file records the holder (pid, command, start time) for the message a second run gets.

    Parameters
    ----------
    dst : Path
        The output folder (must exist).
    tool : str
        The command, for the record (``"robustlab corrupt"``).

    Raises
    ------
    DataError
        When another process holds the lock: names it and says what to do.
    """
    path = Path(dst) / LOCK_NAME
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks here
        yield path
        return
    fd = _acquire_lock_file(path, fcntl)
    try:
        record = f"pid {os.getpid()}, {tool}, since {time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(sys.argv)[:200]}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode("utf-8", "replace"), 0)
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # while still holding the lock: a waiting run then sees a new file (below)
        os.close(fd)  # releases the lock


def _acquire_lock_file(path: Path, fcntl) -> int:
    """Open and lock ``path``; retry when the file was replaced meanwhile (its holder removed it
    on release after we opened it: the lock we got is on a file nobody else will see)."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise DataError(explain_os_error(exc, path, "create the lock file")) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataError(f"{path.parent} is being written by another run ({_lock_holder(path)}). Wait for it to "
                            "finish (or stop it), or choose another destination; two runs into one folder would "
                            "delete each other's temporary files.") from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def write_summary(dst: Path, summary_name: str, summary: BuildSummary) -> Path:
    """Write the run's summary JSON atomically and return its path."""
    return atomic_write_text(dst / summary_name, json.dumps(summary.to_json(), indent=1) + "\n")


@contextlib.contextmanager
def running(summary: BuildSummary, dst: Path, summary_name: str, started: float) -> Iterator[BuildSummary]:
    """Around a run: set its final status (complete, interrupted, failed) and always write the summary."""
    try:
        yield summary
        summary.status = "complete"
    except KeyboardInterrupt:
        summary.status = "interrupted"
        raise
    except BaseException:
        summary.status = "failed"
        raise
    finally:
        summary.seconds = round(time.perf_counter() - started, 3)
        write_summary(dst, summary_name, summary)


def run_with_progress(build: Callable[..., Any], verb: str, *, console=None, **options: Any) -> Any:
    """Run a dataset builder (``robustlab corrupt``, ``perturb``, ``stylize``) with a progress bar on
    ``console`` (stderr): ``build(progress=..., on_start=..., **options)``.

    The builder calls ``on_start(summary, todo=None)`` once its inputs are validated (so an error
    before that is one clean line, with no bar), with the outputs still to make (default: all of
    ``summary.outputs``), and ``progress(n)`` as outputs are settled. Outputs already there are
    announced first (``resuming: ...``).
    """
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    console = console or Console(stderr=True)
    bar = Progress(TextColumn(f"[bold]{verb}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False)
    task_id = bar.add_task(verb, total=None)

    def on_start(summary: BuildSummary, todo: int | None = None) -> None:
        if summary.skipped:
            console.print(f"resuming: {summary.skipped} of {summary.outputs} outputs already in {summary.destination}")
        bar.update(task_id, total=summary.outputs if todo is None else todo)
        bar.start()

    try:
        return build(progress=lambda n: bar.advance(task_id, n), on_start=on_start, **options)
    finally:
        bar.stop()
