"""The metric tester's cases for the classification metrics: corruption errors (ImageNet-C and the
C-bar sets), perturbation stability (ImageNet-P), ratios to a baseline, adversarial robustness over
an interval, statistics, effective robustness and rater agreement. Each pairs a hypothesis strategy
of calls with a reference from :mod:`.references` (see :mod:`.metric_tester`).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from scipy import stats

import robustlab.metrics as M
from robustlab.metrics.ratios import NormalisedTerm

from . import references as R
from .metric_tester import Call, MetricCase

frac = st.floats(0.0, 1.0)
ALL_C, ALL_P = list(R.ALEXNET_C), list(R.ALEXNET_FP)


def kw(**kwargs):
    """Keyword arguments without the ones left at their default (None)."""
    return {k: v for k, v in kwargs.items() if v is not None}


def names_of(subset, given, table=R.C_SUBSETS):
    """The names of a subset: a name of ``table``, a list, or (None) every name ``given``."""
    if subset is None:
        return list(given)
    return list(table[subset]) if isinstance(subset, str) else list(subset)


def terms_view(terms):
    return {k: t.value for k, t in terms.items()}


def detail_view(d):
    return d.value, list(d.used), list(d.undefined)


# ---------------------------------------------------------------------------------------------
# corruption errors

error_value = st.one_of(frac, st.lists(frac, min_size=5, max_size=5))
dict_baseline = st.fixed_dictionaries({c: st.one_of(st.floats(0.05, 1.0), st.lists(st.floats(0.05, 1.0), min_size=5,
                                                                                    max_size=5)) for c in ALL_C})
SUBSET_CHOICES = [None, "benchmark", "common", "holdout", "validation", "all", ["fog", "snow", "saturate"]]


@st.composite
def ce_calls(draw, *, subset_needed=False):
    errors = draw(st.fixed_dictionaries({c: error_value for c in ALL_C}))
    baseline = draw(st.one_of(st.just(None), st.just("alexnet"), dict_baseline))
    subset = draw(st.sampled_from(SUBSET_CHOICES[1:] if subset_needed else SUBSET_CHOICES))
    return Call((errors,), kw(baseline=baseline, subset=subset))


def flat(values, clean):
    """The model's error does not move: its five errors and its clean error are equal (to 1e-12)."""
    return isinstance(values, list) and max([*values, clean]) - min([*values, clean]) <= 1e-12


@st.composite
def rce_calls(draw, *, with_clean=True):
    clean = draw(frac)
    errors = draw(st.fixed_dictionaries({c: error_value for c in ALL_C}))
    for c in draw(st.sets(st.sampled_from(ALL_C), max_size=3)):
        errors[c] = [clean] * 5  # a model whose error does not move under c
    base = draw(st.one_of(st.just(None), st.just("alexnet"), dict_baseline))
    kwargs = kw(baseline=base, subset=draw(st.sampled_from(SUBSET_CHOICES)))
    if isinstance(base, dict):
        kwargs["baseline_clean_error"] = draw(frac)
    return Call((errors, clean) if with_clean else (errors,), kwargs)


def _base(baseline):
    return R.ALEXNET_C if baseline in (None, "alexnet") else baseline


def ref_ce(errors, baseline=None, subset=None):
    return {c: R.corruption_error(errors, _base(baseline), c) for c in names_of(subset, errors)}


def ref_mce(errors, baseline=None, subset="benchmark"):
    values = ref_ce(errors, baseline, subset)
    return sum(values.values()) / len(values)


def ref_rce_terms(errors, clean, baseline=None, baseline_clean_error=None, subset=None):
    base_clean = R.ALEXNET_CLEAN if baseline_clean_error is None else baseline_clean_error
    out = {}
    for c in names_of(subset, errors):
        out[c] = None if flat(errors[c], clean) else R.relative_corruption_error(errors, clean, _base(baseline),
                                                                                 base_clean, c)
    return out


def ref_rce(errors, clean, **kwargs):
    terms = ref_rce_terms(errors, clean, **kwargs)
    if any(v is None for v in terms.values()):
        raise R.Undefined
    return terms


def ref_rmce_detail(errors, clean, subset=None, **kwargs):
    return R.defined_mean(ref_rce_terms(errors, clean, subset=subset or "benchmark", **kwargs))


