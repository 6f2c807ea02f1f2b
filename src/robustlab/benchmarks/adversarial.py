"""Benchmark ``adversarial-auc``: accuracy under FGSM/PGD over an epsilon grid, and the
normalised area R (Kunhardt, Deza, Poggio).

Data: a labelled image folder (``<root>/<class>/<image>``) or a named set -- ``digits`` and
``textures`` (download-free stand-ins), ``mnist`` and ``cifar10`` (torchvision downloads into
``data_root``), with ``split`` test (default) or train. Each unit is a shard of samples; the
attack runs on the model's prepared input (after its resize/crop, in pixel space [0, 1]).

Stored per sample: ``correct`` (N x E bool: classified correctly under the attack of each
strength), ``perturbation`` (N x E: the L-inf or L2 size of x_adv - x), ``zero_gradient``.
Metrics (all recomputable from them): ``accuracy`` per setting ``<attack>/<norm>/<eps>`` with
Clopper-Pearson bounds, ``normalised_accuracy`` f(eps)/f(eps0), ``R`` over [eps0, eps1],
``relative_change`` C of every strength against eps0, and the sanity checks (largest
perturbation per eps, monotonicity, zero-gradient fraction).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..attacks import NORMS, PAPER_EPS_GRID, check_eps_grid, epsilon_sweep, get_attack
from ..data.arrays import ArrayDatasetSamples
from ..errors import InputError, ModelError, unknown_name
from ..metrics.adversarial import normalised_curve, relative_change, robustness_auc
from ..metrics.stats import clopper_pearson
from ..seeding import derive_seed
from ..engine.benchmark import Benchmark, MetricRow, Unit, model_device, register_benchmark
from ..engine.config import LimitedConfig, conditional
from ..engine.options import (CLASS_MAP, LIMIT, LIMIT_ORDER, Option, check_positive, class_map_config, limit_config,
                              seed_option, shard_size_option)
from ..engine.presentation import HeadlineMetric, Presentation
from ..engine.records import Batch
from ..engine.setting import Setting

NAMED_SETS = ("digits", "textures", "mnist", "cifar10")


def parse_eps(spec: Any, norm: str = "linf") -> list[float]:
    """``"0,0.0125,0.025"``, one number or a sequence -> a checked, strictly increasing list
    (default: the paper grid); L-inf strengths lie in [0, 1] (pixels are in [0, 1])."""
    if spec is None or spec == "paper":
        return list(PAPER_EPS_GRID)
    return check_eps_grid(spec, upper=1.0 if norm == "linf" else None).tolist()


def _named_dataset(name: str, split: str, root: str):
    from ..data import standins, torchvision_sets

    if name == "digits":
        return standins.digits_dataset(32, split=split)
    if name == "textures":
        return standins.textures_dataset(split=split)
    train = split == "train"
    if name == "mnist":
        return torchvision_sets.mnist(Path(root).expanduser(), train=train, size=32)
    return torchvision_sets.cifar10(Path(root).expanduser(), train=train)


@dataclass(frozen=True, kw_only=True)
class AdversarialConfig(LimitedConfig):
    """An ``adversarial-auc`` run: the data (a folder, or a named set with its split and download root),
    the attack over its eps grid, R's interval, and the attack's own settings (None where the attack
    takes none: FGSM has no steps). ``nested`` is recorded only when set (PGD)."""

    named: bool
    split: str
    data_root: str
    eps: list[float]
    attack: str
    norm: str
    steps: int | None
    rel_step_size: float | None
    random_start: bool | None
    seed: int
    eps0: float
    eps1: float
    class_map: Any
    shard_size: int
    num_classes: int
    nested: bool = conditional(False)


def setting_name(attack: str, norm: str, eps: float) -> str:
    """The metric rows' setting of one strength: ``fgsm/linf/0.0125``."""
    return f"{attack}/{norm}/{eps:g}"


