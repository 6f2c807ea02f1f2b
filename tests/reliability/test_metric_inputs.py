"""Every public metric refuses bad input with InputError: a property-based check.

Each metric of :mod:`robustlab.metrics` is listed below with one valid call and, per argument,
the domain of its numbers (fractions, counts, class indices, non-negative reals, top-5
distances, pixels...). Hypothesis then breaks one number of one argument at a time with a value
outside the domain (-0.1, 1.5, 50, NaN, inf...), a value of the wrong type (the text ``"0.5"``,
``True``, ``None``, a dict), or replaces a whole argument by an empty one, and checks that the
metric raises :class:`robustlab.errors.InputError` instead of returning a number.
The catalogue must name every public metric (a test checks), so a new metric comes with its
domains.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robustlab.metrics as M
from robustlab.metrics.corruption_bar import CBAR_SETS
from robustlab.errors import DataError, InputError

B = M.BENCHMARK_CORRUPTIONS
T = M.TEST_PERTURBATIONS

#: Values outside each domain (besides the wrong types every number gets).
OUT_OF_RANGE = {
    "fraction": [-0.1, 1.5, 50.0, math.nan, math.inf],
    "nonneg": [-1.0, math.nan, math.inf, -math.inf],
    "real": [math.nan, math.inf, -math.inf],
    "count": [-1, 1.5, math.nan],
    "index": [-1, 1.5, math.nan],
    "t5d": [-1.0, 19.0, 1e9, math.nan],
    "pixel": [-1.0, 256.0, math.nan],
    "flag": [2, -1, 0.5],
    "severity": [-1, 6, 2.5],
}
#: Wrong types: text that looks like a number, a boolean, None, a container.
WRONG_TYPES = ["0.5", "1", True, None, {"x": 1}]


@dataclass
class Arg:
    """One argument of a valid call: its value, the domain of its numbers, whether an empty
    value is valid, and whether booleans are its own numbers (correctness flags)."""

    value: Any
    domain: str | None = None
    empty_ok: bool = False


@dataclass
class Case:
    fn: Callable
    args: list[Arg]
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: What a bad input raises: InputError, or DataError for the importer of files' contents.
    errors: tuple[type[Exception], ...] = (InputError,)

    def call(self, values: list[Any]) -> Any:
        return self.fn(*values, **self.kwargs)


def gt(boxes, labels):
    return {"boxes": np.asarray(boxes, float), "labels": np.asarray(labels)}


def det(boxes, scores, labels):
    return {"boxes": np.asarray(boxes, float), "scores": np.asarray(scores, float), "labels": np.asarray(labels)}


GT = gt([[0, 0, 10, 10], [20, 20, 30, 30]], [1, 2])
DET = det([[0, 0, 10, 9], [21, 20, 30, 30], [50, 50, 60, 60]], [0.9, 0.8, 0.3], [1, 2, 1])
PMSETS = {"v1/000010.jpg": ["v1/000009.jpg", "v1/000011.jpg"], "v2/000005.jpg": ["v2/000006.jpg"]}
FRAMES = [k for a, ns in PMSETS.items() for k in (a, *ns)]
PREDICTIONS = {k: i % 3 for i, k in enumerate(FRAMES)}
LABELS = {k: [i % 3] for i, k in enumerate(FRAMES)}
ERRORS = {c: [0.4, 0.5, 0.6, 0.7, 0.8] for c in B}
COCO_CELL = {"AP": 0.3, "AP50": 0.5}
MMDET = {c: {s: {"bbox": {**{n: 0.3 for n in M.COCO_STAT_NAMES}}} for s in range(6)} for c in B}
COCO_GT = {"images": [{"id": 1, "width": 40, "height": 40}],
           "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0}],
           "categories": [{"id": 1, "name": "a"}]}
CBAR_ERRORS = {c: [0.4, 0.5, 0.6, 0.7, 0.8] for c in CBAR_SETS["imagenet-c-bar"]}
RNG_SEQ = np.array([[0, 0, 1, 1, 1], [2, 2, 2, 0, 0]])
RANKINGS = np.array([[[0, 1, 2, 3, 4], [1, 0, 2, 3, 4], [1, 0, 2, 3, 5]]])

CASES: dict[str, Case] = {
    # adversarial
    "trapezoid": Case(M.trapezoid, [Arg([0.0, 0.1, 0.2], "real"), Arg([1.0, 0.5, 0.2], "real")]),
    "robustness_auc": Case(M.robustness_auc, [Arg([0.0, 0.1, 0.2], "nonneg"), Arg([0.9, 0.5, 0.2], "fraction")]),
    "normalised_curve": Case(M.normalised_curve, [Arg([0.0, 0.1, 0.2], "nonneg"), Arg([0.9, 0.5, 0.2], "fraction")]),
    "relative_change": Case(M.relative_change, [Arg(0.5, "fraction"), Arg(0.9, "fraction")]),
    # corruption
    "corruption_errors": Case(M.corruption_errors, [Arg(ERRORS, "fraction")]),
    "mce": Case(M.mce, [Arg(ERRORS, "fraction")]),
    "mean_corruption_accuracy": Case(M.mean_corruption_accuracy, [Arg(ERRORS, "fraction")]),
    "corruption_summary": Case(M.corruption_summary, [Arg(ERRORS, "fraction"), Arg(0.3, "fraction", empty_ok=True)]),
    "relative_corruption_errors": Case(M.relative_corruption_errors, [Arg(ERRORS, "fraction"), Arg(0.3, "fraction")]),
    "relative_mce": Case(M.relative_mce, [Arg(ERRORS, "fraction"), Arg(0.3, "fraction")]),
    "corruption_subset": Case(M.corruption_subset, [Arg("holdout")]),
    "corruption_error_terms": Case(M.corruption_error_terms, [Arg(ERRORS, "fraction")]),
    "relative_ce_terms": Case(M.relative_ce_terms, [Arg(ERRORS, "fraction"), Arg(0.3, "fraction")]),
    "relative_mce_detail": Case(M.relative_mce_detail, [Arg(ERRORS, "fraction"), Arg(0.3, "fraction")]),
    "mce_bar": Case(M.mce_bar, [Arg(CBAR_ERRORS, "fraction"), Arg("imagenet-c-bar")]),
    "cbar_summary": Case(M.cbar_summary, [Arg(CBAR_ERRORS, "fraction"), Arg("imagenet-c-bar")]),
    # ratios to a baseline
    "binomial_margin": Case(M.binomial_margin, [Arg(0.3, "fraction"), Arg(100, "count", empty_ok=True)]),  # None: published
    "mean_margin": Case(M.mean_margin, [Arg([0.1, 0.2, 0.4], "real")]),
    "normalised_term": Case(M.normalised_term, [Arg("fog"), Arg(0.5, "real"), Arg(0.6, "real"), Arg(0.01, "nonneg")]),
    # effective robustness
    "fit_trend": Case(M.fit_trend, [Arg([0.5, 0.6, 0.7, 0.8], "fraction"), Arg([0.3, 0.42, 0.5, 0.66], "fraction")]),
    "effective_robustness": Case(lambda original, shifted: M.effective_robustness(
        M.fit_trend([0.5, 0.6, 0.7, 0.8], [0.3, 0.42, 0.5, 0.66]), original, shifted),
        [Arg(0.65, "fraction"), Arg(0.5, "fraction")]),
    # stability
    "flip_rate_terms": Case(M.flip_rate_terms, [Arg({p: 0.1 for p in T}, "fraction")]),
    "top5_distance_rate_terms": Case(M.top5_distance_rate_terms, [Arg({p: 2.0 for p in T}, "t5d")]),
    "mfr_detail": Case(M.mfr_detail, [Arg({p: 0.1 for p in T}, "fraction")]),
    "mt5d_detail": Case(M.mt5d_detail, [Arg({p: 2.0 for p in T}, "t5d")]),
    "flip_probability": Case(M.flip_probability, [Arg(RNG_SEQ, "index")], {"noise": False}),
    "sequence_flip_probabilities": Case(M.sequence_flip_probabilities, [Arg(RNG_SEQ, "index")], {"noise": False}),
    "flip_counts": Case(M.flip_counts, [Arg(RNG_SEQ, "index")], {"noise": True}),
    "frame_pairs": Case(M.frame_pairs, [Arg(5, "count")], {"noise": False}),
    "top5_distance": Case(M.top5_distance, [Arg(RANKINGS, "index")], {"noise": False}),
    "sequence_top5_distances": Case(M.sequence_top5_distances, [Arg(RANKINGS, "index")], {"noise": False}),
    "pair_top5_distances": Case(M.pair_top5_distances, [Arg(RANKINGS, "index")], {"noise": False}),
    "zipf_distance": Case(M.zipf_distance, [Arg(np.array([[[0, 1, 2, 3, 4], [1, 0, 2, 3, 4], [4, 0, 2, 3, 1]]]), "index")],
                          {"noise": False}),
    "rankings_from_scores": Case(M.rankings_from_scores, [Arg(np.array([[0.1, 0.5, 0.2, 0.9, 0.3, 0.0]]), "real")]),
    "permutation_top5_distance": Case(M.permutation_top5_distance, [Arg([2, 1, 3, 4, 5, 6], "index")]),
    "flip_rate": Case(M.flip_rate, [Arg(0.1, "fraction"), Arg("rotate")]),
    "flip_rates": Case(M.flip_rates, [Arg({p: 0.1 for p in T}, "fraction")]),
    "mfr": Case(M.mfr, [Arg({p: 0.1 for p in T}, "fraction")]),
    "top5_distance_rates": Case(M.top5_distance_rates, [Arg({p: 2.0 for p in T}, "t5d")]),
    "mt5d": Case(M.mt5d, [Arg({p: 2.0 for p in T}, "t5d")]),
    "perturbation_subset": Case(M.perturbation_subset, [Arg("test")]),
    # statistics
    "percent": Case(M.percent, [Arg(0.5, "real")]),
    "clopper_pearson": Case(M.clopper_pearson, [Arg(3, "count"), Arg(10, "count")]),
    "welch_t_test": Case(M.welch_t_test, [Arg([0.1, 0.2, 0.3, 0.25], "real"), Arg([0.3, 0.4, 0.35, 0.5], "real")]),
    "bootstrap_accuracy_drop": Case(M.bootstrap_accuracy_drop, [Arg([True, False, True, True], "flag"),
                                                                Arg([True, False, False, True], "flag")],
                                    {"rng": 0, "n_resamples": 50}),
    "linear_fit": Case(M.linear_fit, [Arg([0.5, 0.7, 0.9], "fraction"), Arg([0.4, 0.55, 0.8], "fraction")]),
    # pm-k
    "pmk_accuracy": Case(M.pmk_accuracy, [Arg(PREDICTIONS, "index"), Arg(PMSETS), Arg(LABELS, "index")]),
    "pmk_accuracy_curve": Case(M.pmk_accuracy_curve, [Arg(PREDICTIONS, "index"), Arg(PMSETS), Arg(LABELS, "index")]),
    "static_frames": Case(M.static_frames, [Arg({"m": PREDICTIONS}, "index"), Arg(PMSETS), Arg(LABELS, "index")]),
    "static_accuracy": Case(M.static_accuracy, [Arg(PREDICTIONS, "index"), Arg({a: a for a in PMSETS}),
                                                Arg(LABELS, "index")]),
    "conditional_accuracy": Case(M.conditional_accuracy, [Arg(PREDICTIONS, "index"), Arg(LABELS, "index"),
                                                          Arg([("v1/000010.jpg", "v1/000011.jpg")])]),
    "frame_offsets": Case(M.frame_offsets, [Arg(PMSETS)]),
    "pmset_pairs": Case(M.pmset_pairs, [Arg(PMSETS), Arg(1, "count")]),
    "pairs_at_distance": Case(M.pairs_at_distance, [Arg(FRAMES), Arg(1, "count")]),
    # detection
    "box_iou": Case(M.box_iou, [Arg([[0, 0, 10, 10]], "real", empty_ok=True), Arg([[5, 5, 15, 15]], "real", empty_ok=True)]),
    "clip_boxes": Case(M.clip_boxes, [Arg([[0, 0, 10, 10]], "real", empty_ok=True), Arg(8, "nonneg"), Arg(8, "nonneg")]),
    "vid_iou_threshold": Case(M.vid_iou_threshold, [Arg([10.0, 40.0], "nonneg"), Arg([10.0, 40.0], "nonneg")]),
    "average_precision": Case(M.average_precision, [Arg([0.2, 0.5, 0.5, 1.0], "fraction"),
                                                    Arg([1.0, 1.0, 0.66, 0.75], "fraction")]),
    "mean_ap": Case(M.mean_ap, [Arg({1: 0.5, 2: 0.7}, "fraction")]),
    "detection_arrays": Case(M.detection_arrays, [Arg(DET, "real", empty_ok=True)]),  # no boxes: valid
    "ground_truth_arrays": Case(M.ground_truth_arrays, [Arg(GT, "real", empty_ok=True)]),
    "sanitize_detections": Case(M.sanitize_detections, [Arg(DET, "real", empty_ok=True)], {"width": 40, "height": 40}),
    "match_detections": Case(M.match_detections, [Arg([[0, 0, 10, 10]], "real"), Arg([0.9], "real"),
                                                  Arg([[0, 0, 10, 9]], "real"), Arg([False], "flag"),
                                                  Arg([0.5], "fraction")]),  # (empty: length mismatches)
    "match_image": Case(M.match_image, [Arg(GT, "real", empty_ok=True), Arg(DET, "real", empty_ok=True)]),
    "ap_per_class": Case(M.ap_per_class, [Arg([GT], "real"), Arg([DET], "real")]),
    "voc_ap50": Case(M.voc_ap50, [Arg([GT], "real"), Arg([DET], "real")]),
    "per_image_ap": Case(M.per_image_ap, [Arg(GT, "real", empty_ok=True), Arg(DET, "real", empty_ok=True)]),
    "detection_pmk": Case(M.detection_pmk, [Arg({k: GT for k in FRAMES}, "real"), Arg({k: DET for k in FRAMES}, "real",
                                                                                       empty_ok=True), Arg(PMSETS)]),
    "localization_pmk": Case(M.localization_pmk, [Arg({k: GT for k in FRAMES}, "real"),
                                                  Arg({k: DET for k in FRAMES}, "real", empty_ok=True), Arg(PMSETS)]),
    "coco_metrics": Case(M.coco_metrics, [Arg(COCO_GT, "nonneg"), Arg([{"image_id": 1, "category_id": 1,
                                                                         "bbox": [0, 0, 10, 9], "score": 0.9}], "real",
                                                                       empty_ok=True)]),  # no detections: AP 0
    # detection under corruption
    "performance_under_corruption": Case(M.performance_under_corruption,
                                         [Arg({c: {s: dict(COCO_CELL) for s in range(6)} for c in B}, "fraction")]),
    "normalise_robustness_results": Case(M.normalise_robustness_results, [Arg(MMDET, "fraction")],
                                         errors=(DataError,)),
    "normalise_robustness_results (severities)": Case(
        lambda sev: M.normalise_robustness_results({"fog": {s: MMDET["fog"][0] for s in sev}}),
        [Arg([0, 1, 2, 3, 4, 5], "severity")], errors=(DataError,)),
    "image_rmse": Case(M.image_rmse, [Arg(np.full((4, 4, 3), 10, np.uint8), "pixel"),
                                      Arg(np.full((4, 4, 3), 20, np.uint8), "pixel")]),
    "rmse_vs_rpc": Case(M.rmse_vs_rpc, [Arg({"fog": {1: 10.0, 2: 20.0}, "snow": {1: 15.0, 2: 30.0}}, "pixel"),
                                        Arg({"fog": {1: 0.9, 2: 0.7}, "snow": {1: 0.8, 2: 0.5}}, "nonneg")]),
    # agreement
    "cohen_kappa": Case(M.cohen_kappa, [Arg(["a", "b", "a", "a"]), Arg(["a", "b", "b", "a"])]),
    "cohen_kappa_from_table": Case(M.cohen_kappa_from_table, [Arg([[5, 1], [2, 4]], "count")]),
    "fleiss_kappa": Case(M.fleiss_kappa, [Arg([[2, 1], [3, 0], [0, 3]], "count")]),
    "rating_counts": Case(M.rating_counts, [Arg([["a", "b"], ["a", "a"], ["b", "b"]])]),
}

#: Public functions of robustlab.metrics that are not metrics of numbers, and why.
NOT_METRICS = {
    "get_corruption_baseline": "a lookup by name (unknown names: InputError, tested in metrics/)",
    "get_stability_baseline": "a lookup by name",
    "list_corruption_baselines": "no input",
    "list_stability_baselines": "no input",
    "parse_frame_key": "a string parser (tested in metrics/)",
    "read_mmdet_robustness_results": "reads a file (the matrix tests bad files)",
    "read_rmse_csv": "reads a file",
    "read_robustbench_csv": "reads a file",
    "restricted_loads": "an unpickler of bytes (hostile pickles tested in reliability/)",
    "to_coco_ground_truth": "a format converter",
    "to_coco_results": "a format converter",
    "check_iou_threshold": "a parser of an option ('vid' or a number, also as text)",
    "check_performance": "the validation helper of performance_under_corruption",
    "rpc_undefined_reason": "explains a NaN rPC",
    "ap_from_matches": "takes ImageMatches made by match_image (covered through ap_per_class)",
    "per_class_accuracy": "takes a PmkResult made by pmk_accuracy",
    "get_cbar_baseline": "a lookup by name",
    "mean_of_defined": "averages NormalisedTerm objects made by the *_terms functions (checked there)",
    "read_reference_points": "reads a file (bad rows: tests/metrics/test_effective_robustness.py)",
    "trend_or_reason": "fit_trend's wrapper that turns its InputError into a reason for show and the report",
}


def numeric_paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every number inside ``value`` (lists, tuples, dicts, arrays)."""
    if isinstance(value, np.ndarray):
        return [path + (tuple(i),) for i in np.ndindex(value.shape)]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in numeric_paths(v, path + (k,))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in numeric_paths(v, path + (i,))]
    if isinstance(value, (bool, np.bool_)):
        return [path]
    if isinstance(value, (int, float, np.integer, np.floating)):
        return [path]
    return []


