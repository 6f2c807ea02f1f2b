"""A tiny CenterNet-style digit detector (Zhou et al., "Objects as Points", simplified).

The network maps float NCHW pixels in [0, 1] to three maps at stride 4: a per-class centre
heatmap (10 channels, sigmoid), the box size (w, h in units of the stride) and the sub-cell
offset of the centre. Decoding keeps local maxima of the heatmap (3x3 max-pool), the top
``max_detections`` over all classes above ``score_threshold``, and returns per image a dict
with ``boxes`` (K, 4) x1, y1, x2, y2 in input pixels, ``scores`` (K,) and ``labels`` (K,):
the **COCO category id = digit + 1** used by :mod:`robustlab.demo.detection_scenes`'
annotation files, so predictions score against them without a mapping.

Training targets (:func:`centernet_targets`) and the loss (:func:`centernet_loss`: focal loss on
the heatmap, L1 on size and offset at object centres) live here too.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .layers import NUM_CLASSES, LocalContrast, conv_bn

STRIDE = 4
#: Size regression is in units of the stride; losses weights follow CenterNet.
SIZE_WEIGHT = 0.1
OFFSET_WEIGHT = 1.0


def dilated(c_in: int, c_out: int, dilation: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, 1, dilation, dilation=dilation, bias=False),
                         nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


class DigitCenterNet(nn.Module):
    """Tiny CenterNet: images (N, 3, H, W) in [0, 1] (or a list of (3, H, W)) -> detections.

    ``forward`` returns one dict per image (boxes, scores, labels); :meth:`raw` gives the
    maps (heatmap logits (N, 10, H/4, W/4), size (N, 2, ...), offset (N, 2, ...)) for training.
    Inputs whose sides are not multiples of 4 are zero-padded at the bottom/right.
    """

    def __init__(self, width: int = 32, num_classes: int = NUM_CLASSES, *, max_detections: int = 20,
                 score_threshold: float = 0.05) -> None:
        super().__init__()
        w = width
        self.normalize = LocalContrast()
        self.backbone = nn.Sequential(
            conv_bn(6, w // 2, stride=2), conv_bn(w // 2, 3 * w // 4, stride=2),   # stride 4
            conv_bn(3 * w // 4, w), dilated(w, w, 2), dilated(w, 3 * w // 2, 4),
        )
        self.heatmap = nn.Conv2d(3 * w // 2, num_classes, 1)
        self.size = nn.Conv2d(3 * w // 2, 2, 1)
        self.offset = nn.Conv2d(3 * w // 2, 2, 1)
        nn.init.constant_(self.heatmap.bias, -2.19)  # prior 0.1, as CenterNet
        self.max_detections = int(max_detections)
        self.score_threshold = float(score_threshold)

    def raw(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h, w = x.shape[-2:]
        pad_h, pad_w = (-h) % STRIDE, (-w) % STRIDE
        if pad_h or pad_w:
            x = F.pad(x, (0, pad_w, 0, pad_h))
        feats = self.backbone(self.normalize(x))
        return self.heatmap(feats), self.size(feats), self.offset(feats)

    def forward(self, images: torch.Tensor | list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        if isinstance(images, torch.Tensor) and images.ndim == 4:
            batches = [images]
        else:  # a list of (3, H, W): batch images of equal size together
            batches = [img[None] for img in images]
        out = []
        for batch in batches:
            heat, size, offset = self.raw(batch)
            out.extend(decode(heat, size, offset, batch.shape[-2:], self.max_detections, self.score_threshold))
        return out


def decode(heat_logits: torch.Tensor, size: torch.Tensor, offset: torch.Tensor, image_hw: tuple[int, int],
           max_detections: int = 20, score_threshold: float = 0.05) -> list[dict[str, torch.Tensor]]:
    """Peaks of the heatmap -> boxes (x1, y1, x2, y2 in pixels, clipped), scores, labels (digit + 1)."""
    heat = torch.sigmoid(heat_logits)
    peaks = heat * (F.max_pool2d(heat, 3, 1, 1) == heat)
    n, c, hh, ww = heat.shape
    scores, flat = peaks.reshape(n, -1).topk(min(max_detections, c * hh * ww), dim=1)
    cls = flat // (hh * ww)
    cell = flat % (hh * ww)
    ys, xs = (cell // ww).float(), (cell % ww).float()
    img_h, img_w = float(image_hw[0]), float(image_hw[1])
    out = []
    for i in range(n):
        off = offset[i].reshape(2, -1)[:, cell[i]]
        wh = size[i].reshape(2, -1)[:, cell[i]].clamp(min=0) * STRIDE
        cx = (xs[i] + off[0]) * STRIDE
        cy = (ys[i] + off[1]) * STRIDE
        boxes = torch.stack([cx - wh[0] / 2, cy - wh[1] / 2, cx + wh[0] / 2, cy + wh[1] / 2], dim=1)
        boxes[:, 0::2] = boxes[:, 0::2].clamp(0, img_w)
        boxes[:, 1::2] = boxes[:, 1::2].clamp(0, img_h)
        keep = scores[i] >= score_threshold
        out.append({"boxes": boxes[keep], "scores": scores[i][keep], "labels": cls[i][keep] + 1})
    return out


def centernet_targets(boxes: list[np.ndarray], labels: list[np.ndarray], image_hw: tuple[int, int],
                      num_classes: int = NUM_CLASSES) -> dict[str, torch.Tensor]:
    """Training targets for a batch.

    Parameters
    ----------
    boxes : list of float (K_i, 4) arrays
        x1, y1, x2, y2 in pixels.
    labels : list of int (K_i,) arrays
        Digit classes 0..9.

    Returns
    -------
    dict
        ``heatmap`` (N, C, h, w) Gaussian peaks at box centres; ``size`` and ``offset``
        (N, 2, h, w) regression targets; ``mask`` (N, h, w) 1 at object centres.
    """
    n = len(boxes)
    hh, ww = -(-image_hw[0] // STRIDE), -(-image_hw[1] // STRIDE)
    heat = np.zeros((n, num_classes, hh, ww), np.float32)
    size = np.zeros((n, 2, hh, ww), np.float32)
    offset = np.zeros((n, 2, hh, ww), np.float32)
    mask = np.zeros((n, hh, ww), np.float32)
    gy, gx = np.mgrid[0:hh, 0:ww].astype(np.float32)
    for i, (bxs, lbls) in enumerate(zip(boxes, labels)):
        for box, label in zip(np.asarray(bxs, np.float32).reshape(-1, 4), np.asarray(lbls).reshape(-1)):
            w, h = (box[2] - box[0]) / STRIDE, (box[3] - box[1]) / STRIDE
            cx, cy = (box[0] + box[2]) / 2 / STRIDE, (box[1] + box[3]) / 2 / STRIDE
            ix, iy = min(int(cx), ww - 1), min(int(cy), hh - 1)
            sigma = max(0.7, min(w, h) / 6.0)
            g = np.exp(-((gx - ix) ** 2 + (gy - iy) ** 2) / (2 * sigma ** 2))
            heat[i, int(label)] = np.maximum(heat[i, int(label)], g)
            size[i, :, iy, ix] = (w, h)
            offset[i, :, iy, ix] = (cx - ix, cy - iy)
            mask[i, iy, ix] = 1.0
    return {k: torch.from_numpy(v) for k, v in
            {"heatmap": heat, "size": size, "offset": offset, "mask": mask}.items()}


def centernet_loss(heat_logits: torch.Tensor, size: torch.Tensor, offset: torch.Tensor,
                   targets: dict[str, torch.Tensor]) -> torch.Tensor:
    """Penalty-reduced focal loss on the heatmap + weighted L1 on size and offset at centres."""
    gt = targets["heatmap"]
    pred = torch.sigmoid(heat_logits).clamp(1e-4, 1 - 1e-4)
    pos = gt.eq(1).float()
    pos_loss = torch.log(pred) * (1 - pred) ** 2 * pos
    neg_loss = torch.log(1 - pred) * pred ** 2 * (1 - gt) ** 4 * (1 - pos)
    num = pos.sum().clamp(min=1.0)
    focal = -(pos_loss.sum() + neg_loss.sum()) / num
    mask = targets["mask"][:, None]
    l1_size = (F.l1_loss(size, targets["size"], reduction="none") * mask).sum() / num
    l1_off = (F.l1_loss(offset, targets["offset"], reduction="none") * mask).sum() / num
    return focal + SIZE_WEIGHT * l1_size + OFFSET_WEIGHT * l1_off
