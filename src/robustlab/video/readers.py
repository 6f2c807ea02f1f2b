"""Readers for pm-k test sets: ImageNet-Vid-Robust, YTBB-Robust and sets built by robustlab.

Each reader returns a :class:`PmkSet`: the anchor -> neighbours sets (``pmsets``), the class
labels per frame (``labels``), how frames are judged (``label_mode``), the class names and
the ``{ImageNet index: class index}`` projection map. ``pmsets`` and ``labels`` are exactly
the inputs of :func:`robustlab.metrics.pmk.pmk_accuracy`.

Released layouts (SPEC section 4):

- ImageNet-Vid-Robust: frames at ``ROOT/val/ILSVRC2015_val_XXXXXXXX/NNNNNN.JPEG``;
  ``pmsets.json``, ``labels.json``, ``class_idx_map.json`` (and ``rev_class_idx_map.json``)
  in ``ROOT``, ``ROOT/metadata`` or a folder you name. Each frame is judged against its own
  labels.
- YTBB-Robust: frames at ``ROOT/<ytid>_<anchor ms>/frame-<n>.jpg``; ``anchor_labels.json``
  (anchor review), ``pmk_labels.json`` (pair review, keys ``"anchor,neighbour"``),
  ``ytbb_robustness_test_anchors_full.csv`` (original YouTube-BB labels) and
  ``ytbb_class_index.json``. Every frame is judged against its anchor's labels.

Metadata files may also be gzipped (``pmsets.json.gz``).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data.images import read_image
from ..data.wordnet import VID_CLASSES, VID_SYNSETS, YTBB_CLASS_NAMES, YTBB_SYNSETS, class_index_map
from ..errors import DataError, InputError
from ..fsutil import read_json
from ._io import FIX, find_file
from .keys import frame_number, frame_offset, restrict_to_offset, video_of

LABEL_MODES = ("frame", "anchor")


@dataclass(frozen=True)
class PmkSet:
    """A pm-k test set: anchors, their reviewed neighbours and the labels to judge them by.

    Attributes
    ----------
    name : str
        Benchmark name (``"imagenet-vid-robust"``, ``"ytbb-robust"``, ``"video-pmk"``).
    pmsets : dict of str to list of str
        ``{anchor key: [neighbour keys]}``; keys are paths relative to ``root``.
    labels : dict of str to list of int
        ``{frame key: [class indices]}``: every frame for ``label_mode="frame"``, the anchors
        for ``label_mode="anchor"``.
    label_mode : {"frame", "anchor"}
        Judge each frame against its own labels, or every neighbour against its anchor's.
    class_names : tuple of str
        Target class names, index order.
    class_idx_map : dict of int to int
        ``{ImageNet-1k index: target index}`` for projecting 1000-way logits.
    root : Path or None
        Folder the frame keys are relative to (None: metadata only, frames not available).
    """

    name: str
    pmsets: dict[str, list[str]]
    labels: dict[str, list[int]]
    label_mode: str
    class_names: tuple[str, ...]
    class_idx_map: dict[int, int]
    root: Path | None = None
    info: dict = field(default_factory=dict)

    @property
    def frame_keys(self) -> list[str]:
        """Every anchor and neighbour key, sorted (one inference pass covers the set)."""
        keys = set(self.pmsets)
        for neighbours in self.pmsets.values():
            keys.update(neighbours)
        return sorted(keys)

    def frame_path(self, key: str) -> Path:
        """Path of a frame on disk."""
        if self.root is None:
            raise DataError(f"{self.name}: no frames folder was given, so frame {key!r} cannot "
                            "be read; pass root=PATH (the folder holding the frames).")
        return self.root / key

    def read_frame(self, key: str) -> np.ndarray:
        """Read one frame as uint8 HxWx3 RGB."""
        return read_image(self.frame_path(key))

    def offsets(self) -> dict[str, dict[str, int]]:
        """``{anchor: {neighbour: frame offset}}``."""
        return {a: {n: frame_offset(a, n) for n in ns} for a, ns in self.pmsets.items()}

    def within(self, k: int) -> PmkSet:
        """The same set keeping only neighbours with ``|offset| <= k`` (pm-k for that k)."""
        return PmkSet(self.name, restrict_to_offset(self.pmsets, k), self.labels,
                      self.label_mode, self.class_names, self.class_idx_map, self.root,
                      dict(self.info, max_offset=int(k)))


# --- generic pmsets.json / labels.json sets -------------------------------------------------


def _metadata_folders(root: Path | None, metadata: Path | None, what: str) -> list[Path]:
    if metadata is not None:
        return [Path(metadata)]
    if root is None:
        raise InputError(f"{what}: give the dataset folder (root) or the metadata folder.")
    return [Path(root), Path(root) / "metadata"]


def _check_pmsets(pmsets: object, source: Path) -> dict[str, list[str]]:
    if not isinstance(pmsets, dict):
        raise DataError(f"{source}: expected a JSON object {{anchor key: [neighbour keys]}}, got "
                        f"{type(pmsets).__name__}.")
    for anchor, neighbours in pmsets.items():
        if not isinstance(neighbours, list) or not all(isinstance(n, str) for n in neighbours):
            raise DataError(f"{source}: the neighbours of anchor {anchor!r} must be a list of "
                            f"frame keys (strings); got {neighbours!r:.80}.")
        for n in neighbours:
            if video_of(n) != video_of(anchor):
                raise DataError(f"{source}: neighbour {n!r} of anchor {anchor!r} is in another "
                                "video folder; neighbours must come from the anchor's video.")
        if anchor in neighbours:
            raise DataError(f"{source}: anchor {anchor!r} is listed among its own neighbours.")
        if len(set(neighbours)) != len(neighbours):
            raise DataError(f"{source}: anchor {anchor!r} lists a neighbour twice.")
    return {str(a): list(ns) for a, ns in pmsets.items()}


def _check_labels(labels: object, source: Path, n_classes: int | None) -> dict[str, list[int]]:
    if not isinstance(labels, dict):
        raise DataError(f"{source}: expected a JSON object {{frame key: [class indices]}}, got "
                        f"{type(labels).__name__}.")
    out = {}
    for key, value in labels.items():
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if (not isinstance(value, list) or not value
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise DataError(f"{source}: frame {key!r} must have a non-empty list of class indices; "
                            f"got {value!r}.")
        if n_classes is not None and not all(0 <= v < n_classes for v in value):
            raise DataError(f"{source}: frame {key!r} has class {value} outside 0..{n_classes - 1}.")
        out[str(key)] = sorted(set(value))
    return out


def _check_coverage(pmsets: Mapping[str, Sequence[str]], labels: Mapping[str, list[int]],
                    label_mode: str, pmsets_file: object, labels_file: object) -> None:
    needed = pmsets.keys() if label_mode == "anchor" else {
        k for a, ns in pmsets.items() for k in (a, *ns)}
    missing = sorted(k for k in needed if k not in labels)
    if missing:
        raise DataError(f"{len(missing)} frame(s) of {pmsets_file} have no labels in {labels_file}, "
                        f"e.g. {missing[:3]}. Every {'anchor' if label_mode == 'anchor' else 'frame'}"
                        " needs at least one class label; fix or regenerate the metadata.")


def check_frames_exist(root: Path, keys: Iterable[str], *, what: str) -> None:
    """Raise DataError naming missing frame files (the first few and how many)."""
    missing = [k for k in keys if not (root / k).is_file()]
    if missing:
        raise DataError(f"{what}: {len(missing)} frame(s) named in the metadata are missing under "
                        f"{root}, e.g. {root / missing[0]}. Point root at the folder that holds "
                        f"the frames (the one containing {missing[0].split('/')[0]}/), or pass "
                        "check_frames=False to read metadata only.")


def read_pmk_set(root: str | os.PathLike | None = None, *, metadata: str | os.PathLike | None = None,
                 name: str = "video-pmk", class_names: Sequence[str] | None = None,
                 class_idx_map: Mapping[int, int] | None = None, label_mode: str = "frame",
                 check_frames: bool = True) -> PmkSet:
    """Read any pm-k set in the ImageNet-Vid-Robust format (``pmsets.json`` + ``labels.json``).

    Parameters
    ----------
    root : path, optional
        Folder the frame keys are relative to. None reads metadata only.
    metadata : path, optional
        Folder with the JSON files (default: ``root``, then ``root/metadata``). ``classes.json``
        (a list of class names) and ``class_idx_map.json`` are read when present.
    class_names, class_idx_map : optional
        Override the class names / ImageNet projection map.
    label_mode : {"frame", "anchor"}
    check_frames : bool
        Check every frame file exists under ``root`` (one ``stat`` per frame).

    Raises
    ------
    DataError
        Missing or malformed metadata, frames without labels, labels out of range, metadata
        keys without frame files; each message names the file.
    """
    if label_mode not in LABEL_MODES:
        raise InputError(f"label_mode {label_mode!r} is unknown; use one of {LABEL_MODES}.")
    root_path = Path(root) if root is not None else None
    if root_path is not None and not root_path.is_dir():
        raise DataError(f"{name}: frames folder {root_path} does not exist or is not a folder.")
    folders = _metadata_folders(root_path, Path(metadata) if metadata else None, name)
    pmsets_file = find_file("pmsets.json", folders, what=name)
    labels_file = find_file("labels.json", folders, what=name)
    if class_names is None:
        try:
            names_file = find_file("classes.json", folders, what=name)
        except DataError:
            names_file = None
        class_names = read_json(names_file, fix=FIX) if names_file else None
        if class_names is not None and not (isinstance(class_names, list) and all(
                isinstance(c, str) for c in class_names)):
            raise DataError(f"{names_file}: expected a JSON list of class names.")
    if class_idx_map is None:
        try:
            map_file = find_file("class_idx_map.json", folders, what=name)
        except DataError:
            map_file = None
        class_idx_map = ({int(k): int(v) for k, v in read_json(map_file, fix=FIX).items()}
                         if map_file else {})
    n_classes = len(class_names) if class_names else None
    pmsets = _check_pmsets(read_json(pmsets_file, fix=FIX), pmsets_file)
    labels = _check_labels(read_json(labels_file, fix=FIX), labels_file, n_classes)
    _check_coverage(pmsets, labels, label_mode, pmsets_file, labels_file)
    if class_names is None:
        n = max((max(v) for v in labels.values()), default=-1) + 1
        class_names = tuple(str(i) for i in range(n))
    result = PmkSet(name, pmsets, labels, label_mode, tuple(class_names),
                    dict(class_idx_map), root_path, {"pmsets_file": str(pmsets_file),
                                                     "labels_file": str(labels_file)})
    if root_path is not None and check_frames:
        check_frames_exist(root_path, result.frame_keys, what=name)
    return result


def read_imagenet_vid_robust(root: str | os.PathLike | None = None, *,
                             metadata: str | os.PathLike | None = None,
                             check_frames: bool = True) -> PmkSet:
    """Read ImageNet-Vid-Robust (1,109 anchors, 21,070 neighbours, 30 classes).

    Frames are at ``root/val/ILSVRC2015_val_XXXXXXXX/NNNNNN.JPEG``. The class map is the
    released ``class_idx_map.json`` when present, else the WordNet-derived one (identical).
    """
    names = tuple(n for n, _ in VID_CLASSES)
    folders = _metadata_folders(Path(root) if root else None, Path(metadata) if metadata else None,
                                "imagenet-vid-robust")
    try:
        map_file = find_file("class_idx_map.json", folders, what="imagenet-vid-robust")
        cmap = {int(k): int(v) for k, v in read_json(map_file, fix=FIX).items()}
    except DataError:
        cmap = class_index_map(VID_SYNSETS)
    return read_pmk_set(root, metadata=metadata, name="imagenet-vid-robust", class_names=names,
                        class_idx_map=cmap, label_mode="frame", check_frames=check_frames)


# --- YTBB-Robust -------------------------------------------------------------------------------

#: Pair-review labels that disqualify a pair (any one of them).
YTBB_PAIR_REJECT_LABELS = ("dissimilar", "problematic", "incorrect", "dont know", "deformation",
                           "background-change", "occlusion-increased", "blur-increase",
                           "bad-anchor")
YTBB_ANCHOR_FILES = ("anchor_labels.json", "pmk_labels.json",
                     "ytbb_robustness_test_anchors_full.csv", "ytbb_class_index.json")


def normalize_frame_key(path: str) -> str:
    """Last two path parts (``.../XiSjHcHG5IU_301000/frame-7525.jpg`` -> ``XiSjHcHG5IU_301000/frame-7525.jpg``)."""
    parts = str(path).replace("\\", "/").rstrip("/").rsplit("/", 2)
    return "/".join(parts[-2:])


def read_review_labels(path: str | os.PathLike) -> tuple[dict[str, frozenset[str]], list[str]]:
    """Read a labelling-tool export (``anchor_labels.json`` / ``pmk_labels.json``).

    The file is ``{"labels": [names], "annotations": [{"key", "notes", "labels": [indices]}]}``.
    A key reviewed more than once keeps its last annotation.

    Returns
    -------
    annotations : dict of str to frozenset of str
        ``{raw key: label names}``.
    label_names : list of str
    """
    data = read_json(path, fix=FIX)
    if not (isinstance(data, dict) and isinstance(data.get("labels"), list)
            and isinstance(data.get("annotations"), list)):
        raise DataError(f"{path}: expected {{'labels': [names], 'annotations': [...]}} (the "
                        "labelling tool's export).")
    names = [str(n) for n in data["labels"]]
    out: dict[str, frozenset[str]] = {}
    for i, row in enumerate(data["annotations"]):
        if not (isinstance(row, dict) and isinstance(row.get("key"), str)
                and isinstance(row.get("labels"), list)):
            raise DataError(f"{path}: annotation {i} must have a string 'key' and a list 'labels'; "
                            f"got {row!r:.120}.")
        bad = [v for v in row["labels"] if not (isinstance(v, int) and 0 <= v < len(names))]
        if bad:
            raise DataError(f"{path}: annotation {i} ({row['key']!r}) has label indices {bad} "
                            f"outside 0..{len(names) - 1}.")
        out[row["key"]] = frozenset(names[v] for v in row["labels"])
    return out, names


def ytbb_anchor_review(annotations: Mapping[str, frozenset[str]]) -> tuple[list[str], list[str]]:
    """Split reviewed anchors into good ones (labelled 'good', not 'bad' or 'unsure') and the rest.

    Returns ``(good keys, other keys)``, keys normalized to ``<clip>/frame-<n>.jpg``, in file order.
    """
    good, other = [], []
    for key, names in annotations.items():
        ok = "good" in names and not names & {"bad", "unsure"}
        (good if ok else other).append(normalize_frame_key(key))
    return good, other


def ytbb_pair_review(annotations: Mapping[str, frozenset[str]]
                     ) -> tuple[set[tuple[str, str]], set[str]]:
    """Valid (anchor, neighbour) pairs and bad anchors from the pair review.

    A pair is valid when labelled 'similar' and none of :data:`YTBB_PAIR_REJECT_LABELS`, and
    its anchor was never flagged 'bad-anchor' in any pair.
    """
    pairs: dict[tuple[str, str], frozenset[str]] = {}
    for key, names in annotations.items():
        parts = key.split(",")
        if len(parts) != 2:
            raise DataError(f"pair review key {key!r} must be 'anchor,neighbour'.")
        pairs[(normalize_frame_key(parts[0]), normalize_frame_key(parts[1]))] = names
    bad_anchors = {a for (a, _), names in pairs.items() if "bad-anchor" in names}
    valid = {p for p, names in pairs.items()
             if "similar" in names and not names & set(YTBB_PAIR_REJECT_LABELS)
             and p[0] not in bad_anchors}
    return valid, bad_anchors


def ytbb_original_labels(path: str | os.PathLike) -> dict[str, int]:
    """Original YouTube-BB anchor labels from the anchors CSV, ``{"<ytid>_<ms>": class}``.

    The CSV uses YouTube-BB's numbering, where 22 and 23 are swapped relative to
    ``ytbb_class_index.json`` (22 = none, 23 = car); this swaps them back.
    """
    p = Path(path)
    try:
        with open(p, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        raise DataError(f"{p} does not exist; check the YTBB-Robust metadata folder.") from None
    out = {}
    for line, row in enumerate(rows, start=2):
        try:
            label = int(row["label"])
            clip = f"{row['ytid']}_{int(row['time_ms'])}"
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{p}, line {line}: expected columns ytid,time_ms,label with integer "
                            f"time_ms and label; got {row!r}.") from exc
        out[clip] = {22: 23, 23: 22}.get(label, label)
    return out


def ytbb_anchor_labels(anchor_annotations: Mapping[str, frozenset[str]], anchors: Iterable[str],
                       original: Mapping[str, int], class_names: Sequence[str] = YTBB_CLASS_NAMES
                       ) -> dict[str, list[int]]:
    """Final anchor labels: the original YouTube-BB label plus every class the reviewers added.

    Review label names that are not class names ('good', 'bad', 'unsure') are ignored.
    """
    index = {n: i for i, n in enumerate(class_names)}
    by_key = {normalize_frame_key(k): v for k, v in anchor_annotations.items()}
    out = {}
    for anchor in anchors:
        clip = video_of(anchor)
        if clip not in original:
            raise DataError(f"anchor {anchor!r} has no row in the anchors CSV (looked up {clip!r}); "
                            "the CSV and anchor_labels.json come from different releases.")
        added = {index[n] for n in by_key.get(anchor, ()) if n in index}
        out[anchor] = sorted(added | {original[clip]})
    return out


def ytbb_neighbour_key(anchor: str, offset: int) -> str:
    """Key of the frame ``offset`` frames from ``anchor`` in its clip (``.../frame-<n+offset>.jpg``)."""
    return f"{video_of(anchor)}/frame-{frame_number(anchor) + int(offset)}.jpg"


def ytbb_pmsets(anchors: Iterable[str], valid_pairs: set[tuple[str, str]] | None,
                k: int = 10) -> dict[str, list[str]]:
    """``{anchor: [neighbours]}`` with offsets -k..k (0 excluded) that passed review.

    ``valid_pairs=None`` keeps every candidate (the unreviewed set).
    """
    out = {}
    for anchor in anchors:
        candidates = [ytbb_neighbour_key(anchor, d) for d in range(-k, k + 1) if d != 0]
        out[anchor] = [n for n in candidates if valid_pairs is None or (anchor, n) in valid_pairs]
    return out


def read_ytbb_robust(root: str | os.PathLike | None = None, *,
                     metadata: str | os.PathLike | None = None, k: int = 10,
                     reviewed: bool = True, check_frames: bool = True) -> PmkSet:
    """Read YTBB-Robust, applying the authors' review filters.

    Anchors: labelled 'good' and not 'bad'/'unsure' in ``anchor_labels.json``, and never
    flagged 'bad-anchor' in ``pmk_labels.json``. Neighbours: offsets -k..k whose pair is
    'similar' with no rejecting label. Labels: the original YouTube-BB label (22/23 swapped
    back) plus the classes reviewers added; neighbours are judged against their anchor's labels.

    Parameters
    ----------
    reviewed : bool
        False keeps every anchor and every candidate neighbour (no review filters); no
        ``pmk_labels.json`` is needed then.
    """
    folders = _metadata_folders(Path(root) if root else None, Path(metadata) if metadata else None,
                                "ytbb-robust")
    anchor_file = find_file("anchor_labels.json", folders, what="ytbb-robust")
    csv_file = find_file("ytbb_robustness_test_anchors_full.csv", folders, what="ytbb-robust")
    try:
        index_file = find_file("ytbb_class_index.json", folders, what="ytbb-robust")
        index = read_json(index_file, fix=FIX)
        class_names = tuple(index[str(i)] for i in range(len(index)))
    except DataError:
        class_names = YTBB_CLASS_NAMES
    anchor_ann, _ = read_review_labels(anchor_file)
    good, other = ytbb_anchor_review(anchor_ann)
    info: dict = {"anchors_reviewed": len(anchor_ann), "anchors_good": len(good)}
    if reviewed:
        pmk_file = find_file("pmk_labels.json", folders, what="ytbb-robust")
        valid_pairs, bad_anchors = ytbb_pair_review(read_review_labels(pmk_file)[0])
        anchors = [a for a in good if a not in bad_anchors]
        info["anchors_bad_in_pair_review"] = len(good) - len(anchors)
    else:
        valid_pairs, anchors = None, good + other
    labels = ytbb_anchor_labels(anchor_ann, anchors, ytbb_original_labels(csv_file), class_names)
    pmsets = ytbb_pmsets(anchors, valid_pairs, k)
    try:
        map_file = find_file("class_idx_map.json", folders, what="ytbb-robust")
        cmap = {int(a): int(b) for a, b in read_json(map_file, fix=FIX).items()}
    except DataError:
        cmap = class_index_map(YTBB_SYNSETS)
    root_path = Path(root) if root is not None else None
    result = PmkSet("ytbb-robust", pmsets, labels, "anchor", class_names, cmap, root_path, info)
    if root_path is not None and check_frames:
        check_frames_exist(root_path, result.frame_keys, what="ytbb-robust")
    return result
