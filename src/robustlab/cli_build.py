"""The commands that build test sets: ``corrupt``, ``perturb``, ``subtypes`` and the ``video`` group
(sample, finalize). Registered by :mod:`robustlab.cli`; each is a thin call into its package, whose
heavy imports happen inside the command so that ``robustlab --help`` stays fast.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer


def finish_build(run: Callable[[], Any], format_summary: Callable[[Any], str], kept: str) -> None:
    """Run a resumable dataset build and print its summary: Ctrl-C says the finished ``kept``
    outputs stay (exit 130), and an output that failed with an error exits 1."""
    try:
        summary = run()
    except KeyboardInterrupt:
        typer.echo(f"interrupted: finished {kept} are kept; run the same command again to continue.", err=True)
        raise typer.Exit(130) from None
    typer.echo(format_summary(summary))
    if any(f.kind == "error" for f in summary.failures):
        raise typer.Exit(1)


def corrupt_command(
    src: Path = typer.Argument(..., help="Image folder (flat or class subfolders) or COCO dataset root; with --set "
                               "cifar10-c or cifar10-c-bar, the CIFAR-10 root (holding cifar-10-batches-py/)."),
    dst: Path = typer.Argument(..., help="Output root: DST/<corruption>/<severity>/<relative path> (--set "
                               "cifar10-c, cifar10-c-bar: DST/<corruption>.npy and DST/labels.npy)."),
    corruptions: Optional[str] = typer.Option(None, "--corruptions", "-c",
                                              help="Names or subsets, comma-separated (benchmark, all, holdout, "
                                                   "noise, blur, weather, digital, fog, c-bar, ...; default "
                                                   "benchmark, or the --set's own). See `robustlab list`."),
    severities: str = typer.Option("1-5", "--severities", "-s", help="e.g. 1,2,3 or 1-5."),
    seed: int = typer.Option(0, "--seed", help="Base seed; each image gets its own derived seed."),
    profile: str = typer.Option("imagecorruptions", "--profile",
                                help="imagecorruptions (any size), imagenet-c, cifar or tinyimagenet."),
    fmt: str = typer.Option("jpeg", "--format", help="jpeg or png (lossless)."),
    quality: int = typer.Option(85, "--quality", help="JPEG quality (85 as the released ImageNet-C)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="Processes (default: all cores)."),
    coco_annotations: Optional[list[Path]] = typer.Option(
        None, "--coco-annotations", help="COCO instances json, repeatable (default: SRC/annotations/instances_*.json)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    max_pixels: Optional[int] = typer.Option(None, "--max-pixels", help="Skip (and report) source images larger "
                                             "than this many pixels (default 178956970, Pillow's bomb limit)."),
    release: Optional[str] = typer.Option(None, "--set", help="Write a released set's layout: imagenet-c-bar "
                                          "(resize 256, crop 224, its 10 corruptions and severity table, folders "
                                          "named by the severity parameter, e.g. caustic_refraction/2.35/); "
                                          "cifar10-c-bar or cifar10-c (from the CIFAR-10 test set: one uint8 "
                                          "array of 5 x 10,000 images per corruption, severity-major, and "
                                          "labels.npy)."),
    keep_input_size: bool = typer.Option(False, "--keep-input-size", help="With --set imagenet-c-bar: corrupt an "
                                         "image that is already 224x224 as it is. By default every image is "
                                         "resized to 256 and centre-cropped to 224, as the reference scripts do "
                                         "(which zooms a 224x224 image); the choice is recorded in "
                                         "robustlab-corrupt.json."),
) -> None:
    """Write corrupted copies of a dataset in the ImageNet-C layout, or in a released set's own with --set
    (resumable; rerun to continue)."""
    from .corruptions import dataset

    settings = dataset.make_settings(corruptions, severities, seed=seed, profile=profile, format=fmt, quality=quality,
                                     release=release, keep_input_size=keep_input_size)
    if settings.release in dataset.ARRAY_LAYOUTS:
        from .corruptions import cifar_writer
        from .errors import InputError

        if coco_annotations or max_pixels is not None:
            raise InputError(f"--set {settings.release} reads the CIFAR-10 test set: leave out "
                             f"{'--coco-annotations' if coco_annotations else '--max-pixels'} (image folders only).")
        run = cifar_writer.corrupt_cifar_with_progress if progress else cifar_writer.corrupt_cifar
        build = functools.partial(run, src, dst, settings, workers=workers)
    else:
        run = dataset.corrupt_dataset_with_progress if progress else dataset.corrupt_dataset
        build = functools.partial(run, src, dst, settings, workers=workers, coco_annotations=coco_annotations,
                                  max_pixels=max_pixels)
    finish_build(build, dataset.format_summary, "outputs")


def perturb_command(
    src: Path = typer.Argument(..., help="Image folder (flat or class subfolders)."),
    dst: Path = typer.Argument(..., help="Output root: DST/<perturbation>/<class>/<name>.mp4 (ImageNet-P layout)."),
    perturbations: str = typer.Option("test", "--perturbations", "-p",
                                      help="test (10), validation (4), all, or names, comma-separated."),
    setting: str = typer.Option("imagenet", "--setting", help="imagenet (224 px from Resize 256) or cifar (32 px)."),
    difficulty: int = typer.Option(1, "--difficulty", help="Noise level of the noise sequences: 1, 2 or 3."),
    fmt: str = typer.Option("mp4", "--format", help="mp4 (H.264 as released), png (frame folders) or npy."),
    seed: int = typer.Option(0, "--seed", help="Base seed; each sequence gets its own derived seed."),
    preset: str = typer.Option("medium", "--preset", help="x264 preset for mp4 (the release used veryslow)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="Processes (default: all cores)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    max_pixels: Optional[int] = typer.Option(None, "--max-pixels", help="Skip (and report) source images larger "
                                             "than this many pixels (default 178956970, Pillow's bomb limit)."),
) -> None:
    """Write ImageNet-P perturbation sequences of every image (resumable; rerun to continue)."""
    from .perturbations import dataset

    settings = dataset.make_settings(perturbations, setting=setting, difficulty=difficulty, format=fmt, seed=seed,
                                     preset=preset)
    run = dataset.perturb_dataset_with_progress if progress else dataset.perturb_dataset
    finish_build(functools.partial(run, src, dst, settings, workers=workers, max_pixels=max_pixels),
                 dataset.format_summary, "sequences")


def subtypes_command(
    imagenet22k: Path = typer.Argument(..., help="ImageNet-22K copy: <root>/<wnid>/<image> (fall11 layout)."),
    out: Path = typer.Argument(..., help="Output folder: train.txt, seen.txt, unseen.txt, subtypes.json."),
    clean_data: Optional[Path] = typer.Option(None, "--clean-data", help="ImageNet-1K val (<val>/<wnid>/<image>): "
                                              "the seen subtypes' test images, as the reference."),
    train_data: Optional[Path] = typer.Option(None, "--train-data", help="ImageNet-1K train, to train on as the "
                                              "reference (default: the 22K copy's folders of the seen subtypes)."),
    lists: str = typer.Option("reference", "--lists", help="reference (the paper's code's subtype lists: 542 seen, "
                              "5,017 unseen) or wordnet (every WordNet synset below the 25 types)."),
    seen_from: str = typer.Option("val", "--seen-from", help="val (--clean-data, the reference) or holdout (a share "
                                  "of the 22K copy's seen folders, which may be training images)."),
    holdout: float = typer.Option(0.2, "--holdout", help="With --seen-from holdout: the fraction held out."),
    seed: int = typer.Option(0, "--seed", help="Seed of the held-out split (a hash per image path)."),
) -> None:
    """Sort an ImageNet-22K folder (and ImageNet-1K val) into the seen and unseen subtypes of the ImageNet-C
    paper's 25 broad types, as its Appendix G."""
    from .data.subtypes import HOLDOUT_WARNING, split_imagenet22k, write_split

    split = split_imagenet22k(imagenet22k, clean_data=clean_data, train_data=train_data, lists=lists,
                              seen_from=seen_from, holdout=holdout, seed=seed)
    dst = write_split(split, out)
    typer.echo(f"{len(split.seen_wnids)} seen and {len(split.unseen_wnids)} unseen subtypes of 25 broad types, "
               f"{split.lists} lists ({len(split.train)} training, {len(split.seen)} seen test images from "
               f"{split.seen_from}, {len(split.unseen)} unseen; {split.ignored} folders in no list) in {dst}\nnext:\n"
               f"  robustlab finetune -m MODEL --data {dst / 'train.txt'} --classes subtypes25 -o FT\n"
               f"  robustlab evaluate -m finetuned:FT -b subtype-robustness -d {dst} -O imagenet_top1=<top-1 of MODEL>")
    if split.seen_from == "holdout":
        typer.echo(f"note: {HOLDOUT_WARNING}.", err=True)


