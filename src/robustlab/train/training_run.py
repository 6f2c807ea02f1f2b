"""One fine-tuning run's state and loop (:func:`robustlab.train.finetuning.finetune` builds it):
model, optimiser, schedule, position and history; the training loop over the DataLoader; the
checkpoint it writes atomically (``<out>/checkpoint.pt``) and resumes from; the finished model
(``model.pt`` and ``finetuned.json``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .. import __version__
from ..data.jobs import pool_context, single_threaded_worker
from ..errors import DataError, ModelError
from ..fsutil import atomic_path, atomic_write_text
from ..models.protocol import Classifier
from ..models.weights import file_sha256
from ..safeload import load_checkpoint as safe_load
from ..seeding import derive_seed
from .data import KeyedImages, TrainingCollate, TrainingImages, TrainingSet, epoch_batches
from .finetuned import MANIFEST_FORMAT, MANIFEST_NAME, WEIGHTS_NAME, finetuned_spec
from .heads import check_state_dict
from .progress import ImageProgress

CHECKPOINT_NAME = "checkpoint.pt"
CHECKPOINT_FORMAT = "robustlab-finetune-checkpoint/1"
#: Modules the DataLoader's forkserver imports once.
WORKER_PRELOAD = ("torch", "robustlab.corruptions.kernels", "robustlab.train.data")


@dataclass(frozen=True)
class WorkerInit:
    """DataLoader ``worker_init_fn``: one thread per worker, ignore Ctrl-C, exit with the parent."""

    parent_pid: int

    def __call__(self, worker_id: int) -> None:
        single_threaded_worker(self.parent_pid)


def load_checkpoint(path: Path) -> dict | None:
    """A checkpoint written by :class:`TrainingRun`, or None when there is none."""
    if not path.is_file():
        return None
    state = safe_load(path, what="fine-tuning checkpoint", fix="delete it to train from the start")
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise DataError(f"{path} is not a robustlab fine-tuning checkpoint; delete it or choose another --out.")
    return state


class TrainingRun:
    """The state of one fine-tuning run: model, optimiser, schedule, position, history."""

    def __init__(self, trained: Classifier, classifier: Classifier, data: TrainingSet, optimizer, scheduler,
                 settings: dict, out: Path, device: torch.device, head: dict | None) -> None:
        self.trained, self.classifier, self.data = trained, classifier, data
        self.optimizer, self.scheduler = optimizer, scheduler
        self.settings, self.out, self.device, self.head = settings, out, device, head
        self.step = 0
        self.history: list[dict] = []
        self.running = {"loss": 0.0, "correct": 0, "images": 0, "seconds": 0.0}
        self.rng_state: dict | None = None
        self.seconds = 0.0
        self.recipe_name = "default"

    # -- checkpoints --------------------------------------------------------------------------------------

    def restore(self, state: dict) -> None:
        load = dict(state["net"])
        check_state_dict(self.classifier.net, load, what=f"checkpoint {self.out / CHECKPOINT_NAME}",
                         fix="Delete it to train from the start.")
        self.classifier.net.load_state_dict(load)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.history = int(state["step"]), list(state["history"])
        self.running, self.seconds = dict(state["running"]), float(state["seconds"])
        self.rng_state = state["rng"]

    def save_checkpoint(self) -> None:
        state = {"format": CHECKPOINT_FORMAT, "settings": self.settings, "step": self.step,
                 "net": {k: v.detach().cpu() for k, v in self.classifier.net.state_dict().items()},
                 "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                 "history": self.history, "running": self.running, "seconds": self.seconds,
                 "rng": {"cpu": torch.get_rng_state(),
                         "cuda": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None}}
        with atomic_path(self.out / CHECKPOINT_NAME) as tmp:
            torch.save(state, tmp)

    # -- training -----------------------------------------------------------------------------------------

    def train(self, images: TrainingImages, augmenter, *, on_device: bool = False, epochs: int, batch_size: int,
              seed: int, workers: int, checkpoint_every: int | None, checkpoint_minutes: float, progress: bool | None,
              log: Callable[[str], None], on_step) -> None:
        n = len(self.data)
        plan = [b for e in range(epochs) for b in epoch_batches(n, batch_size, seed, e)]
        per_epoch = len(plan) // epochs
        todo = plan[self.step:]
        if not todo:
            return
        targets = torch.as_tensor(self.data.targets)
        soft = self._soft_targets()
        loader = torch.utils.data.DataLoader(
            KeyedImages(images), batch_sampler=todo, num_workers=workers, collate_fn=TrainingCollate(None if on_device else augmenter),
            pin_memory=self.device.type == "cuda", worker_init_fn=WorkerInit(os.getpid()) if workers else None,
            prefetch_factor=4 if workers else None, persistent_workers=False,
            multiprocessing_context=pool_context(WORKER_PRELOAD) if workers else None,
            generator=torch.Generator().manual_seed(derive_seed(seed, "loader")))  # not the global RNG: resumable
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        last_save = time.monotonic()
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.random.fork_rng(devices=devices))
            if self.rng_state is None:
                torch.manual_seed(derive_seed(seed, "torch"))
            else:
                torch.set_rng_state(self.rng_state["cpu"])
                if devices and self.rng_state.get("cuda") is not None:
                    torch.cuda.set_rng_state(self.rng_state["cuda"], self.device)
            bar = stack.enter_context(ImageProgress("finetune", sum(len(b) for b in todo), enabled=progress))
            self._set_mode()
            started = time.perf_counter()
            for indices, pixels in loader:
                epoch, in_epoch = divmod(self.step, per_epoch)
                bar.describe(f"finetune epoch {epoch + 1}/{epochs}")
                pixels = pixels.to(self.device, non_blocking=True)
                if on_device:  # the batched torch backend, keyed like the workers' numpy path
                    pixels = augmenter(pixels, ids=[(epoch, int(i)) for i in indices])
                x = pixels.permute(0, 3, 1, 2).float().div_(255.0)
                logits = self.trained(x)
                if soft is not None:
                    target = soft[indices].to(self.device)
                    loss = torch.sum(-target * F.log_softmax(logits, dim=1), dim=1).mean()
                    hit = target.gather(1, logits.argmax(dim=1, keepdim=True)).squeeze(1) > 0
                else:
                    target = targets[indices].to(self.device)
                    loss = F.cross_entropy(logits, target)
                    hit = logits.argmax(dim=1) == target
                if not torch.isfinite(loss):
                    raise ModelError(f"the training loss became {loss.item()} at epoch {epoch + 1}, step {in_epoch + 1}; "
                                     "lower the learning rate (--lr).")
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                self.scheduler.step()
                self.step += 1
                value = float(loss.detach())
                now = time.perf_counter()
                self.running["loss"] += value * len(indices)
                self.running["correct"] += int(hit.sum())
                self.running["images"] += len(indices)
                self.running["seconds"] += now - started
                self.seconds += now - started
                started = now
                bar.advance(len(indices), f"loss {self.running['loss'] / self.running['images']:.3f}")
                if in_epoch + 1 == per_epoch:
                    self._end_epoch(epoch, log)
                if (in_epoch + 1 == per_epoch or (checkpoint_every and self.step % checkpoint_every == 0)
                        or time.monotonic() - last_save > 60 * checkpoint_minutes):
                    self.save_checkpoint()
                    last_save = time.monotonic()
                if on_step is not None:
                    on_step(epoch, in_epoch, value)
                started = time.perf_counter()

    def _set_mode(self) -> None:
        if self.settings["train"] == "head" and self.settings.get("frozen_mode", "eval") == "eval":
            self.trained.eval()  # frozen body: batch-norm statistics and dropout as at test time
        else:
            self.trained.train()  # all of it (frozen_mode=train: as a reference that calls net.train())

    def _soft_targets(self) -> torch.Tensor | None:
        if not self.data.label_sets:
            return None
        k = len(self.data.classes)
        soft = torch.zeros(len(self.data), k)
        for i, labels in enumerate(self.data.label_sets):
            soft[i, list(labels)] = 1.0 / len(labels)
        return soft

    def _end_epoch(self, epoch: int, log: Callable[[str], None]) -> None:
        r = self.running
        row = {"epoch": epoch + 1, "loss": r["loss"] / max(1, r["images"]),
               "accuracy": r["correct"] / max(1, r["images"]), "images": r["images"],
               "lr": float(self.optimizer.param_groups[0]["lr"]), "seconds": round(r["seconds"], 3),
               "images_per_second": r["images"] / r["seconds"] if r["seconds"] > 0 else None}
        self.history.append(row)
        self.running = {"loss": 0.0, "correct": 0, "images": 0, "seconds": 0.0}
        log(f"epoch {row['epoch']}: loss {row['loss']:.4f}, training accuracy {100 * row['accuracy']:.1f}% "
            f"({row['images']} images, {row['images_per_second'] or 0:.1f} img/s)")

    # -- the result ---------------------------------------------------------------------------------------

    def finish(self) -> str:
        """Write ``model.pt`` and ``finetuned.json`` (atomically), drop the checkpoint, return the spec."""
        state = {k: v.detach().cpu() for k, v in self.classifier.net.state_dict().items()}
        weights = self.out / WEIGHTS_NAME
        with atomic_path(weights) as tmp:
            torch.save(state, tmp)
        digest = file_sha256(weights)
        s = self.settings
        manifest = {
            "format": MANIFEST_FORMAT, "base": s["model"], "head": self.head,
            "num_classes": len(self.data.classes), "classes": list(self.data.classes),
            "preprocessing": self.classifier.preprocessing.to_dict(), "wrap": s["wrap"],
            "weights": WEIGHTS_NAME, "weights_sha256": digest,
            "recipe": {k: s[k] for k in ("subset", "augment", "epochs", "batch_size", "lr", "schedule", "train",
                                         "crop", "seed")} | {"name": self.recipe_name,
                                                             "head_init": (self.head or {}).get("init"),
                                                             "frozen_mode": s.get("frozen_mode", "eval"),
                                                             "nesterov": s.get("nesterov", False)},
            "settings": s, "history": self.history, "seconds": round(self.seconds, 3),
            "device": str(self.device), "torch": torch.__version__, "robustlab": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        atomic_write_text(self.out / MANIFEST_NAME, json.dumps(manifest, indent=1) + "\n")
        (self.out / CHECKPOINT_NAME).unlink(missing_ok=True)
        return finetuned_spec(self.out, digest)
