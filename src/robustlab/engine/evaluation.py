"""``robustlab.evaluate``: one call from a model and a dataset to stored, resumable results."""

from __future__ import annotations

import contextlib
import functools
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.limits import limit_note
from ..environment import describe_differences, distinct_environments
from ..errors import InputError
from ..formatting import json_number
from ..models.preprocessing import Preprocessing
from .benchmark import Benchmark, MetricRow, get_benchmark
from .config import RunConfig
from .options.schema import OptionSchema
from .presentation import presentation_of
from .runtime import RunOptions


@dataclass
class EvaluationResult:
    """The outcome of a run: its id, settings, metrics table and notes.

    Attributes
    ----------
    run_id : str
    model, benchmark, dataset : str
    config : dict
        The run's options (corruptions, severities, ...), as stored (:attr:`run_config`: as its
        benchmark's config dataclass).
    status : str
        ``complete`` once every unit and the metrics are stored.
    metrics : list of (name, setting, value)
        Fractions and ratios (mCE 0.767 prints as 76.7), e.g. ``("mce", "", 0.767)``,
        ``("error", "fog/3", 0.41)``, ``("ce", "fog", 0.83)``.
    summary : dict
        Structured metrics (``clean_error``, ``mce``, ``relative_mce``, per-corruption CE and
        per-severity errors).
    notes : list of str
        Why a metric is missing (e.g. relative mCE without a clean error).
    problems : list of (unit, sample id, message)
        Samples skipped because they could not be read.
    units_total, units_computed : int
        Units of the run, and units this call computed (0 when everything was stored).
    seconds : float
        Wall time of this call.
    environments : list of dict
        The distinct environments (:func:`robustlab.environment.environment_record`) its stored
        units were computed in: one normally, more when a run was resumed elsewhere.
    """

    run_id: str
    model: str
    benchmark: str
    dataset: str
    config: dict
    status: str
    metrics: list[MetricRow]
    summary: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    units_total: int = 0
    units_computed: int = 0
    seconds: float = 0.0
    executor: str = ""
    environments: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)

    @functools.cached_property
    def run_config(self) -> RunConfig | None:
        """:attr:`config` as its benchmark's config dataclass (None when this robustlab does not know
        the benchmark, or when another version wrote a config this one cannot read)."""
        from ..errors import RobustlabError

        try:
            return get_benchmark(self.benchmark).config_of(self.config or {})
        except (RobustlabError, TypeError):
            return None

    def metric(self, name: str, setting: str = "") -> float:
        """One metric value, e.g. ``result.metric("mce")`` or ``result.metric("error", "fog/3")``."""
        for n, s, v in self.metrics:
            if n == name and s == setting:
                return v
        raise KeyError(f"run {self.run_id} has no metric {name!r} for setting {setting!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "model": self.model, "model_hash": (self.config or {}).get("model_hash"),
            "benchmark": self.benchmark, "dataset": self.dataset, "status": self.status, "config": self.config, "summary": _jsonable(self.summary),
            "metrics": [{"name": n, "setting": s, "value": json_number(v)} for n, s, v in self.metrics],
            "notes": list(self.notes),
            "problems": [{"unit": u, "sample_id": i, "message": m} for u, i, m in self.problems],
            "units_total": self.units_total, "units_computed": self.units_computed, "seconds": self.seconds,
            "environment": self.environments[0] if len(self.environments) == 1 else None,
            "environments": list(self.environments),
            "events": list(self.events),
        }

    def table(self) -> str:
        """The metrics as a plain-text table (see :func:`robustlab.engine.result_text.format_result`)."""
        from .result_text import format_result

        return format_result(self)

    def __str__(self) -> str:
        return self.table()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, float):
        return json_number(value)
    return value


@contextlib.contextmanager
def opened_store(store: object = None) -> Iterator[Any]:
    """Yield a Store: ``store`` itself when it is one (left open), else ``open_store(store)``."""
    from ..store import Store, open_store

    if isinstance(store, Store) or (store is not None and hasattr(store, "register_run")):
        yield store
        return
    opened = open_store(store)
    try:
        yield opened
    finally:
        opened.close()


