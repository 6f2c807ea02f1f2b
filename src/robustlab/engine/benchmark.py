"""The Benchmark plugin interface and registry (see the package docstring for the contract)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import InputError
from ..registry import Registry
from .config import RunConfig
from .options.schema import Option, OptionSchema
from .presentation import HeadlineMetric, MetricRow, metric_rows_text
from .records import Batch, Sample, sample_id, source_fingerprint
from .setting import Setting, unit_key

if TYPE_CHECKING:
    import torch

__all__ = ["BENCHMARKS", "Benchmark", "HeadlineMetric", "MetricRow", "Unit", "benchmark_table", "get_benchmark",
           "list_benchmarks", "metric_rows_text", "model_device", "model_input", "register_benchmark"]


@dataclass(frozen=True)
class Unit:
    """One work unit of a run: a setting and a shard of its samples.

    Attributes
    ----------
    key : str
        Unique within the run and stable across runs, e.g. ``"fog/3/shard-0002"``; the store
        files the unit's predictions under it, and resume compares keys.
    setting : Setting
        The benchmark setting the unit belongs to (``Setting("fog", 3)``, ``Setting("clean")``);
        metrics group units by it. Given as a Setting or its text (``"fog/3"``).
    params : dict
        JSON-able facts the benchmark needs to rebuild the unit's samples.
    """

    key: str
    setting: Setting
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.setting, Setting):
            object.__setattr__(self, "setting", Setting.parse(self.setting))

    @classmethod
    def of(cls, setting: Setting | str, shard: int, params: Mapping[str, Any] | None = None) -> Unit:
        """Shard ``shard`` of ``setting``, keyed ``"<setting>/shard-NNNN"``."""
        setting = Setting.parse(setting)
        return cls(unit_key(setting, shard), setting, dict(params or {}))


class Benchmark:
    """Base class of benchmark plugins. Subclasses set ``name`` and override the hooks.

    Declarations (class attributes, the only record of each): ``name``, ``task``,
    ``runs_model``, ``options`` and ``option_hints`` (what it takes, see
    :mod:`robustlab.engine.options`), ``config_class`` (the frozen dataclass its config is, see
    :mod:`robustlab.engine.config`) and ``presentation`` (the name of the registered
    :class:`~robustlab.engine.presentation.Presentation` that shows its runs: notes, summary, the
    ``robustlab show`` layout, its report section and headline).

    Hooks, in the order :func:`robustlab.evaluate` calls them:

    ``evaluation_options(options, device) -> dict``
        The given options with device-dependent defaults filled in (default: unchanged).
    ``configure(data, **options) -> config_class``
        Gets every declared option (given or default) and returns the run's config: a
        :attr:`config_class` of everything that changes the results (data path, settings, seeds,
        class map...). Its stored form (``to_dict``) is hashed into the run id, so two calls with the
        same meaning must return equal configs.
    ``related_runs(config) -> {alias: run id}``
        Other stored runs the metrics need (e.g. a clean run for ImageNet-C); default none. The
        engine checks they exist before the run is registered; when ``alias`` is a config field
        holding that id (e.g. ``clean_run``), it replaces the value by the full id.
    ``dataset_id(config) -> str``
        The dataset's identity stored with the run (default ``config.data``).
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
    ``metrics(config, predictions, related) -> list[(name, setting, value)]``
        After the run, from the stored per-sample columns ``{unit key: {column: array}}`` only
        (``related``: the same for each related run); uses :mod:`robustlab.metrics`. Never
        called inside the inference loop.

    A stored result is shown by the benchmark's presentation (:func:`robustlab.engine.load_result`,
    ``robustlab show``, the report), which gets the config rebuilt by :meth:`config_of`.
    """

    name: ClassVar[str] = ""
    task: ClassVar[str] = "classification"
    #: False for a benchmark that scores results made elsewhere and never runs a model: its
    #: model is only a name (not built, not hashed into the run's identity).
    runs_model: ClassVar[bool] = True
    #: The options it takes (:class:`~robustlab.engine.options.Option`: name, type, default, help,
    #: validation). :meth:`configure` gets exactly these, defaults filled in; the command line's
    #: ``--help`` for this benchmark lists them.
    options: ClassVar[tuple[Option, ...]] = ()
    #: ``{option it does not take: why, and what to give instead}`` (``{name}``: the benchmark's).
    option_hints: ClassVar[dict[str, str]] = {}
    #: The frozen dataclass its config is (a :class:`~robustlab.engine.config.RunConfig`).
    config_class: ClassVar[type[RunConfig]] = RunConfig
    #: The registered presentation of its runs ("": the generic one, every metric row).
    presentation: ClassVar[str] = ""
    #: Modules the local executor's loading workers import before their first task (the kernels
    #: its ``load`` calls), so that workers start ready.
    worker_modules: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def schema(cls) -> OptionSchema:
        """Its options as an :class:`~robustlab.engine.options.OptionSchema`."""
        return OptionSchema(f"benchmark {cls.name!r}", cls.options,
                            {k: v.format(name=cls.name) for k, v in cls.option_hints.items()})

    def config_of(self, stored: Mapping[str, Any] | RunConfig) -> RunConfig:
        """Its config from a stored form (a run record's ``config``)."""
        return self.config_class.from_dict(stored)

    def example(self, config: RunConfig, setting: Setting) -> np.ndarray | None:
        """One image of ``setting`` as the run saw it (uint8 HxWx3), for the report's example grids;
        None when there is none to show (the default)."""
        return None

    def evaluation_options(self, options: dict[str, Any], device: str | None) -> dict[str, Any]:
        """The given options with defaults that depend on where the model runs filled in
        (``device`` as given to evaluate: ``auto``, ``cpu``, ``cuda:N``...); called before
        :meth:`configure`. Default: unchanged. ``imagenet-c`` picks its corruption backend here."""
        return options

    def config_for(self, data: str | Any, **options: Any) -> RunConfig:
        """The run config of ``data`` with ``options``: options it does not declare are refused
        (with a did-you-mean from :meth:`schema`), the others resolved with their defaults and
        passed to :meth:`configure`. What :func:`robustlab.evaluate` calls."""
        config = self.configure(str(data), **self.schema().resolve(options))
        if not isinstance(config, self.config_class):
            raise InputError(f"benchmark {self.name!r}: configure returned a {type(config).__name__}, not its config "
                             f"class {self.config_class.__name__}: return {self.config_class.__name__}(...) (a frozen "
                             "dataclass, see docs/extending.md), and declare it as config_class.")
        return config

    def configure(self, data: str, **options: Any) -> RunConfig:  # pragma: no cover - abstract
        raise NotImplementedError

    def dataset_id(self, config: RunConfig) -> str:
        return str(config.data)

    def plan(self, config: RunConfig) -> Iterable[Unit]:  # pragma: no cover - abstract
        raise NotImplementedError

    def samples(self, config: RunConfig, unit: Unit):  # pragma: no cover - abstract
        raise NotImplementedError

    def fingerprint(self, config: RunConfig, unit: Unit, samples: Any, mode: str = "stat") -> str:
        return source_fingerprint(samples, mode)

    def shared_reads(self, config: RunConfig, unit: Unit) -> str | None:
        """A name for the images this unit's samples are made from, when other units of the run
        make theirs from the same images (default None: its own).

        Units that return the same name, come one after the other in :meth:`plan`, and whose
        sample sets are per-image views (``per_image = True``: ``read(i)`` a function of
        ``base.read(i)`` and ``i`` alone) of one base, or that base itself, are loaded together
        by the local executor: each base image is read (decoded) once and every unit's sample
        made from it (``imagenet-c --on-the-fly``: one decode for 19 x 5 + 1 settings). Their
        pixels are the same as when each unit reads its own. ``load`` must then not depend on
        the type of the sample set beyond what it reads."""
        return None

    def reads_files(self, config: RunConfig) -> bool:
        """Whether this run's samples are image files read as they are (the default ``load`` on a
        folder of files, no change made to them in the loading workers), so that ``--decode gpu``
        may decode them on the device instead (default False)."""
        return False

    def num_classes(self, config: RunConfig) -> int | None:
        """Number of logits the model must return (checked per batch), None to skip the check
        (default: the config's ``num_classes`` when its class declares one)."""
        return getattr(config, "num_classes", None)

    def load(self, samples, i: int, prepare) -> Sample:
        from ..data.classification import read_prepared

        return Sample(sample_id(samples, i), int(samples.labels[i]), read_prepared(samples, i, prepare))

    def predict(self, model: torch.nn.Module, batch: Batch, config: RunConfig) -> dict[str, np.ndarray]:
        return self.classify(model, model_input(model, batch), config)

    def classify(self, model: torch.nn.Module, x: torch.Tensor, config: RunConfig) -> dict[str, np.ndarray]:
        """The prediction columns of a classifier on ``x`` (float NCHW in [0, 1] on the model's
        device): ``top5_index`` int32 (N, k), ``top5_score`` float32 (N, k) softmax scores, and
        ``logits`` float32 (N, classes) with ``save_logits``; ``k`` is the config's ``top_k`` (5 when
        its class declares none). A model that names its classes (zero-shot, ``hf:``) first adapts
        to :meth:`class_names`."""
        from .classification import classify_batch

        model = self.for_data_classes(model, config)
        return classify_batch(model, x, top_k=int(getattr(config, "top_k", 5)),
                              save_logits=bool(getattr(config, "save_logits", False)),
                              num_classes=self.num_classes(config))

    def class_names(self, config: RunConfig) -> tuple[str, ...] | None:
        """The data's class names in label order (ImageNet's wnids for ImageNet data), for models that
        name their classes (:mod:`robustlab.models.label_space`); default: the ``classes`` of the first
        unit's samples, None when they have none."""
        first = next(iter(self.plan(config)), None)
        names = getattr(self.samples(config, first), "classes", None) if first is not None else None
        return tuple(names) if names else None

    def for_data_classes(self, model: Any, config: RunConfig) -> Any:
        """``model`` adapted to :meth:`class_names` when it names its classes (looked up once per config)."""
        if getattr(model, "for_class_names", None) is None:
            return model
        from ..models.label_space import for_class_names

        key = json.dumps(config.to_dict(), sort_keys=True, default=str)
        known = self.__dict__.setdefault("_class_names", {})
        if key not in known:
            known[key] = self.class_names(config)
        return for_class_names(model, known[key])

    def related_runs(self, config: RunConfig) -> dict[str, str]:
        """Other stored runs whose predictions the metrics need, as ``{alias: run id}``.

        The engine checks they exist before the run starts; when ``alias`` is a config field
        holding that id (e.g. ``clean_run``), it replaces the value by the full id (users may
        give a prefix). :meth:`metrics` gets ``related[alias]``."""
        return {}

    def metrics(self, config: RunConfig, predictions: Mapping[str, Mapping[str, np.ndarray]],
                related: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]] | None = None) -> list[MetricRow]:  # pragma: no cover
        raise NotImplementedError


