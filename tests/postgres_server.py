"""A PostgreSQL server for the tests that need one (store, review), shared through tests/conftest.py.

PostgreSQL, in this order:

1. ``ROBUSTLAB_TEST_POSTGRES_URL`` (e.g. ``postgresql://user@host:5432/db``): that server;
2. Debian's server binaries (``/usr/lib/postgresql/*/bin/initdb`` and ``pg_ctl``): a throwaway
   cluster in a temporary folder on a free port (run as the ``postgres`` user when we are
   root, since initdb refuses root), stopped and removed after the session;
3. else the tests marked ``postgres`` skip, saying why; with ``ROBUSTLAB_TEST_POSTGRES_REQUIRED=1``
   (CI) they fail instead.

Each test gets its own PostgreSQL schema (through the URL's ``search_path`` option), dropped after.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

POSTGRES_URL_ENV = "ROBUSTLAB_TEST_POSTGRES_URL"
POSTGRES_REQUIRED_ENV = "ROBUSTLAB_TEST_POSTGRES_REQUIRED"
SUPERUSER = "robustlab"


class _Unavailable(Exception):
    """No PostgreSQL server could be found or started; the message says why."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_binaries() -> tuple[str, str]:
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    for initdb in reversed(candidates):
        pg_ctl = os.path.join(os.path.dirname(initdb), "pg_ctl")
        if os.access(pg_ctl, os.X_OK):
            return initdb, pg_ctl
    raise _Unavailable(
        f"no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb): install Debian's "
        f"postgresql package (scripts/ci-system-deps.sh) or set {POSTGRES_URL_ENV}"
    )


def _run_as_prefix() -> list[str]:
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise _Unavailable(
            "running as root, and there is no 'postgres' user to run initdb as (initdb refuses root)"
        ) from None
    if not shutil.which("runuser"):
        raise _Unavailable(
            "running as root without runuser(1) to start PostgreSQL as the 'postgres' user"
        )
    return ["runuser", "-u", "postgres", "--"]


class _ThrowawayCluster:
    """A PostgreSQL cluster in a temporary folder, listening on 127.0.0.1 with trust auth."""

    def __init__(self) -> None:
        initdb, self.pg_ctl = _server_binaries()
        self.prefix = _run_as_prefix()
        self.base = Path(tempfile.mkdtemp(prefix="robustlab-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        if self.prefix:
            entry = pwd.getpwnam("postgres")
            os.chown(self.base, entry.pw_uid, entry.pw_gid)
        self._call(
            [
                initdb,
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ]
        )
        for _attempt in range(3):  # the port may be taken between choosing and binding it
            self.port = _free_port()
            options = f"-F -p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c max_connections=60"
            try:
                self._call(
                    [
                        self.pg_ctl,
                        "-D",
                        str(self.data),
                        "-l",
                        str(self.log),
                        "-w",
                        "-t",
                        "30",
                        "-o",
                        options,
                        "start",
                    ]
                )
                break
            except _Unavailable:
                continue
        else:
            log = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
            self.remove()
            raise _Unavailable(f"PostgreSQL did not start; its log ends with:\n{log}")
        self.url = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def _call(self, command: list[str]) -> None:
        result = subprocess.run(
            self.prefix + command, cwd=self.base, capture_output=True, text=True, timeout=60
        )
        if result.returncode != 0:
            raise _Unavailable(
                f"{' '.join(command[:1])} failed: {(result.stderr or result.stdout).strip()[-800:]}"
            )

    def stop(self) -> None:
        subprocess.run(
            self.prefix + [self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"],
            cwd=self.base,
            capture_output=True,
            timeout=60,
        )
        self.remove()

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """URL of a PostgreSQL server to create test schemas in (skips or fails when there is none)."""
    pytest.importorskip("psycopg", reason="the PostgreSQL store needs psycopg 3 (pip install 'robustlab[postgres]')")
    given = os.environ.get(POSTGRES_URL_ENV)
    if given:
        yield given
        return
    try:
        cluster = _ThrowawayCluster()
    except (_Unavailable, OSError, subprocess.SubprocessError) as exc:
        message = f"PostgreSQL tests need a server: {exc}"
        if os.environ.get(POSTGRES_REQUIRED_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A ``postgresql://`` URL whose tables go to a fresh schema of their own, dropped afterwards."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in postgres_server_url else "?"
    yield f"{postgres_server_url}{separator}options={quote(f'-csearch_path={schema}', safe='')}"
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