def model_key(model: object, options: Mapping[str, Any]) -> str:
    """The model's name in the catalog (part of the run id, beside the content hash the run's
    config holds as ``model_hash``), without loading it when a spec.

    A spec is spelled canonically by its source (:func:`robustlab.models.registry.canonical_spec`:
    relative ``python:``, ``onnx:``, ``results:`` and ``finetuned:`` paths made absolute);
    objects are named by class and a hash of their weights. Model options that change outputs
    (preprocessing, num_classes, wrap) are appended.
    """
    if isinstance(model, str):
        from ..models.registry import canonical_spec

        key = canonical_spec(model)
    else:
        from ..models.registry import object_name

        key = getattr(model, "name", None) or object_name(model)
    extras = [f"{k}={v}" for k, v in sorted(options.items()) if v is not None]
    return key + (f" [{', '.join(extras)}]" if extras else "")


def evaluate(model: object, benchmark: str | Benchmark, data: str | Path, *, store: object = None,
             batch_size: int = 64, device: str | None = None, preprocessing: Preprocessing | dict | None = None,
             num_classes: int | None = None, progress: str | bool | None = None, wrap: str | list[str] | None = None,
             executor: str | Any = "local", tag: str | None = None, fingerprint: str = "stat",
             max_pixels: int | None = None, precision: str | None = None, channels_last: bool | None = None,
             compile: bool | None = None, decode: str | None = None, **options: Any) -> EvaluationResult:
    """Evaluate ``model`` on ``benchmark`` over ``data``; store per-sample results; return metrics.

    Parameters
    ----------
    model : str, nn.Module, callable, Classifier
        A model spec (``torchvision:resnet50``, ``timm:...``, ``onnx:path``,
        ``python:module:callable``) or an object (see :func:`robustlab.models.load_model`).
    benchmark : str
        ``imagenet-c``, ``corrupted``, ... (see :func:`robustlab.engine.list_benchmarks`).
    data : path
        The dataset root (the layout depends on the benchmark).
    store : None, folder, ``postgresql://`` URL or Store
        Where runs live (default ``./.robustlab/``).
    batch_size, device : execution only (not part of the run's identity)
        ``device``: ``auto`` (CUDA if present), ``cpu``, ``cuda``.
    preprocessing, num_classes : optional model options (see load_model)
    wrap : optional preprocessing wrappers, e.g. ``"clahe,ten-crop"`` (see
        :mod:`robustlab.models.wrappers`); part of the model's name, so a wrapped model's runs
        are stored apart from the plain model's
    progress : ``auto`` (default: a bar when stderr is a terminal, else a log line every 15 s), ``bar``,
        ``log`` or ``none`` (also True = bar, False = none); see :mod:`robustlab.engine.progress`
    executor : ``"local"`` (default), ``"ray"``, another registered executor, or an
        :class:`~robustlab.engine.executor.Executor`
        Where the work runs; the stored results are the same either way.
    tag : str, optional
        A name that becomes part of the run's identity (e.g. to evaluate changed data as a new run).
    fingerprint : ``"stat"`` (default) or ``"content"``
        How each unit's data is fingerprinted when stored (paths with sizes and modification
        times, or content hashes); a resume or a rerun refuses data that changed since.
    max_pixels : int, optional
        Largest image decoded (width x height; default Pillow's decompression-bomb limit,
        178,956,970); larger ones are skipped as problems. Part of the run's identity when given.
    precision, channels_last, compile, decode : optional
        How the model runs (:mod:`robustlab.engine.runtime`): ``precision`` ``fp32`` (default),
        ``bf16`` or ``fp16`` (autocast); ``channels_last`` (weights in channels-last memory,
        converted in place); ``compile`` (:func:`torch.compile`); ``decode`` ``cpu`` (default) or
        ``gpu`` (JPEG files of released sets decoded with nvJPEG on the device). Each is part of
        the run's identity when not the default, and is checked on the device before any unit runs.
    **options : the benchmark's options and the executor's
        Each goes where it is declared: the benchmark's schema (``corruptions``, ``severities``,
        ``limit``, ``clean_data``, ``seed``, ``save_logits``...: ``robustlab evaluate -b NAME
        --help`` lists them) or the executor's (``workers``; ``ray_address``, ``actors``,
        ``stall_timeout`` for ``ray``). ``None`` means not given. Any other name is refused with
        a did-you-mean.

    Returns
    -------
    EvaluationResult
        With ``run_id``; calling again with the same arguments resumes a stopped run (only the
        missing units are computed) or returns a finished one at once.
    """
    from .executor import get_executor
    from .progress import resolve_progress

    start = time.perf_counter()
    resolve_progress(progress)  # an unknown mode fails before any work
    bench = get_benchmark(benchmark)
    bench_options, executor_options = split_options(bench, executor, options)
    runner = get_executor(executor, **executor_options)
    check_device(device)
    if num_classes is not None:
        from .options import check_positive

        num_classes = check_positive("num_classes (--num-classes)", num_classes)
    run_options = RunOptions.of(precision, channels_last, compile, decode)
    config = run_config(bench, data, bench_options, device, tag=tag, max_pixels=max_pixels, run_options=run_options)
    model_options = {"preprocessing": None if preprocessing is None else Preprocessing.from_dict(preprocessing).to_dict(),
                     "num_classes": num_classes, "wrap": _canonical_wrap(wrap)}
    loaded = None
    if bench.runs_model:
        name = model_key(model, model_options)
        loaded = identify(model, preprocessing, num_classes, wrap, device)
        config = config.replace(model_hash=loaded.digest)  # the model's content: a changed model is a new run
        check_budget(loaded.model, preprocessing, batch_size, runner, config.max_pixels)
        check_run_options(run_options, bench, config, device, runner)
    else:  # the benchmark reads results made elsewhere: the model is only a name
        name = model if isinstance(model, str) else model_key(model, model_options)
    spec = {"spec": model if isinstance(model, str) else name, **{k: v for k, v in model_options.items() if v is not None}}
    with opened_store(store) as st:
        config = resolve_related_runs(st, bench, config)
        known = {r.id for r in st.list_runs(benchmark=bench.name, model=name)}
        run_id = st.register_run(name, bench.name, bench.dataset_id(config), config.to_dict(), spec)
        work = RunWork(st, run_id, bench, config, fingerprint, known)
        stats, keys = work.compute(lambda: _model_ref(model, preprocessing, num_classes, device, wrap, loaded),
                                   runner, batch_size=batch_size, progress=progress)
        result = finish_run(st, run_id, bench, config, keys, pending=work.pending)
    result.units_computed = stats.units
    result.units_total = len(keys)
    result.seconds = time.perf_counter() - start
    result.executor = runner.name
    result.events = stats.events
    return result


