"""Safe extraction of tar (plain, gzip, bzip2, xz) and zip archives.

Every member is checked before anything is written, whatever the archive claims:

- its name is relative and has no ``..`` component (no path escapes, no absolute paths, no
  Windows drive letters);
- a symbolic or hard link must point to a place inside the extracted tree;
- device files, FIFOs and other special members are refused;
- the bytes written are counted (not only the sizes the headers declare) against a cap, against
  archive bombs; a password-protected zip is refused with a message.

An archive with one bad member is refused as a whole. Members are written into a hidden staging
folder inside the target (``.<archive>.extract.tmp``), which is removed on any error (a refused
member, a full disk, Ctrl-C); only a completely extracted archive is moved into place, so nothing
half-written is ever left under a final name. Files are created with ordinary permissions
(``0644``/``0755`` within the umask: no set-uid bits, no owners from the archive).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ...errors import DataError
from ...fsutil import FILE_MODE, explain_os_error

#: Bytes an archive may extract to, per byte of archive, before it is refused as a bomb (data sets of
#: JPEG or PNG files barely compress; a zip bomb expands thousands of times).
RATIO = 20
#: Added to the cap, so that a small archive of text files is never refused.
SLACK = 1 << 30
CHUNK = 1 << 20


class UnsafeArchive(DataError):
    """An archive member that must not be extracted (a path escape, an outside link, a device file, a bomb)."""


@dataclass(frozen=True)
class Extracted:
    """What an extraction wrote: the ``top_level`` entries now in the target, ``files`` and ``bytes``."""

    top_level: tuple[str, ...]
    files: int
    bytes: int


def size_cap(archive: Path) -> int:
    """The most bytes ``archive`` may extract to (:data:`RATIO` times its size, plus :data:`SLACK`)."""
    return archive.stat().st_size * RATIO + SLACK


def member_path(root: Path, name: str, archive: str) -> Path:
    """``root / name`` for a member name that is safe to extract (else :class:`UnsafeArchive`)."""
    if not name or "\x00" in name:
        raise UnsafeArchive(f"{archive} has a member with an empty or NUL-containing name; refused.")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"{archive} has a member with an absolute path ({name!r}); refused: nothing extracted.")
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{archive} has a member that escapes the target folder ({name!r}); refused: nothing "
                            "extracted.")
    if not parts:
        raise UnsafeArchive(f"{archive} has a member named {name!r}, which names no file; refused.")
    return root.joinpath(*parts)


def _inside(root: Path, path: str | Path) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def _check_link(root: Path, path: Path, target: str, name: str, archive: str) -> None:
    if not target or os.path.isabs(target) or not _inside(root, os.path.join(path.parent, target)):
        raise UnsafeArchive(f"{archive} has a link {name!r} -> {target!r} that points outside the target folder; "
                            "refused: nothing extracted.")


class _Writer:
    """Writes members into ``root``, counting bytes against ``cap``."""

    def __init__(self, root: Path, archive: str, cap: int, progress: Callable[[int], None] | None) -> None:
        self.root, self.archive, self.cap, self.progress = root, archive, cap, progress
        self.files = self.bytes = 0

    def parent_of(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not _inside(self.root, path.parent):  # a directory reached through a link the archive made
            raise UnsafeArchive(f"{self.archive} writes {path.relative_to(self.root)} through a link that leaves the "
                                "target folder; refused: nothing extracted.")

    def file(self, path: Path, source, mode: int) -> None:
        self.parent_of(path)
        if path.is_symlink() or path.is_dir():
            raise UnsafeArchive(f"{self.archive} writes a file over the link or folder {path.relative_to(self.root)}; "
                                "refused: nothing extracted.")
        with open(path, "wb") as out:
            for block in iter(lambda: source.read(CHUNK), b""):
                self.bytes += len(block)
                if self.bytes > self.cap:
                    raise UnsafeArchive(f"{self.archive} expands to more than {self.cap:,} bytes ({RATIO} times its size "
                                        "plus 1 GiB): refused as an archive bomb, nothing extracted.")
                out.write(block)
                if self.progress:
                    self.progress(len(block))
        os.chmod(path, FILE_MODE | (0o111 & FILE_MODE if mode & 0o100 else 0))
        self.files += 1


def _tar(archive: Path, staging: Path, writer: _Writer) -> None:
    name = archive.name
    with tarfile.open(archive, "r:*") as tf:
        for member in tf:
            path = member_path(staging, member.name, name)
            if member.isdir():
                writer.parent_of(path / "x")
            elif member.isreg():
                writer.file(path, tf.extractfile(member), member.mode)
            elif member.issym():
                _check_link(staging, path, member.linkname, member.name, name)
                writer.parent_of(path)
                os.symlink(member.linkname, path)
            elif member.islnk():
                target = member_path(staging, member.linkname, name)
                if not target.is_file() or target.is_symlink():
                    raise UnsafeArchive(f"{name} has a hard link {member.name!r} to {member.linkname!r}, which is not a "
                                        "file extracted before it; refused: nothing extracted.")
                writer.parent_of(path)
                shutil.copyfile(target, path)
                writer.files += 1
            else:
                kind = ("a device file" if member.ischr() or member.isblk() else "a FIFO" if member.isfifo()
                        else "a special member")
                raise UnsafeArchive(f"{name} has {kind} ({member.name!r}); refused: nothing extracted.")


def _zip(archive: Path, staging: Path, writer: _Writer) -> None:
    name = archive.name
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = member_path(staging, info.filename, name)
            mode = info.external_attr >> 16
            if info.flag_bits & 0x1:
                raise DataError(f"{name} is password-protected ({info.filename}); unzip it by hand with its password "
                                "(e.g. ObjectNet's, from its site), then run robustlab data check on the folder.")
            if info.is_dir():
                writer.parent_of(path / "x")
            elif stat.S_ISLNK(mode):
                target = zf.read(info).decode("utf-8", "replace")
                _check_link(staging, path, target, info.filename, name)
                writer.parent_of(path)
                os.symlink(target, path)
            elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: a zip that records no file type
                raise UnsafeArchive(f"{name} has a special member ({info.filename!r}); refused: nothing extracted.")
            else:
                with zf.open(info) as source:
                    writer.file(path, source, mode)


def archive_kind(path: Path) -> str:
    """``tar`` or ``zip`` by the file's content (a DataError when it is neither)."""
    if zipfile.is_zipfile(path):
        return "zip"
    try:
        if tarfile.is_tarfile(path):
            return "tar"
    except (OSError, tarfile.TarError):
        pass
    with open(path, "rb") as fh:
        head = fh.read(512)
    from .download import looks_like_html

    what = "an HTML page" if looks_like_html("", head) else "neither a tar nor a zip archive"
    raise DataError(f"{path} is {what}; it cannot be extracted. Delete it and fetch again.")


