"""Agreement between raters beyond chance: Cohen's kappa (two raters) and Fleiss' kappa (any number).

Both compare the observed agreement ``P_o`` with the agreement expected by chance ``P_e``:
``kappa = (P_o - P_e) / (1 - P_e)``; 1 is perfect agreement, 0 what chance gives, negative
less than chance. When ``P_e == 1`` (every rating falls in one category) kappa is undefined
and these functions return NaN.

The review app (:mod:`robustlab.review`) reports them per review round: Cohen's kappa for two
annotators, Fleiss' kappa for more.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ._checks import as_float_array, numbers_only

__all__ = ["cohen_kappa", "cohen_kappa_from_table", "fleiss_kappa", "rating_counts"]


def _labels(values: Any, name: str) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise InputError(f"{name} must be a sequence of category labels, got {type(values).__name__}.")
    out = list(values.tolist() if isinstance(values, np.ndarray) else values)
    for v in out:
        if not isinstance(v, Hashable) or v is None:
            raise InputError(f"{name} holds {v!r}, which is not a category label (a string or a number).")
    return out


def _categories(seen: Sequence, categories: Sequence | None, name: str) -> list:
    if categories is None:
        return sorted(set(seen), key=lambda c: (str(type(c)), c))
    cats = list(categories)
    if len(set(cats)) != len(cats):
        raise InputError(f"categories {cats!r} list a category twice.")
    unknown = sorted({str(v) for v in seen} - {str(c) for c in cats})
    if unknown:
        raise InputError(f"{name} use categories {unknown} that are not in categories={cats!r}.")
    return cats


def cohen_kappa_from_table(table: Any) -> float:
    """Cohen's kappa from a square contingency table of two raters.

    Parameters
    ----------
    table : array-like, (k, k), non-negative counts
        ``table[i, j]`` = items rater A put in category ``i`` and rater B in category ``j``.

    Returns
    -------
    float
        ``(P_o - P_e) / (1 - P_e)`` with ``P_o = trace / n`` and ``P_e = sum_i rowsum_i * colsum_i / n**2``;
        NaN when ``P_e == 1``.

    Notes
    -----
    Checked against the worked example of the Wikipedia article "Cohen's kappa" (50 proposals
    read by two readers: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: ``P_o = 0.7``,
    ``P_e = 0.5``, kappa = 0.4); Cohen, J. (1960), *A coefficient of agreement for nominal
    scales*, Educational and Psychological Measurement 20(1), 37-46, defines it.
    """
    t = as_float_array(table, "table", allow_empty=True, finite=False)
    if t.ndim != 2 or t.shape[0] != t.shape[1] or t.shape[0] < 1:
        raise InputError(f"a contingency table must be square (k, k); got shape {t.shape}.")
    if not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t != np.round(t)):
        raise InputError("a contingency table holds counts: finite, non-negative whole numbers.")
    n = t.sum()
    if n <= 0:
        raise InputError("the contingency table is empty (no item rated by both raters).")
    p_o = np.trace(t) / n
    p_e = float(np.dot(t.sum(axis=1), t.sum(axis=0)) / n**2)
    if np.isclose(p_e, 1.0):
        return float("nan")
    return float((p_o - p_e) / (1.0 - p_e))


def cohen_kappa(rater_a: Sequence[Hashable], rater_b: Sequence[Hashable], *,
                categories: Sequence[Hashable] | None = None) -> float:
    """Cohen's kappa of two raters who labelled the same items.

    Parameters
    ----------
    rater_a, rater_b : sequence of labels, length n >= 1
        Category of item ``i`` by each rater (strings or numbers; the same item at the same
        position).
    categories : sequence, optional
        All categories (default: those that occur). Categories nobody used change nothing.

    Returns
    -------
    float
        Kappa; NaN when both raters put every item in one and the same category.

    Raises
    ------
    InputError
        Different lengths, no items, or labels outside ``categories``.

    Examples
    --------
    The worked example of the Wikipedia article "Cohen's kappa" (see
    :func:`cohen_kappa_from_table`) gives 0.4.
    """
    a, b = _labels(rater_a, "rater_a"), _labels(rater_b, "rater_b")
    if len(a) != len(b):
        raise InputError(f"the two raters labelled different numbers of items ({len(a)} and {len(b)}): "
                         "give one label per item from each, in the same order.")
    if not a:
        raise InputError("no items: give at least one item labelled by both raters.")
    cats = _categories(a + b, categories, "the labels")
    index = {c: i for i, c in enumerate(cats)}
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, ([index[v] for v in a], [index[v] for v in b]), 1)
    return cohen_kappa_from_table(table)


def rating_counts(ratings: Sequence[Sequence[Hashable]], *, categories: Sequence[Hashable] | None = None
                  ) -> tuple[np.ndarray, list]:
    """Count, per item, how many raters chose each category (the input of :func:`fleiss_kappa`).

    Parameters
    ----------
    ratings : sequence of sequences, (N items, n ratings each)
        The labels given to each item (raters need not be the same people across items).
    categories : sequence, optional
        Column order of the result (default: the sorted categories that occur).

    Returns
    -------
    counts : ndarray, int64 (N, k)
        ``counts[i, j]`` = ratings of item ``i`` in category ``j``.
    categories : list
        The category of each column.
    """
    rows = [_labels(r, f"ratings[{i}]") for i, r in enumerate(ratings)]
    if not rows:
        raise InputError("ratings is empty: give the labels of at least one item.")
    cats = _categories([v for r in rows for v in r], categories, "the ratings")
    index = {c: j for j, c in enumerate(cats)}
    counts = np.zeros((len(rows), len(cats)), dtype=np.int64)
    for i, row in enumerate(rows):
        for v in row:
            counts[i, index[v]] += 1
    return counts, cats


def fleiss_kappa(counts: Any) -> float:
    """Fleiss' kappa of N items, each rated by the same number n >= 2 of raters into k categories.

    Parameters
    ----------
    counts : array-like, (N, k), non-negative integers
        ``counts[i, j]`` = raters who put item ``i`` in category ``j``; every row sums to n
        (see :func:`rating_counts` to build it from labels).

    Returns
    -------
    float
        ``(P_bar - P_e) / (1 - P_e)`` with ``P_i = (sum_j n_ij**2 - n) / (n (n - 1))``,
        ``P_bar`` their mean, ``p_j = sum_i n_ij / (N n)`` and ``P_e = sum_j p_j**2``;
        NaN when ``P_e == 1`` (every rating in one category).

    Raises
    ------
    InputError
        Not a 2-D table of non-negative integers, no items, fewer than 2 ratings per item, or
        rows with different numbers of ratings.

    Notes
    -----
    Fleiss, J. L. (1971), *Measuring nominal scale agreement among many raters*, Psychological
    Bulletin 76(5), 378-382. Checked against the worked example of the Wikipedia article
    "Fleiss' kappa" (10 items, 14 raters, 5 categories: ``P_bar = 0.378``, ``P_e = 0.213``,
    kappa = 0.210). With two raters it equals Scott's pi.
    """
    c = numbers_only(counts, "counts")
    if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1:
        raise InputError(f"counts must be a non-empty 2-D table (items, categories); got shape {c.shape}.")
    if not np.issubdtype(c.dtype, np.number) or np.any(c < 0) or np.any(c != np.round(c)):
        raise InputError("counts must be non-negative integers (raters per item and category).")
    c = c.astype(np.float64)
    per_item = c.sum(axis=1)
    n = per_item[0]
    if np.any(per_item != n):
        bad = int(np.flatnonzero(per_item != n)[0])
        raise InputError(f"Fleiss' kappa needs the same number of ratings for every item: item 0 has "
                         f"{n:g}, item {bad} has {per_item[bad]:g}. Keep only items rated by every rater.")
    if n < 2:
        raise InputError(f"each item needs at least 2 ratings for agreement; got {n:g}.")
    n_items = c.shape[0]
    p_item = (np.sum(c * c, axis=1) - n) / (n * (n - 1))
    p_bar = float(p_item.mean())
    p_cat = c.sum(axis=0) / (n_items * n)
    p_e = float(np.sum(p_cat**2))
    if np.isclose(p_e, 1.0):
        return float("nan")
    return float((p_bar - p_e) / (1.0 - p_e))
