"""ImageNet-P stability metrics against brute-force loops (the reference script's structure)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

from robustlab.errors import InputError
from robustlab.metrics import (
    TEST_PERTURBATIONS,
    flip_counts,
    flip_probability,
    flip_rate,
    flip_rates,
    frame_pairs,
    get_stability_baseline,
    mfr,
    mt5d,
    pair_top5_distances,
    percent,
    permutation_top5_distance,
    rankings_from_scores,
    sequence_flip_probabilities,
    sequence_top5_distances,
    top5_distance,
    top5_distance_rates,
    zipf_distance,
)

ALEXNET = get_stability_baseline("alexnet")


# ---------------------------------------------------------------- brute force (loop) versions


def brute_pairs(n, noise, stride):
    step = 1 if noise else stride
    pairs = []
    for start in range(step):
        prev = start
        for j in range(start + step, n, step):
            pairs.append((0 if noise else prev, j))
            prev = j
    return pairs


def brute_flip_probability(preds, noise, stride):
    per_seq = []
    for seq in preds:
        pairs = brute_pairs(len(seq), noise, stride)
        per_seq.append(np.mean([seq[a] != seq[b] for a, b in pairs]))
    return float(np.mean(per_seq))


def brute_sigma(scores_a, scores_b):
    """sigma(r) = rank in b of the class ranked r in a (1-based), via full rank vectors."""
    rank_a = rankdata(-scores_a, method="ordinal").astype(int)
    rank_b = rankdata(-scores_b, method="ordinal").astype(int)
    classes_by_rank_a = np.argsort(rank_a)
    return rank_b[classes_by_rank_a]


def brute_distance(scores, noise, stride, fn):
    per_seq = []
    for seq in scores:
        pairs = brute_pairs(len(seq), noise, stride)
        per_seq.append(np.mean([fn(brute_sigma(seq[a], seq[b])) for a, b in pairs]))
    return float(np.mean(per_seq))


def paper_top5(sigma):
    return permutation_top5_distance(sigma, formula="paper")


def brute_zipf(sigma):
    r = np.arange(1, sigma.size + 1)
    return float(np.sum(np.abs(1 / r - 1 / sigma) / r))


sequences = st.tuples(
    st.integers(1, 4),  # sequences
    st.integers(2, 9),  # frames
    st.integers(6, 12),  # classes
    st.booleans(),  # noise
    st.sampled_from([1, 2]),  # stride
    st.integers(0, 2**31 - 1),  # seed
)


@settings(max_examples=60, deadline=None)
@given(sequences)
def test_flip_probability_matches_brute_force(case):
    m, n, c, noise, stride, seed = case
    if not noise and stride >= n:
        return
    preds = np.random.default_rng(seed).integers(
        0, 3, size=(m, n)
    )  # few classes -> many flips and ties
    assert flip_probability(preds, noise=noise, stride=stride) == pytest.approx(
        brute_flip_probability(preds, noise, stride)
    )
    counts = flip_counts(preds, noise=noise, stride=stride)
    n_pairs = len(brute_pairs(n, noise, stride))
    assert np.allclose(
        counts / n_pairs, sequence_flip_probabilities(preds, noise=noise, stride=stride)
    )


@settings(max_examples=60, deadline=None)
@given(sequences)
def test_top5_and_zipf_distance_match_brute_force(case):
    m, n, c, noise, stride, seed = case
    if not noise and stride >= n:
        return
    rng = np.random.default_rng(seed)
    # rounded scores create ties, exercising the ordinal tie-break
    scores = np.round(rng.normal(size=(m, n, c)), 1)
    full = rankings_from_scores(scores)
    assert top5_distance(full, noise=noise, stride=stride) == pytest.approx(
        brute_distance(scores, noise, stride, paper_top5)
    )
    # only the top 5 (what a run stores) is enough
    assert top5_distance(full[..., :5], noise=noise, stride=stride) == pytest.approx(
        top5_distance(full, noise=noise, stride=stride)
    )
    assert zipf_distance(full, noise=noise, stride=stride) == pytest.approx(
        brute_distance(scores, noise, stride, brute_zipf)
    )


def test_frame_pairs():
    early, late = frame_pairs(5, noise=False, stride=2)
    assert early.tolist() == [0, 1, 2] and late.tolist() == [2, 3, 4]
    early, late = frame_pairs(4, noise=True, stride=3)  # noise ignores the stride
    assert early.tolist() == [0, 0, 0] and late.tolist() == [1, 2, 3]
    assert sorted(zip(*frame_pairs(9, noise=False, stride=2))) == sorted(brute_pairs(9, False, 2))


def test_flip_probability_by_hand():
    preds = np.array([[1, 1, 2, 2, 1], [3, 3, 3, 3, 3]])
    assert flip_probability(preds, noise=False) == pytest.approx((2 / 4 + 0) / 2)
    assert flip_counts(preds, noise=False).tolist() == [2, 0]
    assert flip_probability(preds, noise=True) == pytest.approx(
        (2 / 4 + 0) / 2
    )  # vs frame 0: 2,2 differ
    # (0,2): 1 vs 2 flip; (1,3): 1 vs 2 flip; (2,4): 2 vs 1 flip
    assert flip_counts(np.array([[1, 1, 2, 2, 1]]), noise=False, stride=2).tolist() == [3]


# ---------------------------------------------------------------- Appendix C worked examples


def perm(*head, c=10):
    """A permutation of 1..c starting with ``head``, the rest in increasing order."""
    rest = [r for r in range(1, c + 1) if r not in head]
    return np.array(list(head) + rest)


@pytest.mark.parametrize(
    "sigma, expected",
    [
        (perm(), 0),  # identity
        (perm(1, 2, 3, 4, 6, 5), 1),  # swap ranks 5 and 6
        (perm(2, 1), 2),  # swap the top two
        (perm(5, 2, 3, 4, 1), 8),  # swap ranks 1 and 5
        (perm(6, 2, 3, 4, 5, 1), 5),  # top-1 falls out of the top 5
        (perm(10, 2, 3, 4, 5, 6, 7, 8, 9, 1), 5),  # ... far out: capped at rank 6
        (
            np.array([2, 3, 4, 5, 6, 7, 8, 9, 10, 1]),
            5,
        ),  # cyclic shift down: every class one rank lower
        (np.array([10, 1, 2, 3, 4, 5, 6, 7, 8, 9]), 9),  # cyclic shift up (the inverse): asymmetric
        (perm(6, 7, 8, 9, 10), 15),  # the whole top 5 replaced
        (perm(5, 4, 3, 2, 1), 12),  # top 5 reversed
    ],
)
def test_appendix_c_examples_both_formulas(sigma, expected):
    assert permutation_top5_distance(sigma, formula="reference") == expected
    assert permutation_top5_distance(sigma, formula="paper") == expected


def test_paper_and_reference_formulas_agree_on_every_permutation_of_7():
    for p in itertools.permutations(range(1, 8)):
        s = np.array(p)
        assert permutation_top5_distance(s, formula="paper") == permutation_top5_distance(s), p


def test_pair_distances_use_sigma_old_to_new():
    # earlier ranking classes [0..9]; later: class 0 moved to rank 6 -> sigma = (6,1,2,3,4,5,...)
    earlier = np.arange(10)
    later = np.array([1, 2, 3, 4, 5, 0, 6, 7, 8, 9])
    r = np.stack([earlier, later])[None]
    assert pair_top5_distances(r, noise=False).tolist() == [
        [permutation_top5_distance(perm(6, 1, 2, 3, 4, 5))]
    ]
    assert pair_top5_distances(r, noise=False).tolist() == [[9]]  # |0-5| + 4 * 1 (others move up)
    assert sequence_top5_distances(r, noise=False).tolist() == [9.0]


# ---------------------------------------------------------------- normalisation


def test_alexnet_mfr_and_mt5d_are_100():
    assert mfr(dict(ALEXNET.flip_probability)) == 1.0
    assert percent(mt5d(dict(ALEXNET.top5_distance))) == 100.0
    assert mfr(dict(ALEXNET.flip_probability), subset="all") == 1.0
    assert set(ALEXNET.flip_probability) >= set(TEST_PERTURBATIONS)


def test_rates_by_hand():
    assert flip_rate(0.2365 / 2, "gaussian_noise") == pytest.approx(0.5)
    fps = {p: ALEXNET.flip_probability[p] * 0.58 for p in TEST_PERTURBATIONS}
    assert mfr(fps) == pytest.approx(0.58)
    assert all(v == pytest.approx(0.58) for v in flip_rates(fps).values())
    t = {p: 1.0 for p in TEST_PERTURBATIONS}
    assert mt5d(t, baseline=t) == 1.0
    assert top5_distance_rates({"rotate": 2.95}) == {"rotate": pytest.approx(1.0)}


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: flip_probability(np.array([[0.0, np.nan]]), noise=False), "NaN"),
        (lambda: flip_probability(np.array([1, 2, 3]), noise=False), "2-dimensional"),
        (lambda: flip_probability(np.zeros((3, 1), int), noise=False), "at least 2 frames"),
        (lambda: flip_probability(np.zeros((0, 4), int), noise=False), "empty"),
        (lambda: flip_probability(np.zeros((2, 3), int), noise=False, stride=3), "no frame pairs"),
        (lambda: flip_probability(np.zeros((2, 3), int), noise=False, stride=0), "stride"),
        (lambda: flip_probability(np.full((2, 3), 0.5), noise=False), "integers"),
        (lambda: flip_probability(np.zeros((2, 3), int), noise="yes"), "noise must be"),
        (lambda: top5_distance(np.zeros((2, 3, 4), int), noise=False), "top 5"),
        (lambda: top5_distance(np.zeros((2, 3, 5), int), noise=False), "repeat a class"),
        (lambda: zipf_distance(np.tile(np.arange(3, 9), (1, 2, 1)), noise=False), "full rankings"),
        (lambda: permutation_top5_distance([1, 2, 3, 4, 4]), "permutation"),
        (lambda: permutation_top5_distance(np.arange(1, 7), formula="x"), "formula"),
        (lambda: mfr({"rotate": 0.1}), "no entry for 9 perturbation"),
        (lambda: mfr({p: float("nan") for p in TEST_PERTURBATIONS}), "NaN"),
        (lambda: mfr({}), "empty"),
        (lambda: flip_rate(0.1, "nosuch"), "baseline 'alexnet' has no entry"),
        (lambda: flip_rate(-0.1, "rotate"), r"fractions in \[0, 1\]"),
        (
            lambda: mfr({p: 0.1 for p in TEST_PERTURBATIONS}, baseline="resnet"),
            "unknown stability baseline",
        ),
    ],
)
def test_malformed_input_is_rejected(call, message):
    with pytest.raises(InputError, match=message):
        call()
