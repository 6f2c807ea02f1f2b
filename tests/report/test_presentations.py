"""A benchmark's runs are shown by its registered presentation: the report groups them by its family
and builds the family's section with it (a plugin's too), with no family name known to the report."""

from __future__ import annotations

from types import SimpleNamespace

from robustlab.engine import Benchmark, Presentation, register_presentation
from robustlab.engine.benchmark import BENCHMARKS, get_benchmark, list_benchmarks
from robustlab.engine.presentation import PRESENTATIONS, presentation_of
from robustlab.report.render import headline
from robustlab.report.section_base import Section
from robustlab.report.sections import build_sections


def test_every_benchmark_is_shown_by_its_registered_presentation():
    families = {}
    # robustlab's own; a benchmark another test module registers in the same process is its own to check
    own = [n for n in list_benchmarks() if type(get_benchmark(n)).__module__.startswith("robustlab.")]
    for name in own:
        bench = get_benchmark(name)
        shown = presentation_of(bench)
        assert type(shown) is PRESENTATIONS.get(bench.presentation) and shown.benchmark is bench
        families.setdefault(shown.family_name(), set()).add(name)
    assert families["corruption"] == {"imagenet-c", "corrupted"}
    assert families["perturbation"] == {"imagenet-p", "perturbed"}
    assert families[""] == {"imagenet-vid-robust-detection"}  # the report's generic section
    assert {"imagenet-3dcc", "laion-c"} <= set(families)  # robustlab's plugin files, the same route


def result(benchmark: str, run_id: str) -> SimpleNamespace:
    return SimpleNamespace(benchmark=benchmark, run_id=run_id, model="m", dataset="/d", config={"data": "/d"},
                           run_config=None, summary={}, notes=[], metrics=[("accuracy", "", 0.5)])


def test_a_plugin_s_presentation_builds_its_family_s_section_and_headline():
    def section(results, context=None):
        return Section("mine", "My family", f"{len(results)} runs of {sorted({r.benchmark for r in results})}")

    @register_presentation
    class Mine(Presentation):
        name = "test-mine"
        family = "test-family"
        section_builder = staticmethod(section)
        headline_builder = staticmethod(lambda r, results=(), store=None: [f"mine {r.run_id}"])

    benchmarks = []
    for name in ("test-mine-a", "test-mine-b"):
        cls = type(name.replace("-", "_"), (Benchmark,), {"name": name, "presentation": "test-mine"})
        BENCHMARKS.add(name, cls)
        benchmarks.append(name)
    try:
        runs = [result("test-mine-a", "a" * 12), result("test-mine-b", "b" * 12), result("not-installed", "c" * 12)]
        sections = build_sections(runs)
        assert [s.title for s in sections] == ["My family", "Other benchmarks"]
        assert sections[0].intro == "2 runs of ['test-mine-a', 'test-mine-b']"
        assert headline(runs[0], runs) == "mine aaaaaaaaaaaa"
        assert headline(runs[2], runs) == "1 metrics"  # not installed: its first numbers
    finally:
        for name in benchmarks:
            BENCHMARKS.remove(name)
        PRESENTATIONS.remove("test-mine")
