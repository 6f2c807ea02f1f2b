"""Cohen's and Fleiss' kappa: published worked examples, scikit-learn, and their properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from sklearn.metrics import cohen_kappa_score

from robustlab.errors import InputError
from robustlab.metrics import cohen_kappa, cohen_kappa_from_table, fleiss_kappa, rating_counts

#: Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories.
FLEISS_WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_cohen_kappa_wikipedia_worked_example():
    # 50 grant proposals, two readers: yes/yes 20, A yes B no 5, A no B yes 10, no/no 15.
    assert cohen_kappa_from_table([[20, 5], [10, 15]]) == pytest.approx(0.4)
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    # the article's second example: same P_o = 0.6, different marginals
    assert cohen_kappa_from_table([[45, 15], [25, 15]]) == pytest.approx(0.1304, abs=1e-4)
    assert cohen_kappa_from_table([[25, 35], [5, 35]]) == pytest.approx(0.2593, abs=1e-4)


def test_fleiss_kappa_wikipedia_worked_example():
    counts = np.array(FLEISS_WIKIPEDIA)
    assert counts.sum(axis=1).tolist() == [14] * 10
    assert fleiss_kappa(counts) == pytest.approx(0.210, abs=5e-4)
    # the intermediate numbers the article prints
    p_cat = counts.sum(axis=0) / counts.sum()
    assert p_cat == pytest.approx([0.143, 0.200, 0.279, 0.150, 0.229], abs=5e-4)


def test_rating_counts_then_fleiss():
    ratings = [["s", "s", "d"], ["d", "d", "d"], ["s", "u", "d"], ["s", "s", "s"]]
    counts, cats = rating_counts(ratings)
    assert cats == ["d", "s", "u"]
    assert counts.tolist() == [[1, 2, 0], [3, 0, 0], [1, 1, 1], [0, 3, 0]]
    # by hand: P_i = [1/3, 1, 0, 1], P_bar = 7/12; p = [5/12, 6/12, 1/12], P_e = 62/144
    expected = (7 / 12 - 62 / 144) / (1 - 62 / 144)
    assert fleiss_kappa(counts) == pytest.approx(expected)


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.sampled_from("abc"), hs.sampled_from("abc")), min_size=2, max_size=40))
def test_cohen_kappa_matches_scikit_learn(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    ours = cohen_kappa(a, b)
    if len(set(a) | set(b)) == 1:
        assert math.isnan(ours)
        return
    assert ours == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.sampled_from("xyz"), hs.sampled_from("xyz")), min_size=2, max_size=40))
def test_fleiss_with_two_raters_is_scotts_pi(pairs):
    counts, cats = rating_counts([list(p) for p in pairs])
    kappa = fleiss_kappa(counts)
    n = len(pairs)
    p_o = sum(x == y for x, y in pairs) / n
    pooled = np.array([sum((x == c) + (y == c) for x, y in pairs) for c in cats]) / (2 * n)
    p_e = float(np.sum(pooled**2))
    if np.isclose(p_e, 1.0):
        assert math.isnan(kappa)
    else:
        assert kappa == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(hs.integers(2, 6), hs.integers(2, 30), hs.integers(0, 2**31))
def test_fleiss_invariant_to_item_and_category_order_and_bounded(n_raters, n_items, seed):
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n_raters, [0.5, 0.3, 0.2], size=n_items)
    kappa = fleiss_kappa(counts)
    if math.isnan(kappa):
        return
    assert fleiss_kappa(counts[rng.permutation(n_items)]) == pytest.approx(kappa)
    assert fleiss_kappa(counts[:, ::-1]) == pytest.approx(kappa)
    assert -1.0 <= kappa <= 1.0


def test_perfect_agreement_and_undefined_cases():
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == 1.0
    assert math.isnan(cohen_kappa(["a", "a"], ["a", "a"]))
    assert math.isnan(fleiss_kappa([[4, 0], [4, 0]]))


def test_bad_input_is_explained():
    with pytest.raises(InputError, match="different numbers of items"):
        cohen_kappa(["a"], ["a", "b"])
    with pytest.raises(InputError, match="same number of ratings"):
        fleiss_kappa([[2, 1], [1, 1]])
    with pytest.raises(InputError, match="at least 2 ratings"):
        fleiss_kappa([[1, 0], [0, 1]])
    with pytest.raises(InputError, match="not in categories"):
        cohen_kappa(["a"], ["z"], categories=["a", "b"])
    with pytest.raises(InputError, match="square"):
        cohen_kappa_from_table([[1, 2, 3]])
