"""Resumable HTTP downloads with the standard library (``urllib``), checked before they are kept.

A file is written under a stable hidden name beside its destination (``.<name>.part``), so a
dropped connection or a killed process leaves a partial file the next attempt resumes with an
HTTP ``Range`` request. Mirrors are tried in order. A server that answers with an HTML page
instead of the archive (a login, a quota or a "confirm this large download" page, as Google Drive
serves: RobustBench's users saved such pages as ``.pt`` files) is detected on its first bytes and
refused; nothing of it is kept. A finished file is checked against its published size and
checksum; one that does not match is kept aside as ``<name>.rejected`` and never renamed into
place. Only a verified file is renamed to its final name.

Offline (``ROBUSTLAB_OFFLINE=1``, or no mirror reachable: name resolution fails, the connection is
refused) the download fails at once with an :class:`~robustlab.errors.OfflineError` naming the URLs
to fetch by hand; the caller adds the check command to run after.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import http.client
import os
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import DataError, OfflineError
from ...fsutil import explain_os_error
from .catalog import Checksum

CHUNK = 1 << 20
#: Seconds to wait for a server to connect or send (a stall longer than this is a dropped connection).
TIMEOUT = 30.0
#: Resumes of one URL after dropped connections before the next mirror is tried.
RETRIES = 4
OFFLINE_ENV = "ROBUSTLAB_OFFLINE"
_TRUE = ("1", "true", "yes", "on")
#: errno values of "this machine cannot reach that host at all".
UNREACHABLE = frozenset({errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL})


def offline_requested() -> bool:
    """Whether ``ROBUSTLAB_OFFLINE`` asks robustlab to make no network request."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in _TRUE


class MirrorFailed(Exception):
    """This URL cannot serve the file (an HTTP error, an HTML page): the next mirror is tried."""


class Unreachable(MirrorFailed):
    """The host cannot be reached at all (offline, a wrong name, a refused connection)."""


class Dropped(Exception):
    """The connection broke mid-file: the partial file is kept and the same URL resumed."""


@dataclass(frozen=True)
class Downloaded:
    """A verified download: its ``path``, the ``url`` that served it, its ``size`` in bytes and the
    check made (``"md5 matches the publisher's (source)"``, or what was not checked)."""

    path: Path
    url: str
    size: int
    verified: str


ProgressFn = Callable[[int, int | None], None]


def part_path(dest: Path) -> Path:
    """The stable hidden name a download of ``dest`` is written under until it is verified."""
    return dest.with_name(f".{dest.name}.part")


def rejected_path(dest: Path) -> Path:
    """Where a finished download that failed its checksum is kept aside."""
    return dest.with_name(f"{dest.name}.rejected")


