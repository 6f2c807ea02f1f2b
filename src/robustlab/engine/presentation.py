"""How a benchmark's runs are presented: one registered object per family (or per benchmark).

A :class:`Presentation` holds everything that shows a run's stored metrics: its notes and summary
(:func:`robustlab.engine.load_result`, ``robustlab show --json``), the ``robustlab show`` layout,
the labels of its ratios, its headline metrics, and its report section with the summary row's
headline. A benchmark names its presentation (:attr:`robustlab.engine.Benchmark.presentation`); the
presentation says which report *family* its runs join (benchmarks of one family share a section).

Presentations are registered by name in :data:`PRESENTATIONS` (:func:`register_presentation`), an
entry-point group like the benchmarks' (``robustlab.presentations``): robustlab's own families
register theirs from :mod:`robustlab.report` (declared by the package root, imported when first
looked up), a plugin from its own module (e.g. the module of its benchmark). The engine never
imports one: it looks it up by name. A benchmark that names none gets :class:`Presentation` itself:
no notes, every metric row in ``show``, the report's generic section.

>>> p = Presentation(); p.text(None, {}, [("accuracy", "clean", 0.5)])
['accuracy                clean                   0.5']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InputError
from ..registry import Registry

if TYPE_CHECKING:
    from .config import RunConfig

#: One metric row: ``(name, setting, value)``, e.g. ``("ce", "fog", 0.83)``.
MetricRow = tuple[str, str, float]


@dataclass(frozen=True)
class HeadlineMetric:
    """A metric a benchmark's runs are summarised by (its declaration: name, label, unit).

    Attributes
    ----------
    name : str
        The metric row (setting ``""``), e.g. ``"mce"``.
    label : str
        How summaries print it (``"mCE"``).
    subset : str, optional
        The row that stands for it when only part of the benchmark was evaluated (``"mce_subset"``).
    percent : bool
        Printed as percent (fractions and ratios: ``0.767`` is ``76.7``); else as a plain number.
    compare : bool
        A column of the report's comparison of interventions with their plain model.
    setting : str or None
        The setting of the row (``""``: the run's overall value; ``"shifted"``...; None: the
        first row of that name whatever its setting).
    """

    name: str
    label: str
    subset: str | None = None
    percent: bool = True
    compare: bool = False
    setting: str | None = ""

    def value(self, metrics: Iterable[MetricRow]) -> tuple[float, bool] | None:
        """``(value, from the subset row)`` in a run's metric rows, or None."""
        rows = list(metrics)
        for key, partial in ((self.name, False), (self.subset, True)):
            found = [v for m, s, v in rows if key and m == key and (self.setting is None or s == self.setting)]
            if found:
                return float(found[0]), partial
        return None

    def text(self, metrics: Iterable[MetricRow]) -> str | None:
        """``"mCE 76.7"`` (``"mCE (subset) 80.1"``), or None when the run has neither row."""
        found = self.value(metrics)
        if found is None:
            return None
        value, partial = found
        return f"{self.label}{' (subset)' if partial else ''} {100 * value:.1f}" if self.percent else \
            f"{self.label}{' (subset)' if partial else ''} {value:.4g}"


def metric_rows_text(metrics: Iterable[MetricRow]) -> list[str]:
    """Every metric row as ``name  setting  value`` (the fallback layout)."""
    return [f"{name:<24}{setting:<24}{value:.6g}" for name, setting, value in metrics]


