"""A run's config is a frozen dataclass, but its stored form is what it always was: the golden configs
(tests/fixtures/configs_v1.json, written before the configs were dataclasses by config_cases.py) come
out key for key and value for value, so run ids do not change. And the values the configs are built
from: a setting's text is read back in one place, a config field that does not exist fails at once."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path

import pytest

from robustlab.engine import Benchmark, RunConfig, Setting, Unit, conditional, register_benchmark
from robustlab.engine.benchmark import BENCHMARKS, get_benchmark, list_benchmarks
from robustlab.engine.setting import parse_unit_key, setting_of, unit_key
from robustlab.errors import InputError

from .config_cases import CASES, compute

GOLDEN = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "configs_v1.json").read_text())


def test_the_stored_configs_are_those_of_the_previous_version(tmp_path):
    assert sorted(GOLDEN) == sorted(CASES)
    made = compute(tmp_path)
    for case, golden in GOLDEN.items():
        assert made[case] == golden, case


def test_every_benchmark_s_config_reads_back_its_stored_form(tmp_path):
    """``config_of(to_dict())`` gives the same config (the stored form is lossless)."""
    for case, (benchmark, _, _) in CASES.items():
        bench = get_benchmark(benchmark)
        config = bench.config_of(GOLDEN[case])
        assert isinstance(config, bench.config_class)
        assert config.to_dict() == GOLDEN[case], case


def test_a_stored_config_with_keys_this_version_does_not_know_keeps_them():
    stored = {**GOLDEN["corrupted"], "from_a_later_version": [1, 2]}
    config = get_benchmark("corrupted").config_of(stored)
    assert config.extra == {"from_a_later_version": [1, 2]} and config.to_dict() == stored
    with pytest.raises(TypeError, match="missing"):  # a config another version wrote without a field: noticed
        get_benchmark("corrupted").config_of({"data": "/d"})


def test_a_mistyped_field_fails_at_once():
    config = get_benchmark("corrupted").config_of(GOLDEN["corrupted"])
    with pytest.raises(AttributeError):
        config.severites  # noqa: B018
    with pytest.raises(TypeError, match="read config.severities"):
        config["severities"]  # noqa: B018
    with pytest.raises(TypeError, match="severites"):
        config.replace(severites=[1])
    with pytest.raises(FrozenInstanceError):
        config.seed = 3  # type: ignore[misc]


def test_conditional_fields_are_stored_only_when_they_apply():
    @dataclass(frozen=True, kw_only=True)
    class Config(RunConfig):
        limit: int | None = None
        limit_order: str | None = conditional()
        keep_input_size: bool = conditional(False)
        layout: str = "folders"
        labels: str | None = conditional(when=lambda c: c.layout == "cifar")

    assert Config(data="/d").to_dict() == {"data": "/d", "limit": None, "layout": "folders"}
    assert Config(data="/d", keep_input_size=True, limit_order="path").to_dict() == {
        "data": "/d", "limit": None, "layout": "folders", "keep_input_size": True, "limit_order": "path"}
    assert Config(data="/d", layout="cifar").to_dict()["labels"] is None  # stored, as None
    assert Config.from_dict({"data": "/d", "limit": 2}).keep_input_size is False  # the default when not stored
    assert Config(data="/d", tag="x", precision="bf16").to_dict()["tag"] == "x"  # the engine's fields


@pytest.mark.parametrize("text,shift,level", [("fog/3", "fog", 3), ("clean", "clean", None),
                                              ("gaussian_noise_2", "gaussian_noise_2", None),
                                              ("fgsm/linf", "fgsm/linf", None), ("fog/0", "fog", 0),
                                              ("k/03", "k/03", None), ("class/a/12", "class/a", 12)])
def test_a_setting_s_text_is_read_back_in_one_place(text, shift, level):
    setting = Setting.parse(text)
    assert (setting.shift, setting.level) == (shift, level) and str(setting) == text
    assert parse_unit_key(unit_key(setting, 7)) == (setting, 7) and setting_of(f"{text}/shard-0012") == text
    assert parse_unit_key(text) == (setting, None)  # a unit named as a plugin names it


def test_a_setting_refuses_what_its_text_could_not_say():
    with pytest.raises(InputError, match="ends in a level"):
        Setting("fog/3")
    with pytest.raises(InputError, match="non-negative integer"):
        Setting("fog", -1)
    with pytest.raises(InputError, match="non-empty"):
        Setting.parse("")


def test_units_take_a_setting_or_its_text():
    assert Unit("u", "fog/3").setting == Setting("fog", 3)
    unit = Unit.of(Setting("fog", 3), 2, {"start": 0})
    assert (unit.key, unit.setting, unit.params) == ("fog/3/shard-0002", Setting("fog", 3), {"start": 0})


def test_every_built_in_benchmark_declares_a_config_and_a_presentation():
    from robustlab.benchmarks import BUILTIN

    # robustlab's own (built-in families and bundled plugins); benchmarks that other test modules
    # register in the same process (test_streaming's event log...) are theirs to check
    own = [n for n in list_benchmarks() if BENCHMARKS.get(n).__module__.startswith("robustlab.")]
    assert set(BUILTIN) <= set(own)
    for name in own:
        cls = BENCHMARKS.get(name)
        assert cls.config_class is not RunConfig and issubclass(cls.config_class, RunConfig), name
        assert cls.presentation, name


def test_a_benchmark_must_return_its_config_class(tmp_path):
    class Old(Benchmark):
        name = "test-old-style"

        def configure(self, data):
            return {"data": data}

    with pytest.raises(InputError, match="configure returned a dict, not its config class RunConfig"):
        Old().config_for(tmp_path)


def test_a_benchmark_that_still_presents_its_runs_is_told_where_that_went():
    with pytest.raises(InputError, match="defines notes, family: how runs are presented is a Presentation"):
        @register_benchmark
        class Presenting(Benchmark):
            name = "test-presenting"
            family = "mine"

            def notes(self, config, metrics):
                return []
    assert "test-presenting" not in list_benchmarks()
