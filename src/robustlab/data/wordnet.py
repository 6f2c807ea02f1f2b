"""Class mapping through the WordNet hierarchy: which ILSVRC-1k classes lie below a synset.

ImageNet-Vid-Robust and YTBB-Robust score 1000-way ImageNet classifiers on coarser label
sets (30 VID classes, 24 YouTube-BB classes). The authors map each ImageNet class to the
target class whose WordNet synset is among its hypernyms. The hierarchy needed for that (the
hypernym closure of the 1,000 ILSVRC-2012 synsets in WordNet 3.0) ships with robustlab in
``data/wordnet/ilsvrc1k_hypernyms.json.gz`` (built by ``scripts/build_wordnet_data.py``), so
nothing is downloaded at run time.

Synsets are WordNet 3.0 noun wnids, ``"n"`` + the 8-digit offset (``"n02084071"`` = dog).
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources

from ..errors import InputError

DATA_FILE = "ilsvrc1k_hypernyms.json.gz"

#: The 30 ImageNet-VID classes in VID index order: (name, WordNet synset).
VID_CLASSES: tuple[tuple[str, str], ...] = (
    ("airplane", "n02691156"), ("antelope", "n02419796"), ("bear", "n02131653"),
    ("bicycle", "n02834778"), ("bird", "n01503061"), ("bus", "n02924116"),
    ("car", "n02958343"), ("cattle", "n02402425"), ("dog", "n02084071"),
    ("domestic_cat", "n02121808"), ("elephant", "n02503517"), ("fox", "n02118333"),
    ("giant_panda", "n02510455"), ("hamster", "n02342885"), ("horse", "n02374451"),
    ("lion", "n02129165"), ("lizard", "n01674464"), ("monkey", "n02484322"),
    ("motorcycle", "n03790512"), ("rabbit", "n02324045"), ("red_panda", "n02509815"),
    ("sheep", "n02411705"), ("snake", "n01726692"), ("squirrel", "n02355227"),
    ("tiger", "n02129604"), ("train", "n04468005"), ("turtle", "n01662784"),
    ("watercraft", "n04530566"), ("whale", "n02062744"), ("zebra", "n02391049"),
)
#: VID synsets in VID index order.
VID_SYNSETS: tuple[str, ...] = tuple(s for _, s in VID_CLASSES)

#: The 24 YouTube-BoundingBoxes classes in YTBB-Robust's index order
#: (``ytbb_class_index.json``; index 22 is "none", 23 is "car").
YTBB_CLASS_NAMES: tuple[str, ...] = (
    "person", "bird", "bicycle", "boat", "bus", "bear", "cow", "cat", "giraffe",
    "potted plant", "horse", "motorcycle", "knife", "airplane", "skateboard", "train",
    "truck", "zebra", "toilet", "dog", "elephant", "umbrella", "none", "car",
)
#: A WordNet synset per YTBB class (None for "none"). With these, ``class_index_map`` gives
#: exactly YTBB-Robust's released ``class_idx_map.json`` (231 ImageNet classes; cow, giraffe,
#: skateboard and toilet have no ILSVRC-1k class below them).
YTBB_SYNSETS: tuple[str | None, ...] = (
    "n00007846",  # person
    "n01503061",  # bird
    "n02834778",  # bicycle
    "n02858304",  # boat
    "n02924116",  # bus
    "n02131653",  # bear
    "n01887787",  # cow: cattle, cows, kine (no ILSVRC-1k class below)
    "n02121620",  # cat: true cat (domestic cats and wildcats such as cougar, lynx)
    "n02439033",  # giraffe
    "n00017222",  # potted plant: plant, flora
    "n02374451",  # horse
    "n03790512",  # motorcycle
    "n03623556",  # knife
    "n02691156",  # airplane
    "n04225987",  # skateboard
    "n04468005",  # train
    "n04490091",  # truck
    "n02391049",  # zebra
    "n04446276",  # toilet
    "n02084071",  # dog
    "n02503517",  # elephant
    "n04507155",  # umbrella
    None,         # none
    "n02958343",  # car
)


@functools.lru_cache(maxsize=1)
def _hierarchy() -> dict:
    blob = resources.files(__package__).joinpath("wordnet", DATA_FILE).read_bytes()
    return json.loads(gzip.decompress(blob))


def ilsvrc_wnids() -> list[str]:
    """The 1,000 ILSVRC-2012 wnids in class-index order (index i = logit column i)."""
    return list(_hierarchy()["ilsvrc_wnids"])


def synset_name(synset: str) -> str:
    """First lemma of a synset in the shipped hierarchy (``"n02084071"`` -> ``"dog"``)."""
    names = _hierarchy()["names"]
    if synset not in names:
        raise InputError(f"synset {synset!r} is not an ILSVRC-1k class or one of their "
                         "hypernyms in WordNet 3.0; give a wnid like 'n02084071'.")
    return names[synset]


def synset_names() -> dict[str, str]:
    """``{synset: first lemma}`` of every synset in the shipped hierarchy (the 1,000 ILSVRC
    classes and all their WordNet 3.0 hypernyms), e.g. ``{"n02084071": "dog", ...}``."""
    return dict(_hierarchy()["names"])


@functools.lru_cache(maxsize=1)
def _ancestor_distances() -> tuple[dict[str, int], ...]:
    """Per ILSVRC class (index order): {ancestor synset (itself included): fewest hypernym steps}."""
    parents = _hierarchy()["parents"]
    result = []
    for wnid in _hierarchy()["ilsvrc_wnids"]:
        distances = {wnid: 0}
        frontier = [wnid]
        while frontier:  # breadth first: the first visit of a synset is its shortest distance
            nxt = []
            for node in frontier:
                for parent in parents[node]:
                    if parent not in distances:
                        distances[parent] = distances[node] + 1
                        nxt.append(parent)
            frontier = nxt
        result.append(distances)
    return tuple(result)


def _check_synset(synset: object) -> str:
    if not (isinstance(synset, str) and len(synset) == 9 and synset[0] == "n"
            and synset[1:].isdigit()):
        raise InputError(f"synset {synset!r} is not a WordNet noun wnid; write it as 'n' + "
                         "8 digits, e.g. 'n02084071' for dog.")
    return synset


def imagenet_indices_below(synsets: Iterable[str]) -> dict[str, list[int]]:
    """ILSVRC-1k class indices whose synset is ``s`` or has ``s`` as a hypernym, per ``s``.

    Parameters
    ----------
    synsets : iterable of str
        WordNet 3.0 noun wnids (``"n02084071"``). A synset that is not above any ILSVRC class
        gets an empty list (e.g. giraffe: ImageNet-1k has no giraffe class).

    Returns
    -------
    dict of str to list of int
        ``{synset: sorted ImageNet indices 0..999}``, in the order given.
    """
    ancestors = _ancestor_distances()
    return {
        s: [i for i, anc in enumerate(ancestors) if s in anc]
        for s in map(_check_synset, synsets)
    }


def class_index_map(target_synsets: Sequence[str | None]) -> dict[int, int]:
    """Map ImageNet-1k indices to target class indices through the WordNet hierarchy.

    Each ImageNet class goes to the target whose synset is among its hypernyms (or is its
    own synset). When several targets are above it (WordNet is a DAG: a minivan is both a
    car and a van, a kind of truck), the nearest one wins, counted in hypernym steps.

    Parameters
    ----------
    target_synsets : sequence of str or None
        Target class ``t`` is ``target_synsets[t]``; None marks a class with no synset (e.g.
        YTBB's "none"), which no ImageNet class maps to.

    Returns
    -------
    dict of int to int
        ``{ImageNet index: target index}`` for every ImageNet class below some target, sorted
        by ImageNet index (the layout of ImageNet-Vid-Robust's ``class_idx_map.json``).
        ImageNet classes below no target are absent (they can never be predicted).

    Raises
    ------
    InputError
        When an ImageNet class lies equally near below two targets (e.g. one target listed
        twice), naming both; remove one of them.
    """
    for synset in target_synsets:
        if synset is not None:
            _check_synset(synset)
    mapping: dict[int, int] = {}
    for index, distances in enumerate(_ancestor_distances()):
        candidates = sorted((distances[s], t) for t, s in enumerate(target_synsets)
                            if s is not None and s in distances)
        if not candidates:
            continue
        if len(candidates) > 1 and candidates[0][0] == candidates[1][0]:
            (_, first), (_, second) = candidates[:2]
            raise InputError(
                f"ImageNet class {index} ({ilsvrc_wnids()[index]}) lies equally near below two "
                f"targets: {first} ({target_synsets[first]}) and {second} "
                f"({target_synsets[second]}). Remove or replace one of them.")
        mapping[index] = candidates[0][1]
    return mapping


def reverse_class_index_map(mapping: Mapping[int, int]) -> dict[int, list[int]]:
    """``{target index: [ImageNet indices]}`` from an ``{ImageNet index: target index}`` map."""
    reverse: dict[int, list[int]] = {}
    for imagenet_index, target in sorted(mapping.items()):
        reverse.setdefault(int(target), []).append(int(imagenet_index))
    return dict(sorted(reverse.items()))
