"""The multi-seed adversarial-robustness study (Kunhardt, Deza, Poggio) as a resumable runner.

For every condition (architecture x dataset/task) and seed: train with the condition's
recipe (:mod:`robustlab.studies.recipes`; ``paper`` is the published one: SGD, momentum 0.9,
weight decay 5e-4, batch 125, learning rate divided by 10 at half the run, lr 0.01 and 300
epochs for LeNet / FullyConnectedNet, lr 0.1 and 125 epochs for ResNet50) from initial weights
that depend only on (architecture, seed) -- identical across datasets --, checkpoint every
epoch, and at the recipe's attacked epochs measure accuracy under FGSM over the eps grid on the
full test set (or a subset shared by every model) and the normalised AUC R. The table gives
mean and SD of R per condition and epoch, and Welch's t-tests between chosen pairs and between
every "pretrain then train" condition (§4.3, "visual hysteresis") and its from-scratch twin.

Configuration (TOML)::

    [study]
    recipe = "paper"            # paper | quick (default); resolved per architecture
    seeds = 20                  # or a list, e.g. [0, 1, 2]
    eval_samples = "all"        # the full test set (default), or N images shared by every model
    eps = [0, 0.0125, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
    attack = "fgsm"
    data_root = "~/.robustlab/data"   # MNIST / CIFAR-10 downloads
    data_seed = 0               # test Fusion pairing and evaluation subset (shared by all models)
    # epochs = 50               # recipe overrides for every condition (epochs, lr, checkpoints,
                                #   momentum, weight_decay, batch_size, lr_drop_fraction)

    [[conditions]]
    name = "mnist-lenet"
    architecture = "lenet"     # lenet | fc | resnet50
    dataset = "mnist"          # mnist | cifar10 | digits | textures | fusion

    [[conditions]]
    name = "cifar-lenet"
    architecture = "lenet"
    dataset = "cifar10"

    [[conditions]]
    name = "mnist-after-cifar-lenet"   # pretrain then train (§4.3)
    architecture = "lenet"
    dataset = "mnist"
    pretrain = "cifar-lenet"   # start from its fully trained model of the same seed
    # pretrain_checkpoint = "elsewhere/seed-{seed}.pt"   # or from files
    # scratch = "mnist-lenet"  # compared with (found automatically when unique)

    [[conditions]]
    name = "fusion-digit-fc"
    architecture = "fc"
    width = 7500               # hidden units (the paper's; the default)
    dataset = "fusion"
    fusion = ["mnist", "cifar10"]
    alpha = 0.5
    task = "a"                 # labels of the first part (digits) or "b" (objects)

    [[comparisons]]
    a = "mnist-lenet"
    b = "cifar-lenet"

Outputs in the study folder: ``runs/<condition>/seed-<seed>/`` (``checkpoint.pt``,
``evaluations.json``, ``run.json``), ``study.json``, ``table.md``, ``table.csv``,
``report.html`` and ``figures/*.svg`` (:mod:`robustlab.studies.report`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..attacks import epsilon_sweep
from ..data.arrays import ArrayDataset
from ..errors import DataError, InputError, ModelError
from ..fsutil import atomic_path, atomic_write_text, ensure_dir, read_json
from ..safeload import load_checkpoint
from ..seeding import derive_seed
from .architectures import build_architecture, weights_fingerprint
from .config import DATASETS, Condition, StudyConfig, config_from_dict, load_config
from .data import StudyData, condition_data

__all__ = ["DATASETS", "Evaluation", "StudyResult", "condition_data", "config_from_dict", "load_config",
           "run_one", "run_study", "summarise", "train_epoch"]


# --- training --------------------------------------------------------------------------

def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def train_epoch(model: torch.nn.Module, data: ArrayDataset, optimizer: torch.optim.Optimizer, *, batch_size: int,
                seed: int, device: torch.device) -> float:
    """One epoch of SGD on shuffled mini-batches (order from ``seed``); returns the mean loss.

    The whole epoch's images go to ``device`` once (float NCHW in [0, 1]), then batches are
    indexed there.
    """
    x, y = data.tensors()
    x, y = x.to(device), y.to(device)
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed)).to(device)
    model.train()
    total = torch.zeros((), device=device)
    for i in range(0, len(order), batch_size):
        idx = order[i:i + batch_size]
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
        total += loss.detach() * len(idx)
    mean = float(total) / max(len(order), 1)
    if not math.isfinite(mean):
        raise InputError("training diverged (NaN loss); lower the learning rate.")
    return mean


@dataclass
class Evaluation:
    """One attacked checkpoint: accuracy at every eps and R (NaN when clean accuracy is 0)."""

    condition: str
    seed: int
    epoch: int
    eps: list[float]
    accuracy: list[float]
    R: float
    init_fingerprint: str
    note: str = ""
    n_images: int | None = None  # test images attacked


def _robustness(eps: np.ndarray, acc: np.ndarray) -> tuple[float, str]:
    from ..metrics.adversarial import robustness_auc

    if acc[0] == 0:
        return math.nan, "R undefined: accuracy at eps0 is 0"
    return float(robustness_auc(eps, acc)), ""


def run_dir(out: Path, cond: Condition, seed: int) -> Path:
    return out / "runs" / cond.name / f"seed-{seed}"


def _identity(cfg: StudyConfig, cond: Condition, seed: int) -> dict[str, Any]:
    """What a run's stored checkpoints and evaluations depend on (checked on resume)."""
    recipe = cond.recipe.to_dict()
    recipe.pop("checkpoints")  # attacking more (or fewer) epochs does not change training
    ident = {"condition": {**cond.to_dict(), "recipe": recipe}, "seed": seed, "eps": list(cfg.eps),
             "attack": cfg.attack, "eval_samples": cfg.eval_samples, "data_seed": cfg.data_seed}
    ident["condition"].pop("scratch", None)
    return ident


