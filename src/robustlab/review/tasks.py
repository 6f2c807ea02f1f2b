"""The task set a review serves: ``review_tasks.jsonl`` as ``robustlab video sample`` writes it.

Each line is one task, ``{"anchor", "frame", "offset", "video", "labels"}``; ``frame ==
anchor`` (offset 0) is the anchor's own step (is it correctly labelled, which labels are
missing), the other lines are (anchor, candidate) pairs. Frame keys are paths relative to the
folder that holds the TASKS file (``frames/<video>/NNNNNN.jpg``).

:func:`read_task_set` checks every line (the error names the file and the line number),
resolves each frame key to a file once, and refuses keys that leave the folder. The server
serves frames only through :meth:`TaskSet.frame_path`, a lookup in that table: a path the
user typed is never joined to a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ..errors import DataError
from ..fsutil import read_jsonl
from ..video.sampling import MANIFEST, TASKS

#: Fields a task line may carry (``robustlab video sample`` writes all five).
TASK_FIELDS = ("anchor", "frame", "offset", "video", "labels")
CLASSES_FILE = "classes.json"


@dataclass(frozen=True)
class ReviewTask:
    """One review step: an anchor's own step (``frame == anchor``) or an (anchor, candidate) pair.

    Attributes
    ----------
    index : int
        Position in the task file (0-based); the order annotators see.
    anchor, frame : str
        Frame keys relative to the task set's folder.
    offset : int
        Frame number of ``frame`` minus the anchor's (0 for the anchor step).
    video : str
        Video id.
    labels : tuple of int
        Class indices given at sampling time (empty for unlabelled, weakly labelled sources).
    """

    index: int
    anchor: str
    frame: str
    offset: int
    video: str
    labels: tuple[int, ...]

    @property
    def is_anchor_step(self) -> bool:
        """True for the anchor's own step (label check and missing labels)."""
        return self.frame == self.anchor

    @property
    def pair(self) -> tuple[str, str]:
        """``(anchor, frame)``, the key of the task's answers."""
        return (self.anchor, self.frame)


@dataclass(frozen=True)
class TaskSet:
    """A validated task set; see :func:`read_task_set`.

    Attributes
    ----------
    path : Path
        The TASKS file (absolute).
    root : Path
        Its folder: frame keys are relative to it; ``sample.json`` there makes it finalizable.
    tasks : tuple of ReviewTask
        In review order: file order grouped by anchor, each anchor's own step first.
    class_names : tuple of str
        From ``classes.json`` or ``sample.json`` (empty when neither names them).
    digest : str
        SHA-256 of the TASKS file's bytes: ties a review database to one task set.
    """

    path: Path
    root: Path
    tasks: tuple[ReviewTask, ...]
    class_names: tuple[str, ...]
    digest: str
    by_pair: dict[tuple[str, str], ReviewTask] = field(repr=False, compare=False)
    frame_files: dict[str, Path] = field(repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.tasks)

    def task(self, anchor: str, frame: str) -> ReviewTask | None:
        """The task of the pair, or None when the pair is not in the set."""
        return self.by_pair.get((anchor, frame))

    def frame_path(self, key: str) -> Path | None:
        """The file of a frame key listed in the set, or None for any other string."""
        return self.frame_files.get(key)

    def missing_frames(self) -> list[str]:
        """Frame keys whose file is not on disk (or is not a regular file)."""
        return [key for key, path in self.frame_files.items() if not path.is_file()]

    @property
    def finalizable(self) -> bool:
        """True when the folder holds the ``sample.json`` manifest that finalize needs."""
        return (self.root / MANIFEST).is_file()

    def class_name(self, index: int) -> str:
        """Name of class ``index`` (the number itself when the set names no classes)."""
        return self.class_names[index] if 0 <= index < len(self.class_names) else str(index)


def _check_key(value: object, name: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: {name} must be a frame key (a relative path string); got {value!r}.")
    pure = PurePosixPath(value)
    if value.startswith(("/", "\\")) or pure.is_absolute() or ".." in pure.parts or "\\" in value \
            or (len(value) > 1 and value[1] == ":") or "\x00" in value:
        raise DataError(f"{where}: {name} {value!r} is not a relative path inside the task set's folder "
                        "(no absolute paths, no '..'); frame keys look like frames/<video>/000120.jpg.")
    return value


def parse_task(obj: object, index: int, where: str) -> ReviewTask:
    """Validate one decoded task line.

    Raises
    ------
    DataError
        Naming ``where`` (file and line), the field and what it must be.
    """
    if not isinstance(obj, dict):
        raise DataError(f"{where}: a task must be a JSON object with {', '.join(TASK_FIELDS)}; "
                        f"got {type(obj).__name__}.")
    unknown = sorted(set(obj) - set(TASK_FIELDS))
    if unknown:
        raise DataError(f"{where}: unknown field(s) {unknown}; a task has {', '.join(TASK_FIELDS)}.")
    anchor = _check_key(obj.get("anchor"), "anchor", where)
    frame = _check_key(obj.get("frame"), "frame", where)
    offset = obj.get("offset", 0 if frame == anchor else None)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise DataError(f"{where}: offset must be an integer (frame number minus the anchor's); got {offset!r}.")
    if (offset == 0) != (frame == anchor):
        raise DataError(f"{where}: offset {offset} does not fit frame {frame!r} and anchor {anchor!r} "
                        "(offset 0 is the anchor's own step, where frame == anchor).")
    video = obj.get("video", anchor.rsplit("/", 1)[0])
    if not isinstance(video, str) or not video:
        raise DataError(f"{where}: video must be a non-empty string; got {video!r}.")
    labels = obj.get("labels", [])
    if not (isinstance(labels, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                             for v in labels)):
        raise DataError(f"{where}: labels must be a list of class indices (non-negative integers); "
                        f"got {labels!r}.")
    return ReviewTask(index=index, anchor=anchor, frame=frame, offset=offset, video=video,
                      labels=tuple(sorted(set(labels))))


def _class_names(root: Path) -> tuple[str, ...]:
    for path in (root / CLASSES_FILE, root / MANIFEST):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"cannot read class names from {path}: {exc}; fix or remove the file.") from exc
        names = data.get("class_names") if isinstance(data, dict) else data
        if names is None:
            continue
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise DataError(f"{path}: class names must be a JSON list of strings.")
        return tuple(names)
    return ()


