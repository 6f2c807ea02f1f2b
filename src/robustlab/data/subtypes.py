"""Subtype robustness (ImageNet-C paper, Hendrycks & Dietterich 2019, Appendix G): 25 broad WordNet
types, their *seen* subtypes (ImageNet-1K classes below them) and *unseen* subtypes (ImageNet-22K
classes below them that ImageNet-1K lacks).

A classifier's last layer is fine-tuned on images of the seen subtypes to predict the broad type
(``robustlab finetune --classes subtypes25``, the reference's recipe by default); its accuracy on
ImageNet-1K val images of the seen subtypes is compared with its accuracy on the unseen subtypes.

The 25 types are those of the reference code (hendrycks/robustness,
``old/auxiliary/ImageNet22K/test.py``, one wnid per type in its comments). Which subtypes belong to
them (``lists``):

- ``reference`` (default): the reference's own hand-written lists, shipped with its commit
  (``subtypes_reference.json``: 542 seen, 5,017 unseen; :func:`reference_lists`);
- ``wordnet``: every synset below a type in WordNet 3.0 (the shipped hyponym closure below the
  25, ``wordnet/subtypes25.json.gz``, built by ``scripts/build_subtype_data.py``), a superset.

Where the seen images come from (``seen_from``):

- ``val`` (default, as the reference): ImageNet-1K val (``clean_data``, ``<val>/<wnid>/<image>``);
  the training images are the ImageNet-22K copy's folders of the seen subtypes (or an ImageNet-1K
  train folder, ``train_data``, as the reference trains);
- ``holdout``: a share of the 22K copy's seen folders held out by hash. In the fall11 release those
  folders hold the very images ImageNet-1K models were trained on, so seen accuracy may include
  training images: the split, the run and the report say so.

:func:`split_imagenet22k` lists the images into ``train.txt``, ``seen.txt`` and ``unseen.txt``,
plus ``subtypes.json`` (the type of every folder used, with counts and the choices above), which
the ``subtype-robustness`` benchmark reads.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import DataError, InputError
from ..fsutil import atomic_write_text
from .images import is_image_file
from .wordnet import ilsvrc_wnids

__all__ = ["LAYOUT", "LISTS", "SEEN_FROM", "SPLIT_FILE", "SUBTYPE_CLASSES", "SubtypeHierarchy", "SubtypeLists",
           "SubtypeSplit", "broad_type_index", "load_split", "reference_lists", "shipped_hierarchy", "split_imagenet22k",
           "wordnet_lists", "write_split"]

#: The 25 broad types (WordNet first lemma, wnid), in the reference's order; ``--classes subtypes25``.
SUBTYPE_CLASSES: tuple[tuple[str, str], ...] = (
    ("amphibian", "n01627424"), ("appliance", "n02729837"), ("aquatic_mammal", "n02062017"), ("bird", "n01503061"),
    ("bear", "n02131653"), ("beverage", "n07881800"), ("big_cat", "n02127808"), ("building", "n02913152"),
    ("cat", "n02121620"), ("clothing", "n03051540"), ("dog", "n02084071"), ("electronic_equipment", "n03278248"),
    ("fish", "n02512053"), ("footwear", "n03380867"), ("fruit", "n13134947"), ("fungus", "n12992868"),
    ("geological_formation", "n09287968"), ("ungulate", "n02370806"), ("insect", "n02159955"),
    ("musical_instrument", "n03800933"), ("primate", "n02469914"), ("reptile", "n01661091"),
    ("utensil", "n04516672"), ("vegetable", "n07707451"), ("wheeled_vehicle", "n04576211"),
)
LAYOUT = "<root>/<WordNet wnid, e.g. n02084071>/<image> (the ImageNet-22K / fall11 layout)"
SPLIT_FILE = "subtypes.json"
SPLIT_FORMAT = "robustlab-subtypes/2"
#: Which subtype lists a split uses, and where its seen images come from (see the module docstring).
LISTS = ("reference", "wordnet")
SEEN_FROM = ("val", "holdout")
#: What the split, the run and the report say when the seen images are held out of the 22K copy.
HOLDOUT_WARNING = ("seen accuracy may include training images: the seen images were held out of the ImageNet-22K "
                   "copy's folders of ImageNet-1K classes, which in the fall11 release hold ImageNet-1K's training "
                   "images (the reference tests seen subtypes on ImageNet-1K val: robustlab subtypes --clean-data VAL)")
_WNID = re.compile(r"n\d{8}")


@dataclass(frozen=True)
class SubtypeHierarchy:
    """A WordNet-shaped DAG for the experiment: the broad types and ``{wnid: [parent wnids]}``
    for every synset below them (the shipped one, or a small one in tests)."""

    broad_types: tuple[tuple[str, str], ...]
    parents: Mapping[str, Sequence[str]]


@functools.lru_cache(maxsize=1)
def shipped_hierarchy() -> SubtypeHierarchy:
    """The WordNet 3.0 closure below the 25 broad types (6,081 synsets)."""
    blob = resources.files(__package__).joinpath("wordnet", "subtypes25.json.gz").read_bytes()
    data = json.loads(gzip.decompress(blob))
    return SubtypeHierarchy(tuple((n, w) for w, n in data["broad_types"]), data["parents"])


def broad_type_index(wnid: str, hierarchy: SubtypeHierarchy | None = None) -> int | None:
    """Index (in ``hierarchy.broad_types``) of the broad type nearest above ``wnid`` (itself
    included); None when no type is above it, or two are equally near (the subtype is ambiguous)."""
    h = hierarchy or shipped_hierarchy()
    index = {w: i for i, (_, w) in enumerate(h.broad_types)}
    if wnid not in h.parents and wnid not in index:
        return None
    frontier, seen = [wnid], {wnid}
    while frontier:
        found = sorted({index[w] for w in frontier if w in index})
        if found:
            return found[0] if len(found) == 1 else None
        nxt = []
        for w in frontier:
            for p in h.parents.get(w, ()):
                if p not in seen:
                    seen.add(p)
                    nxt.append(p)
        frontier = nxt
    return None


@dataclass(frozen=True)
class SubtypeLists:
    """Which broad type each seen and unseen subtype belongs to (``{wnid: type index}``), and
    whose lists they are (``reference`` or ``wordnet``). ``type_of(wnid)`` is None for a folder
    that belongs to no type."""

    name: str
    broad_types: tuple[tuple[str, str], ...]
    seen: Mapping[str, int]
    unseen: Mapping[str, int]

    def type_of(self, wnid: str) -> int | None:
        return self.seen.get(wnid, self.unseen.get(wnid))


@functools.lru_cache(maxsize=1)
def _reference_data() -> dict:
    return json.loads(resources.files(__package__).joinpath("subtypes_reference.json").read_text(encoding="utf-8"))


def reference_lists() -> SubtypeLists:
    """The reference's lists (hendrycks/robustness, ``test.py``'s ``im1k_classes`` and ``im22k_classes``,
    shipped with its commit): 542 seen and 5,017 unseen subtypes. A wnid listed under two types would
    take the first, as the reference's loop does (none is)."""
    data = _reference_data()
    seen: dict[str, int] = {}
    unseen: dict[str, int] = {}
    for table, lists in ((seen, data["seen"]), (unseen, data["unseen"])):
        for t, wnids in enumerate(lists):
            for w in wnids:
                table.setdefault(w, t)
    return SubtypeLists("reference", SUBTYPE_CLASSES, seen, unseen)


