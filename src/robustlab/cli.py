"""The robustlab command line. Every command is a thin call into the packages.

Run ``robustlab --help`` for the list of commands and ``robustlab COMMAND --help`` for each.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from . import __version__
from .cli_options import EvaluateCommand, hide_flag_types
from .errors import RobustlabError, one_line_message

hide_flag_types()

#: Exit codes of every command (docs/errors.md): success; bad data or input (any robustlab
#: error: a missing folder, an unreadable file, an unknown name, a full disk...); a command
#: line that cannot be parsed (unknown option, missing argument); an unexpected error (a bug);
#: interrupted (Ctrl-C, as shells report SIGINT).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
#: Environment variable that turns on --debug (tracebacks) for every command.
DEBUG_ENV = "ROBUSTLAB_DEBUG"
_cli_state = {"debug": False}

class ProgressMode(str, Enum):
    """``--progress`` of the commands that run the engine (evaluate, demo); see robustlab.engine.progress."""

    auto = "auto"
    bar = "bar"
    log = "log"
    none = "none"


FIT_ON_HELP = ("Effective robustness: the models the trend is fitted on. standard (the imagenet-testbed's standard "
               "models of the reference table, as its use_for_line_fit; without a table, the runs that are not "
               "zero-shot), all (every reference row and run) or a file of model names, one a line.")
PROGRESS_HELP = ("Progress on stderr: bar (on a terminal), log (a plain line every 15 s: units and samples done, "
                 "samples/s, ETA), none, or auto: bar on a terminal, else log. bar without a terminal prints log "
                 "lines, with a note.")

app = typer.Typer(
    name="robustlab",
    help="Measure how vision models hold up when their inputs shift, and build the test sets to measure it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"robustlab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", help=f"Show the full traceback of an error (also: {DEBUG_ENV}=1)."),
) -> None:
    """robustlab: robustness benchmarks for vision models."""
    _cli_state["debug"] = debug or _cli_state["debug"]


# --- corruption engine: corrupt, list -------------------------------------------------------
# Imports inside the commands keep `robustlab --help` fast.


@app.command("corrupt")
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
    try:
        if settings.release in dataset.ARRAY_LAYOUTS:
            from .corruptions import cifar_writer
            from .errors import InputError

            if coco_annotations or max_pixels is not None:
                raise InputError(f"--set {settings.release} reads the CIFAR-10 test set: leave out "
                                 f"{'--coco-annotations' if coco_annotations else '--max-pixels'} (image folders only).")
            run = cifar_writer.corrupt_cifar_with_progress if progress else cifar_writer.corrupt_cifar
            summary = run(src, dst, settings, workers=workers)
        else:
            run = dataset.corrupt_dataset_with_progress if progress else dataset.corrupt_dataset
            summary = run(src, dst, settings, workers=workers, coco_annotations=coco_annotations,
                          max_pixels=max_pixels)
    except KeyboardInterrupt:
        typer.echo("interrupted: finished outputs are kept; run the same command again to continue.", err=True)
        raise typer.Exit(130) from None
    typer.echo(dataset.format_summary(summary))
    if any(f.kind == "error" for f in summary.failures):
        raise typer.Exit(1)


#: What `robustlab list` lists: each kind from its registry.
LIST_KINDS = ("corruptions", "perturbations", "benchmarks", "executors", "models", "attacks", "profiles")


@app.command("list")
def list_command(
    what: str = typer.Argument("corruptions", help="corruptions, perturbations, benchmarks, executors, models "
                               "(model sources), attacks or profiles."),
    subset: str = typer.Option("registered", "--subset", help="Corruption subset: registered (every one), all "
                               "(ImageNet-C's 19), benchmark, holdout, a group, c-bar, imagenet-c-bar or "
                               "cifar10-c-bar."),
) -> None:
    """List what is registered (robustlab's and installed plugins'): corruptions (name, group, set, torch
    backend parity), perturbations, benchmarks (family, task, headline, options), executors (options),
    model sources, attacks, or the corruption parameter profiles."""
    from rich.console import Console
    from rich.table import Column, Table

    from .errors import unknown_name

    if what not in LIST_KINDS:
        raise unknown_name("list", what, LIST_KINDS)
    if what == "profiles":
        from .corruptions import PROFILES

        typer.echo("\n".join(PROFILES))
        return
    table = {"corruptions": _corruption_table, "perturbations": _perturbation_table, "benchmarks": _benchmark_table,
             "executors": _executor_table, "models": _model_source_table, "attacks": _attack_table}[what]
    Console().print(table(Table, Column, subset))


def _corruption_table(Table, Column, subset: str):
    from .corruptions import get_corruption, list_corruptions
    from .corruptions.registry import IMAGENET_C
    from .corruptions.torch.parity import load_parity, parity_status  # no torch import

    parity = load_parity()
    names = list_corruptions(subset)
    # names stay whole up to ImageNet-C's longest; longer ones (C-bar's) fold in a narrow terminal
    table = Table(Column("name", overflow="fold", min_width=min(max(map(len, names)), 17)), "group", "set",
                  "seedable", "torch parity")
    for name in names:
        c = get_corruption(name)
        kind = ("benchmark" if c.benchmark else "held-out") if IMAGENET_C in c.sets else ", ".join(c.sets) or "–"
        table.add_row(name, c.group, kind, "yes" if c.seedable else "no",
                      parity_status(name, parity) if c.has_torch_kernel else "numpy only")
    return table


def _perturbation_table(Table, Column, subset: str):
    from .perturbations.registry import registered

    table = Table(Column("name", no_wrap=True), "kind", "set", "frames (ImageNet / CIFAR)")
    for p in registered():
        table.add_row(p.name, "noise" if p.noise else "temporal", "test" if p.test else "validation",
                      f"{p.frames['imagenet']} / {p.frames['cifar']}")
    return table


def _benchmark_table(Table, Column, subset: str):
    from .engine.benchmark import BENCHMARKS, list_benchmarks
    from .engine.presentation import presentation_class

    table = Table(Column("name", no_wrap=True), "family", "task", "headline", "options")
    for name in list_benchmarks():
        cls = BENCHMARKS.get(name)
        shown = presentation_class(cls)
        table.add_row(name, shown.family_name() or "–", cls.task, ", ".join(h.label for h in shown.headline) or "–",
                      ", ".join(cls.schema().names()) or "–")
    return table


def _executor_table(Table, Column, subset: str):
    from .engine.executor import EXECUTORS

    table = Table(Column("name", no_wrap=True), "options", "what")
    for name in EXECUTORS.names():
        cls = EXECUTORS.get(name)
        table.add_row(name, ", ".join(cls.schema().names()) or "–", (cls.__doc__ or "").strip().split("\n")[0])
    return table


def _model_source_table(Table, Column, subset: str):
    from .models.registry import MODEL_SOURCES, get_source

    table = Table(Column("spec prefix", no_wrap=True), "what")
    for prefix in MODEL_SOURCES.names():
        table.add_row(f"{prefix}:", (get_source(prefix).__doc__ or "").strip().split("\n")[0])
    return table


def _attack_table(Table, Column, subset: str):
    from .attacks import ATTACK_REGISTRY

    table = Table(Column("name", no_wrap=True), "settings", "what")
    for name in ATTACK_REGISTRY.names():
        attack = ATTACK_REGISTRY.get(name)
        table.add_row(name, ", ".join(attack.settings) or "–", (attack.single.__doc__ or "").strip().split("\n")[0])
    return table


demo_app = typer.Typer(help="The main job on the embedded default: every benchmark on bundled data.",
                       invoke_without_command=True)
app.add_typer(demo_app, name="demo")


@demo_app.callback()
def demo_command(
    ctx: typer.Context,
    out: Path = typer.Option(Path("robustlab-demo"), "--out", "-o", help="Folder for the world, the store and report.html."),
    quick: bool = typer.Option(False, "--quick", help="Every benchmark on a few samples (under a minute)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the generated world and of every random choice."),
    progress: ProgressMode = typer.Option(ProgressMode.auto, "--progress", help=PROGRESS_HELP),
    no_progress: bool = typer.Option(False, "--no-progress", hidden=True, help="Same as --progress none."),
) -> None:
    """Build the embedded world, run every benchmark into a SQLite store, print a summary, write report.html."""
    if ctx.invoked_subcommand is not None:
        return
    from .demo.run import print_summary, run_demo

    demo = run_demo(out, quick=quick, seed=seed, progress="none" if no_progress else progress.value, log=typer.echo)
    print_summary(demo)


@demo_app.command("train")
def demo_train_command(
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write the weights \\[default: the package's]."),
    seed: int = typer.Option(0, "--seed", help="Seed of the world and of training."),
) -> None:
    """Retrain the shipped demo models (CNN, noise-augmented CNN, baseline, detector) from the seed, CPU only."""
    from .demo.training import train_demo_models

    train_demo_models(out_dir=out, seed=seed)


@demo_app.command("gallery")
def demo_gallery_command(
    out: Path = typer.Option(Path("robustlab-gallery"), "--out", "-o", help="Folder for the contact sheets and HTML page."),
    quick: bool = typer.Option(False, "--quick", help="One small image: a few seconds."),
) -> None:
    """The 19 corruptions x 5 severities on bundled photographs, as contact sheets with timings."""
    from .demo import corruption_demo

    result = corruption_demo.run_demo(out, quick=quick)
    corruption_demo.print_report(result)


# --- report -----------------------------------------------------------------------


@app.command("report")
def report_command(
    out: Path = typer.Option(Path("robustlab-report.html"), "--out", "-o",
                             help="Output file; the format follows the extension unless --format is given."),
    store: Optional[str] = typer.Option(None, "--store", help="Results folder or postgresql:// URL (default ./.robustlab/)."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="html (default), markdown, csv or json."),
    run: Optional[list[str]] = typer.Option(None, "--run", "-r", help="Only these runs (ids or prefixes; repeatable)."),
    benchmark: Optional[list[str]] = typer.Option(None, "--benchmark", "-b", help="Only runs of these benchmarks."),
    title: str = typer.Option("robustlab report", "--title", help="Report title."),
    reference_points: Optional[Path] = typer.Option(
        None, "--reference-points", help="CSV of published accuracies of other models for the effective-robustness "
        "trends: model,original,shifted[,shift][,standard] or imagenet-testbed's robustness_top1s.csv."),
    fit_on: str = typer.Option("standard", "--fit-on", help=FIT_ON_HELP),
) -> None:
    """Write one self-contained report (HTML with figures, or Markdown/CSV/JSON) of the stored runs."""
    from .report import write_report
    from .store import open_store

    _check_reference_points(reference_points)
    with open_store(store, must_exist=True) as st:
        path = write_report(st, out, fmt=fmt, runs=run, benchmarks=benchmark, title=title,
                            reference_points=reference_points, fit_on=fit_on)
    typer.echo(f"wrote {path}")


# --- adversarial study ----------------------------------------------------------

study_app = typer.Typer(help="Multi-seed studies (train, checkpoint, evaluate, compare).", no_args_is_help=True)
app.add_typer(study_app, name="study")


@study_app.command("adversarial")
def study_adversarial_command(
    config: Path = typer.Option(..., "--config", help="Study TOML (recipe, conditions, seeds, eps grid)."),
    out: Path = typer.Option(Path("robustlab-study"), "--out", "-o", help="Output folder (checkpoints, table, report)."),
) -> None:
    """Train N seeds per condition with matched initial weights, measure R at checkpoints, compare (Welch)."""
    from .studies import load_config, run_study
    from .studies.report import OUTPUT_FILES

    result = run_study(load_config(config), out, log=typer.echo)
    typer.echo(result.markdown())
    typer.echo("wrote " + ", ".join(str(out / name) for name in OUTPUT_FILES))


# --- natural perturbations from video: video sample, video finalize ---------------

video_app = typer.Typer(help="Build pm-k test sets from your videos: sample, review, finalize.",
                        no_args_is_help=True)
app.add_typer(video_app, name="video")


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


# --- human review web app: review serve, review add-user, review export ----------

from .review.cli import review_app  # noqa: E402  (typer sub-app; its commands import lazily)

app.add_typer(review_app, name="review")


# --- perturbation sequences: perturb ---------------------------------------------


@app.command("perturb")
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
    try:
        summary = run(src, dst, settings, workers=workers, max_pixels=max_pixels)
    except KeyboardInterrupt:
        typer.echo("interrupted: finished sequences are kept; run the same command again to continue.", err=True)
        raise typer.Exit(130) from None
    typer.echo(dataset.format_summary(summary))
    if any(f.kind == "error" for f in summary.failures):
        raise typer.Exit(1)


# --- detection robustness: import-mmdet, export-detection ---------------------------


@app.command("import-mmdet")
def import_mmdet_command(
    path: Path = typer.Argument(..., help="mmdetection robustness results pickle (test_robustness.py --out)."),
    corruptions: str = typer.Option("benchmark", "--corruptions", "-c", help="benchmark (15), all, holdout or names."),
    rpc: str = typer.Option("ratio-of-means", "--rpc", help="ratio-of-means (published) or mean-of-ratios."),
    task: str = typer.Option("bbox", "--task", help="bbox or segm (COCO-style files)."),
    store: Optional[str] = typer.Option(None, "--store", help="Also file it as a run in this store."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model name for the stored run."),
) -> None:
    """Print P / mPC / rPC of an mmdetection results pickle (read safely); optionally store it."""
    from .benchmarks.detection import import_mmdet

    table, _, result = import_mmdet(path, corruptions=corruptions, rpc=rpc, task=task, store=store, model=model)
    typer.echo(table)
    if result is not None:
        typer.echo(f"stored as run {result.run_id}")


@app.command("export-detection")
def export_detection_command(
    run: str = typer.Argument(..., help="Run id or unique prefix of a detection run."),
    out: Path = typer.Argument(..., help="Output file: .pkl (mmdetection nesting), .json or .csv."),
    store: Optional[str] = typer.Option(None, "--store", help="Results folder or postgresql:// URL."),
) -> None:
    """Export a detection run's results ({corruption: {severity: metrics}}) for other tools."""
    from .benchmarks.detection import export_results
    from .engine import load_result
    from .store import open_store

    with open_store(store, must_exist=True) as st:
        result = load_result(st, run)
    typer.echo(str(export_results(result, out)))


