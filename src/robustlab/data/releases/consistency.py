"""The pre-flight check of a released layout, before ``evaluate`` starts: every setting must hold
the same classes and the same file names.

A half-extracted ImageNet-C (a severity folder short of a class, a class short of files) is read
as it is by a plain image-folder reader: its missing files would show up only as a smaller n, and
a missing class folder would shift the class indices of a layout numbered by sorted folder names.
:func:`preflight` lists every chosen setting (in threads: the listing is I/O), compares them, and

- refuses an inconsistent tree, naming what is missing where, unless ``allow_incomplete``;
  then it returns an ``incomplete`` record for the run's config, so the run records it;
- returns a ``subset`` record when the tree is consistent but smaller than the release (a
  user's subset): the run, ``show`` and the report say "subset: K of 1,000 classes, N of 50,000
  images" (:func:`layout_notes`).

Memory stays small on 3.75 million files: each class folder is kept as its file count and a digest
of its sorted names; names are listed again only for the classes whose digests differ.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import DataError
from ..classification import class_folders, image_names

#: Threads listing folders (listing is I/O: more threads than cores help on network file systems).
WORKERS = 8
#: Problems a message names before it says how many more there are.
SHOWN = 5


@dataclass(frozen=True)
class FileGap:
    """A class folder of one setting that lacks files other settings have."""

    setting: str
    cls: str
    have: int
    want: int
    missing: tuple[str, ...]

    def text(self) -> str:
        gap = self.want - self.have
        return (f"{self.setting}/{self.cls} lacks {gap} of {self.want} files" +
                (f" (e.g. {', '.join(self.missing[:2])})" if self.missing else ""))


@dataclass
class LayoutReport:
    """The comparison of a layout's settings (see :func:`compare_settings`)."""

    settings: tuple[str, ...]
    classes: tuple[str, ...]
    images: dict[str, int]
    counts: dict[str, dict[str, int]]
    missing_classes: dict[str, list[str]] = field(default_factory=dict)
    gaps: list[FileGap] = field(default_factory=list)

    @property
    def consistent(self) -> bool:
        return not self.missing_classes and not self.gaps

    def problems(self) -> list[str]:
        """Every inconsistency as one line, class folders first."""
        lines = []
        for setting, missing in self.missing_classes.items():
            lines.append(f"class folder {setting}/{missing[0]} is missing" if len(missing) == 1 else
                         f"{setting}: {len(missing)} class folders are missing ({', '.join(missing[:3])}"
                         f"{', ...' if len(missing) > 3 else ''})")
        return lines + [g.text() for g in self.gaps]

    def short_settings(self) -> list[str]:
        """The settings that lack a class folder or files."""
        return sorted(set(self.missing_classes) | {g.setting for g in self.gaps})

    def missing_files(self) -> int:
        """Files the short settings lack (a missing class folder counts the most files it has elsewhere)."""
        most = {c: max(counts.get(c, 0) for counts in self.counts.values()) for c in self.classes}
        return sum(most[c] for missing in self.missing_classes.values() for c in missing) + \
            sum(g.want - g.have for g in self.gaps)


def _digest(names: list[str]) -> str:
    return hashlib.sha1("\n".join(names).encode("utf-8", "surrogateescape")).hexdigest()


def _list_setting(folder: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for cls in class_folders(folder):
        names = image_names(folder / cls)
        out[cls] = (len(names), _digest(names))
    return out


def compare_settings(folders: Mapping[str, Path], *, workers: int = WORKERS) -> LayoutReport:
    """List every setting's class folders and file names and compare them (see the module docstring).

    ``folders`` maps a setting's name (``fog/3``) to its folder ``<setting>/<class>/<file>``.
    """
    names = list(folders)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(names)))) as pool:
        listings = dict(zip(names, pool.map(lambda s: _list_setting(Path(folders[s])), names)))
    classes = sorted({c for listing in listings.values() for c in listing})
    report = LayoutReport(tuple(names), tuple(classes),
                          {s: sum(n for n, _ in listing.values()) for s, listing in listings.items()},
                          {s: {c: n for c, (n, _) in listing.items()} for s, listing in listings.items()})
    for s, listing in listings.items():
        missing = [c for c in classes if c not in listing]
        if missing:
            report.missing_classes[s] = missing
    for c in classes:
        digests = {listing[c][1] for listing in listings.values() if c in listing}
        if len(digests) < 2:
            continue
        present = {s: set(image_names(Path(folders[s]) / c)) for s, listing in listings.items() if c in listing}
        union = set().union(*present.values())
        for s, have in present.items():
            if have != union:
                report.gaps.append(FileGap(s, c, len(have), len(union), tuple(sorted(union - have)[:3])))
    return report


