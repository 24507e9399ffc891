"""An identical submission is answered by the run that measured it (a classroom pressing Run on one example),
unless the user asks for a fresh run; anything that changes what is measured makes a new run."""

import json
import os
import re
import time

import pytest

from storage import progress, runstore
from storage.config import PROJECT_ROOT
from tests.support import SEED, form_token

SOFTWARE = {"cpu": "Test CPU", "cpus": 2, "gpus": [], "torch": "2.13.0", "triton": None, "python": "3.11.7"}


@pytest.fixture
def worker_online(db):
    runstore.beat(db, "w1@host", ["cpu"], os.getpid(), device=SOFTWARE)


def _measure(db, slug: str) -> None:
    """What a worker does: claim the run and store a report for it."""
    run = runstore.get_run(db, slug)
    runstore.claim_run(db, run.id, "w1@host", os.getpid())
    with open(os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", "seed.json")) as f:
        runstore.store_report(db, run.id, json.load(f))


def test_an_identical_submission_is_answered_by_the_stored_run_in_under_a_second(
    client, db, worker_online, broker_messages
):
    request = {"code": SEED, "configs": ["aot_eager"]}
    first = client.post("/api/runs", json=request)
    assert first.status_code == 202 and first.get_json()["reused"] is False
    slug = first.get_json()["id"]
    while_queued = client.post("/api/runs", json=request).get_json()  # pressed at once: shares the queued run
    assert while_queued["id"] == slug and while_queued["reused"] is True
    assert while_queued["measured"]["status"] == "queued" and while_queued["measured"]["at"] is None
    _measure(db, slug)

    started = time.monotonic()
    again = client.post("/api/runs", json=request)
    took = time.monotonic() - started
    body = again.get_json()
    assert again.status_code == 200 and body["reused"] is True and body["id"] == slug
    assert took < 1.0, took
    run = runstore.get_run(db, slug)
    assert body["measured"] == {
        "at": progress.iso(run.finished_at),
        "worker": "w1@host",
        "device_name": run.environment["device_name"],
        "status": "succeeded",
    }
    assert client.get(body["report_url"]).status_code == 200
    assert broker_messages() == 1  # nothing more was queued

    fresh = client.post("/api/runs", json={**request, "fresh": True})
    assert fresh.status_code == 202 and fresh.get_json()["id"] != slug and broker_messages() == 2
    assert client.post("/api/runs", json={**request, "fresh": "yes"}).get_json()["errors"]["fresh"]


@pytest.mark.parametrize(
    "change",
    [{"code": SEED + "\n# another line\n"}, {"configs": ["backend_eager"]}, {"train": True}, {"filename": "other.py"}],
    ids=lambda c: next(iter(c)),
)
def test_a_changed_request_is_measured_again(client, db, worker_online, change):
    request = {"code": SEED, "configs": ["aot_eager"]}
    slug = client.post("/api/runs", json=request).get_json()["id"]
    _measure(db, slug)
    other = client.post("/api/runs", json={**request, **change})
    assert other.status_code == 202 and other.get_json()["id"] != slug


def test_other_software_versions_or_a_failed_run_are_never_reused(client, db, worker_online):
    request = {"code": SEED, "configs": ["aot_eager"]}
    slug = client.post("/api/runs", json=request).get_json()["id"]
    _measure(db, slug)
    runstore.beat(db, "w1@host", ["cpu"], os.getpid() + 1, device={**SOFTWARE, "torch": "2.14.0"})  # upgraded
    upgraded = client.post("/api/runs", json=request).get_json()
    assert upgraded["reused"] is False and upgraded["id"] != slug
    runstore.fail_run(db, runstore.get_run(db, upgraded["id"]), "load", "worker_lost", "gone")
    assert client.post("/api/runs", json=request).get_json()["reused"] is False


def test_no_reuse_without_a_worker_that_says_its_versions(client, db):
    request = {"code": SEED, "configs": ["aot_eager"]}
    slug = client.post("/api/runs", json=request).get_json()["id"]
    assert runstore.get_run(db, slug).fingerprint is None
    assert client.post("/api/runs", json=request).get_json()["id"] != slug


def test_the_page_says_when_and_where_the_reused_report_was_measured_and_offers_a_fresh_run(client, db, worker_online):
    form = {"code": SEED, "configs": ["aot_eager"], "train": "inference"}
    first = client.post("/", data={**form_token(client), **form})
    slug = first.headers["Location"].rsplit("/", 1)[-1]
    _measure(db, slug)
    again = client.post("/", data={**form_token(client), **form})
    assert again.status_code == 303 and again.headers["Location"].endswith(f"/r/{slug}?reused=1")
    html = client.get(again.headers["Location"]).get_data(as_text=True)
    run = runstore.get_run(db, slug)
    assert 'id="reused"' in html and f'id="measured-at">{progress.iso(run.finished_at)}<' in html
    assert 'id="measured-worker">w1@host<' in html
    fresh_form = re.search(r'<form method="post" action="/" id="fresh-run">(.*?)</form>', html, re.S).group(1)
    fields = re.findall(r'name="(\w+)" value="([^"]*)"', fresh_form)
    assert ("fresh", "1") in fields and ("train", "inference") in fields and ("configs", "aot_eager") in fields
    fresh = client.post("/", data={**form_token(client), **form, "fresh": "1"})
    assert fresh.status_code == 303 and slug not in fresh.headers["Location"]
    assert "reused" not in fresh.headers["Location"]
    assert 'id="reused"' not in client.get(f"/r/{slug}").get_data(as_text=True)


def test_identical_submissions_at_the_same_moment_become_one_run(app, db, worker_online, broker_messages):
    """A class pressing Run on the gallery seed at once: the check for an identical run and the insert hold one
    lock, so eight submissions in eight threads get one run, one queued message, and seven answers that share it.
    (Checked and inserted apart, two threads could both find none and queue two runs.)"""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    request = {"code": SEED, "configs": ["aot_eager"]}
    barrier = Barrier(8)

    def press(n):
        client = app.test_client()
        barrier.wait()
        return client.post("/api/runs", json=request, environ_base={"REMOTE_ADDR": f"10.1.0.{n}"}).get_json()

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(press, range(8)))
    assert len({a["id"] for a in answers}) == 1
    assert sorted(a["reused"] for a in answers) == [False] + [True] * 7
    assert broker_messages() == 1
    assert db.query(runstore.Run).count() == 1
