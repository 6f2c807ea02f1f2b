"""Changing rounds and finalizing lose nothing and hide nothing.

- Opening round 2 while annotators are still answering round 1: the doubted pairs are chosen
  inside the transaction that changes the round, so a "dissimilar" answer saved meanwhile is
  either in round 2 or refused (the annotator is told), never silently left out.
- The admin's actions ask for confirmation (a POST without it only redirects to the
  confirmation page), and redirect after POST.
- Finalize on an incomplete round is refused unless the admin accepts it; the finalized set
  then records how many pairs were unreviewed, and every pm-k run on it says so.
"""

from __future__ import annotations

import json
import threading

import pytest

import robustlab
from robustlab.engine import load_result
from robustlab.review import rounds
from robustlab.review.database import User
from robustlab.review.service import IncompleteReview, RoundMismatch
from robustlab.store import open_store

from .conftest import BACKENDS
from .helpers import answer, login

ANA, BEN, CLEO = User("ana", "annotator"), User("ben", "annotator"), User("cleo", "annotator")
DISSIMILAR = {"label_correct": "yes", "similarity": "dissimilar", "reason": "motion"}
SIMILAR = {"label_correct": "yes", "similarity": "similar"}


@pytest.mark.parametrize("db_url", BACKENDS, indirect=True)
def test_round2_keeps_every_dissimilar_answer_given_while_it_opens(service, monkeypatch):
    """The choice of round-2 pairs waits (up to 1 s) for an annotator's "dissimilar" answer that
    arrives meanwhile. Chosen outside the round change (before), the answer was saved in round 1
    after the choice, and its pair never reached round 2. Chosen inside, the answer waits for the
    round change and is refused with a message; or it came first and its pair is in round 2."""
    service.submit(ANA, 0, 1, {"label_correct": "yes"})
    choosing, answered = threading.Event(), threading.Event()
    outcome: dict = {}
    choose = rounds.round2_pairs

    def slow_choice(task_set, round1):
        choosing.set()
        answered.wait(1.0)
        return choose(task_set, round1)

    def annotator():
        choosing.wait(10)
        try:
            service.submit(BEN, 2, 1, DISSIMILAR)
            outcome["saved"] = True
        except RoundMismatch as exc:
            outcome["saved"], outcome["message"] = False, str(exc)
        answered.set()

    monkeypatch.setattr(rounds, "round2_pairs", slow_choice)
    worker = threading.Thread(target=annotator)
    worker.start()
    opened, _ = service.open_round2()
    worker.join(30)
    assert opened and "saved" in outcome
    doubted = {a.pair for a in service.db.answers(round=1) if a.similarity == "dissimilar"}
    assert doubted <= set(service.db.round2_pairs()), "a round-1 dissimilar answer was lost"
    if not outcome["saved"]:
        assert "round 2 is open now" in outcome["message"] and "nothing was saved" in outcome["message"]


def test_round2_under_concurrent_answers_many_trials(tasks_file, tmp_path, users):
    from robustlab.review.server import build_service

    for trial in range(6):
        service = build_service(tasks_file, tmp_path / f"trial{trial}.db")
        stop = threading.Event()

        def annotate(user, start, service=service, stop=stop):
            index = start
            while not stop.is_set() and index < len(service.task_set):
                task = service.task_set.tasks[index]
                try:
                    service.submit(user, index, 1, {"label_correct": "yes"} if task.is_anchor_step else DISSIMILAR)
                except RoundMismatch:
                    return
                index += 1

        workers = [threading.Thread(target=annotate, args=(u, s)) for u, s in ((ANA, 0), (BEN, 1), (CLEO, 2))]
        for w in workers:
            w.start()
        service.open_round2()
        stop.set()
        for w in workers:
            w.join(30)
        doubted = {a.pair for a in service.db.answers(round=1) if a.similarity == "dissimilar"}
        assert doubted <= set(service.db.round2_pairs()), f"trial {trial}: a dissimilar answer was lost"
        service.db.close()


