"""The report stored before the warm compile (workers.tasks.StoredRun.early), without a job: what the run, the API and
the maintenance read from it, and a job that fails after it (killed in its warm compile) keeping it."""

import json
import os
import time

import sqlalchemy

from contract.report import checked_report
from contract.timeline import Recorder
from storage import progress, runstore
from storage.db import session_factory
from storage.models import SUCCEEDED, ReportSection
from tests.support import SEED, make_settings
from webapp import create_app
from workers.maintenance import remove_dead_job_folders
from workers.tasks import StoredRun

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
        stored = StoredRun(
            session, session_factory(settings.database_url), run, time.time() - 5, Recorder("worker"), settings
        )
        stored.early(_early_seed_report())
        assert stored.early_stored_unix is not None
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
        killed["runtime"]["job_seconds"] = 61.0
        stored.final(killed)
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


def test_each_stored_report_writes_its_timeline_once_with_its_own_store_in_it(tmp_path):
    """One road (engine.sink): the early and the final report each write the timeline section once, last, with the
    worker's phases and that store's own seconds; the final one shows the early store beside the warm compile."""
    settings = make_settings(tmp_path)
    client = create_app(settings).test_client()
    slug = client.post("/api/runs", json={"code": SEED, "configs": ["eager", "inductor_default"]}).get_json()["id"]
    timeline_writes = []
    with session_factory(settings.database_url)() as session:

        @sqlalchemy.event.listens_for(session, "before_flush")
        def count(flushed, _context, _instances):
            rows = set(flushed.new) | set(flushed.dirty)
            timeline_writes.extend(r for r in rows if isinstance(r, ReportSection) and r.name == "timeline")

        run = runstore.get_run(session, slug)
        requested = time.time() - 5
        worker = Recorder("worker")
        worker.add("queue_wait", requested, requested + 1)
        stored = StoredRun(session, session_factory(settings.database_url), run, requested, worker, settings)
        stored.early(_early_seed_report())
        assert len(timeline_writes) == 1
        early_timeline = client.get(f"/api/runs/{slug}/report").get_json()["timeline"]
        assert early_timeline["report_stored_s"] == round(stored.early_stored_unix - requested, 4)
        [store] = [p for p in early_timeline["phases"] if p["phase"] == "store"]
        assert store["side"] == "worker" and store["depth"] == 0 and store["end_s"] <= early_timeline["report_stored_s"]

        with open(FIXTURE) as f:
            final = checked_report(json.load(f))  # the warm compile's figures filled in
        stored.final(final)
        assert len(timeline_writes) == 2
    timeline = client.get(f"/api/runs/{slug}/report").get_json()["timeline"]
    stores = sorted((p["depth"], p["start_s"]) for p in timeline["phases"] if p["phase"] == "store")
    assert [depth for depth, _ in stores] == [0, 1]  # the final store, and the early one beside the warm compile
    assert timeline["report_stored_s"] == early_timeline["report_stored_s"]
    assert client.get(f"/api/runs/{slug}").get_json()["still_measuring"] == []


def test_a_worker_lost_in_the_warm_compile_leaves_the_early_report_with_the_warm_compile_failed(tmp_path):
    """Issue 21: a kill -9 during the warm compile left the run "still measuring" for the whole time limit, then its
    warm compile pending for ever. The reaper now ends it as soon as the worker is seen dead, keeping the report."""
    settings = make_settings(tmp_path)
    client = create_app(settings).test_client()
    slug = client.post("/api/runs", json={"code": SEED, "configs": ["eager", "inductor_default"]}).get_json()["id"]
    sessions = session_factory(settings.database_url)
    with sessions() as session:
        run = runstore.claim_run(session, runstore.get_run(session, slug).id, "gone@host", 999_999)
        stored = StoredRun(session, sessions, run, time.time() - 5, Recorder("worker"), settings)
        early = _early_seed_report()
        early["runtime"]["processes"] = {"status": "pending", "reason": "the measuring processes run after this report"}
        stored.early(early)
        assert client.get(f"/api/runs/{slug}").get_json()["still_measuring"]
        assert runstore.reap_stale_runs(session, settings) == [slug]  # no heartbeat from gone@host
        session.refresh(run)
        assert run.status == SUCCEEDED and run.engine_seconds is not None and not progress.job_runs_on(run, settings)
        assert runstore.reap_stale_runs(session, settings) == []  # once
    status = client.get(f"/api/runs/{slug}").get_json()
    assert status["status"] == "succeeded" and status["still_measuring"] == []
    runtime = client.get(f"/api/runs/{slug}/report").get_json()["runtime"]
    for entry in (runtime["compile_cache"]["warmup"], runtime["compile_cache"]["warm"], runtime["processes"]):
        assert entry["status"] == "failed", entry
        assert (
            entry["reason"]
            == "the warm compile did not finish: worker gone@host stopped responding while running the job"
        )
    assert runtime["benchmarks"]  # the early report's figures stay
    page = client.get(f"/r/{slug}/runtime").get_data(as_text=True)
    assert 'id="still-measuring"' not in page and "the warm compile did not finish: worker gone@host" in page