def file_digest(path: Path, algorithm: str) -> str:
    """The hex digest of a file (streamed)."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def looks_like_html(content_type: str, head: bytes) -> bool:
    """Whether a response is an HTML page (by its type or its first bytes), not an archive."""
    if content_type.split(";")[0].strip().lower() in ("text/html", "application/xhtml+xml"):
        return True
    text = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return text.startswith((b"<!doctype html", b"<html", b"<head", b"<!--")) or b"<html" in text[:256]


def is_unreachable(reason: object) -> bool:
    """Whether a connection error means the host cannot be reached (as opposed to a broken transfer)."""
    if isinstance(reason, socket.gaierror):
        return True
    return isinstance(reason, OSError) and reason.errno in UNREACHABLE


def _content_range(header: str | None) -> tuple[int, int | None] | None:
    match = re.match(r"bytes\s+(\d+)-\d+/(\d+|\*)", header or "")
    if not match:
        return None
    return int(match.group(1)), None if match.group(2) == "*" else int(match.group(2))


def _open(url: str, start: int, timeout: float):
    headers = {"User-Agent": "robustlab (data fetch)", "Accept-Encoding": "identity"}
    if start:
        headers["Range"] = f"bytes={start}-"
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and start:
            exc.close()
            return None  # nothing after `start`: the partial file may be complete
        exc.close()
        raise MirrorFailed(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        if is_unreachable(exc.reason):
            raise Unreachable(f"cannot connect ({exc.reason})") from None
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise Dropped(f"no answer within {timeout:.0f} s") from None
        raise MirrorFailed(f"cannot connect ({exc.reason})") from None
    except (TimeoutError, socket.timeout):
        raise Dropped(f"no answer within {timeout:.0f} s") from None
    except (ConnectionError, http.client.HTTPException) as exc:
        raise Dropped(f"connection broke ({exc})") from None


def fetch_once(url: str, part: Path, *, size: int | None, name: str, progress: ProgressFn | None,
               timeout: float = TIMEOUT) -> int:
    """Download ``url`` into ``part``, resuming what it holds; return the bytes it then holds.

    Raises :class:`Dropped` when the connection breaks (``part`` keeps what arrived),
    :class:`MirrorFailed` when this URL cannot serve the file."""
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have >= size:
        if have == size:
            return have
        part.unlink()
        have = 0
    resp = _open(url, have, timeout)
    if resp is None:
        return have
    with resp:
        total: int | None = None
        if resp.status == 206:
            found = _content_range(resp.headers.get("Content-Range"))
            if found is None or found[0] != have:
                part.unlink(missing_ok=True)
                raise Dropped("the server resumed at another byte than asked; starting over")
            total = found[1]
        else:
            have = 0  # a server that ignores Range sends the whole file
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        try:
            head = resp.read(CHUNK)
        except (OSError, http.client.HTTPException) as exc:
            raise Dropped(f"connection broke ({exc})") from None
        if looks_like_html(resp.headers.get("Content-Type", ""), head) and not name.lower().endswith((".html", ".htm")):
            raise MirrorFailed(f"answered with an HTML page instead of {name} (a login, quota or download-confirmation "
                               "page); nothing of it was kept")
        expected = total if total is not None else size
        try:
            with open(part, "ab" if have else "wb") as out:
                block = head
                while block:
                    out.write(block)
                    have += len(block)
                    if progress:
                        progress(have, expected)
                    block = resp.read(CHUNK)
        except (http.client.IncompleteRead, ConnectionError, TimeoutError, socket.timeout) as exc:
            raise Dropped(f"connection broke after {have:,} bytes ({type(exc).__name__})") from None
        except OSError as exc:  # the disk, not the network: a full disk, a permission
            raise DataError(explain_os_error(exc, part, "write the download")) from exc
    if expected is not None and have < expected:
        raise Dropped(f"connection closed after {have:,} of {expected:,} bytes")
    return have


def verify(path: Path, *, size: int | None, checksum: Checksum | None, name: str) -> str:
    """Check a finished download against its published size and checksum; return what was checked.

    Raises
    ------
    DataError
        On a mismatch, after moving the file aside to ``<name>.rejected`` (named in the message).
    """
    actual_size = path.stat().st_size
    problem = None
    if size is not None and actual_size != size:
        problem = f"is {actual_size:,} bytes, but the publisher gives {size:,}"
    elif checksum is not None:
        digest = file_digest(path, checksum.algorithm)
        if digest != checksum.value.lower():
            problem = (f"has {checksum.algorithm} {digest}, but the publisher gives {checksum.value} "
                       f"(from {checksum.source})")
    if problem:
        dest = path.with_name(path.name.removeprefix(".").removesuffix(".part"))
        aside = rejected_path(dest)
        os.replace(path, aside)
        raise DataError(f"the download of {name} {problem}. It is not used: kept aside as {aside} (delete it, or "
                        "compare it with the publisher's copy), and fetch again to download it anew.")
    if checksum is not None:
        return f"{checksum.algorithm} matches the publisher's ({checksum.source})"
    return f"size {actual_size:,} bytes" + (" matches the publisher's" if size is not None else
                                             "; no published checksum to compare with")


def download(urls: Sequence[str], dest: Path, *, size: int | None = None, checksum: Checksum | None = None,
             progress: ProgressFn | None = None, retries: int = RETRIES, timeout: float = TIMEOUT,
             log: Callable[[str], None] | None = None) -> Downloaded:
    """Download ``dest`` from the first of ``urls`` that serves it, resuming after dropped
    connections, then verify it (:func:`verify`) and rename it into place.

    Raises
    ------
    OfflineError
        No URL could be reached at all (or ``ROBUSTLAB_OFFLINE`` is set): the message lists the URLs.
    DataError
        Every mirror failed (each one's reason is named), or the file failed its check.
    """
    name = dest.name
    if offline_requested():
        raise OfflineError(f"{OFFLINE_ENV} is set, so {name} is not downloaded. Fetch it by hand from "
                           f"{' or '.join(urls)}.")
    part = part_path(dest)
    failures: list[tuple[str, str, bool]] = []
    for url in urls:
        attempt = 0
        while True:
            try:
                fetch_once(url, part, size=size, name=name, progress=progress, timeout=timeout)
            except Dropped as exc:
                attempt += 1
                if attempt > retries:
                    failures.append((url, f"the connection dropped {attempt} times (last: {exc})", False))
                    break
                if log:
                    log(f"{name}: {exc}; resuming from byte {part.stat().st_size if part.exists() else 0:,}")
                time.sleep(min(2.0 ** attempt * 0.1, 5.0))
                continue
            except MirrorFailed as exc:
                failures.append((url, str(exc), isinstance(exc, Unreachable)))
                if log:
                    log(f"{name}: {url} {exc}" + ("; trying the next mirror" if url != urls[-1] else ""))
                break
            checked = verify(part, size=size, checksum=checksum, name=name)
            try:
                os.replace(part, dest)
            except OSError as exc:
                raise DataError(explain_os_error(exc, dest, "rename the finished download")) from exc
            return Downloaded(dest, url, dest.stat().st_size, checked)
    if failures and all(unreachable for _, _, unreachable in failures):
        raise OfflineError(f"cannot reach any source of {name} (offline?): "
                           + "; ".join(f"{u}: {why}" for u, why, _ in failures)
                           + f". Fetch it by hand from {' or '.join(urls)}.")
    kept = f" The partial file {part} is kept; fetch again to resume." if part.exists() else ""
    raise DataError(f"no source could serve {name}: " + "; ".join(f"{u}: {why}" for u, why, _ in failures) + "."
                    + kept)


def read_url(url: str, *, timeout: float = TIMEOUT) -> bytes:
    """The body of a small document (a publisher's API record), raising :class:`Unreachable` /
    :class:`MirrorFailed` as :func:`fetch_once` does."""
    with contextlib.closing(_open(url, 0, timeout)) as resp:
        try:
            return resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise MirrorFailed(f"the answer broke off ({exc})") from None
