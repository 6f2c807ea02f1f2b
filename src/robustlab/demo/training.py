"""Train the demo's tiny models from a seed, on CPU, in a few minutes (``robustlab demo train``).

:func:`train_demo_models` trains, in order:

- ``cnn`` (:class:`~robustlab.demo.models.SceneCNN`) on freshly generated training scenes
  every epoch (scene indices ``epoch * n .. (epoch + 1) * n - 1`` of the train split, i.e. new
  backgrounds, colours, positions and scales of the training digit instances), AdamW with a
  one-cycle learning rate, 20 epochs;
- ``cnn-noise``: the same network, initial weights, scenes and batch order as ``cnn``, but
  every training image gets exactly one corruption of the paper-000 noise scheme
  (:class:`~robustlab.corruptions.transforms.RandomCorruption` ``"paper-noise"``, severity
  1-5, ids ``(epoch, scene index)`` so the draws are fresh each epoch);
- ``baseline``: the same architecture trained for 5 epochs only (the AlexNet role);
- ``detector`` (:class:`~robustlab.demo.detector.DigitCenterNet`) on fresh multi-digit scenes
  every epoch;

then evaluates each on the regenerated test split (500 classification scenes; 300 detection
scenes scored with COCO AP through faster-coco-eval / pycocotools) and writes
``<name>.pt`` (state_dict) and ``models.json`` (seed, seconds, parameters, bytes, scores).
Initial weights and batch order come from ``derive_seed(seed, model)`` inside
``torch.random.fork_rng`` (the caller's global torch RNG state is left as it was).
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..corruptions.transforms import RandomCorruption
from ..fsutil import atomic_write_bytes, atomic_write_text, ensure_dir
from ..seeding import derive_seed
from .detection_scenes import DetectionScenes, coco_dict, make_detection_scenes
from .detector import centernet_loss, centernet_targets
from .models import DEMO_MODELS, METADATA_FILE, build_network
from .world import DEFAULT_SIZES, make_scenes


@dataclass(frozen=True)
class TrainConfig:
    """How one demo model is trained (AdamW, one-cycle learning-rate schedule).

    Attributes
    ----------
    epochs, batch_size, lr, weight_decay, n_per_epoch
        Optimisation; every epoch sees ``n_per_epoch`` freshly generated scenes.
    augmentation : str or None
        A :class:`~robustlab.corruptions.transforms.RandomCorruption` scheme or corruption list
        applied to every training image (None: clean scenes).
    severities : str
        Severities the augmentation draws from, uniformly.
    seeds_of : str or None
        Derive the initial weights and the batch order as for this other model (None: its own
        name), so two models can differ in one thing only.
    """

    epochs: int
    batch_size: int = 32
    lr: float = 4e-3
    weight_decay: float = 1e-4
    n_per_epoch: int = 2000
    augmentation: str | None = None
    severities: str = "1-5"
    seeds_of: str | None = None


CONFIGS = {
    "cnn": TrainConfig(epochs=20),
    "cnn-noise": TrainConfig(epochs=20, augmentation="paper-noise", seeds_of="cnn"),
    "baseline": TrainConfig(epochs=5),
    "detector": TrainConfig(epochs=10, n_per_epoch=1500),
}


def _to_tensor(images: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(images).permute(0, 3, 1, 2).float().div_(255)


def _train_loop(net: nn.Module, config: TrainConfig, seed: int, name: str,
                epoch_data: Callable[[int], Any], step_loss: Callable[[nn.Module, Any, np.ndarray], torch.Tensor],
                log: Callable[[str], None], label: str | None = None) -> None:
    """Train ``net`` in place; the batch order of each epoch comes from ``derive_seed(seed, name, "order", epoch)``."""
    steps_per_epoch = -(-config.n_per_epoch // config.batch_size)
    opt = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config.lr, total_steps=config.epochs * steps_per_epoch,
                                                pct_start=0.15)
    for epoch in range(config.epochs):
        data = epoch_data(epoch)
        order = np.random.default_rng(derive_seed(seed, name, "order", epoch)).permutation(config.n_per_epoch)
        net.train()
        total = 0.0
        for start in range(0, config.n_per_epoch, config.batch_size):
            idx = order[start:start + config.batch_size]
            loss = step_loss(net, data, idx)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        log(f"{label or name} epoch {epoch + 1}/{config.epochs}: loss {total / config.n_per_epoch:.4f}")
    net.eval()


def augmentation_of(name: str, config: TrainConfig, seed: int = 0) -> RandomCorruption | None:
    """The training augmentation of demo model ``name`` (None when it trains on clean scenes);
    its draws are seeded by ``derive_seed(seed, name, "augmentation")``."""
    if config.augmentation is None:
        return None
    return RandomCorruption(config.augmentation, severities=config.severities,
                            seed=derive_seed(seed, name, "augmentation"))


def training_images(name: str, epoch: int, seed: int = 0, config: TrainConfig | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The training scenes demo classifier ``name`` sees in ``epoch``, augmented as configured.

    Returns
    -------
    images : ndarray, uint8 (n_per_epoch, 64, 64, 3)
        Scenes ``epoch * n .. (epoch + 1) * n - 1`` of the train split; with an augmentation,
        scene ``i`` gets the corruption drawn for the id ``(epoch, i)``.
    labels : ndarray, int64 (n_per_epoch,)
    """
    config = config or CONFIGS[name]
    start = epoch * config.n_per_epoch
    scenes = make_scenes("train", config.n_per_epoch, seed=seed, start=start)
    augment = augmentation_of(name, config, seed)
    if augment is None:
        return scenes.images, scenes.labels
    ids = [(int(epoch), start + i) for i in range(config.n_per_epoch)]
    return augment(scenes.images, ids=ids), scenes.labels


