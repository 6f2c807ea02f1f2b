"""Preprocessing wrappers: a classifier seen through CLAHE, ten crops or several scales.

A wrapper is itself a :class:`~robustlab.models.Classifier` (float NCHW [0, 1] pixels in,
logits out) around another classifier, so wrappers compose and every benchmark, attack and
report takes them as they take any model. A wrapped model is a different model: its ``name``
is the inner model's name with ``[wrap=<chain>]`` appended (``torchvision:resnet50:IMAGENET1K_V1
[wrap=clahe+ten-crop]``), so its runs are stored apart from the plain model's.

Example::

    from robustlab.models import load_model
    model = load_model("torchvision:resnet50", wrap="clahe,ten-crop")
    # or: wrap_classifier(load_model("torchvision:resnet50"), "clahe,ten-crop")

Wrappers (``--wrap`` on ``robustlab evaluate``, comma-separated; the first one named sees the
image first, so ``clahe,ten-crop`` equalises the image and then takes ten crops of it):

``clahe``
    Contrast-limited adaptive histogram equalisation of the L channel of CIE LAB (OpenCV:
    ``cv2.cvtColor(RGB2LAB)`` on uint8, ``cv2.createCLAHE(clipLimit=2.0, tileGridSize=(8, 8))``
    applied to L, back with ``LAB2RGB``), on the image at the model's input size (after its
    resize and crop). Parameters ``clip`` (clipLimit, default 2.0) and ``grid`` (tileGridSize,
    default 8): ``clahe:clip=3:grid=4``. Not differentiable (attacks refuse it).
``ten-crop``
    Resize the shorter side to the model's resize (256 for the ImageNet transform; parameter
    ``resize``), keep the central ``resize x resize`` square so that images of any aspect ratio
    batch together, take the four corner crops and the centre crop at the model's crop size,
    and the same five of the horizontally flipped square (torchvision's ``TenCrop`` on that
    square); average the ten softmax distributions.
``multi-scale``
    Run the network on the model-sized image rescaled (bilinear, antialiased when shrinking)
    by each factor of ``scales`` (default ``0.75/1/1.25``: 168, 224 and 280 px for a 224 px
    model) and average the softmax distributions. The network must accept any input size
    (convolutional networks with global pooling do; a fixed-size ViT does not).

Averaging wrappers return ``log(mean softmax)``: a softmax of their output is the averaged
distribution, and top-k is read from it as from any logits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError, ModelError, unknown_name
from .preprocessing import Preprocessing
from .protocol import Classifier

#: Separator of wrapper names in a stored chain (``clahe+ten-crop``); the CLI also takes commas.
CHAIN_SEPARATOR = "+"
#: ``wrap=<chain>`` inside the options bracket ending a model name (see :func:`split_wrapped_name`).
_WRAP_VALUE = re.compile(r"wrap=(?P<chain>[^\s,\]]+)")


# --- CLAHE on uint8 images (also usable on its own) ---------------------------------------------------


def clahe_rgb(image: np.ndarray, clip_limit: float = 2.0, tile_grid: int = 8) -> np.ndarray:
    """CLAHE on the L channel of LAB of one uint8 HxWx3 RGB image; returns uint8 HxWx3 RGB.

    Parameters
    ----------
    image : np.ndarray
        uint8, shape (H, W, 3), RGB.
    clip_limit : float
        OpenCV ``clipLimit`` (contrast limit per tile, relative to a uniform histogram).
    tile_grid : int
        OpenCV ``tileGridSize`` is ``(tile_grid, tile_grid)`` tiles over the image.
    """
    import cv2

    if not (isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3):
        raise InputError(f"CLAHE needs a uint8 HxWx3 RGB image; got {getattr(image, 'dtype', type(image))} "
                         f"{getattr(image, 'shape', '')}.")
    lab = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2LAB)
    clahe = cv2.createCLAHE(clipLimit=float(clip_limit), tileGridSize=(int(tile_grid), int(tile_grid)))
    lab[:, :, 0] = clahe.apply(np.ascontiguousarray(lab[:, :, 0]))
    return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)


# --- the wrapper classes --------------------------------------------------------------------------------


def geometry_only(prep: Preprocessing) -> Preprocessing:
    """``prep`` without its normalisation: what a wrapper brings images to before its own step."""
    return Preprocessing(prep.resize, prep.crop, prep.interpolation)


def run_prepared(model: Classifier, x: torch.Tensor) -> torch.Tensor:
    """Logits of ``model`` for ``x`` taken as already brought to its geometry (no resize/crop).

    For a plain classifier that is ``net(normalize(x))``; for a wrapper its own step. This is how
    :class:`MultiScale` feeds a network images that are deliberately not at its input size.
    """
    if isinstance(model, WrappedClassifier):
        return model.run(x)
    return model.net(model.preprocessing.normalize(x))


def average_probabilities(logits: torch.Tensor, views: int) -> torch.Tensor:
    """``log(mean softmax)`` over ``views`` views: logits (views * N, K), view-major -> (N, K)."""
    n = logits.shape[0] // views
    log_probs = torch.log_softmax(logits.float(), dim=1).reshape(views, n, -1)
    return torch.logsumexp(log_probs, dim=0) - float(np.log(views))


class WrappedClassifier(Classifier):
    """Base of the wrappers: a classifier around ``inner`` (a Classifier, possibly wrapped).

    ``preprocessing`` is the geometry (resize, crop; no normalisation) images are brought to
    before :meth:`run`; the engine's workers use it to prepare images, as for any adapter.
    ``forward(x) = run(preprocessing.geometry(x))``.

    Attributes
    ----------
    inner : Classifier
        The wrapped model (also ``net``).
    step : str
        This wrapper's canonical name with its non-default parameters (``clahe:clip=3``).
    chain : str
        The steps from this wrapper inwards, joined by ``+`` (``clahe+ten-crop``).
    base_name : str
        The name of the innermost, unwrapped model.
    """

    wrapper_name = ""

    def __init__(self, inner: Classifier, *, step: str, geometry: Preprocessing, differentiable: bool | None = None):
        if not isinstance(inner, Classifier):
            raise InputError(f"the {self.wrapper_name} wrapper needs a classifier; got {type(inner).__name__}. "
                             "Detectors cannot be wrapped.")
        inner_chain = inner.chain if isinstance(inner, WrappedClassifier) else ""
        base_name = inner.base_name if isinstance(inner, WrappedClassifier) else inner.name
        chain = step + (CHAIN_SEPARATOR + inner_chain if inner_chain else "")
        super().__init__(inner, name=f"{base_name} [wrap={chain}]", preprocessing=geometry,
                         num_classes=inner.num_classes,
                         differentiable=inner.differentiable if differentiable is None else differentiable,
                         source={**inner.source, "wrap": chain})
        self.step = step
        self.chain = chain
        self.base_name = base_name

    @property
    def inner(self) -> Classifier:
        return self.net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(self.preprocessing.geometry(x))

    def run(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError


class CLAHE(WrappedClassifier):
    """CLAHE on the L channel of LAB (OpenCV, uint8), then the inner model (see module docstring).

    Parameters
    ----------
    inner : Classifier
    clip_limit : float
        OpenCV ``clipLimit`` (default 2.0).
    tile_grid : int
        OpenCV ``tileGridSize`` = ``(tile_grid, tile_grid)`` (default 8).
    """

    wrapper_name = "clahe"
    DEFAULTS = {"clip": 2.0, "grid": 8}

    def __init__(self, inner: Classifier, *, clip_limit: float = 2.0, tile_grid: int = 8) -> None:
        if not float(clip_limit) > 0:
            raise InputError(f"clahe clip limit must be positive; got {clip_limit}.")
        if int(tile_grid) < 1:
            raise InputError(f"clahe tile grid must be at least 1; got {tile_grid}.")
        step = format_step("clahe", {"clip": float(clip_limit), "grid": int(tile_grid)}, self.DEFAULTS)
        super().__init__(inner, step=step, geometry=geometry_only(inner.preprocessing), differentiable=False)
        self.clip_limit = float(clip_limit)
        self.tile_grid = int(tile_grid)

    def equalize(self, x: torch.Tensor) -> torch.Tensor:
        """CLAHE of a float NCHW [0, 1] batch (through uint8, as OpenCV works), same device and dtype."""
        pixels = (x.detach().clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        out = np.stack([clahe_rgb(img, self.clip_limit, self.tile_grid) for img in pixels])
        return torch.from_numpy(out).to(x.device).permute(0, 3, 1, 2).to(x.dtype).div_(255.0)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(self.equalize(x))

    def run_any_size(self, x: torch.Tensor) -> torch.Tensor:
        return run_prepared(self.inner, self.equalize(x))


class TenCrop(WrappedClassifier):
    """Average over ten crops: corners, centre and their mirror images (see module docstring).

    Parameters
    ----------
    inner : Classifier
        Must have a crop size (its ``preprocessing.crop``).
    resize : int, optional
        Side of the square the crops come from (default: the inner model's resize, else
        ``round(crop * 256 / 224)``).
    """

    wrapper_name = "ten-crop"

    def __init__(self, inner: Classifier, *, resize: int | None = None) -> None:
        crop = inner.preprocessing.crop
        if crop is None:
            raise InputError(f"ten-crop needs a model with an input size; {inner.name} has no crop. Give one "
                             "(--crop 224, or preprocessing={'resize': 256, 'crop': 224}).")
        default_resize = inner.preprocessing.resize or int(round(max(crop) * 256 / 224))
        side = int(resize) if resize is not None else default_resize
        if side < max(crop):
            raise InputError(f"ten-crop resize {side} is smaller than the crop {crop}; give a resize >= the crop.")
        step = format_step("ten-crop", {"resize": side}, defaults={"resize": default_resize})
        super().__init__(inner, step=step, geometry=Preprocessing(side, (side, side), inner.preprocessing.interpolation))
        self.side = side
        self.crop_size = crop

    def crops(self, x: torch.Tensor) -> torch.Tensor:
        """The ten crops of a (N, 3, side, side) batch, crop-major: (10 * N, 3, ch, cw)."""
        ch, cw = self.crop_size
        h, w = x.shape[-2:]
        top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
        boxes = ((0, 0), (0, w - cw), (h - ch, 0), (h - ch, w - cw), (top, left))
        views = []
        for image in (x, x.flip(-1)):
            views += [image[..., t:t + ch, l:l + cw] for t, l in boxes]
        return torch.cat(views, dim=0)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return average_probabilities(self.inner(self.crops(x)), 10)


class MultiScale(WrappedClassifier):
    """Average over the model-sized image at several scales (see module docstring).

    Parameters
    ----------
    inner : Classifier
        A plain classifier or a CLAHE wrapper around one (put ``ten-crop`` before
        ``multi-scale`` to combine them: each crop is then seen at every scale).
    scales : sequence of float
        Factors applied to the model's input size (default 0.75, 1.0, 1.25).
    """

    wrapper_name = "multi-scale"
    DEFAULT_SCALES = (0.75, 1.0, 1.25)

    def __init__(self, inner: Classifier, *, scales: Sequence[float] = DEFAULT_SCALES) -> None:
        scales = tuple(float(s) for s in scales)
        if not scales or min(scales) <= 0:
            raise InputError(f"multi-scale needs positive scale factors; got {scales}.")
        layer = inner
        while isinstance(layer, WrappedClassifier):
            if not isinstance(layer, CLAHE):
                raise InputError(f"multi-scale cannot wrap {layer.step!r}: write {layer.wrapper_name} before "
                                 f"multi-scale (--wrap {layer.wrapper_name},multi-scale) so that each of its "
                                 "views is seen at every scale.")
            layer = layer.inner
        step = format_step("multi-scale", {"scales": "/".join(f"{s:g}" for s in scales)},
                           defaults={"scales": "/".join(f"{s:g}" for s in self.DEFAULT_SCALES)})
        super().__init__(inner, step=step, geometry=geometry_only(inner.preprocessing))
        self.scales = scales

    def run(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        outputs = []
        for s in self.scales:
            size = (max(1, int(round(h * s))), max(1, int(round(w * s))))
            xs = x if size == (h, w) else F.interpolate(x, size=size, mode="bilinear", align_corners=False,
                                                        antialias=s < 1)
            try:
                outputs.append(self.inner.run_any_size(xs) if isinstance(self.inner, CLAHE)
                               else run_prepared(self.inner, xs))
            except RuntimeError as exc:
                raise ModelError(f"model {self.base_name!r} failed on a {size[0]}x{size[1]} input at scale {s:g} "
                                 f"({exc}); multi-scale needs a network that takes any input size (convolutional "
                                 "with global pooling). Leave multi-scale out for this model.") from exc
        return average_probabilities(torch.cat(outputs, dim=0), len(outputs))


# --- specs: "clahe:clip=3,ten-crop" ----------------------------------------------------------------------


@dataclass(frozen=True)
class WrapperKind:
    """A wrapper by name: its class and its parameters (spec key -> (constructor keyword, parser))."""

    name: str
    build: Callable[..., WrappedClassifier]
    params: dict[str, tuple[str, Callable[[str], Any]]]


def _scales(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in re.findall(r"[^/]+", text))


WRAPPERS: dict[str, WrapperKind] = {
    "clahe": WrapperKind("clahe", CLAHE, {"clip": ("clip_limit", float), "grid": ("tile_grid", int)}),
    "ten-crop": WrapperKind("ten-crop", TenCrop, {"resize": ("resize", int)}),
    "multi-scale": WrapperKind("multi-scale", MultiScale, {"scales": ("scales", _scales)}),
}


def format_step(name: str, values: dict[str, Any], defaults: dict[str, Any]) -> str:
    """``name`` plus ``:key=value`` for each parameter that differs from its default, sorted."""
    extra = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(values.items())
             if defaults.get(k) != v]
    return ":".join([name, *extra])


def parse_wrap(spec: str | Sequence[str] | None) -> list[tuple[str, dict[str, Any]]]:
    """``[(wrapper name, constructor keywords), ...]`` of a wrap spec, outermost first.

    ``spec`` is ``"clahe,ten-crop"`` (or ``+``-separated, or a list); each item is a name with
    optional ``:key=value`` parameters (``clahe:clip=3:grid=4``, ``multi-scale:scales=0.5/1``).

    Raises
    ------
    InputError
        Unknown wrapper or parameter (with the known ones), a bad value, a wrapper named twice.
    """
    if spec is None:
        return []
    items = [spec] if isinstance(spec, str) else list(spec)
    parts = [p.strip() for item in items for p in re.split(r"[,+]", str(item)) if p.strip()]
    steps: list[tuple[str, dict[str, Any]]] = []
    for part in parts:
        name, *assignments = part.split(":")
        kind = WRAPPERS.get(name.strip().lower())
        if kind is None:
            raise unknown_name("model wrapper", name, WRAPPERS)
        kwargs: dict[str, Any] = {}
        for assignment in assignments:
            key, sep, value = assignment.partition("=")
            if not sep or key.strip() not in kind.params:
                known = ", ".join(f"{k}=..." for k in kind.params) or "none"
                raise InputError(f"wrapper {kind.name!r}: cannot read parameter {assignment!r}; its parameters: "
                                 f"{known} (e.g. clahe:clip=3:grid=4).")
            keyword, parse = kind.params[key.strip()]
            try:
                kwargs[keyword] = parse(value.strip())
            except ValueError:
                raise InputError(f"wrapper {kind.name!r}: {key}={value!r} is not a valid value.") from None
        if any(n == kind.name for n, _ in steps):
            raise InputError(f"wrapper {kind.name!r} is named twice in {spec!r}; name each wrapper once.")
        steps.append((kind.name, kwargs))
    return steps


def wrap_classifier(model: Classifier, spec: str | Sequence[str] | None) -> Classifier:
    """``model`` inside the wrappers of ``spec`` (see :func:`parse_wrap`); ``model`` itself when none.

    The first wrapper named is the outermost (it sees the image first).
    """
    steps = parse_wrap(spec)
    if steps and not isinstance(model, Classifier):
        raise InputError(f"--wrap applies to classifiers; {getattr(model, 'name', model)!r} is a "
                         f"{type(model).__name__}.")
    for name, kwargs in reversed(steps):
        model = WRAPPERS[name].build(model, **kwargs)
    return model


def canonical_wrap(spec: str | Sequence[str] | None) -> str | None:
    """The stored form of a wrap spec (``"clahe+ten-crop"``; default parameters left out), or None.

    Computed without a model: ``ten-crop``'s default resize depends on the model, so an explicit
    ``resize`` is always kept here.
    """
    steps = parse_wrap(spec)
    if not steps:
        return None
    out = []
    for name, kwargs in steps:
        values = {k: kwargs[kw] for k, (kw, _) in WRAPPERS[name].params.items() if kw in kwargs}
        if name == "multi-scale" and "scales" in values:
            values["scales"] = "/".join(f"{s:g}" for s in values["scales"])
            defaults = {"scales": "/".join(f"{s:g}" for s in MultiScale.DEFAULT_SCALES)}
        elif name == "clahe":
            values = {k: (float(v) if k == "clip" else int(v)) for k, v in values.items()}
            defaults = CLAHE.DEFAULTS
        else:
            defaults = {}
        out.append(format_step(name, values, defaults))
    return CHAIN_SEPARATOR.join(out)


def split_wrapped_name(name: str) -> tuple[str, str | None]:
    """``(base model name, wrap chain or None)`` of a stored model name.

    ``"torchvision:resnet50 [wrap=clahe+ten-crop]"`` -> ``("torchvision:resnet50", "clahe+ten-crop")``;
    other bracketed options stay with the base (``"m [num_classes=30, wrap=clahe]"`` ->
    ``("m [num_classes=30]", "clahe")``).
    """
    start = name.rfind("wrap=")
    if start < 0 or not name.rstrip().endswith("]"):
        return name, None
    match = _WRAP_VALUE.match(name, start)
    before, after = name[:start], name[match.end():]
    if before.endswith("[") and after.startswith("]"):
        base = before[:-1].rstrip() + after[1:]
    elif before.endswith(", "):
        base = before[:-2] + after
    elif after.startswith(", "):
        base = before + after[2:]
    else:
        return name, None
    return base.rstrip(), match["chain"]
