"""Detection datasets: one sample format and readers for COCO, Pascal VOC, Cityscapes, ImageNet-VID.

Every reader returns a :class:`DetectionDataset`: a list of :class:`DetectionSample` (one per
image: path, size, ground-truth boxes) and the category names. Images are not decoded here
(read them with :func:`robustlab.data.images.read_image` when needed).

Box convention: ``float32`` (N, 4) ``x1, y1, x2, y2`` in continuous pixel coordinates (a box
over pixel columns 0..9 has ``x1 = 0, x2 = 10``). COCO ``[x, y, w, h]`` is converted directly;
VOC XML (1-based inclusive pixel indices) becomes ``xmin - 1, ymin - 1, xmax, ymax``;
ImageNet-VID XML (0-based inclusive) becomes ``xmin, ymin, xmax + 1, ymax + 1``; Cityscapes
polygons give the extent of their vertices ``min, max + 1``. The devkits' ``+1`` box widths
therefore come out as plain ``x2 - x1``.

Malformed files raise :class:`~robustlab.errors.DataError` naming the file and the problem
(missing key, unknown category, box outside the image beyond ``tolerance`` pixels; boxes
within the tolerance are clipped to the image).
"""

from __future__ import annotations

import json
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ..errors import DataError
from ..fsutil import read_json

#: Pascal VOC classes in the devkit's (and mmdetection's) order; labels are indices into it.
VOC_CLASSES = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair",
               "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant",
               "sheep", "sofa", "train", "tvmonitor")
#: The 8 Cityscapes instance classes (mmdetection's order); ``<name>group`` labels are crowds.
CITYSCAPES_CLASSES = ("person", "rider", "car", "truck", "bus", "train", "motorcycle", "bicycle")
#: The 30 ImageNet-VID classes in index order, as (name, WordNet id).
VID_CLASSES = (
    ("airplane", "n02691156"), ("antelope", "n02419796"), ("bear", "n02131653"),
    ("bicycle", "n02834778"), ("bird", "n01503061"), ("bus", "n02924116"), ("car", "n02958343"),
    ("cattle", "n02402425"), ("dog", "n02084071"), ("domestic_cat", "n02121808"),
    ("elephant", "n02503517"), ("fox", "n02118333"), ("giant_panda", "n02510455"),
    ("hamster", "n02342885"), ("horse", "n02374451"), ("lion", "n02129165"),
    ("lizard", "n01674464"), ("monkey", "n02484322"), ("motorcycle", "n03790512"),
    ("rabbit", "n02324045"), ("red_panda", "n02509815"), ("sheep", "n02411705"),
    ("snake", "n01726692"), ("squirrel", "n02355227"), ("tiger", "n02129604"),
    ("train", "n04468005"), ("turtle", "n01662784"), ("watercraft", "n04530566"),
    ("whale", "n02062744"), ("zebra", "n02391049"),
)  # fmt: skip
VID_WNID_TO_INDEX = {wnid: i for i, (_, wnid) in enumerate(VID_CLASSES)}


@dataclass(frozen=True)
class DetectionSample:
    """Ground truth of one image.

    Attributes
    ----------
    image_id : dataset id (COCO int id, VOC file stem, Cityscapes stem, VID frame key
        ``val/<video>/<frame>.JPEG`` as in ImageNet-Vid-Robust's ``pmsets.json``).
    path : the image file.
    width, height : image size in pixels.
    boxes : float32 (N, 4) xyxy pixels (see module docstring).
    labels : int64 (N,) category ids (COCO category ids; class indices for the others).
    iscrowd : bool (N,) COCO crowd / Cityscapes group regions.
    difficult : bool (N,) VOC difficult flags.
    """

    image_id: Any
    path: Path
    width: int
    height: int
    boxes: np.ndarray
    labels: np.ndarray
    iscrowd: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    difficult: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def __post_init__(self) -> None:
        boxes = np.asarray(self.boxes, np.float32).reshape(-1, 4)
        n = len(boxes)
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "labels", np.asarray(self.labels, np.int64).reshape(n))
        for name in ("iscrowd", "difficult"):
            flags = np.asarray(getattr(self, name), bool).reshape(-1)
            object.__setattr__(self, name, np.zeros(n, bool) if flags.size == 0 else flags.reshape(n))

    @property
    def ignore(self) -> np.ndarray:
        """Objects that are neither positives nor false-positive makers (crowd or difficult)."""
        return self.iscrowd | self.difficult

    def __len__(self) -> int:
        return len(self.boxes)


