"""Gradient attacks in pixel space and epsilon sweeps.

Models map float NCHW [0, 1] to logits with normalisation inside (robustlab's adapters do
that), so every strength is in pixel units. Attacks are registered by name in
:data:`ATTACK_REGISTRY` (``fgsm``, ``pgd``; :func:`register_attack` adds one) and
:func:`epsilon_sweep` looks them up there::

    x_adv = fgsm(model, x, y, eps=8 / 255)          # x float NCHW in [0, 1]
    result = epsilon_sweep(model, (x, y), PAPER_EPS_GRID, attack="pgd")
"""

from ._model import eval_mode
from .gradient import NORMS, fgsm, pgd, project, steepest_direction
from .sweep import (ATTACK_REGISTRY, PAPER_EPS_GRID, Attack, GradientMaskingWarning, SanityReport, SweepResult,
                    check_eps_grid, epsilon_sweep, get_attack, register_attack)


def list_attacks() -> list[str]:
    """Names of the registered attacks (``fgsm``, ``pgd``, and any a plugin registers)."""
    return ATTACK_REGISTRY.names()


__all__ = ["ATTACK_REGISTRY", "NORMS", "PAPER_EPS_GRID", "Attack", "GradientMaskingWarning", "SanityReport",
           "SweepResult", "check_eps_grid", "epsilon_sweep", "eval_mode", "fgsm", "get_attack", "list_attacks", "pgd",
           "project", "register_attack", "steepest_direction"]