# --- natural perturbations from video: video sample, video finalize ---------------

video_app = typer.Typer(help="Build pm-k test sets from your videos: sample, review, finalize.",
                        no_args_is_help=True)


@video_app.command("sample")
def video_sample_command(
    videos: Path = typer.Argument(..., help="Folder of videos (searched recursively; any format FFmpeg reads)."),
    out: Path = typer.Argument(..., help="Output folder: frames/, sample.json, review_tasks.jsonl."),
    k: int = typer.Option(10, "--k", help="Frames on each side of the anchor."),
    seed: int = typer.Option(0, "--seed", help="Base seed; each video's anchor uses a seed derived from its path."),
    fmt: str = typer.Option("jpg", "--format", help="jpg or png."),
    quality: int = typer.Option(95, "--quality", help="JPEG quality."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="JSON {video file: class index or \\[indices]}."),
    classes: Optional[Path] = typer.Option(None, "--classes", help="JSON list of class names (index order)."),
) -> None:
    """Pick one anchor per video (seeded) and extract it with its +-k frames for review."""
    from .video import sampling

    summary = sampling.sample_videos_from_files(videos, out, k=k, seed=seed, image_format=fmt,
                                                quality=quality, labels_file=labels, classes_file=classes,
                                                progress=sampling.echo_progress)
    typer.echo(sampling.format_summary(summary))


@video_app.command("finalize")
def video_finalize_command(
    out: Path = typer.Argument(..., help="Folder written by `robustlab video sample`."),
    reviews: list[Path] = typer.Argument(..., help="Review files (JSON Lines) or folders of *.jsonl."),
    require_anchor_review: bool = typer.Option(False, "--require-anchor-review",
                                               help="Drop anchors that have no review of their own."),
) -> None:
    """Apply review decisions (strict majority) and write pmsets.json / labels.json."""
    from .video.finalize import finalize, format_summary

    typer.echo(format_summary(finalize(out, reviews, require_anchor_review=require_anchor_review)))
