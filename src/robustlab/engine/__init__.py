"""The evaluation engine: runs of (model, benchmark, dataset), streamed, batched and resumable.

Example (with the data at hand)::

    import robustlab
    result = robustlab.evaluate("torchvision:resnet50", "imagenet-c", "/data/ImageNet-C",
                                clean_data="/data/imagenet/val")
    result.metric("mce"), result.run_id

How a run works
---------------
1. The benchmark turns the user's options into a *config* (everything that changes the
   numbers); the run id is a hash of (model, benchmark, dataset, config).
2. The benchmark's *plan* is walked lazily (:class:`UnitStream`): a unit (a setting and a
   shard of its samples, ``"fog/3/shard-0002"``) is listed only when the executor reaches it, so
   the first batch runs while later units are still being planned. Units already in the store
   are skipped (resume); each stored unit carries a fingerprint of its data, and a resume or a
   rerun refuses data that changed since (:class:`DataChangedError`).
3. An *executor* (``local``: a DataLoader with worker processes; ``ray``: Ray tasks and
   inference actors) loads each batch with the benchmark's loader: every sample is a
   :class:`Sample` (id, label, pixels, typed context) and a batch a :class:`Batch` (context as
   columns, pixels stacked or listed). ``predict`` turns a batch into per-sample columns; a
   unit's columns are committed to the store once, when all its batches are in; unreadable
   samples are recorded as problems and skipped.
4. Metrics are computed by the benchmark from the *stored* predictions (never inside the
   loop), stored with ``store.put_metrics``, and returned as an :class:`EvaluationResult`.

Writing a benchmark plugin
--------------------------
Subclass :class:`Benchmark`, set ``name`` (and ``task`` for detectors), declare its config as a
frozen :class:`RunConfig` dataclass (``config_class``), decorate with :func:`register_benchmark`,
and implement ``configure`` (returns the config), ``plan`` (a generator is fine; units are
:class:`Unit`, their settings :class:`Setting`), ``samples``, ``metrics`` and, when the defaults do
not fit, ``load`` (returns a :class:`Sample`) and ``predict`` (receives a :class:`Batch`). How its
runs are shown (notes, summary, the ``robustlab show`` layout, a report section and headline) is
a :class:`Presentation` registered with :func:`register_presentation` and named by the benchmark's
``presentation``. The contract is documented on :class:`Benchmark`. The built-in families live in
:mod:`robustlab.benchmarks` (their presentations in :mod:`robustlab.report`); other packages
register theirs under the entry-point groups ``robustlab.benchmarks`` and
``robustlab.presentations``. Adding a benchmark never changes the executors.
"""

from ..lazy import lazy_exports
from .benchmark import BENCHMARKS, Benchmark, MetricRow, Unit, get_benchmark, list_benchmarks, register_benchmark
from .config import RunConfig, conditional
from .presentation import PRESENTATIONS, HeadlineMetric, Presentation, register_presentation
from .setting import Setting
from .evaluation import EvaluationResult, compute_metrics, evaluate, load_result, opened_store
from .records import Batch, Sample
from .work import DataChangedError, UnitStream

# Executors and per-batch helpers import torch: they load on first use, so a rerun of a stored
# run (and `robustlab show`) never imports it.
_LAZY = {
    **dict.fromkeys(("classify_batch", "top1_errors", "top5_errors"), ".classification"),
    **dict.fromkeys(("EXECUTORS", "ExecutionStats", "Executor", "LocalExecutor", "default_workers", "get_executor"),
                    ".executor"),
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "BENCHMARKS", "Batch", "Benchmark", "DataChangedError", "EXECUTORS", "EvaluationResult", "ExecutionStats",
    "Executor", "HeadlineMetric", "LocalExecutor", "MetricRow", "PRESENTATIONS", "Presentation", "RunConfig", "Sample",
    "Setting", "Unit", "UnitStream", "classify_batch", "compute_metrics", "conditional", "default_workers", "evaluate",
    "get_benchmark", "get_executor", "list_benchmarks", "load_result", "opened_store", "register_benchmark",
    "register_presentation", "top1_errors", "top5_errors",
]
