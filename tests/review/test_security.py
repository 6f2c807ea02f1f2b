"""Security of the review app, point by point: frames, roles, CSRF, rate limit, cookies, passwords, SQL."""

from __future__ import annotations

import ast
import io
import json
import threading
import time
from pathlib import Path

import numpy as np
from PIL import Image
from sqlalchemy import create_engine, select

from robustlab.data.images import write_image
from robustlab.review.app import create_app
from robustlab.review.database import sessions, users
from robustlab.review.frames import MAX_PAIR_BYTES, MAX_SIDE
from robustlab.review.security import LoginRateLimiter
from robustlab.review.server import build_service
from robustlab.video.sampling import TASKS

from .conftest import USERS
from .helpers import answer, browser_key, client, csrf_of, login

REVIEW_SRC = Path(__file__).resolve().parents[2] / "src" / "robustlab" / "review"


def frame_keys(service) -> list[str]:
    return sorted(service.task_set.frame_files)


# --- frames -------------------------------------------------------------------------------------


def test_frames_only_for_logged_in_users(app, service):
    key = frame_keys(service)[0]
    anonymous = client(app).get(f"/frame/{key}")
    assert anonymous.status_code == 401 and not anonymous.content.startswith(b"\xff\xd8")
    ana = login(app, "ana")
    for key in frame_keys(service):
        response = ana.get(f"/frame/{key}")
        assert response.status_code == 200 and response.headers["content-type"] == "image/jpeg"
        assert response.content.startswith(b"\xff\xd8")


def test_only_files_of_the_task_set_are_served(app, service, task_dir):
    ana = login(app, "ana")
    key = frame_keys(service)[0]
    on_disk_not_listed = task_dir / "frames" / "clip_00" / "999999.jpg"
    on_disk_not_listed.write_bytes((task_dir / key).read_bytes())
    attempts = [
        "sample.json", TASKS, "classes.json", "frames/clip_00/999999.jpg", "frames/clip_00",
        "frames%2F..%2Fsample.json", "frames/clip_00/%2e%2e/%2e%2e/sample.json",
        "..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "%252e%252e%252fsample.json",
        str(task_dir / key).lstrip("/"), f"{key}%00", f"%2e/{key}", f"{key}/", key.upper(),
    ]
    for path in attempts:
        response = ana.get(f"/frame/{path}")
        assert response.status_code == 404, (path, response.status_code)
        assert b"robustlab-video-sample" not in response.content and b"root:" not in response.content


def test_a_frame_that_fails_to_decode_names_no_server_path(app, service, task_dir, caplog):
    """A frame file that is not an image gets 404 with its key only: the server's folders stay
    private (before, the message held the frame's absolute path); the reason goes to the log."""
    key = frame_keys(service)[1]
    (task_dir / key).write_bytes(b"not a JPEG at all")
    ana = login(app, "ana")
    for size in ("", "?size=full"):
        response = ana.get(f"/frame/{key}{size}")
        assert response.status_code == 404 and key in response.text and "cannot be read" in response.text
        for secret in (str(task_dir), str(task_dir.parent), "/tmp", str(Path.home())):
            assert secret not in response.text, response.text
    assert any(key in r.getMessage() for r in caplog.records)


def test_a_pair_of_big_frames_is_at_most_200_kb(tmp_path, password_hashes):
    rng = np.random.default_rng(0)
    for i in (10, 11):
        write_image(tmp_path / "frames" / "v" / f"0000{i}.png", rng.integers(0, 256, (1500, 2000, 3), np.uint8))
    anchor, frame = "frames/v/000010.png", "frames/v/000011.png"
    (tmp_path / TASKS).write_text(json.dumps({"anchor": anchor, "frame": anchor, "offset": 0, "video": "v",
                                              "labels": [0]}) + "\n"
                                  + json.dumps({"anchor": anchor, "frame": frame, "offset": 1, "video": "v",
                                                "labels": [0]}) + "\n")
    service = build_service(tmp_path / TASKS)
    service.db.add_user("ana", "annotator", password_hashes["ana"])
    ana = login(create_app(service), "ana")
    sizes = []
    for key in (anchor, frame):
        response = ana.get(f"/frame/{key}")
        assert response.status_code == 200
        with Image.open(io.BytesIO(response.content)) as img:
            assert img.format == "JPEG" and max(img.size) <= MAX_SIDE
        sizes.append(len(response.content))
    assert sum(sizes) <= MAX_PAIR_BYTES, sizes
    service.db.close()


# --- roles --------------------------------------------------------------------------------------


