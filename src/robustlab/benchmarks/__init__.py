"""The built-in benchmark families, one module each, as plugins of the engine.

Importing this package registers them (the engine's registry does so on first lookup):

- :mod:`.corruption` -- ``imagenet-c`` (released ImageNet-C / CIFAR-10-C) and ``corrupted``
  (any labelled folder, corrupted on the fly): CE, mCE, relative mCE;
- :mod:`.perturbation` -- ``imagenet-p`` and ``perturbed``: FP, FR, mFR, T5D, mT5D;
- :mod:`.video` -- ``imagenet-vid-robust``, ``ytbb-robust``, ``video-pmk``: pm-k;
- :mod:`.detection` -- ``coco-c``, ``voc-c``, ``cityscapes-c``, ``detection-corrupted``,
  ``imagenet-vid-robust-detection``, ``mmdet-results``: P, mPC, rPC, detection pm-k;
- :mod:`.adversarial` -- ``adversarial-auc``: accuracy over an epsilon grid and R.

Adding a benchmark touches one file: subclass :class:`robustlab.engine.Benchmark` and decorate
it with :func:`robustlab.engine.register_benchmark` (see :mod:`robustlab.engine`).
"""

from . import adversarial, corruption, detection, perturbation, video  # noqa: F401  (register)

__all__ = ["adversarial", "corruption", "detection", "perturbation", "video"]
