"""What every route of the review app shares: sessions tied to the browser that logged in,
CSRF checks, the security headers and body cap, error types, templates, query checks.

**A session belongs to the browser that logged in.** The login form carries this browser's
key: a random value the page's script keeps in the browser's local storage (made on first
use, never sent to another site). The session cookie records it, signed. Every POST but the
login and logout must carry the same key (a form field, or the ``X-Review-Browser`` header),
and every page tells its script the key of its session, so a session cookie this browser did
not get by logging in (planted by someone else, e.g. their own session) is never used: the
page sends the visitor to the login (``/?unknown=1``), and a POST is answered like one without
a session. A cookie can be planted; local storage cannot be written from another site.
"""

from __future__ import annotations

import json
import math
import re
import time
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData

from ..video.review import REASONS
from .answers import User
from .database import SESSION_SECONDS
from .frames import FrameCache
from .security import CookieSigner, LoginRateLimiter, same_token, token_hash
from .service import ReviewService

SESSION_COOKIE = "robustlab_review_session"
LOGIN_COOKIE = "robustlab_review_login"
LOGIN_COOKIE_SECONDS = 3600
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
#: This browser's key (see the module docstring): a form field, or this header.
BROWSER_FIELD = "browser"
BROWSER_HEADER = "x-review-browser"
BROWSER_KEY = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
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


class HTTPProblem(Exception):
    """A response that ends a request early (status code, message, optional headers, links on,
    and a ``code`` word the page's script reads, e.g. ``"csrf"``)."""

    def __init__(self, status: int, message: str, headers: dict | None = None, links: tuple = (),
                 code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.links = links
        self.code = code


class LoginNeeded(Exception):
    """No live session, or (``unknown``) one this browser did not log in to: pages redirect to
    the login (and back to ``next`` after it); scripts get 401 and the login's address."""

    def __init__(self, next_url: str | None = None, *, unknown: bool = False) -> None:
        super().__init__("log in first.")
        self.next_url = next_url
        self.unknown = unknown


class Session:
    """The logged-in user of a request, their session's CSRF token, and the key of the browser
    that logged in (None for a cookie made before sessions were tied to a browser)."""

    def __init__(self, user: User, csrf: str, id_hash: str, browser: str | None = None) -> None:
        self.user = user
        self.csrf = csrf
        self.id_hash = id_hash
        self.browser = browser


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


def templates() -> Environment:
    """The Jinja2 environment of the app's pages (autoescaped), with its filters and globals."""
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


def class_label(index: int, name: str) -> str:
    """How a class is shown: its number and name (``3 dog``), or once when the name is the
    number itself (a set whose classes are named ``0``, ``1``, ...: ``0``, never ``0 0``)."""
    return name if name == str(index) else f"{index} {name}"


def login_url(exc: LoginNeeded, had_cookie: bool) -> str:
    """Where a request without a usable session goes: the login page, saying why, and back to
    ``next`` after it when that is a page of this app."""
    query = {"unknown": "1"} if exc.unknown else {"expired": "1"} if had_cookie else {}
    if exc.next_url and SAFE_NEXT.match(exc.next_url):
        query["next"] = exc.next_url
    return "/" + ("?" + urlencode(query) if query else "")


class Pages:
    """What every route of the app shares: the service, templates, cookies, the session of a request,
    and the checks (login, role, CSRF, this browser) every page makes."""

    def __init__(self, service: ReviewService, *, secure_cookies: bool, rate_limiter: LoginRateLimiter | None) -> None:
        self.service = service
        self.task_set = service.task_set
        self.env = templates()
        self.env.globals["class_label"] = lambda c: class_label(c, self.task_set.class_name(c))
        self.signer = CookieSigner(service.db.secret(), "session")
        self.login_signer = CookieSigner(service.db.secret(), "login")
        self.limiter = rate_limiter if rate_limiter is not None else LoginRateLimiter()
        self.frames = FrameCache()
        self.secure_cookies = secure_cookies

    def render(self, template: str, status: int = 200, /, **context: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(template).render(**context), status_code=status)

    @staticmethod
    def is_api(request: Request) -> bool:
        """A request answered in JSON: the API, frames, and scripts that ask for JSON."""
        return request.url.path.startswith(("/api/", "/frame/")) or wants_json(request)

    def session_of(self, request: Request) -> Session | None:
        payload = self.signer.loads(request.cookies.get(SESSION_COOKIE), max_age=SESSION_SECONDS)
        sid = payload.get("sid") if payload else None
        if not isinstance(sid, str):
            return None
        id_hash = token_hash(sid)
        found = self.service.db.session(id_hash)
        browser = payload.get("b")
        return None if found is None else Session(found[0], found[1], id_hash,
                                                  browser if isinstance(browser, str) else None)

    def session_cookie(self, response: Response, sid: str, browser: str) -> None:
        """Set the session cookie: the session id and the key of the browser that logged in, signed."""
        self.cookie(response, SESSION_COOKIE, self.signer.dumps({"sid": sid, "b": browser}), SESSION_SECONDS)

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
            raise HTTPProblem(403, "the form's security token is out of date (this page was shown before a logout "
                                   "or a new login): nothing was saved. Reload the page and try again.",
                              code="csrf")

    @staticmethod
    def check_browser(session: Session, form: FormData, request: Request, next_url: str | None) -> None:
        """Refuse a POST that does not come from the browser that logged in to the session
        (answered like a POST without a session: to the login)."""
        given = form.get(BROWSER_FIELD) or request.headers.get(BROWSER_HEADER)
        if session.browser is None or not same_token(str(given) if given else None, session.browser):
            raise LoginNeeded(next_url, unknown=True)

    def check_post(self, session: Session | None, form: FormData, request: Request, role: str,
                   next_url: str | None = None) -> Session:
        """The checks of a POST that changes something: a session (else to the login, then back
        to ``next_url``), of this browser, in ``role``, with the session's CSRF token."""
        session = self.require(session, next_url=next_url)
        self.check_browser(session, form, request, next_url)
        self.require(session, role)
        self.check_csrf(session, form, request)
        return session

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

    def problem_response(self, request: Request, exc: HTTPProblem) -> Response:
        """An :class:`HTTPProblem` as JSON (API, frames, scripts) or as the error page."""
        if self.is_api(request):
            body = {"error": exc.message, "links": [{"href": h, "text": t} for h, t in exc.links]}
            if exc.code:
                body["code"] = exc.code
            return JSONResponse(body, status_code=exc.status, headers=exc.headers)
        return HTMLResponse(self.env.get_template("error.html").render(status=exc.status, message=exc.message,
                                                                        links=exc.links, session=None),
                            status_code=exc.status, headers=exc.headers)


def wants_json(request: Request) -> bool:
    """The page's script asked for JSON (``Accept: application/json``) rather than a page."""
    return "application/json" in request.headers.get("accept", "")


__all__ = ["CSP", "MAX_BODY_BYTES", "HTTPProblem", "LoginNeeded", "Pages", "SecurityHeaders", "Session",
           "class_label", "int_param", "login_url", "templates", "wants_json"]
