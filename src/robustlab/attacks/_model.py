"""Helpers shared by the attacks: eval mode, gradient checks, device and dtype handling."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import torch

from ..errors import InputError, ModelError

#: A differentiable classifier: float NCHW in [0, 1] -> logits (N x classes). Normalisation,
#: resizing etc. live inside it (robustlab model adapters do this), so attacks work in pixel space.
Classifier = Callable[[torch.Tensor], torch.Tensor]


@contextlib.contextmanager
def eval_mode(model: object) -> Iterator[None]:
    """Put every submodule of ``model`` in eval mode; restore each one's own flag afterwards.

    Attacks must not update BatchNorm statistics or sample dropout masks; users often hand
    over a model in train mode and expect it back in train mode.
    """
    modules = list(model.modules()) if isinstance(model, torch.nn.Module) else []
    flags = [m.training for m in modules]
    try:
        for m in modules:
            m.train(False)
        yield
    finally:
        for m, flag in zip(modules, flags):
            m.train(flag)


def model_device(model: object, default: torch.device | str = "cpu") -> torch.device:
    """The device of the model's first parameter (or ``default`` for parameter-free callables)."""
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            return p.device
    return torch.device(default)


def model_dtype(model: object) -> torch.dtype:
    """The floating dtype of the model's first parameter (float32 for parameter-free callables)."""
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            if p.is_floating_point():
                return p.dtype
    return torch.float32


def check_pixels(x: torch.Tensor, name: str = "x") -> torch.Tensor:
    """Validate a float NCHW batch in [0, 1]."""
    if not isinstance(x, torch.Tensor):
        raise InputError(f"{name} must be a torch.Tensor (float NCHW in [0, 1]); got {type(x).__name__}.")
    if not x.is_floating_point():
        raise InputError(f"{name} must be a float tensor in [0, 1]; got {x.dtype}. Divide uint8 images by 255.")
    if x.ndim != 4:
        raise InputError(f"{name} must be NCHW (4-D); got shape {tuple(x.shape)}.")
    if x.numel() and (float(x.min()) < 0.0 or float(x.max()) > 1.0):
        raise InputError(f"{name} has values outside [0, 1] (min {float(x.min()):.3g}, max {float(x.max()):.3g}); "
                         "attacks work in pixel space: move normalisation into the model adapter.")
    return x


def check_labels(y: torch.Tensor, n: int, name: str = "y") -> torch.Tensor:
    """Validate ``y`` as ``n`` non-negative integer class indices (1-D) and return it as int64."""
    if not isinstance(y, torch.Tensor) or y.ndim != 1 or y.shape[0] != n:
        raise InputError(f"{name} must be a 1-D tensor of {n} class indices; got "
                         f"{tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__}.")
    if y.is_complex() or y.dtype == torch.bool or (
            y.is_floating_point() and not bool(torch.all(torch.isfinite(y) & (y == torch.round(y))))):
        raise InputError(f"{name} must hold integer class indices; got dtype {y.dtype} with non-integer values.")
    if y.numel() and int(y.min()) < 0:
        raise InputError(f"{name} holds the negative class index {int(y.min())}; labels are 0..classes-1.")
    return y.long()


def check_label_range(y: torch.Tensor, num_classes: int, name: str = "y") -> None:
    """Raise InputError when a label of ``y`` is not below ``num_classes`` (the model's outputs).

    Checked before the loss: an out-of-range target is an IndexError on the CPU and a device
    assertion that ruins the CUDA context on a GPU.
    """
    if y.numel() and int(y.max()) >= num_classes:
        bad = int(y.max())
        raise InputError(f"{name} holds class index {bad}, but the model outputs {num_classes} classes (0.."
                         f"{num_classes - 1}); check the labels' class map or the model's number of classes.")


def check_eps(eps: float, name: str = "eps") -> float:
    """A finite, non-negative attack strength as a float (InputError naming ``name`` otherwise)."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number; got {eps!r}.") from None
    if not (math.isfinite(value) and value >= 0.0):  # NaN and inf too: an unbounded attack is no strength
        raise InputError(f"{name} must be a finite, non-negative number (pixel units of [0, 1]); got {eps!r}.")
    return value


def logits_of(model: Classifier, x: torch.Tensor) -> torch.Tensor:
    """Call the model and check its output is a finite N x C tensor."""
    out = model(x)
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != x.shape[0]:
        raise ModelError(f"the model must return logits of shape (N, classes) for N={x.shape[0]} inputs; got "
                         f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}.")
    if not torch.isfinite(out).all():
        raise ModelError("the model returned NaN or infinite logits; check its weights and preprocessing.")
    return out


def input_gradient(model: Classifier, x: torch.Tensor, y: torch.Tensor, *, targeted: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient of the attack objective w.r.t. the input, and the logits at ``x``.

    Untargeted: gradient of the cross-entropy with the true label (to ascend). Targeted: the
    negative cross-entropy with the target label (ascending it moves towards the target).
    Summed over the batch so each sample's gradient is its own.
    """
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        logits = logits_of(model, x)
        check_label_range(y, logits.shape[1], "labels")
        if not logits.requires_grad:
            raise ModelError("the model's output does not depend differentiably on its input (no gradient); "
                             "gradient attacks need a torch model (ONNX and other non-torch models cannot be attacked).")
        loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
        if targeted:
            loss = -loss
        (grad,) = torch.autograd.grad(loss, x)
    return grad.detach(), logits.detach()