def release_totals(release: str | None) -> tuple[int | None, int | None]:
    """``(classes, images per setting)`` of a catalog set (None where not published)."""
    if not release:
        return None, None
    from .sets import get_release

    layout = get_release(release).layout
    return layout.class_count(), layout.per_setting


def subset_record(classes: int, images: int, release: str | None) -> dict[str, Any] | None:
    """The ``subset`` record of a consistent tree smaller than the release ``release`` (None when it is
    the whole release, or when the release's size is not published)."""
    of_classes, of_images = release_totals(release)
    smaller = (of_classes is not None and classes < of_classes) or (of_images is not None and images < of_images)
    if not smaller:
        return None
    return {"release": release, "classes": int(classes), "of_classes": of_classes, "images": int(images),
            "of_images": of_images}


def preflight(folders: Mapping[str, Path], *, allow_incomplete: bool, release: str | None,
              what: str) -> tuple[dict[str, Any], LayoutReport]:
    """Check the settings of a released layout before a run (see the module docstring).

    Returns ``(config additions, report)``: the additions are ``incomplete`` (an inconsistent tree
    evaluated with ``allow_incomplete``) and ``subset`` (a tree smaller than the release).

    Raises
    ------
    DataError
        The settings disagree and ``allow_incomplete`` is false: the message names what is missing
        where, and the ways out.
    """
    report = compare_settings(folders)
    additions: dict[str, Any] = {}
    if not report.consistent:
        problems = report.problems()
        if not allow_incomplete:
            more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
            check = f" (robustlab data check {release} <root> lists them all)" if release else ""
            raise DataError(f"{what} is incomplete: its settings do not hold the same classes and files: "
                            f"{'; '.join(problems[:SHOWN])}{more}. Re-extract or fetch the missing files{check}, leave "
                            "the short settings out (--corruptions, --severities), or evaluate the tree as it is with "
                            "--allow-incomplete, which the run records.")
        additions["incomplete"] = {"settings_short": report.short_settings(), "files_missing": report.missing_files(),
                                   "problems": len(problems), "examples": problems[:SHOWN]}
    images = max(report.images.values(), default=0)
    subset = subset_record(len(report.classes), images, release)
    if subset:
        additions["subset"] = subset
    return additions, report


def subset_text(record: Mapping[str, Any]) -> str:
    """``"subset: 3 of 1,000 classes, 12 of 50,000 images"`` (images per setting)."""
    of_classes = f" of {record['of_classes']:,}" if record.get("of_classes") else ""
    images = (f"{record['images']:,} of {record['of_images']:,} images" if record.get("of_images") else
              f"{record['images']:,} images per setting (the release's count is not published)")
    return f"subset: {record['classes']:,}{of_classes} classes, {images}"


def layout_notes(subset: Mapping[str, Any] | None, incomplete: Mapping[str, Any] | None) -> list[str]:
    """The notes a run of a released layout carries (from the ``subset`` and ``incomplete`` records
    of its config): that it is a subset of the release, and that it was evaluated incomplete
    (``--allow-incomplete``) with what was missing."""
    notes = []
    if subset:
        notes.append(f"{subset_text(subset)} (per setting; the release: {subset.get('release')}). Numbers on a subset "
                     "do not compare with the published ones.")
    if incomplete:
        n = incomplete["problems"]
        notes.append(f"evaluated with --allow-incomplete: the settings differ ({n} problem{'s' if n != 1 else ''}, e.g. "
                     f"{'; '.join(incomplete['examples'][:3])}), so settings were measured on different images.")
    return notes


@dataclass(frozen=True)
class ReleasedCheck:
    """What :func:`check_released_settings` found, for the run's config: the ``incomplete`` and
    ``subset`` records (None when they do not apply), the class map to use, and the report."""

    report: LayoutReport
    class_map: Any
    incomplete: dict[str, Any] | None = None
    subset: dict[str, Any] | None = None


def check_released_settings(folders: Mapping[str, Path], class_map: Any, *, allow_incomplete: bool,
                            release: str | None, what: str) -> ReleasedCheck:
    """:func:`preflight` a run's settings: the outcome (``incomplete``, ``subset``) for its config. An
    incomplete tree's class map (``class_map``, a mode) is pinned to the classes of every setting
    together (a list of names in index order), so a setting that lacks a class folder keeps the
    others' indices (a folder-sorted map would shift them)."""
    additions, report = preflight(folders, allow_incomplete=allow_incomplete, release=release, what=what)
    if "incomplete" in additions and isinstance(class_map, str):
        from ..classification import resolve_class_map

        class_map = list(resolve_class_map(report.classes, class_map)[1])
    return ReleasedCheck(report, class_map, additions.get("incomplete"), additions.get("subset"))


def layout_summary(subset: Mapping[str, Any] | None, incomplete: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``subset`` and ``incomplete`` records of a run's config, for its summary (``--json``)."""
    return {key: value for key, value in (("subset", subset), ("incomplete", incomplete)) if value}