def test_annotators_get_403_on_admin_routes_and_others_answers(app, service, task_dir):
    ana = login(app, "ana")
    answer(ana, 0)
    assert ana.get("/admin").status_code == 403
    assert ana.get("/admin/export.jsonl").status_code == 403
    assert ana.post("/admin/round2", data={"csrf_token": ana.csrf}).status_code == 403
    assert ana.post("/admin/finalize", data={"csrf_token": ana.csrf}).status_code == 403
    assert service.current_round() == 1 and not (task_dir / "pmsets.json").exists()
    ben = login(app, "ben")
    assert ben.get("/api/answers/ana").status_code == 403
    assert ben.get("/api/answers/ben").json() == []
    assert len(ana.get("/api/answers/ana").json()) == 1
    boss = login(app, "boss")
    assert len(boss.get("/api/answers/ana").json()) == 1
    # an admin does not answer
    response = boss.post("/answer", data={"csrf_token": boss.csrf, "task": "0", "round": "1",
                                          "label_correct": "yes"})
    assert response.status_code == 403 and len(service.db.answers()) == 1
    assert client(app).get("/api/answers/ana").status_code == 401


# --- CSRF ----------------------------------------------------------------------------------------

POST_ROUTES = {"/login": None, "/logout": "ana", "/answer": "ana", "/undo": "ana", "/admin/round2": "boss",
               "/admin/round1": "boss", "/admin/finalize": "boss"}


def test_every_post_route_checks_the_csrf_token(app, service, task_dir):
    posts = {r.path for r in app.routes if "POST" in getattr(r, "methods", set())}
    assert posts == set(POST_ROUTES), "a new POST route: add it to POST_ROUTES (and check its CSRF)"
    ana, boss = login(app, "ana"), login(app, "boss")
    answer(ana, 0)
    for path, who in POST_ROUTES.items():
        c = {"ana": ana, "boss": boss, None: client(app)}[who]
        if who is None:
            c.get("/")
        form = {"task": "1", "round": "1", "label_correct": "yes", "similarity": "similar", "confirm": "yes",
                "accept_incomplete": "on", "username": "ana", "password": USERS["ana"][1]}
        other = login(app, "ben").csrf
        for token in (None, "", "forged", other):
            data = dict(form, **({} if token is None else {"csrf_token": token}))
            response = c.post(path, data=data, follow_redirects=False)
            assert response.status_code == 403, (path, token, response.status_code)
    # nothing happened: one answer, round 1, no set written, both sessions alive
    assert len(service.db.answers()) == 1 and service.current_round() == 1
    assert not (task_dir / "pmsets.json").exists()
    assert ana.get("/review").status_code == 200 and boss.get("/admin").status_code == 200
    # with the right token, but from another browser than the one that logged in (or none): to the
    # login, nothing done (the session of a planted cookie is never used)
    for path, who in POST_ROUTES.items():
        if who is None or path == "/logout":
            continue
        c = {"ana": ana, "boss": boss}[who]
        for key in (None, "", browser_key()):
            headers = {"X-Review-Browser": key} if key is not None else {}
            plain = client(app)
            plain.cookies = c.cookies
            response = plain.post(path, data=dict(form, csrf_token=c.csrf), headers=headers, follow_redirects=False)
            assert response.status_code == 303 and response.headers["location"].startswith("/?unknown=1"), \
                (path, key, response.status_code)
    assert len(service.db.answers()) == 1 and service.current_round() == 1
    # the header form works too (for scripts)
    response = ana.post("/undo", headers={"X-CSRF-Token": ana.csrf}, follow_redirects=False)
    assert response.status_code == 303 and service.db.answers() == []


# --- rate limit ----------------------------------------------------------------------------------


def test_sixth_login_attempt_within_a_minute_gets_429(service):
    now = [1000.0]
    app = create_app(service, rate_limiter=LoginRateLimiter(clock=lambda: now[0]))
    c = client(app, "10.0.0.1")
    for _ in range(5):
        login(c, "ana", "wrong-password", expect=401)
    response = c.post("/login", data={"username": "ana", "password": USERS["ana"][1], "browser": c.browser,
                                      "csrf_token": csrf_of(c.get("/").text)}, follow_redirects=False)
    assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1
    assert "robustlab_review_session" not in response.headers.get("set-cookie", "")
    login(c, "ben")                                  # another user from this address
    # the limit is the user name's, whatever the address: another address does not get around it
    login(client(app, "10.0.0.2"), "ana", expect=429)
    login(client(app, "10.0.0.3"), "ANA ", USERS["ana"][1], expect=429)   # nor another spelling of the name
    now[0] += 61.0                                   # the window has passed
    login(client(app, "10.0.0.1"), "ana")


def test_a_right_password_takes_its_attempt_back(service):
    app = create_app(service, rate_limiter=LoginRateLimiter(clock=lambda: 0.0))
    for _ in range(4):
        login(client(app), "ana", "wrong-password", expect=401)
    for _ in range(3):                                # right answers do not use up the limit
        login(client(app), "ana")
    login(client(app), "ana", "wrong-password", expect=401)
    login(client(app), "ana", expect=429)