def reference_source() -> str:
    """Where :func:`reference_lists` come from: repository, commit and file."""
    return _reference_data()["source"]


def wordnet_lists(wnids: Sequence[str], hierarchy: SubtypeHierarchy | None = None) -> SubtypeLists:
    """The WordNet-derived lists over ``wnids`` (the folders of a 22K copy): each belongs to the broad
    type nearest above it (:func:`broad_type_index`), seen when it is an ImageNet-1K class."""
    h = hierarchy or shipped_hierarchy()
    ilsvrc = set(ilsvrc_wnids())
    seen, unseen = {}, {}
    for w in wnids:
        t = broad_type_index(w, h)
        if t is not None:
            (seen if w in ilsvrc else unseen)[w] = t
    return SubtypeLists("wordnet", h.broad_types, seen, unseen)


@dataclass
class SubtypeSplit:
    """The images of an experiment by role (absolute paths when written; relative to ``root`` for
    the 22K copy's images while listing).

    ``types``: ``{wnid: broad type index}`` of every subtype used; ``seen_wnids`` /
    ``unseen_wnids``: which of them are seen (ImageNet-1K classes); ``ignored``: folders of the
    22K copy in no list; ``lists`` and ``seen_from``: the choices (module docstring).
    """

    root: str
    broad_types: tuple[tuple[str, str], ...]
    types: dict[str, int] = field(default_factory=dict)
    seen_wnids: list[str] = field(default_factory=list)
    unseen_wnids: list[str] = field(default_factory=list)
    train: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)
    ignored: int = 0
    holdout: float = 0.2
    seed: int = 0
    lists: str = "reference"
    seen_from: str = "val"
    clean_data: str | None = None
    train_data: str | None = None
    missing_seen: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        per_type = []
        for i, (name, wnid) in enumerate(self.broad_types):
            per_type.append({"type": name, "wnid": wnid,
                             "seen_subtypes": [w for w in self.seen_wnids if self.types[w] == i],
                             "unseen_subtypes": [w for w in self.unseen_wnids if self.types[w] == i]})
        out = {"format": SPLIT_FORMAT, "root": self.root, "lists": self.lists, "seen_from": self.seen_from,
               "clean_data": self.clean_data, "train_data": self.train_data, "seed": self.seed,
               "holdout": self.holdout if self.seen_from == "holdout" else None,
               "broad_types": [list(t) for t in self.broad_types], "types": self.types,
               "images": {"train": len(self.train), "seen": len(self.seen), "unseen": len(self.unseen)},
               "ignored_folders": self.ignored, "seen_subtypes_without_images": self.missing_seen,
               "per_type": per_type}
        if self.lists == "reference":
            out["lists_source"] = reference_source()
        if self.seen_from == "holdout":
            out["warning"] = HOLDOUT_WARNING
        return out