@dataclass(frozen=True)
class DetectionDataset:
    """Samples plus ``categories`` ``{label id: name}``."""

    name: str
    samples: list[DetectionSample]
    categories: dict[int, str]

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self):
        return iter(self.samples)


def _make_sample(image_id: Any, path: Path, width: Any, height: Any, boxes: Sequence[Sequence[float]],
                 labels: Sequence[int], source: Path | str, *, iscrowd: Sequence[bool] | None = None,
                 difficult: Sequence[bool] | None = None, tolerance: float = 1.0) -> DetectionSample:
    try:
        w, h = int(width), int(height)
    except (TypeError, ValueError):
        raise DataError(f"{source}: image size {width!r} x {height!r} is not a pair of integers.") from None
    if w <= 0 or h <= 0:
        raise DataError(f"{source}: image size {w} x {h} must be positive.")
    arr = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{source}: a box of image {image_id!r} has non-finite coordinates.")
    bad = ((arr[:, 0] < -tolerance) | (arr[:, 1] < -tolerance) | (arr[:, 2] > w + tolerance)
           | (arr[:, 3] > h + tolerance) | (arr[:, 2] < arr[:, 0]) | (arr[:, 3] < arr[:, 1]))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{source}: box {i} of image {image_id!r} ({arr[i].round(2).tolist()} as x1, y1, "
                        f"x2, y2) is inverted or lies outside the {w}x{h} image; fix the annotation.")
    arr[:, 0::2] = np.clip(arr[:, 0::2], 0, w)
    arr[:, 1::2] = np.clip(arr[:, 1::2], 0, h)
    n = len(arr)
    flags = lambda v: np.zeros(n, bool) if v is None else np.asarray(v, bool).reshape(n)  # noqa: E731
    return DetectionSample(image_id=image_id, path=Path(path), width=w, height=h,
                           boxes=arr.astype(np.float32), labels=np.asarray(labels, np.int64).reshape(n),
                           iscrowd=flags(iscrowd), difficult=flags(difficult))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _require_dir(path: Path, what: str, hint: str) -> Path:
    if not path.is_dir():
        raise DataError(f"{what} folder {path} does not exist; {hint}")
    return path


def _key(obj: Mapping[str, Any], key: str, source: Path | str, what: str) -> Any:
    if not isinstance(obj, Mapping) or key not in obj:
        raise DataError(f"{source}: {what} lacks the key {key!r}.")
    return obj[key]


# ---------------------------------------------------------------------------------------------
# COCO


