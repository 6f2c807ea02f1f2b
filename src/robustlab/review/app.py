"""The review web app (FastAPI): login, the annotator page, frames, the admin page.

Routes (every page needs a session, except the login form; every POST checks the session's
CSRF token; annotators get 403 on admin routes and on other annotators' answers):

==========================  ==========  ======================================================
route                       who         what
==========================  ==========  ======================================================
``GET /``                   anyone      login form (logged in: redirect to the user's page)
``POST /login``             anyone      log in (rate-limited: 429 after 5 wrong in 60 s)
``POST /logout``            logged in   end the session
``GET /review``             annotator   the next task (``?task=N``: task N of the open round)
``POST /answer``            annotator   save an answer (idempotent), then the next task
``POST /undo``              annotator   remove the last answer of the round, show its task
``GET /frame/{key}``        logged in   a frame of the task set (resized JPEG); else 404
``GET /api/answers/{name}`` self/admin  an annotator's answers as JSON
``GET /admin``              admin       progress, agreement, reasons, disagreements, actions
``POST /admin/round2``      admin       close round 1, open round 2
``GET /admin/export.jsonl`` admin       every answer as review JSON Lines
``POST /admin/finalize``    admin       export and finalize into pmsets.json / labels.json
==========================  ==========  ======================================================
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from ..errors import DataError, InputError, RobustlabError
from ..video.review import REASONS
from .database import SESSION_SECONDS, User
from .frames import FrameCache
from .security import (
    CookieSigner,
    LoginRateLimiter,
    hash_password,
    new_token,
    same_token,
    token_hash,
    verify_password,
)
from .service import ReviewService, RoundMismatch

SESSION_COOKIE = "robustlab_review_session"
LOGIN_COOKIE = "robustlab_review_login"
LOGIN_COOKIE_SECONDS = 3600
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
#: Content Security Policy: only this origin's scripts, styles and images; no framing.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
REASON_TITLES = {"motion": "significant motion", "background_change": "background change",
                 "blur_change": "blur change", "other": "other"}
ANSWER_TITLES = {"yes": "yes", "no": "no", "unsure": "don't know", "similar": "similar",
                 "dissimilar": "dissimilar", None: "-"}


class HTTPProblem(Exception):
    """A response that ends a request early (status code, message, optional headers)."""

    def __init__(self, status: int, message: str, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class Session:
    """The logged-in user of a request and their session's CSRF token."""

    def __init__(self, user: User, csrf: str, id_hash: str) -> None:
        self.user = user
        self.csrf = csrf
        self.id_hash = id_hash


