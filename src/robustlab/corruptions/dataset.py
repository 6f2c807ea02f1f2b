"""Corrupting a whole dataset: ``robustlab corrupt SRC DST``.

Every source image ``<rel>`` (its path relative to SRC) and every selected (corruption,
severity) give one *work item* and one output file::

    DST/<corruption>/<severity>/<rel>                 the ImageNet-C layout
    DST/<corruption>/<parameter>/<rel>                a released layout named by ``release``
                                                      (``imagenet-c-bar``: ``2.35``, see below)
    DST/<corruption>/<severity>/annotations/...json   COCO: the annotation file, alongside
    DST/robustlab-corrupt.json                        settings and the summary of the last run

Guarantees:

- **Identical output whatever the worker count and order.** Each item draws from its own
  ``RandomState(item_seed(seed, rel, corruption, severity))``
  (:func:`robustlab.corruptions.items.item_seed`).
- **Resumable.** Outputs already present are skipped; every file is written under a
  temporary name and renamed when complete, so a killed run never leaves a truncated file
  (stale temporary files are removed by the next run). Rerunning the same command continues.
  A source image changed since the last run (size or time) has its outputs made again;
  sources removed since are reported (see :mod:`robustlab.data.builds`).
- **Bad sources are not fatal.** Unreadable, corrupt or too-small images, images over the
  pixel limit (``max_pixels``, a decompression-bomb guard), and images a COCO file lists that
  are missing, are collected and reported at the end and in the summary file.
- **One run per destination.** A run holds a lock on DST; a second run into it stops at once
  and names the process holding it. DST may lie inside SRC: it (and any other robustlab output
  tree or store inside SRC) is never read back as input.

``release="imagenet-c-bar"`` writes ImageNet-C-bar as ``make_imagenet_c_bar.py`` does: each image
resized (shorter side 256, bilinear) and centre-cropped to 224 first, the ImageNet-C-bar
corruptions and severity table, severity folders named by the severity parameter (``{:.2f}``).
``cifar10-c`` and ``cifar10-c-bar`` are arrays, not folders: :mod:`robustlab.corruptions.cifar_writer`.

Encoding: JPEG (``quality`` 85 by default, as the released ImageNet-C) or lossless PNG. An
output keeps its source's file name unless the extension contradicts the encoding
(``x.png`` becomes ``x.jpg`` under JPEG output); COCO ``file_name`` entries follow.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from ..data.builds import (BuildSummary, TaskResult, SourceFailure, SourceTask, check_destination, check_resume,
                           check_unique_outputs, output_lock, renew_sources, run_source_task, run_with_progress,
                           running, write_summary)
from ..data.folders import ImageDataset, discover_dataset
from ..data.images import check_image, check_max_pixels, encode_image, read_image
from ..data.jobs import run_jobs, worker_count
from ..errors import InputError
from ..fsutil import atomic_path, atomic_write_bytes, ensure_dir, is_temporary_name
from .api import MIN_SIZE, corrupt_item
from .checks import parse_severities
from .registry import check_profile, resolve_corruptions

#: Name of the settings + summary file written at the root of DST.
SUMMARY_NAME = "robustlab-corrupt.json"
#: Output encodings and the file extensions each keeps unchanged (others are replaced by the first).
FORMAT_EXTENSIONS = {"jpeg": (".jpg", ".jpeg"), "png": (".png",)}
#: Settings that must match to resume into an existing DST (they change the pixels).
RESUME_KEYS = ("seed", "profile", "format", "quality")
#: Released layouts ``release`` can name: their corruption set and the profile of their table.
#: The CIFAR ones are arrays, written by :mod:`robustlab.corruptions.cifar_writer`.
RELEASES = {"imagenet-c-bar": ("imagenet-c-bar", "imagenet-c"), "cifar10-c": ("all", "cifar"),
            "cifar10-c-bar": ("cifar10-c-bar", "cifar")}
#: The released layouts of arrays (``DST/<corruption>.npy``), not image folders.
ARRAY_LAYOUTS = ("cifar10-c", "cifar10-c-bar")
#: How many tasks per worker are kept queued (bounds memory on huge datasets).
QUEUE_PER_WORKER = 4

ProgressCallback = Callable[[int], None]


# --- settings ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorruptSettings:
    """What to produce. Build it with :func:`make_settings` (which validates)."""

    corruptions: tuple[str, ...]
    severities: tuple[int, ...]
    seed: int = 0
    profile: str = "imagecorruptions"
    format: str = "jpeg"
    #: JPEG quality 1..100; None for PNG.
    quality: int | None = 85
    #: A released layout to write (:data:`RELEASES`), or None for the ImageNet-C layout.
    release: str | None = None
    #: With a released layout that resizes and crops (ImageNet-C-bar): pass an image already at
    #: the crop size (224x224) through unchanged, instead of the reference's resize 256 + crop 224.
    keep_input_size: bool = False


def check_format(fmt: str) -> str:
    """``"jpeg"`` or ``"png"`` (``"jpg"`` is accepted for JPEG)."""
    norm = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png"}.get(str(fmt).lower())
    if norm is None:
        raise InputError(f"unknown output format {fmt!r}: use 'jpeg' (lossy, as ImageNet-C) or 'png' (lossless).")
    return norm


def make_settings(corruptions: str | Iterable[str] | None = "benchmark", severities: str | Iterable[int] = "1-5",
                  *, seed: int = 0, profile: str = "imagecorruptions", format: str = "jpeg",
                  quality: int = 85, release: str | None = None, keep_input_size: bool = False) -> CorruptSettings:
    """Validate a user's choices into :class:`CorruptSettings`.

    ``corruptions``: names and subsets (``"noise,fog"``, ``"benchmark"``, ``"all"``; None: the
    release's set, else ``benchmark``); ``severities``: see :func:`parse_severities`; ``format``:
    ``jpeg`` or ``png``; ``release``: a released layout of :data:`RELEASES` (its corruptions must
    be the set's; ``profile`` becomes the set's); ``keep_input_size``: see :class:`ReferenceGeometry`
    (only with a released layout that resizes, ImageNet-C-bar).
    """
    if keep_input_size and (release is None or release in ARRAY_LAYOUTS):
        raise InputError("--keep-input-size applies to --set imagenet-c-bar (which resizes to 256 and crops 224 "
                         "before corrupting); other layouts corrupt every image at its own size: leave it out.")
    if release is not None:
        from ..errors import unknown_name

        if release not in RELEASES:
            raise unknown_name("released layout", release, list(RELEASES))
        set_name, set_profile = RELEASES[release]
        corruptions = set_name if corruptions is None else corruptions
        chosen = resolve_corruptions(corruptions if isinstance(corruptions, str) else list(corruptions))
        foreign = [c for c in chosen if c not in resolve_corruptions(set_name)]
        if foreign:
            raise InputError(f"--set {release} writes only its own corruptions ({', '.join(resolve_corruptions(set_name))}); "
                             f"leave out {', '.join(foreign)}.")
        if profile not in ("imagecorruptions", set_profile):
            raise InputError(f"--set {release} uses its own severity table (profile {set_profile}); leave out "
                             f"--profile {profile}.")
        profile = set_profile
    elif corruptions is None:
        corruptions = "benchmark"
    if release in ARRAY_LAYOUTS:  # raw uint8 arrays: no image encoding
        if format != "jpeg" or quality != 85:
            raise InputError(f"--set {release} writes the kernels' uint8 output as .npy arrays, with no image "
                             "encoding: leave out --format and --quality.")
        fmt, quality = "npy", None
    else:
        fmt = check_format(format)
    if fmt == "jpeg" and not (isinstance(quality, int) and 1 <= quality <= 100):
        raise InputError(f"JPEG quality {quality!r} is out of range: use 1..100 (ImageNet-C used 85).")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise InputError(f"seed {seed!r} is out of range: give an integer in [0, 2**32).")
    return CorruptSettings(tuple(resolve_corruptions(corruptions if isinstance(corruptions, str) else list(corruptions))),
                           parse_severities(severities), seed, check_profile(profile), fmt,
                           quality if fmt == "jpeg" else None, release, bool(keep_input_size))


def severity_dir(corruption: str, severity: int, release: str | None = None) -> str:
    """The folder name of ``severity`` of ``corruption``: ``"3"``, or in a released layout its
    name there (ImageNet-C-bar: the severity parameter, ``"4.90"``)."""
    if release is None:
        return str(severity)
    from .cbar.tables import severity_folder, severity_parameter

    return severity_folder(severity_parameter(corruption, severity, RELEASES[release][1]))


@dataclass(frozen=True)
class ReferenceGeometry:
    """The reference scripts' resize and crop before corrupting, a picklable uint8 HxWx3 -> uint8
    224x224 function: the shorter side to ``resize`` (bilinear, PIL), then the centre ``crop``.

    ``make_imagenet_c.py`` and ``make_imagenet_c_bar.py`` apply ``Resize(256)`` and
    ``CenterCrop(224)`` to *every* image, so an image that is already 224x224 is enlarged to
    256x256 and cropped (a zoom: 95 % of its values change). That is the default here.
    ``keep_input_size`` passes such an image through unchanged instead (as a model's
    preprocessing does with images at its input size): not the reference, so a run records it.
    """

    resize: int = 256
    crop: int = 224
    keep_input_size: bool = False

    def __call__(self, image: np.ndarray) -> np.ndarray:
        if self.keep_input_size and image.shape[:2] == (self.crop, self.crop):
            return image
        resize, crop = self._steps()
        return crop.prepare_image(resize.prepare_image(image))  # resized is never crop x crop: always cropped

    def pil(self, image):
        """The same on a decoded PIL image (readers call it before converting to numpy): the same pixels."""
        if self.keep_input_size and image.size == (self.crop, self.crop):
            return image
        resize, crop = self._steps()
        return crop.prepare_pil(resize.prepare_pil(image))

    def _steps(self):
        from ..models.preprocessing import Preprocessing

        return Preprocessing(resize=self.resize, interpolation="bilinear"), Preprocessing(crop=self.crop)


def release_geometry(release: str | None, keep_input_size: bool = False):
    """The resize-and-crop a released layout applies before corrupting (ImageNet-C-bar: the
    reference's, :class:`ReferenceGeometry`), or None."""
    if release is None or release in ARRAY_LAYOUTS:
        return None
    return ReferenceGeometry(keep_input_size=keep_input_size)


# --- work items and paths ------------------------------------------------------------------


@dataclass(frozen=True)
class WorkItem:
    """One output: source image ``relative`` under ``corruption`` at ``severity``."""

    corruption: str
    severity: int
    relative: PurePosixPath


def output_relative(relative: PurePosixPath | str, fmt: str) -> PurePosixPath:
    """The output name of source ``relative`` under encoding ``fmt`` (extension fixed if needed)."""
    rel = PurePosixPath(relative)
    keep = FORMAT_EXTENSIONS[check_format(fmt)]
    return rel if rel.suffix.lower() in keep else rel.with_suffix(keep[0])


def output_path(dst: str | os.PathLike, item: WorkItem, fmt: str, release: str | None = None) -> Path:
    """``DST/<corruption>/<severity>/<relative path>`` of ``item`` (severity folder: :func:`severity_dir`)."""
    return Path(dst, item.corruption, severity_dir(item.corruption, item.severity, release),
                *output_relative(item.relative, fmt).parts)


def check_output_names(images: Iterable[PurePosixPath], fmt: str) -> None:
    """Raise InputError when two sources would be written to the same output name."""
    check_unique_outputs(images, lambda rel: output_relative(rel, fmt),
                         f" in {fmt} format; rename one of them or choose the other --format.")


def existing_outputs(dst: str | os.PathLike, corruption: str, severity: int, release: str | None = None) -> set[str]:
    """Relative paths (``/``-separated) of finished files in ``DST/<corruption>/<severity>``.

    Temporary files left by a killed run are deleted on the way (they are never complete).
    """
    base = Path(dst, corruption, severity_dir(corruption, severity, release))
    found: set[str] = set()
    for dirpath, _dirs, files in os.walk(base):
        rel_dir = Path(dirpath).relative_to(base).as_posix()
        for name in files:
            if is_temporary_name(name):
                Path(dirpath, name).unlink(missing_ok=True)
            else:
                found.add(name if rel_dir == "." else f"{rel_dir}/{name}")
    return found


def pending_mask(dst: str | os.PathLike, images: Sequence[PurePosixPath], settings: CorruptSettings) -> np.ndarray:
    """Which outputs are still to make: bool array (images, corruptions, severities).

    One folder listing per (corruption, severity); a few bytes per output, so ImageNet-size
    datasets (50,000 images x 19 x 5) plan in memory without trouble.
    """
    index = {output_relative(rel, settings.format).as_posix(): i for i, rel in enumerate(images)}
    mask = np.ones((len(images), len(settings.corruptions), len(settings.severities)), dtype=bool)
    for ci, c in enumerate(settings.corruptions):
        for si, sev in enumerate(settings.severities):
            done = [index[name] for name in existing_outputs(dst, c, sev, settings.release) if name in index]
            mask[done, ci, si] = False
    return mask


# --- the work: one task = one source image x one corruption x its pending severities --------


@dataclass(frozen=True)
class Task(SourceTask):
    corruption: str
    severities: tuple[int, ...]
    settings: CorruptSettings


def run_task(task: Task) -> TaskResult:
    """Read one source image, corrupt it at each severity, write the outputs atomically."""
    return run_source_task(task.relative, functools.partial(_read_source, task), task.severities,
                           functools.partial(_write_severity, task), lambda severity: f"{task.corruption}/{severity}")


def _read_source(task: Task) -> np.ndarray:
    s = task.settings
    image = check_image(read_image(task.source, max_pixels=task.max_pixels), name=f"image {task.source}",
                        min_size=MIN_SIZE)
    geometry = release_geometry(s.release, s.keep_input_size)
    return image if geometry is None else geometry(image)


def _write_severity(task: Task, image: np.ndarray, severity: int) -> None:
    s = task.settings
    item = WorkItem(task.corruption, severity, PurePosixPath(task.relative))
    out = corrupt_item(image, item.corruption, severity, seed=s.seed, item=item.relative.as_posix(), profile=s.profile)
    data = encode_image(out, s.format, quality=s.quality or 85)
    # Atomic rename without fsync (as data.images.write_image): a killed process never leaves a
    # truncated file; an fsync per image would dominate the run time.
    with atomic_path(output_path(task.dst, item, s.format, s.release)) as tmp:
        tmp.write_bytes(data)


def iter_tasks(dataset: ImageDataset, dst: Path, mask: np.ndarray, settings: CorruptSettings, *,
               max_pixels: int | None = None) -> Iterator[Task]:
    """One task per (image, corruption) with pending severities (see :func:`pending_mask`), image-major."""
    for i, rel in enumerate(dataset.images):
        for ci, c in enumerate(settings.corruptions):
            severities = tuple(sev for sev, todo in zip(settings.severities, mask[i, ci]) if todo)
            if severities:
                yield Task(str(dataset.path_of(rel)), str(dst), rel.as_posix(), c, severities, settings,
                           max_pixels=max_pixels)


def run_tasks(tasks: Iterable[Task], workers: int) -> Iterator[TaskResult]:
    """Run ``tasks`` on ``workers`` processes (in this process when 1); yield results as they finish.

    At most ``workers * QUEUE_PER_WORKER`` tasks are queued at a time, so ``tasks`` may be a
    lazy iterator over millions (see :func:`robustlab.data.jobs.run_jobs`).
    """
    from . import kernels  # noqa: F401  (every kernel loaded before the first image, here and in the pool's preload)

    return run_jobs(run_task, tasks, workers, preload=[kernels.__name__], queue_per_worker=QUEUE_PER_WORKER)


# --- the run -------------------------------------------------------------------------------


class CorruptSummary(BuildSummary):
    """What a ``robustlab corrupt`` run did. ``written + skipped + failed == outputs``."""

    tool = "robustlab corrupt"


def remove_outputs_of(dst: Path, relatives: Iterable[str], fmt: str) -> int:
    """Delete every output of the sources ``relatives`` under any ``DST/<corruption>/<severity>``
    (their source changed: the outputs are stale). Returns how many files were removed."""
    relatives = list(relatives)
    if not relatives:
        return 0
    removed = 0
    for corruption in (e for e in os.scandir(dst) if e.is_dir() and not e.name.startswith(".")):
        for severity in (e for e in os.scandir(corruption.path) if e.is_dir() and e.name.replace(".", "", 1).isdigit()):
            for rel in relatives:
                target = Path(severity.path, *output_relative(rel, fmt).parts)
                if target.is_file():
                    target.unlink()
                    removed += 1
    return removed


def _check_resume(dst: Path, settings: CorruptSettings) -> None:
    # a released layout changes the pixels too (geometry, table) and the folder names
    # outputs written before keep_input_size was recorded passed 224x224 images through
    check_resume(dst, SUMMARY_NAME, settings, (*RESUME_KEYS, "release", "keep_input_size"), what="outputs",
                 missing={"keep_input_size": lambda old: old.get("release") is not None})


def _write_summary(dst: Path, summary: CorruptSummary) -> Path:
    return write_summary(dst, SUMMARY_NAME, summary)


def annotation_outputs(dataset: ImageDataset, fmt: str) -> dict[PurePosixPath, bytes]:
    """COCO annotation files to place in every ``<corruption>/<severity>/``: relative path -> bytes.

    The file keeps its path relative to SRC (``annotations/instances_val2017.json``), or just
    its name when it lies outside SRC. ``file_name`` entries are renamed when the output
    encoding changes an image's extension.
    """
    out: dict[PurePosixPath, bytes] = {}
    for ann in dataset.coco:
        try:
            rel = PurePosixPath(ann.path.resolve().relative_to(dataset.root.resolve()).as_posix())
        except ValueError:
            rel = PurePosixPath(ann.path.name)
        data = ann.path.read_bytes()
        if any(output_relative(f, fmt) != PurePosixPath(f) for f in ann.file_names):
            coco = json.loads(data)
            for entry in coco["images"]:
                entry["file_name"] = output_relative(entry["file_name"], fmt).as_posix()
            data = json.dumps(coco).encode("utf-8")
        out[rel] = data
    return out


def _write_annotations(dst: Path, dataset: ImageDataset, settings: CorruptSettings) -> None:
    files = annotation_outputs(dataset, settings.format)
    for c in settings.corruptions:
        for s in settings.severities:
            for rel, data in files.items():
                target = Path(dst, c, severity_dir(c, s, settings.release), *rel.parts)
                if not target.is_file() or target.read_bytes() != data:  # missing, or from changed annotations
                    atomic_write_bytes(target, data)


def corrupt_dataset(src: str | os.PathLike, dst: str | os.PathLike, settings: CorruptSettings, *,
                    workers: int | None = None, coco_annotations: list[str | os.PathLike] | None = None,
                    progress: ProgressCallback | None = None,
                    on_start: Callable[[CorruptSummary, int], None] | None = None,
                    max_pixels: int | None = None) -> CorruptSummary:
    """Write the corrupted copy of dataset ``src`` into ``dst`` (see the module docstring).

    Parameters
    ----------
    src : path
        Image folder (flat or class subfolders) or COCO dataset root (see
        :func:`robustlab.data.folders.discover_dataset`).
    dst : path
        Output root; created if needed. An existing one is resumed (same seed, profile,
        format and quality required).
    settings : CorruptSettings
        From :func:`make_settings`.
    workers : int, optional
        Processes; default every core (:func:`robustlab.data.jobs.default_workers`). The output does not depend on it.
    coco_annotations : list of paths, optional
        COCO annotation files; default ``<src>/annotations/instances_*.json`` when present.
    progress : callable, optional
        Called with the number of outputs done (written or failed) since the last call.
    on_start : callable, optional
        Called once before the work starts with the summary (totals and ``skipped`` known) and
        the number of outputs left to make.
    max_pixels : int, optional
        Largest source image read, in pixels (width x height); larger ones are skipped as
        failed sources with the reason. Default :data:`robustlab.data.images.DEFAULT_MAX_PIXELS`.

    Returns
    -------
    CorruptSummary
        Also written to ``dst/robustlab-corrupt.json``. Bad sources are listed in ``failures``.
    """
    if settings.release in ARRAY_LAYOUTS:
        raise InputError(f"--set {settings.release} is written as arrays: use "
                         "robustlab.corruptions.cifar_writer.corrupt_cifar (the CLI does).")
    workers = worker_count(workers)
    max_pixels = check_max_pixels(max_pixels)
    check_destination(dst, CorruptSummary.tool, SUMMARY_NAME, source=src)
    dataset = discover_dataset(src, coco_annotations, exclude=[dst])
    check_output_names(dataset.images, settings.format)
    dst = ensure_dir(dst)
    with output_lock(dst, CorruptSummary.tool):
        return _corrupt_locked(dataset, dst, settings, workers, progress, on_start, max_pixels)


def _corrupt_locked(dataset: ImageDataset, dst: Path, settings: CorruptSettings, workers: int,
                    progress: ProgressCallback | None, on_start: Callable[[CorruptSummary, int], None] | None,
                    max_pixels: int | None) -> CorruptSummary:
    _check_resume(dst, settings)
    changed, removed = renew_sources(dst, dataset.root, (rel.as_posix() for rel in dataset.images),
                                     lambda stale: remove_outputs_of(dst, stale, settings.format))

    per_image = len(settings.corruptions) * len(settings.severities)
    n_images = len(dataset.images) + len(dataset.missing)
    summary = CorruptSummary(str(dataset.root), str(dst), dataset.layout, settings, n_images,
                             n_images * per_image, workers=workers)
    summary.failures = [SourceFailure(rel.as_posix(), "missing", "listed in the COCO annotations but not on disk",
                                      per_image) for rel in dataset.missing]
    summary.failed = len(dataset.missing) * per_image
    summary.sources_changed, summary.sources_removed = changed, removed
    started = time.perf_counter()
    _write_summary(dst, summary)
    _write_annotations(dst, dataset, settings)

    mask = pending_mask(dst, dataset.images, settings)
    todo = int(mask.sum())
    summary.skipped = len(dataset.images) * per_image - todo
    n_tasks = int(mask.any(axis=2).sum())
    if on_start is not None:
        on_start(summary, todo)

    with running(summary, dst, SUMMARY_NAME, started):
        summary.record_all(run_tasks(iter_tasks(dataset, dst, mask, settings, max_pixels=max_pixels),
                                     min(workers, max(1, n_tasks))), progress)
    return summary


# --- presentation --------------------------------------------------------------------------


def format_summary(summary: CorruptSummary, *, max_failures: int = 20) -> str:
    """A few lines for the terminal: counts, time, and the bad sources (first ``max_failures``)."""
    s = summary.settings
    return summary.text(f"{summary.images} images x {len(s.corruptions)} corruptions x {len(s.severities)} "
                        f"severities = {summary.outputs} outputs in {summary.destination}", SUMMARY_NAME, max_failures)


def corrupt_dataset_with_progress(src: str | os.PathLike, dst: str | os.PathLike, settings: CorruptSettings,
                                  *, workers: int | None = None,
                                  coco_annotations: list[str | os.PathLike] | None = None,
                                  console=None, max_pixels: int | None = None) -> CorruptSummary:
    """:func:`corrupt_dataset` with a progress bar (rate and ETA) on ``console`` (stderr)."""
    return run_with_progress(corrupt_dataset, "corrupting", console=console, src=src, dst=dst, settings=settings,
                             workers=workers, coco_annotations=coco_annotations, max_pixels=max_pixels)
