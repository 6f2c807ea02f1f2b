"""The review app from outside, over real HTTP to uvicorn: the login, the body cap, malformed
queries, proxy headers, and the serve command's address checks.

- The login rate limit is the user name's: 20 parallel attempts get at most 5 passwords
  checked (before, 19 wrong ones and then a right one all got through), and neither another
  address nor a forged ``X-Forwarded-For`` gets around it.
- uvicorn trusts proxy headers only from the proxies named by ``--forwarded-allow-ips``.
- The session id is rotated at login: a session cookie planted before the login ends there;
  and a planted session is never used: it belongs to the browser that logged in to it.
- Request bodies are capped before anything is parsed or spooled to the disk (413).
- Malformed query and form values get 4xx, never 500 (hypothesis over every GET route).
- A bad ``--host``/``--port`` is a clear error before anything is written, not a traceback.
"""

from __future__ import annotations

import socket
import threading
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, select

from robustlab.errors import InputError
from robustlab.review.app import MAX_BODY_BYTES, create_app
from robustlab.review.database import sessions
from robustlab.review.server import check_forwarded_allow_ips, check_listen_address, uvicorn_options
from robustlab.video.sampling import TASKS

from .conftest import USERS
from .helpers import answer, browser_key, client, csrf_of, login
from .test_bad_input import run_cli


def login_form(c) -> dict:
    """The login form's fields as this client's browser sends them (its CSRF token and key)."""
    return {"csrf_token": csrf_of(c.get("/").text), "browser": getattr(c, "browser", None) or browser_key()}


def test_twenty_parallel_logins_get_at_most_five_passwords_checked(live_server):
    """19 wrong passwords and the right one, all at once: at most 5 are checked, the rest get
    429, and the limit holds for the right password afterwards too."""
    clients = [httpx.Client(base_url=live_server, timeout=60) for _ in range(20)]
    forms = [login_form(c) for c in clients]
    barrier = threading.Barrier(20)
    status = [0] * 20

    def attempt(i: int) -> None:
        password = USERS["ana"][1] if i == 19 else f"wrong-password-{i}"
        barrier.wait()
        status[i] = clients[i].post("/login", data={**forms[i], "username": "ana", "password": password},
                                    headers={"X-Forwarded-For": f"10.1.{i}.1"}).status_code

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    checked = [s for s in status if s != 429]
    assert len(checked) <= 5 and set(status) <= {303, 401, 429}, status
    right = clients[0].post("/login", data={**login_form(clients[0]), "username": "ana",
                                            "password": USERS["ana"][1]}, follow_redirects=False)
    # the right password among the five checked took its attempt back (4 wrong: one more try);
    # otherwise five wrong ones were counted
    assert right.status_code == (303 if 303 in status else 429)
    for c in clients:
        c.close()


def test_a_forged_x_forwarded_for_does_not_get_around_the_limit(live_server):
    with httpx.Client(base_url=live_server) as c:
        for i in range(5):
            r = c.post("/login", data={**login_form(c), "username": "ben", "password": "wrong-password"},
                       headers={"X-Forwarded-For": f"203.0.113.{i}"})
            assert r.status_code == 401
        r = c.post("/login", data={**login_form(c), "username": "ben", "password": USERS["ben"][1]},
                   headers={"X-Forwarded-For": "198.51.100.7", "X-Real-IP": "198.51.100.7"})
        assert r.status_code == 429 and "retry-after" in r.headers


class ClientRecorder:
    """ASGI wrapper: remembers the client address uvicorn gave each request."""

    def __init__(self, app) -> None:
        self.app = app
        self.clients: list[str] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.clients.append(scope["client"][0])
        await self.app(scope, receive, send)


