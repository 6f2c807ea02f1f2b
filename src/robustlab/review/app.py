"""The review web app (FastAPI): login, the annotator page, frames, the admin page.

Routes (every page needs a session, except the login form; every POST checks the session's
CSRF token, and every POST but the login and logout that it comes from the browser that logged
in (:mod:`robustlab.review.web`); annotators get 403 on admin routes and on other annotators'
answers; every POST that changes something answers with a redirect, so a reload never sends
it again):

=============================  ==========  ===================================================
route                          who         what
=============================  ==========  ===================================================
``GET /``                      anyone      login form (logged in: redirect to the user's page;
                                           ``?unknown=1``: the form even then, see web.py)
``POST /login``                anyone      log in (rate-limited per user name: 429 after 5
                                           wrong in 60 s); back to ``next`` when given
``POST /logout``               logged in   end the session
``GET /review``                annotator   redirect to the first unanswered task (or: done)
``GET /review?task=N``         annotator   task N of the open round, with its saved answer
``POST /answer``               annotator   save an answer made on (task, round, version), then
                                           the next task (JSON for the page's script); no
                                           session: to the login, then back
``POST /undo``                 annotator   remove the last answer of the round; show its task
                                           with the removed answer filled in, unsaved
``GET /api/round``             logged in   the open round (the page polls it)
``GET /api/saved?task=N``      annotator   the annotator's saved answer to task N and its version
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
(413); forms take no file parts. Malformed query values get 400 or 404, never 500. No
response names a path of the server's disk.
"""

from __future__ import annotations

import json
import logging
import time
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from ..errors import DataError, RobustlabError
from .annotator import add_annotator_routes
from .rounds import joint_decisions
from .security import LoginRateLimiter, hash_password, login_key, new_token, same_token, token_hash, verify_password
from .service import IncompleteReview, ReviewService, RoundChangeRefused, describe_incomplete
from .web import (
    BROWSER_FIELD,
    BROWSER_KEY,
    CSP,
    CSRF_FIELD,
    LOGIN_COOKIE,
    LOGIN_COOKIE_SECONDS,
    MAX_BODY_BYTES,
    SAFE_NEXT,
    SESSION_COOKIE,
    HTTPProblem,
    LoginNeeded,
    Pages,
    SecurityHeaders,
    Session,
    int_param,
    login_url,
)

log = logging.getLogger(__name__)
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
#: What the login page says, by why the visitor was sent there.
LOGIN_NOTICES = {
    "expired": "Your session ended: log in again. An answer you had given is kept in this browser tab and "
               "saved after you log in.",
    "unknown": "This browser was holding a session that it did not log in to (a cookie set by someone or "
               "something else): it was not used. Log in with your own account; that session then ends.",
}


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
    """Problems as an error page (a JSON body for the API, frames and scripts); no session: the login."""

    @app.exception_handler(HTTPProblem)
    async def problem(request: Request, exc: HTTPProblem):
        return pages.problem_response(request, exc)

    @app.exception_handler(LoginNeeded)
    async def login_needed(request: Request, exc: LoginNeeded):
        target = login_url(exc, bool(request.cookies.get(SESSION_COOKIE)))
        if pages.is_api(request):
            return JSONResponse({"error": "log in first.", "login": target}, status_code=401)
        return pages.redirect(target)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return Response(status_code=204)


def add_login_routes(app: FastAPI, pages: Pages) -> None:
    """``/`` (the login page), ``/login`` (:func:`log_in`), ``/logout``."""
    service, session_of, require, redirect = pages.service, pages.session_of, pages.require, pages.redirect
    read_form = pages.read_form

    # Each route does its blocking work (database, argon2, templates) in one worker-thread hop.

    def index_work(request: Request, next_url: str, expired: str, unknown: str):
        if next_url and not SAFE_NEXT.match(next_url):
            raise HTTPProblem(400, "next must be a page of this app (/review or /admin).")
        if expired not in ("", "1") or unknown not in ("", "1"):
            raise HTTPProblem(400, "expired and unknown must be 1 or absent.")
        session = session_of(request)
        if session is not None and not unknown:
            home = pages.home_of(session.user)
            return redirect(next_url if next_url.startswith(home) else home)
        notice = LOGIN_NOTICES["unknown"] if unknown else LOGIN_NOTICES["expired"] if expired else ""
        return login_page(pages, next_url=next_url, notice=notice)

    @app.get("/", response_class=HTMLResponse)
    async def index(request: Request, next: str = "", expired: str = "", unknown: str = ""):
        return await run_in_threadpool(index_work, request, next, expired, unknown)

    @app.post("/login")
    async def login(request: Request):
        return await run_in_threadpool(log_in, pages, request, await read_form(request))

    @app.post("/logout")
    async def logout(request: Request):
        return await run_in_threadpool(logout_work, request, await read_form(request))

    def logout_work(request: Request, form: FormData):
        session = session_of(request)
        pages.check_csrf(require(session), form, request)
        service.db.delete_session(session.id_hash)
        response = redirect("/")
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response