class SecurityHeaders:
    """ASGI middleware adding the security headers to every response (CSP, no framing, no
    sniffing, same-origin referrers; ``no-store`` unless the route set its own caching)."""

    HEADERS = ((b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
               (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"))

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in dict(self.HEADERS)]
                headers += list(self.HEADERS)
                if not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _templates() -> Environment:
    folder = resources.files("robustlab.review") / "templates"
    env = Environment(loader=FileSystemLoader(str(folder)), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(REASONS=REASONS, REASON_TITLES=REASON_TITLES, ANSWER_TITLES=ANSWER_TITLES)
    env.filters["kappa"] = lambda v: "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"
    return env


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
        Wrong-password counter (default: 5 per user and address in 60 s).
    """
    env = _templates()
    signer = CookieSigner(service.db.secret(), "session")
    login_signer = CookieSigner(service.db.secret(), "login")
    limiter = rate_limiter or LoginRateLimiter()
    frames = FrameCache()
    app = FastAPI(title="robustlab review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=str(resources.files("robustlab.review") / "static")),
              name="static")

    # --- plumbing ---------------------------------------------------------------------------------

    def render(template: str, status: int = 200, /, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(template).render(**context), status_code=status)

    @app.exception_handler(HTTPProblem)
    async def problem(request: Request, exc: HTTPProblem):
        if request.url.path.startswith(("/api/", "/frame/")) or exc.status in (401,):
            return JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)
        return HTMLResponse(env.get_template("error.html").render(status=exc.status, message=exc.message,
                                                                   session=None),
                            status_code=exc.status, headers=exc.headers)

    def session_of(request: Request) -> Session | None:
        payload = signer.loads(request.cookies.get(SESSION_COOKIE), max_age=SESSION_SECONDS)
        sid = payload.get("sid") if payload else None
        if not isinstance(sid, str):
            return None
        id_hash = token_hash(sid)
        found = service.db.session(id_hash)
        return None if found is None else Session(found[0], found[1], id_hash)

    def require(session: Session | None, role: str | None = None) -> Session:
        if session is None:
            raise HTTPProblem(401, "log in first.")
        if role is not None and session.user.role != role:
            raise HTTPProblem(403, f"this page is for {role}s; you are logged in as {session.user.role} "
                                   f"{session.user.name!r}.")
        return session

    def check_csrf(session: Session | None, form: FormData, request: Request) -> None:
        given = form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
        if session is None or not same_token(str(given) if given else None, session.csrf):
            raise HTTPProblem(403, "the form's security token is missing or out of date: reload the page "
                                   "and try again.")

    def redirect(url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303)

    def home_of(user: User) -> str:
        return "/admin" if user.role == "admin" else "/review"

    def cookie(response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(name, value, max_age=max_age, httponly=True, samesite="lax",
                            secure=secure_cookies, path="/")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return Response(status_code=204)

    # --- login / logout -----------------------------------------------------------------------------

    def login_page(request: Request, status: int = 200, message: str = "", name: str = "",
                   headers: dict | None = None) -> HTMLResponse:
        token = new_token()
        response = render("login.html", status, csrf=token, message=message, name=name, session=None)
        cookie(response, LOGIN_COOKIE, login_signer.dumps({"csrf": token}), LOGIN_COOKIE_SECONDS)
        for k, v in (headers or {}).items():
            response.headers[k] = v
        return response

    # Each route does its blocking work (database, argon2, templates) in one worker-thread hop.

    def index_work(request: Request):
        session = session_of(request)
        if session is not None:
            return redirect(home_of(session.user))
        return login_page(request)

    @app.get("/", response_class=HTMLResponse)
    async def index(request: Request):
        return await run_in_threadpool(index_work, request)

    @app.post("/login")
    async def login(request: Request):
        return await run_in_threadpool(login_work, request, await request.form())

    def login_work(request: Request, form: FormData):
        expected = login_signer.loads(request.cookies.get(LOGIN_COOKIE), max_age=LOGIN_COOKIE_SECONDS)
        given = form.get(CSRF_FIELD)
        if not expected or not same_token(str(given) if given else None, expected.get("csrf")):
            return login_page(request, 403, "the login form expired: try again.")
        name = str(form.get("username") or "").strip()[:64]
        password = str(form.get("password") or "")
        key = (name.lower(), request.client.host if request.client else "?")
        if limiter.blocked(key):
            wait = limiter.retry_after(key)
            return login_page(request, 429, f"too many wrong passwords: wait {wait} s before trying again.",
                              name, headers={"Retry-After": str(wait)})
        found = service.db.user_with_hash(name) if name else None
        ok, rehash = verify_password(found[1] if found else None, password)
        if not ok:
            limiter.record_failure(key)
            return login_page(request, 401, "wrong user name or password.", name)
        user = found[0]
        if rehash:
            service.db.set_password_hash(user.name, hash_password(password))
        sid, csrf = new_token(), new_token()
        service.db.create_session(user.name, token_hash(sid), csrf)
        response = redirect(home_of(user))
        cookie(response, SESSION_COOKIE, signer.dumps({"sid": sid}), SESSION_SECONDS)
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response

    @app.post("/logout")
    async def logout(request: Request):
        return await run_in_threadpool(logout_work, request, await request.form())

    def logout_work(request: Request, form: FormData):
        session = session_of(request)
        check_csrf(require(session), form, request)
        service.db.delete_session(session.id_hash)
        response = redirect("/")
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # --- annotator --------------------------------------------------------------------------------------

    def annotator_page(session: Session, index: int | None, status: int = 200, message: str = "",
                       given: dict | None = None) -> HTMLResponse:
        try:
            view = service.view(session.user, index)
        except RoundMismatch as exc:
            raise HTTPProblem(404, str(exc)) from exc
        return render("review.html", status, session=session, view=view, round=view.round, done=view.done,
                      total=view.total, message=message, given=given or {},
                      class_names=service.task_set.class_names, class_name=service.task_set.class_name)

    @app.get("/review", response_class=HTMLResponse)
    async def review(request: Request, task: int | None = None):
        return await run_in_threadpool(review_work, request, task)

    def review_work(request: Request, task: int | None):
        session = session_of(request)
        if session is None:
            return redirect("/")
        if session.user.role == "admin":
            return redirect("/admin")
        return annotator_page(session, task)

    def answer_fields(form: FormData) -> dict:
        added = []
        typed = [v for v in str(form.get("added_labels_text") or "").replace(";", ",").split(",") if v.strip()]
        for value in [*form.getlist("added_labels"), *typed]:
            try:
                added.append(int(str(value).strip()))
            except ValueError:
                raise HTTPProblem(400, f"added label {str(value)[:40]!r} is not a class index.") from None
        return {"label_correct": form.get("label_correct"), "similarity": form.get("similarity"),
                "reason": form.get("reason"), "added_labels": added}

    def int_field(form: FormData, name: str) -> int:
        try:
            return int(str(form.get(name)))
        except ValueError:
            raise HTTPProblem(400, f"the form's {name} is not a number.") from None

    @app.post("/answer")
    async def answer(request: Request):
        return await run_in_threadpool(answer_work, request, await request.form())

    def answer_work(request: Request, form: FormData):
        session = session_of(request)
        check_csrf(require(session, "annotator"), form, request)
        index, rnd = int_field(form, "task"), int_field(form, "round")
        fields = answer_fields(form)
        try:
            service.submit(session.user, index, rnd, fields)
        except RoundMismatch as exc:
            raise HTTPProblem(409, str(exc)) from exc
        except (DataError, InputError) as exc:
            return annotator_page(session, index, 400, str(exc), given=fields)
        return redirect("/review")

    @app.post("/undo")
    async def undo(request: Request):
        return await run_in_threadpool(undo_work, request, await request.form())

    def undo_work(request: Request, form: FormData):
        session = session_of(request)
        check_csrf(require(session, "annotator"), form, request)
        task = service.undo(session.user)
        return redirect("/review" if task is None else f"/review?task={task.index}")

    @app.get("/api/answers/{annotator}")
    async def api_answers(request: Request, annotator: str):
        return await run_in_threadpool(api_answers_work, request, annotator)

    def api_answers_work(request: Request, annotator: str):
        session = require(session_of(request))
        if session.user.role != "admin" and session.user.name != annotator:
            raise HTTPProblem(403, "annotators may read only their own answers.")
        rows = service.db.answers(annotator=annotator)
        return JSONResponse([{**asdict(a), "added_labels": list(a.added_labels)} for a in rows])

    # --- frames ---------------------------------------------------------------------------------------------

    @app.get("/frame/{key:path}")
    async def frame(request: Request, key: str):
        return await run_in_threadpool(frame_work, request, key)

    def frame_work(request: Request, key: str):
        require(session_of(request))
        path = service.task_set.frame_path(key)
        if path is None:
            raise HTTPProblem(404, "no such frame in this task set.")
        try:
            data = frames.get(key, path)
        except RobustlabError as exc:
            raise HTTPProblem(404, f"frame {key!r} cannot be read: {exc}") from exc
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"})

    # --- admin --------------------------------------------------------------------------------------------------

    def admin_page(session: Session, status: int = 200, message: str = "", summary: dict | None = None,
                   error: str = "") -> HTMLResponse:
        return render("admin.html", status, session=session, o=service.overview(), message=message,
                      summary=summary, error=error, class_name=service.task_set.class_name)

    @app.get("/admin", response_class=HTMLResponse)
    async def admin(request: Request):
        return await run_in_threadpool(admin_work, request)

    def admin_work(request: Request):
        session = session_of(request)
        if session is None:
            return redirect("/")
        return admin_page(require(session, "admin"))

    @app.post("/admin/round2")
    async def admin_round2(request: Request):
        return await run_in_threadpool(admin_round2_work, request, await request.form())

    def admin_round2_work(request: Request, form: FormData):
        session = session_of(request)
        check_csrf(require(session, "admin"), form, request)
        opened, n = service.open_round2()
        message = (f"round 2 is open on {n} pair(s)." if opened else f"round 2 was already open ({n} pairs).")
        return admin_page(session, message=message)

    @app.get("/admin/export.jsonl")
    async def admin_export(request: Request):
        return await run_in_threadpool(admin_export_work, request)

    def admin_export_work(request: Request):
        require(session_of(request), "admin")
        body = "".join(json.dumps(r.to_json()) + "\n" for r in service.records())
        return Response(body, media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="reviews.jsonl"'})

    @app.post("/admin/finalize")
    async def admin_finalize(request: Request):
        return await run_in_threadpool(admin_finalize_work, request, await request.form())

    def admin_finalize_work(request: Request, form: FormData):
        session = session_of(request)
        check_csrf(require(session, "admin"), form, request)
        try:
            summary = service.finalize(require_anchor_review=form.get("require_anchor_review") == "on")
        except DataError as exc:
            return admin_page(session, 400, error=str(exc))
        return admin_page(session, message="finalized.", summary=summary)

    return app