def split_options(bench: Benchmark, executor: Any, options: Mapping[str, Any]) -> tuple[dict, dict]:
    """``(benchmark options, executor options)`` of ``evaluate``'s keyword options: each goes to the
    plugin whose schema declares it (``None``: not given, dropped). An option neither declares is
    refused: naming the executor that takes it (``add --executor ray``), else with a did-you-mean
    from the benchmark's schema."""
    from .executor import EXECUTORS, executor_of_option

    bench_schema = bench.schema()
    name = executor if isinstance(executor, str) else getattr(executor, "name", "")
    cls = EXECUTORS.get(executor) if isinstance(executor, str) else type(executor)
    exec_schema = cls.schema() if hasattr(cls, "schema") else OptionSchema(f"executor {name!r}")
    bench_options: dict[str, Any] = {}
    executor_options: dict[str, Any] = {}
    unknown = []
    for key, value in options.items():
        if value is None:
            continue
        if key in bench_schema:
            bench_options[key] = value
        elif key in exec_schema:
            executor_options[key] = value
        else:
            unknown.append(key)
    for key in unknown:
        if key in bench_schema.hints:
            raise bench_schema.refusal([key])
        owner = executor_of_option(key)
        if owner is not None and owner != name:
            flag = "--" + key.replace("_", "-")
            raise InputError(f"{key} ({flag}) is an option of the {owner} executor; add --executor {owner}.")
    if unknown:
        raise bench_schema.refusal(unknown, also=exec_schema.names())
    return bench_options, executor_options


