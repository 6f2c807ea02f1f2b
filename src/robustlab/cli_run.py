"""The commands that run models: ``evaluate`` (a model on a benchmark, into a store), the ``demo``
group (every benchmark on the embedded world) and the ``study`` group (multi-seed training studies).
Registered by :mod:`robustlab.cli`; the engine is imported inside the commands.
"""

from __future__ import annotations

import contextlib
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from .errors import RobustlabError, one_line_message

class ProgressMode(str, Enum):
    """``--progress`` of the commands that run the engine (evaluate, demo); see robustlab.engine.progress."""

    auto = "auto"
    bar = "bar"
    log = "log"
    none = "none"



PROGRESS_HELP = ("Progress on stderr: bar (on a terminal), log (a plain line every 15 s: units and samples done, "
                 "samples/s, ETA), none, or auto: bar on a terminal, else log. bar without a terminal prints log "
                 "lines, with a note.")


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


# --- the demo on the embedded world ------------------------------------------------

demo_app = typer.Typer(help="The main job on the embedded default: every benchmark on bundled data.",
                       invoke_without_command=True)


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


# --- adversarial study ----------------------------------------------------------

study_app = typer.Typer(help="Multi-seed studies (train, checkpoint, evaluate, compare).", no_args_is_help=True)


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