def train_classifier(name: str, seed: int = 0, config: TrainConfig | None = None,
                     log: Callable[[str], None] = print) -> nn.Module:
    """Train demo classifier ``name`` (see :data:`CONFIGS`) on fresh scenes every epoch."""
    config = config or CONFIGS[name]
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    seed_name = config.seeds_of or name

    def epoch_data(epoch: int):
        images, labels = training_images(name, epoch, seed, config)
        return _to_tensor(images), torch.from_numpy(labels)

    def step_loss(net, data, idx):
        x, y = data
        return loss_fn(net(x[idx]), y[idx])

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, seed_name, "init"))
        net = build_network(name)
        _train_loop(net, config, seed, seed_name, epoch_data, step_loss, log, label=name)
    return net


def train_detector(seed: int = 0, config: TrainConfig | None = None,
                   log: Callable[[str], None] = print) -> nn.Module:
    """Train the demo detector on fresh multi-digit scenes every epoch."""
    config = config or CONFIGS["detector"]

    def epoch_data(epoch: int):
        scenes = make_detection_scenes("train", config.n_per_epoch, seed=derive_seed(seed, "detector-epoch", epoch))
        return _to_tensor(scenes.images), scenes

    def step_loss(net, data, idx):
        x, scenes = data
        targets = centernet_targets([scenes.boxes[i] for i in idx], [scenes.labels[i] for i in idx],
                                    tuple(x.shape[-2:]))
        return centernet_loss(*net.raw(x[idx]), targets)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "detector", "init"))
        net = build_network("detector")
        _train_loop(net, config, seed, "detector", epoch_data, step_loss, log)
    return net


@torch.no_grad()
def classification_accuracy(net: nn.Module, images: np.ndarray, labels: np.ndarray, batch_size: int = 250) -> float:
    """Top-1 accuracy of ``net`` on uint8 (N, H, W, 3) images."""
    net.eval()
    correct = 0
    for start in range(0, len(images), batch_size):
        logits = net(_to_tensor(images[start:start + batch_size]))
        correct += int((logits.argmax(1).numpy() == labels[start:start + batch_size]).sum())
    return correct / len(images)