def test_admin_actions_need_confirmation_and_redirect(app, service):
    boss = login(app, "boss")
    response = boss.post("/admin/round2", data={"csrf_token": boss.csrf}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/admin/confirm/round2"
    assert service.current_round() == 1
    page = boss.get("/admin/confirm/round2").text
    assert "nobody has answered yet" in page and 'name="confirm" value="yes"' in page
    response = boss.post("/admin/round2", data={"csrf_token": boss.csrf, "confirm": "yes"}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/admin?done=round2&n=0"
    assert service.current_round() == 2
    # the same POST again (a reload of an old page) changes nothing and says so
    again = boss.post("/admin/round2", data={"csrf_token": boss.csrf, "confirm": "yes"})
    assert "was open already" in again.text
    # reopen round 1, while nobody has answered round 2
    response = boss.post("/admin/round1", data={"csrf_token": boss.csrf}, follow_redirects=False)
    assert response.headers["location"] == "/admin/confirm/round1" and service.current_round() == 2
    response = boss.post("/admin/round1", data={"csrf_token": boss.csrf, "confirm": "yes"}, follow_redirects=False)
    assert response.headers["location"] == "/admin?done=round1" and service.current_round() == 1
    ana = login(app, "ana")
    answer(ana, 1, similarity="dissimilar", reason="motion")
    boss.post("/admin/round2", data={"csrf_token": boss.csrf, "confirm": "yes"})
    answer(ana, 1, 2, similarity="similar")
    refused = boss.post("/admin/round1", data={"csrf_token": boss.csrf, "confirm": "yes"})
    assert refused.status_code == 409 and "round 2 has 1 answer(s) already" in refused.text
    assert service.current_round() == 2
    for bad in ("/admin?done=nonsense", "/admin?n=x", "/admin?refresh=0", "/admin/confirm/nothing"):
        assert boss.get(bad).status_code in (400, 404), bad


def answer_all(service, user, round: int, fields_for) -> None:
    for index in ([t.index for t in service.task_set.tasks] if round == 1
                  else [service.task_set.task(*p).index for p in service.db.round2_pairs()]):
        task = service.task_set.tasks[index]
        service.submit(user, index, round, {"label_correct": "yes"} if task.is_anchor_step else fields_for(index))


def test_finalize_over_an_incomplete_round2_needs_the_admins_choice_and_is_recorded(app, service, task_dir,
                                                                                       tmp_path):
    answer_all(service, ANA, 1, lambda i: DISSIMILAR if i in (2, 3) else SIMILAR)
    answer_all(service, BEN, 1, lambda i: SIMILAR)
    service.open_round2()
    assert len(service.db.round2_pairs()) == 2
    service.submit(BEN, 2, 2, SIMILAR)               # one of two annotators, on one of two pairs
    state = service.completeness()
    assert (state.round, state.tasks, state.unreviewed, state.partly_reviewed) == (2, 2, 1, 1)
    assert state.unfinished == (("ana", 0), ("ben", 1))
    with pytest.raises(IncompleteReview, match="1 of 2 task.s. have no answer; 1 have answers from only some"):
        service.finalize()
    assert not (task_dir / "pmsets.json").exists()
    boss = login(app, "boss")
    refused = boss.post("/admin/finalize", data={"csrf_token": boss.csrf, "confirm": "yes"})
    assert refused.status_code == 409 and 'id="accept-incomplete"' in refused.text
    assert not (task_dir / "pmsets.json").exists()
    done = boss.post("/admin/finalize", data={"csrf_token": boss.csrf, "confirm": "yes", "accept_incomplete": "on"},
                     follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/admin?done=finalized"
    summary = json.loads((task_dir / "finalize_summary.json").read_text())
    review = summary["review"]
    assert (review["complete"], review["open_round"], review["tasks"], review["unreviewed"],
            review["partly_reviewed"]) == (False, 2, 2, 1, 1)
    assert review["annotators"] == {"ana": 0, "ben": 1} and review["finalized_by"] == "boss"
    page = boss.get("/admin").text
    assert 'id="finalized-incomplete"' in page
    # every pm-k run on the set says how many pairs were unreviewed
    result = robustlab.evaluate("demo:cnn", "video-pmk", task_dir, store=tmp_path / "store", class_map="none",
                                workers=0, progress=False)
    assert result.metric("n_pairs_unreviewed") == 1 and result.metric("n_pairs_partly_reviewed") == 1
    assert any("incomplete review: 1 pair(s) of round 2 had no review answer and 1 had answers from only some"
               in note for note in result.notes)
    with open_store(tmp_path / "store") as store:          # what `robustlab show` prints
        assert "incomplete review: 1 pair(s) of round 2" in load_result(store, result.run_id).table()


def test_a_complete_review_finalizes_without_asking_and_says_so(service, task_dir, tmp_path):
    for user in (ANA, BEN):
        answer_all(service, user, 1, lambda i: SIMILAR)
    summary = service.finalize()
    assert summary["review"]["complete"] is True and summary["review"]["unreviewed"] == 0
    result = robustlab.evaluate("demo:cnn", "video-pmk", task_dir, store=tmp_path / "store", class_map="none",
                                workers=0, progress=False)
    assert result.metric("n_pairs_unreviewed") == 0
    assert not any("incomplete review" in note for note in result.notes)


def test_agreement_counts_the_annotators_who_finished(service):
    """A third annotator with 1 answer does not turn kappa into noise: the two who finished are
    counted, with percent agreement and the class balance beside kappa."""
    answer_all(service, ANA, 1, lambda i: SIMILAR)
    answer_all(service, BEN, 1, lambda i: DISSIMILAR if i == 2 else SIMILAR)
    service.submit(CLEO, 2, 1, SIMILAR)
    (a,) = service.overview()["agreement"]
    assert a.counted == ("ana", "ben") and a.not_counted == (("cleo", 1),) and a.method == "Cohen's kappa"
    assert a.label_items == 10 and a.label_observed == 1.0 and a.label_balance["yes"] == 1.0
    assert a.similarity_items == 8 and a.similarity_observed == pytest.approx(7 / 8)
    assert a.similarity_balance == {"similar": pytest.approx(15 / 16), "dissimilar": pytest.approx(1 / 16),
                                    "unsure": 0.0}
    # all answers "yes": kappa is undefined, and the page shows the 100% agreement beside it
    assert a.label_kappa != a.label_kappa


def test_admin_page_shows_percent_agreement_counts_and_lists_as_n_of_m(app, service):
    answer_all(service, ANA, 1, lambda i: DISSIMILAR if i in (1, 2, 3) else SIMILAR)
    answer_all(service, BEN, 1, lambda i: SIMILAR)
    service.submit(CLEO, 1, 1, SIMILAR)
    page = login(app, "boss").get("/admin").text
    assert "not counted yet: cleo (1 of 10)" in page
    assert 'class="num similarity-observed">62%' in page and 'class="num label-observed">100%' in page
    assert 'id="disagreed-count">3 of 3' in page and '/admin/pair?task=1' in page
    pair = login(app, "boss").get("/admin/pair?task=1").text
    assert "significant motion" in pair and "cleo" in pair
