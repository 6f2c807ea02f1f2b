"""Natural-shift test sets: ``imagenetv2``, ``imagenet-a``, ``imagenet-r``, ``imagenet-sketch``, ``objectnet``.

Each reads its released layout (:mod:`robustlab.data.natural_shifts`), evaluates a 1,000-class
ImageNet model on it (setting ``shifted``) and, with ``clean_data`` (an ImageNet val folder in
wnid folders), on the matching ImageNet images (setting ``clean``: the same classes, the same
projection, as the imagenet-testbed's ``val-on-<set>-classes``). Metrics: top-1 and top-5
accuracy with exact 95% Clopper-Pearson intervals, and the (original, shifted) pair of the
effective-robustness trend (:mod:`robustlab.report.effective`).

- ImageNet-A / ImageNet-R: 200 classes; the model's 1,000 logits are projected to the 200
  (the reference evaluation keeps those columns).
- ObjectNet: the 113 classes that overlap ImageNet-1k; each scores the max of its ImageNet
  columns (top-1 equals the testbed's "arg-max over the mapped classes"); images of the other
  200 classes are not evaluated. ObjectNet images carry a 1-pixel red border, cropped before the
  model's preprocessing; an image without it is not cropped, and the run's notes count them.
- ImageNetV2 (three variants) and ImageNet-Sketch: the 1,000 classes as they are.

Models that name their classes adapt first (:mod:`robustlab.models.label_space`): a ``hf:`` model's
``id2label`` must be ImageNet's 1,000 classes; a zero-shot model (``open_clip:``) scores CLIP's
ImageNet names. Option ``zero_shot_classes``: ``imagenet`` (default) projects a zero-shot model's
1,000 logits like any other's; ``subset`` builds its head from the set's own classes instead (the
200 classes' names for ImageNet-A/R, ObjectNet's 113 class names), as CLIP's paper evaluated
ImageNet-A/R and ObjectNet. The run's config records ``subset``; other models ignore it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.classification import SampleView, class_folders, read_image_folder
from ..data.natural_shifts import (imagenet_a_indices, imagenet_r_indices, objectnet_folders, objectnet_to_imagenet,
                                   subset_wnids)
from ..data.wordnet import ilsvrc_wnids
from ..engine.benchmark import Benchmark, MetricRow, Unit, model_device, register_benchmark
from ..engine.classification import add_setting_counts, error_rows, setting_counts
from ..engine.config import LimitedConfig, conditional
from ..engine.options import (CLASSES_PER_UNIT, CLEAN_DATA, CLEAN_RUN, LIMIT, LIMIT_ORDER, SAVE_LOGITS, TOP_K, Option,
                              check_positive, limit_config)
from ..engine.presentation import HeadlineMetric, Presentation
from ..engine.records import Sample, sample_id
from ..engine.setting import Setting, setting_of
from ..errors import DataError, InputError, ModelError
from ..fsutil import not_a_folder
from ..metrics.stats import clopper_pearson

if TYPE_CHECKING:
    import torch

SHIFTED, CLEAN = "shifted", "clean"
SHIFTED_SETTING, CLEAN_SETTING = Setting(SHIFTED), Setting(CLEAN)
#: Values of ``zero_shot_classes`` (see the module docstring).
ZERO_SHOT_CLASSES = ("imagenet", "subset")
#: ImageNet-1k classes a projected model must output.
IMAGENET_CLASSES = 1000
V2_VARIANTS = ("matched-frequency", "threshold0.7", "top-images")

@dataclass(frozen=True)
class ShiftLayout:
    """What a natural-shift benchmark needs of its data: folders, labels, projection.

    Attributes
    ----------
    root : str
        The folder holding the class folders.
    labels : dict
        ``{class folder: label}`` of every evaluated folder (labels index the benchmark's classes).
    groups : list or None
        Per benchmark class, the ImageNet-1k columns it scores from (None: the 1,000 classes as is).
    clean_labels : dict
        ``{ImageNet wnid: label}`` of the ImageNet val folders the clean setting evaluates.
    """

    root: str
    labels: dict[str, int]
    groups: list[list[int]] | None
    clean_labels: dict[str, int]


def folders_of(root: Path) -> list[str]:
    """Visible subfolders of ``root``, sorted (DataError when ``root`` is missing)."""
    if not root.is_dir():
        raise not_a_folder(root, "dataset folder")
    return sorted(e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith("."))


def _layout_error(root: Path, layout: str, problem: str) -> DataError:
    return DataError(f"{root} is not in the released layout {layout}: {problem}.")


def subset_layout(root: Path, indices: Sequence[int], name: str) -> ShiftLayout:
    """ImageNet-A / ImageNet-R: ``<root>/<wnid>/<image>`` over the set's 200 wnids."""
    wnids = subset_wnids(list(indices))
    layout = f"<root>/<wnid>/<image> with {name}'s {len(wnids)} ImageNet wnids"
    found = folders_of(root)
    position = {w: i for i, w in enumerate(wnids)}
    foreign = [f for f in found if f not in position]
    if foreign or not found:
        raise _layout_error(root, layout, f"{foreign[0]!r} is not one of them" if foreign else "no class folders")
    return ShiftLayout(str(root), {f: position[f] for f in found}, [[i] for i in indices], dict(position))


def full_layout(root: Path, *, numbered: bool, name: str) -> ShiftLayout:
    """ImageNetV2 (``<root>/<0..999>/<image>``) or ImageNet-Sketch (``<root>/<wnid>/<image>``)."""
    wnids = ilsvrc_wnids()
    found = folders_of(root)
    if numbered:
        layout = "<root>/<ImageNet class index 0..999>/<image> (imagenetv2-<variant>-format-val)"
        bad = [f for f in found if not (f.isdigit() and 0 <= int(f) < IMAGENET_CLASSES)]
        labels = {f: int(f) for f in found if f not in bad}
    else:
        layout = f"<root>/<ImageNet wnid>/<image> ({name}: 1,000 wnid folders)"
        index = {w: i for i, w in enumerate(wnids)}
        bad = [f for f in found if f not in index]
        labels = {f: index[f] for f in found if f not in bad}
    if bad or not found:
        raise _layout_error(root, layout, f"folder {bad[0]!r} is not a class of it" if bad else "no class folders")
    return ShiftLayout(str(root), labels, None, {w: i for i, w in enumerate(wnids)})


def objectnet_layout(root: Path) -> ShiftLayout:
    """ObjectNet: ``<root>/images/<class folder>/<image>``; the 113 folders that overlap ImageNet-1k."""
    images = root / "images" if (root / "images").is_dir() else root
    known = objectnet_folders()
    overlap = objectnet_to_imagenet()
    layout = "<root>/images/<ObjectNet class folder, e.g. air_freshener>/<image>.png (ObjectNet 1.0)"
    found = folders_of(images)
    foreign = [f for f in found if f not in known]
    if foreign or not found:
        raise _layout_error(images, layout, f"{foreign[0]!r} is not an ObjectNet class folder" if foreign
                            else "no class folders")
    order = sorted(overlap)
    position = {f: i for i, f in enumerate(order)}
    present = [f for f in found if f in position]
    if not present:
        raise DataError(f"none of the class folders under {images} is one of the 113 ObjectNet classes that overlap "
                        "ImageNet-1k; nothing to evaluate.")
    wnids = ilsvrc_wnids()
    clean = {wnids[i]: position[f] for f, ids in overlap.items() for i in ids}
    return ShiftLayout(str(images), {f: position[f] for f in present}, [overlap[f] for f in order], clean)


@dataclass(frozen=True, eq=False)
class BorderedSamples(SampleView):
    """ObjectNet images: read as they are; :meth:`ObjectNet.load` crops their 1-pixel border."""


@dataclass(frozen=True)
class BorderInfo:
    """Whether an ObjectNet image had its 1-pixel border (and so was cropped)."""

    had_border: bool


def has_red_border(image: np.ndarray) -> bool:
    """True when the outermost 1-pixel ring of a uint8 HxWx3 image is red (R > 150, G and B < 100 on
    at least 90% of the ring), as ObjectNet's images are framed."""
    if image.shape[0] < 3 or image.shape[1] < 3:
        return False
    ring = np.concatenate([image[0], image[-1], image[1:-1, 0], image[1:-1, -1]]).astype(np.int16)
    red = (ring[:, 0] > 150) & (ring[:, 1] < 100) & (ring[:, 2] < 100)
    return bool(red.mean() >= 0.9)


def crop_border(image: np.ndarray) -> tuple[np.ndarray, bool]:
    """``image`` without its 1-pixel red border, and whether it had one (if not, ``image`` unchanged)."""
    if has_red_border(image):
        return np.ascontiguousarray(image[1:-1, 1:-1]), True
    return image, False


@dataclass(frozen=True, kw_only=True)
class NaturalShiftConfig(LimitedConfig):
    """A natural-shift run: the set's folder (``data``: the folder holding its class folders), the
    clean ImageNet val folder or run, and how the model's 1,000 logits become the set's classes
    (``projection``: per class its ImageNet columns; None: the 1,000 as they are). ``zero_shot_classes``
    is recorded only when it is ``subset``."""

    classes_per_unit: int
    top_k: int
    save_logits: bool
    clean_data: str | None
    clean_run: str | None
    projection: list[list[int]] | None
    num_classes: int | None
    zero_shot_classes: str = conditional("imagenet")


@dataclass(frozen=True, kw_only=True)
class ImageNetV2Config(NaturalShiftConfig):
    """An ``imagenetv2`` run: also its ``variant`` (matched-frequency, threshold0.7, top-images)."""

    variant: str | None


def classify_projected(model: torch.nn.Module, x: torch.Tensor, config: NaturalShiftConfig, benchmark: str,
                       ) -> dict[str, np.ndarray]:
    """The standard prediction columns over the benchmark's classes: the model's 1,000 ImageNet
    logits projected (max over each class's columns). ModelError naming both sizes when the model
    does not give 1,000 logits."""
    import torch

    from ..engine.classification import check_declared_classes, classify_batch
    from ..models.label_space import for_class_names
    from ..models.projection import project_logits
    from ..models.protocol import check_logits

    model = for_class_names(model, ilsvrc_wnids())
    groups = config.projection
    name = getattr(model, "name", type(model).__name__)

    class Projected(torch.nn.Module):
        def forward(self, inputs):
            raw = check_logits(model(inputs), inputs.shape[0], name, None, check_values=False)
            check_declared_classes(model, raw.shape[1])
            if raw.shape[1] != IMAGENET_CLASSES:
                raise ModelError(f"model {name!r} gives {raw.shape[1]} logits per image, but {benchmark} projects the "
                                 f"{IMAGENET_CLASSES} ImageNet-1k logits to its {len(groups)} classes: evaluate a "
                                 "1,000-class ImageNet model.")
            return project_logits(raw.float(), groups, "max")

    projected = Projected()
    projected.name = name
    return classify_batch(projected, x, top_k=int(config.top_k), save_logits=bool(config.save_logits),
                          num_classes=len(groups))


def accuracy_rows(counts: Mapping[str, tuple[int, int, int]]) -> list[MetricRow]:
    """Top-1 / top-5 accuracy per setting with 95% Clopper-Pearson bounds."""
    rows: list[MetricRow] = []
    for setting, (n, e1, e5) in counts.items():
        if not n:
            continue
        for metric, wrong in (("accuracy", e1), ("top5_accuracy", e5)):
            lo, hi = clopper_pearson(n - wrong, n)
            rows += [(metric, setting, (n - wrong) / n), (f"{metric}_low", setting, float(lo)),
                     (f"{metric}_high", setting, float(hi))]
    return rows


#: Images per class of the ImageNet val set (50,000 for 1,000 classes).
IMAGENET_VAL_PER_CLASS = 50


class NaturalShift(Benchmark):
    """Base of the natural-shift benchmarks (see the module docstring); subclasses set ``name``,
    :attr:`title`, :attr:`testbed_columns` and :meth:`layout`."""

    #: What the shifted set is called in tables and the effective-robustness figure.
    title = ""
    #: The set's (original, shifted) columns in imagenet-testbed's ``robustness_top1s.csv``.
    testbed_columns: tuple[str, str] = ("val", "")
    #: What the clean setting measures.
    original_set = "ImageNet val"
    options = (SAVE_LOGITS, LIMIT, LIMIT_ORDER, CLEAN_DATA, CLEAN_RUN, CLASSES_PER_UNIT, TOP_K,
               Option("zero_shot_classes", "str", "imagenet", choices=ZERO_SHOT_CLASSES,
                      help="Zero-shot models (open_clip:): imagenet (default: the 1,000-class head, projected to the "
                      "set's classes) or subset (a head built from the set's own class names, as CLIP's paper)."))
    config_class = NaturalShiftConfig
    presentation = "natural-shift"
    option_hints = {"corruptions": "{name} is a natural-shift test set: it takes no corruptions.",
                    "severities": "{name} is a natural-shift test set: it takes no severities."}

    def __init__(self) -> None:
        self._layouts: dict[str, ShiftLayout] = {}

    def layout(self, root: Path) -> ShiftLayout:  # pragma: no cover - abstract
        raise NotImplementedError

    def _layout_of(self, config: NaturalShiftConfig) -> ShiftLayout:
        key = config.data
        if key not in self._layouts:
            self._layouts[key] = self.layout(Path(key))
        return self._layouts[key]

    def shift_name(self, config: NaturalShiftConfig) -> str:
        return self.name

    def configure(self, data: str, *, save_logits, limit, limit_order, clean_data, clean_run, classes_per_unit, top_k,
                  zero_shot_classes="imagenet", **extra: Any) -> NaturalShiftConfig:
        """``extra``: the options a subclass adds to :attr:`options` (fields of its config, as given).
        ``zero_shot_classes`` is recorded only when it is ``subset`` (runs made before it existed keep
        their identity)."""
        if zero_shot_classes not in ZERO_SHOT_CLASSES:
            raise InputError(f"zero_shot_classes must be one of {', '.join(ZERO_SHOT_CLASSES)}; got {zero_shot_classes!r}.")
        if clean_data is not None and clean_run is not None:
            raise InputError("give either clean_data (an ImageNet val folder) or clean_run (a stored run), not both.")
        root = Path(data).expanduser().resolve()
        limits = limit_config(limit, limit_order)
        fields = {"classes_per_unit": check_positive("classes_per_unit", classes_per_unit),
                  "top_k": check_positive("top_k", top_k), "save_logits": bool(save_logits)}
        clean = str(Path(clean_data).expanduser().resolve()) if clean_data else None
        layout = self.layout(root)
        self._layouts[str(root)] = layout
        self._layouts[layout.root] = layout
        config = self.config_class(data=layout.root, **extra, **limits, **fields, clean_data=clean, clean_run=clean_run,
                                   projection=layout.groups, num_classes=None if layout.groups else IMAGENET_CLASSES,
                                   zero_shot_classes=zero_shot_classes)
        if clean:
            present = set(folders_of(Path(clean)))
            missing = sorted(set(layout.clean_labels) - present)
            if len(missing) == len(layout.clean_labels):
                raise DataError(f"clean data {clean} has none of the ImageNet wnid folders {self.name} "
                                "needs; it must be the ImageNet val set in the layout <root>/<wnid>/<image>.")
        if config.limit:
            shifted = self.samples(config, Unit("", SHIFTED_SETTING, {"folder": layout.root,
                                                                      "classes": sorted(layout.labels)}))
            config = config.replace(**limit_config(limit, limit_order, shifted))
        return config

    def related_runs(self, config: NaturalShiftConfig) -> dict[str, str]:
        return {"clean_run": config.clean_run} if config.clean_run else {}

    def plan(self, config: NaturalShiftConfig):
        per_unit = None if config.limit else config.classes_per_unit
        layout = self._layout_of(config)
        blocks = [(SHIFTED_SETTING, layout.root, sorted(layout.labels))]
        if config.clean_data:
            present = set(folders_of(Path(config.clean_data)))
            blocks.append((CLEAN_SETTING, config.clean_data, sorted(w for w in layout.clean_labels if w in present)))
        for setting, folder, classes in blocks:
            chunks = [classes] if not per_unit else [classes[i:i + per_unit] for i in range(0, len(classes), per_unit)]
            for k, chunk in enumerate(chunks):
                yield Unit.of(setting, k, {"folder": folder, "classes": chunk})

    def samples(self, config: NaturalShiftConfig, unit: Unit):
        layout = self._layout_of(config)
        labels = layout.labels if unit.setting == SHIFTED_SETTING else layout.clean_labels
        folder = Path(unit.params["folder"])
        other = {f: len(labels) + k for k, f in enumerate(f for f in class_folders(folder) if f not in labels)}
        return read_image_folder(folder, {**labels, **other}, classes=unit.params["classes"], limit=config.limit,
                                 limit_order=config.order)

    def zero_shot_labels(self, config: NaturalShiftConfig):
        """The zero-shot labels of the set's own classes (``zero_shot_classes=subset``): CLIP's names
        of its ImageNet classes, with CLIP's templates (ObjectNet overrides this with its own names)."""
        from ..models.zero_shot import imagenet_labels

        groups = config.projection
        labels = imagenet_labels()
        if not groups:
            return labels
        return labels.subset([g[0] for g in groups], f"{self.title}'s {len(groups)} classes (CLIP's names)")

    def classify(self, model, x, config: NaturalShiftConfig) -> dict[str, np.ndarray]:
        if config.zero_shot_classes == "subset" and hasattr(model, "for_labels"):
            from ..engine.classification import classify_batch

            head = model.for_labels(self.zero_shot_labels(config))
            return classify_batch(head, x, top_k=int(config.top_k), save_logits=bool(config.save_logits),
                                  num_classes=len(config.projection or ()) or IMAGENET_CLASSES)
        if config.projection:
            return classify_projected(model, x, config, self.name)
        return super().classify(model, x, config)

    def class_names(self, config: NaturalShiftConfig) -> tuple[str, ...]:
        return tuple(ilsvrc_wnids())  # the model's 1,000 ImageNet classes, projected afterwards

    def metrics(self, config: NaturalShiftConfig, predictions, related=None) -> list[MetricRow]:
        settings = {u: setting_of(u) for u in predictions}
        counts = setting_counts(predictions, settings)
        if related and "clean_run" in related:
            clean = {u: c for u, c in related["clean_run"].items() if setting_of(u) == CLEAN}
            if not clean:
                raise DataError(f"stored run {config.clean_run} has no clean units; give --clean-data instead.")
            add_setting_counts(counts, clean, CLEAN)
        rows = list(error_rows(counts)) + accuracy_rows(counts)
        borders = [c["had_border"] for u, c in predictions.items() if settings[u] == SHIFTED and "had_border" in c]
        if borders:
            flags = np.concatenate(borders)
            rows.append(("images_without_border", SHIFTED, float((~flags.astype(bool)).sum())))
        return rows

    def testbed_columns_of(self, config: NaturalShiftConfig) -> tuple[str, str]:
        return self.testbed_columns

    def original_set_of(self, n_clean: int, classes: int) -> str:
        """What the clean accuracy measured: :attr:`original_set` when ``--clean-data`` held the whole
        ImageNet val set of these classes (50 images each), else says how much of it (a partial
        folder or a limited run is not "ImageNet val", and is not put on one trend with it)."""
        expected = IMAGENET_VAL_PER_CLASS * classes
        if n_clean == expected:
            return self.original_set
        return f"{self.original_set}: {n_clean} of its {expected:,} images only"


@register_benchmark
class ImageNetV2(NaturalShift):
    """ImageNetV2 (Recht et al. 2019): ``<root>/<class index 0..999>/<image>``; option ``variant``
    (``matched-frequency``, ``threshold0.7``, ``top-images``; default: read from the folder name
    ``imagenetv2-<variant>-format-val``)."""

    name = "imagenetv2"
    title = "ImageNetV2"

    options = (*NaturalShift.options, Option("variant", "str", help="matched-frequency, threshold0.7 or "
                                             "top-images (default: from the folder's name)."))
    config_class = ImageNetV2Config

    def configure(self, data: str, **options: Any) -> ImageNetV2Config:
        config = super().configure(data, **options)
        variant = config.variant
        if variant is None:
            folder = Path(config.data).name
            variant = next((v for v in V2_VARIANTS if v.replace("-", "") in folder.replace("-", "")), None)
            if variant is None:
                raise InputError(f"cannot tell the ImageNetV2 variant from the folder name {folder!r}: give "
                                 f"-O variant=<{'|'.join(V2_VARIANTS)}>.")
        if variant not in V2_VARIANTS:
            raise InputError(f"unknown ImageNetV2 variant {variant!r}; use one of {', '.join(V2_VARIANTS)}.")
        return config.replace(variant=variant)

    def layout(self, root: Path) -> ShiftLayout:
        return full_layout(root, numbered=True, name="ImageNetV2")

    def shift_name(self, config: ImageNetV2Config) -> str:
        return f"imagenetv2-{config.variant}"

    def testbed_columns_of(self, config: ImageNetV2Config) -> tuple[str, str]:
        column = {"matched-frequency": "imagenetv2-matched-frequency-format-val",
                  "threshold0.7": "imagenetv2-threshold-0.7-format-val",
                  "top-images": "imagenetv2-top-images-format-val"}[config.variant]
        return ("val", column)


@register_benchmark
class ImageNetA(NaturalShift):
    """ImageNet-A (Hendrycks et al. 2021): ``<root>/<wnid>/<image>``, 200 classes; logits projected to the 200."""

    name = "imagenet-a"
    title = "ImageNet-A"
    testbed_columns = ("val-on-imagenet-a-classes", "imagenet-a")
    original_set = "ImageNet val, ImageNet-A's 200 classes"

    def layout(self, root: Path) -> ShiftLayout:
        return subset_layout(root, imagenet_a_indices(), "ImageNet-A")


@register_benchmark
class ImageNetR(NaturalShift):
    """ImageNet-R (Hendrycks et al. 2021): ``<root>/<wnid>/<image>``, 200 classes; logits projected to the 200."""

    name = "imagenet-r"
    title = "ImageNet-R"
    testbed_columns = ("val-on-imagenet-r-classes", "imagenet-r")
    original_set = "ImageNet val, ImageNet-R's 200 classes"

    def layout(self, root: Path) -> ShiftLayout:
        return subset_layout(root, imagenet_r_indices(), "ImageNet-R")


@register_benchmark
class ImageNetSketch(NaturalShift):
    """ImageNet-Sketch (Wang et al. 2019): ``<root>/<wnid>/<image>``, the 1,000 classes."""

    name = "imagenet-sketch"
    title = "ImageNet-Sketch"
    testbed_columns = ("val", "imagenet-sketch")

    def layout(self, root: Path) -> ShiftLayout:
        return full_layout(root, numbered=False, name="ImageNet-Sketch")


@register_benchmark
class ObjectNet(NaturalShift):
    """ObjectNet 1.0 (Barbu et al. 2019): ``<root>/images/<class folder>/<image>``; the 113 classes
    overlapping ImageNet-1k, each scoring the max of its ImageNet logits; 1-pixel border cropped."""

    name = "objectnet"
    title = "ObjectNet"
    testbed_columns = ("val-on-objectnet-classes", "objectnet-1.0-beta")
    original_set = "ImageNet val, ObjectNet's 113 classes"

    def layout(self, root: Path) -> ShiftLayout:
        return objectnet_layout(root)

    def zero_shot_labels(self, config: NaturalShiftConfig):
        """ObjectNet's own names of its 113 ImageNet-overlapping classes (``Air freshener``...)."""
        from ..models.zero_shot import ZeroShotLabels, imagenet_labels

        names = objectnet_folders()
        return ZeroShotLabels(tuple(names[f] for f in sorted(objectnet_to_imagenet())), imagenet_labels().templates,
                              "ObjectNet's 113 class names")

    def samples(self, config: NaturalShiftConfig, unit: Unit):
        images = super().samples(config, unit)
        return BorderedSamples(images) if unit.setting == SHIFTED_SETTING else images

    def load(self, samples, i: int, prepare) -> Sample:
        image = samples.read(i)
        had = True  # the clean ImageNet images have no border to crop
        if isinstance(samples, BorderedSamples):
            image, had = crop_border(image)
        return Sample(sample_id(samples, i), int(samples.labels[i]), prepare(image), BorderInfo(had))

    def predict(self, model, batch, config: NaturalShiftConfig) -> dict[str, np.ndarray]:
        out = self.classify(model, batch.stacked_inputs(model_device(model)), config)
        out["had_border"] = np.asarray(batch.context["had_border"], dtype=bool)
        return out


class NaturalShiftShow(Presentation):
    """How the natural-shift runs are shown: top-1 / top-5 accuracy with intervals on the shifted set and
    the clean one, and the (original, shifted) pair of the effective-robustness trend; the set's facts
    (its name, the original set, the testbed's columns) are its benchmark's. The report's section
    extends it (:mod:`robustlab.report.section_shifts`)."""

    name = "natural-shift"
    title = "Natural distribution shifts"
    headline = (HeadlineMetric("accuracy", "top-1", setting=SHIFTED), HeadlineMetric("top5_accuracy", "top-5",
                                                                                    setting=SHIFTED))

    def notes(self, config: NaturalShiftConfig, metrics: Iterable[MetricRow]) -> list[str]:
        table = {(m, s): v for m, s, v in metrics}
        notes = []
        if (("accuracy", CLEAN)) not in table:
            notes.append("no clean accuracy: give --clean-data <ImageNet val folder> (or --clean-run) for the "
                         "original accuracy on the same classes, the x axis of effective robustness.")
        missing = table.get(("images_without_border", SHIFTED))
        if missing:
            notes.append(f"{int(missing)} ObjectNet image(s) had no 1-pixel red border and were evaluated uncropped "
                         "(every released ObjectNet image has one: a re-encoded or already cropped copy?).")
        return notes

    def summary(self, config: NaturalShiftConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        table = {(m, s): v for m, s, v in metrics}
        bench = self.benchmark
        out: dict[str, Any] = {"set": bench.shift_name(config), "classes": len(config.projection or []) or IMAGENET_CLASSES}
        for setting in (SHIFTED, CLEAN):
            if (("accuracy", setting)) in table:
                out[setting] = {k: table.get((k, setting)) for k in ("accuracy", "accuracy_low", "accuracy_high",
                                                                      "top5_accuracy", "top5_accuracy_low",
                                                                      "top5_accuracy_high")}
                out[setting]["n"] = int(table.get(("n_samples", setting), 0))
        if SHIFTED in out and CLEAN in out:
            out["accuracy_pair"] = {"shift": bench.shift_name(config),
                                    "original_set": bench.original_set_of(out[CLEAN]["n"], out["classes"]),
                                    "original": out[CLEAN]["accuracy"], "original_n": out[CLEAN]["n"],
                                    "shifted": out[SHIFTED]["accuracy"], "shifted_n": out[SHIFTED]["n"],
                                    "testbed_columns": list(bench.testbed_columns_of(config))}
        return out

    def text(self, config: NaturalShiftConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        from ..engine.result_text import pct

        lines = [f"{summary.get('set')}: {summary.get('classes')} classes"]
        pair = summary.get("accuracy_pair") or {}
        for setting, title in ((SHIFTED, summary.get("set")), (CLEAN, pair.get("original_set", self.benchmark.original_set))):
            row = summary.get(setting)
            if not row:
                continue
            lines.append(f"{title:<34} top-1 {pct(row['accuracy'])} [{pct(row['accuracy_low'])}, "
                         f"{pct(row['accuracy_high'])}]   top-5 {pct(row['top5_accuracy'])} "
                         f"[{pct(row['top5_accuracy_low'])}, {pct(row['top5_accuracy_high'])}]   n {row['n']}")
        return lines
