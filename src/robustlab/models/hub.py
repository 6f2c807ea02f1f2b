"""Pretrained weights from the Hugging Face Hub (timm's, open_clip's and transformers' source), failing
fast offline.

timm downloads most pretrained weights from the Hub (``timm/<model>.<tag>``, file
``model.safetensors``, else ``pytorch_model.bin``) into the Hub cache (``$HF_HOME/hub``, by
default ``~/.cache/huggingface/hub``). Without network, huggingface_hub retries for over a
minute and its error names neither the file nor the folder. So before a timm model is built:

- if the weights are in the cache and the Hub cannot be reached, the build runs with
  ``HF_HUB_OFFLINE`` on, so the cached file is used at once;
- if they are not in the cache and the Hub cannot be reached (a TCP connection to it fails
  within :data:`CONNECT_TIMEOUT` seconds, or ``HF_HUB_OFFLINE=1`` is set), an
  :class:`~robustlab.errors.OfflineError` says which file is missing and in which folder, as
  for torchvision weights (:mod:`.weights`).

Weights timm takes from a plain URL (no Hub id) go through torch's checkpoint folder, checked
the same way. :func:`weights_guard` does this for any :class:`WeightsSource`: open_clip's
pretrained tags (``open_clip_model.safetensors`` in a Hub repository, or a URL into
``~/.cache/clip``) and ``hf:`` models (``config.json``, the image processor's settings and the
weights, all of which must be cached) use it too.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..errors import OfflineError
from .weights import checkpoint_dir

__all__ = ["CONNECT_TIMEOUT", "WeightsSource", "hub_cache_dir", "hub_endpoint", "hub_offline", "hub_repo_source",
           "offline_set", "reachable", "timm_weights_guard", "timm_weights_source", "weights_guard"]

#: Seconds to wait for a TCP connection before calling a host unreachable.
CONNECT_TIMEOUT = 3.0
#: The files timm looks for in a Hub repository, in its order (safetensors first).
HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class WeightsSource:
    """Where a timm model's pretrained weights come from.

    Attributes
    ----------
    kind : str
        ``"hf-hub"`` (a Hub repository) or ``"url"`` (a plain download into ``folder``).
    location : str
        The Hub repository id (``timm/convnext_tiny.in12k_ft_in1k``) or the URL.
    files : tuple of str
        The file names looked for, any one of which will do (Hub: ``model.safetensors``,
        ``pytorch_model.bin``).
    folder : Path
        The cache folder they go to on this machine.
    revision : str, optional
        The Hub revision (branch, tag or commit).
    required : tuple of str
        Files that must all be cached besides one of ``files`` (a ``hf:`` model's ``config.json``).
    """

    kind: str
    location: str
    files: tuple[str, ...]
    folder: Path
    revision: str | None = None
    required: tuple[str, ...] = ()


def hub_endpoint() -> str:
    """The Hub's address: ``$HF_ENDPOINT``, else huggingface_hub's (``https://huggingface.co``)."""
    try:
        from huggingface_hub import constants

        default = constants.ENDPOINT
    except ImportError:  # pragma: no cover - timm needs it
        default = "https://huggingface.co"
    return os.environ.get("HF_ENDPOINT", default).rstrip("/")


def hub_cache_dir() -> Path:
    """The Hub cache folder huggingface_hub uses (``$HF_HUB_CACHE``, ``$HF_HOME/hub``, ...)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def offline_set() -> bool:
    """Whether ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) asks for no network."""
    return _offline_set()


def _offline_set() -> bool:
    return any(os.environ.get(k, "").strip().lower() in _TRUE for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def reachable(url: str, timeout: float = CONNECT_TIMEOUT) -> bool:
    """Whether a TCP connection to ``url``'s host and port opens within ``timeout`` seconds."""
    parts = urlparse(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Within the block, huggingface_hub makes no network request (``HF_HUB_OFFLINE``): cached
    files are used at once, missing ones fail at once. The previous setting is restored."""
    from huggingface_hub import constants

    before_env, before_const = os.environ.get("HF_HUB_OFFLINE"), constants.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants.HF_HUB_OFFLINE = True  # read at import time by huggingface_hub; set for this block
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before_const
        if before_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before_env


def timm_weights_source(name: str) -> WeightsSource | None:
    """Where ``timm.create_model(name, pretrained=True)`` gets its weights (None: timm does not
    know the name, or it has no pretrained weights; timm's own error then applies)."""
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(name)
    if cfg is None:
        return None
    if getattr(cfg, "hf_hub_id", None):
        repo, _, revision = cfg.hf_hub_id.partition("@")
        filename = getattr(cfg, "hf_hub_filename", None)
        files = (filename,) if filename else HF_WEIGHT_FILES
        return WeightsSource("hf-hub", repo, files, hub_cache_dir() / f"models--{repo.replace('/', '--')}",
                             revision or None)
    url = getattr(cfg, "url", None)
    if url:
        return WeightsSource("url", url, (Path(urlparse(url).path).name,), checkpoint_dir())
    return None


def hub_repo_source(repo: str, files: tuple[str, ...], *, revision: str | None = None,
                    required: tuple[str, ...] = ()) -> WeightsSource:
    """The :class:`WeightsSource` of files of the Hub repository ``repo``."""
    return WeightsSource("hf-hub", repo, files, hub_cache_dir() / f"models--{repo.replace('/', '--')}", revision,
                         required)


def _hub_cached(source: WeightsSource) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    def cached(filename: str) -> Path | None:
        found = try_to_load_from_cache(source.location, filename, revision=source.revision)
        return Path(found) if isinstance(found, str) else None

    if any(cached(name) is None for name in source.required):
        return None
    return next((path for path in map(cached, source.files) if path is not None), None)


def _offline_error(what: str, source: WeightsSource, why: str) -> OfflineError:
    if source.kind == "hf-hub":
        where = f"{hub_endpoint()}/{source.location}"
        fetch = (f"On a connected machine, run `huggingface-cli download {source.location} {source.files[0]}` (or "
                 f"load the model once there) and copy the folder {source.folder.name} into {source.folder.parent} "
                 "here (HF_HOME or HF_HUB_CACHE choose that folder)")
    else:
        where = source.location
        fetch = (f"Download it on a connected machine and copy the file {source.files[0]} into {source.folder} "
                 "(TORCH_HOME chooses that folder)")
    files = " and ".join([*source.required, " or ".join(source.files)])
    fallback = ", or use random weights (spec suffix ':none')" if not source.required else ""
    return OfflineError(f"cannot download the pretrained weights of {what} ({files}) from {where}: {why}. This machine "
                        f"looks offline, and {source.folder} does not hold them. {fetch}{fallback}.")


def timm_weights_guard(name: str, what: str, *, timeout: float = CONNECT_TIMEOUT):
    """Around ``timm.create_model(name, pretrained=True)``: fail fast, naming the file and the
    cache folder, when the weights are neither cached nor reachable; use the cached file without
    touching the network when the Hub is unreachable (see the module docstring)."""
    return weights_guard(timm_weights_source(name), what, timeout=timeout)


@contextlib.contextmanager
def weights_guard(source: WeightsSource | None, what: str, *, timeout: float = CONNECT_TIMEOUT) -> Iterator[None]:
    """Around a library call that may download ``source``'s files: an :class:`OfflineError` at once
    (naming the files and the cache folder) when they are neither cached nor reachable; the block
    runs with ``HF_HUB_OFFLINE`` when the Hub is unreachable and the files are cached. None: no
    check (the library's own error applies)."""
    if source is None:
        yield
        return
    if source.kind == "url":
        cached = source.folder / source.files[0]
        if not cached.exists() and not reachable(source.location, timeout):
            raise _offline_error(what, source, f"{urlparse(source.location).hostname} cannot be reached")
        yield
        return
    online = not _offline_set() and reachable(hub_endpoint(), timeout)
    if online:
        yield
        return
    if _hub_cached(source) is None:
        why = ("HF_HUB_OFFLINE is set" if _offline_set() else
               f"{urlparse(hub_endpoint()).hostname} cannot be reached (no connection within {timeout:g} s)")
        raise _offline_error(what, source, why)
    with hub_offline():
        yield
