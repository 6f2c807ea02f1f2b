"""The environment record (robustlab.environment), `robustlab doctor`, and where the record shows:
every stored unit, `show`, and a report that puts runs from different environments side by side."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from robustlab import environment as envmod
from robustlab.cli import app
from robustlab.doctor import run_doctor
from robustlab.engine.evaluation import load_result
from robustlab.report.render import environment_notice, render_html, render_markdown
from robustlab.store import open_store


def test_record_names_the_versions_the_cpu_and_the_lock():
    record = envmod.environment_record()
    assert set(envmod.RECORDED_PACKAGES) == set(record["packages"])
    assert record["packages"]["numpy"] == np.__version__
    assert record["cpu"] and record["python"] and record["robustlab"]
    assert "gpu" not in record  # no model ran on a GPU in this process
    assert record["lock"]["applies"] is envmod.lock_applies()
    assert json.loads(json.dumps(record)) == record
    line = envmod.summarize(record)
    assert f"numpy {np.__version__}" in line and "CPU " in line


def test_locked_versions_come_from_the_shipped_lock():
    full, base = envmod.locked_versions("full"), envmod.locked_versions("base")
    assert {"numpy", "torch", "opencv-python-headless", "av"} <= set(base) <= set(full)
    assert "pytest" in full and "pytest" not in base
    assert all(full[name] == version for name, version in base.items())  # one set of versions


def test_a_differing_package_is_named_with_both_versions(monkeypatch):
    real = envmod.installed_version
    monkeypatch.setattr(envmod, "installed_version", lambda n: "0.0.1" if n == "numpy" else real(n))
    assert envmod.lock_differences(["numpy", "scipy"]) == {"numpy": ("0.0.1", envmod.locked_versions()["numpy"])}
    report = run_doctor(self_check=False)
    differs = [c for c in report.checks if c.name == "differs"]
    assert differs and "numpy 0.0.1 (locked " in differs[0].detail and differs[0].status == "warn"
    assert not report.failed  # a differing stack is allowed: it is said, not failed


def test_describe_differences_names_what_moved():
    a = {"python": "3.11.7", "cpu": "X", "packages": {"numpy": "2.4.6", "torch": "2.14.1"}}
    b = {"python": "3.11.7", "cpu": "Y", "packages": {"numpy": "2.3.1", "torch": "2.14.1"}}
    lines = envmod.describe_differences([a, b, a])
    assert "numpy: 2.4.6 (2 runs), 2.3.1 (1 run)" in lines and any(line.startswith("cpu: X") for line in lines)
    assert not any(line.startswith(("torch", "python")) for line in lines)
    assert envmod.describe_differences([a, a]) == [] and envmod.describe_differences([a]) == []
    assert envmod.distinct_environments([a, None, b, a, {}]) == [a, b]


def test_doctor_passes_here_and_fails_when_a_kernel_is_off(monkeypatch):
    runner = CliRunner()
    out = runner.invoke(app, ["doctor", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    status = {c["name"]: c["status"] for c in data["checks"]}
    assert data["ok"] and status["corruptions"] == "ok" and status["store"] == "ok"
    assert status["codec"] in ("ok", "warn") and "CUDA" in status and "Ray" in status
    import robustlab.corruptions as corruptions

    real = corruptions.corrupt
    monkeypatch.setattr(corruptions, "corrupt", lambda image, name, severity, rng=None: real(
        image, name, severity, rng=rng) // 2 * 2)  # one grey level off on odd values
    out = runner.invoke(app, ["doctor"])
    assert out.exit_code == 1 and "[fail] corruptions" in out.output and "golden cells differ" in out.output


def _store_with_two_environments(path):
    columns = {"sample_id": np.array(["a", "b"]), "label": np.array([0, 1], np.int64)}
    here = envmod.environment_record()
    there = {**here, "packages": {**here["packages"], "numpy": "1.26.4"}, "cpu": "Other CPU"}
    with open_store(path) as st:
        runs = []
        for i, env in enumerate((here, there)):
            run = st.register_run(f"m{i}", "corrupted", "data", {"i": i})
            st.write_unit(run, "u0", columns, meta={"n_samples": 2, "environment": env})
            st.set_run_status(run, "complete")
            runs.append(run)
        mixed = st.register_run("m2", "corrupted", "data", {"i": 2})
        st.write_unit(mixed, "u0", columns, meta={"environment": here})
        st.write_unit(mixed, "u1", columns, meta={"environment": there})
    return runs, mixed


def test_show_prints_the_environment_and_warns_when_units_differ(tmp_path):
    runs, mixed = _store_with_two_environments(tmp_path / "st")
    with open_store(tmp_path / "st", must_exist=True) as st:
        one = load_result(st, runs[0])
        both = load_result(st, mixed)
    assert len(one.environments) == 1 and one.to_dict()["environment"]["cpu"] == envmod.cpu_model()
    assert "environment: robustlab" in one.table()
    assert len(both.environments) == 2 and both.to_dict()["environment"] is None
    assert any("2 environments" in n and "numpy" in n and "Other CPU" in n for n in both.notes)


def test_a_report_says_when_runs_come_from_different_environments(tmp_path):
    runs, _ = _store_with_two_environments(tmp_path / "st")
    with open_store(tmp_path / "st", must_exist=True) as st:
        results = [load_result(st, r) for r in runs]
    notice = environment_notice(results)
    assert "2 different environments" in notice and "numpy" in notice and "Other CPU" in notice
    assert environment_notice(results[:1]).startswith("Computed in one environment: robustlab")
    assert "2 different environments" in render_markdown(results)
    assert "2 different environments" in render_html(results)


def test_every_stored_unit_records_its_environment(tmp_path):
    from robustlab.demo.world import write_scene_folders
    from robustlab.engine import evaluate

    data = write_scene_folders(tmp_path / "scenes", n_train=10, n_test=20)
    result = evaluate("demo:cnn", "corrupted", data=str(data["val"]), store=tmp_path / "st",
                      corruptions="gaussian_noise", severities=[1], workers=0, progress=False)
    with open_store(tmp_path / "st", must_exist=True) as st:
        metas = st.unit_meta(result.run_id)
    assert metas and all(m["environment"]["packages"]["torch"] for m in metas.values())
    assert len(result.environments) == 1 and result.environments[0]["cpu"] == envmod.cpu_model()
