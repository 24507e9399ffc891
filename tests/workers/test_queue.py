"""The queue of a real worker (the embedded default: SQLite, its broker) seen by the clients waiting in it: each
run's place and expected wait, clients taking turns, identical submissions coalesced into one run."""

import time

import pytest

from storage.db import session_factory
from storage.models import Run
from tests.support import SEED, Worker, make_settings, wait_for_success, wait_until
from webapp import create_app

# The first job holds the worker a few seconds in its user code, so that the others queue behind it.
SLOW = SEED + "\nimport time\n\ntime.sleep(8)\n"
CONFIGS = ["eager", "backend_eager"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("queue"))
    with Worker(settings) as worker:
        yield create_app(settings).test_client(), worker


def test_clients_take_turns_see_their_place_and_wait_and_identical_runs_are_one(site):
    client, worker = site
    a, b, c = ({"REMOTE_ADDR": f"10.0.0.{n}"} for n in (1, 2, 3))

    def submit(code, who):
        response = client.post("/api/runs", json={"code": code, "configs": CONFIGS}, environ_base=who)
        return response.status_code, response.get_json()

    def status(slug):
        return client.get(f"/api/runs/{slug}").get_json()

    _, first = submit(SLOW, a)
    wait_until(lambda: status(first["id"])["status"] == "running", timeout=120, what="the first run to start")
    slugs = {}
    for name, who in (("a2", a), ("a3", a), ("b1", b)):
        code, body = submit(f"{SEED}\n# {name}\n", who)
        assert code == 202
        slugs[name] = body["id"]
    # Client a has a run running and two waiting: client b's one run, submitted last, starts first.
    queue = {name: status(slug)["queue"] for name, slug in slugs.items()}
    assert [queue[n]["position"] for n in ("b1", "a2", "a3")] == [1, 2, 3]
    assert queue["b1"]["text"].startswith(" (next to start") and queue["a3"]["ahead"] == 2
    page = client.get(f"/r/{slugs['a3']}").get_data(as_text=True)
    assert 'id="queue-position">3<' in page and "2 runs before it" in page
    # A third client submitting b1's code exactly: answered by b1's run, nothing queued for it.
    code, same = submit(f"{SEED}\n# b1\n", c)
    assert code == 200 and same["reused"] and same["id"] == slugs["b1"]
    waits = []
    while status(slugs["a3"])["status"] == "queued":  # once the first job is done, the wait is measured
        queued = status(slugs["a3"])["queue"]
        if queued:
            waits.append(queued["wait_s"])
        time.sleep(0.5)
    for slug in [first["id"], *slugs.values()]:
        wait_for_success(client, slug, worker=worker)
    assert any(w is not None and w > 0 for w in waits), waits

    # A run reads "succeeded" once its report is stored; the worker releases it after its cleanup (the job folder
    # removed), so the last run's release may come a moment after its status.
    def released():
        with session_factory(worker.settings.database_url)() as session:
            runs = {r.slug: r for r in session.query(Run)}
        return runs if all(r.released_at for r in runs.values()) else None

    runs = wait_until(released, timeout=60, what="the worker to release every run", worker=worker)
    assert len(runs) == 4  # the identical submission added no run
    started = sorted(slugs, key=lambda name: runs[slugs[name]].started_at)
    assert started == ["b1", "a2", "a3"]
    assert all(r.released_at >= r.finished_at for r in runs.values())  # each job's worker time is measured