def run_config(bench: Benchmark, data: str | Path, options: Mapping[str, Any], device: str | None, *,
               tag: str | None = None, max_pixels: int | None = None,
               run_options: RunOptions | None = None) -> RunConfig:
    """The run's config: the benchmark's (from its options, with device-dependent defaults), plus the
    ``tag``, ``max_pixels`` and run options (precision, ...) that are part of any run's identity when
    given (the defaults add nothing, so runs stored before them keep their ids)."""
    config = bench.config_for(data, **bench.evaluation_options(dict(options), device))
    if run_options is not None:
        config = config.replace(**run_options.config())
    if tag is not None:
        if not isinstance(tag, str) or not tag.strip():
            raise InputError(f"tag must be a non-empty string; got {tag!r}.")
        config = config.replace(tag=tag)
    if max_pixels is not None:  # which images are skipped as too large changes the numbers
        from ..data.images import check_max_pixels

        config = config.replace(max_pixels=check_max_pixels(max_pixels))
    return config


def check_run_options(options: RunOptions, bench: Benchmark, config: RunConfig, device: str | None,
                      runner: Any) -> None:
    """Refuse, before the run is registered, run options that cannot run here (see
    :meth:`RunOptions.check`); ``--decode gpu`` runs with the local executor only."""
    if options == RunOptions():
        return
    from ..models.protocol import select_device

    if options.decode == "gpu" and getattr(runner, "name", "") != "local":
        raise InputError(f"--decode gpu runs with the local executor (its workers send the JPEG bytes to this "
                         f"process's GPU); with --executor {runner.name} use --decode cpu (the default).")
    options.check(select_device(device), reads_files=bench.reads_files(config))


def resolve_related_runs(store, bench: Benchmark, config: RunConfig) -> RunConfig:
    """``config`` after failing early when a run the metrics need is missing; a config field holding
    a run id prefix (``clean_run``) gets the full id."""
    for key, ref in bench.related_runs(config).items():
        full_id = store.get_run(ref).id
        if key in config.field_names() and getattr(config, key) == ref and full_id != ref:
            config = config.replace(**{key: full_id})
    return config


def _model_ref(model: object, preprocessing: Any, num_classes: int | None, device: str | None, wrap: Any, loaded):
    """What the executor loads the model from (reusing the model built to identify it)."""
    from ..models.protocol import select_device
    from .executor import ModelRef

    return ModelRef(model, preprocessing, num_classes, select_device(device), wrap,
                    loaded=loaded.model if loaded is not None else None,
                    digest=loaded.digest if loaded is not None and loaded.model is not None else None)


