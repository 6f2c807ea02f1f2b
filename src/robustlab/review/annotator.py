"""The annotator's routes: the task page, saving and undoing an answer, and the page's small API.

Only an answer given on the current state of its task is saved. Every page that can submit
carries the version of the answer it shows (``base``, :func:`robustlab.review.answers.version_token`):
the task page, the page an undo shows (its address names the version the undo left), and a
draft the page's script restores (the version it was made on). A different answer made on an
older version is refused with 409 and links to the task as it is now. An undo page shown again
later (Back, a reload, a second tab) after the task changed shows the task as it is now, and
says so.

``POST /answer`` answers the page's script in JSON (``Accept: application/json``): where to go
next, or why nothing was saved (with ``code`` ``"csrf"`` when the page's token is out of date:
a logout or a new login in another tab); a plain form gets redirects and pages.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from ..errors import DataError, InputError
from ..video.review import LABEL_ANSWERS, REASONS, SIMILARITY_ANSWERS
from .service import RoundMismatch, StaleAnswer
from .web import HTTPProblem, Pages, Session, int_param, wants_json

#: A version token as pages carry it.
BASE = re.compile(r"^v\d{1,12}$")


def add_annotator_routes(app: FastAPI, pages: Pages) -> None:
    """``/review``, ``/answer``, ``/undo``, and the page's API (:func:`add_annotator_api`)."""
    add_annotator_api(app, pages)
    views = AnnotatorViews(pages)
    add_task_route(app, pages, views)
    add_answer_routes(app, pages, views)


class AnnotatorViews:
    """The annotator's page and the answer fields it sends (a form, or an undo's query)."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.service, self.task_set = pages.service, pages.task_set

    def class_index(self, value: str) -> int:
        """An added label, typed as a class number or a class name of the set."""
        task_set = self.task_set
        text = value.strip()
        if re.fullmatch(r"\d{1,9}", text):
            return int(text)
        names = {n.casefold(): i for i, n in enumerate(task_set.class_names)}
        if text.casefold() in names:
            return names[text.casefold()]
        raise InputError(f"added label {text[:40]!r} is not a class number"
                         + (" or class name" if task_set.class_names else "") + " of this set.")

    def answer_fields(self, form) -> dict:
        """The answer's fields of a form (or query): ticked and typed added labels as class indices."""
        typed = [v for v in str(form.get("added_labels_text") or "").replace(";", ",").split(",") if v.strip()]
        added = sorted({self.class_index(str(v)) for v in [*form.getlist("added_labels"), *typed]})
        return {"label_correct": form.get("label_correct"), "similarity": form.get("similarity"),
                "reason": form.get("reason"), "added_labels": added}

    def undone_fields(self, request: Request) -> dict:
        """The removed answer an undo shows again (query values, checked like an answer)."""
        q = request.query_params
        try:
            fields = self.answer_fields(q)
        except InputError as exc:
            raise HTTPProblem(400, str(exc)) from None
        for name, allowed in (("label_correct", LABEL_ANSWERS), ("similarity", SIMILARITY_ANSWERS),
                              ("reason", REASONS)):
            if fields[name] is not None and fields[name] not in allowed:
                raise HTTPProblem(400, f"{name} must be one of {', '.join(allowed)}; got {str(fields[name])[:40]!r}.")
        return fields

    def page(self, session: Session, index: int | None, status: int = 200, message: str = "",
             given: dict | None = None, undone: dict | None = None, undone_base: str = "") -> HTMLResponse:
        """Task ``index`` (None: the round is done) as the annotator sees it now."""
        try:
            view = self.service.view(session.user, index)
        except RoundMismatch as exc:
            raise HTTPProblem(404, str(exc), links=(("/review", "your next task"),)) from exc
        stale_undo = bool(undone) and undone_base != view.base   # the task changed since the undo
        task_set = self.task_set
        return self.pages.render("review.html", status, session=session, view=view, round=view.round,
                                 done=view.done, total=view.total, message=message, given=given or {},
                                 undone={} if stale_undo else undone or {}, stale_undo=stale_undo,
                                 class_names=task_set.class_names, class_name=task_set.class_name)


def add_task_route(app: FastAPI, pages: Pages, views: AnnotatorViews) -> None:
    """``GET /review``: the annotator's next task, or task N (with an undone answer filled in)."""
    service, session_of, require, redirect = pages.service, pages.session_of, pages.require, pages.redirect

    @app.get("/review", response_class=HTMLResponse)
    async def review(request: Request, task: str | None = None, undone: str | None = None, base: str = ""):
        return await run_in_threadpool(review_work, request, task, undone, base)

    def review_work(request: Request, task: str | None, undone: str | None, base: str):
        index = int_param(task, "task")
        if undone not in (None, "1"):
            raise HTTPProblem(400, "undone must be 1 or absent.")
        if base and not BASE.match(base):
            raise HTTPProblem(400, "base must be a version like v3, or absent.")
        session = require(session_of(request), next_url="/review" + (f"?task={index}" if index is not None else ""))
        if session.user.role == "admin":
            return redirect("/admin")
        if index is None:
            nxt = service.next_task(session.user)
            if nxt is not None:   # every task has its own address: Back shows that task, nothing else
                return redirect(f"/review?task={nxt}")
        return views.page(session, index, undone=views.undone_fields(request) if undone else None, undone_base=base)


