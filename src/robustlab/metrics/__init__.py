"""Robustness metrics as pure functions: numpy/dicts in, numbers (or small frozen dataclasses
with ``to_dict()``) out. No torch, no I/O (except the CSV reader), no global state.

Conventions: accuracies, errors and flip probabilities are **fractions**; normalised scores
(CE, mCE, relative mCE, FR, mFR, T5D ratios, mT5D) are **ratios**, 1.0 for the baseline
(AlexNet) -- the papers print 100 x; :func:`percent` converts. A ratio whose baseline
denominator is within its sampling error is undefined (:mod:`.ratios`); means of ratios
average the defined terms and say how many. The benchmark pages of the documentation
(``docs/imagenet-c.md``, ``docs/imagenet-p.md``, ...) show each metric's call from Python.
"""

from ..lazy import lazy_exports

# name -> submodule; names load on first use (statistics import scipy.stats, detection faster-coco-eval).
_EXPORTS = {
    **dict.fromkeys(
        ("PAPER_EPSILONS", "normalised_curve", "relative_change", "robustness_auc", "trapezoid"), ".adversarial"
    ),
    **dict.fromkeys(
        (
            "ALL_CORRUPTIONS",
            "BENCHMARK_CORRUPTIONS",
            "CorruptionBaseline",
            "CorruptionSummary",
            "HOLDOUT_CORRUPTIONS",
            "N_SEVERITIES",
            "corruption_errors",
            "corruption_subset",
            "corruption_summary",
            "get_corruption_baseline",
            "list_corruption_baselines",
            "mce",
            "mean_corruption_accuracy",
            "relative_corruption_errors",
            "relative_ce_terms",
            "corruption_error_terms",
            "relative_mce",
            "relative_mce_detail",
        ),
        ".corruption",
    ),
    **dict.fromkeys(
        (
            "AccuracyCount",
            "ClassAccuracy",
            "ConditionalResult",
            "PmkCurve",
            "PmkResult",
            "clopper_pearson",
            "conditional_accuracy",
            "frame_offsets",
            "pairs_at_distance",
            "parse_frame_key",
            "per_class_accuracy",
            "pmk_accuracy",
            "pmk_accuracy_curve",
            "pmset_pairs",
            "static_accuracy",
            "static_frames",
        ),
        ".pmk",
    ),
    **dict.fromkeys(("CorruptionTable", "read_robustbench_csv"), ".robustbench"),
    **dict.fromkeys(
        ("DefinedMean", "NormalisedTerm", "UndefinedTermsWarning", "Z_95", "binomial_margin", "mean_margin", "mean_of_defined",
         "normalised_term"),
        ".ratios",
    ),
    **dict.fromkeys(
        (
            "ALL_PERTURBATIONS",
            "NOISE_PERTURBATIONS",
            "StabilityBaseline",
            "TEST_PERTURBATIONS",
            "VALIDATION_PERTURBATIONS",
            "flip_counts",
            "flip_probability",
            "flip_rate",
            "flip_rates",
            "frame_pairs",
            "get_stability_baseline",
            "list_stability_baselines",
            "mfr",
            "mfr_detail",
            "mt5d",
            "mt5d_detail",
            "flip_rate_terms",
            "top5_distance_rate_terms",
            "pair_top5_distances",
            "permutation_top5_distance",
            "perturbation_subset",
            "rankings_from_scores",
            "sequence_flip_probabilities",
            "sequence_top5_distances",
            "top5_distance",
            "top5_distance_rates",
            "zipf_distance",
        ),
        ".stability",
    ),
    **dict.fromkeys(
        (
            "BootstrapInterval",
            "LinearFit",
            "WelchResult",
            "bootstrap_accuracy_drop",
            "linear_fit",
            "percent",
            "welch_t_test",
        ),
        ".stats",
    ),
    **dict.fromkeys(
        (
            "COCO_STAT_NAMES",
            "DetectionPmkResult",
            "ImageMatches",
            "ap_from_matches",
            "ap_per_class",
            "average_precision",
            "box_iou",
            "check_iou_threshold",
            "clip_boxes",
            "coco_metrics",
            "detection_arrays",
            "detection_pmk",
            "ground_truth_arrays",
            "localization_pmk",
            "match_detections",
            "match_image",
            "mean_ap",
            "per_image_ap",
            "sanitize_detections",
            "to_coco_ground_truth",
            "to_coco_results",
            "vid_iou_threshold",
            "voc_ap50",
        ),
        ".detection",
    ),
    **dict.fromkeys(
        (
            "RestrictedUnpickler",
            "normalise_robustness_results",
            "read_mmdet_robustness_results",
            "read_rmse_csv",
            "restricted_loads",
        ),
        ".importers",
    ),
    **dict.fromkeys(
        (
            "CorruptionPerformance",
            "RmseRpcAnalysis",
            "check_performance",
            "image_rmse",
            "performance_under_corruption",
            "rmse_vs_rpc",
            "rpc_undefined_reason",
        ),
        ".under_corruption",
    ),
    **dict.fromkeys(("cohen_kappa", "cohen_kappa_from_table", "fleiss_kappa", "rating_counts"), ".agreement"),
    **dict.fromkeys(("CBarSummary", "PUBLISHED_CBAR_ERRORS", "cbar_summary", "get_cbar_baseline", "mce_bar"),
                    ".corruption_bar"),
    **dict.fromkeys(("EffectiveRobustness", "ReferencePoint", "effective_robustness", "fit_trend",
                     "read_reference_points", "trend_or_reason"), ".effective_robustness"),
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