def ref_rmce(errors, clean, **kwargs):
    value = ref_rmce_detail(errors, clean, **kwargs)[0]
    if value is None:
        raise R.Undefined
    return value


def ref_mean_accuracy(accuracies, subset="benchmark"):
    means = [np.mean(accuracies[c]) for c in names_of(subset, accuracies)]
    return sum(means) / len(means)


@st.composite
def summary_calls(draw):
    call = draw(rce_calls())
    errors, clean = call.args
    kwargs = {**call.kwargs, "subset": call.kwargs.get("subset") or "benchmark"}
    return Call((errors, draw(st.one_of(st.none(), st.just(clean)))), kwargs)


def ref_summary(errors, clean=None, baseline=None, baseline_clean_error=None, subset="benchmark"):
    names = names_of(subset, errors)
    ce = ref_ce(errors, baseline, names)
    mean_error = sum(np.mean(errors[c]) for c in names) / len(names)
    if clean is None:
        return names, ce, sum(ce.values()) / len(ce), None, None, mean_error, None, None
    terms = ref_rce_terms(errors, clean, baseline, baseline_clean_error, names)
    value, used, undefined = R.defined_mean(terms)
    return (names, ce, sum(ce.values()) / len(ce), {c: terms[c] for c in used}, value, mean_error, undefined,
            len(used))


def summary_view(s):
    return (list(s.subset), dict(s.corruption_errors), s.mce,
            None if s.relative_corruption_errors is None else dict(s.relative_corruption_errors), s.relative_mce,
            s.mean_error, None if s.relative_ce_undefined is None else list(s.relative_ce_undefined),
            s.relative_mce_terms)


@st.composite
def cbar_calls(draw):
    set_name = draw(st.sampled_from(list(R.CBAR_BASELINE)))
    names = list(R.CBAR_BASELINE[set_name])
    errors = draw(st.fixed_dictionaries({c: error_value for c in names}))
    baseline = draw(st.one_of(st.none(), st.just("paper-baseline"),
                              st.fixed_dictionaries({c: st.floats(0.05, 1.0) for c in names})))
    return Call((errors, set_name), kw(baseline=baseline))


def ref_mce_bar(errors, set_name, baseline=None):
    base = R.cbar_baseline(set_name) if baseline in (None, "paper-baseline") else baseline
    values = [R.corruption_error(errors, base, c) for c in R.CBAR_BASELINE[set_name]]
    return sum(values) / len(values)


def ref_cbar_summary(errors, set_name, baseline=None):
    base = R.cbar_baseline(set_name) if baseline in (None, "paper-baseline") else baseline
    names = list(R.CBAR_BASELINE[set_name])
    means = {c: float(np.mean(errors[c])) for c in names}
    ce = {c: R.corruption_error(errors, base, c) for c in names}
    return sum(means.values()) / len(means), means, ce, sum(ce.values()) / len(ce)


# ---------------------------------------------------------------------------------------------
# perturbation stability


@st.composite
def rate_calls(draw, which, *, subset_needed=False):
    top = 1.0 if which == "fp" else 18.0
    values = draw(st.fixed_dictionaries({p: st.floats(0.0, top) for p in ALL_P}))
    baseline = draw(st.one_of(st.none(), st.just("alexnet"), st.fixed_dictionaries({p: st.floats(0.0, top)
                                                                                     for p in ALL_P})))
    choices = [None, "test", "benchmark", "validation", "holdout", "all", ["rotate", "shear"]]
    return Call((values,), kw(baseline=baseline, subset=draw(st.sampled_from(choices[1:] if subset_needed
                                                                                else choices))))


def ref_rate_terms(values, which, baseline=None, subset=None):
    base = (R.ALEXNET_FP if which == "fp" else R.ALEXNET_T5D) if baseline in (None, "alexnet") else baseline
    return {p: R.ratio(values[p], base[p]) for p in names_of(subset, values, R.P_SUBSETS)}


def ref_rates(values, which, **kwargs):
    terms = ref_rate_terms(values, which, **kwargs)
    if any(v is None for v in terms.values()):
        raise R.Undefined
    return terms


def ref_mean_rate(values, which, subset=None, **kwargs):
    value = R.defined_mean(ref_rate_terms(values, which, subset=subset or "test", **kwargs))[0]
    if value is None:
        raise R.Undefined
    return value


