"""``robustlab data fetch NAME [--to DIR] [--parts ...]``: download, verify, extract, check.

For each archive of the chosen parts: read the publisher's sizes and checksums when its host lists
them (:mod:`.publisher`), download it resumably under a temporary name (:mod:`.download`: mirrors
in order, HTML pages refused, a checksum mismatch kept aside), extract it safely (:mod:`.extract`),
record it in the copy's manifest (``.robustlab-release.json``) and delete the archive (unless
``keep_archives``). A rerun skips the archives the manifest records and resumes a partial
download. Last, the copy is checked against the catalog (:func:`.check.check_copy`).

A set behind an agreement (ImageNet, ObjectNet, Cityscapes) or not fetchable by a script is
never downloaded: the error says where to get it and the check command to run after. Offline,
the error comes at once, with the URLs to fetch by hand and the same check command.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import DataError, OfflineError
from ...fsutil import atomic_write_text, ensure_dir
from .catalog import READ_WHEN_FETCHING, Archive, ReleasedSet
from .sets import get_release
from .check import MANIFEST, CheckReport, check_copy, read_manifest
from .download import MirrorFailed, Unreachable, download, offline_requested
from .extract import extract
from .progress import TransferProgress, human_bytes
from .publisher import PublishedFile, read_listing

#: The folder inside the target that holds downloads until they are extracted.
DOWNLOADS = ".robustlab-download"


@dataclass
class FetchSummary:
    """What a fetch did: per archive a line, and the check of the copy afterwards."""

    release: str
    target: Path
    lines: list[str] = field(default_factory=list)
    report: CheckReport | None = None

    def format(self) -> str:
        out = [f"{self.release} -> {self.target}", *self.lines]
        if self.report is not None:
            out.append(self.report.format())
        return "\n".join(out)


def manual_error(release: ReleasedSet, why: str) -> DataError:
    return DataError(f"{release.title} ({release.name}) {why}. {release.manual_text()}")


def _allowed_names(release: ReleasedSet) -> set[str]:
    layout = release.layout
    names = {s.split("/", 1)[0] for s in (*layout.settings, *layout.optional) if s}
    names |= {n.split("/", 1)[0] for n in layout.root_names}
    names |= {c for a in release.archives for c in a.contains} | {a.name for a in release.archives}
    names |= {r.split("|")[0].split("/", 1)[0] for r in layout.required} | {f.split("/", 1)[0] for f in layout.counts}
    names |= set(layout.arrays)
    return names


def check_target(release: ReleasedSet, target: Path) -> None:
    """Refuse a target folder that holds another set (by its manifest) or other files."""
    if not target.exists():
        return
    if not target.is_dir():
        raise DataError(f"--to {target} is a file; give a folder to extract {release.name} into.")
    manifest = read_manifest(target)
    if manifest is not None:
        if manifest.get("set") != release.name:
            raise DataError(f"{target} already holds {manifest.get('set')!r} (fetched by robustlab); fetch "
                            f"{release.name} into another folder with --to.")
        return
    foreign = sorted(e.name for e in os.scandir(target) if not e.name.startswith(".")
                     and e.name not in _allowed_names(release))
    if foreign:
        raise DataError(f"{target} is not empty: it holds {', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}, "
                        f"which are not {release.name}'s. Fetch into an empty folder or {release.name}'s own with --to.")


def published_files(release: ReleasedSet, *, verify: bool) -> dict[str, PublishedFile]:
    """The publisher's listing of ``release`` (empty when it has none, or ``verify`` is off and it
    cannot be read)."""
    if not release.listing:
        return {}
    try:
        return read_listing(release.listing)
    except Unreachable as exc:
        raise OfflineError(f"cannot reach {release.name}'s publisher ({exc}). {release.manual_text()}") from None
    except (MirrorFailed, DataError) as exc:
        if not verify:
            return {}
        raise DataError(f"cannot read the sizes and checksums {release.name}'s publisher lists ({exc}). Try again "
                        "later, or fetch with --no-publisher-checksums to download without them (the layout check "
                        "still runs).") from None


def resolve_archives(release: ReleasedSet, archives: tuple[Archive, ...], published: dict[str, PublishedFile],
                     *, verify: bool) -> tuple[Archive, ...]:
    """The archives with the size and checksum their publisher lists filled in (for a set whose
    archives the listing defines, every file of the listing)."""
    if not release.archives:
        if not published:
            raise DataError(f"{release.name}'s files come from its publisher's listing, which could not be read. "
                            f"{release.manual_text()}")
        return tuple(Archive(f.name, (f.url,) if f.url else (), size=f.size, checksum=f.checksum,
                             checksum_note=READ_WHEN_FETCHING) for f in sorted(published.values(), key=lambda f: f.name))
    out = []
    for archive in archives:
        pub = published.get(archive.name)
        if pub is None and release.listing and verify:
            raise DataError(f"{release.name}'s publisher no longer lists {archive.name}; the release changed. "
                            f"{release.manual_text()}")
        if pub is not None:
            archive = replace(archive, size=archive.size or pub.size, checksum=archive.checksum or pub.checksum)
        out.append(archive)
    return tuple(out)


def _check_space(target: Path, archive: Archive) -> None:
    if archive.size is None:
        return
    free = shutil.disk_usage(target).free
    if free < 2 * archive.size:  # the archive, and about as much again extracted
        raise DataError(f"{target} has {human_bytes(free)} free, but {archive.name} needs about "
                        f"{human_bytes(2 * archive.size)} (the {human_bytes(archive.size)} download and its extraction); "
                        "free some space or fetch into another folder with --to.")


def _save_manifest(target: Path, manifest: dict[str, Any]) -> None:
    atomic_write_text(target / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def fetch_archive(release: ReleasedSet, archive: Archive, target: Path, progress: TransferProgress, *,
                  log: Callable[[str], None]) -> dict[str, Any]:
    """Download (or reuse a verified download of), extract and return the manifest record of one archive."""
    if not archive.urls:
        raise manual_error(release, f"has no download URL for {archive.name}")
    downloads = ensure_dir(target / DOWNLOADS)
    dest = downloads / archive.name
    if dest.is_file():
        log(f"{archive.name}: a verified download is already here; extracting it")
        url, verified = "(an earlier fetch)", "verified by an earlier fetch"
    else:
        _check_space(target, archive)
        update = progress.start(f"{release.name}: {archive.name}", archive.size)
        got = download(archive.urls, dest, size=archive.size, checksum=archive.checksum, progress=update, log=log)
        progress.done(got.size, got.size)
        url, verified = got.url, got.verified
    done = [0]

    def advance(n: int) -> None:
        done[0] += n
        update(done[0], None)

    update = progress.start(f"{release.name}: extracting {archive.name}", None)
    result = extract(dest, target, progress=advance)
    progress.done(done[0], done[0])
    record = {"url": url, "size": dest.stat().st_size, "verified": verified, "extracted": True,
              "files": result.files, "top_level": list(result.top_level)}
    if archive.checksum is not None:
        record.update(algorithm=archive.checksum.algorithm, checksum=archive.checksum.value,
                      source=archive.checksum.source)
    return record


def fetch(name: str | ReleasedSet, to: str | os.PathLike | None = None, *, parts: str | list[str] | None = None,
          progress: str = "auto", keep_archives: bool = False, publisher_checksums: bool = True,
          log: Callable[[str], None] | None = None) -> FetchSummary:
    """Fetch the released set ``name`` into ``to`` (default ``./<name>``); see the module docstring.

    Raises
    ------
    DataError
        The set needs an agreement or a manual download (nothing is downloaded), the target holds
        another set, a download fails its check (kept aside), the disk is full.
    OfflineError
        No network: the message names the URLs to fetch by hand and the check command.
    InputError
        Unknown set or part (with a did-you-mean).
    """
    release = get_release(name)
    if release.access == "agreement":
        raise manual_error(release, "needs an agreement before download, so robustlab never downloads it")
    if release.access == "make":
        raise manual_error(release, "has no published copy")
    if not release.fetchable:
        raise manual_error(release, "cannot be downloaded by a script")
    chosen = release.select(parts)
    target = Path(to if to is not None else release.name).expanduser().resolve()
    check_target(release, target)
    if offline_requested():
        raise OfflineError(f"ROBUSTLAB_OFFLINE is set, so nothing is downloaded. {release.manual_text()}")
    reporter = TransferProgress(progress)
    say = log or reporter.message
    archives = resolve_archives(release, chosen, published_files(release, verify=publisher_checksums),
                                verify=publisher_checksums)
    ensure_dir(target)
    manifest = read_manifest(target) or {"set": release.name, "archives": {}}
    summary = FetchSummary(release.name, target)
    try:
        for archive in archives:
            if (manifest["archives"].get(archive.name) or {}).get("extracted"):
                summary.lines.append(f"{archive.name}: already fetched and extracted; skipped")
                continue
            try:
                record = fetch_archive(release, archive, target, reporter, log=say)
            except OfflineError as exc:
                raise OfflineError(f"{exc} {release.manual_text()}") from None
            manifest["archives"][archive.name] = record
            manifest["parts"] = sorted({*manifest.get("parts", []), *([archive.part] if archive.part else [])})
            _save_manifest(target, manifest)
            kept = target / DOWNLOADS / archive.name
            if keep_archives:
                os.replace(kept, target / archive.name)
            else:
                kept.unlink()
            summary.lines.append(f"{archive.name}: {human_bytes(record['size'])} from {record['url']}; "
                                 f"{record['verified']}; {record['files']:,} files extracted")
    finally:
        reporter.finish()
        downloads = target / DOWNLOADS
        if downloads.is_dir() and not any(downloads.iterdir()):
            downloads.rmdir()
    summary.report = check_copy(release, target, parts=parts)
    return summary