def test_rate_limiter_window_and_bounded_memory():
    now = [0.0]
    limiter = LoginRateLimiter(max_failures=5, window=60, clock=lambda: now[0], max_keys=3)
    for i in range(5):
        assert not limiter.blocked("ana")
        ticket, wait = limiter.begin("ana")
        assert ticket is not None and wait == 0
        now[0] += 10
    assert limiter.blocked("ana")                    # 5 attempts within 0..40 s
    assert limiter.begin("ana") == (None, 11)        # refused, nothing counted; the first leaves at 60 s
    now[0] = 60.5                                    # the first (t=0) left the window
    assert not limiter.blocked("ana")
    ticket, _ = limiter.begin("ana")
    limiter.succeeded("ana", ticket)                 # a right password: not counted
    assert not limiter.blocked("ana")
    for i in range(10):
        limiter.begin(f"u{i}")
    assert len(limiter) <= 3


def test_check_and_count_are_one_step_under_parallel_attempts():
    """20 attempts at once, each taking time between the check and the verdict (as argon2 does):
    exactly 5 get to try a password."""
    limiter = LoginRateLimiter(max_failures=5, window=60)
    barrier = threading.Barrier(20)
    tried = []

    def attempt():
        barrier.wait()
        ticket, _ = limiter.begin("ana")
        if ticket is not None:
            time.sleep(0.05)                         # verifying the password
            tried.append(ticket)

    threads = [threading.Thread(target=attempt) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(tried) == 5


# --- cookies, sessions, passwords -------------------------------------------------------------------


def test_session_cookie_is_signed_httponly_samesite(app, service, db_url):
    c = client(app)
    page = c.get("/")
    response = c.post("/login", data={"username": "ana", "password": USERS["ana"][1], "browser": browser_key(),
                                      "csrf_token": csrf_of(page.text)}, follow_redirects=False)
    cookie = next(v for v in response.headers.get_list("set-cookie") if v.startswith("robustlab_review_session="))
    attributes = cookie.lower()
    assert "httponly" in attributes and "samesite=lax" in attributes and "path=/" in attributes
    assert "secure" not in attributes
    value = c.cookies.get("robustlab_review_session")
    tampered = client(app)
    tampered.cookies.set("robustlab_review_session", value[:-2] + ("A" if value[-2] != "A" else "B") + value[-1])
    assert tampered.get("/review", follow_redirects=False).headers["location"] == "/?expired=1&next=%2Freview"
    # the database keeps only a hash of the session id
    engine = create_engine(f"sqlite:///{db_url}")
    with engine.connect() as conn:
        stored = [r.id_hash for r in conn.execute(select(sessions.c.id_hash))]
    engine.dispose()
    from itsdangerous import URLSafeTimedSerializer

    sid = URLSafeTimedSerializer(service.db.secret(), salt="robustlab-review-session").loads(value)["sid"]
    assert sid not in stored and len(stored) == 1 and len(stored[0]) == 64


def test_secure_cookies_option(service):
    c = client(create_app(service, secure_cookies=True))
    assert "secure" in c.get("/").headers["set-cookie"].lower()


def test_passwords_are_argon2_hashes(service, db_url):
    engine = create_engine(f"sqlite:///{db_url}")
    with engine.connect() as conn:
        rows = conn.execute(select(users.c.name, users.c.password_hash)).all()
    engine.dispose()
    assert {r.name for r in rows} == set(USERS)
    for name, stored in rows:
        assert stored.startswith("$argon2id$") and USERS[name][1] not in stored


# --- queries are parameterised ------------------------------------------------------------------------


def test_injection_attempts_are_plain_strings(app, service):
    ana = login(app, "ana")
    answer(ana, 0)
    login(app, "ana' OR '1'='1' --", "x' OR '1'='1", expect=401)
    boss = login(app, "boss")
    assert boss.get("/api/answers/x' OR '1'='1").json() == []
    assert boss.get("/api/answers/ana'; DROP TABLE review_answers; --").json() == []
    assert len(service.db.answers()) == 1


def test_review_package_builds_no_sql_from_strings():
    """Every statement is SQLAlchemy Core: no text(), no driver SQL, no string passed to execute()."""
    for path in sorted(REVIEW_SRC.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            assert name not in ("text", "exec_driver_sql", "executescript"), f"{path.name}:{node.lineno}"
            if name == "execute" and node.args:
                assert not isinstance(node.args[0], (ast.Constant, ast.JoinedStr, ast.BinOp)), \
                    f"{path.name}:{node.lineno} passes SQL text to execute()"


# --- pages ----------------------------------------------------------------------------------------------


def test_security_headers_and_escaping(task_dir, tmp_path, password_hashes):
    lines = (task_dir / TASKS).read_text().splitlines()
    hostile = [json.dumps(dict(json.loads(line), video="<script>alert(1)</script>")) for line in lines]
    (task_dir / TASKS).write_text("\n".join(hostile) + "\n")
    service = build_service(task_dir / TASKS, tmp_path / "other.db")
    service.db.add_user("ana", "annotator", password_hashes["ana"])
    ana = login(create_app(service), "ana")
    page = ana.get("/review")
    assert "<script>alert(1)</script>" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    headers = page.headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-store"
    assert "<script>" not in page.text.split("</head>")[1]  # no inline script: CSP forbids it
    service.db.close()
