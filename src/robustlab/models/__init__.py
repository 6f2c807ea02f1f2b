"""Models: one protocol for every classifier and detector, adapters by name, label projection.

The Model protocol (see :mod:`.protocol`):

- a **classifier** maps a float tensor (N, 3, H, W) of RGB pixels in [0, 1] to logits
  (N, num_classes);
- a **detector** maps the same input (or a list of (3, H_i, W_i) tensors) to one dict per
  image: ``boxes`` (K, 4) x1, y1, x2, y2 in input pixels, ``scores`` (K,), ``labels`` (K,).

Preprocessing (resize, centre crop, interpolation, mean/std) lives *inside* the adapter, so
inputs stay in pixel space and attacks differentiate through it.

>>> import torch
>>> from robustlab.models import load_model
>>> model = load_model("torchvision:resnet18:none", device="cpu")   # random weights, offline
>>> model(torch.rand(2, 3, 300, 400)).shape                         # float [0, 1] NCHW in, logits out
torch.Size([2, 1000])

Sources: ``torchvision:<name>[:<weights>|:none]``, ``timm:<name>[:none]``, ``onnx:<path>``,
``python:<module or file.py>:<callable>``, ``open_clip:<arch>:<tag or file>`` (zero-shot CLIP
models, :mod:`.openclip`), ``hf:<org>/<name>`` or ``hf:<folder>`` (``transformers`` classifiers,
:mod:`.hf`), or any ``nn.Module``/callable. Models that name their classes adapt to a benchmark's
(:mod:`.label_space`).
"""

from ..lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(("IMAGENET_MEAN", "IMAGENET_STD", "INTERPOLATIONS", "Preprocessing", "TorchvisionPreprocessing"),
                    ".preprocessing"),
    **dict.fromkeys(("MERGES", "groups_from_map", "project", "project_logits"), ".projection"),
    **dict.fromkeys(("Classifier", "Detector", "check_detections", "check_logits", "select_device"), ".protocol"),
    **dict.fromkeys(("MODEL_SOURCES", "load_model", "wrap_model"), ".sources"),
    **dict.fromkeys(("ModelSource", "canonical_spec", "model_source"), ".registry"),
    **dict.fromkeys(("ModelIdentity", "identify_model", "model_hash"), ".identity"),
    "fetch_checkpoint": ".weights",
}
__all__ = sorted(_EXPORTS)
# Names load on first use: describing a model (its preprocessing) never imports torch.
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
