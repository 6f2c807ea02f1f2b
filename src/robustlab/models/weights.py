"""Fetching pretrained weights, with a clear :class:`OfflineError` when the network is down.

Checkpoints go to torch's hub cache (``$TORCH_HOME/hub/checkpoints``, default
``~/.cache/torch/hub/checkpoints``), where torchvision looks for them; a file already there is
never downloaded again, so a machine without network works once the files are copied in.
"""

from __future__ import annotations

import hashlib
import socket
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

import torch.hub

from ..errors import DataError, OfflineError

T = TypeVar("T")

#: Exceptions that mean "could not reach the network" (urllib, sockets, requests/httpx/HF hub
#: errors all derive from OSError or ConnectionError).
NETWORK_ERRORS = (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError, OSError)


def checkpoint_dir() -> Path:
    """Folder where pretrained checkpoints are cached (torch hub's ``checkpoints``)."""
    return Path(torch.hub.get_dir()) / "checkpoints"


def offline_message(what: str, url: str | None, exc: BaseException, destination: Path | None = None,
                    alternative: str = "or use random weights (spec suffix ':none')") -> str:
    where = destination.parent if destination is not None else checkpoint_dir()
    name = destination.name if destination is not None else (Path(urlparse(url).path).name if url else None)
    target = f" from {url}" if url else ""
    copy = (f" or copy the file {name} into {where}" if name
            else " or copy the weights into the cache (HF_HOME / TORCH_HOME)")
    return (f"cannot download the pretrained weights of {what}{target}: {exc}. This machine looks offline. "
            f"Download them on a connected machine{copy}, {alternative}.")


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_checkpoint(url: str, what: str, *, folder: str | Path | None = None, filename: str | None = None,
                     sha256: str | None = None) -> Path:
    """Path of the checkpoint at ``url`` in the cache, downloading it when missing.

    Parameters
    ----------
    url, what : where the file comes from, and what it is (for messages)
    folder : path, optional
        Where the file lives (default: :func:`checkpoint_dir`).
    filename : str, optional
        Its name there (default: the URL's last part).
    sha256 : str, optional
        The file's expected SHA-256 (hex). Checked on every call, for downloaded and copied-in
        files alike; a download that does not match is deleted.

    Raises
    ------
    OfflineError
        When the download fails for lack of network; names the URL, the file and the folder.
    DataError
        When the file does not have the expected SHA-256.
    """
    dst = Path(folder or checkpoint_dir()) / (filename or Path(urlparse(url).path).name)
    downloaded = False
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        match = torch.hub.HASH_REGEX.search(dst.name)
        try:
            torch.hub.download_url_to_file(url, str(dst), match.group(1) if match else None, progress=False)
        except NETWORK_ERRORS as exc:
            alternative = "or use random weights (spec suffix ':none')" if sha256 is None and folder is None else \
                "then run again"
            raise OfflineError(offline_message(what, url, exc, dst, alternative)) from exc
        downloaded = True
    if sha256 is not None:
        digest = file_sha256(dst)
        if digest != sha256.lower():
            if downloaded:
                dst.unlink(missing_ok=True)
            raise DataError(f"refusing the weights of {what}: {dst} has SHA-256 {digest}, not the pinned {sha256.lower()}"
                            f"{' (the download was deleted)' if downloaded else ''}. The file is damaged or not the "
                            f"released one: download it again from {url} (delete {dst} first).")
    return dst


def guard_download(what: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` (which may download weights); network failures become :class:`OfflineError`."""
    try:
        return fn()
    except OfflineError:
        raise
    except NETWORK_ERRORS as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)) and not _looks_like_network(exc):
            raise
        raise OfflineError(offline_message(what, None, exc)) from exc


def _looks_like_network(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return any(w in text for w in ("connect", "network", "offline", "resolve", "timed out", "hub", "http"))