@st.composite
def prediction_calls(draw):
    m, n = draw(st.integers(1, 4)), draw(st.integers(2, 8))
    predictions = np.array(draw(st.lists(st.lists(st.integers(0, 3), min_size=n, max_size=n), min_size=m,
                                         max_size=m)))
    return Call((predictions,), {"noise": draw(st.booleans()), "stride": draw(st.integers(1, 4))})


def _pairs_or_undefined(n, noise, stride):
    if not noise and stride >= n:
        raise R.Undefined
    return R.compared_pairs(n, noise, stride)


def ref_flip_counts(predictions, noise, stride):
    _pairs_or_undefined(predictions.shape[1], noise, stride)
    return R.sequence_flips(predictions.tolist(), noise, stride)


def ref_sequence_fp(predictions, noise, stride):
    n_pairs = len(_pairs_or_undefined(predictions.shape[1], noise, stride))
    return [f / n_pairs for f in R.sequence_flips(predictions.tolist(), noise, stride)]


@st.composite
def ranking_calls(draw, *, full=False):
    m, n, classes = draw(st.integers(1, 3)), draw(st.integers(2, 6)), draw(st.integers(5, 8))
    keep = classes if full else draw(st.integers(5, classes))
    rankings = np.array([[draw(st.permutations(range(classes)))[:keep] for _ in range(n)] for _ in range(m)])
    return Call((rankings,), {"noise": draw(st.booleans()), "stride": draw(st.integers(1, 3))})


def ref_pair_t5d(rankings, noise, stride):
    pairs = _pairs_or_undefined(rankings.shape[1], noise, stride)
    return [[R.pair_top5_distance(list(seq[a]), list(seq[b])) for a, b in pairs] for seq in rankings.tolist()]


def ref_zipf(rankings, noise, stride):
    pairs = _pairs_or_undefined(rankings.shape[1], noise, stride)
    per_sequence = [np.mean([R.zipf_pair(seq[a], seq[b]) for a, b in pairs]) for seq in rankings.tolist()]
    return float(np.mean(per_sequence))


@st.composite
def score_calls(draw):
    m, c = draw(st.integers(1, 3)), draw(st.integers(1, 7))
    scores = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.7, 2.0, -1.0]), min_size=c,
                                             max_size=c), min_size=m, max_size=m)))
    return Call((scores,), kw(k=draw(st.one_of(st.none(), st.integers(1, 8)))))


def ref_rankings(scores, k=None):
    return [sorted(range(len(row)), key=lambda c: (-row[c], c))[:k] for row in scores.tolist()]


# ---------------------------------------------------------------------------------------------
# adversarial, ratios, statistics


@st.composite
def curve_calls(draw, *, interval=True):
    eps = sorted(draw(st.sets(st.integers(0, 60), min_size=2, max_size=9)))
    eps = [e / 200 for e in eps]
    acc = draw(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 0.95, 1.0]), min_size=len(eps),
                        max_size=len(eps)))
    i0 = draw(st.integers(0, len(eps) - 2))
    i1 = draw(st.integers(i0 + 1, len(eps) - 1))
    kwargs = {"eps0": eps[i0]} if draw(st.booleans()) else {}
    if interval and draw(st.booleans()):
        kwargs["eps1"] = eps[i1]
        kwargs.setdefault("eps0", eps[i0])
    return Call((eps, acc), kwargs)


def ref_normalised_curve(eps, acc, eps0=None):
    f0 = acc[0 if eps0 is None else eps.index(eps0)]
    if f0 == 0:
        raise R.Undefined
    return [a / f0 for a in acc]


def ref_relative_change(f, f0):
    if np.any(np.asarray(f0) == 0):
        raise R.Undefined
    return ((np.asarray(f) - np.asarray(f0)) / np.asarray(f0)).tolist()


def ref_mean_margin(values):
    return 0.0 if len(values) < 2 else R.Z95 * float(np.std(values, ddof=1)) / math.sqrt(len(values))


def ref_clopper_pearson(k, n, alpha=0.05):
    if np.ndim(k):
        pairs = [ref_clopper_pearson(a, b, alpha) for a, b in zip(k, n)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=1 - alpha, method="exact")
    return ci.low, ci.high


