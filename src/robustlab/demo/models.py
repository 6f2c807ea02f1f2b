"""The demo's tiny shipped models and the ``demo:`` model source.

- ``demo:cnn``: :class:`SceneCNN`, a small convolutional classifier of the 64x64 digit
  scenes (the "modern model"), with a local-contrast input layer, trained for 20 epochs;
- ``demo:cnn-noise``: the same architecture, start and data order, trained with the
  noise augmentation of ImageNet-Vid-Robust (paper 000): every training image gets exactly
  one of Gaussian noise, Gaussian blur, shot noise, contrast, impulse noise or JPEG, at a
  random severity 1-5 (:class:`robustlab.corruptions.transforms.RandomCorruption`);
- ``demo:baseline``: the same architecture trained for 5 epochs only: less accurate and less
  robust, it plays AlexNet's role as the normaliser of CE, relative CE, FR and T5D (its error
  rises under every corruption, so the ratios of the other models stay interpretable);
- ``demo:detector``: :class:`~robustlab.demo.detector.DigitCenterNet`, a tiny CenterNet-style
  detector of the multi-digit scenes.

All take float NCHW RGB pixels in [0, 1] and carry their normalisation inside. The
classifiers are wrapped with ``Preprocessing(resize=64, crop=64)``, so frames of any size are
brought to the training resolution (64x64 inputs pass unchanged). Weights live in
``robustlab/demo/weights/<name>.pt`` (a ``state_dict``, loadable with
``torch.load(weights_only=True)``); ``models.json`` next to them records the seed, the
training time and the measured test accuracy / AP.

>>> from robustlab.demo.models import load_demo_model
>>> cnn = load_demo_model("cnn")          # Classifier in the Model protocol, eval mode
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..errors import DataError, one_line_message, unknown_name
from ..safeload import load_checkpoint
from ..models.preprocessing import Preprocessing
from ..models.protocol import Classifier, Detector
from .detector import DigitCenterNet
from .layers import NUM_CLASSES, LocalContrast, conv_bn

#: Input side of the classifiers.
INPUT_SIZE = 64
METADATA_FILE = "models.json"


class SceneCNN(nn.Module):
    """Small CNN: (N, 3, 64, 64) pixels in [0, 1] -> (N, 10) logits (71 k parameters at width 32)."""

    def __init__(self, width: int = 32, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        w = width
        self.normalize = LocalContrast()
        self.features = nn.Sequential(
            conv_bn(6, w // 2, stride=2),                     # 32x32
            conv_bn(w // 2, w, stride=2), conv_bn(w, w),      # 16x16
            nn.MaxPool2d(2), conv_bn(w, 2 * w), conv_bn(2 * w, 2 * w),  # 8x8
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * w, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(self.normalize(x)))


#: Architecture of each shipped demo model (the classifiers differ only in how they were trained).
ARCHITECTURES = {"cnn": SceneCNN, "cnn-noise": SceneCNN, "baseline": SceneCNN, "detector": DigitCenterNet}
DEMO_MODELS = tuple(ARCHITECTURES)
#: The demo's classifiers (everything but the detector).
CLASSIFIERS = tuple(name for name in DEMO_MODELS if name != "detector")


def build_network(name: str) -> nn.Module:
    """A freshly initialised network of demo model ``name`` (one of :data:`DEMO_MODELS`)."""
    if name not in ARCHITECTURES:
        raise unknown_name("demo model", name, ARCHITECTURES)
    return ARCHITECTURES[name]()


def weights_dir() -> Path:
    """The folder of the shipped weights inside the installed package."""
    return Path(str(resources.files("robustlab.demo") / "weights"))


def weights_path(name: str, directory: str | Path | None = None) -> Path:
    return Path(directory or weights_dir()) / f"{name}.pt"


def load_metadata(directory: str | Path | None = None) -> dict[str, Any]:
    """``models.json``: per model its seed, training seconds, parameters, bytes and test scores."""
    path = Path(directory or weights_dir()) / METADATA_FILE
    if not path.is_file():
        raise DataError(f"{path} is missing: the demo weights are not installed; re-create them with "
                        "`python scripts/train_demo_models.py` (robustlab.demo.training.train_demo_models).")
    return json.loads(path.read_text(encoding="utf-8"))


def load_network(name: str, directory: str | Path | None = None) -> nn.Module:
    """The demo network ``name`` with its trained weights (``torch.load(weights_only=True)``)."""
    net = build_network(name)
    path = weights_path(name, directory)
    if not path.is_file():
        raise DataError(f"demo weights {path} are missing; re-create them with `python scripts/train_demo_models.py`.")
    fix = "re-create the demo weights with `python scripts/train_demo_models.py`"
    state = load_checkpoint(path, what="demo weights", fix=fix)
    try:
        net.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise DataError(f"demo weights {path} do not fit the {name} network ({one_line_message(exc)[:200]}); {fix}.") from None
    return net.eval()


def wrap_demo_network(name: str, net: nn.Module, directory: str | Path | None = None) -> Classifier | Detector:
    """Wrap a demo network in the Model protocol (name ``demo:<name>``)."""
    source = {"source": "demo", "weights": str(weights_path(name, directory).name)}
    if name == "detector":
        return Detector(net, name="demo:detector", num_classes=NUM_CLASSES, source=source)
    prep = Preprocessing(resize=INPUT_SIZE, crop=INPUT_SIZE)
    return Classifier(net, name=f"demo:{name}", preprocessing=prep, num_classes=NUM_CLASSES, source=source)


def load_demo_model(name: str, *, directory: str | Path | None = None,
                    device: str | torch.device = "cpu") -> Classifier | Detector:
    """Shipped demo model ``name`` (one of :data:`DEMO_MODELS`), in eval mode."""
    return wrap_demo_network(name, load_network(name, directory), directory).to(device).eval()


def load_demo_source(rest: str, options: dict[str, Any]) -> Classifier | Detector:
    """Model-source loader for ``demo:<name>`` specs (see :data:`robustlab.models.MODEL_SOURCES`)."""
    model = load_demo_model(rest)
    if options.get("preprocessing") is not None:
        model.preprocessing = options["preprocessing"]
    return model


def register_demo_source() -> None:
    """Register ``demo:`` with the model-source registry (idempotent). The registry imports this
    module the first time a model source is looked up, so ``load_model("demo:cnn")`` just works."""
    from ..models.registry import MODEL_SOURCES

    if "demo" not in MODEL_SOURCES:
        MODEL_SOURCES.add("demo", load_demo_source)


register_demo_source()