@pytest.mark.parametrize("allow, seen", [(None, "127.0.0.1"), ("127.0.0.1", "203.0.113.9")])
def test_proxy_headers_are_trusted_only_from_named_proxies(app, allow, seen):
    """The options `robustlab review serve` gives uvicorn: without --forwarded-allow-ips, an
    X-Forwarded-For header is ignored (uvicorn's own default trusts it from 127.0.0.1)."""
    import time

    import uvicorn

    recorder = ClientRecorder(app)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    options = uvicorn_options("127.0.0.1", port, check_forwarded_allow_ips(allow))
    options.pop("workers")
    server = uvicorn.Server(uvicorn.Config(recorder, **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        httpx.get(f"http://127.0.0.1:{port}/", headers={"X-Forwarded-For": "203.0.113.9"})
        assert recorder.clients == [seen]
    finally:
        server.should_exit = True
        thread.join(30)


def test_forwarded_allow_ips_option_is_checked_and_passed_to_uvicorn(demo_set_source, tmp_path, monkeypatch):
    import shutil

    import uvicorn

    from robustlab.review.server import run_server

    shutil.copytree(demo_set_source, tmp_path / "set")
    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(kw))
    run_server(tmp_path / "set", port=free_port(), log=lambda line: None)
    run_server(tmp_path / "set", port=free_port(), forwarded_allow_ips="127.0.0.1, 10.0.0.0/8", log=lambda line: None)
    assert served[0]["proxy_headers"] is False and "forwarded_allow_ips" not in served[0]
    assert served[1]["proxy_headers"] is True and served[1]["forwarded_allow_ips"] == "127.0.0.1,10.0.0.0/8"
    for bad in ("", "proxy.example", "10.0.0.0/33"):
        with pytest.raises(InputError, match="forwarded-allow-ips"):
            check_forwarded_allow_ips(bad)


def test_the_session_id_is_rotated_at_login(app, service, db_url):
    """A session cookie planted in the victim's browser (the attacker's own session) ends when the
    victim logs in: the victim gets a new session id, and the planted one opens nothing."""
    planted = login(app, "ben").cookies.get("robustlab_review_session")
    victim = client(app)
    token = csrf_of(victim.get("/").text)             # the login form is open ...
    victim.cookies.set("robustlab_review_session", planted)   # ... when the cookie is planted
    key = browser_key()
    response = victim.post("/login", data={"username": "ana", "password": USERS["ana"][1], "csrf_token": token,
                                           "browser": key}, follow_redirects=False)
    assert response.status_code == 303
    fresh = next(v.split(";")[0].split("=", 1)[1] for v in response.headers.get_list("set-cookie")
                 if v.startswith("robustlab_review_session="))
    assert fresh and fresh != planted
    now = client(app)
    now.cookies.set("robustlab_review_session", fresh)
    assert '<span class="who">ana ' in now.get("/review").text and f'data-browser="{key}"' in now.get("/review").text
    dead = client(app)
    dead.cookies.set("robustlab_review_session", planted)
    assert dead.get("/review", follow_redirects=False).headers["location"].startswith("/?")
    engine = create_engine(f"sqlite:///{db_url}")
    with engine.connect() as conn:
        owners = sorted(r.user_name for r in conn.execute(select(sessions.c.user_name)))
    engine.dispose()
    assert owners == ["ana"]                          # the planted session is gone from the server


def test_a_planted_session_is_never_used_by_another_browser(app, service, db_url):
    """A session cookie set in a browser that did not log in to it (the planter's own session):
    the page tells its script the session's browser key (the script then leaves for the login),
    every POST from that browser is answered as one without a session, nothing is saved in the
    planter's account, and the login page is shown even though the cookie is there. (Before,
    the visitor worked in the planter's account, and their answers were saved as the planter's.)"""
    ben = login(app, "ben")
    victim = client(app)
    victim.cookies.set("robustlab_review_session", ben.cookies.get("robustlab_review_session"))
    victim.headers["X-Review-Browser"] = own = browser_key()
    page = victim.get("/review", follow_redirects=True).text
    assert f'data-browser="{ben.browser}"' in page and own not in page
    form = {"csrf_token": csrf_of(page), "task": "0", "round": "1", "label_correct": "yes", "browser": own}
    response = victim.post("/answer", data=form, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/?unknown=1&next=%2Freview%3Ftask%3D0"
    scripted = victim.post("/answer", data=form, headers={"Accept": "application/json"})
    assert scripted.status_code == 401 and scripted.json()["login"].startswith("/?unknown=1")
    assert victim.post("/undo", data=form, follow_redirects=False).headers["location"].startswith("/?unknown=1")
    assert service.db.answers() == []
    login_page = victim.get("/?unknown=1&next=/review")
    assert login_page.status_code == 200 and 'id="login-form"' in login_page.text
    assert "did not log in to" in login_page.text and "ben" not in login_page.text
    # the planter's own browser is unaffected
    assert answer(ben, 0).status_code == 303 and len(service.db.answers(annotator="ben")) == 1


def test_a_declared_huge_body_is_refused_before_it_is_read(live_server):
    host, port = live_server.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                     b"Content-Length: 314572800\r\n\r\n--b\r\n")
        reply = sock.recv(4096).decode(errors="replace")
    assert reply.startswith("HTTP/1.1 413"), reply[:200]


def test_a_streamed_multipart_body_is_capped_before_it_is_spooled(app, monkeypatch):
    """A large file part (sent without a length) is cut off at the cap: no upload object is
    made, nothing reaches a temporary file, and no route runs. Before, a 300 MB part to
    /login was written to the temporary directory before CSRF rejected it."""
    from starlette import formparsers

    made = []

    class Recording(formparsers.SpooledTemporaryFile):
        def __init__(self, *args, **kwargs):
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(formparsers, "SpooledTemporaryFile", Recording)
    c = client(app)
    token = login_form(c)["csrf_token"]

    def body():
        yield (b'--b\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n' + token.encode() + b"\r\n"
               b'--b\r\nContent-Disposition: form-data; name="f"; filename="x.bin"\r\n'
               b"Content-Type: application/octet-stream\r\n\r\n")
        for _ in range(80):
            yield b"\0" * 65536
        yield b"\r\n--b--\r\n"

    response = c.post("/login", content=body(), headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert response.status_code == 413 and made == []
    # under the cap, a file part is refused too (the forms take none)
    small = (b'--b\r\nContent-Disposition: form-data; name="f"; filename="x.bin"\r\n\r\nabc\r\n--b--\r\n')
    response = c.post("/login", content=small, headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert response.status_code == 400 and made == []
    big_form = {"csrf_token": token, "username": "ana", "password": "x" * (MAX_BODY_BYTES + 1)}
    assert c.post("/login", data=big_form).status_code == 413


MALFORMED = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["99999999999999999999", "-1", "1e9", "0x10", "1.5", " 1", "\x00", "%00", "%", "NaN",
                     "9223372036854775808", "../admin", "//evil.example", "/review?task=1&x=y", "javascript:1",
                     "😀", "1,2", "", "yes", "full", "1" * 200]),
)
GET_ROUTES = {
    "/": ["next", "expired", "unknown"],
    "/review": ["task", "undone", "base", "label_correct", "similarity", "reason", "added_labels"],
    "/admin": ["done", "n", "refresh"],
    "/admin/pair": ["task"],
    "/admin/confirm/round2": ["x"],
    "/frame/frames/clip_00/000000.jpg": ["size"],
    "/api/round": ["x"],
    "/api/saved": ["task"],
    "/api/answers/ana": ["x"],
}


@pytest.fixture
def logged_in(app):
    return {"annotator": login(app, "ana"), "admin": login(app, "boss")}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(sorted(GET_ROUTES)), values=st.lists(MALFORMED, min_size=1, max_size=3),
       who=st.sampled_from(["annotator", "admin", "anonymous"]), data=st.data())