# --- evaluation engine: evaluate, runs, show ------------------------------------


@app.command("evaluate", cls=EvaluateCommand,
             context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def evaluate_command(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", "-m", help="A model spec: torchvision:NAME[:WEIGHTS|:none], "
                              "timm:NAME[:none], open_clip:ARCH:TAG|FILE (zero-shot), hf:ORG/NAME[@REV]|FOLDER, "
                              "onnx:PATH, python:MODULE_OR_FILE.py:CALLABLE, finetuned:FOLDER (robustlab finetune's "
                              "output), results:FILE (detections computed elsewhere), demo:NAME (the bundled demo "
                              "models); `robustlab list models` lists every source."),
    benchmark: str = typer.Option(..., "--benchmark", "-b", help="A registered benchmark (imagenet-c, corrupted, "
                                  "imagenet-p, adversarial-auc, coco-c, ...; a wrong name lists them all). With -b "
                                  "NAME, --help lists that benchmark's options."),
    data: Path = typer.Option(..., "--data", "-d", help="Dataset root (its layout depends on the benchmark)."),
    store: Optional[str] = typer.Option(None, "--store", help="Results folder or postgresql:// URL "
                                        "(default ./.robustlab/)."),
    batch_size: int = typer.Option(64, "--batch-size", help="Images per inference batch."),
    device: str = typer.Option("auto", "--device", help="auto (CUDA if present), cpu, cuda, cuda:N."),
    resize: Optional[int] = typer.Option(None, "--resize", help="Override the model's resize (shorter side, px)."),
    crop: Optional[int] = typer.Option(None, "--crop", help="Override the model's centre crop (px)."),
    interpolation: Optional[str] = typer.Option(None, "--interpolation", help="nearest, bilinear or bicubic."),
    mean: Optional[str] = typer.Option(None, "--mean", help="Override normalisation mean, e.g. 0.485,0.456,0.406."),
    std: Optional[str] = typer.Option(None, "--std", help="Override normalisation std."),
    num_classes: Optional[int] = typer.Option(None, "--num-classes", help="Classes the model outputs."),
    wrap: Optional[str] = typer.Option(None, "--wrap", help="Preprocessing wrappers, comma-separated, first applied "
                                       "first: clahe, ten-crop, multi-scale (e.g. clahe,ten-crop)."),
    option: Optional[list[str]] = typer.Option(None, "--option", "-O", help="A benchmark or executor option as "
                                               "KEY=VALUE (repeatable), e.g. -O shard_size=1000 (each also has its "
                                               "own --flag, listed by -b NAME --help)."),
    executor: str = typer.Option("local", "--executor", "-e", help="A registered executor: local (worker processes "
                                 "on this machine) or ray (a Ray cluster). With -e NAME, --help lists its options."),
    tag: Optional[str] = typer.Option(None, "--tag", help="A name added to the run's identity (e.g. to evaluate "
                                      "changed data as a new run)."),
    fingerprint: str = typer.Option("stat", "--fingerprint", help="How stored units are tied to their data: stat "
                                    "(paths, sizes, modification times: fast, but an image replaced by another of "
                                    "the same size and modification time goes unseen, and the stored numbers of "
                                    "the old image are used) or content (file hashes: slower, sees every change)."),
    max_pixels: Optional[int] = typer.Option(None, "--max-pixels", help="Largest image decoded (width x height; "
                                             "default 178956970, Pillow's bomb limit); larger ones are skipped."),
    precision: str = typer.Option("fp32", "--precision", help="fp32, bf16 or fp16: the model runs under autocast "
                                  "with that dtype. Part of the run's identity."),
    channels_last: bool = typer.Option(False, "--channels-last", help="The model's weights in channels-last memory "
                                       "(faster convolutions on recent GPUs). Part of the run's identity."),
    compile_model: bool = typer.Option(False, "--compile", help="Compile the network with torch.compile (the first "
                                       "batches are slower). Part of the run's identity."),
    decode: str = typer.Option("cpu", "--decode", help="cpu (Pillow, in the loading workers) or gpu (nvJPEG on the "
                               "device, batched; released sets' JPEG files; not the same pixels). Part of the run's "
                               "identity."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    progress: ProgressMode = typer.Option(ProgressMode.auto, "--progress", help=PROGRESS_HELP),
    no_progress: bool = typer.Option(False, "--no-progress", hidden=True, help="Same as --progress none."),
) -> None:
    """Evaluate a model on a benchmark; results are stored per unit, so rerunning resumes.

    The benchmark's options (and the executor's) are added by -b NAME (and -e NAME): see
    `robustlab evaluate -b NAME --help`."""
    import json

    from .cli_options import META_KEY, extra_options
    from .engine.options import evaluate_schemas, key_values, merge_options
    from .engine import evaluate
    from .engine.options import preprocessing_from_args

    schemas = [schema for schema, _, _ in evaluate_schemas(benchmark, executor)]
    options = merge_options(extra_options(ctx.args), ctx.meta.get(META_KEY, {}), key_values(option, schemas))
    with _stdout_for_json(as_json) as out:  # under --json, stdout carries the document and nothing else
        try:
            result = evaluate(model, benchmark, data, store=store, batch_size=batch_size, device=device,
                              preprocessing=preprocessing_from_args(resize, crop, interpolation, mean, std),
                              num_classes=num_classes, wrap=wrap, executor=executor, tag=tag,
                              fingerprint=fingerprint, max_pixels=max_pixels, precision=precision,
                              channels_last=channels_last, compile=compile_model, decode=decode,
                              progress="none" if no_progress else progress.value, **options)
        except KeyboardInterrupt:
            typer.echo("interrupted: finished units are stored; run the same command again to resume.", err=True)
            raise typer.Exit(130) from None
        except RobustlabError as exc:
            if as_json:  # the failure as a document too, with what the run reported while it ran
                out.write(json.dumps({"status": "failed", "error": one_line_message(exc),
                                      "events": getattr(exc, "events", [])}, indent=2) + "\n")
            raise
        out.write((json.dumps(result.to_dict(), indent=2) if as_json else result.table()) + "\n")


@app.command("doctor")
def doctor_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    no_self_check: bool = typer.Option(False, "--no-self-check", help="Only compare the stack with the lock and "
                                       "look at the devices (skip the ~10 s self-check)."),
) -> None:
    """Check this installation: the installed stack against the lock the tests and figures were made
    with (names each package that differs), a self-check of about 10 s (golden corruption cells of
    imagecorruptions 1.1.2, an H.264 round trip against recorded bytes, a store round trip), and
    whether CUDA and Ray are available. Exits 1 when a self-check gives other results than recorded."""
    import json

    from .doctor import run_doctor

    report = run_doctor(self_check=not no_self_check)
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.text())
    if report.failed:
        raise typer.Exit(1)