def _check_identity(path: Path, ident: dict[str, Any]) -> None:
    if path.exists():
        stored = read_json(path, fix=f"Delete the run folder {path.parent} to retrain that run.")
        if stored != ident:
            changed = sorted(k for k in set(stored) | set(ident) if stored.get(k) != ident.get(k))
            raise InputError(f"{path.parent} holds a run made with different settings ({', '.join(changed)} changed); "
                             "use a new --out folder, or delete that run folder to retrain it.")
    else:
        atomic_write_text(path, json.dumps(ident, indent=1))


def load_weights(path: Path, model: torch.nn.Module, *, what: str) -> dict:
    """Load a checkpoint (``{"model": state_dict, ...}`` or a bare state dict) into ``model``.

    Returns the checkpoint dict. DataError when unreadable, ModelError when it does not fit.
    """
    from ..safeload import load_checkpoint

    state = load_checkpoint(path, what=f"{what}: checkpoint", fix="delete it to train that seed again")
    weights = state.get("model", state) if isinstance(state, dict) else None
    if not isinstance(weights, dict):
        raise DataError(f"{what}: {path} is not a state dict (nor a dict with 'model').")
    try:
        model.load_state_dict(weights)
    except RuntimeError as exc:
        first = " ".join(str(exc).split())[:300]
        raise ModelError(f"{what}: checkpoint {path} does not fit the architecture: {first}") from exc
    return state if isinstance(state, dict) else {}


def pretrained_start(cfg: StudyConfig, cond: Condition, seed: int, out: Path) -> tuple[Path, int | None]:
    """The checkpoint a pretrained condition starts from for ``seed``, and the epoch it must hold
    (the source condition's last epoch; None for files given by ``pretrain_checkpoint``)."""
    if cond.pretrain_checkpoint is not None:
        return cfg.checkpoint_path(cond, seed), None
    source = cfg.condition(cond.pretrain)
    return run_dir(out, source, seed) / "checkpoint.pt", source.recipe.epochs


