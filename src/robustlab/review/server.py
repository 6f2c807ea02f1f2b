"""Start-up of the review app and the user commands, as the CLI calls them.

:func:`build_service` checks everything before anything is written: the TASKS file (a bad
line names its number), every frame on disk (missing ones are listed and the server does not
start), then the database (an unreachable one is named without its password). Only then is
the database tied to the task set.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..errors import InputError
from .database import ROLES, check_user_name, open_review_database
from .security import check_password, hash_password
from .service import ReviewService, open_service
from .tasks import check_frames_present, read_task_set


def build_service(tasks: str | os.PathLike, db: str | os.PathLike | None = None) -> ReviewService:
    """Read and check a task set and its frames, open the database, tie them together.

    Parameters
    ----------
    tasks : path
        ``review_tasks.jsonl`` (or the folder ``robustlab video sample`` wrote).
    db : str or path, optional
        Review database (default: ``review.db`` beside the TASKS file); see
        :func:`robustlab.review.database.review_location`.

    Raises
    ------
    DataError
        Malformed TASKS (with the line number) or missing frames (listed).
    StoreError
        The database cannot be reached, or holds answers to another task set.
    """
    task_set = read_task_set(tasks)
    check_frames_present(task_set)
    database = open_review_database(db, default_folder=task_set.root)
    try:
        return open_service(task_set, database)
    except BaseException:
        database.close()
        raise


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_server(tasks: str | os.PathLike | None, *, db: str | None = None, host: str = "127.0.0.1",
               port: int = 8000, demo: bool = False, demo_dir: str | os.PathLike = "robustlab-review-demo",
               secure_cookies: bool = False, log: Callable[[str], None] = print) -> None:
    """Check the task set and database, then serve the review app with uvicorn until stopped."""
    import uvicorn

    from .app import create_app
    from .demo import build_demo_task_set, create_demo_users

    if demo == (tasks is not None):
        raise InputError("give a TASKS file (review_tasks.jsonl from `robustlab video sample`) or --demo, "
                         "not both and not neither.")
    if demo:
        log(f"building the demo video set under {demo_dir} (once) ...")
        tasks = build_demo_task_set(demo_dir)
    service = build_service(tasks, db)
    where = service.db.describe()
    if demo:
        for name, password in create_demo_users(service.db).items():
            log(f"  demo account {name!r}, password {password}")
    if not service.db.list_users():
        log(f"no users yet: add them with `robustlab review add-user NAME --role admin|annotator --db {where} "
            "--password-stdin`.")
    if not is_loopback(host):
        log(f"warning: serving on {host}, beyond this machine: put it behind an HTTPS proxy and pass "
            "--secure-cookies, or passwords and cookies travel in clear text.")
    log(f"serving {len(service.task_set)} tasks of {service.task_set.path} (database {where}) at "
        f"http://{host}:{port}/  (Ctrl+C stops)")
    app = create_app(service, secure_cookies=secure_cookies)
    try:
        uvicorn.run(app, host=host, port=int(port), log_level="warning", workers=1)
    finally:
        service.db.close()


def read_password(stdin: bool, stream: TextIO | None = None) -> str:
    """The new user's password: the first line of standard input (``--password-stdin``), or typed
    twice at a hidden prompt."""
    if stdin:
        line = (stream or sys.stdin).readline()
        return line.rstrip("\r\n")
    import getpass

    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        raise InputError("the two passwords differ; run the command again.")
    return first


def add_user(db: str | os.PathLike, name: str, role: str, password: str) -> str:
    """Add a user (password stored as an argon2 hash). Everything is checked before the database
    is written: name, role, password, then that the database can be reached.

    Raises
    ------
    InputError
        Bad name, role or password, or the name exists already.
    StoreError
        The database cannot be reached (nothing is written).

    Returns
    -------
    str
        The database, as messages name it.
    """
    check_user_name(name)
    if role not in ROLES:
        raise InputError(f"role {role!r} is unknown; use {' or '.join(ROLES)}.")
    check_password(password)
    with open_review_database(db) as database:
        database.add_user(name, role, hash_password(password))
        return database.describe()


def export_answers(db: str | os.PathLike, out: str | os.PathLike) -> tuple[Path, int]:
    """Write every answer of a review database as review JSON Lines; returns (path, records)."""
    from ..video.review import write_reviews

    with open_review_database(db) as database:
        records = database.records()
    return write_reviews(out, records), len(records)