class Presentation:
    """How runs are shown; subclass it, set :attr:`name` and override what differs.

    An instance is made for one benchmark (:attr:`benchmark`, None for a run whose benchmark is not
    known), so a family's presentation may read what its benchmarks declare (a set's name...). The
    configs it receives are the benchmark's dataclass (:class:`~robustlab.engine.config.RunConfig`).

    Declarations: ``name`` (what :attr:`robustlab.engine.Benchmark.presentation` names), ``family``
    (the report section its runs share: None for ``name`` itself, ``""`` for the report's generic
    section), ``title`` (that section's title when it has no builder of its own), ``headline`` (the
    metrics its runs are summarised by, the first being the headline), and the report's builders of
    its section and summary-row headline, as functions (``staticmethod(fn)``) or by overriding
    :meth:`section` and :meth:`headline_parts`.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str | None] = None
    title: ClassVar[str] = ""
    headline: ClassVar[tuple[HeadlineMetric, ...]] = ()
    #: ``fn(results, context) -> Section``: the report section of its family's runs (None: the generic one).
    section_builder: ClassVar[Callable[..., Any] | None] = None
    #: ``fn(result, results, store) -> [str]``: a run's summary-row numbers (None: its headline metrics).
    headline_builder: ClassVar[Callable[..., list[str]] | None] = None

    def __init__(self, benchmark: Any = None) -> None:
        self.benchmark = benchmark

    @classmethod
    def family_name(cls) -> str:
        """The report family of its runs (``""``: the generic section)."""
        return cls.name if cls.family is None else cls.family

    # -- a stored result: load_result, robustlab show ------------------------------------------------

    def notes(self, config: RunConfig, metrics: Iterable[MetricRow]) -> list[str]:
        """Human-readable remarks on a result (e.g. why relative mCE is unavailable)."""
        return []

    def summary(self, config: RunConfig, metrics: Iterable[MetricRow]) -> dict[str, Any]:
        """A structured view of the metrics for ``robustlab show --json`` and ``to_dict``."""
        return {}

    def text(self, config: RunConfig, summary: dict[str, Any], metrics: Iterable[MetricRow]) -> list[str]:
        """The lines ``robustlab show`` prints between the run's header and its notes (default:
        every metric row). Families give their own layout (percent, as the papers)."""
        return metric_rows_text(metrics)

    def comparability(self, config: RunConfig) -> str | None:
        """A label for its ratios when they compare with nothing published (e.g. errors on the
        user's own data divided by AlexNet's published ImageNet errors: ``"vs published AlexNet
        (ImageNet), not comparable"``); None when they do, or when it reports no ratios."""
        return None

    def published_baseline(self, config: RunConfig) -> str | None:
        """What its ratios divide by when no baseline run is given (``"published AlexNet"``);
        None when it reports no such ratios (e.g. CIFAR-10-C: no published baseline)."""
        return None

    # -- the report ------------------------------------------------------------------------------------

    def section(self, results: Sequence, context: Any = None) -> Any:
        """The report section of the runs of its family (:class:`robustlab.report.Section`): its
        :attr:`section_builder`'s, or None: the report's generic section shows their metric rows under
        :attr:`title`."""
        return self.section_builder(results, context) if self.section_builder is not None else None

    def headline_parts(self, result: Any, results: Sequence = (), store: Any = None) -> list[str]:
        """The summary row's numbers of a run (``results``: the report's runs, ``store``: the open store
        or None, for what ratios divide by): its :attr:`headline_builder`'s, by default the texts of
        :attr:`headline`."""
        if self.headline_builder is not None:
            return self.headline_builder(result, results, store)
        return [text for h in self.headline if (text := h.text(result.metrics))]


#: Presentations by name, filled by the modules of the entry-point group ``robustlab.presentations``
#: (robustlab's own are declared by the package root).
PRESENTATIONS: Registry[type[Presentation]] = Registry("presentation", entry_points="robustlab.presentations")


def register_presentation(cls: type[Presentation]) -> type[Presentation]:
    """Class decorator: register a :class:`Presentation` subclass under its ``name``."""
    if not cls.name:
        raise InputError(f"presentation class {cls.__name__} needs a non-empty name.")
    PRESENTATIONS.add(cls.name, cls)
    return cls


def presentation_class(benchmark: Any) -> type[Presentation]:
    """The presentation class a benchmark (or its class) names; :class:`Presentation` when it names
    none (or for None)."""
    name = getattr(benchmark, "presentation", "") if benchmark is not None else ""
    return PRESENTATIONS.get(name) if name else Presentation


def presentation_of(benchmark: Any) -> Presentation:
    """The presentation of ``benchmark`` (a :class:`~robustlab.engine.Benchmark`; an instance for it):
    the one it names, else the generic one (also for None: a run whose benchmark is not known here)."""
    return presentation_class(benchmark)(benchmark)