def _merge(src: Path, dst: Path) -> None:
    """Move the tree ``src`` into ``dst`` (folders merged, files replaced)."""
    if src.is_dir() and not src.is_symlink() and dst.is_dir() and not dst.is_symlink():
        for entry in list(src.iterdir()):
            _merge(entry, dst / entry.name)
        src.rmdir()
    else:
        if dst.is_dir() and not dst.is_symlink():
            shutil.rmtree(dst)
        os.replace(src, dst)


def extract(archive: Path, target: Path, *, cap: int | None = None,
            progress: Callable[[int], None] | None = None) -> Extracted:
    """Extract ``archive`` into ``target`` safely (see the module docstring).

    Raises
    ------
    UnsafeArchive
        A member is unsafe; nothing was extracted.
    DataError
        The file is not an archive, is corrupt, or the disk is full (nothing half-written is left).
    """
    kind = archive_kind(archive)
    target.mkdir(parents=True, exist_ok=True)
    staging = target / f".{archive.name}.extract.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    writer = _Writer(staging, archive.name, size_cap(archive) if cap is None else cap, progress)
    try:
        (_tar if kind == "tar" else _zip)(archive, staging, writer)
        tops = tuple(sorted(p.name for p in staging.iterdir()))
        for top in tops:
            _merge(staging / top, target / top)
        staging.rmdir()
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise DataError(f"{archive} is corrupt or truncated ({exc}); nothing was extracted. Delete it and fetch "
                        "again.") from None
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise DataError(explain_os_error(exc, target, f"extract {archive.name}") + " Nothing was extracted.") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Extracted(tops, writer.files, writer.bytes)
