"""The review web app (FastAPI): login, the annotator page, frames, the admin page.

Routes (every page needs a session, except the login form; every POST checks the session's
CSRF token; annotators get 403 on admin routes and on other annotators' answers; every POST
that changes something answers with a redirect, so a reload never sends it again):

=============================  ==========  ===================================================
route                          who         what
=============================  ==========  ===================================================
``GET /``                      anyone      login form (logged in: redirect to the user's page)
``POST /login``                anyone      log in (rate-limited per user name: 429 after 5
                                           wrong in 60 s); back to ``next`` when given
``POST /logout``               logged in   end the session
``GET /review``                annotator   redirect to the first unanswered task (or: done)
``GET /review?task=N``         annotator   task N of the open round, with its saved answer
``POST /answer``               annotator   save an answer made for (task, round, base), then
                                           the next task; no session: to the login, then back
``POST /undo``                 annotator   remove the last answer of the round; show its task
                                           with the removed answer filled in, unsaved
``GET /api/round``             logged in   the open round (the page polls it)
``GET /frame/{key}``           logged in   a frame of the task set (resized JPEG; ``?size=full``
                                           up to 2048 px); else 404
``GET /api/answers/{name}``    self/admin  an annotator's answers as JSON
``GET /admin``                 admin       progress, agreement, reasons, disagreements, actions
``GET /admin/pair?task=N``     admin       one pair: its frames and every answer
``GET /admin/confirm/{what}``  admin       confirm ``round2``, ``round1`` or ``finalize``: what
                                           is incomplete, and the form that does it
``POST /admin/round2``         admin       close round 1, open round 2 (``confirm=yes``)
``POST /admin/round1``         admin       reopen round 1 while round 2 has no answer
``GET /admin/export.jsonl``    admin       every answer as review JSON Lines
``POST /admin/finalize``       admin       export and finalize (``confirm=yes``; an
                                           incomplete round also ``accept_incomplete=on``)
=============================  ==========  ===================================================

Request bodies are capped at :data:`MAX_BODY_BYTES` before anything is parsed or spooled
(413); forms take no file parts. Malformed query values get 400 or 404, never 500.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import asdict
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from ..errors import DataError, InputError, RobustlabError
from ..video.review import LABEL_ANSWERS, REASONS, SIMILARITY_ANSWERS
from .database import NO_ANSWER, SESSION_SECONDS, User
from .frames import FrameCache
from .rounds import joint_decisions
from .security import (
    CookieSigner,
    LoginRateLimiter,
    hash_password,
    login_key,
    new_token,
    same_token,
    token_hash,
    verify_password,
)
from .service import (
    IncompleteReview,
    ReviewService,
    RoundChangeRefused,
    RoundMismatch,
    StaleAnswer,
    describe_incomplete,
)

SESSION_COOKIE = "robustlab_review_session"
LOGIN_COOKIE = "robustlab_review_login"
LOGIN_COOKIE_SECONDS = 3600
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
#: Largest request body read (bytes): forms here are a few hundred bytes.
MAX_BODY_BYTES = 64 * 1024
#: Form fields read at most (an anchor step with every class ticked stays far below).
MAX_FORM_FIELDS = 2000
#: Class checkboxes shown on an anchor step (more: type the numbers or names).
MAX_CLASS_BOXES = 40
#: Content Security Policy: only this origin's scripts, styles and images; no framing.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
REASON_TITLES = {"motion": "significant motion", "background_change": "background change",
                 "blur_change": "blur change", "other": "other"}
ANSWER_TITLES = {"yes": "yes", "no": "no", "unsure": "don't know", "similar": "similar",
                 "dissimilar": "dissimilar", None: "-"}
#: Where the login may send the user back to (a local page of this app, nothing else).
SAFE_NEXT = re.compile(r"^/(review|admin|admin/pair)(\?task=\d{1,9})?$")
#: The notices the admin page shows after an action (``/admin?done=...``): fixed texts only.
DONE_NOTICES = {
    "round2": "Round 2 is open on {n} pair(s). Annotators see it on their next page (within 20 s).",
    "round2-already": "Round 2 was open already ({n} pairs); nothing changed.",
    "round1": "Round 1 is open again; round 2 was closed before anyone answered it.",
    "round1-already": "Round 1 is open already; nothing changed.",
    "finalized": "Finalized: the set below was written.",
}
CONFIRM_ACTIONS = ("round2", "round1", "finalize")
#: The admin page reloads itself this often (``/admin?refresh=S`` for another period).
ADMIN_REFRESH_SECONDS = 30


class HTTPProblem(Exception):
    """A response that ends a request early (status code, message, optional headers)."""

    def __init__(self, status: int, message: str, headers: dict | None = None, links: tuple = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.links = links


class LoginNeeded(Exception):
    """No live session: pages redirect to the login (and back to ``next`` after it)."""

    def __init__(self, next_url: str | None = None) -> None:
        super().__init__("log in first.")
        self.next_url = next_url


class Session:
    """The logged-in user of a request and their session's CSRF token."""

    def __init__(self, user: User, csrf: str, id_hash: str) -> None:
        self.user = user
        self.csrf = csrf
        self.id_hash = id_hash