class RunWork:
    """The pending units of a registered run, computed under a :class:`~robustlab.engine.leases.RunHolder`
    (other drivers on the same store share the units, see :mod:`robustlab.engine.leases`)."""

    def __init__(self, store, run_id: str, bench: Benchmark, config: RunConfig, fingerprint: str,
                 known: set[str]) -> None:
        self.store, self.run_id, self.bench, self.config = store, run_id, bench, config
        self.fingerprint, self.known = fingerprint, known
        self.pending = False

    def compute(self, model_ref: Callable[[], Any], runner, *, batch_size: int, progress) -> tuple[Any, list[str]]:
        """``(ExecutionStats, unit keys)``: runs the executor over the units not stored yet. A run
        that fails before anything is stored is removed (no empty run is left behind); otherwise
        it is marked interrupted or failed."""
        from .executor import ExecutionStats
        from .leases import RunHolder
        from .work import UnitStream

        st, run_id = self.store, self.run_id
        with RunHolder(st, run_id) as holder:
            def units() -> UnitStream:
                return UnitStream(self.bench, self.config, st.unit_meta(run_id), fingerprint=self.fingerprint,
                                  claim=holder.claim)

            stream = units()
            stream.verify()
            stats = ExecutionStats()
            self.pending = stream.peek() is not None or bool(stream.deferred)
            if self.pending:
                st.set_run_status(run_id, "running")
                try:
                    ref = model_ref()
                    stats = holder.compute(lambda s: runner.run(ref, self.bench, self.config, s, st, run_id,
                                                                batch_size=batch_size, progress=progress,
                                                                description=f"{self.bench.name} {run_id[:6]}"),
                                           stream, units)
                except BaseException as exc:
                    with contextlib.suppress(Exception):
                        if run_id not in self.known and not st.completed_units(run_id) and not holder.others():
                            st.delete_run(run_id)  # nothing computed (e.g. the model cannot be built): leave no run
                        else:
                            holder.end("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
                    raise
        return stats, stream.keys


def finish_run(store, run_id: str, bench: Benchmark, config: RunConfig, keys: list[str], *,
               pending: bool) -> EvaluationResult:
    """Compute the metrics when they are missing (or units were just computed) and return the stored result."""
    record = store.get_run(run_id)
    # every sample skipped, or no sample at all: an error, never "complete" with an empty table
    check_measured(store, run_id, expects_samples=bench.runs_model)
    if pending or record.status != "complete" or not store.get_metrics(run_id):
        compute_metrics(store, run_id, bench, config, keys)
    return load_result(store, run_id, benchmark=bench)


def identify(model: object, preprocessing: Any, num_classes: int | None, wrap: Any, device: str | None):
    """The model's :class:`~robustlab.models.identity.ModelIdentity` (its content hash, and the
    model when it had to be built for it, on the run's device: the executor reuses it, so a run
    builds and hashes its model once)."""
    from ..models.identity import identify_model
    from ..models.protocol import select_device

    return identify_model(model, preprocessing=None if preprocessing is None else Preprocessing.from_dict(preprocessing),
                          num_classes=num_classes, wrap=wrap, device=select_device(device))


def check_budget(model: Any, preprocessing: Any, batch_size: int, runner: Any, max_pixels: int | None) -> None:
    """The images this run will make must fit in memory (see
    :func:`robustlab.engine.options.check_preprocessing_budget`): checked with the model's own
    preprocessing when it was built, else with the override given."""
    from .options import check_preprocessing_budget

    prep = getattr(model, "preprocessing", None) if model is not None else None
    if prep is None and preprocessing is not None:
        prep = Preprocessing.from_dict(preprocessing)
    workers = getattr(runner, "workers", None)
    check_preprocessing_budget(prep, int(batch_size), int(workers) if isinstance(workers, int) else 1,
                               max_pixels=max_pixels)


def _canonical_wrap(wrap):
    if not wrap:
        return None
    from ..models.wrappers import canonical_wrap  # imports torch: only when the run wraps its model

    return canonical_wrap(wrap)


def check_device(device: str | None) -> None:
    """Refuse a malformed device name before anything runs (torch, which decides whether the
    device exists, is imported only when a model must run)."""
    text = "auto" if device is None else str(device)
    if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", text):
        raise InputError(f"unknown device {device!r}: use auto, cpu, cuda, cuda:N or mps.")


def check_measured(store, run_id: str, *, expects_samples: bool = True) -> None:
    """Raise when the run's stored units measured no sample at all: every one was skipped as a
    problem (unreadable, too small, too large...), or the data held none (zero images, arrays of
    zero rows; when ``expects_samples``: a benchmark that runs a model). Its metrics would be an
    empty table. The run is marked failed; the error names what was found and the fix.

    Raises
    ------
    DataError
    """
    from ..errors import DataError

    metas = store.unit_meta(run_id)
    measured = sum(int(m.get("n_samples", 0)) for m in metas.values())
    skipped = sum(int(m.get("n_skipped", 0)) for m in metas.values())
    if measured or (not skipped and not expects_samples):
        return
    if not skipped:
        with contextlib.suppress(Exception):
            store.set_run_status(run_id, "failed")
        record = store.get_run(run_id)
        raise DataError(f"run {run_id} has no samples to measure: its data ({record.dataset}) holds none in the "
                        f"settings asked for ({len(metas)} unit(s), 0 samples; e.g. empty folders or arrays of zero "
                        "rows). Nothing was measured, so the run has no numbers: check the data.")
    problems = store.problems(run_id)
    example = f" (e.g. {problems[0][1]}: {problems[0][2]})" if problems else ""
    with contextlib.suppress(Exception):
        store.set_run_status(run_id, "failed")
    raise DataError(f"every sample of run {run_id} was skipped: {skipped} of {skipped}{example}. Nothing was "
                    f"measured, so the run has no numbers. {skipped_fix(problems[0][2] if problems else '')}")


def skipped_fix(message: str) -> str:
    """What to do about samples skipped for the reason ``message`` says: the preprocessing asked for
    (a crop larger than the images: a changed --crop or --resize is a new run by itself), the pixel
    limit, or the files themselves (then a new run over the fixed data: --tag)."""
    text = message.lower()
    if "crop" in text or "resize" in text:
        return ("The images are smaller than the preprocessing asks for: give a --resize at least as large as the "
                "--crop, or a smaller --crop (the model's input size); a changed preprocessing is a new run by itself.")
    if "over the limit" in text:
        return "The images are larger than --max-pixels allows: raise it (a new run by itself)."
    return ("Fix or replace the files, then evaluate again with --tag NAME (the data changed).")


def compute_metrics(store, run_id: str, benchmark: Benchmark, config: RunConfig | Mapping[str, Any],
                    unit_keys: list[str]) -> None:
    """Recompute a run's metrics from its stored predictions and mark it complete."""
    predictions = store.read_predictions(run_id, unit_keys, lazy=True)
    missing = sorted(set(unit_keys) - set(predictions))
    if missing:
        raise InputError(f"run {run_id} is missing {len(missing)} units (e.g. {missing[0]}); evaluate again to "
                         "finish it before computing metrics.")
    config = benchmark.config_of(config)
    related = {alias: store.read_predictions(rid, lazy=True) for alias, rid in benchmark.related_runs(config).items()}
    rows = benchmark.metrics(config, predictions, related)
    store.put_metrics(run_id, rows)
    store.set_run_status(run_id, "complete")


def load_result(store, run: str, *, benchmark: Benchmark | None = None) -> EvaluationResult:
    """The stored result of a run (id or unique prefix), as :func:`evaluate` returns it.

    A run whose benchmark this robustlab does not know (a plugin not installed), or whose stored
    config another version wrote, is returned with its metric rows and a notice, not an error."""
    from ..errors import RobustlabError

    record = store.get_run(run)
    metrics = sorted(store.get_metrics(record.id), key=lambda r: (r[1], r[0]))
    notices: list[str] = []
    try:
        bench = benchmark or get_benchmark(record.benchmark)
    except RobustlabError:
        bench = None
        notices.append(f"benchmark {record.benchmark!r} is not known to this robustlab (a plugin that is not installed, "
                       "or another version): metrics are shown as stored.")
    summary: dict = {}
    notes: list[str] = [f"run is {record.status}: no metrics yet; evaluate again to finish it."]
    if metrics and bench is not None:
        try:
            config, shown = bench.config_of(record.config), presentation_of(bench)
            summary, notes = shown.summary(config, metrics), shown.notes(config, metrics)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # stored by another version
            summary, notes = {}, []
            notices.append(f"this run was stored by another robustlab version; its summary cannot be rebuilt "
                           f"({type(exc).__name__}: {exc}), so the metric rows are shown as stored.")
    elif metrics:
        notes = []
    limited = limit_note(record.config)
    if limited:
        notices.append(limited)
    environments = distinct_environments(meta.get("environment") for meta in store.unit_meta(record.id).values())
    differ = describe_differences(environments, noun="environment")
    if differ:
        notices.append(f"the units of this run were computed in {len(environments)} environments; they differ in "
                       + "; ".join(differ))
    return EvaluationResult(
        run_id=record.id, model=record.model, benchmark=record.benchmark, dataset=record.dataset,
        config=record.config, status=record.status, metrics=metrics, summary=summary, notes=notices + notes,
        problems=store.problems(record.id), units_total=record.n_units_done, environments=environments,
    )

