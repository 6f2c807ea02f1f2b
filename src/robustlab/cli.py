"""The robustlab command line. Every command is a thin call into the packages.

Run ``robustlab --help`` for the list of commands and ``robustlab COMMAND --help`` for each.
This module holds the application, its entry point (:func:`main`: exit codes, one-line errors)
and the table of its commands, in the order ``--help`` lists them; the commands themselves live
in ``cli_build`` (building test sets), ``cli_info`` (list, doctor), ``cli_run`` (evaluate, demo,
study), ``cli_results`` (runs, show, report, store) and their packages' own ``cli`` modules.
"""

from __future__ import annotations

import os
import sys
import traceback

import typer

from . import __version__, cli_build, cli_info, cli_results, cli_run
from .cli_options import EvaluateCommand, hide_flag_types
from .data.releases.cli import data_app
from .errors import RobustlabError, one_line_message
from .review.cli import review_app
from .train.cli import register_train_commands

hide_flag_types()

#: Exit codes of every command (docs/errors.md): success; bad data or input (any robustlab
#: error: a missing folder, an unreadable file, an unknown name, a full disk...); a command
#: line that cannot be parsed (unknown option, missing argument); an unexpected error (a bug);
#: interrupted (Ctrl-C, as shells report SIGINT).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
#: Environment variable that turns on --debug (tracebacks) for every command.
DEBUG_ENV = "ROBUSTLAB_DEBUG"
_cli_state = {"debug": False}

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


# --- the commands, in the order `robustlab --help` lists them (commands first, then groups) ---
# Each command imports its package when it runs, so `robustlab --help` stays fast.

app.command("corrupt")(cli_build.corrupt_command)
app.command("list")(cli_info.list_command)
app.command("report")(cli_results.report_command)
app.command("perturb")(cli_build.perturb_command)
app.command("import-mmdet")(cli_results.import_mmdet_command)
app.command("export-detection")(cli_results.export_detection_command)
app.command("evaluate", cls=EvaluateCommand,
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True})(cli_run.evaluate_command)
app.command("doctor")(cli_info.doctor_command)
app.command("runs")(cli_results.runs_command)
app.command("show")(cli_results.show_command)
app.command("subtypes")(cli_build.subtypes_command)
register_train_commands(app)  # finetune, stylize
app.add_typer(cli_run.demo_app, name="demo")
app.add_typer(cli_run.study_app, name="study")
app.add_typer(cli_build.video_app, name="video")
app.add_typer(review_app, name="review")
app.add_typer(data_app, name="data")
app.add_typer(cli_results.store_app, name="store")


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
