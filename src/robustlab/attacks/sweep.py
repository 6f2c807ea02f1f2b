"""Accuracy under attack over a grid of strengths, evaluated efficiently, with sanity checks.

Attacks are looked up by name in :data:`ATTACK_REGISTRY`: each registered :class:`Attack` says
how one strength is computed (:func:`~robustlab.attacks.fgsm`, :func:`~robustlab.attacks.pgd`),
how a whole grid of strengths is evaluated on one batch, and which settings it takes.
FGSM's direction does not depend on eps, so one backward pass per batch serves the whole
grid. PGD runs strength by strength on the samples still standing (optionally starting each
strength from the previous one's perturbation, ``nested``).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from ..errors import InputError
from ..metrics.adversarial import PAPER_EPSILONS
from ..registry import Registry
from ._model import Classifier, check_labels, check_pixels, eval_mode, input_gradient, logits_of, model_device, model_dtype
from .gradient import NORMS, fgsm, pgd, steepest_direction

#: The paper's grid (Kunhardt, Deza, Poggio): L-inf FGSM strengths in pixel units of [0, 1].
PAPER_EPS_GRID = tuple(float(e) for e in PAPER_EPSILONS)

#: ``grid(model, x, y, eps grid, clean_ok, grad, *, norm, generator, batch_size, **settings)`` ->
#: (correct (E, B) bool, perturbation sizes (E, B) float32, every adversarial image in [0, 1]).
GridFn = Callable[..., tuple[torch.Tensor, torch.Tensor, bool]]


@dataclass(frozen=True)
class Attack:
    """A registered attack: its one-strength function, its grid evaluation and its settings.

    Attributes
    ----------
    name : str
    single : callable
        ``single(model, x, y, eps, norm=...) -> x_adv`` (float NCHW in [0, 1]).
    grid : callable
        Evaluates every strength of a grid on one batch (see :data:`GridFn`).
    settings : tuple of str
        The keyword settings of :func:`epsilon_sweep` it takes and records (``steps``...).
    """

    name: str
    single: Callable
    grid: GridFn
    settings: tuple[str, ...] = ()


#: Attacks by name (``fgsm``, ``pgd``); other packages register theirs with :func:`register_attack`.
ATTACK_REGISTRY: Registry[Attack] = Registry("attack", entry_points="robustlab.attacks")


def register_attack(name: str, *, single: Callable, settings: tuple[str, ...] = ()) -> Callable[[GridFn], GridFn]:
    """Decorator: register ``grid`` (see :data:`GridFn`) as the attack ``name``."""

    def deco(grid: GridFn) -> GridFn:
        ATTACK_REGISTRY.add(name, Attack(name, single, grid, tuple(settings)))
        return grid

    return deco


def get_attack(name: str) -> Attack:
    """The registered attack ``name`` (InputError with a suggestion otherwise)."""
    return ATTACK_REGISTRY.get(name)


class GradientMaskingWarning(UserWarning):
    """Signs that the measured robustness may come from broken gradients, not robustness."""


@dataclass
class SanityReport:
    """Checks the attack literature asks for (Carlini et al. 2019), measured during the sweep."""

    max_perturbation: list[float]          # per eps: largest L-inf (or L2) norm of x_adv - x
    within_ball: bool                      # every perturbation within its eps (+1e-6)
    within_pixel_range: bool               # every adversarial image in [0, 1]
    non_increasing: bool                   # accuracy never rises with eps (beyond one sample)
    zero_gradient_fraction: float          # samples whose input gradient is exactly zero
    pgd_weaker_than_fgsm: list[float] = field(default_factory=list)  # eps where PGD acc > FGSM acc
    warnings: list[str] = field(default_factory=list)


@dataclass
class SweepResult:
    """Accuracy per eps, with per-sample correctness (eps x samples) and the sanity report."""

    attack: str
    norm: str
    eps: np.ndarray                 # (E,) sorted strengths
    accuracy: np.ndarray            # (E,) fraction correct under attack
    correct: np.ndarray             # (E, N) bool
    labels: np.ndarray              # (N,) int64
    sanity: SanityReport
    settings: dict
    perturbation: np.ndarray | None = None    # (E, N) float32: L-inf / L2 norm of x_adv - x
    zero_gradient: np.ndarray | None = None   # (N,) bool: input gradient exactly zero

    def setting_names(self) -> list[str]:
        """Stable names of the settings, e.g. ``fgsm/linf/0.0125``."""
        return [f"{self.attack}/{self.norm}/{e:g}" for e in self.eps]

    def to_dict(self) -> dict:
        return {"attack": self.attack, "norm": self.norm, "eps": self.eps.tolist(),
                "accuracy": self.accuracy.tolist(), "n": int(self.correct.shape[1]),
                "sanity": asdict(self.sanity), "settings": self.settings}


def check_eps_grid(eps: Sequence[float] | float | str, *, upper: float | None = None) -> np.ndarray:
    """A strictly increasing, non-negative, finite grid of attack strengths (clear error otherwise).

    ``eps`` is a sequence of numbers, one number (a grid of one) or comma-separated text
    (``"0,0.0125,0.025"``, as a command line gives it); booleans and other objects are refused.
    ``upper``: the largest strength that means something (1.0 for L-inf on pixels in [0, 1]).
    """
    if isinstance(eps, str):
        parts = [v.strip() for v in eps.split(",") if v.strip()]
        try:
            eps = [float(v) for v in parts]
        except ValueError:
            raise InputError(f"eps must be comma-separated numbers such as 0,0.0125,0.025; got {eps!r}.") from None
    elif isinstance(eps, numbers.Real) and not isinstance(eps, (bool, np.bool_)):
        eps = [eps]
    try:
        values = list(eps)
    except TypeError:
        raise InputError(f"eps must be a list of numbers such as [0, 0.0125, 0.025]; got {eps!r}.") from None
    bad = [v for v in values if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real)]
    if bad:
        raise InputError(f"eps must hold numbers only; got {bad[0]!r} in {values!r:.80}.")
    grid = np.asarray(values, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0:
        raise InputError("the eps grid is empty: give at least one strength, e.g. 0,0.0125,0.025.")
    if not np.all(np.isfinite(grid)) or np.any(grid < 0):
        raise InputError(f"eps values must be finite and non-negative; got {grid.tolist()}.")
    if np.any(np.diff(grid) <= 0):
        raise InputError(f"the eps grid must be strictly increasing (sorted, no duplicates); got {grid.tolist()}.")
    if upper is not None and grid[-1] > upper:
        raise InputError(f"eps values must lie in [0, {upper:g}] (pixels are in [0, 1]); got {grid[-1]:g}.")
    return grid


def _batches(data, batch_size: int) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], torch.Tensor):
        x, y = data
        for i in range(0, x.shape[0], batch_size):
            yield x[i:i + batch_size], y[i:i + batch_size]
    else:
        yield from data


def _predict(model: Classifier, x: torch.Tensor, chunk: int) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([logits_of(model, x[i:i + chunk]).argmax(1) for i in range(0, x.shape[0], chunk)])


def _norms(delta: torch.Tensor, norm: str) -> torch.Tensor:
    flat = delta.flatten(1)
    return flat.abs().amax(1) if norm == "linf" else flat.norm(dim=1)


def epsilon_sweep(model: Classifier, data, eps: Sequence[float] = PAPER_EPS_GRID, *, attack: str = "fgsm",
                  norm: str = "linf", steps: int = 10, rel_step_size: float = 2.5 / 10,
                  random_start: bool = True, nested: bool = False, seed: int = 0, batch_size: int = 256,
                  device: str | torch.device | None = None, compare_fgsm: bool = True) -> SweepResult:
    """Accuracy of ``model`` under ``attack`` at every strength of ``eps``.

    Parameters
    ----------
    model : callable
        float NCHW [0, 1] -> logits; put in eval mode during the sweep and restored after.
    data : (x, y) tensors or an iterable of (x, y) batches
        x float (N, C, H, W) in [0, 1]; y (N,) int labels.
    eps : sequence of float
        Strictly increasing strengths in pixel units (default: the paper's 9-point grid).
    attack : "fgsm" or "pgd"
        FGSM is evaluated exactly as defined at every strength (``x + eps * sign(grad)``), even
        for samples the model already gets wrong: the paper's f(eps).
    steps, rel_step_size, random_start
        PGD settings; the step size is ``rel_step_size * eps`` (default 2.5 eps / 10).
    nested : bool
        PGD only. Start each strength from the perturbation found at the previous one (it lies
        inside the larger ball) and count a sample fooled at a smaller strength as fooled at
        every larger one (that perturbation is still allowed). A stronger attack, monotone in
        eps by construction, and much faster; False runs each strength independently.
    seed : int
        Seeds PGD's random start (a torch.Generator; global RNG untouched).
    compare_fgsm : bool
        For PGD, also run FGSM and warn where PGD is weaker (a gradient-masking sign).

    Returns
    -------
    SweepResult
        ``accuracy[e]`` is the fraction of samples classified correctly under the attack of
        strength ``eps[e]``; ``correct`` keeps per-sample outcomes (E x N).

    Notes
    -----
    FGSM's direction does not depend on eps: one backward pass per batch serves the whole grid.
    PGD skips samples that are misclassified without any perturbation (delta = 0 lies in every
    ball, so they are not robust at any eps), and eps = 0 is the clean prediction.
    """
    grid = check_eps_grid(eps)
    chosen = get_attack(attack)
    if norm not in NORMS:
        raise InputError(f"unknown norm {norm!r}: use 'linf' or 'l2'.")
    options = {"steps": steps, "rel_step_size": rel_step_size, "random_start": random_start, "nested": nested,
               "seed": seed}
    settings = {k: options[k] for k in chosen.settings if k in options}
    dev = torch.device(device) if device is not None else model_device(model)
    gen = torch.Generator().manual_seed(int(seed))
    found = _attack_batches(model, data, grid, chosen, options, norm=norm, generator=gen, batch_size=batch_size,
                            device=dev, compare=compare_fgsm and chosen.name != "fgsm")
    if found.total == 0:
        raise InputError("no samples to attack: the data is empty.")
    correct = np.concatenate(found.correct, axis=1)
    accuracy = correct.mean(axis=1)
    perturbation = np.concatenate(found.perturbation, axis=1)
    zero = np.concatenate(found.zero_gradient)
    fgsm_acc = np.concatenate(found.fgsm, axis=1).mean(axis=1) if found.fgsm else None
    sanity = _sanity(grid, accuracy, fgsm_acc, perturbation.max(axis=1), found.in_range, float(zero.mean()),
                     found.total, attack, compare_fgsm)
    for msg in sanity.warnings:
        warnings.warn(msg, GradientMaskingWarning, stacklevel=2)
    return SweepResult(chosen.name, norm, grid, accuracy, correct, np.concatenate(found.labels).astype(np.int64),
                       sanity, settings, perturbation, zero)


@dataclass
class _Outcomes:
    """What a sweep gathers batch by batch (numpy chunks, one per batch)."""

    correct: list = field(default_factory=list)        # (E, B) bool under the chosen attack
    fgsm: list = field(default_factory=list)           # (E, B) bool under FGSM, the masking check's reference
    labels: list = field(default_factory=list)         # (B,)
    perturbation: list = field(default_factory=list)   # (E, B) float32 sizes
    zero_gradient: list = field(default_factory=list)  # (B,) bool
    in_range: bool = True
    total: int = 0


def _attack_batches(model: Classifier, data, grid: np.ndarray, chosen: Attack, options: dict, *, norm: str,
                    generator: torch.Generator, batch_size: int, device: torch.device, compare: bool) -> _Outcomes:
    """Run ``chosen`` at every strength of ``grid`` on each batch of ``data`` (and FGSM too when
    ``compare``), with the model in eval mode."""
    found = _Outcomes()
    dtype = model_dtype(model)
    with eval_mode(model):
        for xb, yb in _batches(data, batch_size):
            xb = check_pixels(xb.to(device, dtype), "images")
            yb = check_labels(yb.to(device), xb.shape[0], "labels")
            found.total += xb.shape[0]
            grad, logits = input_gradient(model, xb, yb, targeted=False)
            clean_ok = logits.argmax(1) == yb
            found.zero_gradient.append((grad.flatten(1).abs().amax(1) == 0).cpu().numpy())
            common = dict(norm=norm, generator=generator, batch_size=batch_size)
            if compare:  # FGSM first, as a reference for the gradient-masking check
                found.fgsm.append(get_attack("fgsm").grid(model, xb, yb, grid, clean_ok, grad, **common)[0]
                                  .cpu().numpy())
            ok, pert, still = chosen.grid(model, xb, yb, grid, clean_ok, grad, **common,
                                          **{k: v for k, v in options.items() if k in chosen.settings and k != "seed"})
            if chosen.name == "fgsm":
                found.fgsm.append(ok.cpu().numpy())
            found.in_range &= still
            found.correct.append(ok.cpu().numpy())
            found.perturbation.append(pert.numpy())
            found.labels.append(yb.cpu().numpy())
    return found


@register_attack("fgsm", single=fgsm)
def fgsm_grid(model: Classifier, x: torch.Tensor, y: torch.Tensor, grid: np.ndarray, clean_ok: torch.Tensor,
              grad: torch.Tensor, *, norm: str, batch_size: int, **_: object) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """FGSM at every strength for one batch: ``x + eps * direction(grad)`` clipped to [0, 1], for every
    sample (the paper's f(eps)); one gradient serves the whole grid."""
    n_eps, b = len(grid), x.shape[0]
    ok = torch.zeros((n_eps, b), dtype=torch.bool, device=x.device)
    pert = torch.zeros((n_eps, b), dtype=torch.float32)
    in_range = True
    direction = steepest_direction(grad, norm)
    for e, value in enumerate(grid):
        if value == 0:
            ok[e] = clean_ok
            continue
        x_adv = (x + float(value) * direction).clamp_(0, 1)
        ok[e] = _predict(model, x_adv, batch_size) == y
        pert[e] = _norms(x_adv - x, norm).float().cpu()
        in_range &= bool((x_adv.min() >= 0) & (x_adv.max() <= 1))
    return ok, pert, in_range


@register_attack("pgd", single=pgd, settings=("steps", "rel_step_size", "random_start", "nested", "seed"))
def pgd_grid(model: Classifier, x: torch.Tensor, y: torch.Tensor, grid: np.ndarray, clean_ok: torch.Tensor,
             grad: torch.Tensor, *, norm: str, steps: int, rel_step_size: float, random_start: bool, nested: bool,
             generator: torch.Generator, batch_size: int, **_: object) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """PGD at every strength for one batch: correctness (E x B), perturbation sizes, range check;
    samples wrong without any perturbation stay wrong (delta = 0 lies in every ball)."""
    n_eps, b = len(grid), x.shape[0]
    ok = torch.zeros((n_eps, b), dtype=torch.bool, device=x.device)
    pert = torch.zeros((n_eps, b), dtype=torch.float32)
    delta = torch.zeros_like(x)
    active = clean_ok.clone()  # samples not yet shown to be non-robust
    in_range = True
    for e, value in enumerate(grid):
        if value == 0:
            ok[e] = clean_ok
            continue
        idx = active.nonzero().flatten()
        if idx.numel():
            xs, ys = x[idx], y[idx]
            init = delta[idx] if nested else None
            adv = pgd(model, xs, ys, float(value), norm=norm, steps=steps, step_size=rel_step_size * float(value),
                      random_start=random_start, generator=generator, init=init)
            ok[e, idx] = _predict(model, adv, batch_size) == ys
            in_range &= bool((adv.min() >= 0) & (adv.max() <= 1))
            delta[idx] = adv - xs
            pert[e, idx.cpu()] = _norms(adv - xs, norm).float().cpu()
        if nested:
            carried = (~active).cpu()  # fooled at a smaller eps: that perturbation still counts
            pert[e, carried] = pert[e - 1, carried]
            active = ok[e].clone()
    return ok, pert, in_range


def _sanity(grid, accuracy, fgsm_acc, max_pert, in_range, zero_frac, n, attack, compare_fgsm) -> SanityReport:
    tol = 1.0 / n + 1e-12  # one sample
    within = bool(np.all(max_pert <= grid + 1e-6))
    non_inc = bool(np.all(np.diff(accuracy) <= tol))
    weaker = [] if fgsm_acc is None or attack == "fgsm" or not compare_fgsm else \
        [float(e) for e, a, f in zip(grid, accuracy, fgsm_acc) if a > f + tol]
    msgs = []
    if zero_frac > 0:
        msgs.append(f"{zero_frac:.1%} of samples have an exactly zero input gradient: the model may mask gradients "
                    "(saturated softmax, non-differentiable preprocessing); robustness may be overestimated.")
    if weaker:
        msgs.append(f"PGD is weaker than FGSM at eps {weaker}: a sign of gradient masking or too few/too small "
                    "PGD steps; increase steps or check the model.")
    if attack == "pgd" and not non_inc:
        msgs.append("PGD accuracy rises with eps somewhere on the grid: the attack is not converging; "
                    "increase steps or use more random restarts.")
    return SanityReport(max_pert.tolist(), within, in_range, non_inc, float(zero_frac), weaker, msgs)
