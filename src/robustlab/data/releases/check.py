"""``robustlab data check NAME PATH``: a local copy against the catalog.

It reports missing and extra folders, class folders and file counts against the release's layout,
settings that disagree with each other (:mod:`.consistency`), files that do not decode (by default
a cheap whole-file check of every file, :mod:`.filecheck`; ``decode="full"`` decodes every image),
and checksums where they are known: an archive given as PATH (or kept in the copy) against the
catalog's published value or the publisher's value ``fetch`` recorded in the copy's manifest.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ...errors import DataError, InputError
from ..classification import image_names
from .catalog import Archive, Layout, ReleasedSet
from .sets import get_release
from .consistency import WORKERS, compare_settings
from .download import file_digest
from .filecheck import full_problem, npy_problem, quick_problem

#: The file ``fetch`` writes into a copy: the set, its parts and each archive's verification.
MANIFEST = ".robustlab-release.json"
DECODE_MODES = ("quick", "full", "none")
#: Problems the text report lists of each kind before it counts the rest.
LISTED = 10


@dataclass(frozen=True)
class Problem:
    """One finding: its ``kind`` (missing, extra, count, inconsistent, decode, checksum), the path
    relative to the root, and what is wrong."""

    kind: str
    path: str
    detail: str


@dataclass
class CheckReport:
    """The result of :func:`check_copy`; ``ok`` when nothing is wrong."""

    release: str
    root: Path
    problems: list[Problem] = field(default_factory=list)
    checked: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, kind: str, path: str, detail: str) -> None:
        self.problems.append(Problem(kind, path, detail))

    def format(self) -> str:
        what = ", ".join(f"{n:,} {k}" for k, n in self.checked.items() if n)
        lines = [f"{self.release} at {self.root}: checked {what or 'nothing'}"]
        by_kind: dict[str, list[Problem]] = {}
        for p in self.problems:
            by_kind.setdefault(p.kind, []).append(p)
        for kind, found in by_kind.items():
            lines.append(f"{kind}: {len(found):,}")
            lines += [f"  {p.path}: {p.detail}" if p.path else f"  {p.detail}" for p in found[:LISTED]]
            if len(found) > LISTED:
                lines.append(f"  ... and {len(found) - LISTED:,} more")
        lines += [f"note: {n}" for n in self.notes]
        lines.append("ok: the copy matches the catalog" if self.ok else
                     f"NOT OK: {len(self.problems):,} problem{'s' if len(self.problems) != 1 else ''}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"release": self.release, "root": str(self.root), "ok": self.ok, "checked": dict(self.checked),
                "problems": [p.__dict__ for p in self.problems], "notes": list(self.notes)}


def read_manifest(root: Path) -> dict[str, Any] | None:
    """The manifest ``fetch`` wrote into ``root`` (None when there is none or it is unreadable)."""
    try:
        value = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _looks_like(path: Path, layout: Layout) -> bool:
    if not path.is_dir():
        return False
    if layout.kind == "arrays":
        return any((path / name).is_file() for name in layout.arrays)
    if layout.kind == "files":
        return any((path / alt).exists() for req in layout.required for alt in req.split("|")) or \
            any((path / folder).is_dir() for folder in layout.counts)
    tops = {s.split("/", 1)[0] for s in layout.settings if s}
    return bool(tops & {e.name for e in os.scandir(path)}) if tops else bool(_visible_dirs(path))


def _visible_dirs(path: Path) -> list[str]:
    return sorted(e.name for e in os.scandir(path) if e.is_dir() and not e.name.startswith("."))


def locate_root(path: Path, layout: Layout) -> Path:
    """The folder holding the layout: ``path`` itself, one of the layout's ``root_names`` under it,
    or its one visible subfolder."""
    candidates = [path, *(path / n for n in layout.root_names)]
    if path.is_dir():
        dirs = _visible_dirs(path)
        if len(dirs) == 1:
            candidates.append(path / dirs[0])
    return next((c for c in candidates if _looks_like(c, layout)), path)


def expected_classes(layout: Layout) -> list[str] | None:
    """The class folder names every setting must hold (None: only their number is known, or nothing)."""
    spec = layout.classes
    if isinstance(spec, tuple):
        return sorted(spec)
    if spec == "indices-1000":
        return sorted(str(i) for i in range(1000))
    if spec in ("imagenet-1k", "imagenet-a", "imagenet-r"):
        from ..wordnet import ilsvrc_wnids

        if spec == "imagenet-1k":
            return sorted(ilsvrc_wnids())
        from ..natural_shifts import imagenet_a_indices, imagenet_r_indices, subset_wnids

        return sorted(subset_wnids(imagenet_a_indices() if spec == "imagenet-a" else imagenet_r_indices()))
    return None


def _few(names: Iterable[str], n: int = 3) -> str:
    names = list(names)
    return ", ".join(names[:n]) + (", ..." if len(names) > n else "")


def _check_files(report: CheckReport, root: Path, files: list[Path], decode: str) -> None:
    if decode == "none" or not files:
        return
    check = full_problem if decode == "full" else quick_problem
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for path, problem in zip(files, pool.map(check, files)):
            if problem:
                report.add("decode", str(path.relative_to(root)), problem)
    report.checked["files decoded" if decode == "full" else "files checked whole"] += len(files)


def _check_settings(report: CheckReport, root: Path, release: ReleasedSet, settings: tuple[str, ...],
                    decode: str) -> None:
    layout = release.layout
    present = {s: root / s for s in settings if (root / s).is_dir()}
    for s in settings:
        if s not in present:
            part = next((a.part or a.name for a in release.archives if s.split("/", 1)[0] in a.contains), None)
            report.add("missing", s or ".", "setting folder missing" + (f" (in the archive of part {part})" if part else ""))
    _extra_folders(report, root, layout)
    if not present:
        return
    comparison = compare_settings(present)
    want = expected_classes(layout)
    count = layout.class_count()
    for s, counts in comparison.counts.items():
        have = sorted(counts)
        if want is not None:
            missing, extra = sorted(set(want) - set(have)), sorted(set(have) - set(want))
            if missing:
                report.add("missing", s or ".", f"{len(missing)} of {len(want)} class folders missing ({_few(missing)})")
            if extra:
                report.add("extra", s or ".", f"{len(extra)} class folders not in the release ({_few(extra)})")
        elif count is not None and len(have) != count:
            report.add("count", s or ".", f"{len(have)} class folders; the release has {count}")
        if layout.per_class is not None:
            off = {c: n for c, n in counts.items() if n != layout.per_class}
            if off:
                report.add("count", s or ".", f"{len(off):,} of {len(counts):,} class folders do not hold "
                           f"{layout.per_class} files "
                           f"(e.g. {_few(f'{c}: {n}' for c, n in sorted(off.items()))})")
        if layout.per_setting is not None and sum(counts.values()) != layout.per_setting:
            report.add("count", s or ".", f"{sum(counts.values()):,} files; the release has {layout.per_setting:,}")
    if len(present) > 1:
        for line in comparison.problems():
            path, _, detail = line.partition(": ") if ": " in line else ("", "", line)
            report.add("inconsistent", path, detail or line)
    report.checked["settings"] += len(present)
    report.checked["class folders"] += sum(len(c) for c in comparison.counts.values())
    files = [root / s / c / name for s in present for c in comparison.counts[s] for name in image_names(root / s / c)]
    _check_files(report, root, files, decode)


def _extra_folders(report: CheckReport, root: Path, layout: Layout) -> None:
    """Folders at the settings' levels that the release does not have (a multi-setting layout)."""
    known = [list(PurePosixPath(s).parts) for s in (*layout.settings, *layout.optional) if s]
    if not known:
        return
    for depth in range(max(len(k) for k in known)):
        expected = {"/".join(k[:depth + 1]) for k in known if len(k) > depth}
        parents = {"/".join(k[:depth]) for k in known if len(k) > depth}
        for parent in sorted(parents):
            folder = root / parent
            if not folder.is_dir():
                continue
            extra = [d for d in _visible_dirs(folder) if "/".join(filter(None, (parent, d))) not in expected]
            if extra:
                report.add("extra", parent or ".", f"{len(extra)} folders not in the release ({_few(extra)})")


