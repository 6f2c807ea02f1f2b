"""The built-in benchmark families, one module each, as plugins of the engine.

Importing this package names them in the engine's registry (which imports it on first
lookup); a family's module is imported only when one of its benchmarks is used, so a command
that needs one benchmark never pays for the others' dependencies:

- :mod:`.corruption` -- ``imagenet-c`` (released ImageNet-C / CIFAR-10-C) and ``corrupted``
  (any labelled folder, corrupted on the fly): CE, mCE, relative mCE;
- :mod:`.perturbation` -- ``imagenet-p`` and ``perturbed``: FP, FR, mFR, T5D, mT5D;
- :mod:`.video` -- ``imagenet-vid-robust``, ``ytbb-robust``, ``video-pmk``: pm-k;
- :mod:`.detection` -- ``coco-c``, ``voc-c``, ``cityscapes-c``, ``detection-corrupted`` (and
  :mod:`.detection_mmdet` ``mmdet-results``, :mod:`.detection_pmk` ``imagenet-vid-robust-detection``):
  P, mPC, rPC, detection pm-k;
- :mod:`.adversarial` -- ``adversarial-auc``: accuracy over an epsilon grid and R;
- :mod:`.corruption_bar` -- ``imagenet-c-bar`` (released ImageNet-C-bar / CIFAR-10-C-bar):
  mean error, CE-bar, mCE-bar;
- :mod:`.natural_shift` -- ``imagenetv2``, ``imagenet-a``, ``imagenet-r``, ``imagenet-sketch``,
  ``objectnet``: top-1 / top-5 accuracy with intervals, the effective-robustness pair;
- :mod:`.subtype` -- ``subtype-robustness``: seen vs unseen subtype accuracy of 25 broad types.

A family is its config (a frozen dataclass, :mod:`robustlab.engine.config`), its benchmarks, and its
presentation (notes, summary, ``show`` text: a ``*_presentation`` module or class here, extended by its
report section in :mod:`robustlab.report`, where it is registered). Another package adds a benchmark in
one file: subclass :class:`robustlab.engine.Benchmark` (declaring its options, config class and
presentation), decorate it with :func:`robustlab.engine.register_benchmark`, and list the module under
the entry-point groups ``robustlab.benchmarks`` and ``robustlab.presentations`` (see
docs/extending.md). A built-in family also names its benchmarks in :data:`BUILTIN`, so that they load
lazily.
"""

from ..engine.benchmark import BENCHMARKS

#: Benchmark name -> the module of this package that registers it (so that naming a benchmark
#: imports only its family's module). The order is the registration order: reports and lists
#: present the families in it.
BUILTIN = {
    "imagenet-c": "corruption", "corrupted": "corruption",
    "imagenet-c-bar": "corruption_bar",
    "imagenetv2": "natural_shift", "imagenet-a": "natural_shift", "imagenet-r": "natural_shift",
    "imagenet-sketch": "natural_shift", "objectnet": "natural_shift",
    "imagenet-p": "perturbation", "perturbed": "perturbation",
    "imagenet-vid-robust": "video", "ytbb-robust": "video", "video-pmk": "video",
    "adversarial-auc": "adversarial",
    "coco-c": "detection", "voc-c": "detection", "cityscapes-c": "detection", "detection-corrupted": "detection",
    "mmdet-results": "detection_mmdet", "imagenet-vid-robust-detection": "detection_pmk",
    "subtype-robustness": "subtype",
}

for _name, _module in BUILTIN.items():
    BENCHMARKS.add_lazy(_name, f"{__name__}.{_module}")

__all__ = ["BUILTIN"]
