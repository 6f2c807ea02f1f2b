"""``robustlab data``: list the catalog of released sets, fetch one, check a local copy (thin calls
into :mod:`robustlab.data.releases`; the work imports on use)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

data_app = typer.Typer(help="Released data sets: list the catalog, fetch a set (resumable, verified, safely "
                            "extracted), check a local copy.", no_args_is_help=True)


def describe(release) -> list[str]:
    """Every fact of one catalog record, with its sources (``robustlab data list NAME``)."""
    lines = [f"{release.title} ({release.name})", f"  paper: {release.paper}", f"  home: {release.homepage}",
             f"  read by: {', '.join(release.benchmarks)}", f"  licence: {release.licence}",
             f"  access: {release.access}" + ("" if release.access == "open" else " (robustlab never downloads it)")]
    if release.how_to_get:
        lines.append(f"  how to get it: {release.how_to_get}")
    if release.listing:
        lines.append(f"  publisher's listing (sizes and checksums, read when fetching): {release.listing.split(':', 1)[1]}")
    for archive in release.archives:
        part = f" [part {archive.part}]" if archive.part else ""
        size = (f"{archive.size:,} bytes" if archive.size is not None else archive.size_text or
                ("size listed by the publisher (read when fetching)" if release.listing else "size not published"))
        lines.append(f"  archive {archive.name}{part}: {size}; checksum: {archive.checksum_text()}")
        lines += [f"    {'url' if i == 0 else 'mirror'}: {u}" for i, u in enumerate(archive.urls)]
        if archive.contains:
            lines.append(f"    holds: {', '.join(archive.contains)}")
    layout = release.layout
    lines.append(f"  layout: {layout.description}")
    if layout.source:
        lines.append(f"    (from {layout.source})")
    lines += [f"  source: {s}" for s in release.sources]
    if release.notes:
        lines.append(f"  note: {release.notes}")
    return lines


@data_app.command("list")
def list_command(
    name: Optional[str] = typer.Argument(None, help="A set's name: print its whole record (paper, URLs and mirrors, "
                                         "licence, archives with sizes and checksums, layout, sources)."),
    as_json: bool = typer.Option(False, "--json", help="Print the catalog (or the set) as JSON."),
) -> None:
    """The released sets robustlab's benchmarks read: access (open, agreement, manual, make), archives, where their
    checksums come from, and the benchmarks that read them."""
    from dataclasses import asdict

    from .sets import get_release, list_releases, summary_row

    releases = [get_release(name)] if name else list_releases()
    if as_json:
        typer.echo(json.dumps([asdict(r) for r in releases], indent=2, default=str))
        return
    if name:
        typer.echo("\n".join(describe(releases[0])))
        return
    rows = [summary_row(r) for r in releases]
    head = ["set", "access", "archives", "checksums", "read by"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    for row in [head, ["-" * w for w in widths], *rows]:
        typer.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    typer.echo("\nrobustlab data list NAME prints a set's sources, URLs, checksums and layout.")


@data_app.command("fetch")
def fetch_command(
    name: str = typer.Argument(..., help="The set (robustlab data list names them)."),
    to: Optional[Path] = typer.Option(None, "--to", help="Folder to extract into \\[default: ./NAME]; a rerun "
                                      "resumes there."),
    parts: Optional[str] = typer.Option(None, "--parts", help="Only these parts, comma-separated (e.g. noise,blur of "
                                        "imagenet-c; robustlab data list NAME lists a set's parts)."),
    keep_archives: bool = typer.Option(False, "--keep-archives", help="Keep the verified archives in the folder "
                                       "after extracting them."),
    progress: str = typer.Option("auto", "--progress", help="bar (on a terminal), log (a line every 10 s), none, "
                                 "or auto: bar on a terminal, else log."),
    publisher_checksums: bool = typer.Option(True, "--publisher-checksums/--no-publisher-checksums",
                                             help="Read the sizes and checksums the publisher lists (Zenodo, Hugging "
                                                  "Face) and refuse a download that differs; --no-publisher-checksums "
                                                  "downloads when that listing cannot be read (the layout check still "
                                                  "runs)."),
) -> None:
    """Download a released set: resumable range downloads under a temporary name, mirrors in order, checked against
    the publisher's size and checksum, safely extracted (no path escapes, no outside links, no device files, a size
    cap), then checked. Sets behind an agreement (ImageNet, ObjectNet, Cityscapes) are never downloaded: the error
    says where to get them. Exits 1 when the copy is not complete."""
    from .fetch import fetch

    summary = fetch(name, to, parts=parts, progress=progress, keep_archives=keep_archives,
                    publisher_checksums=publisher_checksums)
    typer.echo(summary.format())
    if summary.report is not None and not summary.report.ok:
        raise typer.Exit(1)


@data_app.command("check")
def check_command(
    name: str = typer.Argument(..., help="The set (robustlab data list names them)."),
    path: Path = typer.Argument(..., help="The extracted folder (or the folder above it), or one of the set's "
                                "archives (its checksum is checked)."),
    parts: Optional[str] = typer.Option(None, "--parts", help="Only what these parts hold is expected (after fetch "
                                        "--parts)."),
    decode: str = typer.Option("quick", "--decode", help="quick: every file's format markers (finds truncated files), "
                               "full: decode every image, none: counts only."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check a local copy against the catalog: missing or extra folders, file counts, settings that disagree, files
    that do not decode, and checksums where they are known. Prints a summary; exits 1 on any problem."""
    from .check import check_copy

    report = check_copy(name, path, parts=parts, decode=decode)
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format())
    if not report.ok:
        raise typer.Exit(1)
