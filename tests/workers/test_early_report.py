"""The report stored before the warm compile (workers.tasks.EarlyReport), without a job: what the run, the API and
the maintenance read from it, and a job that fails after it (killed in its warm compile) keeping it."""

import json
import os
import time

from contract.report import checked_report
from contract.timeline import Recorder
from storage import progress, runstore
from storage.db import session_factory
from storage.models import SUCCEEDED
from tests.support import SEED, make_settings
from webapp import create_app
from workers.maintenance import remove_dead_job_folders
from workers.tasks import EarlyReport

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "reports", "seed.json")
PENDING = {"status": "pending", "reason": "the warm compile was still running when the report was stored"}


def _early_seed_report() -> dict:
    with open(FIXTURE) as f:
        report = checked_report(json.load(f))
    report["runtime"]["compile_cache"].update(warmup=dict(PENDING), warm=dict(PENDING))
    return report


def test_a_job_killed_in_its_warm_compile_keeps_the_report_stored_before_it(tmp_path):
    settings = make_settings(tmp_path)
    client = create_app(settings).test_client()
    slug = client.post("/api/runs", json={"code": SEED, "configs": ["eager", "inductor_default"]}).get_json()["id"]
    with session_factory(settings.database_url)() as session:
        run = runstore.get_run(session, slug)
        early = EarlyReport(session, run.id, time.time() - 5, Recorder("worker"), settings)
        early.store(_early_seed_report())
        assert early.stored_unix is not None
        session.refresh(run)
        assert run.status == SUCCEEDED and run.engine_seconds is None and progress.job_runs_on(run, settings)

        # The job folder of a job that runs on after its report is not the maintenance's to remove.
        folder = os.path.join(settings.jobs_path, slug)
        os.makedirs(folder)
        assert remove_dead_job_folders(settings, session_factory(settings.database_url)) == []
        assert os.path.isdir(folder)
        status = client.get(f"/api/runs/{slug}").get_json()
        assert status["status"] == "succeeded" and [s["stage"] for s in status["still_measuring"]] == ["warm_compile"]

        killed = {**_early_seed_report(), "status": "failed"}
        killed["failure"] = {
            "stage": "warm_compile",
            "kind": "timeout",
            "message": "time limit of 60 s reached during stage 'warm_compile'; the job was killed.",
        }
        early.complete(killed)
        runstore.set_engine_seconds(session, run.id, {"runtime": {"job_seconds": 61.0}})
        session.refresh(run)
        assert run.status == SUCCEEDED and run.engine_seconds == 61.0 and not progress.job_runs_on(run, settings)
    report = client.get(f"/api/runs/{slug}/report").get_json()
    assert report["status"] == "ok" and report["failure"] is None  # the early report's figures stay
    for label in ("warmup", "warm"):
        entry = report["runtime"]["compile_cache"][label]
        assert entry["status"] == "failed" and "time limit of 60 s" in entry["reason"], entry
    assert client.get(f"/api/runs/{slug}").get_json()["still_measuring"] == []
    page = client.get(f"/r/{slug}/runtime").get_data(as_text=True)
    assert 'id="still-measuring"' not in page and "The warm compile failed: the job ended in the warm compile" in page
