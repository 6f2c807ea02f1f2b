"""Start-up of the review app and the user commands, as the CLI calls them.

:func:`build_service` checks everything before anything is written: the TASKS file (a bad
line names its number), every frame on disk (missing ones are listed and the server does not
start), then the database (an unreachable one is named without its password). Only then is
the database tied to the task set.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
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


def check_listen_address(host: str, port: int) -> None:
    """Refuse an address the server could not listen on, before anything is written.

    The host must be an IP address or a name that resolves, and the port free to bind there.

    Raises
    ------
    InputError
        Naming the host and port, what is wrong, and what to give instead.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InputError(f"--port {port!r} is not a TCP port: give a number from 1 to 65535 (default 8000).")
    if not isinstance(host, str) or not host.strip() or any(c.isspace() for c in host) or len(host) > 253:
        raise InputError(f"--host {host!r} is not an address: give an IP address of this machine "
                         "(127.0.0.1 by default, 0.0.0.0 for every interface) or a host name.")
    looks_numeric = all(c.isdigit() or c == "." for c in host)
    if looks_numeric:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise InputError(f"--host {host!r} is not a valid IPv4 address (four numbers 0-255, e.g. 127.0.0.1).") \
                from None
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise InputError(f"--host {host!r} is neither an IP address nor a host name that resolves ({exc}): give "
                         "an address of this machine, e.g. 127.0.0.1 (this machine only) or 0.0.0.0.") from None
    family, kind, proto, _, address = found[0]
    try:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            why = "the port is in use by another program: choose another --port or stop that program"
        elif exc.errno == errno.EACCES:
            why = "permission denied (ports below 1024 need administrator rights): choose a --port above 1023"
        elif exc.errno == errno.EADDRNOTAVAIL:
            why = ("that address belongs to no interface of this machine: give one of its own addresses, "
                   "127.0.0.1 or 0.0.0.0")
        else:
            why = exc.strerror or str(exc)
        raise InputError(f"cannot listen on {host}:{port}: {why}.") from None


def check_forwarded_allow_ips(value: str | None) -> str | None:
    """``--forwarded-allow-ips``: comma-separated IP addresses or networks of the proxies whose
    ``X-Forwarded-For`` / ``X-Forwarded-Proto`` headers are trusted, or ``*`` (any: only when
    nothing but the proxy can reach the server). None: trust no proxy header.

    Raises
    ------
    InputError
        For an item that is not an address, a network or ``*``.
    """
    if value is None:
        return None
    items = [v.strip() for v in str(value).split(",") if v.strip()]
    if not items:
        raise InputError("--forwarded-allow-ips is empty: give the proxy's address, e.g. 127.0.0.1, or leave the "
                         "option out to trust no proxy header.")
    for item in items:
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise InputError(f"--forwarded-allow-ips: {item!r} is not an IP address or network (e.g. 127.0.0.1, "
                             "10.0.0.0/8) or '*'.") from None
    return ",".join(items)


def uvicorn_options(host: str, port: int, forwarded_allow_ips: str | None) -> dict:
    """The keyword arguments of ``uvicorn.run``: one worker, and proxy headers trusted only from
    the proxies named by ``--forwarded-allow-ips`` (uvicorn's own default would trust 127.0.0.1)."""
    options = {"host": host, "port": int(port), "log_level": "warning", "workers": 1, "server_header": False}
    if forwarded_allow_ips is None:
        options["proxy_headers"] = False
    else:
        options.update(proxy_headers=True, forwarded_allow_ips=forwarded_allow_ips)
    return options


def run_server(tasks: str | os.PathLike | None, *, db: str | None = None, host: str = "127.0.0.1",
               port: int = 8000, demo: bool = False, demo_dir: str | os.PathLike = "robustlab-review-demo",
               secure_cookies: bool = False, forwarded_allow_ips: str | None = None,
               log: Callable[[str], None] = print) -> None:
    """Check the address, the task set and the database, then serve the review app with uvicorn
    until stopped.

    Raises
    ------
    InputError
        A bad ``host``, ``port`` or ``forwarded_allow_ips`` (checked first: nothing is written),
        or neither/both of TASKS and ``demo``.
    """
    import uvicorn

    from .app import create_app
    from .demo import build_demo_task_set, create_demo_users

    if demo == (tasks is not None):
        raise InputError("give a TASKS file (review_tasks.jsonl from `robustlab video sample`) or --demo, "
                         "not both and not neither.")
    proxies = check_forwarded_allow_ips(forwarded_allow_ips)
    check_listen_address(host, port)
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
    if proxies is not None:
        log(f"trusting X-Forwarded-For/-Proto from {proxies} only.")
    log(f"serving {len(service.task_set)} tasks of {service.task_set.path} (database {where}) at "
        f"http://{host}:{port}/  (Ctrl+C stops)")
    app = create_app(service, secure_cookies=secure_cookies)
    try:
        uvicorn.run(app, **uvicorn_options(host, port, proxies))
    finally:
        service.db.close()


#: The longest line ``--password-stdin`` reads (a password is far shorter).
MAX_PASSWORD_LINE = 4096


def read_password(stdin: bool, stream: TextIO | None = None) -> str:
    """The new user's password: the first line of standard input (``--password-stdin``), or typed
    twice at a hidden prompt."""
    if stdin:  # a bounded read: stdin from /dev/zero or a file without a line end must not run forever
        line = (stream or sys.stdin).readline(MAX_PASSWORD_LINE + 1)
        if len(line) > MAX_PASSWORD_LINE:
            raise InputError(f"the first line of standard input is longer than {MAX_PASSWORD_LINE} characters, so it "
                             "is not a password (is stdin a device or a binary file?); pipe one line: "
                             "echo \"$PASSWORD\" | robustlab review add-user ... --password-stdin.")
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
