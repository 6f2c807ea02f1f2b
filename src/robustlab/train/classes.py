"""Class subsets through the WordNet map: which classes a fine-tuned model predicts.

``--classes`` names the target classes of a fine-tuning run:

- ``vid30`` (or ``vid``): the 30 ImageNet-VID classes in VID index order (airplane ... zebra), as
  in ImageNet-Vid-Robust's fine-tuning and its Appendix J (training on the ILSVRC images of
  those 30 classes);
- ``subtypes25``: the 25 broad WordNet types of the ImageNet-C paper's subtype experiment
  (:mod:`robustlab.data.subtypes`);
- WordNet noun wnids (``n02084071``) or names (``dog``, ``domestic_cat``), comma-separated:
  any synset of the shipped ILSVRC-1k hierarchy (the 1,000 classes and all their hypernyms);
  a named subset may be one of the items (``vid30,n01440764``).

How a dataset's own classes map onto the targets (:func:`class_mapping`): a class folder named
by an ILSVRC wnid goes to the target synset above it in WordNet (nearest first, as
:func:`robustlab.data.wordnet.class_index_map`), so ``vid30`` over ImageNet's training folders
keeps the 288 ImageNet classes below the 30 VID synsets; any other class goes to the target
with the same name or wnid. Classes that map to no target are left out.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from ..data.subtypes import SUBTYPE_CLASSES
from ..data.wordnet import VID_CLASSES, class_index_map, ilsvrc_wnids, imagenet_indices_below, synset_names
from ..errors import InputError

#: Named subsets accepted by ``--classes``: (name, synset) in index order.
NAMED_SUBSETS: dict[str, tuple[tuple[str, str], ...]] = {"vid30": VID_CLASSES, "vid": VID_CLASSES,
                                                         "subtypes25": SUBTYPE_CLASSES}


@dataclass(frozen=True)
class ClassSubset:
    """Target classes of a fine-tuning run.

    Attributes
    ----------
    names : tuple of str
        Class names in target index order.
    synsets : tuple of str or None
        The WordNet synset of each class (None when a class has none).
    spec : str
        The canonical text of the subset (``vid30`` or comma-separated wnids), as stored.
    """

    names: tuple[str, ...]
    synsets: tuple[str | None, ...]
    spec: str

    def __len__(self) -> int:
        return len(self.names)


def normalize_name(name: str) -> str:
    """Lower case, spaces and dashes as underscores (``Domestic cat`` -> ``domestic_cat``)."""
    return str(name).strip().lower().replace(" ", "_").replace("-", "_")


def _is_wnid(text: str) -> bool:
    return len(text) == 9 and text[0] == "n" and text[1:].isdigit()


def _near_matches(item: str, names: dict[str, str], n: int = 6) -> list[str]:
    """``name (wnid)`` of the synsets whose name or wnid is closest to ``item``."""
    by_name: dict[str, list[str]] = {}
    for wnid, name in names.items():
        by_name.setdefault(normalize_name(name), []).append(wnid)
    if _is_wnid(item):  # wnids are WordNet file offsets: the numerically nearest synsets
        nearest = sorted(names, key=lambda w: abs(int(w[1:]) - int(item[1:])))[:n]
        return [f"{names[w]} ({w})" for w in nearest]
    key = normalize_name(item)
    close = difflib.get_close_matches(key, list(by_name), n=n, cutoff=0.5)
    if not close:
        close = [name for name in by_name if key in name or name in key][:n]
    return [f"{c} ({w})" for c in close for w in by_name[c]][:n]


def resolve_class_subset(spec: str | Sequence[str]) -> ClassSubset:
    """The :class:`ClassSubset` of a ``--classes`` value (see the module docstring).

    Raises
    ------
    InputError
        A name or wnid that is no synset of the shipped hierarchy (listing the nearest
        matches), a name shared by several synsets (listing their wnids), a class named twice.
    """
    if isinstance(spec, str) and normalize_name(spec) in NAMED_SUBSETS:
        pairs = NAMED_SUBSETS[normalize_name(spec)]
        return ClassSubset(tuple(n for n, _ in pairs), tuple(s for _, s in pairs), normalize_name(spec))
    items = [p.strip() for p in (spec.split(",") if isinstance(spec, str) else spec) if str(p).strip()]
    if not items:
        raise InputError(f"--classes {spec!r} names no class; give vid30 or wnids/names such as n02084071,cat.")
    names = synset_names()
    vid_names = {normalize_name(n): (n, s) for n, s in VID_CLASSES}
    by_name: dict[str, list[str]] = {}
    for wnid, name in names.items():
        by_name.setdefault(normalize_name(name), []).append(wnid)
    resolved: list[tuple[str, str]] = []
    sources: list[str] = []
    for item in items:
        text = str(item).strip()
        sources.append(text)
        if normalize_name(text) in NAMED_SUBSETS:  # e.g. "vid30,n01440764": the 30 VID classes and tench
            pairs = NAMED_SUBSETS[normalize_name(text)]
            resolved += pairs
            sources += [text] * (len(pairs) - 1)
        elif _is_wnid(text):
            if text not in names:
                raise _unknown(text, names)
            vid = next((n for n, s in VID_CLASSES if s == text), None)
            resolved.append((vid or names[text], text))
        elif normalize_name(text) in vid_names:
            resolved.append(vid_names[normalize_name(text)])
        elif normalize_name(text) in by_name:
            wnids = by_name[normalize_name(text)]
            if len(wnids) > 1:
                raise InputError(f"class name {text!r} is ambiguous in WordNet: "
                                 f"{', '.join(f'{names[w]} ({w})' for w in wnids)}. Give the wnid instead.")
            resolved.append((names[wnids[0]], wnids[0]))
        else:
            raise _unknown(text, names)
    seen: dict[str, str] = {}
    for (name, synset), item in zip(resolved, sources):
        if synset in seen:
            raise InputError(f"--classes names {synset} ({name}) twice ({seen[synset]!r} and {item!r}); "
                             "name each class once.")
        seen[synset] = str(item)
    return ClassSubset(tuple(n for n, _ in resolved), tuple(s for _, s in resolved),
                       ",".join(s for _, s in resolved))


def _unknown(item: str, names: dict[str, str]) -> InputError:
    near = _near_matches(item, names)
    hint = f" Near matches: {', '.join(near)}." if near else ""
    return InputError(f"unknown class {item!r} in --classes: it is no synset (wnid or name) of the WordNet "
                      f"hierarchy of the 1,000 ILSVRC classes.{hint} Give wnids such as n02084071 (dog), names "
                      "such as domestic_cat, or vid30 for the 30 ImageNet-VID classes.")


def class_mapping(dataset_classes: Sequence[str], subset: ClassSubset) -> dict[int, int]:
    """``{dataset class index: target index}`` for the dataset classes that map to a target.

    ILSVRC wnids go to the nearest target synset above them in WordNet; other classes to the
    target with the same (normalised) name or wnid. Unmapped classes are absent.
    """
    ilsvrc_index = {w: i for i, w in enumerate(ilsvrc_wnids())}
    through_wordnet = class_index_map(subset.synsets) if any(c in ilsvrc_index for c in dataset_classes) else {}
    by_key = {}
    for t, (name, synset) in enumerate(zip(subset.names, subset.synsets)):
        by_key[normalize_name(name)] = t
        if synset:
            by_key[synset] = t
    mapping: dict[int, int] = {}
    for i, cls in enumerate(dataset_classes):
        if cls in ilsvrc_index and ilsvrc_index[cls] in through_wordnet:
            mapping[i] = through_wordnet[ilsvrc_index[cls]]
        elif cls in by_key or normalize_name(cls) in by_key:
            mapping[i] = by_key.get(cls, by_key.get(normalize_name(cls)))
    return mapping


def imagenet_rows(subset: ClassSubset) -> dict[int, list[int]]:
    """``{target index: [ImageNet-1k indices below its synset]}`` (targets with none are absent):
    which rows of a 1000-way ImageNet head a new head's row starts from."""
    below = imagenet_indices_below([s for s in subset.synsets if s])
    return {t: below[s] for t, s in enumerate(subset.synsets) if s and below.get(s)}
