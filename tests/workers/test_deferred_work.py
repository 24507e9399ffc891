"""Issue 20 item 1 on a real worker (the embedded default): a job whose report is readable while another run waits
holds the worker only until then; its warm compile and measuring processes run once the worker is idle, stop for a
job that arrives (which then starts at once) and complete the report afterwards, the status and the page saying
what is still to come until then."""

import os
import time

from storage import runstore
from storage.db import session_factory
from tests.support import SEED, Worker, make_settings, wait_for_success, wait_until
from webapp import create_app
from workers.deferred import TAKEN

INDUCTOR = ["eager", "inductor_default"]
CHEAP = ["eager", "backend_eager"]


def test_a_job_leaves_its_warm_compile_to_an_idle_worker_which_yields_to_the_next_job(tmp_path):
    settings = make_settings(tmp_path)
    client = create_app(settings).test_client()

    def submit(code, configs):
        response = client.post("/api/runs", json={"code": code, "configs": configs})
        assert response.status_code == 202, response.get_json()
        return response.get_json()["id"]

    def status(slug):
        return client.get(f"/api/runs/{slug}").get_json()

    def warm(slug):
        return client.get(f"/api/runs/{slug}/report").get_json()["runtime"]["compile_cache"]["warm"]["status"]

    def times(slug):
        with session_factory(settings.database_url)() as session:
            run = runstore.get_run(session, slug)
            return run.created_at, run.started_at, run.released_at

    with Worker(settings) as worker:
        first = submit(SEED, INDUCTOR)
        wait_until(lambda: status(first)["status"] == "running", timeout=120, what="the first run to start")
        second = submit(f"{SEED}\n# the second student\n", CHEAP)
        wait_for_success(client, first, worker=worker)  # readable
        wait_until(lambda: times(first)[2], timeout=120, what="the first job to end", worker=worker)
        # The second run waited when the first's report was readable: the first left its work for later.
        assert warm(first) == "deferred"
        page = client.get(f"/r/{first}/runtime").get_data(as_text=True)
        assert 'id="warm-compile-deferred"' in page and "1 other run waited for this worker" in page
        assert 'id="processes-deferred"' in page
        # Its status and page say the work is still to come, and how many runs are queued before it.
        assert [(s["stage"], s["state"]) for s in status(first)["still_measuring"]] == [("warm_compile", "deferred")]
        notice = client.get(f"/r/{first}").get_data(as_text=True)
        assert "data-deferred" in notice and "once the worker is idle" in notice and "js/run.js" in notice
        wait_for_success(client, second, worker=worker)
        wait_until(lambda: times(second)[2], timeout=120, what="the second job to end", worker=worker)
        # The first job held the worker only until its report was readable (its warm compile takes 20-40 s here),
        # and its warm compile did not run before the second job, which waited.
        with session_factory(settings.database_url)() as session:
            readable = runstore.get_run(session, first).finished_at
        first_started, first_released = times(first)[1:]
        assert (first_released - readable).total_seconds() < 5
        assert times(second)[1] >= first_released and warm(first) == "deferred"

        # Idle now: the first run's work starts; a third run arriving makes it yield, and starts at once.
        taken = os.path.join(settings.deferred_path, f"{first}{TAKEN}")
        wait_until(
            lambda: any(
                os.path.join(settings.deferred_path, n).startswith(taken) for n in os.listdir(settings.deferred_path)
            ),
            timeout=60,
            what="the deferred work to start",
            worker=worker,
        )
        time.sleep(3)  # well into its first fresh process
        third = submit(f"{SEED}\n# the third student\n", CHEAP)
        wait_for_success(client, third, worker=worker)
        created, third_started, _ = times(third)
        # It yielded: the work was not finished when the third job had run (had it held the worker, it would have
        # completed first: 20-40 s here), and the third job waited only for its message's pick-up.
        assert warm(first) == "deferred"
        assert (third_started - created).total_seconds() < 10, "the deferred work held the next job back"

        # Then it is tried again from the kept folder, and completes the report.
        wait_until(lambda: warm(first) == "ok", timeout=240, what="the deferred warm compile", worker=worker)
        report = client.get(f"/api/runs/{first}/report").get_json()
        assert report["runtime"]["compile_cache"]["warmup"]["status"] == "ok"
        assert report["runtime"]["processes"]["status"] == "ok"
        assert report["runtime"]["compile_cache"]["warm"]["caches"]["fx_graph"]["hits"] >= 1
        assert report["runtime"]["job_seconds"] < (first_released - first_started).total_seconds() + 1
        page = client.get(f"/r/{first}/runtime").get_data(as_text=True)
        assert 'id="warm-compile-total"' in page and "warm-compile-deferred" not in page
        assert status(first)["still_measuring"] == [] and 'id="still-measuring"' not in page
        wait_until(lambda: not os.listdir(settings.deferred_path), timeout=30, what="the kept folder to go")
