"""The catalog's records: a released set, its archives, where their checksums come from, and the
layout a complete copy has after extraction. The facts themselves live in :mod:`.sets`.

Every fact names its source. A checksum is recorded only when it was read from the publisher's
own page (:class:`Checksum` with that page as ``source``); otherwise the archive's
``checksum_note`` says which of three cases holds: none is published, one is published and
``robustlab data fetch`` reads it from the publisher's record when it downloads (Zenodo, the
Hugging Face Hub), or one is published but was not read into this catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...errors import InputError, unknown_name

#: What ``access`` may say of a set: fetched by robustlab (``open``); behind an agreement or a
#: registration (``agreement``: robustlab never fetches it); published where robustlab cannot fetch
#: it (``manual``: a Google Drive folder, a login); not published at all, made locally (``make``).
ACCESS = ("open", "agreement", "manual", "make")
#: Checksum notes (the three cases where the catalog holds no checksum value).
NONE_PUBLISHED = "none published"
READ_WHEN_FETCHING = "published by the host; read from its record when fetching"
NOT_READ = "published, but not read into this catalog"


@dataclass(frozen=True)
class Checksum:
    """A checksum as its publisher gives it: ``algorithm`` (``md5``, ``sha256``), the hex
    ``value`` and the page it was read from (``source``)."""

    algorithm: str
    value: str
    source: str

    def __post_init__(self) -> None:
        if self.algorithm not in ("md5", "sha256"):
            raise InputError(f"checksum algorithm must be md5 or sha256; got {self.algorithm!r}.")

    def text(self) -> str:
        return f"{self.algorithm}:{self.value}"


@dataclass(frozen=True)
class Archive:
    """One published file.

    Attributes
    ----------
    name : str
        The file name as published (``noise.tar``).
    urls : tuple of str
        The official URL first, then mirrors, in the order ``fetch`` tries them.
    part : str, optional
        The name ``--parts`` selects it by (None: the set has one archive, always fetched).
    contains : tuple of str
        The top-level folders (or files) it extracts: what a check of a partial copy expects.
    size : int, optional
        Bytes, as the publisher gives them (None: not published, or shown only rounded).
    size_text : str
        The size as shown where it is not exact (``"1.26 GB (rounded, as the page shows)"``).
    checksum : Checksum, optional
        The published checksum, when read into this catalog.
    checksum_note : str
        Why there is no ``checksum`` (:data:`NONE_PUBLISHED`, :data:`READ_WHEN_FETCHING`,
        :data:`NOT_READ`), with detail.
    """

    name: str
    urls: tuple[str, ...]
    part: str | None = None
    contains: tuple[str, ...] = ()
    size: int | None = None
    size_text: str = ""
    checksum: Checksum | None = None
    checksum_note: str = ""

    def checksum_text(self) -> str:
        """The checksum with its source, or the note saying why there is none."""
        if self.checksum is not None:
            return f"{self.checksum.text()} (from {self.checksum.source})"
        return self.checksum_note or NONE_PUBLISHED


@dataclass(frozen=True)
class Layout:
    """What a complete copy holds after extraction.

    Attributes
    ----------
    description : str
        The layout in one line (``<corruption>/<severity 1..5>/<wnid>/<image>.JPEG``).
    kind : str
        ``settings``: one image folder per setting (``<setting>/<class>/<file>``; a set that is a
        single image folder has the one setting ``""``); ``arrays``: ``.npy`` files of known
        shapes; ``files``: named files and folders of known file counts.
    settings : tuple of str
        The settings' folders relative to the root (``fog/3``), in release order.
    optional : tuple of str
        Setting folders a copy may hold besides (ImageNet-P's noise difficulties): never missing,
        never extra.
    classes : str or int, optional
        The class folders of every setting: ``imagenet-1k`` (the 1,000 ILSVRC wnids),
        ``imagenet-a`` / ``imagenet-r`` (their 200), ``indices-1000`` (``0``..``999``), a tuple of
        names, or their number; None when not published.
    per_class : int, optional
        Files in every class folder (None: not the same for every class, or not published).
    per_setting : int, optional
        Files in every setting (None: not published).
    extensions : tuple of str
        The files' extensions (lower case).
    arrays : mapping
        ``{file: shape}`` of a layout of kind ``arrays`` (all uint8 but ``labels.npy``).
    required : tuple of str
        Files that must exist, relative to the root (a ``|`` joins alternatives).
    counts : mapping
        ``{folder: number of files}`` of a layout of kind ``files``.
    root_names : tuple of str
        Folder names the archives put the root under (``CIFAR-10-C``): ``check`` is given the
        root or the folder above it.
    source : str
        Where the layout facts come from.
    """

    description: str
    kind: str = "settings"
    settings: tuple[str, ...] = ("",)
    optional: tuple[str, ...] = ()
    classes: str | int | tuple[str, ...] | None = None
    per_class: int | None = None
    per_setting: int | None = None
    extensions: tuple[str, ...] = ()
    arrays: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    root_names: tuple[str, ...] = ()
    source: str = ""

    def class_count(self) -> int | None:
        """How many class folders a setting holds (None: not published)."""
        if isinstance(self.classes, int):
            return self.classes
        if isinstance(self.classes, tuple):
            return len(self.classes)
        return {"imagenet-1k": 1000, "indices-1000": 1000, "imagenet-a": 200, "imagenet-r": 200}.get(self.classes or "")


@dataclass(frozen=True)
class ReleasedSet:
    """A released data set: what it is, where it comes from, on what terms, and what a complete
    copy holds (see the module docstring for the checksum rules).

    ``listing`` names a publisher record whose API lists the files with their sizes and checksums
    (``zenodo:<API URL of the record>``, ``huggingface:<API URL of the repository tree>``): fetch
    reads it before downloading. A set whose ``archives`` is empty takes every file of that record.
    """

    name: str
    title: str
    paper: str
    homepage: str
    benchmarks: tuple[str, ...]
    licence: str
    access: str
    layout: Layout
    archives: tuple[Archive, ...] = ()
    listing: str | None = None
    how_to_get: str = ""
    sources: tuple[str, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        if self.access not in ACCESS:
            raise InputError(f"access of {self.name!r} must be one of {', '.join(ACCESS)}; got {self.access!r}.")

    @property
    def parts(self) -> tuple[str, ...]:
        """The names ``--parts`` takes (empty when the set has no parts)."""
        return tuple(a.part for a in self.archives if a.part)

    def select(self, parts: str | list[str] | tuple[str, ...] | None) -> tuple[Archive, ...]:
        """The archives of ``parts`` (comma-separated or a list; None: all), checked: an unknown part is
        refused with a did-you-mean, naming the set's parts."""
        if parts is None or parts == "" or parts == []:
            return self.archives
        names = [p.strip() for p in (parts.split(",") if isinstance(parts, str) else parts) if p.strip()]
        if not self.parts:
            raise InputError(f"{self.name} has no parts; leave out --parts (its one download is the whole set).")
        for name in names:
            if name not in self.parts:
                raise unknown_name(f"part of {self.name}", name, self.parts)
        return tuple(a for a in self.archives if a.part in names)

    def settings_of(self, archives: tuple[Archive, ...] | None = None) -> tuple[str, ...]:
        """The layout's settings the given archives provide (all of them when ``archives`` is None or
        the archives declare no contents)."""
        chosen = self.archives if archives is None else archives
        tops = {c for a in chosen for c in a.contains}
        if archives is None or not tops:
            return self.layout.settings
        return tuple(s for s in self.layout.settings if s.split("/", 1)[0] in tops)

    @property
    def fetchable(self) -> bool:
        return self.access == "open" and bool(self.archives or self.listing)

    def manual_text(self) -> str:
        """Where to get it by hand and how to check it afterwards."""
        where = self.how_to_get or (", ".join(u for a in self.archives for u in a.urls[:1]) or self.homepage)
        return (f"{where} Then check the copy: robustlab data check {self.name} <folder>.")