@torch.no_grad()
def detection_ap(detector: nn.Module, scenes: DetectionScenes, batch_size: int = 100) -> dict[str, float]:
    """COCO AP, AP50 and AP75 of ``detector`` on ``scenes`` (faster-coco-eval, else pycocotools)."""
    detector.eval()
    names = [f"{i:05d}.png" for i in range(len(scenes))]
    gt = coco_dict(scenes, names)
    results = []
    for start in range(0, len(scenes), batch_size):
        outputs = detector(_to_tensor(scenes.images[start:start + batch_size]))
        for j, out in enumerate(outputs):
            for box, score, label in zip(out["boxes"].tolist(), out["scores"].tolist(), out["labels"].tolist()):
                results.append({"image_id": start + j + 1, "category_id": int(label), "score": float(score),
                                "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]]})
    return coco_ap(gt, results)


def coco_ap(gt: dict, results: list[dict]) -> dict[str, float]:
    """COCO bbox AP / AP50 / AP75 of ``results`` against the instances dict ``gt``."""
    try:
        from faster_coco_eval import COCO, COCOeval_faster as COCOeval
    except ImportError:  # pragma: no cover - faster-coco-eval is a dependency
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    import contextlib

    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = gt
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(results) if results else None
        if coco_dt is None:
            return {"AP": 0.0, "AP50": 0.0, "AP75": 0.0}
        ev = COCOeval(coco_gt, coco_dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return {"AP": float(ev.stats[0]), "AP50": float(ev.stats[1]), "AP75": float(ev.stats[2])}


def state_bytes(net: nn.Module) -> bytes:
    """The network's state_dict serialised with torch.save (what ships as ``<name>.pt``)."""
    buf = io.BytesIO()
    torch.save({k: v.detach().cpu().clone() for k, v in net.state_dict().items()}, buf)
    return buf.getvalue()


def train_demo_models(out_dir: str | os.PathLike | None = None, seed: int = 0, *,
                      models: tuple[str, ...] = DEMO_MODELS, threads: int | None = 1,
                      log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train the demo models from ``seed`` on CPU and write their weights and ``models.json``.

    Parameters
    ----------
    out_dir : path, optional
        Where to write ``<name>.pt`` and ``models.json`` (default: the package's weights folder).
    seed : int
        Base seed of data generation, initialisation and batch order.
    models : tuple of str
        Which models to train (others keep their entry in an existing ``models.json``).
    threads : int or None
        torch CPU threads during training (restored afterwards); None leaves it as is.

    Returns
    -------
    dict
        The metadata written to ``models.json``.
    """
    from .models import weights_dir

    out = ensure_dir(out_dir or weights_dir())
    meta_path = out / METADATA_FILE
    metadata: dict[str, Any] = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    metadata.setdefault("models", {})
    old_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    try:
        test = make_scenes("test", DEFAULT_SIZES["test"], seed=seed)
        for name in models:
            t0 = time.perf_counter()
            if name == "detector":
                net = train_detector(seed, log=log)
                scores = detection_ap(net, make_detection_scenes("test", seed=seed))
            else:
                net = train_classifier(name, seed, log=log)
                scores = {"accuracy": classification_accuracy(net, test.images, test.labels)}
            seconds = time.perf_counter() - t0
            data = state_bytes(net)
            atomic_write_bytes(out / f"{name}.pt", data)
            config = CONFIGS[name]
            augment = augmentation_of(name, config, seed)
            metadata["models"][name] = {
                "class": type(net).__name__, "seed": int(seed), "train_seconds": round(seconds, 1),
                "threads": torch.get_num_threads(), "epochs": config.epochs,
                **({"augmentation": {"scheme": config.augmentation, "corruptions": list(augment.names),
                                     "severities": list(augment.severity_choices), "p": augment.p}}
                   if augment is not None else {}),
                **({"seeds_of": config.seeds_of} if config.seeds_of else {}),
                "parameters": int(sum(p.numel() for p in net.parameters())), "bytes": len(data),
                "test": {k: round(v, 4) for k, v in scores.items()},
                "test_set": ("detection scenes, test split, n=300, 96x96" if name == "detector"
                             else "scenes, test split, n=500, 64x64"),
                "torch": torch.__version__,
            }
            log(f"{name}: {scores} in {seconds:.0f} s, {len(data) / 1e6:.2f} MB")
            atomic_write_text(meta_path, json.dumps(metadata, indent=2) + "\n")
    finally:
        torch.set_num_threads(old_threads)
    return metadata
