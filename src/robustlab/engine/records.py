"""Sample and batch records: pixels travel with their context, never inside them.

A benchmark's loader (:meth:`robustlab.engine.Benchmark.load`, run in worker processes or Ray
tasks) returns one :class:`Sample` per sample: its id, its label, its pixels (uint8 HxWxC of
any size, or a (T, H, W, C) stack of frames; None for a model that needs no pixels, e.g. a
results file) and a small typed *context*: a frozen dataclass the benchmark declares (native
size, setting, RMSE, frame offsets...). :func:`collate` turns a list of samples into a
:class:`Batch` that keeps the context as columns (one numpy array per field) and stacks the
pixels when they share a shape, else keeps them as a list (detectors get their images at
native size). ``predict(model, batch, config)`` receives pixels and context together.

Example::

    @dataclass(frozen=True)
    class Where:
        native_hw: tuple[int, int]
        rmse: float

    b = collate([Sample("a.jpg", 3, img_a, Where((480, 640), 1.5)), Sample("b.jpg", 7, img_b, Where((375, 500), 2.0))])
    b.context["native_hw"]          # int64 (2, 2)
    b.inputs(device)                # float [0, 1], channels first: (N, 3, H, W), or a list when sizes differ
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, RobustlabError
from ..models.pixels import to_float

if TYPE_CHECKING:  # torch is imported where pixels become tensors, not when records are
    import torch


@dataclass(frozen=True)
class Sample:
    """One loaded sample.

    Attributes
    ----------
    id : str
        The sample's stable id (relative path, row number, frame key); stored as ``sample_id``.
    label : int
        The integer stored as ``label`` (the class index, -1 when unknown; the dataset index for
        detection images, whose boxes live in the benchmark's ground truth).
    pixels : np.ndarray or torch.Tensor or None
        uint8, (H, W, C) for an image or (T, H, W, C) for a stack of frames; None when the
        model needs no pixels.
    context : dataclass instance or None
        The benchmark's typed per-sample facts (a frozen dataclass of scalars and small
        tuples); becomes one column per field in the batch.
    """

    id: str
    label: int
    pixels: Any = None
    context: Any = None


@dataclass
class Batch:
    """Samples of one work unit, ready for ``predict``.

    Attributes
    ----------
    unit : str
        Key of the unit the batch belongs to (batches never mix units).
    start : int
        Position of the batch's first sample in its unit (batches are consecutive slices).
    positions : np.ndarray
        int64 (N,): positions in the unit of the samples that loaded (the others are
        ``problems``).
    ids : np.ndarray
        str (N,): sample ids.
    labels : np.ndarray
        int64 (N,).
    pixels : torch.Tensor, np.ndarray, list or None
        uint8 channels-last: one stacked (N, ..., H, W, C) array when every sample has the
        same shape, else a list of per-sample arrays; None when no sample has pixels.
    context : dict of str to np.ndarray
        One column per field of the samples' context dataclass, sample axis first.
    problems : list of (position, sample id, message)
        Samples that could not be loaded (unreadable file, too small to corrupt...).
    error : str or None
        Set by a worker when loading the whole batch failed with a robustlab error; the
        executor raises it again in the main process as one clear message.
    """

    unit: str
    start: int
    positions: np.ndarray
    ids: np.ndarray
    labels: np.ndarray
    pixels: Any = None
    context: dict[str, np.ndarray] = field(default_factory=dict)
    problems: list[tuple[int, str, str]] = field(default_factory=list)
    error: tuple[str, str] | None = None

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def stacked(self) -> bool:
        """True when the pixels are one array (every sample the same shape)."""
        return self.pixels is not None and not isinstance(self.pixels, list)

    def inputs(self, device: torch.device | str = "cpu", *, channels_first: bool = True):
        """The pixels as float tensors in [0, 1] on ``device``.

        Stacked pixels give one tensor (N, ..., C, H, W) (channels moved before the spatial
        axes: (N, 3, H, W) for images, (N, T, 3, H, W) for frame stacks); listed pixels give a
        list of per-sample tensors (..., C, H, W). With ``channels_first=False`` the layout
        stays channels-last.
        """
        if self.pixels is None:
            raise RobustlabError(f"the samples of unit {self.unit} carry no pixels (the model needs none).")
        if isinstance(self.pixels, list):
            return [to_float(p, device, channels_first=channels_first) for p in self.pixels]
        return to_float(self.pixels, device, channels_first=channels_first)

    def stacked_inputs(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """The pixels as one float tensor (N, ..., C, H, W) in [0, 1]; InputError when the samples
        differ in size (a classifier needs one input size: give the model a resize/crop)."""
        if isinstance(self.pixels, list):
            shapes = sorted({tuple(p.shape) for p in self.pixels})
            raise InputError(f"images in one batch of unit {self.unit} have different sizes {shapes[:3]}; give the "
                             "model an input size (preprocessing resize/crop, e.g. --resize 256 --crop 224) so they "
                             "can be batched.")
        return self.inputs(device)

    def stacked_pixels(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """The pixels as they loaded, one uint8 channels-last tensor (N, ..., H, W, C) on
        ``device`` (for work on the device before the float conversion, such as corrupting
        the batch there); InputError when the samples differ in size."""
        import torch

        if self.pixels is None or isinstance(self.pixels, list):
            self.stacked_inputs(device)  # the same clear errors
        t = self.pixels if isinstance(self.pixels, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(self.pixels))
        device = torch.device(device)
        return t.to(device, non_blocking=device.type == "cuda")

    def pin_memory(self) -> Batch:
        """The batch with its pixels in pinned memory (the DataLoader's pin-memory thread calls this)."""
        import torch

        if isinstance(self.pixels, torch.Tensor):
            self.pixels = self.pixels.pin_memory()
        elif isinstance(self.pixels, list):
            self.pixels = [p.pin_memory() if isinstance(p, torch.Tensor) else p for p in self.pixels]
        return self

    def label_tensor(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """The labels as an int64 tensor on ``device`` (e.g. for an attack)."""
        import torch

        return torch.as_tensor(self.labels, dtype=torch.int64, device=device)


def context_columns(contexts: Sequence[Any]) -> dict[str, np.ndarray]:
    """One numpy column per field of a list of context dataclasses (all of one type)."""
    if not contexts or contexts[0] is None:
        return {}
    kind = type(contexts[0])
    if not dataclasses.is_dataclass(kind):
        raise TypeError(f"a sample's context must be a dataclass instance; got {kind.__name__}.")
    names = [f.name for f in dataclasses.fields(kind)]
    return {name: np.asarray([getattr(c, name) for c in contexts]) for name in names}


class PixelSink:
    """Where a loader puts each sample's pixels as the sample loads, so a batch never holds them
    twice. This one keeps them and, at the end, stacks them (:func:`numpy.stack`, or ``stack``)
    when they share a shape, else returns them as a list; the local executor's sink writes each
    straight into its batch slot in shared memory (:mod:`robustlab.engine.loading`)."""

    #: True when the sink keeps references to the arrays it is given (False: it copies them).
    keeps = True

    def __init__(self, stack=None) -> None:
        self.stack = stack
        self.items: list[Any] = []
        self.missing = 0

    def add(self, pixels: Any) -> None:
        if pixels is None:
            self.missing += 1
        else:
            self.items.append(pixels)

    def check(self, unit: str) -> None:
        if self.items and self.missing:
            raise RobustlabError(f"unit {unit}: some samples of a batch have pixels and others none; a loader must "
                                 "return pixels for every sample or for none.")

    def result(self, unit: str = "") -> Any:
        """The batch's pixels: one stacked array, a list (sizes differ) or None (no pixels)."""
        self.check(unit)
        if not self.items:
            return None
        if len({tuple(p.shape) for p in self.items}) == 1 and getattr(self.items[0], "ndim", 2) > 1:
            # (1-D pixels are encoded image files, decoded on the device: never stacked)
            return (self.stack or np.stack)(self.items)
        return list(self.items)


def collate(samples: Sequence[Sample], *, unit: str = "", start: int = 0,
            positions: Sequence[int] | None = None, problems: Sequence[tuple[int, str, str]] = (),
            stack=None, sink: PixelSink | None = None) -> Batch:
    """Turn loaded samples into a :class:`Batch` (see the module docstring).

    ``positions`` are the samples' positions in their unit (default ``start, start+1, ...``);
    ``stack(arrays) -> array`` stacks equal-shape pixels (default :func:`numpy.stack`). A loader
    that already put each sample's pixels into a ``sink`` (:class:`PixelSink`) as it loaded
    passes it, with samples whose ``pixels`` are None.
    """
    positions = np.arange(start, start + len(samples), dtype=np.int64) if positions is None else \
        np.asarray(positions, dtype=np.int64)
    ids = np.asarray([s.id for s in samples], dtype=object).astype(str) if samples else np.zeros(0, dtype="<U1")
    labels = np.asarray([s.label for s in samples], dtype=np.int64)
    if sink is None:
        sink = PixelSink(stack)
        for s in samples:
            sink.add(s.pixels)
    return Batch(unit=unit, start=start, positions=positions, ids=ids, labels=labels, pixels=sink.result(unit),
                 context=context_columns([s.context for s in samples]), problems=list(problems))


def sample_id(source: Any, i: int) -> str:
    """Id of sample ``i`` of a sample set (``source.id(i)`` when it has one, else ``source.ids[i]``)."""
    get = getattr(source, "id", None)
    return str(get(i)) if callable(get) else str(source.ids[i])


def source_fingerprint(source: Any, mode: str = "stat") -> str:
    """A sample set's fingerprint: its own ``fingerprint(mode)``, else a hash of its ids and labels."""
    own = getattr(source, "fingerprint", None)
    if callable(own):
        return own(mode)
    h = hashlib.blake2b(digest_size=16)
    for i in range(len(source)):
        h.update(sample_id(source, i).encode())
        h.update(b"\x1f")
    h.update(np.asarray(getattr(source, "labels", []), dtype=np.int64).tobytes())
    return f"ids:{h.hexdigest()}"