@app.command("runs")
def runs_command(
    store: Optional[str] = typer.Option(None, "--store", help="Results folder or postgresql:// URL."),
    benchmark: Optional[str] = typer.Option(None, "--benchmark", "-b", help="Only runs of this benchmark."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Only runs of this model."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List stored runs (id, status, benchmark, model, units done, dataset)."""
    import json

    from .engine.listing import format_runs, runs_as_dicts, runs_of_model
    from .store import open_store

    with open_store(store, must_exist=True) as st:
        records = runs_of_model(st.list_runs(benchmark=benchmark), model)
    typer.echo(json.dumps(runs_as_dicts(records), indent=2) if as_json else format_runs(records))


@app.command("show")
def show_command(
    run: Optional[str] = typer.Argument(None, help="Run id or unique prefix (see `robustlab runs`), or a study "
                                        "folder (written by `robustlab study`). Leave it out to pick the one run "
                                        "matching --benchmark / --model."),
    store: Optional[str] = typer.Option(None, "--store", help="Results folder or postgresql:// URL."),
    benchmark: Optional[str] = typer.Option(None, "--benchmark", "-b", help="Without RUN: the run of this benchmark."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Without RUN: the run of this model."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    reference_points: Optional[Path] = typer.Option(
        None, "--reference-points", help="Natural shifts, C-bar: a CSV of published accuracies added to the "
        "effective-robustness trend (model,original,shifted[,shift] or imagenet-testbed's robustness_top1s.csv)."),
    fit_on: str = typer.Option("standard", "--fit-on", help=FIT_ON_HELP),
) -> None:
    """Show a run's metrics in its family's layout (CE per corruption; FR/T5D per perturbation and
    difficulty; the pm-k curve; P/mPC/rPC per corruption; accuracy per epsilon and R; effective
    robustness against the stored runs of the same shift), or a study's table. Ratios that are
    undefined (a baseline within its sampling error) print n/a with the reason."""
    import json

    _check_reference_points(reference_points)
    if run is None:
        run = _only_run(store, benchmark, model)
    elif benchmark is not None or model is not None:
        raise typer.BadParameter("give a RUN id or --benchmark / --model, not both.")
    if Path(run).is_dir():
        from .studies import StudyResult

        study = StudyResult.load(run)
        typer.echo(json.dumps(study.to_dict(), indent=2) if as_json else study.markdown())
        return
    from .engine import load_result
    from .store import open_store

    from .report.effective import show_lines

    with open_store(store, must_exist=True) as st:
        result = load_result(st, run)
        trend = [] if as_json or result.status != "complete" else show_lines(st, result, fit_on=fit_on,
                                                                             reference_points=reference_points)
    typer.echo(json.dumps(result.to_dict(), indent=2) if as_json else "\n".join([result.table(), *trend]))
    if result.status != "complete":
        typer.echo(f"run {result.run_id} is {result.status}: {result.units_total} unit(s) stored and no metrics yet. "
                   "Run the same `robustlab evaluate` command again to finish it.", err=True)
        raise typer.Exit(1)


@app.command("subtypes")
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


def _check_reference_points(path: Optional[Path]) -> None:
    """A ``--reference-points`` file is read before anything else: a FIFO, a device, an empty or a
    ``;``-separated file is an error at once (it was a hang, or silently no points)."""
    if path is not None:
        from .metrics.effective_robustness import reference_rows

        reference_rows(path)


def _only_run(store: Optional[str], benchmark: Optional[str], model: Optional[str]) -> str:
    """The id of the one stored run of ``benchmark`` and ``model`` (an InputError naming the
    candidates when there are several, or none)."""
    from .errors import InputError
    from .store import open_store

    if benchmark is None and model is None:
        raise InputError("give a run id (see `robustlab runs`), or --benchmark and/or --model to pick one run.")
    from .engine.listing import runs_of_model

    with open_store(store, must_exist=True) as st:
        records = runs_of_model(st.list_runs(benchmark=benchmark), model)
    wanted = " and ".join(f"{k} {v}" for k, v in (("benchmark", benchmark), ("model", model)) if v)
    if not records:
        raise InputError(f"no stored run of {wanted}: see `robustlab runs` for the runs in this store.")
    if len(records) > 1:
        from .engine.listing import ambiguous_runs_text

        narrow = [flag for flag, given in (("--benchmark", benchmark), ("--model", model)) if given is None]
        hint = f", or narrow it with {' / '.join(narrow)}" if narrow else ""
        raise InputError(f"{len(records)} runs of {wanted}, which differ in their settings: "
                         f"{ambiguous_runs_text(records)}. Give one run id{hint}.")
    return records[0].id


# --- released data sets: data list, data fetch, data check ---------------------------

from .data.releases.cli import data_app  # noqa: E402  (typer sub-app; its commands import lazily)

app.add_typer(data_app, name="data")


# --- the store itself: store check, store relocate ---------------------------------

store_app = typer.Typer(help="Look after a results store: check it against its predictions folder, relocate it.",
                        no_args_is_help=True)
app.add_typer(store_app, name="store")


@store_app.command("check")
def store_check_command(
    store: Optional[str] = typer.Option(None, "--store", help="Results folder or postgresql:// URL."),
    repair: bool = typer.Option(False, "--repair", help="Remove orphan files, mark runs left running by a gone "
                                "process interrupted, clear records of gone processes."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Hash every predictions file and compare it "
                                "with the hash recorded when it was written."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List orphan, missing and changed predictions files and stale runs (exit 1 when something needs attention)."""
    import json

    from .store import open_store
    from .store.check import check_store

    with open_store(store, must_exist=True) as st:
        report = check_store(st, repair=repair, verify=verify)
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format())
    if not report.clean:
        raise typer.Exit(1)


@store_app.command("relocate")
def store_relocate_command(
    folder: Path = typer.Argument(..., help="The predictions folder's new place (moved or copied as a whole)."),
    store: Optional[str] = typer.Option(None, "--store", help="Results folder or postgresql:// URL."),
) -> None:
    """Record a moved predictions folder as the store's one predictions folder."""
    from .store import open_store

    with open_store(store, must_exist=True, predictions_dir=folder, relocate=True) as st:
        typer.echo(f"the store {st.location.describe()} keeps its predictions in {st.predictions_dir}")


# --- interventions: finetune, stylize (logic in robustlab.train) --------------------

from .train.cli import register_train_commands  # noqa: E402  (typer only; the work imports on use)

register_train_commands(app)


@contextlib.contextmanager
def _stdout_for_json(as_json: bool):
    """Yield the stream a command's document goes to. Under ``--json``, when stdout is this
    process's file descriptor 1, everything else written to descriptor 1 meanwhile (by Ray's
    threads and processes, C libraries, stray prints) goes to stderr instead, so stdout carries
    the JSON document alone."""
    try:
        real = as_json and sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):  # a captured stdout (tests, notebooks)
        real = False
    if not real:
        yield sys.stdout
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    out = os.fdopen(os.dup(saved), "w")
    try:
        yield out
    finally:
        out.flush()
        out.close()
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _report(message: str, exc: BaseException | None) -> None:
    if exc is not None and _cli_state["debug"]:
        traceback.print_exception(exc)
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)


def _show_robustlab_warnings_as_lines() -> None:
    """Print robustlab's own warnings (:class:`~robustlab.errors.RobustlabWarning`: a skipped plugin,
    capped workers) as one line ``warning: ...`` on stderr (other warnings keep Python's format)."""
    import warnings

    from .errors import RobustlabWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if isinstance(category, type) and issubclass(category, RobustlabWarning):
            typer.secho(f"warning: {message}", err=True, fg=typer.colors.YELLOW)
        else:
            shown(message, category, filename, lineno, file, line)

    if getattr(shown, "__name__", "") != "show":
        warnings.showwarning = show


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the command and exit with a documented code (docs/errors.md).

    robustlab's own errors (and operating-system errors such as a full disk) become one line
    ``error: ...`` on stderr and exit code 1; an unparseable command line exits 2; Ctrl-C 130;
    anything unexpected 3, with a hint. ``--debug`` (or ``ROBUSTLAB_DEBUG=1``) also prints the
    traceback.
    """
    from . import interrupts

    interrupts.reset()
    interrupts.install()  # a Ctrl-C that a library swallows still ends the run as interrupted
    _show_robustlab_warnings_as_lines()
    _cli_state["debug"] = os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes")
    code = EXIT_OK
    try:
        result = app(args=argv, prog_name="robustlab", standalone_mode=False)
        code = result if isinstance(result, int) else EXIT_OK
    except (KeyboardInterrupt, typer.Abort) as exc:
        _report("interrupted.", exc)
        code = EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - every error becomes one line and its exit code
        code = _exit_code_for(exc)
    sys.exit(code)


def _exit_code_for(exc: Exception) -> int:
    """Report ``exc`` in one line and return the exit code of its kind (see :func:`main`)."""
    from . import interrupts
    from .fsutil import explain_os_error

    if interrupts.requested():  # the error came from a Ctrl-C that a library turned into something else
        _report("interrupted.", exc)
        return EXIT_INTERRUPTED
    if isinstance(exc, typer.TyperException):  # usage errors: unknown option, missing argument...
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            _report(exc.format_message(), exc)
        return exc.exit_code
    if isinstance(exc, RobustlabError):
        _report(one_line_message(exc), exc)
    elif isinstance(exc, UnicodeDecodeError):  # a binary file where a text one (config, JSON, listing) was expected
        _report(f"a file given as text is not text (UTF-8): {exc}. Check the files named on the command line "
                "(a binary file passed where a config, JSON or listing was expected).", exc)
    elif isinstance(exc, OSError):  # a full disk, a permission, a symlink loop met outside robustlab's own checks
        _report(explain_os_error(exc, action="read or write"), exc)
    elif isinstance(exc, MemoryError):
        _report("out of memory: use a smaller --batch-size or fewer --workers, or a machine with more memory.", exc)
    else:  # the last resort: one line, never a bare traceback
        _report(f"unexpected {type(exc).__name__}: {one_line_message(exc)} (robustlab did not expect this; "
                "run again with --debug for the traceback and report it)", exc)
        return EXIT_BUG
    return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    main()