def read_coco(annotation_file: str | os.PathLike, images_dir: str | os.PathLike, *,
              check_files: bool = True, tolerance: float = 1.0) -> DetectionDataset:
    """Read a COCO instances file (``instances_val2017.json``) and its image folder.

    Labels are the COCO category ids (so results can be scored with
    :func:`robustlab.metrics.detection.coco_metrics` without a mapping). Images without
    annotations are kept (empty boxes). ``check_files`` verifies every image file exists.
    """
    annotation_file = Path(annotation_file)
    images_dir = _require_dir(Path(images_dir), "COCO images", "give the folder holding the image files.")
    data = read_json(annotation_file)
    for key in ("images", "annotations", "categories"):
        _key(data, key, annotation_file, "the instances file")
    categories = {}
    for c in data["categories"] if isinstance(data["categories"], list) else ():
        cat_id = _key(c, "id", annotation_file, "a category")
        if isinstance(cat_id, bool) or not isinstance(cat_id, int):
            raise DataError(f"{annotation_file}: category id {cat_id!r} is not an integer.")
        categories[cat_id] = str(_key(c, "name", annotation_file, "a category"))
    per_image: dict[Any, list[Mapping[str, Any]]] = {}
    images: dict[Any, Mapping[str, Any]] = {}
    for key in ("images", "annotations", "categories"):
        if not isinstance(data[key], list):
            raise DataError(f"{annotation_file}: '{key}' must be a list; got a {type(data[key]).__name__}.")
    for img in data["images"]:
        image_id = _key(img, "id", annotation_file, "an image entry")
        for key in ("file_name", "width", "height"):
            _key(img, key, annotation_file, f"image {image_id!r}")
        if not isinstance(img["file_name"], str) or not img["file_name"]:
            raise DataError(f"{annotation_file}: image {image_id!r} has file_name {img['file_name']!r}; it must be "
                            "a non-empty string (the image's path in the images folder).")
        if isinstance(image_id, (dict, list)):
            raise DataError(f"{annotation_file}: an image id must be a number or a string; got {image_id!r}.")
        images[image_id] = img
        per_image[image_id] = []
    for ann in data["annotations"]:
        ann_id = ann.get("id") if isinstance(ann, Mapping) else None
        for key in ("image_id", "category_id", "bbox"):
            _key(ann, key, annotation_file, f"annotation {ann_id!r}")
        if isinstance(ann["image_id"], (dict, list)) or isinstance(ann["category_id"], (dict, list)):
            raise DataError(f"{annotation_file}: annotation {ann_id!r} has image_id {ann['image_id']!r} and "
                            f"category_id {ann['category_id']!r}; both must be numbers (or strings for image ids).")
        if ann["image_id"] not in images:
            raise DataError(f"{annotation_file}: annotation {ann_id!r} refers to unknown image id {ann['image_id']!r}.")
        if ann["category_id"] not in categories:
            raise DataError(f"{annotation_file}: annotation {ann_id!r} has unknown category id "
                            f"{ann['category_id']!r}; the file defines {sorted(categories)}.")
        box = ann["bbox"]
        if (isinstance(box, (str, bytes)) or not isinstance(box, Sequence) or len(box) != 4
                or not all(_is_number(v) for v in box)):
            raise DataError(f"{annotation_file}: annotation {ann_id!r} has bbox {box!r}; COCO boxes are four "
                            "numbers [x, y, width, height].")
        if not all(math.isfinite(v) for v in box) or box[2] < 0 or box[3] < 0:
            raise DataError(f"{annotation_file}: annotation {ann_id!r} has bbox {box!r}: width and height must "
                            "be >= 0 and every value finite.")
        per_image[ann["image_id"]].append(ann)
    samples = []
    for image_id, img in images.items():
        path = images_dir / img["file_name"]
        if check_files and not path.is_file():
            raise DataError(f"{annotation_file}: image file {path} of image {image_id!r} does not exist; "
                            "check the images folder matches the annotation file.")
        anns = per_image[image_id]
        boxes = [[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]]
                 for a in anns]
        samples.append(_make_sample(image_id, path, img["width"], img["height"], boxes,
                                    [a["category_id"] for a in anns], annotation_file,
                                    iscrowd=[bool(a.get("iscrowd", 0)) for a in anns], tolerance=tolerance))
    return DetectionDataset("coco", samples, categories)


# ---------------------------------------------------------------------------------------------
# Pascal VOC and ImageNet-VID XML


def _parse_xml(path: Path) -> ET.Element:
    try:
        return ET.parse(path).getroot()
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}.") from None
    except ET.ParseError as exc:
        raise DataError(f"{path} is not valid XML ({exc}).") from None


def _xml_text(node: ET.Element, tag: str, path: Path, what: str) -> str:
    child = node.find(tag)
    if child is None or child.text is None or not child.text.strip():
        raise DataError(f"{path}: {what} lacks <{tag}>.")
    return child.text.strip()


def _xml_number(node: ET.Element, tag: str, path: Path, what: str) -> float:
    text = _xml_text(node, tag, path, what)
    try:
        return float(text)
    except ValueError:
        raise DataError(f"{path}: <{tag}> of {what} is {text!r}, not a number.") from None


