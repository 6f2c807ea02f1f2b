"""``robustlab review``: serve the review app, add users, export answers (thin calls into the package).

Heavy imports (FastAPI, uvicorn, argon2, SQLAlchemy) happen inside the commands, so that
``robustlab --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

review_app = typer.Typer(help="Human review of frame pairs in the browser: serve the app, add users, export.",
                         no_args_is_help=True)


@review_app.command("serve")
def serve_command(
    tasks: Optional[Path] = typer.Argument(None, help="review_tasks.jsonl (or its folder) written by "
                                           "`robustlab video sample`."),
    db: Optional[str] = typer.Option(None, "--db", help="Review database: a .db file, sqlite:///file.db or "
                                     "postgresql://user@host/db \\[default: review.db beside TASKS]."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (default: this machine only)."),
    port: int = typer.Option(8000, "--port", help="TCP port."),
    demo: bool = typer.Option(False, "--demo", help="Serve the embedded demo's video set instead of TASKS "
                              "(built once under --demo-dir; demo accounts are printed)."),
    demo_dir: Path = typer.Option(Path("robustlab-review-demo"), "--demo-dir", help="Folder of the demo set."),
    secure_cookies: bool = typer.Option(False, "--secure-cookies", help="Send cookies over HTTPS only (behind "
                                        "a TLS proxy)."),
    forwarded_allow_ips: Optional[str] = typer.Option(
        None, "--forwarded-allow-ips", help="Trust X-Forwarded-For/-Proto only from these proxies (comma-separated "
        "addresses or networks, e.g. 127.0.0.1) \\[default: trust no proxy header]."),
) -> None:
    """Serve the review app: annotators judge frame pairs in rounds; the admin exports and finalizes."""
    from .server import run_server

    run_server(tasks, db=db, host=host, port=port, demo=demo, demo_dir=demo_dir, secure_cookies=secure_cookies,
               forwarded_allow_ips=forwarded_allow_ips, log=typer.echo)


@review_app.command("add-user")
def add_user_command(
    name: str = typer.Argument(..., help="User name (letters, digits, '.', '_', '-')."),
    role: str = typer.Option(..., "--role", help="annotator or admin."),
    db: str = typer.Option(..., "--db", help="Review database: a .db file, sqlite:///file.db or "
                           "postgresql://user@host/db (the one `serve` uses)."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from the first line "
                                        "of standard input (else: prompt twice)."),
) -> None:
    """Add a user; the password is stored as an argon2 hash, never in plain text."""
    from .server import add_user, read_password

    where = add_user(db, name, role, read_password(password_stdin))
    typer.echo(f"added {role} {name!r} to {where}")


@review_app.command("export")
def export_command(
    out: Path = typer.Argument(..., help="Output file (JSON Lines) for `robustlab video finalize`."),
    db: str = typer.Option(..., "--db", help="Review database (the one `serve` uses)."),
) -> None:
    """Write every answer (both rounds) as the review JSON Lines that `robustlab video finalize` reads."""
    from .server import export_answers

    path, n = export_answers(db, out)
    typer.echo(f"wrote {n} review records to {path}")