def check_pretrain_checkpoints(cfg: StudyConfig, data: StudyData) -> None:
    """Before any training: every ``pretrain_checkpoint`` file exists for every seed and fits
    its condition's architecture (DataError / ModelError naming the file)."""
    for cond in cfg.conditions:
        if cond.pretrain_checkpoint is None:
            continue
        paths = [cfg.checkpoint_path(cond, s) for s in cfg.seeds]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            raise DataError(f"condition {cond.name!r}: pretrain checkpoint {missing[0]} does not exist"
                            + (f" ({len(missing)} of {len(paths)} seeds missing)" if len(missing) > 1 else "")
                            + f"; pretrain_checkpoint = {cond.pretrain_checkpoint!r} must give one file per seed "
                            f"({{seed}} in {list(cfg.seeds)}). Nothing was trained.")
        n_classes = _n_classes(data, cond, cfg.seeds[0])
        for seed, path in zip(cfg.seeds, paths):
            model = build_architecture(cond.architecture, seed=seed, num_classes=n_classes, **cond.architecture_options)
            load_weights(path, model, what=f"condition {cond.name!r} seed {seed}")


def _n_classes(data: StudyData, cond: Condition, seed: int) -> int:
    train_for, test = condition_data(cond, data, seed)
    return int(max(test.labels.max(), train_for(0).labels.max()) + 1)


def read_evaluations(path: Path) -> dict[int, Evaluation]:
    """A run's stored evaluations by epoch; DataError naming the file when it is damaged."""
    fix = f"Delete {path} to evaluate that run's checkpoints again."
    try:
        return {int(e["epoch"]): Evaluation(**e) for e in read_json(path, fix=fix)}
    except (TypeError, KeyError, ValueError) as exc:
        raise DataError(f"{path} does not hold a list of evaluations ({exc}). {fix}") from None


def run_one(cfg: StudyConfig, cond: Condition, seed: int, out: Path, data: StudyData,
            log: Callable[[str], None]) -> list[Evaluation]:
    """Train (or resume) one (condition, seed) and evaluate it at the recipe's attacked epochs."""
    recipe = cond.recipe
    folder = ensure_dir(run_dir(out, cond, seed))
    _check_identity(folder / "run.json", _identity(cfg, cond, seed))
    evals_path = folder / "evaluations.json"
    done = read_evaluations(evals_path) if evals_path.exists() else {}
    if all(ep in done for ep in cond.eval_epochs):
        return [done[ep] for ep in cond.eval_epochs]
    device = _device(cfg.device)
    train_for, test = condition_data(cond, data, seed)
    n_classes = int(max(test.labels.max(), train_for(0).labels.max()) + 1)
    model = build_architecture(cond.architecture, seed=seed, num_classes=n_classes, **cond.architecture_options)
    state_path, start = folder / "checkpoint.pt", 0
    if cond.pretrained and not state_path.exists():
        source, epoch = pretrained_start(cfg, cond, seed, out)
        state = load_weights(source, model, what=f"condition {cond.name!r} seed {seed} (pretrain then train)")
        if epoch is not None and state.get("epoch") != epoch:
            raise DataError(f"condition {cond.name!r} seed {seed}: pretrain source {source} holds epoch "
                            f"{state.get('epoch')}, not the fully trained epoch {epoch}; finish the source first.")
    model = model.to(device)
    fingerprint = weights_fingerprint(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=recipe.lr, momentum=recipe.momentum,
                                weight_decay=recipe.weight_decay)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[recipe.drop_epoch], gamma=0.1)
    if state_path.exists():
        state = load_checkpoint(state_path, what="study checkpoint", map_location=device, fix="delete it to "
                                "train this condition and seed again", required_keys=("model", "optimizer",
                                "scheduler", "epoch", "init_fingerprint"))
        try:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"study checkpoint {state_path} does not fit this study's model ({type(exc).__name__}); "
                            "it was written with another configuration: delete it to train this seed again.") from None
        start, fingerprint = int(state["epoch"]), state["init_fingerprint"]
    x_test, y_test = test.tensors()
    pick = data.evaluation_indices(len(test), cfg.eval_samples)
    if pick is not None:
        x_test, y_test = x_test[torch.from_numpy(pick)], y_test[torch.from_numpy(pick)]
    for epoch in range(start + 1, recipe.epochs + 1):
        loss = train_epoch(model, train_for(epoch - 1), optimizer, batch_size=recipe.batch_size,
                           seed=derive_seed(seed, cond.name, epoch), device=device)
        scheduler.step()
        with atomic_path(state_path) as tmp:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "epoch": epoch, "init_fingerprint": fingerprint}, tmp)
        if epoch in cond.eval_epochs and epoch not in done:
            sweep = epsilon_sweep(model, (x_test, y_test), cfg.eps, attack=cfg.attack, device=device,
                                  seed=derive_seed(seed, cond.name, "attack", epoch))
            r, note = _robustness(sweep.eps, sweep.accuracy)
            done[epoch] = Evaluation(cond.name, seed, epoch, sweep.eps.tolist(), sweep.accuracy.tolist(), r, fingerprint,
                                     note, n_images=int(len(y_test)))
            atomic_write_text(evals_path, json.dumps([asdict(e) for e in sorted(done.values(), key=lambda e: e.epoch)], indent=1))
            log(f"{cond.name} seed {seed} epoch {epoch}: loss {loss:.3f} clean acc {sweep.accuracy[0]:.3f} R {r:.3f}")
    missing = [ep for ep in cond.eval_epochs if ep not in done]
    if missing:  # checkpoints added after the run had trained past them
        raise InputError(f"{folder}: epochs {missing} were added to the checkpoints after training passed them; "
                         "their weights are gone. Delete the run folder to retrain it, or drop those epochs.")
    return [done[ep] for ep in cond.eval_epochs]


