"""The evaluation engine: runs of (model, benchmark setting, dataset), batched and resumable.

>>> import robustlab
>>> result = robustlab.evaluate("torchvision:resnet50", "imagenet-c", "/data/ImageNet-C",
...                             clean_data="/data/imagenet/val")
>>> result.metric("mce"), result.run_id

How a run works
---------------
1. The benchmark turns the user's options into a *config* (everything that changes the
   numbers) and *plans* its work units: a setting and a shard of its samples
   (``"fog/3/shard-0002"``). The run id is a hash of (model, benchmark, dataset, config).
2. The store says which units are done; only the others are computed (resume). A finished
   run is returned at once, without loading the model.
3. The local executor streams the pending units through worker processes (read, corrupt at
   native resolution, resize/crop to the model's input size, uint8) into batched inference
   in the main process (GPU when present, else CPU threads). Each finished unit's per-sample
   columns are written atomically with ``store.write_unit``; unreadable samples are recorded
   with ``store.record_problem`` and skipped.
4. Metrics are computed by the benchmark from the *stored* predictions (never inside the
   loop), stored with ``store.put_metrics``, and returned as an :class:`EvaluationResult`.

Writing a benchmark plugin
--------------------------
Subclass :class:`Benchmark`, set ``name`` (and ``task`` for detectors), decorate with
:func:`register_benchmark`, and implement:

- ``configure(data, **options) -> dict`` -- validate options; the JSON-able config is part of
  the run id. Reject options you do not take (pass ``None`` means "not given").
- ``plan(config) -> list[Unit]`` -- units with stable keys; ``Unit.setting`` groups them.
- ``samples(config, unit)`` -- a picklable sample set: ``len()``, ``ids``, ``labels``,
  ``read(i)`` (runs in worker processes).
- optionally ``load(samples, i, prepare)`` -- worker side; e.g. ImageNet-P returns a stack of
  frames; the default reads one image and applies the model's resize/crop.
- optionally ``predict(model, x, config) -> dict of per-sample column arrays`` -- main process;
  the default stores top-5 indices/probabilities (and logits on request); an adversarial
  benchmark runs its attack here, a detection benchmark its detector.
- ``metrics(config, predictions, related) -> [(name, setting, value)]`` -- from stored columns
  only, with :mod:`robustlab.metrics`; ``related_runs(config)`` names other stored runs it
  needs (a clean run, the runs of other models for a static set).
- optionally ``notes`` and ``summary`` for ``robustlab show``.

Registered benchmarks (``list_benchmarks()``): ``imagenet-c`` (ImageNet-C / CIFAR-10-C
folders) and ``corrupted`` (any labelled folder corrupted on the fly) in
:mod:`.corruption_benchmarks`; the plugins ``imagenet-p``/``perturbed`` (unit = perturbation x
shard, sample = frame stack), ``imagenet-vid-robust``/``ytbb-robust``/``video-pmk`` (frames
once, pm-k in ``metrics``, other runs via ``related_runs``), ``adversarial-auc`` (``predict``
runs the epsilon sweep, ``needs_labels``) and ``coco-c``/``voc-c``/``cityscapes-c``/
``detection-corrupted`` (``task = "detection"``) use the same interface.
"""

from .benchmark import BENCHMARKS, Benchmark, MetricRow, Unit, get_benchmark, list_benchmarks, register_benchmark
from .classification import classify_batch, top1_errors, top5_errors
from .evaluation import EvaluationResult, compute_metrics, evaluate, load_result, opened_store
from .executor import EXECUTORS, ExecutionStats, Executor, LocalExecutor, default_workers, get_executor
from .records import Batch, Sample
from .work import DataChangedError, UnitStream

__all__ = [
    "BENCHMARKS", "Batch", "Benchmark", "DataChangedError", "EXECUTORS", "EvaluationResult", "ExecutionStats",
    "Executor", "LocalExecutor", "MetricRow", "Sample", "Unit", "UnitStream", "classify_batch", "compute_metrics",
    "default_workers", "evaluate", "get_benchmark", "get_executor", "list_benchmarks", "load_result",
    "opened_store", "register_benchmark", "top1_errors", "top5_errors",
]