def _held_out(seed: int, relative: str, holdout: float) -> bool:
    digest = hashlib.blake2b(f"{seed}\x1f{relative}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64 < holdout


def _wnid_folders(base: Path, what: str) -> list[str]:
    """The wnid folders of ``base`` (DataError when it is missing, empty or holds other folders)."""
    if not base.is_dir():
        raise DataError(f"{what} {base} does not exist; it must be {LAYOUT}.")
    folders = sorted(e.name for e in os.scandir(base) if e.is_dir() and not e.name.startswith("."))
    bad = [f for f in folders if not _WNID.fullmatch(f)]
    if bad or not folders:
        raise DataError(f"{what} {base} is not in the layout {LAYOUT}: "
                        + (f"folder {bad[0]!r} is not a wnid." if bad else "it has no class folders."))
    return folders


def _images(base: Path, wnid: str) -> list[str]:
    folder = base / wnid
    if not folder.is_dir():
        return []
    return sorted(str(folder / e.name) for e in os.scandir(folder) if e.is_file() and is_image_file(e.name))


def _check_choices(lists: str, seen_from: str, holdout: float, clean_data) -> None:
    if lists not in LISTS:
        raise InputError(f"unknown subtype lists {lists!r}; use reference (the paper's, default) or wordnet.")
    if seen_from not in SEEN_FROM:
        raise InputError(f"unknown seen_from {seen_from!r}; use val (ImageNet-1K val, default) or holdout.")
    if seen_from == "val" and clean_data is None:
        raise InputError("the seen subtypes are tested on ImageNet-1K val, as the reference does: give --clean-data "
                         "<ImageNet val folder, <val>/<wnid>/<image>>. (--seen-from holdout holds out images of the "
                         "22K copy instead, which may be the models' training images.)")
    if seen_from == "holdout" and not 0 < holdout < 1:
        raise InputError(f"holdout must be a fraction in (0, 1); got {holdout!r}.")


def split_imagenet22k(root: str | os.PathLike, *, clean_data: str | os.PathLike | None = None,
                      train_data: str | os.PathLike | None = None, lists: str = "reference", seen_from: str = "val",
                      holdout: float = 0.2, seed: int = 0, hierarchy: SubtypeHierarchy | None = None) -> SubtypeSplit:
    """Sort the images of an ImageNet-22K copy (and ImageNet-1K val) into the experiment's roles.

    Parameters
    ----------
    root : path
        The 22K copy, ``<root>/<wnid>/<image>``: the unseen subtypes' images, and the training
        images of the seen ones (unless ``train_data``). Folders that are no wnid are refused;
        folders in no list are ignored (counted).
    clean_data : path
        ImageNet-1K val in wnid folders: the seen subtypes' test images (``seen_from="val"``).
    train_data : path, optional
        ImageNet-1K train in wnid folders, to train on (as the reference) instead of the 22K copy's
        folders of the seen subtypes.
    lists : {"reference", "wordnet"}
    seen_from : {"val", "holdout"}
    holdout : float
        With ``seen_from="holdout"``: the fraction of each seen subtype's images held out (by a hash
        of ``seed`` and the path: the same split on every machine).
    hierarchy : SubtypeHierarchy, optional
        For ``lists="wordnet"`` (default: the shipped WordNet 3.0 closure).

    Raises
    ------
    InputError
        Unknown choices, or ``seen_from="val"`` without ``clean_data``.
    DataError
        A folder missing or not in :data:`LAYOUT`, or no images for training, seen or unseen.
    """
    _check_choices(lists, seen_from, holdout, clean_data)
    base = Path(root).expanduser().resolve()
    folders = _wnid_folders(base, "ImageNet-22K folder")
    chosen = reference_lists() if lists == "reference" else wordnet_lists(folders, hierarchy)
    split = SubtypeSplit(str(base), chosen.broad_types, holdout=holdout, seed=seed, lists=lists, seen_from=seen_from)
    val = train = None
    if seen_from == "val":
        val = Path(clean_data).expanduser().resolve()
        _wnid_folders(val, "ImageNet-1K val folder (--clean-data)")
        split.clean_data = str(val)
    if train_data is not None:
        train = Path(train_data).expanduser().resolve()
        _wnid_folders(train, "ImageNet-1K train folder (--train-data)")
        split.train_data = str(train)
    present = set(folders)
    split.ignored = sum(1 for f in folders if chosen.type_of(f) is None)
    for wnid, t in chosen.seen.items():
        train_files = _images(train or base, wnid)
        if seen_from == "val":
            test_files = _images(val, wnid)
        else:
            held = [_held_out(seed, os.path.relpath(f, base), holdout) for f in train_files]
            test_files = [f for f, h in zip(train_files, held) if h]
            train_files = [f for f, h in zip(train_files, held) if not h]
        if not train_files and not test_files:
            split.missing_seen.append(wnid)
            continue
        split.types[wnid] = t
        split.seen_wnids.append(wnid)
        split.train.extend(train_files)
        split.seen.extend(test_files)
    for wnid, t in chosen.unseen.items():
        files = _images(base, wnid) if wnid in present else []
        if files:
            split.types[wnid] = t
            split.unseen_wnids.append(wnid)
            split.unseen.extend(files)
    _check_split(split, base, val, train)
    return split


def _check_split(split: SubtypeSplit, base: Path, val: Path | None, train: Path | None) -> None:
    if not split.train:
        raise DataError(f"{train or base} has no images of the seen subtypes (ImageNet-1K classes below the 25 broad "
                        "types) to train on; it must hold their wnid folders.")
    if not split.seen:
        where = f"{val} (--clean-data)" if val is not None else str(base)
        raise DataError(f"{where} has no images of the seen subtypes to test on; it must hold ImageNet-1K val's wnid "
                        "folders of them.")
    if not split.unseen:
        raise DataError(f"{base} has no images of unseen subtypes (ImageNet-22K classes below the broad types that "
                        "ImageNet-1K lacks).")


def write_split(split: SubtypeSplit, out: str | os.PathLike) -> Path:
    """Write ``train.txt``, ``seen.txt``, ``unseen.txt`` (absolute image paths, one a line: listings
    ``robustlab finetune --data`` reads) and ``subtypes.json`` into ``out``; return ``out``."""
    dst = Path(out).expanduser().resolve()
    texts = {f"{name}.txt": "\n".join(os.path.join(split.root, f) for f in getattr(split, name)) + "\n"
             for name in ("train", "seen", "unseen")}
    texts[SPLIT_FILE] = json.dumps(split.summary(), indent=1)
    check_no_other_split(dst, texts)
    dst.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        atomic_write_text(dst / name, text)
    return dst


def check_no_other_split(dst: Path, texts: dict[str, str]) -> None:
    """Refuse to replace a split that ``dst`` holds with another one (the same split again is
    fine): a model fine-tuned on the old ``train.txt`` would then meet its own training images
    among the new split's held-out ones, and nothing would say so."""
    present = [name for name in texts if (dst / name).exists()]
    if not present:
        return
    differ = []
    for name in present:
        try:
            old = (dst / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            old = None
        if old != texts[name]:
            differ.append(name)
    if differ:
        raise InputError(f"{dst} holds another subtype split already ({', '.join(differ)} differ): replacing it would "
                         "put images a model was fine-tuned on (the old train.txt) into the new held-out seen set. "
                         "Write the new split to another folder, or delete the old one first if nothing was trained "
                         "on it.")


def load_split(folder: str | os.PathLike) -> tuple[dict, dict[str, list[str]]]:
    """``(subtypes.json, {"seen": [...], "unseen": [...]})`` of a folder :func:`write_split` wrote
    (absolute image paths); DataError naming the command that makes one otherwise."""
    base = Path(folder).expanduser()
    path = base / SPLIT_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        lists = {k: [ln for ln in (base / f"{k}.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
                 for k in ("seen", "unseen")}
    except (OSError, ValueError) as exc:
        raise DataError(f"{base} is not a subtype split ({SPLIT_FILE}, seen.txt, unseen.txt): {exc}. Make one with "
                        "`robustlab subtypes IMAGENET22K_FOLDER OUT`.") from None
    if meta.get("format") not in ("robustlab-subtypes/1", SPLIT_FORMAT):
        raise DataError(f"{path} is not a robustlab subtype split (format {meta.get('format')!r}).")
    if meta["format"] == "robustlab-subtypes/1":  # made before the choices existed: WordNet lists, held-out seen images
        meta = {**meta, "lists": "wordnet", "seen_from": "holdout", "warning": HOLDOUT_WARNING}
    return meta, lists