class BodyTooLarge(Exception):
    """A request body went past :data:`MAX_BODY_BYTES`."""


class SecurityHeaders:
    """ASGI middleware: the security headers on every response (CSP, no framing, no sniffing,
    same-origin referrers; ``no-store`` unless the route set its own caching), and the body
    cap: a declared ``Content-Length`` over :data:`MAX_BODY_BYTES` gets 413 before any byte is
    read, and a streamed body is cut off (413) as soon as it passes the cap, so nothing large
    is ever parsed or spooled to the disk."""

    HEADERS = ((b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
               (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"))

    def __init__(self, app, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = int(max_body)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in dict(self.HEADERS)]
                headers += list(self.HEADERS)
                if not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        declared = dict(scope.get("headers") or []).get(b"content-length")
        try:
            too_large = declared is not None and int(declared) > self.max_body
        except ValueError:
            too_large = True
        if too_large:
            await self._refuse(send_with_headers)
            return
        seen = 0

        async def capped_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge()
            return message

        try:
            await self.app(scope, capped_receive, send_with_headers)
        except BodyTooLarge:
            if not started:
                await self._refuse(send_with_headers)

    async def _refuse(self, send) -> None:
        body = json.dumps({"error": f"the request body is larger than {self.max_body} bytes."}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def _templates() -> Environment:
    folder = resources.files("robustlab.review") / "templates"
    env = Environment(loader=FileSystemLoader(str(folder)), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(REASONS=REASONS, REASON_TITLES=REASON_TITLES, ANSWER_TITLES=ANSWER_TITLES,
                       MAX_CLASS_BOXES=MAX_CLASS_BOXES)
    env.filters["kappa"] = lambda v: "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"
    env.filters["percent"] = lambda v: "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) \
        else f"{100 * v:.0f}%"
    env.filters["frame_url"] = lambda key: "/frame/" + quote(key)
    env.filters["clock"] = lambda t: time.strftime("%H:%M:%S", time.localtime(t))
    return env


def int_param(value: str | None, name: str, *, lo: int = 0, hi: int = 10**9) -> int | None:
    """A query or form value that must be a whole number in ``[lo, hi]`` (None when absent).

    Raises
    ------
    HTTPProblem
        400 naming the parameter, for anything else.
    """
    if value is None:
        return None
    text = str(value).strip()
    if not re.fullmatch(r"[+-]?\d{1,12}", text) or not lo <= int(text) <= hi:
        raise HTTPProblem(400, f"{name} must be a whole number from {lo} to {hi}; got {text[:40]!r}.")
    return int(text)


class Pages:
    """What every route of the app shares: the service, templates, cookies, the session of a request,
    and the checks (login, role, CSRF) every page makes."""

    def __init__(self, service: ReviewService, *, secure_cookies: bool, rate_limiter: LoginRateLimiter | None) -> None:
        self.service = service
        self.task_set = service.task_set
        self.env = _templates()
        self.signer = CookieSigner(service.db.secret(), "session")
        self.login_signer = CookieSigner(service.db.secret(), "login")
        self.limiter = rate_limiter if rate_limiter is not None else LoginRateLimiter()
        self.frames = FrameCache()
        self.secure_cookies = secure_cookies

    def render(self, template: str, status: int = 200, /, **context: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(template).render(**context), status_code=status)

    @staticmethod
    def is_api(request: Request) -> bool:
        return request.url.path.startswith(("/api/", "/frame/"))

    def session_of(self, request: Request) -> Session | None:
        payload = self.signer.loads(request.cookies.get(SESSION_COOKIE), max_age=SESSION_SECONDS)
        sid = payload.get("sid") if payload else None
        if not isinstance(sid, str):
            return None
        id_hash = token_hash(sid)
        found = self.service.db.session(id_hash)
        return None if found is None else Session(found[0], found[1], id_hash)

    @staticmethod
    def require(session: Session | None, role: str | None = None, next_url: str | None = None) -> Session:
        if session is None:
            raise LoginNeeded(next_url)
        if role is not None and session.user.role != role:
            raise HTTPProblem(403, f"this page is for {role}s; you are logged in as {session.user.role} "
                                   f"{session.user.name!r}.")
        return session

    @staticmethod
    def check_csrf(session: Session | None, form: FormData, request: Request) -> None:
        given = form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
        if session is None or not same_token(str(given) if given else None, session.csrf):
            raise HTTPProblem(403, "the form's security token is missing or out of date: reload the page "
                                   "and try again.")

    @staticmethod
    def redirect(url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303)

    @staticmethod
    def home_of(user: User) -> str:
        return "/admin" if user.role == "admin" else "/review"

    def cookie(self, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(name, value, max_age=max_age, httponly=True, samesite="lax",
                            secure=self.secure_cookies, path="/")

    @staticmethod
    async def read_form(request: Request) -> FormData:
        return await request.form(max_files=0, max_fields=MAX_FORM_FIELDS, max_part_size=MAX_BODY_BYTES)


def create_app(service: ReviewService, *, secure_cookies: bool = False,
               rate_limiter: LoginRateLimiter | None = None) -> FastAPI:
    """The FastAPI app serving ``service`` (see the module docstring for the routes).

    Parameters
    ----------
    service : ReviewService
        The checked task set and its open database (:func:`robustlab.review.service.open_service`).
    secure_cookies : bool
        Mark cookies ``Secure`` (sent over HTTPS only): set it behind a TLS proxy.
    rate_limiter : LoginRateLimiter, optional
        Login attempts per user name (default: 5 wrong in 60 s).
    """
    pages = Pages(service, secure_cookies=secure_cookies, rate_limiter=rate_limiter)
    app = FastAPI(title="robustlab review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=str(resources.files("robustlab.review") / "static")),
              name="static")
    add_error_pages(app, pages)
    add_login_routes(app, pages)
    add_annotator_routes(app, pages)
    add_frame_routes(app, pages)
    add_admin_routes(app, pages)
    return app


def add_error_pages(app: FastAPI, pages: Pages) -> None:
    """Problems as an error page (a JSON body for the API and frames); no session: the login page."""

    @app.exception_handler(HTTPProblem)
    async def problem(request: Request, exc: HTTPProblem):
        if pages.is_api(request):
            return JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)
        return HTMLResponse(pages.env.get_template("error.html").render(status=exc.status, message=exc.message,
                                                                         links=exc.links, session=None),
                            status_code=exc.status, headers=exc.headers)

    @app.exception_handler(LoginNeeded)
    async def login_needed(request: Request, exc: LoginNeeded):
        if pages.is_api(request):
            return JSONResponse({"error": "log in first."}, status_code=401)
        query = {"expired": "1"} if request.cookies.get(SESSION_COOKIE) else {}
        if exc.next_url and SAFE_NEXT.match(exc.next_url):
            query["next"] = exc.next_url
        return pages.redirect("/" + ("?" + urlencode(query) if query else ""))

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return Response(status_code=204)


def add_login_routes(app: FastAPI, pages: Pages) -> None:
    """``/`` (the login page), ``/login``, ``/logout``."""
    service = pages.service
    render, session_of, require, check_csrf = pages.render, pages.session_of, pages.require, pages.check_csrf
    redirect, read_form = pages.redirect, pages.read_form
    cookie, home_of, limiter, login_signer, signer = (pages.cookie, pages.home_of, pages.limiter,
                                                      pages.login_signer, pages.signer)

    def login_page(request: Request, status: int = 200, message: str = "", name: str = "",
                   headers: dict | None = None, next_url: str = "", notice: str = "") -> HTMLResponse:
        token = new_token()
        response = render("login.html", status, csrf=token, message=message, name=name, session=None,
                          next_url=next_url if SAFE_NEXT.match(next_url or "") else "", notice=notice)
        cookie(response, LOGIN_COOKIE, login_signer.dumps({"csrf": token}), LOGIN_COOKIE_SECONDS)
        for k, v in (headers or {}).items():
            response.headers[k] = v
        return response

    # Each route does its blocking work (database, argon2, templates) in one worker-thread hop.

    def index_work(request: Request, next_url: str, expired: str):
        if next_url and not SAFE_NEXT.match(next_url):
            raise HTTPProblem(400, "next must be a page of this app (/review or /admin).")
        if expired not in ("", "1"):
            raise HTTPProblem(400, "expired must be 1 or absent.")
        session = session_of(request)
        if session is not None:
            return redirect(next_url if next_url.startswith(home_of(session.user)) else home_of(session.user))
        notice = ("Your session ended: log in again. An answer you had given is kept in this browser tab and "
                  "saved after you log in." if expired else "")
        return login_page(request, next_url=next_url, notice=notice)

    @app.get("/", response_class=HTMLResponse)
    async def index(request: Request, next: str = "", expired: str = ""):
        return await run_in_threadpool(index_work, request, next, expired)

    @app.post("/login")
    async def login(request: Request):
        return await run_in_threadpool(login_work, request, await read_form(request))

    def login_work(request: Request, form: FormData):
        expected = login_signer.loads(request.cookies.get(LOGIN_COOKIE), max_age=LOGIN_COOKIE_SECONDS)
        given = form.get(CSRF_FIELD)
        next_url = str(form.get("next") or "")
        next_url = next_url if SAFE_NEXT.match(next_url) else ""
        if not expected or not same_token(str(given) if given else None, expected.get("csrf")):
            return login_page(request, 403, "the login form expired: try again.", next_url=next_url)
        name = str(form.get("username") or "").strip()[:64]
        password = str(form.get("password") or "")
        key = login_key(name)
        ticket, wait = limiter.begin(key)   # checks the limit and counts this attempt, atomically
        if ticket is None:
            return login_page(request, 429, f"too many wrong passwords for {name!r}: wait {wait} s before trying "
                              "again.", name, headers={"Retry-After": str(wait)}, next_url=next_url)
        found = service.db.user_with_hash(name) if name else None
        ok, rehash = verify_password(found[1] if found else None, password)
        if not ok:
            return login_page(request, 401, "wrong user name or password.", name, next_url=next_url)
        limiter.succeeded(key, ticket)
        user = found[0]
        if rehash:
            service.db.set_password_hash(user.name, hash_password(password))
        # A new session id at every login; the session this browser carried (if any, e.g. a cookie
        # planted by someone else) ends on the server.
        old = session_of(request)
        if old is not None:
            service.db.delete_session(old.id_hash)
        sid, csrf = new_token(), new_token()
        service.db.create_session(user.name, token_hash(sid), csrf)
        target = next_url if next_url.startswith(home_of(user)) else home_of(user)
        response = redirect(target)
        cookie(response, SESSION_COOKIE, signer.dumps({"sid": sid}), SESSION_SECONDS)
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response

    @app.post("/logout")
    async def logout(request: Request):
        return await run_in_threadpool(logout_work, request, await read_form(request))

    def logout_work(request: Request, form: FormData):
        session = session_of(request)
        check_csrf(require(session), form, request)
        service.db.delete_session(session.id_hash)
        response = redirect("/")
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response


def add_annotator_routes(app: FastAPI, pages: Pages) -> None:
    """``/review``, ``/answer``, ``/undo`` and the annotator's API (``/api/round``, ``/api/answers``)."""
    service, task_set = pages.service, pages.task_set
    render, session_of, require, check_csrf = pages.render, pages.session_of, pages.require, pages.check_csrf
    redirect, read_form = pages.redirect, pages.read_form

    def class_index(value: str) -> int:
        text = value.strip()
        if re.fullmatch(r"\d{1,9}", text):
            return int(text)
        names = {n.casefold(): i for i, n in enumerate(task_set.class_names)}
        if text.casefold() in names:
            return names[text.casefold()]
        raise InputError(f"added label {text[:40]!r} is not a class number"
                         + (" or class name" if task_set.class_names else "") + " of this set.")

    def answer_fields(form) -> dict:
        typed = [v for v in str(form.get("added_labels_text") or "").replace(";", ",").split(",") if v.strip()]
        added = sorted({class_index(str(v)) for v in [*form.getlist("added_labels"), *typed]})
        return {"label_correct": form.get("label_correct"), "similarity": form.get("similarity"),
                "reason": form.get("reason"), "added_labels": added}

    def undone_fields(request: Request) -> dict:
        """The removed answer an undo shows again (query values, checked like an answer)."""
        q = request.query_params
        try:
            fields = answer_fields(q)
        except InputError as exc:
            raise HTTPProblem(400, str(exc)) from None
        for name, allowed in (("label_correct", LABEL_ANSWERS), ("similarity", SIMILARITY_ANSWERS),
                              ("reason", REASONS)):
            if fields[name] is not None and fields[name] not in allowed:
                raise HTTPProblem(400, f"{name} must be one of {', '.join(allowed)}; got {str(fields[name])[:40]!r}.")
        return fields

    def annotator_page(session: Session, index: int | None, status: int = 200, message: str = "",
                       given: dict | None = None, undone: dict | None = None) -> HTMLResponse:
        try:
            view = service.view(session.user, index)
        except RoundMismatch as exc:
            raise HTTPProblem(404, str(exc), links=(("/review", "your next task"),)) from exc
        return render("review.html", status, session=session, view=view, round=view.round, done=view.done,
                      total=view.total, message=message, given=given or {}, undone=undone or {},
                      class_names=task_set.class_names, class_name=task_set.class_name)

    @app.get("/review", response_class=HTMLResponse)
    async def review(request: Request, task: str | None = None, undone: str | None = None):
        return await run_in_threadpool(review_work, request, task, undone)

    def review_work(request: Request, task: str | None, undone: str | None):
        index = int_param(task, "task")
        if undone not in (None, "1"):
            raise HTTPProblem(400, "undone must be 1 or absent.")
        session = require(session_of(request), next_url="/review" + (f"?task={index}" if index is not None else ""))
        if session.user.role == "admin":
            return redirect("/admin")
        if index is None:
            nxt = service.next_task(session.user)
            if nxt is not None:   # every task has its own address: Back shows that task, nothing else
                return redirect(f"/review?task={nxt}")
        return annotator_page(session, index, undone=undone_fields(request) if undone else None)

    @app.get("/api/round")
    async def api_round(request: Request):
        return await run_in_threadpool(api_round_work, request)

    def api_round_work(request: Request):
        require(session_of(request))
        rnd = service.current_round()
        return JSONResponse({"round": rnd, "round2_pairs": len(service.db.round2_pairs()) if rnd == 2 else 0})

    @app.post("/answer")
    async def answer(request: Request):
        return await run_in_threadpool(answer_work, request, await read_form(request))

    def answer_work(request: Request, form: FormData):
        index = int_param(form.get("task"), "task")
        rnd = int_param(form.get("round"), "round")
        if index is None or rnd is None:
            raise HTTPProblem(400, "an answer names its task and round (the form's task and round fields).")
        # no session (expired, logged out elsewhere): nothing is saved; the login brings the
        # annotator back to this task, where the page (which kept the answer) saves it again
        session = require(session_of(request), next_url=f"/review?task={index}")
        check_csrf(require(session, "annotator"), form, request)
        base = form.get("base")
        base = None if base is None else str(base)[:64]
        try:
            fields = answer_fields(form)
        except InputError as exc:
            return annotator_page(session, index, 400, str(exc),
                                  given={"label_correct": form.get("label_correct"), "similarity": form.get("similarity"),
                                         "reason": form.get("reason"), "added_labels": []})
        try:
            service.submit(session.user, index, rnd, fields, base)
        except RoundMismatch as exc:
            raise HTTPProblem(409, str(exc), links=(("/review", "your next task"),)) from exc
        except StaleAnswer as exc:
            raise HTTPProblem(409, str(exc), links=((f"/review?task={index}", "this task, as saved"),
                                                    ("/review", "your next task"))) from exc
        except (DataError, InputError) as exc:
            return annotator_page(session, index, 400, str(exc), given=fields)
        nxt = service.next_task(session.user)
        return redirect("/review" if nxt is None else f"/review?task={nxt}")

    @app.post("/undo")
    async def undo(request: Request):
        return await run_in_threadpool(undo_work, request, await read_form(request))

    def undo_work(request: Request, form: FormData):
        session = require(session_of(request), next_url="/review")
        check_csrf(require(session, "annotator"), form, request)
        removed = service.undo(session.user)
        if removed is None:
            return redirect("/review")
        task, old = removed
        query = [("task", str(task.index)), ("undone", "1"), ("label_correct", old.label_correct)]
        if not task.is_anchor_step:
            query += [("similarity", old.similarity or "")] + ([("reason", old.reason)] if old.reason else [])
        query += [("added_labels", str(c)) for c in old.added_labels]
        return redirect("/review?" + urlencode(query))

    @app.get("/api/answers/{annotator}")
    async def api_answers(request: Request, annotator: str):
        return await run_in_threadpool(api_answers_work, request, annotator)

    def api_answers_work(request: Request, annotator: str):
        session = require(session_of(request))
        if session.user.role != "admin" and session.user.name != annotator:
            raise HTTPProblem(403, "annotators may read only their own answers.")
        rows = service.db.answers(annotator=annotator[:200])
        return JSONResponse([{**asdict(a), "added_labels": list(a.added_labels)} for a in rows])


def add_frame_routes(app: FastAPI, pages: Pages) -> None:
    """``/frame/<key>``: a task's frame, resized for the page (or ``?size=full``)."""
    task_set, session_of, require = pages.task_set, pages.session_of, pages.require
    frames = pages.frames

    @app.get("/frame/{key:path}")
    async def frame(request: Request, key: str, size: str = ""):
        return await run_in_threadpool(frame_work, request, key, size)

    def frame_work(request: Request, key: str, size: str):
        require(session_of(request))
        if size not in ("", "full"):
            raise HTTPProblem(400, "size must be 'full' or absent.")
        path = task_set.frame_path(key)
        if path is None:
            raise HTTPProblem(404, "no such frame in this task set.")
        try:
            data = frames.get(key, path, full=size == "full")
        except RobustlabError as exc:
            raise HTTPProblem(404, f"frame {key!r} cannot be read: {exc}") from exc
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"})


def add_admin_routes(app: FastAPI, pages: Pages) -> None:
    """``/admin``: the overview, a pair's answers, the round changes, the export and finalize."""
    service, task_set = pages.service, pages.task_set
    render, session_of, require, check_csrf = pages.render, pages.session_of, pages.require, pages.check_csrf
    redirect, read_form = pages.redirect, pages.read_form

    def admin_page(session: Session, status: int = 200, notice: str = "", error: str = "",
                   refresh: int = ADMIN_REFRESH_SECONDS) -> HTMLResponse:
        return render("admin.html", status, session=session, o=service.overview(), message=notice,
                      error=error, class_name=task_set.class_name, now=time.strftime("%H:%M:%S"), refresh=refresh)

    @app.get("/admin", response_class=HTMLResponse)
    async def admin(request: Request, done: str = "", n: str | None = None, refresh: str | None = None):
        return await run_in_threadpool(admin_work, request, done, n, refresh)

    def admin_work(request: Request, done: str, n: str | None, refresh: str | None):
        if done and done not in DONE_NOTICES:
            raise HTTPProblem(400, f"done must be one of {', '.join(DONE_NOTICES)}.")
        count = int_param(n, "n") or 0
        seconds = int_param(refresh, "refresh", lo=1, hi=3600) or ADMIN_REFRESH_SECONDS
        session = require(session_of(request), "admin", next_url="/admin")
        return admin_page(session, notice=DONE_NOTICES[done].format(n=count) if done else "", refresh=seconds)

    @app.get("/admin/pair", response_class=HTMLResponse)
    async def admin_pair(request: Request, task: str | None = None):
        return await run_in_threadpool(admin_pair_work, request, task)

    def admin_pair_work(request: Request, task: str | None):
        index = int_param(task, "task", lo=0, hi=max(0, len(task_set) - 1))
        session = require(session_of(request), "admin", next_url="/admin" if index is None
                          else f"/admin/pair?task={index}")
        if index is None:
            raise HTTPProblem(400, "give the pair as ?task=N.")
        t = task_set.tasks[index]
        given = service.db.answers_to_pair(*t.pair)
        decisions = {r: joint_decisions([a for a in given if a.round == r]).get(t.pair) for r in (1, 2)}
        return render("pair.html", session=session, t=t, answers=given, decisions=decisions,
                      class_name=task_set.class_name)

    @app.get("/admin/confirm/{action}", response_class=HTMLResponse)
    async def admin_confirm(request: Request, action: str):
        return await run_in_threadpool(admin_confirm_work, request, action)

    def admin_confirm_work(request: Request, action: str, status: int = 200, error: str = ""):
        if action not in CONFIRM_ACTIONS:
            raise HTTPProblem(404, f"nothing to confirm called {action[:40]!r}; the actions are "
                                   f"{', '.join(CONFIRM_ACTIONS)}.")
        session = require(session_of(request), "admin", next_url="/admin")
        state = service.completeness()
        return render("confirm.html", status, session=session, action=action, state=state,
                      incomplete=describe_incomplete(state), round=state.round, error=error,
                      pending=len(service.pending_round2()) if state.round == 1 else None,
                      round2_answers=len(service.db.answers(round=2)) if state.round == 2 else 0,
                      finalizable=task_set.finalizable)

    def admin_action(action: str):
        """Register ``POST /admin/{action}``: the work runs for an admin session with a valid CSRF
        token and ``confirm=yes``; without the confirmation the admin is sent to its confirm page."""
        def register(work):
            def checked(request: Request, form: FormData):
                session = require(session_of(request), next_url="/admin")
                check_csrf(require(session, "admin"), form, request)
                if form.get("confirm") != "yes":
                    return redirect(f"/admin/confirm/{action}")
                return work(request, form, session)

            async def route(request: Request):
                return await run_in_threadpool(checked, request, await read_form(request))

            app.post(f"/admin/{action}", name=f"admin_{action}")(route)
            return work
        return register

    @admin_action("round2")
    def admin_round2_work(request: Request, form: FormData, session: Session):
        opened, n = service.open_round2()
        return redirect(f"/admin?done={'round2' if opened else 'round2-already'}&n={n}")

    @admin_action("round1")
    def admin_round1_work(request: Request, form: FormData, session: Session):
        try:
            reopened = service.reopen_round1()
        except RoundChangeRefused as exc:
            return admin_confirm_work(request, "round1", 409, str(exc))
        return redirect(f"/admin?done={'round1' if reopened else 'round1-already'}")

    @app.get("/admin/export.jsonl")
    async def admin_export(request: Request):
        return await run_in_threadpool(admin_export_work, request)

    def admin_export_work(request: Request):
        require(session_of(request), "admin", next_url="/admin")
        body = "".join(json.dumps(r.to_json()) + "\n" for r in service.records())
        return Response(body, media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="reviews.jsonl"'})

    @admin_action("finalize")
    def admin_finalize_work(request: Request, form: FormData, session: Session):
        try:
            service.finalize(require_anchor_review=form.get("require_anchor_review") == "on",
                             accept_incomplete=form.get("accept_incomplete") == "on", by=session.user.name)
        except IncompleteReview as exc:
            return admin_confirm_work(request, "finalize", 409, str(exc))
        except DataError as exc:
            return admin_page(session, 400, error=str(exc))
        return redirect("/admin?done=finalized")


__all__ = ["CSP", "MAX_BODY_BYTES", "NO_ANSWER", "create_app", "int_param"]