def test_malformed_query_values_get_4xx_never_500(app, logged_in, route, values, who, data):
    c = logged_in.get(who) or client(app)
    names = GET_ROUTES[route]
    query = "&".join(f"{data.draw(st.sampled_from(names))}={quote(v, safe='')}" for v in values)
    if route == "/review" and data.draw(st.booleans()):
        query += "&undone=1"
    response = c.get(f"{route}?{query}", follow_redirects=False)
    assert response.status_code < 500, (route, query, response.status_code, response.text[:300])


@pytest.mark.parametrize("path", [
    "/review?task=99999999999999999999", "/review?task=-1", "/review?task=9223372036854775808",
    "/admin/pair?task=99999999999", "/admin/pair?task=x", "/admin?n=99999999999999999999",
    "/review?task=1&undone=1&label_correct=maybe", "/review?task=1&undone=1&added_labels=99999999999",
    "/frame/frames/clip_00/000000.jpg?size=huge", "/?next=https://evil.example/", "/?expired=2",
])
def test_known_malformed_values_are_client_errors(logged_in, path):
    who = "admin" if path.startswith("/admin") else "annotator"
    response = logged_in[who].get(path, follow_redirects=False)
    assert 400 <= response.status_code < 500, (path, response.status_code)


@pytest.mark.parametrize("field, value", [("task", "99999999999999999999"), ("task", "x"), ("round", "3"),
                                          ("round", ""), ("base", "\x00" * 100),
                                          ("added_labels", "99999999999999999999")])
def test_malformed_answer_fields_are_client_errors(logged_in, field, value):
    ana = logged_in["annotator"]
    form = {"csrf_token": ana.csrf, "task": "0", "round": "1", "label_correct": "yes", field: value}
    response = ana.post("/answer", data=form, follow_redirects=False)
    assert 400 <= response.status_code < 500, (field, value, response.status_code)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("host, message", [
    ("bad host", "is not an address"),
    ("", "is not an address"),
    ("999.1.1.1", "is not a valid IPv4 address"),
    ("10.255.255.1", "belongs to no interface of this machine"),
])
def test_a_bad_host_is_a_clear_error_before_anything_is_written(task_dir, monkeypatch, capsys, host, message):
    before = sorted(p.name for p in task_dir.iterdir())
    code, out = run_cli(monkeypatch, capsys, "review", "serve", str(task_dir / TASKS), "--host", host,
                        "--port", str(free_port()))
    assert code == 1 and message in out and "Traceback" not in out, out
    assert sorted(p.name for p in task_dir.iterdir()) == before      # no database made


def test_a_port_in_use_or_out_of_range_is_a_clear_error(task_dir, monkeypatch, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out = run_cli(monkeypatch, capsys, "review", "serve", str(task_dir / TASKS), "--port", str(port))
        assert code == 1 and "in use by another program" in out and "Traceback" not in out
    for bad in (0, 70000):
        with pytest.raises(InputError, match="is not a TCP port"):
            check_listen_address("127.0.0.1", bad)
    check_listen_address("localhost", free_port())    # a name that resolves is fine


def test_create_app_keeps_the_given_rate_limiter(service):
    from robustlab.review.security import LoginRateLimiter

    limiter = LoginRateLimiter(max_failures=1)
    c = client(create_app(service, rate_limiter=limiter))
    login(c, "ana", "wrong-password", expect=401)
    login(c, "ana", expect=429)
