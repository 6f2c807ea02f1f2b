""":class:`TorchvisionRandomCorruption`: :class:`~robustlab.corruptions.transforms.RandomCorruption`
as a torchvision ``transforms.v2`` transform.

>>> from torchvision.transforms import v2
>>> augment = TorchvisionRandomCorruption("paper-noise", severities="1-5", seed=0)
>>> pipeline = v2.Compose([v2.RandomResizedCrop(224), augment, v2.ToDtype(torch.float32, scale=True)])

It takes what v2 pipelines carry: ``tv_tensors.Image`` or plain image tensors in torchvision's
layout ((C, H, W) or a (N, C, H, W) batch, uint8 0..255 or float in [0, 1]), anywhere in a
sample (tuples, dicts: labels, boxes and other entries pass through untouched, as v2 does), and
returns them in the same type, layout, dtype and device. Each image's corruption and severity
come from ``RandomCorruption.choose(id)`` with the id ``(epoch, worker, call, position)``:
``epoch`` from :meth:`set_epoch`, ``worker`` the DataLoader worker (0 in the main process),
``call`` the number of samples this copy of the transform has seen, ``position`` the image's
index in a batch. A loader with the same seed, order and workers therefore reproduces its
augmentations; call ``set_epoch`` every epoch (as with ``DistributedSampler``) for fresh draws.
To key draws by real sample ids, call the :class:`RandomCorruption` itself with ``ids``.
"""

from __future__ import annotations

from typing import Any

import torch
from torchvision import tv_tensors
from torchvision.transforms import v2

from ..transforms import PAPER_NOISE_AUGMENTATION, RandomCorruption

__all__ = ["TorchvisionRandomCorruption"]


def _is_plain_tensor(value: Any) -> bool:
    """A tensor that is no tv_tensor (boxes, masks and labels are not corrupted)."""
    return type(value) is torch.Tensor


def _worker_id() -> int:
    info = torch.utils.data.get_worker_info()
    return 0 if info is None else int(info.id)


class TorchvisionRandomCorruption(v2.Transform):
    """One random corruption and severity per image, seeded, as a torchvision v2 transform.

    Parameters
    ----------
    corruptions, severities, p, seed, profile
        As :class:`~robustlab.corruptions.transforms.RandomCorruption` (a scheme such as
        ``"paper-noise"``, a subset or names; an inclusive severity range; the probability of
        corrupting an image; the base seed; the parameter profile).
    """

    _transformed_types = (tv_tensors.Image, _is_plain_tensor)

    def __init__(self, corruptions: tuple[str, ...] | str = PAPER_NOISE_AUGMENTATION,
                 severities: tuple[int, ...] | str | int = "1-5", p: float = 1.0, seed: int = 0,
                 profile: str = "imagecorruptions") -> None:
        super().__init__()
        self.augment = RandomCorruption(corruptions, severities, p, seed, profile)
        self.epoch = 0
        self.calls = 0

    def set_epoch(self, epoch: int) -> None:
        """Include ``epoch`` in every image id from now on (fresh draws per epoch)."""
        self.epoch = int(epoch)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        call = self.calls
        self.calls += 1
        return {"key": (self.epoch, _worker_id(), call)}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        batch = inpt.as_subclass(torch.Tensor)
        single = batch.dim() == 3
        if single:
            batch = batch[None]
        ids = [(*params["key"], i) for i in range(batch.shape[0])]
        if batch.dtype == torch.uint8:  # torchvision keeps uint8 channels-first; robustlab takes NHWC
            out = self.augment.apply_tensor(batch.permute(0, 2, 3, 1), ids).permute(0, 3, 1, 2)
        else:
            out = self.augment.apply_tensor(batch, ids)
        out = out[0] if single else out
        return tv_tensors.wrap(out.contiguous(), like=inpt) if isinstance(inpt, tv_tensors.TVTensor) else out.contiguous()

    def extra_repr(self) -> str:
        a = self.augment
        return (f"corruptions={list(a.names)}, severities={list(a.severity_choices)}, p={a.p}, seed={a.seed}, "
                f"profile={a.profile!r}")
