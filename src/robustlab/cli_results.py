"""The commands on stored results: ``runs``, ``show``, ``report``, the detection bridges
``import-mmdet`` and ``export-detection``, and the ``store`` group (check, relocate). Registered by
:mod:`robustlab.cli`; the store and report packages are imported inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

FIT_ON_HELP = ("Effective robustness: the models the trend is fitted on. standard (the imagenet-testbed's standard "
               "models of the reference table, as its use_for_line_fit; without a table, the runs that are not "
               "zero-shot), all (every reference row and run) or a file of model names, one a line.")


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


# --- report -----------------------------------------------------------------------


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


# --- detection robustness: import-mmdet, export-detection ---------------------------


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


# --- the store itself: store check, store relocate ---------------------------------

store_app = typer.Typer(help="Look after a results store: check it against its predictions folder, relocate it.",
                        no_args_is_help=True)


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
