"""Sizes and checksums read from the publisher's own record, when fetching.

Zenodo publishes an md5 and the size of every file of a record (``GET /api/records/<id>``: its
``files``, each with ``key``, ``size``, ``checksum`` ``"md5:<hex>"`` and ``links.self``); the
Hugging Face Hub stores a sha256 and the size of every LFS file of a repository
(``GET /api/datasets/<repo>/tree/<revision>``: entries with ``path``, ``size`` and ``lfs.oid``).
A catalog record names such a listing as ``zenodo:<API URL>`` or ``huggingface:<API URL>``;
:func:`read_listing` returns its files, each checksum carrying the listing's URL as its source.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import DataError, InputError
from .catalog import Checksum
from .download import MirrorFailed, read_url

KINDS = ("zenodo", "huggingface")


@dataclass(frozen=True)
class PublishedFile:
    """One file of a publisher's record: its ``name``, ``size`` in bytes, ``checksum`` (None when the
    record gives none) and the ``url`` the record serves it from (None: use the catalog's)."""

    name: str
    size: int | None
    checksum: Checksum | None
    url: str | None = None


def split_listing(listing: str) -> tuple[str, str]:
    kind, sep, url = listing.partition(":")
    if not sep or kind not in KINDS or not url:
        raise InputError(f"a listing is zenodo:<API URL> or huggingface:<API URL>; got {listing!r}.")
    return kind, url


def zenodo_files(doc: Any, source: str) -> list[PublishedFile]:
    files = doc.get("files") if isinstance(doc, Mapping) else None
    if isinstance(files, Mapping):  # the InvenioRDM form: {"entries": {name: {...}} or [...]}
        files = files.get("entries")
        files = list(files.values()) if isinstance(files, Mapping) else files
    if not isinstance(files, list):
        raise DataError(f"{source} lists no files (its answer has no 'files' list); the record may be restricted.")
    out = []
    for entry in files:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("key") or entry.get("filename")
        text = str(entry.get("checksum") or "")
        algorithm, _, value = text.partition(":") if ":" in text else ("md5", "", text)
        checksum = Checksum(algorithm, value.lower(), source) if value and algorithm in ("md5", "sha256") else None
        links = entry.get("links") if isinstance(entry.get("links"), Mapping) else {}
        size = entry.get("size")
        if name:
            out.append(PublishedFile(str(name), int(size) if isinstance(size, int) else None, checksum,
                                     links.get("content") or links.get("self")))
    return out


def huggingface_files(doc: Any, source: str) -> list[PublishedFile]:
    if not isinstance(doc, list):
        raise DataError(f"{source} is not a repository tree listing (expected a JSON list of files).")
    out = []
    for entry in doc:
        if not isinstance(entry, Mapping) or entry.get("type") != "file" or not entry.get("path"):
            continue
        lfs = entry.get("lfs") if isinstance(entry.get("lfs"), Mapping) else None
        checksum = Checksum("sha256", str(lfs["oid"]).lower(), source) if lfs and lfs.get("oid") else None
        size = (lfs or entry).get("size")
        out.append(PublishedFile(str(entry["path"]), int(size) if isinstance(size, int) else None, checksum))
    return out


def read_listing(listing: str, *, timeout: float = 30.0) -> dict[str, PublishedFile]:
    """The files a publisher's record lists, by name.

    Raises
    ------
    MirrorFailed, Unreachable
        The record cannot be read (see :mod:`.download`).
    DataError
        The answer is not the record format expected.
    """
    kind, url = split_listing(listing)
    body = read_url(url, timeout=timeout)
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise MirrorFailed(f"{url} did not answer with JSON (an HTML page or an error page?)") from None
    files = zenodo_files(doc, url) if kind == "zenodo" else huggingface_files(doc, url)
    return {f.name: f for f in files}