def accuracy_rise(config: AdversarialConfig, table: Mapping[tuple[str, str], float]
                  ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """Where accuracy under attack climbs back with eps by more than one sample:
    ``((eps, accuracy) at the lowest point before the climb, (eps, accuracy) at its highest after)``,
    or None when the curve never rises by more than 1/n. An attack that works never does worse at a
    larger eps, so a climb is the attack failing (gradient masking, label leaking), not robustness."""
    n = table.get(("n", ""), 0)
    points = [(float(e), table.get(("accuracy", setting_name(config.attack, config.norm, float(e)))))
              for e in config.eps]
    points = [(e, a) for e, a in points if a is not None]
    tolerance = 1.0 / n + 1e-12 if n else 1e-12
    best = None
    for i, (e_low, a_low) in enumerate(points):
        later = points[i + 1:]
        if not later:
            break
        e_high, a_high = max(later, key=lambda p: p[1])
        if a_high - a_low > tolerance and (best is None or a_high - a_low > best[1][1] - best[0][1]):
            best = ((e_low, a_low), (e_high, a_high))
    return best


@register_benchmark
class AdversarialAUC(Benchmark):
    """Accuracy vs attack strength and R (its options are :attr:`options`). ``nested`` (PGD only):
    each strength starts from the previous one's perturbation -- monotone in eps and several times
    faster, see :func:`robustlab.attacks.epsilon_sweep`."""

    name = "adversarial-auc"
    config_class = AdversarialConfig
    presentation = "adversarial"
    options = (
        Option("eps", "value", help="Attack strengths in pixel units, comma-separated or a list (default: the "
               "paper's 9-point grid)."),
        Option("attack", "str", "fgsm", help="A registered attack: fgsm or pgd."),
        Option("norm", "str", "linf", help="Threat model.", choices=NORMS),
        Option("steps", "int", 10, help="PGD steps."),
        Option("rel_step_size", "float", 0.25, help="PGD step size as a fraction of eps."),
        Option("nested", "bool", False, help="PGD only: each strength starts from the previous one's perturbation."),
        Option("random_start", "bool", True, help="PGD: start from a random point of the ball."),
        seed_option(0, "Seed of PGD's random starts (per batch)."),
        Option("eps0", "float", help="Lower end of R's interval (default: the grid's first strength)."),
        Option("eps1", "float", help="Upper end of R's interval (default: the grid's last strength)."),
        Option("split", "str", "test", help="Split of a named set (digits, textures, mnist, cifar10): test or train."),
        Option("data_root", "path", "~/.robustlab/data", help="Where named sets are downloaded."),
        CLASS_MAP, LIMIT, LIMIT_ORDER, shard_size_option(1000),
    )
    option_hints = {key: "adversarial-auc takes attack strengths, not corruptions or severities: give "
                         "-O eps=0,0.0125,0.025 (and -O attack=fgsm or pgd) instead of -c/-s."
                    for key in ("corruptions", "severities")}

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def configure(self, data: str, *, eps, attack, norm, steps, rel_step_size, nested, random_start, seed, eps0,
                  eps1, split, data_root, class_map, limit, limit_order, shard_size) -> AdversarialConfig:
        takes = get_attack(attack).settings
        if norm not in NORMS:
            raise unknown_name("norm", norm, NORMS)
        grid = parse_eps(eps, norm)
        for end, value in (("eps0", eps0), ("eps1", eps1)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InputError(f"{end} must be a number on the eps grid {grid}; got {value!r}.")
            if value is not None and float(value) not in grid:
                raise InputError(f"{end}={value} is not on the eps grid {grid}; R's interval ends must be measured strengths.")
        if split not in ("test", "train"):
            raise InputError(f"split must be 'test' or 'train'; got {split!r}.")
        named = data in NAMED_SETS
        if nested not in (False, None, "false", "False", "0", 0) and "nested" not in takes:
            raise InputError("nested applies to PGD only (-O attack=pgd -O nested=true).")
        config = AdversarialConfig(
            data=data if named else str(Path(data).expanduser().resolve()), named=named, split=split,
            data_root=str(data_root), eps=grid, attack=attack, norm=norm,
            steps=check_positive("steps", steps) if "steps" in takes else None,
            rel_step_size=float(rel_step_size) if "rel_step_size" in takes else None,
            random_start=bool(random_start) if "random_start" in takes else None, seed=int(seed),
            eps0=float(eps0) if eps0 is not None else grid[0], eps1=float(eps1) if eps1 is not None else grid[-1],
            class_map=None if named else class_map_config(class_map), **limit_config(limit, limit_order),
            shard_size=check_positive("shard_size", shard_size), num_classes=0,
            # only when set: runs made before the option keep their identity
            nested=nested not in (False, None, "false", "False", "0", 0))
        base = self._base(config)
        config = config.replace(num_classes=len(base.classes))
        if config.limit:
            config = config.replace(**limit_config(limit, limit_order, base))
        return config

    def _base(self, config: AdversarialConfig):
        key = f"{config.data}|{config.split}|{config.limit}|{config.order}|{config.class_map}"
        if key not in self._cache:
            if config.named:
                from ..data.classification import limit_samples

                samples = ArrayDatasetSamples(_named_dataset(config.data, config.split, config.data_root))
                samples = limit_samples(samples, config.limit, config.order)
            else:
                from ..data.classification import read_image_folder

                samples = read_image_folder(config.data, config.class_map, limit=config.limit,
                                            limit_order=config.order)
            self._cache[key] = samples
        return self._cache[key]

    def plan(self, config: AdversarialConfig) -> list[Unit]:
        n, size = len(self._base(config)), config.shard_size
        setting = Setting(f"{config.attack}/{config.norm}")
        return [Unit.of(setting, k, {"start": s, "stop": min(n, s + size)}) for k, s in enumerate(range(0, n, size))]

    def samples(self, config: AdversarialConfig, unit: Unit):
        return self._base(config).subset(unit.params["start"], unit.params["stop"])

    def predict(self, model: torch.nn.Module, batch: Batch, config: AdversarialConfig) -> dict[str, np.ndarray]:
        if getattr(model, "differentiable", True) is False:
            raise ModelError(f"model {getattr(model, 'name', model)!r} has no gradients (e.g. an ONNX model): "
                             "gradient attacks need a torch model; load the same network from torch weights.")
        model = self.for_data_classes(model, config)  # zero-shot and hf: models take the data's classes
        device = model_device(model)
        x, labels = batch.stacked_inputs(device), batch.label_tensor(device)
        seed = derive_seed(config.seed, tuple(labels.tolist()))  # per batch, reproducible on resume
        takes = get_attack(config.attack).settings  # the settings the attack declares, by their config fields
        kwargs = {k: bool(getattr(config, k)) if k == "nested" else getattr(config, k) for k in takes if k != "seed"}
        import warnings

        from ..attacks import GradientMaskingWarning

        with warnings.catch_warnings():  # reported from the stored columns instead, once per run
            warnings.simplefilter("ignore", GradientMaskingWarning)
            sweep = epsilon_sweep(model, (x, labels), config.eps, attack=config.attack, norm=config.norm,
                                  seed=seed, batch_size=x.shape[0], device=x.device, compare_fgsm=False, **kwargs)
        return {"correct": sweep.correct.T.copy(), "perturbation": sweep.perturbation.T.astype(np.float32),
                "zero_gradient": sweep.zero_gradient.astype(bool)}

    def metrics(self, config: AdversarialConfig, predictions, related=None) -> list[MetricRow]:
        units = [predictions[u] for u in sorted(predictions)]
        correct = np.concatenate([u["correct"] for u in units]) if units else np.zeros((0, len(config.eps)), bool)
        if correct.shape[0] == 0:
            raise InputError("the run has no samples: nothing to score.")
        pert = np.concatenate([u["perturbation"] for u in units])
        zero = np.concatenate([u["zero_gradient"] for u in units])
        eps = np.asarray(config.eps)
        n = correct.shape[0]
        k = correct.sum(axis=0)
        acc = k / n
        low, high = clopper_pearson(k, np.full_like(k, n))
        rows: list[MetricRow] = [("n", "", float(n)), ("zero_gradient_fraction", "", float(zero.mean()))]
        for e, a, lo, hi, p in zip(eps, acc, np.atleast_1d(low), np.atleast_1d(high), pert.max(axis=0)):
            s = setting_name(config.attack, config.norm, float(e))
            rows += [("accuracy", s, float(a)), ("accuracy_low", s, float(lo)), ("accuracy_high", s, float(hi)),
                     ("max_perturbation", s, float(p))]
        i0 = int(np.flatnonzero(eps == config.eps0)[0])
        if acc[i0] > 0:
            interval = f"{config.attack}/{config.norm}/[{config.eps0:g},{config.eps1:g}]"
            rows.append(("R", interval, float(robustness_auc(eps, acc, eps0=config.eps0, eps1=config.eps1))))
            for e, v in zip(eps, normalised_curve(eps, acc, eps0=config.eps0)):
                rows.append(("normalised_accuracy", setting_name(config.attack, config.norm, float(e)), float(v)))
            for e, a in zip(eps, acc):
                if e != config.eps0:
                    rows.append(("relative_change", setting_name(config.attack, config.norm, float(e)),
                                 float(relative_change(a, acc[i0]))))
        rows.append(("within_ball", "", float(np.all(pert.max(axis=0) <= eps + 1e-5))))
        rows.append(("non_increasing", "", float(np.all(np.diff(acc) <= 1.0 / n + 1e-12))))
        return rows


class AdversarialShow(Presentation):
    """How ``adversarial-auc`` runs are shown: accuracy per strength with its interval, R, and why a
    curve that climbs back is the attack failing. The report's section extends it
    (:mod:`robustlab.report.section_adversarial`)."""

    name = "adversarial"
    title = "Adversarial robustness over an epsilon interval"
    headline = (HeadlineMetric("R", "R", percent=False, setting=None),)

    def notes(self, config: AdversarialConfig, metrics: Iterable[MetricRow]) -> list[str]:
        table = {(m, s): v for m, s, v in metrics}
        notes = []
        if not any(m == "R" for m, _, _ in metrics):
            notes.append(f"R undefined: accuracy at eps0={config.eps0:g} is 0 (R is normalised by f(eps0)).")
        if table.get(("zero_gradient_fraction", ""), 0) > 0:
            notes.append(f"{table[('zero_gradient_fraction', '')]:.1%} of samples had an exactly zero input gradient: "
                         "possible gradient masking; robustness may be overestimated.")
        if table.get(("within_ball", ""), 1) < 1:
            notes.append("some adversarial perturbations exceed their eps: this is a bug, please report it.")
        rise = accuracy_rise(config, table)
        if rise is not None:
            (e_low, a_low), (e_high, a_high) = rise
            where = (f"{config.attack.upper()} accuracy is not monotone in eps: it climbs back from {100 * a_low:.1f} % "
                     f"at eps {e_low:g} to {100 * a_high:.1f} % at eps {e_high:g}")
            if config.attack == "pgd":
                notes.append(f"{where}: the attack is not converging; use more steps (-O steps=40).")
            else:
                notes.append(f"{where}. A stronger attack never does worse at a larger eps, so this is the attack "
                             "failing, not the model resisting: FGSM's single step overshoots at large eps, the usual "
                             "sign of gradient masking (or label leaking when the model was trained on FGSM "
                             "examples). R counts the climb as robustness and overstates it; compare R with PGD "
                             "beside it (the same command with -O attack=pgd).")
        return notes

    def text(self, config: AdversarialConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        from ..engine.result_text import pct, text_table

        table = {(m, s): v for m, s, v in metrics}
        rows = []
        for point in summary.get("curve") or []:
            s = setting_name(config.attack, config.norm, float(point["eps"]))
            rows.append([f"{point['eps']:g}", pct(point["accuracy"]), pct(point["low"]), pct(point["high"]),
                         "-" if point.get("normalised") is None else f"{point['normalised']:.3f}",
                         "-" if (("relative_change", s)) not in table else f"{table[('relative_change', s)]:+.3f}"])
        lines = [f"{config.attack.upper()} ({config.norm}) accuracy f(eps) (%) with 95% Clopper-Pearson "
                 f"intervals on {int(table.get(('n', ''), 0))} samples; eps in pixel units of [0, 1]"]
        lines += text_table(["eps", "f(eps)", "low", "high", "f/f(eps0)", "C"], rows)
        r = summary.get("R")
        lo, hi = summary.get("interval", [config.eps0, config.eps1])
        lines += ["", f"R over [{lo:g}, {hi:g}] (area under f(eps)/f(eps0) / interval length): "
                  + ("undefined (f(eps0) = 0)" if r is None else f"{r:.4f}")]
        return lines

    def summary(self, config: AdversarialConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        table = {(m, s): v for m, s, v in metrics}
        curve = []
        for e in config.eps:
            s = setting_name(config.attack, config.norm, float(e))
            curve.append({"eps": e, "accuracy": table.get(("accuracy", s)), "low": table.get(("accuracy_low", s)),
                          "high": table.get(("accuracy_high", s)), "normalised": table.get(("normalised_accuracy", s))})
        r = next((v for m, _, v in metrics if m == "R"), math.nan)
        out = {"attack": config.attack, "norm": config.norm, "curve": curve,
               "R": None if math.isnan(r) else r, "interval": [config.eps0, config.eps1]}
        rise = accuracy_rise(config, table)
        if rise is not None:
            (e_low, a_low), (e_high, a_high) = rise
            out["non_monotone"] = {"eps_low": e_low, "accuracy_low": a_low, "eps_high": e_high,
                                   "accuracy_high": a_high}
        return out
