"""Bad input to the review commands: malformed TASKS, missing frames, duplicate users, unreachable databases."""

from __future__ import annotations

import json
import socket
import sys

import pytest

from robustlab.cli import main
from robustlab.errors import DataError, InputError, StoreError
from robustlab.review.server import add_user, build_service
from robustlab.review.tasks import read_task_set
from robustlab.video.sampling import TASKS


def run_cli(monkeypatch, capsys, *args: str, stdin: str | None = None) -> tuple[int, str]:
    """Run ``robustlab ARGS`` in this process through main(); returns (exit code, stdout + stderr)."""
    monkeypatch.setattr(sys, "argv", ["robustlab", *args])
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with pytest.raises(SystemExit) as exited:
        main()
    out = capsys.readouterr()
    return int(exited.value.code or 0), out.out + out.err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


GOOD = {"anchor": "frames/v/000010.jpg", "frame": "frames/v/000011.jpg", "offset": 1, "video": "v", "labels": [1]}
ANCHOR = {**GOOD, "frame": GOOD["anchor"], "offset": 0}


@pytest.mark.parametrize("third_line, message", [
    ("{not json", "line 3: not valid JSON"),
    ("[1, 2]", "line 3: a task must be a JSON object"),
    (json.dumps({**GOOD, "frame": "frames/v/000012.jpg", "anchor": None}), "line 3: anchor must be a frame key"),
    (json.dumps({**GOOD, "frame": "../../etc/passwd"}), "line 3: frame '../../etc/passwd' is not a relative path"),
    (json.dumps({**GOOD, "frame": "/etc/passwd"}), "line 3: frame '/etc/passwd' is not a relative path"),
    (json.dumps({**GOOD, "frame": "frames/v/000012.jpg", "offset": 0}), "line 3: offset 0 does not fit"),
    (json.dumps({**GOOD, "frame": "frames/v/000012.jpg", "labels": ["cat"]}), "line 3: labels must be a list"),
    (json.dumps({**GOOD, "frame": "frames/v/000012.jpg", "colour": 1}), "line 3: unknown field(s) ['colour']"),
    (json.dumps(GOOD), "line 3: the pair (frames/v/000010.jpg, frames/v/000011.jpg) is listed twice (first on line 2)"),
    (json.dumps({**GOOD, "frame": "frames/v/000012.jpg", "labels": [2]}), "line 3: anchor 'frames/v/000010.jpg' has"),
])
def test_malformed_tasks_name_the_line(tmp_path, third_line, message):
    path = tmp_path / TASKS
    path.write_text("\n".join([json.dumps(ANCHOR), json.dumps(GOOD), third_line]) + "\n")
    with pytest.raises(DataError) as err:
        read_task_set(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_malformed_tasks_from_the_command_line(tmp_path, monkeypatch, capsys):
    (tmp_path / TASKS).write_text(json.dumps(ANCHOR) + "\n\n{oops\n")
    code, out = run_cli(monkeypatch, capsys, "review", "serve", str(tmp_path / TASKS))
    assert code == 1 and "line 3: not valid JSON" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == [TASKS]  # nothing written
    (tmp_path / "empty.jsonl").write_text("# nothing\n")
    with pytest.raises(DataError, match="holds no tasks"):
        read_task_set(tmp_path / "empty.jsonl")
    with pytest.raises(DataError, match="does not exist"):
        read_task_set(tmp_path / "nope.jsonl")


def test_missing_frames_are_listed_and_the_server_refuses_to_start(task_dir, monkeypatch, capsys):
    tasks = read_task_set(task_dir / TASKS)
    gone = sorted(tasks.frame_files)[:2]
    for key in gone:
        (task_dir / key).unlink()
    with pytest.raises(DataError) as err:
        build_service(task_dir / TASKS)
    message = str(err.value)
    assert "2 frame(s)" in message and all(str(task_dir / key) in message for key in gone)
    assert "does not start" in message
    code, out = run_cli(monkeypatch, capsys, "review", "serve", str(task_dir / TASKS), "--port", "1")
    assert code == 1 and all(key.split("/")[-1] in out for key in gone)
    assert not (task_dir / "review.db").exists()


def test_duplicate_user_is_a_clear_error(tmp_path, monkeypatch, capsys):
    db = str(tmp_path / "review.db")
    code, out = run_cli(monkeypatch, capsys, "review", "add-user", "ana", "--role", "annotator", "--db", db,
                        "--password-stdin", stdin="correct horse battery\n")
    assert code == 0 and "added annotator 'ana'" in out
    code, out = run_cli(monkeypatch, capsys, "review", "add-user", "ana", "--role", "admin", "--db", db,
                        "--password-stdin", stdin="another password\n")
    assert code == 1 and "user 'ana' already exists" in out
    with pytest.raises(InputError, match="already exists"):
        add_user(db, "ana", "annotator", "yet another one")


@pytest.mark.parametrize("name, role, password, message", [
    ("ana", "boss", "long enough pw", "role 'boss' is unknown"),
    ("a/b", "annotator", "long enough pw", "is not allowed"),
    ("joint", "annotator", "long enough pw", "is reserved"),
    ("ana", "annotator", "short", "8 to 1024 characters"),
])
def test_bad_users_are_refused_before_anything_is_written(tmp_path, name, role, password, message):
    with pytest.raises(InputError, match=message):
        add_user(tmp_path / "review.db", name, role, password)
    assert not (tmp_path / "review.db").exists()


def test_unreachable_database_is_a_clear_error_and_nothing_is_written(task_dir, tmp_path, monkeypatch, capsys):
    pytest.importorskip("psycopg")
    url = f"postgresql://reviewer:s3cret-pw@127.0.0.1:{closed_port()}/review"
    before = sorted(p.name for p in task_dir.iterdir())
    with pytest.raises(StoreError) as err:
        build_service(task_dir / TASKS, url)
    assert "cannot reach" in str(err.value) and "s3cret-pw" not in str(err.value)
    assert "reviewer:***@127.0.0.1" in str(err.value)
    code, out = run_cli(monkeypatch, capsys, "review", "serve", str(task_dir / TASKS), "--db", url)
    assert code == 1 and "cannot reach" in out and "s3cret-pw" not in out
    code, out = run_cli(monkeypatch, capsys, "review", "add-user", "ana", "--role", "annotator", "--db", url,
                        "--password-stdin", stdin="long enough pw\n")
    assert code == 1 and "cannot reach" in out and "s3cret-pw" not in out
    assert sorted(p.name for p in task_dir.iterdir()) == before
    code, out = run_cli(monkeypatch, capsys, "review", "add-user", "ana", "--role", "annotator", "--db",
                        "mysql://root:pw@localhost/db", "--password-stdin", stdin="long enough pw\n")
    assert code == 1 and "unsupported store URL scheme" in out and ":pw@" not in out


def test_database_of_another_task_set_is_refused(task_dir, tmp_path, password_hashes):
    from robustlab.review.app import create_app

    from .helpers import answer, login

    service = build_service(task_dir / TASKS, tmp_path / "review.db")
    service.db.add_user("ana", "annotator", password_hashes["ana"])
    answer(login(create_app(service), "ana"), 0)
    service.db.close()
    lines = (task_dir / TASKS).read_text().splitlines()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / TASKS).write_text("\n".join(lines[:3]) + "\n")
    for key in {k for line in lines[:3] for k in (json.loads(line)["anchor"], json.loads(line)["frame"])}:
        target = tmp_path / "other" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((task_dir / key).read_bytes())
    with pytest.raises(StoreError, match="holds 1 answers to another task set"):
        build_service(tmp_path / "other" / TASKS, tmp_path / "review.db")


def test_serve_needs_tasks_or_demo(monkeypatch, capsys):
    code, out = run_cli(monkeypatch, capsys, "review", "serve")
    assert code == 1 and "give a TASKS file" in out
