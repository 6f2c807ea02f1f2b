"""The Benchmark plugin interface and registry (see the package docstring for the contract)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import InputError
from ..registry import Registry
from .records import Batch, Sample, sample_id, source_fingerprint
from .schema import Option, OptionSchema

if TYPE_CHECKING:
    import torch

MetricRow = tuple[str, str, float]


@dataclass(frozen=True)
class Unit:
    """One work unit of a run: a setting and a shard of its samples.

    Attributes
    ----------
    key : str
        Unique within the run and stable across runs, e.g. ``"fog/3/shard-0002"``; the store
        files the unit's predictions under it, and resume compares keys.
    setting : str
        The benchmark setting the unit belongs to (``"fog/3"``, ``"clean"``); metrics group
        units by it.
    params : dict
        JSON-able facts the benchmark needs to rebuild the unit's samples.
    """

    key: str
    setting: str
    params: Mapping[str, Any] = field(default_factory=dict)


class Benchmark:
    """Base class of benchmark plugins. Subclasses set ``name`` and override the hooks.

    Declarations: ``name``, ``task``, ``options`` (the options it takes, see
    :mod:`robustlab.engine.schema`) and ``option_hints``.

    Hooks, in the order the engine calls them:

    ``evaluation_options(options, device) -> dict``
        The given options with device-dependent defaults filled in (default: unchanged).
    ``configure(data, **options) -> dict``
        Gets every declared option (given or default) and returns the run's config: a JSON-able
        dict of everything that changes the results (data path, settings, seeds, class map...).
        It is hashed into the run id, so two calls with the same meaning must return equal dicts.
    ``dataset_id(config) -> str``
        The dataset's identity stored with the run (default ``config["data"]``).
    ``plan(config) -> iterable of Unit``
        The run's units, in execution order. May be a generator: the engine walks it lazily
        (the first batch runs while later units are still being planned), so list folders as
        you go, not up front.
    ``samples(config, unit) -> sample set``
        A picklable object with ``len()``, ``ids`` (or ``id(i)``), ``labels`` and ``read(i)``
        (see :mod:`robustlab.data.classification`), and optionally ``fingerprint(mode)``; called
        when the engine reaches the unit. ``read`` runs in worker processes or Ray tasks.
    ``fingerprint(config, unit, samples, mode) -> str``
        Identity of the unit's data as it is now (default: the sample set's own
        ``fingerprint(mode)``: paths with sizes and modification times, or content hashes).
        Stored with the unit; a resume refuses units whose data changed.
    ``load(samples, i, prepare) -> Sample``
        Worker side: one :class:`~robustlab.engine.records.Sample`: id, label, pixels and the
        benchmark's typed context (default: ``read(i)`` then ``prepare(image)``, no context).
        ``prepare`` is an :class:`~robustlab.engine.executor.ImagePreparer`: the model's resize
        and crop in pixel space (uint8 HxWx3), picklable; the model itself never reaches workers.
    ``predict(model, batch, config) -> dict[str, np.ndarray]``
        Main process or inference actor: per-sample columns for one
        :class:`~robustlab.engine.records.Batch` (pixels and context together:
        ``batch.inputs(device)``, ``batch.context``, ``batch.label_tensor(device)``); default: top-5
        indices and scores (and logits on request). The engine adds ``sample_id`` and
        ``label``. Override for attacks (gradients) or detectors (boxes).
    ``related_runs(config) -> {alias: run id}``
        Other stored runs the metrics need (e.g. a clean run for ImageNet-C); default none.
    ``metrics(config, predictions, related) -> list[(name, setting, value)]``
        After the run, from the stored per-sample columns ``{unit key: {column: array}}`` only
        (``related``: the same for each related run); uses :mod:`robustlab.metrics`. Never
        called inside the inference loop.
    ``notes(config, metrics) -> list[str]``
        Human-readable remarks for the result (e.g. why relative mCE is unavailable).
    ``summary(config, metrics) -> dict``
        A structured view of the metrics for ``robustlab show`` and ``to_dict``.
    """

    name: ClassVar[str] = ""
    task: ClassVar[str] = "classification"
    #: False for a benchmark that scores results made elsewhere and never runs a model: its
    #: model is only a name (not built, not hashed into the run's identity).
    runs_model: ClassVar[bool] = True
    #: The options it takes (:class:`~robustlab.engine.schema.Option`: name, type, default, help,
    #: validation). :meth:`configure` gets exactly these, defaults filled in; the command line's
    #: ``--help`` for this benchmark lists them.
    options: ClassVar[tuple[Option, ...]] = ()
    #: ``{option it does not take: why, and what to give instead}`` (``{name}``: the benchmark's).
    option_hints: ClassVar[dict[str, str]] = {}

    @classmethod
    def schema(cls) -> OptionSchema:
        """Its options as an :class:`~robustlab.engine.schema.OptionSchema`."""
        return OptionSchema(f"benchmark {cls.name!r}", cls.options,
                            {k: v.format(name=cls.name) for k, v in cls.option_hints.items()})

    def evaluation_options(self, options: dict[str, Any], device: str | None) -> dict[str, Any]:
        """The given options with defaults that depend on where the model runs filled in
        (``device`` as given to evaluate: ``auto``, ``cpu``, ``cuda:N``...); called before
        :meth:`configure`. Default: unchanged. ``imagenet-c`` picks its corruption backend here."""
        return options

    def config_for(self, data: str | Any, **options: Any) -> dict[str, Any]:
        """The run config of ``data`` with ``options``: options it does not declare are refused
        (with a did-you-mean from :meth:`schema`), the others resolved with their defaults and
        passed to :meth:`configure`. What :func:`robustlab.evaluate` calls."""
        return self.configure(str(data), **self.schema().resolve(options))

    def configure(self, data: str, **options: Any) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def dataset_id(self, config: Mapping[str, Any]) -> str:
        return str(config["data"])

    def plan(self, config: Mapping[str, Any]) -> Iterable[Unit]:  # pragma: no cover - abstract
        raise NotImplementedError

    def samples(self, config: Mapping[str, Any], unit: Unit):  # pragma: no cover - abstract
        raise NotImplementedError

    def fingerprint(self, config: Mapping[str, Any], unit: Unit, samples: Any, mode: str = "stat") -> str:
        return source_fingerprint(samples, mode)

    def num_classes(self, config: Mapping[str, Any]) -> int | None:
        """Number of logits the model must return (checked per batch), None to skip the check."""
        return config.get("num_classes")

    def load(self, samples, i: int, prepare) -> Sample:
        return Sample(sample_id(samples, i), int(samples.labels[i]), prepare(samples.read(i)))

    def predict(self, model: torch.nn.Module, batch: Batch, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        return self.classify(model, batch.stacked_inputs(model_device(model)), config)

    def classify(self, model: torch.nn.Module, x: torch.Tensor, config: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The prediction columns of a classifier on ``x`` (float NCHW in [0, 1] on the model's
        device): ``top5_index`` int32 (N, k), ``top5_score`` float32 (N, k) softmax scores, and
        ``logits`` float32 (N, classes) with ``save_logits``; ``k`` is the config's ``top_k`` (5)."""
        from .classification import classify_batch

        return classify_batch(model, x, top_k=int(config.get("top_k", 5)), save_logits=bool(config.get("save_logits")),
                              num_classes=self.num_classes(config))

    def related_runs(self, config: Mapping[str, Any]) -> dict[str, str]:
        """Other stored runs whose predictions the metrics need, as ``{alias: run id}``.

        The engine checks they exist before the run starts; when ``alias`` is a config key
        holding that id (e.g. ``clean_run``), it replaces the value by the full id (users may
        give a prefix). :meth:`metrics` gets ``related[alias]``."""
        return {}

    def metrics(self, config: Mapping[str, Any], predictions: Mapping[str, Mapping[str, np.ndarray]],
                related: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]] | None = None) -> list[MetricRow]:  # pragma: no cover
        raise NotImplementedError

    def notes(self, config: Mapping[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        return []

    def summary(self, config: Mapping[str, Any], metrics: Iterable[MetricRow]) -> dict[str, Any]:
        return {}

    def text(self, config: Mapping[str, Any], summary: Mapping[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        """The lines ``robustlab show`` prints between the run's header and its notes (default:
        every metric row). Families override it with their own layout (percent, as the papers)."""
        return metric_rows_text(metrics)


def metric_rows_text(metrics: Iterable[MetricRow]) -> list[str]:
    """Every metric row as ``name  setting  value`` (the fallback layout)."""
    return [f"{name:<24}{setting:<24}{value:.6g}" for name, setting, value in metrics]


def model_device(model: Any) -> torch.device:
    """The device of a model's parameters (CPU for a model without parameters)."""
    import torch

    device = getattr(model, "device", None)
    if isinstance(device, torch.device):
        return device
    return next((p.device for p in model.parameters()), torch.device("cpu")) if hasattr(model, "parameters") \
        else torch.device("cpu")


#: Benchmark plugins by name. The built-in families live in :mod:`robustlab.benchmarks` (imported
#: on first lookup); other packages register theirs under the entry-point group
#: ``robustlab.benchmarks``. The engine itself never imports a benchmark.
BENCHMARKS: Registry[type[Benchmark]] = Registry("benchmark", plugins=("robustlab.benchmarks",),
                                                 entry_points="robustlab.benchmarks")


def register_benchmark(cls: type[Benchmark]) -> type[Benchmark]:
    """Class decorator: register a :class:`Benchmark` subclass under its ``name``."""
    if not cls.name:
        raise InputError(f"benchmark class {cls.__name__} needs a non-empty name.")
    BENCHMARKS.add(cls.name, cls)
    return cls


def get_benchmark(name: str | Benchmark) -> Benchmark:
    """An instance of the benchmark registered as ``name`` (or ``name`` itself if an instance)."""
    if isinstance(name, Benchmark):
        return name
    return BENCHMARKS.get(name)()


def list_benchmarks() -> list[str]:
    return BENCHMARKS.names()