# --- the table -------------------------------------------------------------------------

@dataclass
class StudyResult:
    """The study's numbers: per (condition, epoch) rows, Welch's t-tests, every evaluation."""

    rows: list[dict] = field(default_factory=list)          # per condition x epoch: n, mean/SD of R and clean acc
    comparisons: list[dict] = field(default_factory=list)   # Welch's t-tests (configured and pretrain-vs-scratch)
    evaluations: list[Evaluation] = field(default_factory=list)
    matched_init: dict = field(default_factory=dict)        # "<model family>/seed-<s>" -> identical across conditions?
    config: dict = field(default_factory=dict)              # the resolved configuration (recipes per condition)

    def to_dict(self) -> dict:
        return {"config": self.config, "rows": self.rows, "comparisons": self.comparisons,
                "matched_init": self.matched_init, "evaluations": [asdict(e) for e in self.evaluations]}

    @classmethod
    def from_dict(cls, data: dict) -> StudyResult:
        """The result :meth:`to_dict` wrote (``study.json``)."""
        return cls(rows=list(data.get("rows", [])), comparisons=list(data.get("comparisons", [])),
                   evaluations=[Evaluation(**e) for e in data.get("evaluations", [])],
                   matched_init=dict(data.get("matched_init", {})), config=dict(data.get("config", {})))

    @classmethod
    def load(cls, folder: str | os.PathLike) -> StudyResult:
        """Read a study's output folder (its ``study.json``); DataError when it is not one."""
        path = Path(folder) / "study.json"
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            raise DataError(f"{folder} is not a study folder: it has no study.json (written by "
                            "`robustlab study adversarial --out FOLDER`).") from None
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise DataError(f"cannot read {path}: {exc}. Run the study again to rewrite it.") from None

    def row(self, condition: str, epoch: int) -> dict:
        for r in self.rows:
            if r["condition"] == condition and r["epoch"] == epoch:
                return r
        raise KeyError(f"no row for condition {condition!r} at epoch {epoch}")

    def markdown(self) -> str:
        from .report import study_markdown

        return study_markdown(self)