def model_input(model: Any, batch: Batch):
    """What a classifier is called on for ``batch``, on its device: the uint8 (N, H, W, 3) pixels
    as loaded when it takes them (``takes_pixels``: a :class:`~robustlab.models.Classifier` makes
    its own input from them, in one pass on the CPU), else float (N, 3, H, W) in [0, 1]; the same
    network input either way."""
    device = model_device(model)
    if getattr(model, "takes_pixels", False) and batch.stacked:
        return batch.stacked_pixels(device)
    return batch.stacked_inputs(device)


def model_device(model: Any) -> torch.device:
    """The device of a model's parameters (CPU for a model without parameters)."""
    import torch

    device = getattr(model, "device", None)
    if isinstance(device, torch.device):
        return device
    return next((p.device for p in model.parameters()), torch.device("cpu")) if hasattr(model, "parameters") \
        else torch.device("cpu")


#: Benchmark plugins by name, filled by the modules of the entry-point group ``robustlab.benchmarks``
#: (robustlab's own families are declared by the package root; other packages list theirs in their
#: pyproject). The engine itself never imports or names a benchmark.
BENCHMARKS: Registry[type[Benchmark]] = Registry("benchmark", entry_points="robustlab.benchmarks")


#: Members a benchmark had before its presentation became its own object: a class that still defines
#: them is refused with what to do instead (they would no longer be called).
MOVED_TO_PRESENTATION = ("notes", "summary", "text", "comparability", "published_baseline", "family", "family_title",
                         "headline")


