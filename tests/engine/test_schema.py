"""Benchmarks and executors declare their options once (a schema); the engine passes them only those,
the command line's options and --help come from the same records, and unknown options get a
did-you-mean from the schema."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.engine import BENCHMARKS, Benchmark, RunConfig, Unit, evaluate, get_benchmark, list_benchmarks
from robustlab.engine.executor import EXECUTORS, get_executor
from robustlab.engine.schema import Option, OptionSchema
from robustlab.errors import InputError

RUNNER = CliRunner()


def help_text(*args: str) -> str:
    result = RUNNER.invoke(app, ["evaluate", *args, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("name", list_benchmarks())
def test_configure_takes_exactly_the_declared_options(name):
    """The schema is the only record: configure's keyword parameters are the declared names (a
    family's subclass options arrive through its **keyword catch-all)."""
    cls = BENCHMARKS.get(name)
    params = inspect.signature(cls.configure).parameters
    keywords = {p for p, v in params.items() if v.kind is inspect.Parameter.KEYWORD_ONLY}
    declared = set(cls.schema().names())
    catch_all = any(v.kind is inspect.Parameter.VAR_KEYWORD for v in params.values())
    assert keywords <= declared | {"label_mode"}, keywords - declared
    assert declared <= keywords or catch_all, declared - keywords
    for option in cls.schema():
        assert option.help, f"{name}: option {option.name} has no help"


def test_the_schema_resolves_defaults_and_refuses_unknown_options_with_a_suggestion():
    schema = OptionSchema("benchmark 'x'", [Option("limit", "int"), Option("seed", "int", 0)],
                          hints={"corruptions": "x takes no corruptions."})
    assert schema.resolve({"limit": 3, "seed": None}) == {"limit": 3, "seed": 0}
    with pytest.raises(InputError, match="does not take the option limmit. Did you mean 'limit'"):
        schema.resolve({"limmit": 3})
    with pytest.raises(InputError, match="x takes no corruptions"):
        schema.resolve({"corruptions": "fog"})
    assert Option("eps", "value").parse_text("[0, 0.5]") == [0, 0.5]
    assert Option("eps", "value").parse_text("0,0.5") == "0,0.5"
    assert Option("clean_run", "str").parse_text("1234") == "1234"
    assert Option("nested", "bool").parse_text("yes") is True
    with pytest.raises(InputError, match="--seed must be an integer"):
        Option("seed", "int").parse_text("one")


@dataclass(frozen=True, kw_only=True)
class RecorderConfig(RunConfig):
    limit: int | None
    colour: str


class Recorder(Benchmark):
    """A benchmark that records what configure gets."""

    name = "test-schema-recorder"
    options = (Option("limit", "int", help="n"), Option("colour", "str", "red", help="c", choices=("red", "blue")))
    config_class = RecorderConfig
    seen: list = []

    def configure(self, data, *, limit, colour):
        self.seen.append({"limit": limit, "colour": colour})
        return RecorderConfig(data=data, limit=limit, colour=colour)

    def plan(self, config):
        return [Unit("u", "all")]


@pytest.fixture
def recorder():
    BENCHMARKS.add(Recorder.name, Recorder)
    Recorder.seen = []
    yield Recorder
    BENCHMARKS.remove(Recorder.name)


def test_evaluate_passes_a_benchmark_only_what_it_declares(recorder, tmp_path):
    config = get_benchmark(recorder.name).config_for(tmp_path, limit=2)
    assert config.colour == "red" and recorder.seen == [{"limit": 2, "colour": "red"}]
    with pytest.raises(InputError, match="unknown colour 'green'"):
        get_benchmark(recorder.name).config_for(tmp_path, colour="green")
    # the engine no longer sends corruptions, severities or save_logits to every benchmark
    with pytest.raises(InputError, match="does not take the option severities"):
        evaluate("python:nowhere.py:f", recorder.name, tmp_path, store=tmp_path / "s", severities="1-5")
    with pytest.raises(InputError, match="Did you mean 'colour'"):
        evaluate("python:nowhere.py:f", recorder.name, tmp_path, store=tmp_path / "s", color="red")
    with pytest.raises(InputError, match="actors .--actors. is an option of the ray executor; add --executor ray"):
        evaluate("python:nowhere.py:f", recorder.name, tmp_path, store=tmp_path / "s", actors=2)


def test_help_lists_the_chosen_benchmark_s_and_executor_s_options():
    imagenet_c = help_text("-b", "imagenet-c")
    assert "Options of the imagenet-c benchmark" in imagenet_c
    for flag in ("--on-the-fly", "--corruption-backend", "--clean-data", "--workers"):
        assert flag in imagenet_c
    assert "--perturbations" not in imagenet_c and "--actors" not in imagenet_c
    perturbed = help_text("-b", "perturbed")
    assert "--perturbations" in perturbed and "--corruptions" not in perturbed and "--difficulty" in perturbed
    ray = help_text("-b", "corrupted", "-e", "ray")
    assert "Options of the ray executor" in ray and "--actors" in ray and "--ray-address" in ray
    plain = help_text()
    assert "--corruptions" not in plain and "--workers" in plain


def test_the_cli_refuses_an_unknown_option_with_a_suggestion_from_the_schema(tmp_path):
    result = RUNNER.invoke(app, ["evaluate", "-m", "python:x.py:f", "-b", "perturbed", "-d", str(tmp_path),
                                 "--store", str(tmp_path / "s"), "--perturbation", "rotate", "--no-progress"])
    assert isinstance(result.exception, InputError), result.output
    assert "does not take the option perturbation. Did you mean 'perturbations'" in str(result.exception)
    typed = RUNNER.invoke(app, ["evaluate", "-m", "python:x.py:f", "-b", "perturbed", "-d", str(tmp_path),
                                "--store", str(tmp_path / "s"), "-O", "difficulty=two", "--no-progress"])
    assert "must be an integer" in str(typed.exception)


def test_executors_are_built_from_their_declared_options():
    assert get_executor("local", workers=0).workers == 0
    with pytest.raises(InputError, match="does not take the option worker. Did you mean 'workers'"):
        get_executor("local", worker=1)
    assert [o.name for o in EXECUTORS.get("ray").schema()] == ["ray_address", "workers", "actors", "stall_timeout"]
