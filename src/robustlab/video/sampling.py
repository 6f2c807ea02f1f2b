"""Build the candidates of a pm-k set from videos: one anchor per video and its +-k frames.

:func:`sample_videos` decodes every video in a folder with PyAV (any container and codec
FFmpeg reads), picks one anchor frame per video uniformly at random among the frames that
have k frames on both sides (seeded per video, so the choice does not depend on the other
videos or their order), and writes, under ``OUT``:

- ``frames/<video id>/<NNNNNN>.jpg``: the anchor and its 2k neighbours (NNNNNN is the frame
  number in presentation order, from 0), so frame keys are ``frames/<video id>/NNNNNN.jpg``;
- ``sample.json``: the manifest: per video its source file, frame rate, frame count, anchor,
  and per extracted frame its key, offset, frame number, pts, timestamp (seconds) and picture
  type (I/P/B, as the decoder reports it); plus the videos skipped and why;
- ``review_tasks.jsonl``: one review task per line, the anchor itself first (offset 0), then
  each (anchor, candidate) pair; see :mod:`robustlab.video.review` for the answers' format;
- ``classes.json`` when class names are given.

A video that cannot be decoded or is shorter than 2k+1 frames is skipped and reported in the
returned summary (and in ``sample.json``); the run goes on with the other videos.

Sampling again into a folder replaces its task set; a folder whose review holds answers
(``review.db`` with saved answers, or exported ``reviews/*.jsonl``) is refused before anything
is written, so no answer ever loses the frames it was given on.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from ..data.builds import check_destination
from ..data.images import write_image
from ..data.video_reader import open_video
from ..errors import DataError, InputError
from ..fsutil import atomic_write_text, ensure_dir, not_a_folder, require_regular_file
from ..seeding import as_generator, derive_seed
from ._io import write_json
from .review import REVIEW_DB, REVIEWS_DIR, answers_kept_in

VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".ts",
                    ".mts", ".m2ts", ".flv", ".wmv", ".3gp", ".ogv", ".ogg", ".gif", ".y4m")
MANIFEST = "sample.json"
TASKS = "review_tasks.jsonl"
MANIFEST_FORMAT = "robustlab-video-sample/1"
IMAGE_FORMATS = ("jpg", "png")
_DECODE_ERRORS = (av.FFmpegError, OSError, ValueError, EOFError, RuntimeError)


def find_videos(videos_dir: str | os.PathLike,
                extensions: Sequence[str] | None = VIDEO_EXTENSIONS) -> list[Path]:
    """Video files under ``videos_dir`` (recursively, sorted); ``extensions=None`` takes every file."""
    root = Path(videos_dir)
    if not root.is_dir():
        raise not_a_folder(root, "videos folder")
    exts = None if extensions is None else {e.lower() for e in extensions}
    return sorted(p for p in root.rglob("*") if not p.is_dir() and not p.name.startswith(".")
                  and (exts is None or p.suffix.lower() in exts))  # special files too: reported, not read


def video_ids(paths: Sequence[Path], videos_dir: Path) -> dict[Path, str]:
    """A unique, file-system-safe id per video: its relative path without extension."""
    ids: dict[Path, str] = {}
    taken: set[str] = set()
    for p in paths:
        rel = p.relative_to(videos_dir)
        base = re.sub(r"[^A-Za-z0-9._-]", "_", "__".join(rel.with_suffix("").parts)) or "video"
        vid = base if base not in taken else f"{base}_{p.suffix.lstrip('.').lower()}"
        n = 2
        while vid in taken:
            vid, n = f"{base}_{n}", n + 1
        taken.add(vid)
        ids[p] = vid
    return ids


def pict_type_name(value: object) -> str:
    """Picture type as a letter ('I', 'P', 'B', ...; '?' when the decoder gives none)."""
    if isinstance(value, str):
        return value or "?"
    name = getattr(value, "name", None)
    if name is None:
        try:
            name = av.video.frame.PictureType(int(value)).name
        except (TypeError, ValueError):
            return "?"
    return "?" if name == "NONE" else str(name)


def _frame_record(frame: av.VideoFrame, index: int, fps: float | None) -> dict:
    time_s = float(frame.time) if frame.time is not None else (index / fps if fps else None)
    return {"index": index, "pts": frame.pts, "time_s": time_s,
            "pict_type": pict_type_name(frame.pict_type), "key_frame": bool(frame.key_frame)}


def decode_anchor_window(path: str | os.PathLike, k: int, rng: np.random.Generator
                         ) -> tuple[list[tuple[av.VideoFrame, dict]], int, dict]:
    """Decode a video once and pick an anchor uniformly among frames k..n-1-k.

    Reservoir sampling over candidate anchors with a ring buffer of the last 2k+1 frames, so
    the video is decoded in one pass without knowing its length in advance.

    Returns
    -------
    window : list of (frame, record)
        The 2k+1 frames around the anchor, in presentation order (anchor in the middle).
    n_frames : int
        Frames decoded.
    stream_info : dict
        ``fps`` (float or None), ``width``, ``height``, ``codec``.

    Raises
    ------
    DataError
        When the file is unreadable, has no video stream or fewer than 2k+1 frames.
    """
    p = Path(path)
    size = 2 * k + 1
    require_regular_file(p, "video file")  # a FIFO would block the decoder forever
    try:
        with open_video(p, no_stream=f"{p} has no video stream.") as (container, stream):
            rate = stream.average_rate or stream.guessed_rate
            fps = float(rate) if rate else None
            info = {"fps": fps, "fps_exact": str(Fraction(rate)) if rate else None,
                    "width": stream.codec_context.width, "height": stream.codec_context.height,
                    "codec": stream.codec_context.name}
            ring: deque = deque(maxlen=size)
            window: list | None = None
            n = 0
            for frame in container.decode(stream):
                ring.append((frame, _frame_record(frame, n, fps)))
                n += 1
                if n >= size:
                    candidates_seen = n - size + 1
                    if rng.integers(candidates_seen) == 0:
                        window = list(ring)
    except DataError:
        raise
    except _DECODE_ERRORS as exc:
        raise DataError(f"{p} cannot be decoded: {exc}. It is not a video FFmpeg can read, or "
                        "it is corrupt.") from exc
    if window is None:
        raise DataError(f"{p} has {n} frames; at least 2k+1 = {size} are needed for k={k}.")
    return window, n, info


def _remove_stale_frames(folder: Path, keep: set[str]) -> None:
    """Delete frames an earlier run (other seed or k) wrote for this video, so the folder
    holds exactly the frames of the manifest. Only files named like ours are touched."""
    if not folder.is_dir():
        return
    for f in folder.iterdir():
        if re.fullmatch(r"\d{6}\.(jpg|png)", f.name) and f.name not in keep:
            f.unlink()


def sample_video(path: str | os.PathLike, out_dir: str | os.PathLike, video_id: str, *, k: int,
                 rng: np.random.Generator, image_format: str = "jpg", quality: int = 95) -> dict:
    """Sample one video: decode, pick the anchor, write its 2k+1 frames; return its manifest entry."""
    window, n_frames, info = decode_anchor_window(path, k, rng)
    out = Path(out_dir)
    anchor_index = window[k][1]["index"]
    _remove_stale_frames(out / "frames" / video_id,
                         {f"{r['index']:06d}.{image_format}" for _, r in window})
    frames = []
    for frame, record in window:
        key = f"frames/{video_id}/{record['index']:06d}.{image_format}"
        write_image(out / key, frame.to_ndarray(format="rgb24"), quality=quality)
        frames.append({"key": key, "offset": record["index"] - anchor_index, **record})
    return {"video": video_id, "n_frames": n_frames, **info, "anchor": frames[k]["key"],
            "anchor_index": anchor_index, "frames": frames}


def review_tasks(videos: Sequence[Mapping]) -> list[dict]:
    """Review tasks for sampled videos: per video the anchor (offset 0), then each candidate."""
    tasks = []
    for video in videos:
        ordered = sorted(video["frames"], key=lambda f: (f["offset"] != 0, abs(f["offset"]),
                                                          f["offset"]))
        for f in ordered:
            tasks.append({"anchor": video["anchor"], "frame": f["key"], "offset": f["offset"],
                          "video": video["video"], "labels": list(video.get("labels", []))})
    return tasks


def check_labels(labels: Mapping[str, object] | None, class_names: Sequence[str] | None = None
                 ) -> dict[str, list[int]]:
    """Validate every entry of a labels mapping ``{video: index | name | [indices or names]}``.

    Each label must be a class index (a non-negative integer), below ``len(class_names)`` when
    class names are given, or one of the class names. Returns ``{video: sorted unique indices}``.

    Raises
    ------
    InputError
        Naming the video and the label that matches no class, and the valid range.
    """
    if not labels:
        return {}
    names = list(class_names) if class_names else None
    index = {n: i for i, n in enumerate(names)} if names else {}
    checked: dict[str, list[int]] = {}
    for video, value in labels.items():
        values = value if isinstance(value, list) else [value]
        out = []
        for v in values:
            if isinstance(v, str) and v in index:
                out.append(index[v])
            elif isinstance(v, int) and not isinstance(v, bool) and v >= 0 and (names is None or v < len(names)):
                out.append(v)
            else:
                valid = (f"an index 0..{len(names) - 1} or one of the {len(names)} class names"
                         if names else "a non-negative integer class index")
                raise InputError(f"label {v!r} of video {video!r} matches no class: give {valid} "
                                 "(or a list of them).")
        checked[str(video)] = sorted(set(out))
    return checked


def _labels_for(labels: Mapping[str, list[int]] | None, rel: str, video_id: str, stem: str
                ) -> tuple[list[int], str | None]:
    """The checked labels of one video and the key they were found under (None when absent)."""
    if not labels:
        return [], None
    for name in (rel, video_id, stem):
        if name in labels:
            return list(labels[name]), name
    return [], None


def _sample_each(paths: Sequence[Path], videos_root: Path, out: Path, k: int, seed: int, image_format: str,
                 quality: int, checked_labels: Mapping[str, list[int]],
                 progress: Callable[[str, str | None], None] | None) -> tuple[list[dict], list[dict], set]:
    """Sample every video in turn: ``(manifest entries, skipped videos with why, label keys used)``."""
    ids = video_ids(paths, videos_root)
    sampled, skipped, used_keys = [], [], set()
    for p in paths:
        rel = p.relative_to(videos_root).as_posix()
        rng = as_generator(derive_seed(seed, rel))
        try:
            entry = sample_video(p, out, ids[p], k=k, rng=rng, image_format=image_format,
                                 quality=quality)
        except DataError as exc:
            skipped.append({"source": rel, "reason": str(exc)})
            if progress:
                progress(rel, str(exc))
            continue
        video_labels, key = _labels_for(checked_labels, rel, ids[p], p.stem)
        used_keys.add(key)
        entry = {"video": entry.pop("video"), "source": rel, "labels": video_labels, **entry}
        sampled.append(entry)
        if progress:
            progress(rel, None)
    return sampled, skipped, used_keys


def sample_videos(videos_dir: str | os.PathLike, out_dir: str | os.PathLike, k: int = 10,
                  seed: int = 0, *, image_format: str = "jpg", quality: int = 95,
                  labels: Mapping[str, object] | None = None,
                  class_names: Sequence[str] | None = None,
                  extensions: Sequence[str] | None = VIDEO_EXTENSIONS,
                  progress: Callable[[str, str | None], None] | None = None) -> dict:
    """Sample one anchor and its +-k frames from every video in ``videos_dir``.

    Parameters
    ----------
    videos_dir : path
        Folder searched recursively for files with one of ``extensions``.
    out_dir : path
        Output folder (created); see the module docstring for what goes there.
    k : int
        Frames on each side of the anchor (the paper uses 10).
    seed : int
        Base seed; each video's anchor uses ``derive_seed(seed, relative path)``.
    image_format : {"jpg", "png"}
    quality : int
        JPEG quality (1..100).
    labels : mapping, optional
        Class labels per video, ``{relative path | video id | file stem: index or [indices]}``;
        carried into the review tasks and the final labels.
    class_names : sequence of str, optional
        Written to ``classes.json``.
    progress : callable, optional
        Called as ``progress(relative path, error message or None)`` after each video.

    Returns
    -------
    dict
        Summary: ``videos_found``, ``videos_sampled``, ``frames_written``, ``skipped`` (list of
        ``{"source", "reason"}``), ``manifest`` and ``tasks`` paths.

    Raises
    ------
    InputError
        ``k < 1``, unknown image format, bad labels, or ``out_dir`` holds answers to the review
        of the task set sampled there before (:func:`check_no_review_answers`).
    DataError
        No video files in ``videos_dir``, or none of them could be sampled.
    """
    if int(k) < 1:
        raise InputError(f"k={k}: give k >= 1 frames on each side of the anchor.")
    image_format = image_format.lower().replace("jpeg", "jpg")
    if image_format not in IMAGE_FORMATS:
        raise InputError(f"image format {image_format!r} is unknown; use 'jpg' or 'png'.")
    checked_labels = check_labels(labels, class_names)  # before anything is written
    check_destination(out_dir, "robustlab video sample", MANIFEST)  # never into another command's output
    check_no_review_answers(out_dir)
    videos_root = Path(videos_dir)
    paths = find_videos(videos_root, extensions)
    if not paths:
        raise DataError(f"no video files in {videos_root} (looked for "
                        f"{', '.join(extensions or ['any file'])}).")
    out = ensure_dir(out_dir)
    sampled, skipped, used_keys = _sample_each(paths, videos_root, out, int(k), int(seed), image_format, quality,
                                               checked_labels, progress)
    manifest = {"format": MANIFEST_FORMAT, "k": int(k), "seed": int(seed),
                "image_format": image_format, "videos_dir": str(videos_root),
                "class_names": list(class_names) if class_names else None,
                "videos": sampled, "skipped": skipped}
    write_json(out / MANIFEST, manifest)
    atomic_write_text(out / TASKS, "".join(json.dumps(t) + "\n" for t in review_tasks(sampled)))
    if class_names:
        write_json(out / "classes.json", list(class_names))
    summary = {"videos_found": len(paths), "videos_sampled": len(sampled),
               "frames_written": sum(len(v["frames"]) for v in sampled), "skipped": skipped,
               "manifest": str(out / MANIFEST), "tasks": str(out / TASKS),
               "unlabelled": sorted(v["source"] for v in sampled if checked_labels and not v["labels"]),
               "labels_unmatched": sorted(k for k in checked_labels if k not in used_keys)}
    if not sampled:
        reasons = "; ".join(s["reason"] for s in skipped[:3])
        raise DataError(f"none of the {len(paths)} videos in {videos_root} could be sampled "
                        f"(e.g. {reasons}).")
    return summary


def check_no_review_answers(out_dir: str | os.PathLike) -> None:
    """Refuse to sample into a folder whose review already holds answers (before anything is written).

    Sampling again replaces the task set and its frames; answers saved in ``OUT/review.db`` or
    exported to ``OUT/reviews/`` would then refer to frames and tasks that are gone (the
    review server refuses such a database, and finalize the export).

    Raises
    ------
    InputError
        Listing what holds answers, and the two ways on: another folder, or export and move.
    """
    kept = answers_kept_in(out_dir)
    if not kept:
        return
    out = Path(out_dir)
    raise InputError(
        f"{out} holds answers to the review of the task set sampled there: {'; '.join(kept)}. Sampling again "
        "would replace that task set and its frames, and the answers would no longer match them. Sample into "
        f"another folder (e.g. {out.name}-2), or, to start this review over, export the answers first "
        f"(`robustlab review export answers.jsonl --db {out / REVIEW_DB}`) and move {REVIEW_DB} and "
        f"{REVIEWS_DIR}/ out of {out}.")


def read_manifest(out_dir: str | os.PathLike) -> dict:
    """Read ``OUT/sample.json`` written by :func:`sample_videos`, checking its format."""
    from ..fsutil import read_json  # noqa: PLC0415
    from ._io import FIX  # noqa: PLC0415

    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        raise DataError(f"{path} not found: run `robustlab video sample VIDEOS {out_dir}` first.")
    manifest = read_json(path, fix=FIX)
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise DataError(f"{path} is not a robustlab sample manifest (format "
                        f"{MANIFEST_FORMAT!r}); re-run `robustlab video sample`.")
    return manifest


def sample_videos_from_files(videos_dir: str | os.PathLike, out_dir: str | os.PathLike, *,
                             labels_file: str | os.PathLike | None = None,
                             classes_file: str | os.PathLike | None = None, **kwargs) -> dict:
    """:func:`sample_videos` with labels and class names read from JSON files (the CLI's form).

    ``labels_file`` holds ``{video file: class index or [indices]}``; ``classes_file`` a list
    of class names.
    """
    from ..fsutil import read_json  # noqa: PLC0415
    from ._io import FIX  # noqa: PLC0415

    labels = read_json(labels_file, fix=FIX) if labels_file else None
    if labels is not None and not isinstance(labels, dict):
        raise DataError(f"{labels_file}: expected a JSON object {{video file: class index or "
                        "[indices]}}.")
    classes = read_json(classes_file, fix=FIX) if classes_file else None
    if classes is not None and not (isinstance(classes, list)
                                    and all(isinstance(c, str) for c in classes)):
        raise DataError(f"{classes_file}: expected a JSON list of class names.")
    return sample_videos(videos_dir, out_dir, labels=labels, class_names=classes, **kwargs)


def format_summary(summary: Mapping) -> str:
    """Human-readable summary of :func:`sample_videos` (skipped videos listed with reasons)."""
    lines = [f"sampled {summary['videos_sampled']} of {summary['videos_found']} videos "
             f"({summary['frames_written']} frames); review tasks: {summary['tasks']}"]
    if summary["skipped"]:
        lines.append(f"skipped {len(summary['skipped'])} video(s):")
        lines += [f"  {s['source']}: {s['reason']}" for s in summary["skipped"]]
    for key, what in (("unlabelled", "sampled video(s) have no entry in the labels file"),
                      ("labels_unmatched", "entries of the labels file match no sampled video")):
        names = summary.get(key) or []
        if names:
            more = f" ... and {len(names) - 5} more" if len(names) > 5 else ""
            lines.append(f"note: {len(names)} {what}: {', '.join(names[:5])}{more}")
    return "\n".join(lines)


def echo_progress(source: str, error: str | None) -> None:
    """Progress callback printing one line per video to stderr (the CLI's)."""
    import sys  # noqa: PLC0415

    print(f"  {'ok  ' if error is None else 'skip'} {source}", file=sys.stderr, flush=True)