@st.composite
def cp_calls(draw):
    n = draw(st.lists(st.integers(1, 500), min_size=1, max_size=4))
    k = [draw(st.integers(0, t)) for t in n]
    alpha = draw(st.sampled_from([0.05, 0.01, 0.2]))
    return Call((k[0], n[0]) if len(n) == 1 else (np.array(k), np.array(n)), {"alpha": alpha})


def ref_welch(a, b, alpha=0.05):
    a, b = np.asarray(a, float), np.asarray(b, float)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        raise R.Undefined
    test = stats.ttest_ind(a, b, equal_var=False)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    return test.statistic, df, test.pvalue, a.mean(), b.mean(), bool(test.pvalue < alpha)


def ref_bootstrap(a, b, rng, n_resamples, alpha=0.05, paired=True):
    """The documented procedure: a paired resample only changes how many samples fall on each drop
    value -1, 0, +1 (multinomial counts); independent samples are two binomial draws."""
    a, b = np.asarray(a, int), np.asarray(b, int)
    gen = np.random.default_rng(rng)
    if paired:
        if a.size != b.size:
            raise R.Undefined
        d = a - b
        draws = gen.multinomial(a.size, [np.mean(d == -1), np.mean(d == 0), np.mean(d == 1)], size=n_resamples)
        drops = (draws[:, 2] - draws[:, 0]) / a.size
    else:
        drops = (gen.binomial(a.size, a.mean(), size=n_resamples) / a.size
                 - gen.binomial(b.size, b.mean(), size=n_resamples) / b.size)
    return a.mean() - b.mean(), *np.quantile(drops, [alpha / 2, 1 - alpha / 2])


# ---------------------------------------------------------------------------------------------
# effective robustness and fitted lines


def forward(v, transform):
    v = np.asarray(v, float)
    return v if transform == "linear" else (stats.norm.ppf(v) if transform == "probit" else np.log(v / (1 - v)))


def backward(v, transform):
    return v if transform == "linear" else (stats.norm.cdf(v) if transform == "probit" else 1 / (1 + np.exp(-v)))


def ref_line(xs, ys, transform):
    if len(xs) < 3 or (transform != "linear" and not all(0 < v < 1 for v in [*xs, *ys])):
        raise R.Undefined
    tx, ty = forward(xs, transform), forward(ys, transform)
    fit = stats.linregress(tx, ty)
    resid = ty - (fit.intercept + fit.slope * tx)
    return fit.slope, fit.intercept, len(xs), fit.rvalue, math.sqrt(np.sum(resid ** 2) / (len(xs) - 2))


def line_view(f):
    return f.slope, f.intercept, f.n, f.r, f.residual_std


@st.composite
def trend_calls(draw, *, zero=True):
    n = draw(st.integers(3, 9))
    xs = [v / 100 for v in draw(st.lists(st.integers(2, 98), min_size=n, max_size=n, unique=True))]
    ys = [v / 100 for v in draw(st.lists(st.integers(1, 99), min_size=n, max_size=n, unique=True))]
    if zero and draw(st.booleans()):
        ys[draw(st.integers(0, n - 1))] = 0.0
    return Call((xs, ys), {"transform": draw(st.sampled_from(["logit", "probit", "linear"]))})


def ref_fit_trend(xs, ys, transform="logit"):
    if transform == "linear" or 0.0 not in ys:
        return ref_line(xs, ys, transform)
    pivot = xs[ys.index(0.0)]
    sides = [[(x, y) for x, y in zip(xs, ys) if keep(x)] for keep in (lambda x: x < pivot, lambda x: x > pivot)]
    return ("piecewise", pivot, *(ref_line([p[0] for p in side], [p[1] for p in side], transform) for side in sides))


def trend_view(fit):
    if isinstance(fit, M.LinearFit):
        return line_view(fit)
    return "piecewise", fit.pivot, line_view(fit.lower), line_view(fit.upper)


def ref_band(xs, ys, x0, transform, alpha):
    slope, intercept, n, _, s = ref_line(xs, ys, transform)
    tx = forward(xs, transform)
    t0 = float(forward(x0, transform))
    half = stats.t.ppf(1 - alpha / 2, n - 2) * s * math.sqrt(1 / n + (t0 - tx.mean()) ** 2 / np.sum((tx - tx.mean()) ** 2))
    yhat = intercept + slope * t0
    return float(backward(yhat - half, transform)), float(backward(yhat + half, transform)), float(backward(yhat, transform))


