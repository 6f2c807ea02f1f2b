"""`robustlab review serve --demo`: the demo set is served, with demo accounts printed once."""

from __future__ import annotations

import shutil

import uvicorn

from robustlab.review.demo import DEMO_USERS
from robustlab.review.server import run_server

from .helpers import login, shown_task


def test_serve_demo_prints_accounts_that_work(demo_set_source, tmp_path, monkeypatch):
    demo_dir = tmp_path / "demo"
    shutil.copytree(demo_set_source, demo_dir / "set")  # an already built demo set is reused
    served = []
    # uvicorn.run would block until Ctrl+C: keep the app it is given instead
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append((app, kw)))
    lines = []
    run_server(None, demo=True, demo_dir=demo_dir, port=8123, log=lines.append)
    (app, options), = served
    assert options["host"] == "127.0.0.1" and options["port"] == 8123 and options["workers"] == 1
    passwords = {}
    for line in lines:
        if line.strip().startswith("demo account"):
            name = line.split("'")[1]
            passwords[name] = line.rsplit(" ", 1)[1]
    assert set(passwords) == {name for name, _ in DEMO_USERS}
    assert any("serving 10 tasks" in line for line in lines)
    ana = login(app, "ana", passwords["ana"])
    assert shown_task(ana) == 0
    assert login(app, "admin", passwords["admin"]).get("/admin").status_code == 200

    # a second start keeps the accounts and prints no password
    lines.clear()
    run_server(None, demo=True, demo_dir=demo_dir, log=lines.append)
    assert not any("password" in line for line in lines)
    assert (demo_dir / "set" / "review.db").is_file()


def test_serving_beyond_this_machine_warns(demo_set_source, tmp_path, monkeypatch):
    shutil.copytree(demo_set_source, tmp_path / "set")
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    lines = []
    run_server(tmp_path / "set", host="0.0.0.0", log=lines.append)
    assert any("no users yet" in line and "add-user" in line for line in lines)
    assert any("HTTPS proxy" in line and "--secure-cookies" in line for line in lines)