def login_page(pages: Pages, status: int = 200, message: str = "", name: str = "",
               headers: dict | None = None, next_url: str = "", notice: str = "") -> HTMLResponse:
    """The login form, with a new CSRF token in its own signed cookie."""
    token = new_token()
    response = pages.render("login.html", status, csrf=token, message=message, name=name, session=None,
                            next_url=next_url if SAFE_NEXT.match(next_url or "") else "", notice=notice)
    pages.cookie(response, LOGIN_COOKIE, pages.login_signer.dumps({"csrf": token}), LOGIN_COOKIE_SECONDS)
    for k, v in (headers or {}).items():
        response.headers[k] = v
    return response


def log_in(pages: Pages, request: Request, form: FormData) -> Response:
    """``POST /login``: check the form's token, the browser key, the rate limit and the password;
    then a new session, tied to this browser, and the user's page (or ``next``)."""
    service = pages.service
    expected = pages.login_signer.loads(request.cookies.get(LOGIN_COOKIE), max_age=LOGIN_COOKIE_SECONDS)
    given = form.get(CSRF_FIELD)
    next_url = str(form.get("next") or "")
    next_url = next_url if SAFE_NEXT.match(next_url) else ""
    if not expected or not same_token(str(given) if given else None, expected.get("csrf")):
        return login_page(pages, 403, "the login form expired: try again.", next_url=next_url)
    browser = str(form.get(BROWSER_FIELD) or "")
    if not BROWSER_KEY.match(browser):
        return login_page(pages, 400, "this login form needs JavaScript and the browser's local storage (a "
                          "session is tied to the browser that logged in): turn them on for this site and "
                          "reload the page.", next_url=next_url)
    name = str(form.get("username") or "").strip()[:64]
    password = str(form.get("password") or "")
    key = login_key(name)
    ticket, wait = pages.limiter.begin(key)   # checks the limit and counts this attempt, atomically
    if ticket is None:
        return login_page(pages, 429, f"too many wrong passwords for {name!r}: wait {wait} s before trying "
                          "again.", name, headers={"Retry-After": str(wait)}, next_url=next_url)
    found = service.db.user_with_hash(name) if name else None
    ok, rehash = verify_password(found[1] if found else None, password)
    if not ok:
        return login_page(pages, 401, "wrong user name or password.", name, next_url=next_url)
    pages.limiter.succeeded(key, ticket)
    user = found[0]
    if rehash:
        service.db.set_password_hash(user.name, hash_password(password))
    # A new session id at every login, tied to this browser; the session this browser carried
    # (if any, e.g. a cookie planted by someone else) ends on the server.
    old = pages.session_of(request)
    if old is not None:
        service.db.delete_session(old.id_hash)
    sid, csrf = new_token(), new_token()
    service.db.create_session(user.name, token_hash(sid), csrf)
    home = pages.home_of(user)
    response = pages.redirect(next_url if next_url.startswith(home) else home)
    pages.session_cookie(response, sid, browser)
    response.delete_cookie(LOGIN_COOKIE, path="/")
    return response


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
        except RobustlabError as exc:   # the reason names the file: for the server's log, not the page
            log.warning("frame %r cannot be read: %s", key, exc)
            raise HTTPProblem(404, f"frame {key!r} cannot be read as an image (the server's log says why).") \
                from None
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"})