def replaced(value: Any, path: tuple, new: Any) -> Any:
    """A copy of ``value`` with the number at ``path`` replaced by ``new`` (arrays become lists)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, np.ndarray):
        out = value.tolist()
        index = list(head)
        cell = out
        for i in index[:-1]:
            cell = cell[i]
        cell[index[-1]] = new
        return out
    if isinstance(value, Mapping):
        return {k: (replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    items = [replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]
    return tuple(items) if isinstance(value, tuple) else items


def empty_like(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return np.zeros((0,) + value.shape[1:], value.dtype)
    if isinstance(value, Mapping):
        return {}
    if isinstance(value, (list, tuple)):
        return type(value)()
    if isinstance(value, str):
        return ""
    return None


@st.composite
def broken_call(draw, case: Case) -> tuple[list[Any], str]:
    """A call of ``case`` with one argument broken, and a description of what was broken."""
    values = [a.value for a in case.args]
    candidates = [i for i, a in enumerate(case.args) if a.domain is not None or not a.empty_ok]
    i = draw(st.sampled_from(candidates))
    arg = case.args[i]
    kinds = ["empty"] if not arg.empty_ok else []
    paths = numeric_paths(arg.value) if arg.domain is not None else []
    if paths:
        kinds += ["type", "range"]
    if not kinds:
        kinds = ["type-whole"]
    kind = draw(st.sampled_from(kinds))
    if kind == "empty":
        values[i] = empty_like(arg.value)
        return values, f"argument {i} empty"
    if kind == "type-whole":
        values[i] = draw(st.sampled_from([None, 3.5, True]))
        return values, f"argument {i} replaced by a wrong type"
    path = draw(st.sampled_from(paths))
    # severity keys: a boolean or a dict cannot be a key beside 1, and "1" is a valid spelling (JSON keys)
    wrong = [w for w in WRONG_TYPES if not (arg.domain == "flag" and isinstance(w, bool))
             and not (arg.domain == "severity" and (isinstance(w, (bool, dict)) or w == "1"))
             and not (w is None and arg.empty_ok and not path)]  # None for an optional number: "not given"
    new = draw(st.sampled_from(wrong if kind == "type" else OUT_OF_RANGE[arg.domain]))
    values[i] = replaced(arg.value, path, new)
    return values, f"argument {i} at {path} set to {new!r}"


def test_every_public_metric_is_in_the_catalogue():
    public = {n for n in M.__all__ if inspect.isfunction(getattr(M, n))}
    named = {name.split(" ")[0] for name in CASES}
    assert public - named - set(NOT_METRICS) == set(), "add the new metric to CASES with its domains"
    assert named <= public and set(NOT_METRICS) <= public


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_valid_call_works(name):
    case = CASES[name]
    case.call([a.value for a in case.args])


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bad_inputs_raise_input_error(name, data):
    case = CASES[name]
    values, what = data.draw(broken_call(case))
    try:
        out = case.call(values)
    except case.errors:
        return
    raise AssertionError(f"{name} with {what} returned {out!r:.120} instead of raising InputError")


def test_the_red_teams_cases():
    """Silent wrong results (each fails on the old code)."""
    cases = [
        lambda: M.linear_fit([0.5, 0.9, 1.2], [0.4, 0.8, 1.1]),  # an accuracy above 1
        lambda: M.linear_fit([50, 90, 80], [40, 80, 70]),  # percentages
        lambda: M.mt5d({p: 1e9 for p in T}),  # no top-5 distance is 1e9
        lambda: M.average_precision([0.5, 0.3, 0.1], [1.0, 1.0, 1.0]),  # recall falling
        lambda: M.performance_under_corruption({c: {s: {"AP": "0.5"} for s in range(6)} for c in B}),
        lambda: M.performance_under_corruption({c: {s: {"AP": True} for s in range(6)} for c in B}),
        lambda: M.mce({c: True for c in B}),
        lambda: M.mce({c: "0.5" for c in B}),
        lambda: M.mean_ap({}),  # was nan
    ]
    for i, case in enumerate(cases):
        with pytest.raises(InputError):
            case()
            pytest.fail(f"case {i} returned a number")
    with pytest.raises(DataError, match="severity key True"):
        M.normalise_robustness_results({"fog": {0: COCO_CELL, True: COCO_CELL}})
