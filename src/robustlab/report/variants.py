"""Variants of one model side by side: on which corruptions did a change (an augmentation, a
wrapper, fine-tuning) lower or raise the error?

A run's model is a *variant* of another run's model when its name is the other name followed by
a separator and more (``demo:cnn-noise`` of ``demo:cnn``, ``torchvision:resnet50+clahe`` of
``torchvision:resnet50``) and both ran the same benchmark on the same data. For each such pair
:func:`paired_corruption_differences` compares, per corruption, the top-1 error averaged over
the severities both runs evaluated:

- from the stored per-sample predictions when a store is at hand (the two runs saw the same
  images with the same corruption seeds, so the comparison is paired): per image ``i`` the
  difference ``d_i = mean_s err_variant(i, s) - mean_s err_reference(i, s)``, its mean and a
  95% Student-t interval over the images;
- else from the runs' summaries: the difference of the mean errors, without an interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import RobustlabError

#: Characters that may follow the reference model's name in a variant's name.
VARIANT_SEPARATORS = ("-", "+", ":", "@", " ", "(", "[", "_", ".")
CLEAN = "clean"


@dataclass(frozen=True)
class PairedDifference:
    """One corruption of a variant comparison (fractions; ``difference`` = variant - reference).

    ``low``/``high`` bound the 95% interval of the mean per-image difference (None without
    per-sample predictions, or with fewer than two images); ``n`` is the number of images.
    """

    corruption: str
    reference_error: float
    variant_error: float
    difference: float
    low: float | None = None
    high: float | None = None
    n: int | None = None

    @property
    def verdict(self) -> str:
        """``lower`` (interval below 0), ``higher`` (above 0) or ``unclear`` (contains 0 or unknown)."""
        if self.low is None or self.high is None:
            return "unclear"
        if self.high < 0:
            return "lower"
        if self.low > 0:
            return "higher"
        return "unclear"


def is_variant(model: str, reference: str) -> bool:
    """True when ``model`` is ``reference`` followed by a separator and more (see module docstring)."""
    return (len(model) > len(reference) + 1 and model.startswith(reference)
            and model[len(reference)] in VARIANT_SEPARATORS)


def variant_pairs(results: Sequence) -> list[tuple]:
    """``[(reference result, variant result), ...]`` among ``results``: same benchmark and data,
    the variant's model named after the reference's (the longest matching reference wins)."""
    pairs = []
    for variant in results:
        refs = [r for r in results if r.benchmark == variant.benchmark and r.dataset == variant.dataset
                and is_variant(variant.model, r.model)]
        if refs:
            pairs.append((max(refs, key=lambda r: len(r.model)), variant))
    return pairs


def per_image_errors(predictions: dict) -> dict[str, dict[int, dict[str, bool]]]:
    """``{corruption: {severity: {sample id: wrong}}}`` from a corruption run's stored predictions
    (units ``<corruption>/<severity>/<shard>``; the clean units are skipped)."""
    from ..engine import top1_errors
    from ..engine.setting import parse_unit_key

    out: dict[str, dict[int, dict[str, bool]]] = {}
    for unit, columns in predictions.items():
        setting, shard = parse_unit_key(unit)
        if shard is None or setting.shift == CLEAN or setting.level is None:
            continue
        wrong = top1_errors(columns)
        cells = out.setdefault(setting.shift, {}).setdefault(setting.level, {})
        cells.update(zip((str(s) for s in columns["sample_id"]), (bool(w) for w in wrong)))
    return out


def mean_difference_interval(differences: np.ndarray, alpha: float = 0.05) -> tuple[float, float | None, float | None]:
    """Mean of per-image differences and its ``1 - alpha`` Student-t interval (None bounds for n < 2).

    Parameters
    ----------
    differences : ndarray, float (n,)
        One value per image (fractions).
    """
    from scipy.stats import t as student_t

    d = np.asarray(differences, dtype=float)
    mean = float(d.mean())
    if d.size < 2:
        return mean, None, None
    half = float(student_t.ppf(1 - alpha / 2, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    return mean, mean - half, mean + half


def _summary_errors(result) -> dict[str, dict[int, float]]:
    corr = (result.summary or {}).get("corruptions") or {}
    return {c: {int(s): e for s, e in (v.get("errors") or {}).items() if e is not None} for c, v in corr.items()}


def paired_corruption_differences(reference, variant, store=None, alpha: float = 0.05) -> list[PairedDifference]:
    """Per corruption both runs evaluated: mean error of each and the variant's difference.

    Parameters
    ----------
    reference, variant : EvaluationResult
        Corruption runs (``corrupted`` or ``imagenet-c``) on the same data.
    store : Store, optional
        Where their per-sample predictions are; without it (or when they cannot be read) the
        differences come from the summaries and carry no interval.
    alpha : float
        1 - confidence level of the intervals.

    Returns
    -------
    list of PairedDifference
        In the reference run's corruption order.
    """
    ref_sum, var_sum = _summary_errors(reference), _summary_errors(variant)
    per_image = None
    if store is not None:
        try:
            per_image = (per_image_errors(store.read_predictions(reference.run_id)),
                         per_image_errors(store.read_predictions(variant.run_id)))
        except (RobustlabError, KeyError, ValueError, OSError):  # a report falls back to the summaries
            per_image = None
    out = []
    for corruption, ref_errors in ref_sum.items():
        severities = sorted(set(ref_errors) & set(var_sum.get(corruption, {})))
        if not severities:
            continue
        ref_mean = float(np.mean([ref_errors[s] for s in severities]))
        var_mean = float(np.mean([var_sum[corruption][s] for s in severities]))
        if per_image is not None and corruption in per_image[0] and corruption in per_image[1]:
            cells_ref, cells_var = per_image[0][corruption], per_image[1][corruption]
            ids = sorted(set.intersection(*(set(cells_ref.get(s, {})) & set(cells_var.get(s, {})) for s in severities)))
            if ids:
                d = np.array([np.mean([cells_var[s][i] for s in severities]) - np.mean([cells_ref[s][i] for s in severities])
                              for i in ids])
                mean, low, high = mean_difference_interval(d, alpha)
                out.append(PairedDifference(corruption, ref_mean, var_mean, mean, low, high, len(ids)))
                continue
        out.append(PairedDifference(corruption, ref_mean, var_mean, var_mean - ref_mean))
    return out


def verdict_note(reference: str, variant: str, diffs: Sequence[PairedDifference]) -> str:
    """One line: on how many corruptions the variant's error was lower / higher / not clearly different."""
    groups = {v: [d.corruption for d in diffs if d.verdict == v] for v in ("lower", "higher", "unclear")}
    if all(d.low is None for d in diffs):
        return (f"{variant} vs {reference}: no per-sample predictions to compare, differences of mean errors only "
                f"(lower on {sum(d.difference < 0 for d in diffs)} of {len(diffs)} corruptions).")
    parts = [f"lower error on {len(groups['lower'])} of {len(diffs)} corruptions"
             + (f" ({', '.join(groups['lower'])})" if groups["lower"] else ""),
             f"higher on {len(groups['higher'])}" + (f" ({', '.join(groups['higher'])})" if groups["higher"] else ""),
             f"no clear difference on {len(groups['unclear'])}"]
    return f"{variant} vs {reference} (paired, 95% intervals over the images): " + "; ".join(parts) + "."
