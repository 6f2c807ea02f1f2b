"""Perturbing a whole image folder: ``robustlab perturb SRC DST``.

Every source image ``<rel>`` (path relative to SRC, e.g. ``n01440764/x.JPEG``) and every
selected perturbation give one sequence::

    DST/<perturbation>/<class>/<name>.mp4     the ImageNet-P layout (png: a frame folder, npy: .npy)
    DST/robustlab-perturb.json                settings and the summary of the last run

Noise perturbations at difficulty 2 or 3 go to ``<perturbation>_<difficulty>`` folders, as
released (``gaussian_noise_2``). The behaviour is that of ``robustlab corrupt``:

- **identical output whatever the worker count and order**: each sequence draws from its own
  generator seeded with ``derive_seed(seed, relative path, perturbation, difficulty)``;
- **resumable**: finished sequences are skipped; each is written under a temporary name and
  renamed when complete (temporaries a killed run left are removed by the next one); a source
  changed since the last run has its sequences made again, removed ones are reported;
- **bad sources are not fatal**: unreadable or too small images, and images over the pixel
  limit (``max_pixels``), are listed at the end and in the summary file;
- **one run per destination**: a run holds a lock on DST (a second one stops, naming the
  holder); DST may lie inside SRC and is never read back as input;
- **mp4 is byte-identical** for the same settings and the same encoder build, whatever the
  worker count, CPU count, affinity, preset or resume point (:mod:`robustlab.data.h264`); the
  summary file records the libx264 and libav* versions and whether this machine's x264 output
  is byte-reproducible (``encoder``). npy and png are lossless and identical everywhere.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..data.builds import (BuildSummary, SourceTask, TaskResult, check_destination, check_resume,
                           check_unique_outputs, output_lock, renew_sources, run_source_task, run_with_progress,
                           running, write_summary)
from ..data.folders import ImageDataset, discover_dataset
from ..data.h264 import X264_PRESETS
from ..data.images import check_image, check_max_pixels, read_image
from ..data.jobs import run_jobs, worker_count
from ..errors import InputError, unknown_name
from ..fsutil import ensure_dir
from ..seeding import derive_seed
from .api import MIN_SIZE, generate
from .io import (MP4_PRESET, check_format, encoder_versions, perturbation_folder, remove_stale_temporaries,
                 sequence_name, sequence_path, write_sequence)
from .registry import SETTINGS, SUBSETS, get_perturbation, list_perturbations

SUMMARY_NAME = "robustlab-perturb.json"
#: Settings that must match to resume into an existing DST (they change the sequences).
RESUME_KEYS = ("seed", "setting", "difficulty", "format", "preset")

ProgressCallback = Callable[[int], None]


def resolve_perturbations(spec: str | Iterable[str] = "test") -> tuple[str, ...]:
    """Perturbation names from subsets and names: ``"test"``, ``"all"``, ``"rotate,scale"``, a list.

    Returned in ImageNet-P order, unique; InputError (with a suggestion) for unknown names.
    """
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s and str(s).strip()]
    chosen: set[str] = set()
    for item in items:
        if item in SUBSETS:
            chosen.update(list_perturbations(item))
        elif item in list_perturbations("all"):
            chosen.add(item)
        else:
            raise unknown_name("perturbation", item, [*list_perturbations("all"), *SUBSETS])
    if not chosen:
        raise InputError("no perturbation selected: give names or a subset (test, validation, all).")
    return tuple(p for p in list_perturbations("all") if p in chosen)


@dataclass(frozen=True)
class PerturbSettings:
    """What to produce; build it with :func:`make_settings` (which validates)."""

    perturbations: tuple[str, ...]
    setting: str = "imagenet"
    difficulty: int = 1
    format: str = "mp4"
    seed: int = 0
    #: x264 preset of mp4 output (the release used veryslow).
    preset: str = MP4_PRESET

    def folder(self, perturbation: str) -> str:
        """The output folder of ``perturbation`` (``gaussian_noise_2`` for noise at difficulty 2)."""
        return perturbation_folder(perturbation, self.difficulty, noise=get_perturbation(perturbation).noise)


def make_settings(perturbations: str | Iterable[str] = "test", *, setting: str = "imagenet", difficulty: int = 1,
                  format: str = "mp4", seed: int = 0, preset: str = MP4_PRESET) -> PerturbSettings:
    """Validate a user's choices into :class:`PerturbSettings` (InputError naming the bad value)."""
    if setting not in SETTINGS:
        raise unknown_name("perturbation setting", setting, SETTINGS)
    if difficulty not in (1, 2, 3) or isinstance(difficulty, bool):
        raise InputError(f"difficulty must be 1, 2 or 3 (noise level of the noise sequences); got {difficulty!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise InputError(f"seed {seed!r} is out of range: give an integer in [0, 2**32).")
    if preset not in X264_PRESETS:
        raise unknown_name("x264 preset", preset, X264_PRESETS)
    return PerturbSettings(resolve_perturbations(perturbations), setting, int(difficulty), check_format(format), seed,
                           preset)


def sequence_seed(seed: int, relative: PurePosixPath | str, perturbation: str, difficulty: int) -> int:
    """The sequence's own seed: ``derive_seed(seed, relative path, perturbation, difficulty)``."""
    return derive_seed(seed, PurePosixPath(relative).as_posix(), perturbation, int(difficulty))


# --- the work: one task = one source image x its pending perturbations ----------------------


@dataclass(frozen=True)
class Task(SourceTask):
    perturbations: tuple[str, ...]
    settings: PerturbSettings


def perturb_image(image, relative: str, perturbation: str, settings: PerturbSettings):
    """The sequence of one image as ``robustlab perturb`` writes it (uint8 (T, H, W, 3))."""
    rng = sequence_seed(settings.seed, relative, perturbation, settings.difficulty)
    return generate(image, perturbation, setting=settings.setting, difficulty=settings.difficulty, rng=rng)


def run_task(task: Task) -> TaskResult:
    """Read one source image, generate each pending perturbation, write the sequences atomically."""
    return run_source_task(task.relative, functools.partial(_read_source, task), task.perturbations,
                           functools.partial(_write_sequence, task), str)


def _read_source(task: Task):
    image = check_image(read_image(task.source, max_pixels=task.max_pixels), name=f"image {task.source}",
                        min_size=MIN_SIZE)
    if task.settings.setting == "cifar" and image.shape[0] != image.shape[1]:
        raise InputError(f"image {task.source} is {image.shape[1]}x{image.shape[0]}; the cifar setting needs "
                         "square images (CIFAR-10 is 32x32).")
    return image


def _write_sequence(task: Task, image, name: str) -> None:
    s = task.settings
    frames = perturb_image(image, task.relative, name, s)
    write_sequence(sequence_path(task.dst, s.folder(name), task.relative, s.format), frames, s.format,
                   noise=get_perturbation(name).noise, preset=s.preset)


def check_output_names(images: Iterable[PurePosixPath], fmt: str) -> None:
    """InputError when two sources would share one output (``x.jpg`` and ``x.png`` -> ``x.mp4``)."""
    check_unique_outputs(images, lambda rel: sequence_name(rel, fmt), "; rename one of them.")


def iter_tasks(dataset: ImageDataset, dst: Path, settings: PerturbSettings, *,
               max_pixels: int | None = None) -> Iterator[Task | int]:
    """Tasks for the sequences not yet in ``dst``; the count of finished ones is yielded as an int."""
    for rel in dataset.images:
        todo = tuple(p for p in settings.perturbations
                     if not sequence_path(dst, settings.folder(p), rel, settings.format).exists())
        if len(todo) < len(settings.perturbations):
            yield len(settings.perturbations) - len(todo)
        if todo:
            yield Task(str(dataset.path_of(rel)), str(dst), rel.as_posix(), todo, settings, max_pixels=max_pixels)


# --- the run ---------------------------------------------------------------------------------


class PerturbSummary(BuildSummary):
    """What a ``robustlab perturb`` run did. ``written + skipped + failed == outputs``."""

    tool = "robustlab perturb"

    def to_json(self) -> dict:
        """The summary file's content; for mp4 output also the encoder's versions (``encoder``)."""
        data = super().to_json()
        if self.settings.format == "mp4":
            data["encoder"] = encoder_versions()
        return data


def remove_sequences_of(dst: Path, relatives: Iterable[str], fmt: str) -> int:
    """Delete the sequences of the sources ``relatives`` in every perturbation folder of ``dst``
    (their source changed: the sequences are stale). Returns how many were removed."""
    relatives = list(relatives)
    if not relatives:
        return 0
    removed = 0
    for folder in (e for e in os.scandir(dst) if e.is_dir() and not e.name.startswith(".")):
        for rel in relatives:
            target = sequence_path(dst, folder.name, rel, fmt)
            if target.is_dir():
                shutil.rmtree(target)
            elif target.is_file():
                target.unlink()
            else:
                continue
            removed += 1
    return removed


def _check_resume(dst: Path, settings: PerturbSettings) -> None:
    check_resume(dst, SUMMARY_NAME, settings, RESUME_KEYS, what="sequences")


def _write_summary(dst: Path, summary: PerturbSummary) -> Path:
    return write_summary(dst, SUMMARY_NAME, summary)


def recorded_setting(root: str | os.PathLike) -> str | None:
    """The ``setting`` (``imagenet`` or ``cifar``) ``robustlab perturb`` recorded in ``root``'s
    summary file, or None when ``root`` has no readable one (e.g. released ImageNet-P)."""
    path = Path(root, SUMMARY_NAME)
    try:
        setting = json.loads(path.read_text(encoding="utf-8"))["settings"]["setting"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return setting if setting in SETTINGS else None


def perturb_dataset(src: str | os.PathLike, dst: str | os.PathLike, settings: PerturbSettings, *,
                    workers: int | None = None, progress: ProgressCallback | None = None,
                    on_start: Callable[[PerturbSummary], None] | None = None,
                    max_pixels: int | None = None) -> PerturbSummary:
    """Write the perturbation sequences of every image under ``src`` into ``dst`` (module docstring).

    Parameters
    ----------
    src : path
        Image folder, flat or with class subfolders.
    dst : path
        Output root, created if needed; an existing one is resumed (same seed, setting,
        difficulty and format required).
    settings : PerturbSettings
        From :func:`make_settings`.
    workers : int, optional
        Processes (default: all cores). The output does not depend on it.
    progress : callable, optional
        Called with the number of sequences done (written, skipped or failed) since the last call.
    on_start : callable, optional
        Called once, after validation and before the work, with the summary (totals known).
    max_pixels : int, optional
        Largest source image read, in pixels; larger ones are skipped as failed sources with
        the reason. Default :data:`robustlab.data.images.DEFAULT_MAX_PIXELS`.

    Returns
    -------
    PerturbSummary
        Also written to ``dst/robustlab-perturb.json``.
    """
    workers = worker_count(workers)
    max_pixels = check_max_pixels(max_pixels)
    check_destination(dst, PerturbSummary.tool, SUMMARY_NAME, source=src)
    dataset = discover_dataset(src, autodetect_coco=False, exclude=[dst])
    check_output_names(dataset.images, settings.format)
    dst = ensure_dir(dst)
    with output_lock(dst, PerturbSummary.tool):
        return _perturb_locked(dataset, dst, settings, workers, progress, on_start, max_pixels)


def _perturb_locked(dataset: ImageDataset, dst: Path, settings: PerturbSettings, workers: int,
                    progress: ProgressCallback | None, on_start: Callable[[PerturbSummary], None] | None,
                    max_pixels: int | None) -> PerturbSummary:
    _check_resume(dst, settings)
    changed, removed = renew_sources(dst, dataset.root, (rel.as_posix() for rel in dataset.images),
                                     lambda stale: remove_sequences_of(dst, stale, settings.format))
    n = len(dataset.images)
    summary = PerturbSummary(str(dataset.root), str(dst), dataset.layout, settings, n,
                             n * len(settings.perturbations), workers=workers)
    summary.sources_changed, summary.sources_removed = changed, removed
    started = time.perf_counter()
    _write_summary(dst, summary)
    for p in settings.perturbations:
        if (dst / settings.folder(p)).is_dir():
            remove_stale_temporaries(dst / settings.folder(p))
    if on_start is not None:
        on_start(summary)

    tasks: list[Task] = []
    for item in iter_tasks(dataset, dst, settings, max_pixels=max_pixels):
        if isinstance(item, int):
            summary.skipped += item
        else:
            tasks.append(item)
    if progress is not None and summary.skipped:
        progress(summary.skipped)
    with running(summary, dst, SUMMARY_NAME, started):
        summary.record_all(run_jobs(run_task, tasks, min(workers, max(1, len(tasks))),
                                    preload=["robustlab.perturbations"]), progress)
    return summary


def format_summary(summary: PerturbSummary, *, max_failures: int = 20) -> str:
    """A few lines for the terminal: counts, time, and the bad sources (first ``max_failures``)."""
    s = summary.settings
    return summary.text(f"{summary.images} images x {len(s.perturbations)} perturbations = {summary.outputs} "
                        f"sequences ({s.setting}, {s.format}) in {summary.destination}", SUMMARY_NAME, max_failures)


def perturb_dataset_with_progress(src: str | os.PathLike, dst: str | os.PathLike, settings: PerturbSettings, *,
                                  workers: int | None = None, console=None,
                                  max_pixels: int | None = None) -> PerturbSummary:
    """:func:`perturb_dataset` with a progress bar (rate and ETA) on ``console`` (stderr)."""
    return run_with_progress(perturb_dataset, "perturbing", console=console, src=src, dst=dst, settings=settings,
                             workers=workers, max_pixels=max_pixels)