@st.composite
def band_calls(draw):
    call = draw(trend_calls(zero=False))
    return Call((*call.args, draw(st.integers(2, 98)) / 100), {**call.kwargs, "alpha": draw(st.sampled_from([0.05, 0.1]))})


def ref_linear_fit(xs, ys, x0, transform, alpha):
    return (*ref_line(xs, ys, transform), *ref_band(xs, ys, x0, transform, alpha))


def call_linear_fit(xs, ys, x0, transform, alpha):
    fit = M.linear_fit(xs, ys, transform=transform, alpha=alpha)
    return (*line_view(fit), *fit.band(x0), fit.predict(x0))


@st.composite
def er_calls(draw):
    call = draw(band_calls())
    xs, ys, x0 = call.args
    return Call((xs, ys, x0, draw(frac), draw(st.one_of(st.none(), st.integers(10, 1000)))),
                {"transform": call.kwargs["transform"]})


def ref_effective_robustness(xs, ys, x, y, n, transform):
    predicted = ref_band(xs, ys, x, transform, 0.05)[2]
    if not n:
        return y - predicted, None, None, predicted
    lo, hi = ref_clopper_pearson(round(y * n), n, alpha=0.025)
    band_lo, band_hi, _ = ref_band(xs, ys, x, transform, 0.025)
    return y - predicted, lo - band_hi, hi - band_lo, predicted


def call_effective_robustness(xs, ys, x, y, n, transform):
    r = M.effective_robustness(M.fit_trend(xs, ys, transform=transform), x, y, n_shifted=n)
    return r.value, r.low, r.high, r.predicted


# ---------------------------------------------------------------------------------------------
# agreement


def ref_kappa(a, b):
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    p_e = sum((a.count(c) / n) * (b.count(c) / n) for c in set(a) | set(b))
    return math.nan if math.isclose(p_e, 1.0) else (p_o - p_e) / (1 - p_e)


def ref_kappa_table(table):
    a = [i for i, row in enumerate(table) for j, v in enumerate(row) for _ in range(v)]
    b = [j for i, row in enumerate(table) for j, v in enumerate(row) for _ in range(v)]
    if not a:
        raise R.Undefined
    return ref_kappa(a, b)


def ref_fleiss(counts):
    n_items, n = len(counts), sum(counts[0])
    p_bar = sum((sum(v * v for v in row) - n) / (n * (n - 1)) for row in counts) / n_items
    p_e = sum((sum(row[j] for row in counts) / (n_items * n)) ** 2 for j in range(len(counts[0])))
    return math.nan if math.isclose(p_e, 1.0) else (p_bar - p_e) / (1 - p_e)


@st.composite
def fleiss_calls(draw):
    k, n = draw(st.integers(1, 4)), draw(st.integers(2, 6))
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=k - 1, max_size=k - 1)))
        rows.append([b - a for a, b in zip([0, *cuts], [*cuts, n])])
    return Call((rows,))


def ref_rating_counts(ratings):
    cats = sorted({v for row in ratings for v in row})
    return [[row.count(c) for c in cats] for row in ratings], cats


labels3 = st.sampled_from(["cat", "dog", "owl"])
label_pairs = st.integers(1, 12).flatmap(lambda n: st.tuples(st.lists(labels3, min_size=n, max_size=n),
                                                             st.lists(labels3, min_size=n, max_size=n)))
terms = st.lists(st.tuples(st.floats(-2, 2), st.floats(-2, 2), st.floats(0, 1)), max_size=6)