def _check_arrays(report: CheckReport, root: Path, layout: Layout) -> None:
    for name, shape in layout.arrays.items():
        path = root / name
        if not path.is_file():
            report.add("missing", name, "file missing")
            continue
        problem = npy_problem(path, shape)
        if problem:
            report.add("decode", name, problem)
        report.checked["arrays"] += 1
    known = set(layout.arrays)
    extra = sorted(p.name for p in root.glob("*.npy") if p.name not in known)
    if extra:
        report.notes.append(f"other .npy files, not in the catalog's layout: {_few(extra, 5)}")


def _check_file_layout(report: CheckReport, root: Path, layout: Layout, decode: str) -> None:
    for required in layout.required:
        if not any((root / alt).exists() for alt in required.split("|")):
            report.add("missing", required.split("|")[0], "required file missing" +
                       (f" (nor {' nor '.join(required.split('|')[1:])})" if "|" in required else ""))
        report.checked["required files"] += 1
    for folder, want in layout.counts.items():
        base = root / folder
        if not base.is_dir():
            report.add("missing", folder, "folder missing")
            continue
        files = [Path(d) / f for d, _, names in os.walk(base) for f in names
                 if not f.startswith(".") and f.lower().endswith(layout.extensions or ("",))]
        if len(files) != want:
            report.add("count", folder, f"{len(files):,} files; the release has {want:,}")
        _check_files(report, root, files, decode)


