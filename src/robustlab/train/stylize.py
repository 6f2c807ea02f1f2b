"""``robustlab stylize DATA --styles STYLES --out OUT``: AdaIN-stylized copies of a dataset.

The Robust Detection Benchmark's Stylized-COCO / -VOC / -Cityscapes: every training image
restyled with one randomly chosen painting (AdaIN, alpha 1; :mod:`robustlab.train.adain`), the
layout and annotations kept, so a detector framework trains on ``OUT`` as on ``DATA``.

Layouts (found under ``DATA``):

- **COCO**: ``annotations/instances_<split>.json`` + ``<split>/`` images: the images the
  annotation files list are stylized; the annotation files are copied;
- **Pascal VOC**: every ``JPEGImages/`` folder (``VOCdevkit/VOC2007/JPEGImages``) is stylized;
  the other folders beside it (``Annotations``, ``ImageSets``, ``Segmentation*``) are copied;
- **Cityscapes**: ``leftImg8bit/`` is stylized; ``gtFine/`` and ``gtCoarse/`` are copied;
- **image folder** (flat or class subfolders): every image is stylized.

Each output keeps its source's path and size (the decoder's output is cropped to it); JPEG
sources are written as JPEG (``quality``, 75 by default: PIL's default, which the reference
tool's ``torchvision.utils.save_image`` uses), PNG as PNG, other formats as PNG.

The style of image ``<rel>``: ``RandomState(derive_seed(seed, rel, "style")).randint(n)`` over
the sorted style files; an unreadable (or too small) style is skipped for the next draw of the
same generator, and listed. Styles are resized to ``style_size`` on their shorter side (512, as
the reference tool); contents keep their size (``content_size``: resize image folders only).

Like ``robustlab corrupt``: outputs already present are skipped (resume by rerunning),
every file is written under a temporary name and renamed, unreadable content images are
skipped and listed in ``OUT/robustlab-stylize.json``, and the work runs on ``workers``
processes (CPU) or in this process on the GPU. ``--combined`` writes ``OUT/combined.txt`` (every
clean image by absolute path, then every stylized one relative to ``OUT``) and, for COCO,
``<annotation>_combined.json`` next to each annotation file: the clean images (absolute
``file_name``) and the stylized copies (ids offset by a power of ten above the largest id),
each with its annotations: the "combined" training setting.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ..data.builds import (BuildSummary, SourceFailure, TaskResult, check_destination, check_resume, output_lock,
                           run_with_progress, running, write_summary)
from ..data.folders import (CocoAnnotations, discover_dataset, find_images, is_robustlab_output, real_paths,
                            skipped_subfolders)
from ..data.images import check_image, encode_image, read_image
from ..data.jobs import run_jobs, worker_count
from ..errors import DataError, InputError, RobustlabError
from ..fsutil import atomic_path, atomic_write_bytes, atomic_write_text, ensure_dir, is_temporary_name, not_a_folder
from ..seeding import derive_seed
from .adain import MIN_SIDE, AdainWeights, resize_shorter_side

SUMMARY_NAME = "robustlab-stylize.json"
#: ``{content image: style image}`` of every stylized image (merged over resumed runs).
ASSIGNMENTS_NAME = "robustlab-stylize-styles.json"
COMBINED_LISTING = "combined.txt"
#: Settings that must match to resume into an existing OUT (they change the pixels).
RESUME_KEYS = ("styles", "style_set", "alpha", "seed", "style_size", "content_size", "quality", "weights")
#: Folders copied beside the stylized images, per layout.
ANNOTATION_FOLDERS = {"cityscapes": ("gtFine", "gtCoarse")}
#: Draws of the style generator before an image is given up (every drawn style unreadable).
MAX_STYLE_DRAWS = 16
#: Style statistics kept per process (a style drawn again is not encoded again).
STYLE_CACHE = 256


@dataclass(frozen=True)
class StylizeSettings:
    """What to produce; build it with :func:`make_settings` (which validates)."""

    styles: str
    style_set: str
    alpha: float = 1.0
    seed: int = 0
    style_size: int = 512
    content_size: int = 0
    quality: int = 75
    weights: str = ""


@dataclass(frozen=True)
class StylizeDataset:
    """The content images of a dataset and the files copied beside them.

    Attributes
    ----------
    root : Path
    layout : str
        ``coco``, ``voc``, ``cityscapes`` or an image-folder layout (``flat``, ``class-folders``, ``nested``).
    images : tuple of PurePosixPath
        Content images, relative to ``root``.
    copies : tuple of PurePosixPath
        Files copied unchanged (annotations, split lists, label maps), relative to ``root``.
    coco : tuple of CocoAnnotations
    missing : tuple of PurePosixPath
        Images a COCO file lists that do not exist.
    """

    root: Path
    layout: str
    images: tuple[PurePosixPath, ...]
    copies: tuple[PurePosixPath, ...] = ()
    coco: tuple[CocoAnnotations, ...] = ()
    missing: tuple[PurePosixPath, ...] = ()

    def path_of(self, relative: PurePosixPath | str) -> Path:
        return self.root.joinpath(*PurePosixPath(relative).parts)


def _files_under(root: Path, folder: Path, exclude: frozenset[str] = frozenset()) -> list[PurePosixPath]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        skipped = skipped_subfolders(dirpath, dirnames, filenames, exclude)  # outputs (this run's too), stores
        dirnames[:] = [d for d in dirnames if d not in skipped]
        for name in filenames:
            if not name.startswith("."):
                out.append(PurePosixPath(Path(dirpath, name).relative_to(root).as_posix()))
    return sorted(out)


def _find_dirs(root: Path, name: str, depth: int = 2, exclude: frozenset[str] = frozenset()) -> list[Path]:
    found, frontier = [], [root]
    for _ in range(depth + 1):
        nxt = []
        for d in frontier:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
            subfolders = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
            skipped = skipped_subfolders(d, subfolders, [e.name for e in entries if e.is_file()], exclude)
            for entry in entries:
                if entry.name in subfolders and entry.name not in skipped:
                    (found if entry.name == name else nxt).append(Path(entry.path))
        frontier = nxt
    return found


def discover_stylize_dataset(src: str | os.PathLike, coco_annotations: list[str | os.PathLike] | None = None,
                             *, exclude: Iterable[str | os.PathLike] = ()) -> StylizeDataset:
    """Find the content images of ``src`` and the files to copy beside them (module docstring).

    robustlab's output trees inside ``src`` (a stylized copy among them: ``robustlab-stylize.json``
    marks it) and the folders in ``exclude`` (the running command's output folder) are left out.

    Raises
    ------
    DataError
        ``src`` missing, not a folder or without images.
    """
    root = Path(src)
    if not root.is_dir():
        raise not_a_folder(root, "dataset folder")
    excluded = real_paths(exclude)
    if coco_annotations or list(root.glob("annotations/instances_*.json")):
        found = discover_dataset(root, coco_annotations, exclude=exclude)
        if found.layout == "coco":
            copies = []
            for ann in found.coco:
                try:
                    copies.append(PurePosixPath(ann.path.resolve().relative_to(root.resolve()).as_posix()))
                except ValueError:
                    raise InputError(f"COCO annotation file {ann.path} lies outside {root}; put it under "
                                     f"{root}/annotations/ so that the stylized copy keeps the layout.") from None
            return StylizeDataset(root, "coco", found.images, tuple(copies), found.coco, found.missing)
    voc = _find_dirs(root, "JPEGImages", exclude=excluded)
    if voc:
        images, copies = [], []
        for jpeg_dir in voc:
            images += [p for p in _files_under(root, jpeg_dir, excluded) if p.suffix.lower() in (".jpg", ".jpeg", ".png")]
            for sibling in sorted(p for p in jpeg_dir.parent.iterdir() if p.is_dir() and p != jpeg_dir):
                if os.path.realpath(sibling) not in excluded and not is_robustlab_output(sibling):
                    copies += _files_under(root, sibling, excluded)
        return StylizeDataset(root, "voc", tuple(sorted(images)), tuple(copies))
    city = _find_dirs(root, "leftImg8bit", depth=1, exclude=excluded)
    if city:
        images, copies = [], []
        for left in city:
            images += [p for p in _files_under(root, left, excluded) if p.suffix.lower() == ".png"]
            for name in ANNOTATION_FOLDERS["cityscapes"]:
                if (left.parent / name).is_dir():
                    copies += _files_under(root, left.parent / name, excluded)
        return StylizeDataset(root, "cityscapes", tuple(sorted(images)), tuple(copies))
    found = discover_dataset(root, autodetect_coco=False, exclude=exclude)
    return StylizeDataset(root, found.layout, found.images)


# --- settings and styles ---------------------------------------------------------------------------------------


def find_styles(styles: str | os.PathLike) -> tuple[Path, tuple[PurePosixPath, ...]]:
    """The style folder and its image files (sorted, relative; searched recursively)."""
    folder = Path(styles)
    if not folder.is_dir():
        raise DataError(f"style folder {folder} does not exist; give a folder of style images (the papers used "
                        "Painter by Numbers' train.zip).")
    files = tuple(find_images(folder))
    if not files:
        raise DataError(f"no style images in {folder} (looked for .jpg/.png/... files recursively).")
    return folder, files


def style_set_fingerprint(folder: Path, files: Iterable[PurePosixPath]) -> str:
    """A short hash of the style files' names and sizes (changes when the style set changes)."""
    h = hashlib.blake2b(digest_size=8)
    for rel in files:
        h.update(f"{rel.as_posix()}\x1f{folder.joinpath(*rel.parts).stat().st_size}\x1e".encode())
    return h.hexdigest()


def make_settings(styles: str | os.PathLike, weights: AdainWeights, *, alpha: float = 1.0, seed: int = 0,
                  style_size: int = 512, content_size: int = 0, quality: int = 75) -> StylizeSettings:
    """Validate a user's choices into :class:`StylizeSettings`."""
    if not 0.0 <= float(alpha) <= 1.0:
        raise InputError(f"alpha must be in [0, 1] (1: full stylization, as the papers); got {alpha}.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise InputError(f"seed {seed!r} is out of range: give an integer in [0, 2**32).")
    for name, value in (("style size", style_size), ("content size", content_size)):
        if int(value) != 0 and int(value) < MIN_SIDE:
            raise InputError(f"{name} {value} is too small: give 0 (keep) or at least {MIN_SIDE} pixels.")
    if not 1 <= int(quality) <= 100:
        raise InputError(f"JPEG quality {quality} is out of range: use 1..100.")
    folder, files = find_styles(styles)
    return StylizeSettings(str(folder.resolve()), style_set_fingerprint(folder, files), float(alpha), int(seed),
                           int(style_size), int(content_size), int(quality), weights.identity())


def output_relative(relative: PurePosixPath) -> PurePosixPath:
    """Output name: the source's, except formats other than JPEG/PNG, written as PNG."""
    return relative if relative.suffix.lower() in (".jpg", ".jpeg", ".png") else relative.with_suffix(".png")


def output_format(relative: PurePosixPath) -> str:
    return "jpeg" if relative.suffix.lower() in (".jpg", ".jpeg") else "png"


def style_draws(seed: int, relative: str, n_styles: int, count: int = MAX_STYLE_DRAWS) -> list[int]:
    """The style indices image ``relative`` tries, in order (the first readable one is used)."""
    rs = np.random.RandomState(derive_seed(seed, relative, "style"))
    return [int(rs.randint(n_styles)) for _ in range(count)]


# --- the work ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    source: str
    destination: str
    relative: str
    style_folder: str
    styles: tuple[str, ...]
    weights: AdainWeights
    settings: StylizeSettings
    device: str = "cpu"


@dataclass(frozen=True)
class StyledResult(TaskResult):
    """A builder task's result with the style an image was given."""

    style: str | None = None


@functools.lru_cache(maxsize=2)
def _model(weights: AdainWeights, device: str):
    import multiprocessing

    import torch

    from .adain import AdaIN

    if multiprocessing.parent_process() is not None:
        torch.set_num_threads(1)  # a pool worker: the pool already uses every core
    return AdaIN.from_weights(weights).to(device)


@functools.lru_cache(maxsize=STYLE_CACHE)
def _style_statistics(path: str, style_size: int, weights: AdainWeights, device: str):
    """(mean, std) at relu4_1 of one style image; raises RobustlabError when it cannot be used."""
    from .adain import to_tensor

    image = check_image(read_image(path), name=f"style image {path}", min_size=MIN_SIDE)
    return _model(weights, device).style_statistics(to_tensor(resize_shorter_side(image, style_size), device))


def run_task(task: Task) -> list[StyledResult]:
    """Stylize one content image; also report the style images that could not be used."""
    from .adain import to_tensor, to_uint8

    s = task.settings
    results: list[StyledResult] = []
    try:
        content = check_image(read_image(task.source), name=f"image {task.source}", min_size=MIN_SIDE)
    except RobustlabError as exc:
        return [StyledResult(task.relative, 0, 1, "unreadable", str(exc))]
    stats, chosen = None, None
    for index in style_draws(s.seed, task.relative, len(task.styles)):
        path = os.path.join(task.style_folder, task.styles[index])
        try:
            stats = _style_statistics(path, s.style_size, task.weights, task.device)
            chosen = task.styles[index]
            break
        except RobustlabError as exc:
            results.append(StyledResult(f"style:{task.styles[index]}", 0, 0, "style-unreadable", str(exc)))
    if stats is None:
        return results + [StyledResult(task.relative, 0, 1, "error", f"none of {MAX_STYLE_DRAWS} drawn styles could "
                                     "be read; check the style folder")]
    image = resize_shorter_side(content, s.content_size)
    out = to_uint8(_model(task.weights, task.device)(to_tensor(image, task.device), *stats, alpha=s.alpha))
    rel = PurePosixPath(task.relative)
    data = encode_image(out, output_format(rel), quality=s.quality)
    with atomic_path(Path(task.destination).joinpath(*output_relative(rel).parts)) as tmp:
        tmp.write_bytes(data)  # atomic rename, no fsync (as robustlab corrupt)
    return results + [StyledResult(task.relative, 1, style=chosen)]


def existing_outputs(dst: Path, images: Iterable[PurePosixPath]) -> set[PurePosixPath]:
    """Content images whose output already exists (stale temporary files are removed)."""
    done = set()
    for rel in images:
        target = dst.joinpath(*output_relative(rel).parts)
        if target.is_file():
            done.add(rel)
    for dirpath, _dirs, files in os.walk(dst):
        for name in files:
            if is_temporary_name(name):
                Path(dirpath, name).unlink(missing_ok=True)
    return done


class StylizeSummary(BuildSummary):
    """What a ``robustlab stylize`` run did. ``written + skipped + failed == outputs``."""

    tool = "robustlab stylize"


def copy_files(dataset: StylizeDataset, dst: Path) -> int:
    """Copy the annotation files (atomically; a file of the same size already there is kept)."""
    copied = 0
    for rel in dataset.copies:
        src, target = dataset.path_of(rel), dst.joinpath(*rel.parts)
        if target.is_file() and target.stat().st_size == src.stat().st_size:
            continue
        with atomic_path(target) as tmp:
            shutil.copyfile(src, tmp)
        copied += 1
    return copied


def stylize_dataset(src: str | os.PathLike, styles: str | os.PathLike, dst: str | os.PathLike, *,
                    weights: AdainWeights | None = None, alpha: float = 1.0, seed: int = 0, style_size: int = 512,
                    content_size: int = 0, quality: int = 75, combined: bool = False, workers: int | None = None,
                    device: str | None = "auto", coco_annotations: list[str | os.PathLike] | None = None,
                    progress: Callable[[int], None] | None = None,
                    on_start: Callable[[StylizeSummary, int], None] | None = None) -> StylizeSummary:
    """Write the AdaIN-stylized copy of dataset ``src`` into ``dst`` (see the module docstring).

    Parameters
    ----------
    src : path
        COCO root, VOC(devkit) folder, Cityscapes root or image folder.
    styles : path
        Folder of style images (searched recursively).
    dst : path
        Output root; an existing one is resumed (same settings required).
    weights : AdainWeights, optional
        Default: the released weights via :func:`~robustlab.train.adain.resolve_adain_weights`
        (downloaded on first use, checked against pinned SHA-256 sums).
    alpha : float
        Strength of stylization in [0, 1] (1 as the papers).
    seed : int
        Base seed of the per-image style choice.
    style_size, content_size : int
        Shorter side of styles (512) / contents (0: kept; only for image folders).
    quality : int
        JPEG quality of JPEG outputs.
    combined : bool
        Also write the clean + stylized listing (and COCO annotation files).
    workers : int, optional
        Processes on the CPU (default: all cores); on a GPU the work runs in this process.
    device : ``auto``, ``cpu``, ``cuda``...
    progress, on_start : callbacks as :func:`robustlab.corruptions.dataset.corrupt_dataset`'s

    Returns
    -------
    StylizeSummary
        Also written to ``dst/robustlab-stylize.json``; unreadable content and style images
        are listed in ``failures`` (kinds ``unreadable`` and ``style-unreadable``).
    """
    from ..models.protocol import select_device
    from .adain import resolve_adain_weights

    check_destination(dst, StylizeSummary.tool, SUMMARY_NAME, source=src)
    dataset = discover_stylize_dataset(src, coco_annotations, exclude=[dst])
    if content_size and dataset.layout in ("coco", "voc", "cityscapes"):
        raise InputError(f"content_size would change the image sizes of a {dataset.layout} dataset and invalidate "
                         "its annotations; leave it at 0 (the papers kept the sizes).")
    outputs = [output_relative(rel) for rel in dataset.images]
    if len(set(outputs)) != len(outputs):
        raise InputError("two content images would be written to the same output name (one of them is not JPEG or "
                         "PNG); rename one of them.")
    weights = weights or resolve_adain_weights()
    settings = make_settings(styles, weights, alpha=alpha, seed=seed, style_size=style_size,
                             content_size=content_size, quality=quality)
    style_folder, style_files = find_styles(styles)
    dev = select_device(device)
    workers = 1 if dev.type == "cuda" else worker_count(workers)
    _model(weights, str(dev))  # fail early when the weights do not fit the networks
    dst = ensure_dir(dst)
    with output_lock(dst, StylizeSummary.tool):
        return _stylize_locked(dataset, dst, settings, weights, style_folder, style_files, dev, workers, combined,
                               progress, on_start)


def _stylize_locked(dataset: StylizeDataset, dst: Path, settings: StylizeSettings, weights: AdainWeights,
                    style_folder: Path, style_files: tuple[PurePosixPath, ...], dev: Any, workers: int,
                    combined: bool, progress: Callable[[int], None] | None,
                    on_start: Callable[[StylizeSummary, int], None] | None) -> StylizeSummary:
    check_resume(dst, SUMMARY_NAME, settings, RESUME_KEYS, what="stylized images")

    n_images = len(dataset.images) + len(dataset.missing)
    summary = StylizeSummary(str(dataset.root), str(dst), dataset.layout, settings, n_images, n_images,
                             workers=workers)
    summary.failures = [SourceFailure(rel.as_posix(), "missing", "listed in the COCO annotations but not on disk", 1)
                        for rel in dataset.missing]
    summary.failed = len(dataset.missing)
    started = time.perf_counter()
    write_summary(dst, SUMMARY_NAME, summary)
    copy_files(dataset, dst)
    done = existing_outputs(dst, dataset.images)
    todo = [rel for rel in dataset.images if rel not in done]
    summary.skipped = len(dataset.images) - len(todo)
    if on_start is not None:
        on_start(summary, len(todo))
    styles_rel = tuple(p.as_posix() for p in style_files)
    tasks = (Task(str(dataset.path_of(rel)), str(dst), rel.as_posix(), str(style_folder), styles_rel, weights,
                  settings, str(dev)) for rel in todo)
    seen_styles: set[str] = set()
    assignments = read_assignments(dst)

    def flatten(batches: Iterator[list[StyledResult]]) -> Iterator[StyledResult]:
        for batch in batches:
            for result in batch:
                if result.kind == "style-unreadable":
                    if result.relative in seen_styles:
                        continue
                    seen_styles.add(result.relative)
                if result.style is not None:
                    assignments[result.relative] = result.style
                yield result

    with running(summary, dst, SUMMARY_NAME, started):
        try:
            jobs = run_jobs(run_task, tasks, min(workers, max(1, len(todo))),
                            preload=["torch", "robustlab.train.adain"])
            summary.record_all(flatten(jobs), progress)
        finally:
            atomic_write_text(dst / ASSIGNMENTS_NAME, json.dumps(dict(sorted(assignments.items())), indent=0) + "\n")
        if combined:
            write_combined(dataset, dst)
    return summary


def read_assignments(dst: Path) -> dict[str, str]:
    """``{content image: style image}`` recorded in ``dst`` so far (empty when none)."""
    path = dst / ASSIGNMENTS_NAME
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is unreadable ({exc}); delete it to resume into {dst}.") from exc
    return {str(k): str(v) for k, v in data.items()}


# --- combined (clean + stylized) -------------------------------------------------------------------------------


def id_offset(ids: Iterable[int]) -> int:
    """The power of ten above the largest id: stylized copies get ``id + offset``."""
    largest = max((int(i) for i in ids), default=0)
    return 10 ** len(str(max(1, largest)))


def combined_coco(annotation: Path, image_dir: PurePosixPath, src_root: Path, dst: Path) -> dict:
    """One COCO file with the clean images (absolute ``file_name``) and the stylized copies present in ``dst``."""
    coco = json.loads(annotation.read_text(encoding="utf-8"))
    images = coco.get("images", [])
    anns = coco.get("annotations", [])
    image_offset, ann_offset = id_offset(i["id"] for i in images), id_offset(a["id"] for a in anns)
    clean = [dict(i, file_name=str((src_root.joinpath(*image_dir.parts) / i["file_name"]).resolve())) for i in images]
    present = {i["id"] for i in images
               if dst.joinpath(*image_dir.parts, *output_relative(PurePosixPath(i["file_name"])).parts).is_file()}
    stylized = [dict(i, id=i["id"] + image_offset, file_name=output_relative(PurePosixPath(i["file_name"])).as_posix())
                for i in images if i["id"] in present]
    stylized_anns = [dict(a, id=a["id"] + ann_offset, image_id=a["image_id"] + image_offset)
                     for a in anns if a["image_id"] in present]
    return dict(coco, images=clean + stylized, annotations=anns + stylized_anns)


def write_combined(dataset: StylizeDataset, dst: Path) -> list[Path]:
    """Write ``combined.txt`` (and the COCO combined annotation files); return the files written."""
    clean = [str(dataset.path_of(rel).resolve()) for rel in dataset.images]
    stylized = [output_relative(rel).as_posix() for rel in dataset.images
                if dst.joinpath(*output_relative(rel).parts).is_file()]
    header = (f"# robustlab stylize --combined: {len(clean)} clean images (absolute paths) and {len(stylized)} "
              f"stylized images (relative to this file's folder)")
    written = [atomic_write_text(dst / COMBINED_LISTING, "\n".join([header, *clean, *stylized]) + "\n")]
    for ann, rel in zip(dataset.coco, dataset.copies):
        data = combined_coco(ann.path, ann.image_dir, dataset.root, dst)
        target = dst.joinpath(*rel.parts)
        written.append(atomic_write_bytes(target.with_name(f"{target.stem}_combined.json"),
                                          json.dumps(data).encode("utf-8")))
    return written


# --- presentation ------------------------------------------------------------------------------------------------


def format_summary(summary: StylizeSummary, *, max_failures: int = 20) -> str:
    """A few lines for the terminal: counts, time, and the unreadable images (first ``max_failures``)."""
    return summary.text(f"{summary.images} {summary.layout} images stylized into {summary.destination}",
                        SUMMARY_NAME, max_failures)


def stylize_dataset_with_progress(src: str | os.PathLike, styles: str | os.PathLike, dst: str | os.PathLike,
                                  **options) -> StylizeSummary:
    """:func:`stylize_dataset` with a progress bar (ETA) on stderr."""
    return run_with_progress(stylize_dataset, "stylizing", src=src, styles=styles, dst=dst, **options)
