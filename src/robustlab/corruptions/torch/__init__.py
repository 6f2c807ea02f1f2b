"""The 19 corruptions as batched torch operations, on the batch's device (CPU, CUDA, MPS).

>>> import torch
>>> from robustlab.corruptions import corrupt_batch
>>> x = torch.rand(2, 3, 64, 64)                     # float (N, 3, H, W) in [0, 1], any device
>>> corrupt_batch(x, "fog", 3, seed=0, ids=["a.jpg", "b.jpg"]).shape
torch.Size([2, 3, 64, 64])

:func:`robustlab.corruptions.corrupt_batch` dispatches here when given a tensor;
:func:`corrupt_tensor` is the same call. The numpy path (:mod:`robustlab.corruptions`) is the
definition; this backend follows it within the bounds measured by ``perf/parity_torch.py``
(recorded in ``parity.json`` beside this file, shown by ``robustlab list``).

Importing this package does not import torch (``robustlab list`` reads the parity record
through it); the kernels load on first use of :func:`corrupt_tensor` and its companions.
"""

from __future__ import annotations

import importlib

from .parity import PARITY_FILE, load_parity, parity_status

#: Public names loaded on first access, from the modules that need torch.
_LAZY = {
    "EXPECTED": "batch", "check_tensor": "batch", "corrupt_tensor": "batch", "image_severities": "batch",
    "TorchKernel": "registry", "get_torch_kernel": "registry", "torch_kernel_names": "registry",
    "TorchvisionRandomCorruption": "augment",
}

__all__ = [
    "EXPECTED", "PARITY_FILE", "TorchKernel", "TorchvisionRandomCorruption", "check_tensor",
    "corrupt_tensor", "get_torch_kernel", "image_severities", "load_parity", "parity_status", "torch_kernel_names",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