def check_archive(release: ReleasedSet, path: Path, manifest: dict[str, Any] | None = None) -> CheckReport:
    """Check one archive file against its published size and checksum (the catalog's, or the
    publisher's as ``fetch`` recorded it in ``manifest``)."""
    report = CheckReport(release.name, path)
    record: Archive | None = next((a for a in release.archives if a.name == path.name), None)
    recorded = ((manifest or {}).get("archives") or {}).get(path.name) or {}
    if record is None and not recorded:
        raise InputError(f"{path.name} is not an archive of {release.name} "
                         f"({', '.join(a.name for a in release.archives) or 'whose files the publisher lists'}).")
    size = record.size if record and record.size is not None else recorded.get("size")
    checksum = record.checksum if record and record.checksum else None
    algorithm, value, source = ((checksum.algorithm, checksum.value, checksum.source) if checksum else
                                (recorded.get("algorithm"), recorded.get("checksum"), recorded.get("source")))
    report.checked["archives"] += 1
    if size is not None and path.stat().st_size != size:
        report.add("checksum", path.name, f"{path.stat().st_size:,} bytes; the publisher gives {size:,}")
    if algorithm and value:
        digest = file_digest(path, algorithm)
        if digest != value:
            report.add("checksum", path.name, f"{algorithm} {digest}; the publisher gives {value} ({source})")
        else:
            report.notes.append(f"{path.name}: {algorithm} matches the publisher's ({source})")
    else:
        report.notes.append(f"{path.name}: no checksum to compare with: {record.checksum_text() if record else '-'}")
    return report


def check_copy(name: str | ReleasedSet, path: str | os.PathLike, *, parts: str | list[str] | None = None,
               decode: str = "quick", progress: Callable[[str], None] | None = None) -> CheckReport:
    """Check a local copy of the released set ``name`` at ``path`` (see the module docstring).

    ``parts``: only what these parts' archives hold is expected (after ``fetch --parts``).

    Raises
    ------
    InputError
        Unknown set, part or decode mode.
    DataError
        ``path`` does not exist.
    """
    release = get_release(name)
    if decode not in DECODE_MODES:
        raise InputError(f"decode must be one of {', '.join(DECODE_MODES)}; got {decode!r}.")
    base = Path(path).expanduser()
    if not base.exists():
        raise DataError(f"{base} does not exist; give the folder the set was extracted into (or one of its archives).")
    if base.is_file():
        return check_archive(release, base, read_manifest(base.parent))
    root = locate_root(base, release.layout)
    report = CheckReport(release.name, root)
    manifest = read_manifest(root) or read_manifest(base)
    if manifest and manifest.get("set") not in (None, release.name):
        report.add("extra", MANIFEST, f"this folder was fetched as {manifest.get('set')!r}, not {release.name!r}")
    chosen = release.select(parts) if parts else release.archives
    if progress:
        progress(f"checking {release.name} at {root}")
    layout = release.layout
    if layout.kind == "settings":
        settings = release.settings_of(chosen) if parts else layout.settings
        if parts and not any(a.contains for a in chosen):
            settings = tuple(s for s in layout.settings if (root / s).is_dir())
            report.notes.append("which folders each archive of this set holds is not published: only the folders "
                                "present were checked")
        _check_settings(report, root, release, settings, decode)
    elif layout.kind == "arrays":
        _check_arrays(report, root, layout)
    else:
        _check_file_layout(report, root, layout, decode)
    for archive in chosen:
        kept = next((folder / archive.name for folder in (root, base) if (folder / archive.name).is_file()), None)
        if kept is not None:
            sub = check_archive(release, kept, manifest)
            report.problems += sub.problems
            report.notes += sub.notes
            report.checked.update(sub.checked)
    if manifest:
        for archive, info in (manifest.get("archives") or {}).items():
            if isinstance(info, dict) and info.get("verified"):
                report.notes.append(f"{archive}: verified when fetched ({info['verified']})")
    return report
