"""The ``robustlab finetune`` and ``robustlab stylize`` commands (registered by :mod:`robustlab.cli`).

Thin calls into :func:`robustlab.train.finetuning.finetune` and
:func:`robustlab.train.stylize.stylize_dataset`; heavy imports happen inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def finetune_command(
    model: str = typer.Option(..., "--model", "-m", help="Classifier spec: torchvision:NAME, timm:NAME, "
                              "python:FILE.py:FACTORY, demo:NAME or finetuned:FOLDER."),
    data: Path = typer.Option(..., "--data", "-d", help="Image folder (<class>/<image>), pm-k/video frame set "
                              "(pmsets.json + labels.json) or a listing .txt."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (checkpoint, then model.pt + finetuned.json)."),
    epochs: Optional[int] = typer.Option(None, "--epochs", help="Passes over the data (recipe: 1)."),
    classes: Optional[str] = typer.Option(None, "--classes", help="Class subset: vid30, subtypes25, or WordNet "
                                          "wnids/names (comma-separated); the head is resized to it."),
    recipe: Optional[str] = typer.Option(None, "--recipe", help="default, or appendix-g (the ImageNet-C paper's "
                                         "subtype experiment; the recipe of --classes subtypes25). Options given "
                                         "here override it."),
    augment: Optional[str] = typer.Option(None, "--augment", help="paper-noise (one of 6 ImageNet-C noises per "
                                          "image), a corruption subset or names; default none."),
    severities: str = typer.Option("1-5", "--severities", help="Augmentation severities, e.g. 1-5 or 3."),
    augment_backend: str = typer.Option("auto", "--augment-backend", help="numpy (in the loading workers) or torch "
                                        "(batched on the training device); auto: torch on a GPU."),
    seed: int = typer.Option(0, "--seed", help="Seed of the data order, crops, augmentation and new head."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Images per step (recipe: 32; appendix-g 128)."),
    lr: Optional[float] = typer.Option(None, "--lr", help="Learning rate (SGD; recipe: 0.01)."),
    momentum: Optional[float] = typer.Option(None, "--momentum", help="SGD momentum (recipe: 0.9)."),
    nesterov: Optional[bool] = typer.Option(None, "--nesterov/--no-nesterov", help="Nesterov momentum (appendix-g)."),
    weight_decay: Optional[float] = typer.Option(None, "--weight-decay", help="Recipe: 1e-4; appendix-g 5e-4."),
    schedule: Optional[str] = typer.Option(None, "--schedule", help="cosine, step (/10 at half), constant, or "
                                           "cosine-images (appendix-g: over the images seen, as its reference)."),
    train: Optional[str] = typer.Option(None, "--train", help="all, or head (the rest frozen; appendix-g)."),
    head_init: Optional[str] = typer.Option(None, "--head-init", help="A resized head starts as imagenet-rows (the "
                                            "mean of the ImageNet rows below each class) or fresh (a new nn.Linear; "
                                            "appendix-g)."),
    frozen_mode: Optional[str] = typer.Option(None, "--frozen-mode", help="With --train head: the frozen layers in "
                                              "eval mode, or train (appendix-g, as its reference's net.train())."),
    crop: Optional[str] = typer.Option(None, "--crop", help="random (resized crop + flip), center, or resize-random "
                                       "(resize + random crop + flip; appendix-g)."),
    wrap: Optional[str] = typer.Option(None, "--wrap", help="clahe: train (and evaluate) through CLAHE."),
    class_map: str = typer.Option("auto", "--class-map", help="Image folders: auto, imagenet, sorted or a JSON file."),
    init: Optional[Path] = typer.Option(None, "--init", help="A state_dict to start from (same architecture)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="DataLoader processes (default CPUs - 1)."),
    device: str = typer.Option("auto", "--device", help="auto (CUDA if present), cpu, cuda, cuda:N."),
    checkpoint_every: Optional[int] = typer.Option(None, "--checkpoint-every", help="Also checkpoint every N steps."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
) -> None:
    """Fine-tune a classifier; print the finetuned: spec that `robustlab evaluate --model` takes (rerun to resume)."""
    from .finetuning import FinetuneConfig, finetune

    config = FinetuneConfig(epochs=epochs, augment=augment, classes=classes, seed=seed, batch_size=batch_size, lr=lr,
                            momentum=momentum, weight_decay=weight_decay, schedule=schedule, train=train, crop=crop,
                            severities=severities, wrap=wrap, class_map=class_map, init=init,
                            augment_backend=augment_backend, nesterov=nesterov, head_init=head_init,
                            frozen_mode=frozen_mode, recipe=recipe)
    try:
        spec = finetune(model, data, out=out, config=config, workers=workers, device=device,
                        checkpoint_every=checkpoint_every, progress=None if progress else False,
                        log=lambda line: typer.echo(line, err=True))
    except KeyboardInterrupt:
        typer.echo("interrupted: the last checkpoint is kept; run the same command again to resume.", err=True)
        raise typer.Exit(130) from None
    typer.echo(spec)


def parse_checksums(pins: list[str] | None) -> dict[str, str]:
    """``["vgg_normalised.pth=HEX", ...]`` -> ``{name: hex}``."""
    from ..errors import InputError

    out = {}
    for pin in pins or []:
        name, sep, digest = pin.partition("=")
        if not sep or not name or not digest:
            raise InputError(f"--weights-sha256 {pin!r}: write NAME=SHA256, e.g. decoder.pth=<64 hex digits>.")
        out[name.strip()] = digest.strip()
    return out


def stylize_command(
    data: Path = typer.Argument(..., help="COCO root, VOC(devkit) folder, Cityscapes root or image folder."),
    styles: Path = typer.Option(..., "--styles", help="Folder of style images (e.g. Painter by Numbers train/)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output root (same layout and annotations as DATA)."),
    alpha: float = typer.Option(1.0, "--alpha", help="Stylization strength in [0, 1] (1 as the papers)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the per-image style choice."),
    combined: bool = typer.Option(False, "--combined", help="Also write combined.txt (clean + stylized) and COCO "
                                  "*_combined.json annotation files."),
    style_size: int = typer.Option(512, "--style-size", help="Shorter side of the style images (0: keep)."),
    content_size: int = typer.Option(0, "--content-size", help="Shorter side of content images (0: keep; image "
                                     "folders only)."),
    quality: int = typer.Option(75, "--quality", help="JPEG quality of JPEG outputs."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="Processes on the CPU (default: all cores)."),
    device: str = typer.Option("auto", "--device", help="auto (CUDA if present), cpu, cuda."),
    weights_dir: Optional[Path] = typer.Option(None, "--weights-dir", help="Folder of vgg_normalised.pth and "
                                               "decoder.pth (default: the torch hub cache, adain/)."),
    weights_sha256: Optional[list[str]] = typer.Option(None, "--weights-sha256", help="Pin a weight file's checksum: "
                                                       "NAME=SHA256 (repeatable)."),
    coco_annotations: Optional[list[Path]] = typer.Option(None, "--coco-annotations",
                                                          help="COCO instances json (repeatable)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
) -> None:
    """AdaIN-stylized copy of a dataset: one seeded painting per image, layout and annotations kept (rerun to resume)."""
    from .adain import resolve_adain_weights
    from .stylize import format_summary, stylize_dataset, stylize_dataset_with_progress

    weights = resolve_adain_weights(weights_dir, sha256=parse_checksums(weights_sha256))
    run = stylize_dataset_with_progress if progress else stylize_dataset
    try:
        summary = run(data, styles, out, weights=weights, alpha=alpha, seed=seed, style_size=style_size,
                      content_size=content_size, quality=quality, combined=combined, workers=workers, device=device,
                      coco_annotations=coco_annotations)
    except KeyboardInterrupt:
        typer.echo("interrupted: finished images are kept; run the same command again to continue.", err=True)
        raise typer.Exit(130) from None
    typer.echo(format_summary(summary))
    if any(f.kind in ("unreadable", "error", "missing") for f in summary.failures):
        raise typer.Exit(1)


def register_train_commands(app: typer.Typer) -> None:
    """Add ``finetune`` and ``stylize`` to the robustlab CLI."""
    app.command("finetune")(finetune_command)
    app.command("stylize")(stylize_command)
