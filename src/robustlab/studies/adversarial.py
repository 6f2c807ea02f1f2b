"""The multi-seed adversarial-robustness study (Kunhardt, Deza, Poggio) as a resumable runner.

For every condition (architecture x dataset/task) and seed: train with the paper's recipe
(SGD, momentum 0.9, weight decay 5e-4, batch 125, learning rate divided by 10 at half the
run) from initial weights that depend only on (architecture, seed) -- identical across
datasets --, checkpoint every epoch, and at the chosen epochs measure accuracy under FGSM over
the eps grid and the normalised AUC R. The table gives mean and SD of R per condition and
Welch's t-tests between chosen pairs.

Configuration (TOML)::

    [study]
    seeds = 20                  # or a list, e.g. [0, 1, 2]
    epochs = 20
    checkpoints = [1, 10, 20]   # epochs at which R is measured (default: the last)
    lr = 0.01
    eval_samples = 1000         # test images attacked per evaluation
    eps = [0, 0.0125, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
    attack = "fgsm"
    data_root = "~/.robustlab/data"   # MNIST / CIFAR-10 downloads

    [[conditions]]
    name = "mnist-lenet"
    architecture = "lenet"     # lenet | fc | resnet50
    dataset = "mnist"          # mnist | cifar10 | digits | textures | fusion

    [[conditions]]
    name = "fusion-digit-lenet"
    architecture = "lenet"
    dataset = "fusion"
    fusion = ["mnist", "cifar10"]
    alpha = 0.5
    task = "a"                 # labels of the first part (digits) or "b" (objects)

    [[comparisons]]
    a = "mnist-lenet"
    b = "fusion-digit-lenet"
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..attacks import PAPER_EPS_GRID, check_eps_grid, epsilon_sweep
from ..data.arrays import ArrayDataset, blend
from ..errors import DataError, InputError
from ..fsutil import atomic_path, atomic_write_text, ensure_dir
from ..safeload import load_checkpoint
from ..seeding import derive_seed
from .architectures import ARCHITECTURES, build_architecture, weights_fingerprint

DATASETS = ("mnist", "cifar10", "digits", "textures", "fusion")


@dataclass(frozen=True)
class Condition:
    name: str
    architecture: str
    dataset: str
    fusion: tuple[str, str] = ("mnist", "cifar10")
    alpha: float = 0.5
    task: str = "a"


@dataclass(frozen=True)
class StudyConfig:
    conditions: tuple[Condition, ...]
    seeds: tuple[int, ...] = tuple(range(20))
    epochs: int = 20
    checkpoints: tuple[int, ...] = ()
    lr: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 5e-4
    batch_size: int = 125
    lr_drop_fraction: float = 0.5
    eval_samples: int = 1000
    eps: tuple[float, ...] = PAPER_EPS_GRID
    attack: str = "fgsm"
    data_root: str = "~/.robustlab/data"
    device: str = "auto"
    comparisons: tuple[tuple[str, str], ...] = ()
    alpha_test: float = 0.05

    @property
    def eval_epochs(self) -> tuple[int, ...]:
        return self.checkpoints or (self.epochs,)


def load_config(path: str | os.PathLike) -> StudyConfig:
    """Read and validate a study TOML file (see the module docstring)."""
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise DataError(f"study config {p} does not exist.") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"study config {p} is not valid TOML: {exc}.") from exc
    return config_from_dict(raw, source=str(p))


def config_from_dict(raw: dict, *, source: str = "config") -> StudyConfig:
    study = dict(raw.get("study", {}))
    conds = raw.get("conditions") or []
    if not conds:
        raise InputError(f"{source}: no [[conditions]]; add at least one with name, architecture and dataset.")
    conditions = []
    for i, c in enumerate(conds):
        missing = [k for k in ("name", "architecture", "dataset") if k not in c]
        if missing:
            raise InputError(f"{source}: condition #{i + 1} lacks {', '.join(missing)}.")
        if c["architecture"] not in ARCHITECTURES:
            raise InputError(f"{source}: condition {c['name']!r}: unknown architecture {c['architecture']!r}; "
                             f"use one of {ARCHITECTURES.names()}.")
        if c["dataset"] not in DATASETS:
            raise InputError(f"{source}: condition {c['name']!r}: unknown dataset {c['dataset']!r}; use one of {DATASETS}.")
        conditions.append(Condition(c["name"], c["architecture"], c["dataset"], tuple(c.get("fusion", ("mnist", "cifar10"))),
                                    float(c.get("alpha", 0.5)), str(c.get("task", "a"))))
    names = [c.name for c in conditions]
    if len(set(names)) != len(names):
        raise InputError(f"{source}: condition names must be unique; got {names}.")
    seeds = study.pop("seeds", 20)
    seeds = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    comparisons = tuple((c["a"], c["b"]) for c in raw.get("comparisons", []))
    for a, b in comparisons:
        for n in (a, b):
            if n not in names:
                raise InputError(f"{source}: comparison names unknown condition {n!r}; conditions are {names}.")
    known = set(StudyConfig.__dataclass_fields__) - {"conditions", "seeds", "comparisons"}
    unknown = set(study) - known
    if unknown:
        raise InputError(f"{source}: unknown [study] keys {sorted(unknown)}; known keys: {sorted(known)}.")
    for key in ("checkpoints", "eps"):
        if key in study:
            study[key] = tuple(study[key])
    cfg = StudyConfig(conditions=tuple(conditions), seeds=seeds, comparisons=comparisons, **study)
    check_eps_grid(cfg.eps)
    bad = [e for e in cfg.eval_epochs if not 1 <= e <= cfg.epochs]
    if bad:
        raise InputError(f"{source}: checkpoints {bad} are outside 1..epochs ({cfg.epochs}).")
    return cfg


# --- data ------------------------------------------------------------------------------

def _base_dataset(name: str, split: str, root: str) -> ArrayDataset:
    from ..data import standins, torchvision_sets

    train = split == "train"
    if name == "mnist":
        return torchvision_sets.mnist(Path(root).expanduser(), train=train, size=32)
    if name == "cifar10":
        return torchvision_sets.cifar10(Path(root).expanduser(), train=train)
    if name == "digits":
        return standins.digits_dataset(32, split=split)
    if name == "textures":
        return standins.textures_dataset(split=split)
    raise InputError(f"unknown dataset {name!r}; use one of {DATASETS}.")


def condition_data(cond: Condition, root: str, cache: dict) -> tuple[Callable[[int], ArrayDataset], ArrayDataset]:
    """(train set for an epoch, fixed test set). Fusion training data is re-paired every epoch."""

    def get(name: str, split: str) -> ArrayDataset:
        key = (name, split)
        if key not in cache:
            cache[key] = _base_dataset(name, split, root)
        return cache[key]

    if cond.dataset != "fusion":
        train = get(cond.dataset, "train")
        return (lambda epoch: train), get(cond.dataset, "test")
    a, b = cond.fusion
    fused_train = blend(get(a, "train"), get(b, "train"), cond.alpha, task=cond.task, seed=derive_seed(0, cond.name))
    test = blend(get(a, "test"), get(b, "test"), cond.alpha, task=cond.task, seed=derive_seed(1, cond.name)).materialise()

    def train_for(epoch: int) -> ArrayDataset:
        fused_train.set_epoch(epoch)
        return fused_train.materialise()

    return train_for, test


# --- training --------------------------------------------------------------------------

def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def train_epoch(model: torch.nn.Module, data: ArrayDataset, optimizer: torch.optim.Optimizer, *, batch_size: int,
                seed: int, device: torch.device) -> float:
    """One epoch of SGD on shuffled mini-batches (order from ``seed``); returns the mean loss."""
    x, y = data.tensors()
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
    model.train()
    total, count = 0.0, 0
    for i in range(0, len(order), batch_size):
        idx = order[i:i + batch_size]
        xb, yb = x[idx].to(device), y[idx].to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        if not torch.isfinite(loss):
            raise InputError("training diverged (NaN loss); lower the learning rate.")
        loss.backward()
        optimizer.step()
        total += float(loss.detach()) * len(idx)
        count += len(idx)
    return total / max(count, 1)


@dataclass
class Evaluation:
    condition: str
    seed: int
    epoch: int
    eps: list[float]
    accuracy: list[float]
    R: float
    init_fingerprint: str
    note: str = ""


def _robustness(eps: np.ndarray, acc: np.ndarray) -> tuple[float, str]:
    from ..metrics.adversarial import robustness_auc

    if acc[0] == 0:
        return math.nan, "R undefined: accuracy at eps0 is 0"
    return float(robustness_auc(eps, acc)), ""


def run_one(cfg: StudyConfig, cond: Condition, seed: int, out: Path, cache: dict, log: Callable[[str], None]) -> list[Evaluation]:
    """Train (or resume) one (condition, seed) and evaluate it at the checkpoint epochs."""
    run_dir = ensure_dir(out / "runs" / cond.name / f"seed-{seed}")
    evals_path = run_dir / "evaluations.json"
    done = {e["epoch"]: Evaluation(**e) for e in json.loads(evals_path.read_text())} if evals_path.exists() else {}
    if all(ep in done for ep in cfg.eval_epochs):
        return [done[ep] for ep in cfg.eval_epochs]
    device = _device(cfg.device)
    train_for, test = condition_data(cond, cfg.data_root, cache)
    n_classes = int(max(test.labels.max(), train_for(0).labels.max()) + 1)
    model = build_architecture(cond.architecture, seed=seed, num_classes=n_classes).to(device)
    fingerprint = weights_fingerprint(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    drop_at = max(1, int(round(cfg.epochs * cfg.lr_drop_fraction)))
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[drop_at], gamma=0.1)
    state_path, start = run_dir / "checkpoint.pt", 0
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
    # A fixed random subset (not the first N: test sets are often sorted by class).
    pick = np.sort(np.random.default_rng(derive_seed(0, cond.name, "eval")).permutation(len(test))[:cfg.eval_samples])
    x_test, y_test = x_test[pick], y_test[pick]
    for epoch in range(start + 1, cfg.epochs + 1):
        loss = train_epoch(model, train_for(epoch - 1), optimizer, batch_size=cfg.batch_size,
                           seed=derive_seed(seed, cond.name, epoch), device=device)
        scheduler.step()
        with atomic_path(state_path) as tmp:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "epoch": epoch, "init_fingerprint": fingerprint}, tmp)
        if epoch in cfg.eval_epochs and epoch not in done:
            sweep = epsilon_sweep(model, (x_test, y_test), cfg.eps, attack=cfg.attack, device=device,
                                  seed=derive_seed(seed, cond.name, "attack", epoch))
            r, note = _robustness(sweep.eps, sweep.accuracy)
            done[epoch] = Evaluation(cond.name, seed, epoch, sweep.eps.tolist(), sweep.accuracy.tolist(), r, fingerprint, note)
            atomic_write_text(evals_path, json.dumps([asdict(e) for e in sorted(done.values(), key=lambda e: e.epoch)], indent=1))
            log(f"{cond.name} seed {seed} epoch {epoch}: loss {loss:.3f} clean acc {sweep.accuracy[0]:.3f} R {r:.3f}")
    return [done[ep] for ep in cfg.eval_epochs]


# --- the table -------------------------------------------------------------------------

@dataclass
class StudyResult:
    rows: list[dict] = field(default_factory=list)          # per condition x epoch: n, mean/SD of R and clean acc
    comparisons: list[dict] = field(default_factory=list)   # Welch's t-tests
    evaluations: list[Evaluation] = field(default_factory=list)
    matched_init: dict = field(default_factory=dict)        # (architecture, seed) -> identical across conditions?

    def to_dict(self) -> dict:
        return {"rows": self.rows, "comparisons": self.comparisons, "matched_init": self.matched_init,
                "evaluations": [asdict(e) for e in self.evaluations]}

    def markdown(self) -> str:
        lines = ["| condition | epoch | n | clean acc (mean ± SD) | R (mean ± SD) |", "|---|---:|---:|---:|---:|"]
        for r in self.rows:
            lines.append(f"| {r['condition']} | {r['epoch']} | {r['n']} | {r['clean_mean']:.3f} ± {r['clean_sd']:.3f} | "
                         f"{r['R_mean']:.3f} ± {r['R_sd']:.3f} |")
        if self.comparisons:
            lines += ["", "| a | b | epoch | t | p | significant |", "|---|---|---:|---:|---:|:---:|"]
            for c in self.comparisons:
                lines.append(f"| {c['a']} | {c['b']} | {c['epoch']} | {c['t']:.3f} | {c['p']:.4f} | {'yes' if c['significant'] else 'no'} |")
        return "\n".join(lines) + "\n"


def summarise(cfg: StudyConfig, evaluations: list[Evaluation]) -> StudyResult:
    from ..metrics.stats import welch_t_test

    result = StudyResult(evaluations=evaluations)
    by = {}
    for e in evaluations:
        by.setdefault((e.condition, e.epoch), []).append(e)
    for cond in cfg.conditions:
        for ep in cfg.eval_epochs:
            es = by.get((cond.name, ep), [])
            rs = np.array([e.R for e in es if not math.isnan(e.R)])
            clean = np.array([e.accuracy[0] for e in es])
            result.rows.append({"condition": cond.name, "architecture": cond.architecture, "dataset": cond.dataset,
                                "epoch": ep, "n": int(rs.size), "R_mean": float(rs.mean()) if rs.size else math.nan,
                                "R_sd": float(rs.std(ddof=1)) if rs.size > 1 else math.nan,
                                "clean_mean": float(clean.mean()) if clean.size else math.nan,
                                "clean_sd": float(clean.std(ddof=1)) if clean.size > 1 else math.nan})
    for a, b in cfg.comparisons:
        for ep in cfg.eval_epochs:
            ra = [e.R for e in by.get((a, ep), []) if not math.isnan(e.R)]
            rb = [e.R for e in by.get((b, ep), []) if not math.isnan(e.R)]
            row = {"a": a, "b": b, "epoch": ep, "n_a": len(ra), "n_b": len(rb)}
            try:
                test = welch_t_test(ra, rb, alpha=cfg.alpha_test)
                row.update(t=test.t, p=test.p_value, df=test.df, significant=test.significant, note="")
            except InputError as exc:  # too few defined R values, or both constant
                row.update(t=math.nan, p=math.nan, df=math.nan, significant=False, note=str(exc))
            result.comparisons.append(row)
    prints: dict = {}
    arch_of = {c.name: c.architecture for c in cfg.conditions}
    for e in evaluations:
        prints.setdefault(f"{arch_of[e.condition]}/seed-{e.seed}", set()).add(e.init_fingerprint)
    result.matched_init = {k: len(v) == 1 for k, v in sorted(prints.items())}
    return result


def run_study(cfg: StudyConfig, out: str | os.PathLike, *, log: Callable[[str], None] = print) -> StudyResult:
    """Run (or resume) every (condition, seed) and write study.json, table.md and table.csv into ``out``."""
    out_dir = ensure_dir(out)
    cache: dict = {}
    evaluations: list[Evaluation] = []
    for cond in cfg.conditions:
        for seed in cfg.seeds:
            evaluations += run_one(cfg, cond, seed, out_dir, cache, log)
    result = summarise(cfg, evaluations)
    atomic_write_text(out_dir / "study.json", json.dumps(result.to_dict(), indent=1))
    atomic_write_text(out_dir / "table.md", result.markdown())
    header = "condition,architecture,dataset,epoch,n,R_mean,R_sd,clean_mean,clean_sd\n"
    atomic_write_text(out_dir / "table.csv", header + "".join(
        f"{r['condition']},{r['architecture']},{r['dataset']},{r['epoch']},{r['n']},{r['R_mean']:.6f},{r['R_sd']:.6f},"
        f"{r['clean_mean']:.6f},{r['clean_sd']:.6f}\n" for r in result.rows))
    return result