def _r_values(evals: list[Evaluation]) -> list[float]:
    return [e.R for e in evals if not math.isnan(e.R)]


def summarise(cfg: StudyConfig, evaluations: list[Evaluation]) -> StudyResult:
    """Mean and SD of R and clean accuracy per (condition, epoch), Welch's t-tests, matched init."""
    from ..metrics.stats import welch_t_test

    result = StudyResult(evaluations=evaluations, config=cfg.to_dict())
    by: dict[tuple[str, int], list[Evaluation]] = {}
    for e in evaluations:
        by.setdefault((e.condition, e.epoch), []).append(e)
    for cond in cfg.conditions:
        for ep in cond.eval_epochs:
            es = by.get((cond.name, ep), [])
            rs = np.array(_r_values(es))
            clean = np.array([e.accuracy[0] for e in es])
            result.rows.append({"condition": cond.name, "architecture": cond.model_family, "dataset": cond.describe_data(),
                                "start": (f"pretrained: {cond.pretrain or cond.pretrain_checkpoint}" if cond.pretrained
                                          else "scratch"),
                                "epoch": ep, "n": int(rs.size), "R_mean": float(rs.mean()) if rs.size else math.nan,
                                "R_sd": float(rs.std(ddof=1)) if rs.size > 1 else math.nan,
                                "clean_mean": float(clean.mean()) if clean.size else math.nan,
                                "clean_sd": float(clean.std(ddof=1)) if clean.size > 1 else math.nan})
    for a, b, kind in cfg.all_comparisons():
        common = [ep for ep in cfg.condition(a).eval_epochs if ep in cfg.condition(b).eval_epochs]
        for ep in common:
            ra, rb = _r_values(by.get((a, ep), [])), _r_values(by.get((b, ep), []))
            row = {"a": a, "b": b, "kind": kind, "epoch": ep, "n_a": len(ra), "n_b": len(rb),
                   "mean_a": float(np.mean(ra)) if ra else math.nan, "mean_b": float(np.mean(rb)) if rb else math.nan}
            try:
                test = welch_t_test(ra, rb, alpha=cfg.alpha_test)
                row.update(t=test.t, p=test.p_value, df=test.df, significant=test.significant, note="")
            except InputError as exc:  # too few defined R values, or both constant
                row.update(t=math.nan, p=math.nan, df=math.nan, significant=False, note=str(exc))
            result.comparisons.append(row)
    prints: dict[str, set[str]] = {}
    family = {c.name: c.model_family for c in cfg.conditions if not c.pretrained}
    for e in evaluations:
        if e.condition in family:  # pretrained conditions start from trained weights by design
            prints.setdefault(f"{family[e.condition]}/seed-{e.seed}", set()).add(e.init_fingerprint)
    result.matched_init = {k: len(v) == 1 for k, v in sorted(prints.items())}
    return result


def run_study(cfg: StudyConfig, out: str | os.PathLike, *, log: Callable[[str], None] = print) -> StudyResult:
    """Run (or resume) every (condition, seed), pretraining sources first; write the study's
    outputs into ``out`` (see the module docstring) and return the result.

    Every ``pretrain_checkpoint`` file is checked (exists, fits the architecture) before any
    training starts.
    """
    from .report import write_outputs

    out_dir = ensure_dir(out)
    data = StudyData(cfg.data_root, cfg.data_seed)
    check_pretrain_checkpoints(cfg, data)
    evaluations: list[Evaluation] = []
    for cond in cfg.training_order():
        for seed in cfg.seeds:
            evaluations += run_one(cfg, cond, seed, out_dir, data, log)
    order = {c.name: i for i, c in enumerate(cfg.conditions)}
    evaluations.sort(key=lambda e: (order[e.condition], e.seed, e.epoch))
    result = summarise(cfg, evaluations)
    write_outputs(cfg, result, out_dir)
    return result