def anchor_steps_first(tasks: list[ReviewTask]) -> list[ReviewTask]:
    """Tasks grouped by anchor (in order of first appearance), each anchor's own step first,
    re-indexed: the order annotators work in (``robustlab video sample`` already writes it)."""
    groups: dict[str, list[ReviewTask]] = {}
    for t in tasks:
        groups.setdefault(t.anchor, []).append(t)
    ordered = [t for group in groups.values()
               for t in sorted(group, key=lambda t: not t.is_anchor_step)]
    return [replace(t, index=i) for i, t in enumerate(ordered)]


def read_task_set(path: str | os.PathLike) -> TaskSet:
    """Read and check a TASKS file (``review_tasks.jsonl``) and locate its frames.

    Parameters
    ----------
    path : path
        The TASKS file, or the folder ``robustlab video sample`` wrote (its
        ``review_tasks.jsonl`` is taken).

    Returns
    -------
    TaskSet

    Raises
    ------
    DataError
        The file is missing, unreadable, empty, or a line is not a valid task (the message
        gives the line number); a pair is listed twice; a pair's anchor has a different
        video or labels on another line.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / TASKS
    if not p.is_file():
        raise DataError(f"task file {p} does not exist: give the review_tasks.jsonl written by "
                        "`robustlab video sample VIDEOS OUT` (or the OUT folder).")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read task file {p}: {exc}.") from exc
    p = p.absolute()
    root = p.parent
    tasks: list[ReviewTask] = []
    by_pair: dict[tuple[str, str], ReviewTask] = {}
    first_line: dict[tuple[str, str], int] = {}
    anchors: dict[str, tuple[int, ReviewTask]] = {}
    for number, where, obj in read_jsonl(p, what="task file", item="one task object", data=raw):
        task = parse_task(obj, len(tasks), where)
        if task.pair in by_pair:
            raise DataError(f"{where}: the pair ({task.anchor}, {task.frame}) is listed twice (first on line "
                            f"{first_line[task.pair]}); each pair is reviewed once per annotator and round.")
        seen = anchors.get(task.anchor)
        if seen is not None and (seen[1].video, seen[1].labels) != (task.video, task.labels):
            raise DataError(f"{where}: anchor {task.anchor!r} has video {task.video!r} and labels "
                            f"{list(task.labels)} here but {seen[1].video!r} and {list(seen[1].labels)} on "
                            f"line {seen[0]}; one anchor belongs to one video with one set of labels.")
        anchors.setdefault(task.anchor, (number, task))
        by_pair[task.pair] = task
        first_line[task.pair] = number
        tasks.append(task)
    if not tasks:
        raise DataError(f"task file {p} holds no tasks; sample videos first with `robustlab video sample`.")
    tasks = anchor_steps_first(tasks)
    by_pair = {t.pair: t for t in tasks}
    keys = sorted({k for t in tasks for k in t.pair})
    frame_files = {key: root.joinpath(*PurePosixPath(key).parts) for key in keys}
    return TaskSet(path=p, root=root, tasks=tuple(tasks), class_names=_class_names(root),
                   digest=hashlib.sha256(raw).hexdigest(), by_pair=by_pair, frame_files=frame_files)


def check_frames_present(task_set: TaskSet, *, limit: int = 20) -> None:
    """Raise when frames of the set are missing on disk, listing them (the server refuses to start).

    Raises
    ------
    DataError
        Listing up to ``limit`` missing frame files and how many there are in all.
    """
    missing = task_set.missing_frames()
    if not missing:
        return
    shown = "\n  ".join(str(task_set.frame_files[k]) for k in missing[:limit])
    more = f"\n  ... and {len(missing) - limit} more" if len(missing) > limit else ""
    raise DataError(f"{len(missing)} frame(s) of {task_set.path} are missing on disk:\n  {shown}{more}\n"
                    "The server does not start without them: re-run `robustlab video sample`, or serve "
                    "the folder the frames were written to.")
