"""Robustness metrics as pure functions: numpy/dicts in, numbers (or small frozen dataclasses
with ``to_dict()``) out. No torch, no I/O (except the CSV reader), no global state.

Conventions: accuracies, errors and flip probabilities are **fractions**; normalised scores
(CE, mCE, relative mCE, FR, mFR, T5D ratios, mT5D) are **ratios**, 1.0 for the baseline
(AlexNet) -- the papers print 100 x; :func:`percent` converts. See the README section
"Metrics (Python API)".
"""

from .adversarial import PAPER_EPSILONS, normalised_curve, relative_change, robustness_auc, trapezoid
from .corruption import (
    ALL_CORRUPTIONS,
    BENCHMARK_CORRUPTIONS,
    HOLDOUT_CORRUPTIONS,
    N_SEVERITIES,
    CorruptionBaseline,
    CorruptionSummary,
    corruption_errors,
    corruption_subset,
    corruption_summary,
    get_corruption_baseline,
    list_corruption_baselines,
    mce,
    mean_corruption_accuracy,
    relative_corruption_errors,
    relative_mce,
)
from .pmk import (
    AccuracyCount,
    ClassAccuracy,
    ConditionalResult,
    PmkCurve,
    PmkResult,
    conditional_accuracy,
    frame_offsets,
    pairs_at_distance,
    parse_frame_key,
    per_class_accuracy,
    pmk_accuracy,
    pmk_accuracy_curve,
    pmset_pairs,
    static_accuracy,
    static_frames,
)
from .robustbench import CorruptionTable, read_robustbench_csv
from .stability import (
    ALL_PERTURBATIONS,
    NOISE_PERTURBATIONS,
    TEST_PERTURBATIONS,
    VALIDATION_PERTURBATIONS,
    StabilityBaseline,
    flip_counts,
    flip_probability,
    flip_rate,
    flip_rates,
    frame_pairs,
    get_stability_baseline,
    list_stability_baselines,
    mfr,
    mt5d,
    pair_top5_distances,
    permutation_top5_distance,
    perturbation_subset,
    rankings_from_scores,
    sequence_flip_probabilities,
    sequence_top5_distances,
    top5_distance,
    top5_distance_rates,
    zipf_distance,
)
from .stats import (
    BootstrapInterval,
    LinearFit,
    WelchResult,
    bootstrap_accuracy_drop,
    clopper_pearson,
    linear_fit,
    percent,
    welch_t_test,
)

__all__ = [
    # corruption
    "ALL_CORRUPTIONS", "BENCHMARK_CORRUPTIONS", "HOLDOUT_CORRUPTIONS", "N_SEVERITIES",
    "CorruptionBaseline", "CorruptionSummary", "corruption_errors", "corruption_subset",
    "corruption_summary", "get_corruption_baseline", "list_corruption_baselines", "mce",
    "mean_corruption_accuracy", "relative_corruption_errors", "relative_mce",
    # stability
    "ALL_PERTURBATIONS", "NOISE_PERTURBATIONS", "TEST_PERTURBATIONS", "VALIDATION_PERTURBATIONS",
    "StabilityBaseline", "flip_counts", "flip_probability", "flip_rate", "flip_rates",
    "frame_pairs", "get_stability_baseline", "list_stability_baselines", "mfr", "mt5d",
    "pair_top5_distances", "permutation_top5_distance", "perturbation_subset",
    "rankings_from_scores", "sequence_flip_probabilities", "sequence_top5_distances",
    "top5_distance", "top5_distance_rates", "zipf_distance",
    # pm-k
    "AccuracyCount", "ClassAccuracy", "ConditionalResult", "PmkCurve", "PmkResult",
    "conditional_accuracy", "frame_offsets", "pairs_at_distance", "parse_frame_key",
    "per_class_accuracy", "pmk_accuracy", "pmk_accuracy_curve", "pmset_pairs",
    "static_accuracy", "static_frames",
    # adversarial
    "PAPER_EPSILONS", "normalised_curve", "relative_change", "robustness_auc", "trapezoid",
    # statistics
    "BootstrapInterval", "LinearFit", "WelchResult", "bootstrap_accuracy_drop",
    "clopper_pearson", "linear_fit", "percent", "welch_t_test",
    # importers
    "CorruptionTable", "read_robustbench_csv",
]  # fmt: skip

# Detection metrics (issue 3 item 4) are exported below by their own module.
from . import detection, importers, under_corruption  # noqa: E402
from .detection import *  # noqa: E402,F401,F403
from .importers import *  # noqa: E402,F401,F403
from .under_corruption import *  # noqa: E402,F401,F403

__all__ += detection.__all__ + importers.__all__ + under_corruption.__all__

# Inter-rater agreement (issue 16: the review app's kappas).
from . import agreement  # noqa: E402
from .agreement import *  # noqa: E402,F401,F403

__all__ += agreement.__all__
