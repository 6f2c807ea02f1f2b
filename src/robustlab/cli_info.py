"""The commands that say what is installed: ``list`` (what the registries hold, robustlab's and
installed plugins') and ``doctor`` (the stack against the lock, and a self-check). Registered by
:mod:`robustlab.cli`; the registries are imported inside the commands.
"""

from __future__ import annotations

import typer

#: What `robustlab list` lists: each kind from its registry.
LIST_KINDS = ("corruptions", "perturbations", "benchmarks", "executors", "models", "attacks", "profiles")


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