def register_benchmark(cls: type[Benchmark]) -> type[Benchmark]:
    """Class decorator: register a :class:`Benchmark` subclass under its ``name``."""
    if not cls.name:
        raise InputError(f"benchmark class {cls.__name__} needs a non-empty name.")
    moved = [m for m in MOVED_TO_PRESENTATION if any(m in vars(k) for k in cls.__mro__ if k is not Benchmark)]
    if moved:
        raise InputError(f"benchmark class {cls.__name__} defines {', '.join(moved)}: how runs are presented is a "
                         "Presentation of its own (robustlab.engine.presentation): move them there, register it with "
                         "register_presentation and name it in the benchmark's presentation (see docs/extending.md).")
    BENCHMARKS.add(cls.name, cls)
    return cls


def get_benchmark(name: str | Benchmark) -> Benchmark:
    """An instance of the benchmark registered as ``name`` (or ``name`` itself if an instance)."""
    if isinstance(name, Benchmark):
        return name
    return BENCHMARKS.get(name)()


def list_benchmarks() -> list[str]:
    """Names of the registered benchmarks, in registration order (robustlab's, then plugins')."""
    return BENCHMARKS.names()


def benchmark_table() -> str:
    """The registered benchmarks as a Markdown table (name, family, task, headline, options), for
    the documentation (every benchmark module is imported)."""
    from .presentation import presentation_class

    lines = ["| benchmark | family | task | headline | options |", "|---|---|---|---|---|"]
    for name in list_benchmarks():
        cls = BENCHMARKS.get(name)
        shown = presentation_class(cls)
        head = ", ".join(h.label for h in shown.headline) or "–"
        options = ", ".join(f"`{o.name}`" for o in cls.schema()) or "–"
        lines.append(f"| `{name}` | {shown.family_name() or '–'} | {cls.task} | {head} | {options} |")
    return "\n".join(lines)