CASES: dict[str, MetricCase] = {
    # corruption errors
    "corruption_errors": MetricCase(ce_calls(), ref_ce),
    "corruption_error_terms": MetricCase(ce_calls(), ref_ce, terms_view),
    "mce": MetricCase(ce_calls(subset_needed=True), ref_mce),
    "relative_ce_terms": MetricCase(rce_calls(), ref_rce_terms, terms_view),
    "relative_corruption_errors": MetricCase(rce_calls(), ref_rce),
    "relative_mce_detail": MetricCase(rce_calls(), ref_rmce_detail, detail_view),
    "relative_mce": MetricCase(rce_calls(), ref_rmce),
    "mean_corruption_accuracy": MetricCase(
        st.builds(lambda a, s: Call((a,), kw(subset=s)), st.fixed_dictionaries({c: error_value for c in ALL_C}),
                  st.sampled_from(SUBSET_CHOICES[1:])), ref_mean_accuracy),
    "corruption_summary": MetricCase(summary_calls(), ref_summary, summary_view),
    "corruption_subset": MetricCase(st.builds(lambda s: Call((s,)), st.sampled_from(SUBSET_CHOICES[1:])),
                                    lambda s: names_of(s, ())),
    "mce_bar": MetricCase(cbar_calls(), ref_mce_bar),
    "cbar_summary": MetricCase(cbar_calls(), ref_cbar_summary,
                               lambda s: (s.mean_error, dict(s.corruption_mean_errors), dict(s.corruption_errors),
                                          s.mce_bar)),
    # perturbation stability
    "flip_rate": MetricCase(st.builds(lambda v, p: Call((v, p)), frac, st.sampled_from(ALL_P)),
                            lambda v, p: v / R.ALEXNET_FP[p]),
    "flip_rates": MetricCase(rate_calls("fp"), lambda v, **k: ref_rates(v, "fp", **k)),
    "flip_rate_terms": MetricCase(rate_calls("fp"), lambda v, **k: ref_rate_terms(v, "fp", **k), terms_view),
    "mfr": MetricCase(rate_calls("fp", subset_needed=True), lambda v, **k: ref_mean_rate(v, "fp", **k)),
    "mfr_detail": MetricCase(rate_calls("fp", subset_needed=True),
                             lambda v, subset, **k: R.defined_mean(ref_rate_terms(v, "fp", subset=subset, **k)),
                             detail_view),
    "top5_distance_rates": MetricCase(rate_calls("t5d"), lambda v, **k: ref_rates(v, "t5d", **k)),
    "top5_distance_rate_terms": MetricCase(rate_calls("t5d"), lambda v, **k: ref_rate_terms(v, "t5d", **k),
                                           terms_view),
    "mt5d": MetricCase(rate_calls("t5d", subset_needed=True), lambda v, **k: ref_mean_rate(v, "t5d", **k)),
    "mt5d_detail": MetricCase(rate_calls("t5d", subset_needed=True),
                              lambda v, subset, **k: R.defined_mean(ref_rate_terms(v, "t5d", subset=subset, **k)),
                              detail_view),
    "perturbation_subset": MetricCase(st.builds(lambda s: Call((s,)), st.sampled_from(
        ["test", "benchmark", "validation", "holdout", "all", ["tilt", "scale"]])), lambda s: names_of(s, (), R.P_SUBSETS)),
    "frame_pairs": MetricCase(st.builds(lambda n, noise, d: Call((n,), {"noise": noise, "stride": d}),
                                        st.integers(2, 9), st.booleans(), st.integers(1, 5)),
                              lambda n, noise, stride: tuple(map(list, zip(*_pairs_or_undefined(n, noise, stride)))),
                              lambda pairs: tuple(p.tolist() for p in pairs)),
    "flip_counts": MetricCase(prediction_calls(), ref_flip_counts),
    "sequence_flip_probabilities": MetricCase(prediction_calls(), ref_sequence_fp),
    "flip_probability": MetricCase(prediction_calls(), lambda *a, **k: float(np.mean(ref_sequence_fp(*a, **k)))),
    "rankings_from_scores": MetricCase(score_calls(), ref_rankings),
    "permutation_top5_distance": MetricCase(
        st.builds(lambda s, f: Call(([v + 1 for v in s],), {"formula": f}),
                  st.integers(5, 9).flatmap(lambda c: st.permutations(range(c))), st.sampled_from(["reference", "paper"])),
        lambda sigma, formula: R.top5_distance_paper(sigma)),
    "pair_top5_distances": MetricCase(ranking_calls(), ref_pair_t5d),
    "sequence_top5_distances": MetricCase(ranking_calls(), lambda *a, **k: [np.mean(s) for s in ref_pair_t5d(*a, **k)]),
    "top5_distance": MetricCase(ranking_calls(), lambda *a, **k: np.mean([np.mean(s) for s in ref_pair_t5d(*a, **k)])),
    "zipf_distance": MetricCase(ranking_calls(full=True), ref_zipf),
    # adversarial
    "trapezoid": MetricCase(curve_calls().map(lambda c: Call(c.args)), R.trapezoid),
    "robustness_auc": MetricCase(curve_calls(), R.robustness_auc),
    "normalised_curve": MetricCase(curve_calls(interval=False), ref_normalised_curve),
    "relative_change": MetricCase(st.builds(lambda f, f0: Call((f, f0)), st.one_of(frac, st.lists(frac, min_size=3, max_size=3)),
                                            st.sampled_from([0.0, 0.2, 0.5, 1.0])), ref_relative_change),
    # ratios to a baseline
    "binomial_margin": MetricCase(st.builds(lambda p, n: Call((p, n)), frac, st.one_of(st.none(), st.integers(0, 10**6))),
                                  lambda p, n: R.Z95 * math.sqrt(p * (1 - p) / n) if n else 0.0),
    "mean_margin": MetricCase(st.builds(lambda v: Call((v,)), st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=8)),
                              ref_mean_margin, atol=1e-9),
    "normalised_term": MetricCase(st.builds(lambda t: Call(("fog", *t)), st.tuples(st.floats(-10, 10), st.floats(-10, 10),
                                                                                   st.floats(0, 5))),
                                  lambda name, num, den, margin: R.ratio(num, den, margin), lambda t: t.value),
    "mean_of_defined": MetricCase(
        st.builds(lambda ts: Call(([NormalisedTerm(f"t{i}", n, d, m, R.ratio(n, d, m)) for i, (n, d, m) in enumerate(ts)],)),
                  terms),
        lambda ts: R.defined_mean({t.name: (t.numerator / t.denominator if t.denominator > max(t.margin, 0) else None)
                                   for t in ts}), detail_view),
    # statistics
    "percent": MetricCase(st.builds(lambda v: Call((v,)), st.one_of(st.floats(-5, 5), st.lists(st.floats(-5, 5), max_size=4))),
                          lambda v: (100 * np.asarray(v, float)).tolist()),
    "clopper_pearson": MetricCase(cp_calls(), ref_clopper_pearson, rtol=1e-7, atol=1e-10),
    "welch_t_test": MetricCase(
        st.builds(lambda a, b, alpha: Call((a, b), {"alpha": alpha}), st.lists(st.integers(0, 9), min_size=2, max_size=8),
                  st.lists(st.integers(0, 9), min_size=2, max_size=8), st.sampled_from([0.05, 0.01])),
        ref_welch, lambda r: (r.t, r.df, r.p_value, r.mean_a, r.mean_b, r.significant), rtol=1e-7, atol=1e-10),
    "bootstrap_accuracy_drop": MetricCase(
        st.integers(1, 30).flatmap(lambda n: st.builds(
            lambda a, b, seed, paired: Call((a, b), {"rng": seed, "n_resamples": 200, "paired": paired}),
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.one_of(st.lists(st.booleans(), min_size=n, max_size=n), st.lists(st.booleans(), min_size=1, max_size=30)),
            st.integers(0, 2**32 - 1), st.booleans())),
        lambda a, b, rng, n_resamples, paired: ref_bootstrap(a, b, rng, n_resamples, paired=paired),
        lambda r: (r.estimate, r.lower, r.upper)),
    "linear_fit": MetricCase(band_calls(), ref_linear_fit, call=call_linear_fit, rtol=1e-7, atol=1e-10),
    "fit_trend": MetricCase(trend_calls(), ref_fit_trend, trend_view, rtol=1e-7, atol=1e-10),
    "effective_robustness": MetricCase(er_calls(), ref_effective_robustness, call=call_effective_robustness,
                                       rtol=1e-7, atol=1e-10),
    # agreement
    "cohen_kappa": MetricCase(label_pairs.map(lambda ab: Call(ab)), ref_kappa),
    "cohen_kappa_from_table": MetricCase(
        st.integers(1, 4).flatmap(lambda k: st.lists(st.lists(st.integers(0, 6), min_size=k, max_size=k), min_size=k,
                                                      max_size=k)).map(lambda t: Call((t,))), ref_kappa_table),
    "fleiss_kappa": MetricCase(fleiss_calls(), ref_fleiss),
    "rating_counts": MetricCase(st.lists(st.lists(labels3, min_size=1, max_size=4), min_size=1, max_size=5)
                                .map(lambda r: Call((r,))), ref_rating_counts,
                                lambda out: (out[0].tolist(), list(out[1]))),
}
