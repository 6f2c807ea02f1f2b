"""Subtype robustness (ImageNet-C paper, Hendrycks & Dietterich 2019, appendix): 25 broad WordNet
types, their *seen* subtypes (ImageNet-1K classes below them) and *unseen* subtypes (ImageNet-22K
classes below them that ImageNet-1K lacks).

A classifier's last layer is fine-tuned on images of the seen subtypes to predict the broad type
(``robustlab finetune --classes subtypes25 --train head``); its accuracy on held-out images of the
seen subtypes is compared with its accuracy on the unseen subtypes.

The 25 types are those of the reference code (hendrycks/robustness,
``auxiliary/ImageNet22K/test.py``, one wnid per type in its comments). Here their subtypes come
from WordNet 3.0 (the shipped hyponym closure below the 25, ``wordnet/subtypes25.json.gz``, built
by ``scripts/build_subtype_data.py``) instead of the reference's hand-written lists: a folder of
an ImageNet-22K copy (``<root>/<wnid>/<image>``, the fall11 layout) belongs to the type above it.

:func:`split_imagenet22k` lists such a folder into ``train.txt`` (seen subtypes, for fine-tuning),
``seen.txt`` (held-out seen images) and ``unseen.txt``, plus ``subtypes.json`` (the type of every
folder used, with counts), which the ``subtype-robustness`` benchmark reads.
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

__all__ = ["LAYOUT", "SPLIT_FILE", "SUBTYPE_CLASSES", "SubtypeHierarchy", "SubtypeSplit", "broad_type_index",
           "load_split", "shipped_hierarchy", "split_imagenet22k", "write_split"]

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


@dataclass
class SubtypeSplit:
    """The images of an ImageNet-22K folder by role. Paths are relative to ``root``.

    ``types``: ``{wnid: broad type index}`` of every folder used; ``seen_wnids`` /
    ``unseen_wnids``: which of them are ImageNet-1K classes; ``ignored``: folders below no
    broad type (or below two).
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

    def summary(self) -> dict:
        per_type = []
        for i, (name, wnid) in enumerate(self.broad_types):
            per_type.append({"type": name, "wnid": wnid,
                             "seen_subtypes": [w for w in self.seen_wnids if self.types[w] == i],
                             "unseen_subtypes": [w for w in self.unseen_wnids if self.types[w] == i]})
        return {"format": "robustlab-subtypes/1", "root": self.root, "holdout": self.holdout, "seed": self.seed,
                "broad_types": [list(t) for t in self.broad_types], "types": self.types,
                "images": {"train": len(self.train), "seen": len(self.seen), "unseen": len(self.unseen)},
                "ignored_folders": self.ignored, "per_type": per_type}


def _held_out(seed: int, relative: str, holdout: float) -> bool:
    digest = hashlib.blake2b(f"{seed}\x1f{relative}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64 < holdout


def split_imagenet22k(root: str | os.PathLike, *, holdout: float = 0.2, seed: int = 0,
                      hierarchy: SubtypeHierarchy | None = None) -> SubtypeSplit:
    """Sort the wnid folders of an ImageNet-22K copy into seen and unseen subtypes of the broad types.

    Parameters
    ----------
    root : path
        ``<root>/<wnid>/<image>``; folders that are no wnid are refused, folders below no broad
        type are ignored (counted).
    holdout : float
        Fraction of each seen subtype's images kept out of training for the seen accuracy (by a
        hash of ``seed`` and the image's path: the same split on every machine).
    hierarchy : SubtypeHierarchy, optional
        Default: the shipped WordNet 3.0 closure.

    Raises
    ------
    DataError
        ``root`` missing or not in :data:`LAYOUT`, or holding no seen or no unseen subtype.
    """
    if not 0 < holdout < 1:
        raise InputError(f"holdout must be a fraction in (0, 1); got {holdout!r}.")
    h = hierarchy or shipped_hierarchy()
    base = Path(root).expanduser().resolve()
    if not base.is_dir():
        raise DataError(f"ImageNet-22K folder {base} does not exist; it must be {LAYOUT}.")
    folders = sorted(e.name for e in os.scandir(base) if e.is_dir() and not e.name.startswith("."))
    bad = [f for f in folders if not _WNID.fullmatch(f)]
    if bad or not folders:
        raise DataError(f"{base} is not in the layout {LAYOUT}: "
                        + (f"folder {bad[0]!r} is not a wnid." if bad else "it has no class folders."))
    ilsvrc = set(ilsvrc_wnids())
    split = SubtypeSplit(str(base), h.broad_types, holdout=holdout, seed=seed)
    for wnid in folders:
        t = broad_type_index(wnid, h)
        if t is None:
            split.ignored += 1
            continue
        files = sorted(f"{wnid}/{e.name}" for e in os.scandir(base / wnid) if e.is_file() and is_image_file(e.name))
        if not files:
            continue
        split.types[wnid] = t
        if wnid in ilsvrc:
            split.seen_wnids.append(wnid)
            for f in files:
                (split.seen if _held_out(seed, f, holdout) else split.train).append(f)
        else:
            split.unseen_wnids.append(wnid)
            split.unseen.extend(files)
    if not split.train or not split.seen:
        raise DataError(f"{base} has no images of seen subtypes (ImageNet-1K classes below the 25 broad types) "
                        "for both training and the held-out seen accuracy; it must hold the 1K classes' folders too.")
    if not split.unseen:
        raise DataError(f"{base} has no images of unseen subtypes (ImageNet-22K classes below the broad types that "
                        "ImageNet-1K lacks).")
    return split


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
    if meta.get("format") != "robustlab-subtypes/1":
        raise DataError(f"{path} is not a robustlab subtype split (format {meta.get('format')!r}).")
    return meta, lists