def _xml_objects(path: Path, class_index: Mapping[str, int], *, offset: tuple[float, float],
                 kind: str) -> tuple[int, int, list[list[float]], list[int], list[bool]]:
    """Size and objects of a VOC-style annotation; ``offset`` is added to (min, max) corners."""
    root = _parse_xml(path)
    size = root.find("size")
    if size is None:
        raise DataError(f"{path}: the annotation lacks <size>.")
    width = int(_xml_number(size, "width", path, "<size>"))
    height = int(_xml_number(size, "height", path, "<size>"))
    boxes, labels, difficult = [], [], []
    for i, obj in enumerate(root.findall("object")):
        name = _xml_text(obj, "name", path, f"object {i}")
        if name not in class_index:
            raise DataError(f"{path}: object {i} has unknown {kind} class {name!r}; known: "
                            f"{', '.join(sorted(class_index))}.")
        box = obj.find("bndbox")
        if box is None:
            raise DataError(f"{path}: object {i} ({name}) lacks <bndbox>.")
        x1, y1, x2, y2 = (_xml_number(box, t, path, f"object {i} ({name})") for t in ("xmin", "ymin", "xmax", "ymax"))
        boxes.append([x1 + offset[0], y1 + offset[0], x2 + offset[1], y2 + offset[1]])
        labels.append(class_index[name])
        flag = obj.find("difficult")
        difficult.append(flag is not None and (flag.text or "0").strip() not in ("0", ""))
    return width, height, boxes, labels, difficult


def _voc_year_dir(root: Path, year: str) -> Path:
    if (root / "Annotations").is_dir():
        return root
    if (root / f"VOC{year}" / "Annotations").is_dir():
        return root / f"VOC{year}"
    raise DataError(f"{root} holds neither Annotations/ nor VOC{year}/Annotations/; give the VOCdevkit "
                    f"folder or its VOC{year} subfolder.")


def read_voc(root: str | os.PathLike, *, year: str = "2007", split: str = "test",
             classes: Sequence[str] = VOC_CLASSES, check_files: bool = True,
             tolerance: float = 1.0) -> DetectionDataset:
    """Read Pascal VOC (``VOCdevkit/VOC2007``): ``ImageSets/Main/<split>.txt`` + XML + JPEGs.

    Labels are indices into ``classes`` (the 20 VOC classes in devkit order); ``difficult``
    flags are kept (VOC AP ignores those objects). Default: the VOC2007 test split of the
    Robust Detection Benchmark's Pascal-C.
    """
    base = _voc_year_dir(Path(root), year)
    split_file = base / "ImageSets" / "Main" / f"{split}.txt"
    try:
        ids = [line.split()[0] for line in split_file.read_text().splitlines() if line.strip()]
    except OSError:
        raise DataError(f"split file {split_file} does not exist; choose split= one of "
                        f"{sorted(p.stem for p in (base / 'ImageSets' / 'Main').glob('*.txt') if '_' not in p.stem)}.") from None
    class_index = {name: i for i, name in enumerate(classes)}
    samples = []
    for image_id in ids:
        xml_path = base / "Annotations" / f"{image_id}.xml"
        width, height, boxes, labels, difficult = _xml_objects(xml_path, class_index, offset=(-1.0, 0.0), kind="VOC")
        path = base / "JPEGImages" / f"{image_id}.jpg"
        if check_files and not path.is_file():
            raise DataError(f"{xml_path}: image {path} does not exist.")
        samples.append(_make_sample(image_id, path, width, height, boxes, labels, xml_path,
                                    difficult=difficult, tolerance=tolerance))
    return DetectionDataset(f"voc{year}-{split}", samples, dict(enumerate(classes)))