def add_admin_routes(app: FastAPI, pages: Pages) -> None:
    """``/admin``: the overview, a pair's answers, the round changes, the export and finalize."""
    service, task_set = pages.service, pages.task_set
    render, session_of, require = pages.render, pages.session_of, pages.require

    @app.get("/admin", response_class=HTMLResponse)
    async def admin(request: Request, done: str = "", n: str | None = None, refresh: str | None = None):
        return await run_in_threadpool(admin_work, request, done, n, refresh)

    def admin_work(request: Request, done: str, n: str | None, refresh: str | None):
        if done and done not in DONE_NOTICES:
            raise HTTPProblem(400, f"done must be one of {', '.join(DONE_NOTICES)}.")
        count = int_param(n, "n") or 0
        seconds = int_param(refresh, "refresh", lo=1, hi=3600) or ADMIN_REFRESH_SECONDS
        session = require(session_of(request), "admin", next_url="/admin")
        return admin_page(pages, session, notice=DONE_NOTICES[done].format(n=count) if done else "",
                          refresh=seconds)

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
        return await run_in_threadpool(confirm_page, pages, request, action)

    @app.get("/admin/export.jsonl")
    async def admin_export(request: Request):
        return await run_in_threadpool(admin_export_work, request)

    def admin_export_work(request: Request):
        require(session_of(request), "admin", next_url="/admin")
        body = "".join(json.dumps(r.to_json()) + "\n" for r in service.records())
        return Response(body, media_type="application/x-ndjson",
                        headers={"Content-Disposition": 'attachment; filename="reviews.jsonl"'})

    add_admin_actions(app, pages)


def admin_page(pages: Pages, session: Session, status: int = 200, notice: str = "", error: str = "",
               refresh: int = ADMIN_REFRESH_SECONDS) -> HTMLResponse:
    """The admin's overview (progress, agreement, reasons, disagreements, actions)."""
    return pages.render("admin.html", status, session=session, o=pages.service.overview(), message=notice,
                        error=error, class_name=pages.task_set.class_name, now=time.strftime("%H:%M:%S"),
                        refresh=refresh)


def confirm_page(pages: Pages, request: Request, action: str, status: int = 200, error: str = "") -> HTMLResponse:
    """``GET /admin/confirm/{action}``: what is incomplete, and the form that does ``action``."""
    service = pages.service
    if action not in CONFIRM_ACTIONS:
        raise HTTPProblem(404, f"nothing to confirm called {action[:40]!r}; the actions are "
                               f"{', '.join(CONFIRM_ACTIONS)}.")
    session = pages.require(pages.session_of(request), "admin", next_url="/admin")
    state = service.completeness()
    return pages.render("confirm.html", status, session=session, action=action, state=state,
                        incomplete=describe_incomplete(state), round=state.round, error=error,
                        pending=len(service.pending_round2()) if state.round == 1 else None,
                        round2_answers=len(service.db.answers(round=2)) if state.round == 2 else 0,
                        finalizable=pages.task_set.finalizable)


def admin_action(app: FastAPI, pages: Pages, action: str):
    """Register ``POST /admin/{action}``: the work runs for an admin session with a valid CSRF
    token and ``confirm=yes``; without the confirmation the admin is sent to its confirm page."""
    def register(work):
        def checked(request: Request, form: FormData):
            session = pages.check_post(pages.session_of(request), form, request, "admin", next_url="/admin")
            if form.get("confirm") != "yes":
                return pages.redirect(f"/admin/confirm/{action}")
            return work(request, form, session)

        async def route(request: Request):
            return await run_in_threadpool(checked, request, await pages.read_form(request))

        app.post(f"/admin/{action}", name=f"admin_{action}")(route)
        return work
    return register


def add_admin_actions(app: FastAPI, pages: Pages) -> None:
    """``POST /admin/round2``, ``/admin/round1`` and ``/admin/finalize`` (each confirmed first)."""
    service, redirect = pages.service, pages.redirect

    @admin_action(app, pages, "round2")
    def admin_round2_work(request: Request, form: FormData, session: Session):
        opened, n = service.open_round2(by=session.user.name)
        return redirect(f"/admin?done={'round2' if opened else 'round2-already'}&n={n}")

    @admin_action(app, pages, "round1")
    def admin_round1_work(request: Request, form: FormData, session: Session):
        try:
            reopened = service.reopen_round1(by=session.user.name)
        except RoundChangeRefused as exc:
            return confirm_page(pages, request, "round1", 409, str(exc))
        return redirect(f"/admin?done={'round1' if reopened else 'round1-already'}")

    @admin_action(app, pages, "finalize")
    def admin_finalize_work(request: Request, form: FormData, session: Session):
        try:
            service.finalize(require_anchor_review=form.get("require_anchor_review") == "on",
                             accept_incomplete=form.get("accept_incomplete") == "on", by=session.user.name)
        except IncompleteReview as exc:
            return confirm_page(pages, request, "finalize", 409, str(exc))
        except DataError as exc:
            return admin_page(pages, session, 400, error=str(exc))
        return redirect("/admin?done=finalized")


__all__ = ["CSP", "MAX_BODY_BYTES", "Session", "create_app", "int_param"]