def add_answer_routes(app: FastAPI, pages: Pages, views: AnnotatorViews) -> None:
    """``POST /answer`` (save an answer, then the next task) and ``POST /undo``."""
    service, session_of, redirect, read_form = pages.service, pages.session_of, pages.redirect, pages.read_form

    @app.post("/answer")
    async def answer(request: Request):
        return await run_in_threadpool(answer_work, request, await read_form(request))

    def answer_work(request: Request, form: FormData):
        index = int_param(form.get("task"), "task")
        rnd = int_param(form.get("round"), "round")
        if index is None or rnd is None:
            raise HTTPProblem(400, "an answer names its task and round (the form's task and round fields).")
        # no session (expired, logged out elsewhere, or one this browser did not log in to):
        # nothing is saved; the login brings the annotator back to this task, where the page
        # (which kept the answer) saves it again
        session = pages.check_post(session_of(request), form, request, "annotator", next_url=f"/review?task={index}")
        base = form.get("base")
        base = None if base is None else str(base)[:64]
        fields = None
        try:
            fields = views.answer_fields(form)
            changed = service.submit(session.user, index, rnd, fields, base)
        except RoundMismatch as exc:
            raise HTTPProblem(409, str(exc), links=(("/review", "your next task"),)) from exc
        except StaleAnswer as exc:
            raise HTTPProblem(409, str(exc), links=((f"/review?task={index}", "this task, as it is now"),
                                                    ("/review", "your next task"))) from exc
        except (DataError, InputError) as exc:
            if wants_json(request):
                raise HTTPProblem(400, str(exc)) from exc
            given = fields or {**{k: form.get(k) for k in ("label_correct", "similarity", "reason")},
                               "added_labels": []}
            return views.page(session, index, 400, str(exc), given=given)
        nxt = service.next_task(session.user)
        target = "/review" if nxt is None else f"/review?task={nxt}"
        if wants_json(request):
            return JSONResponse({"saved": bool(changed), "next": target})
        return redirect(target)

    @app.post("/undo")
    async def undo(request: Request):
        return await run_in_threadpool(undo_work, request, await read_form(request))

    def undo_work(request: Request, form: FormData):
        session = pages.check_post(session_of(request), form, request, "annotator", next_url="/review")
        removed = service.undo(session.user)
        if removed is None:
            return redirect("/review")
        task, old, base = removed
        query = [("task", str(task.index)), ("undone", "1"), ("base", base), ("label_correct", old.label_correct)]
        if not task.is_anchor_step:
            query += [("similarity", old.similarity or "")] + ([("reason", old.reason)] if old.reason else [])
        query += [("added_labels", str(c)) for c in old.added_labels]
        return redirect("/review?" + urlencode(query))


def add_annotator_api(app: FastAPI, pages: Pages) -> None:
    """What the page's script asks: ``/api/round``, ``/api/saved``, ``/api/answers/{name}``."""
    service, session_of, require = pages.service, pages.session_of, pages.require

    @app.get("/api/round")
    async def api_round(request: Request):
        return await run_in_threadpool(api_round_work, request)

    def api_round_work(request: Request):
        require(session_of(request))
        rnd = service.current_round()
        return JSONResponse({"round": rnd, "round2_pairs": len(service.db.round2_pairs()) if rnd == 2 else 0})

    @app.get("/api/saved")
    async def api_saved(request: Request, task: str | None = None):
        return await run_in_threadpool(api_saved_work, request, task)

    def api_saved_work(request: Request, task: str | None):
        """The annotator's saved answer to a task of the open round and its version: the page's
        script asks it before saying that an answer of its tab may not have been saved."""
        index = int_param(task, "task")
        session = require(session_of(request), "annotator")
        if index is None:
            raise HTTPProblem(400, "give the task as ?task=N.")
        try:
            rnd, answer, base = service.saved(session.user, index)
        except RoundMismatch as exc:
            raise HTTPProblem(404, str(exc)) from exc
        fields = None if answer is None else {"label_correct": answer.label_correct, "similarity": answer.similarity,
                                              "reason": answer.reason, "added_labels": list(answer.added_labels)}
        return JSONResponse({"task": index, "round": rnd, "base": base, "answer": fields})

    @app.get("/api/answers/{annotator}")
    async def api_answers(request: Request, annotator: str):
        return await run_in_threadpool(api_answers_work, request, annotator)

    def api_answers_work(request: Request, annotator: str):
        session = require(session_of(request))
        if session.user.role != "admin" and session.user.name != annotator:
            raise HTTPProblem(403, "annotators may read only their own answers.")
        rows = service.db.answers(annotator=annotator[:200])
        return JSONResponse([{**asdict(a), "added_labels": list(a.added_labels)} for a in rows])