def read_imagenet_vid(root: str | os.PathLike, *, split: str = "val", keys: Iterable[str] | None = None,
                      check_files: bool = True, tolerance: float = 1.0) -> DetectionDataset:
    """Read ImageNet-VID per-frame XML (``Annotations/VID/<split>/<video>/<frame>.xml``).

    ``root`` is the ILSVRC folder holding ``Annotations/`` and ``Data/``. Sample ids are frame
    keys ``<split>/<video>/<frame>.JPEG`` (ImageNet-Vid-Robust's ``pmsets.json`` keys); give
    ``keys`` to read only those frames (e.g. every anchor and neighbour of the pm-k sets).
    Labels are the 30 VID class indices (:data:`VID_CLASSES`).
    """
    root = Path(root)
    ann_root = _require_dir(root / "Annotations" / "VID" / split, "ImageNet-VID annotation",
                            "give the ILSVRC folder that holds Annotations/VID/ and Data/VID/.")
    if keys is None:
        frame_keys = sorted(f"{split}/{p.parent.name}/{p.stem}.JPEG" for p in ann_root.glob("*/*.xml"))
    else:
        frame_keys = list(keys)
    samples = []
    for key in frame_keys:
        parts = PurePosixPath(key).parts
        if len(parts) != 3 or parts[0] != split:
            raise DataError(f"frame key {key!r} is not of the form '{split}/<video>/<frame>.JPEG'.")
        video, frame = parts[1], Path(parts[2]).stem
        xml_path = ann_root / video / f"{frame}.xml"
        width, height, boxes, labels, _ = _xml_objects(xml_path, VID_WNID_TO_INDEX, offset=(0.0, 1.0), kind="VID")
        path = root / "Data" / "VID" / split / video / f"{frame}.JPEG"
        if check_files and not path.is_file():
            raise DataError(f"{xml_path}: frame {path} does not exist.")
        samples.append(_make_sample(key, path, width, height, boxes, labels, xml_path, tolerance=tolerance))
    return DetectionDataset(f"imagenet-vid-{split}", samples, {i: n for i, (n, _) in enumerate(VID_CLASSES)})


# ---------------------------------------------------------------------------------------------
# Cityscapes


def read_cityscapes(root: str | os.PathLike, *, split: str = "val", check_files: bool = True,
                    tolerance: float = 2.0) -> DetectionDataset:
    """Read Cityscapes instance boxes from ``gtFine/<split>/<city>/*_gtFine_polygons.json``.

    Each polygon of the 8 instance classes (:data:`CITYSCAPES_CLASSES`) becomes the box of its
    vertices; ``<class>group`` polygons (crowds) become ``iscrowd`` boxes; other labels (road,
    sky...) are skipped. Images: ``leftImg8bit/<split>/<city>/<stem>_leftImg8bit.png``.
    Boxes are the polygons' full extent, so parts hidden by objects drawn later are included
    (boxes from the ``instanceIds`` PNGs, as mmdetection's converter uses, cover visible pixels
    only and can be slightly smaller).
    """
    root = Path(root)
    gt_root = _require_dir(root / "gtFine" / split, "Cityscapes gtFine",
                           "give the Cityscapes folder that holds gtFine/ and leftImg8bit/.")
    class_index = {name: i for i, name in enumerate(CITYSCAPES_CLASSES)}
    samples = []
    for json_path in sorted(gt_root.glob("*/*_gtFine_polygons.json")):
        data = read_json(json_path)
        width = _key(data, "imgWidth", json_path, "the polygon file")
        height = _key(data, "imgHeight", json_path, "the polygon file")
        objects = _key(data, "objects", json_path, "the polygon file")
        boxes, labels, crowd = [], [], []
        for i, obj in enumerate(objects):
            label = str(_key(obj, "label", json_path, f"object {i}"))
            if obj.get("deleted"):
                continue
            is_group = label.endswith("group") and label[:-5] in class_index
            name = label[:-5] if is_group else label
            if name not in class_index:
                continue
            poly = np.asarray(_key(obj, "polygon", json_path, f"object {i} ({label})"), dtype=np.float64)
            if poly.ndim != 2 or poly.shape[1] != 2 or len(poly) < 3:
                raise DataError(f"{json_path}: object {i} ({label}) has a polygon of shape {poly.shape}; "
                                "expected at least 3 [x, y] vertices.")
            boxes.append([poly[:, 0].min(), poly[:, 1].min(), poly[:, 0].max() + 1, poly[:, 1].max() + 1])
            labels.append(class_index[name])
            crowd.append(is_group)
        stem = json_path.name[: -len("_gtFine_polygons.json")]
        city = json_path.parent.name
        path = root / "leftImg8bit" / split / city / f"{stem}_leftImg8bit.png"
        if check_files and not path.is_file():
            raise DataError(f"{json_path}: image {path} does not exist.")
        samples.append(_make_sample(stem, path, width, height, boxes, labels, json_path,
                                    iscrowd=crowd, tolerance=tolerance))
    if not samples:
        raise DataError(f"no *_gtFine_polygons.json files under {gt_root}/<city>/.")
    return DetectionDataset(f"cityscapes-{split}", samples, dict(enumerate(CITYSCAPES_CLASSES)))
