"""The reaper fails runs whose worker died; it leaves runs of live workers alone."""

import os
import subprocess
import sys
from datetime import timedelta

from storage import runstore
from storage.models import FAILED, RUNNING, WorkerHeartbeat, utcnow
from storage.runstore import Submission
from tests.support import SEED


def _running_run(db, worker_name, pid=None, started_ago_s=0.0):
    run = runstore.create_run(
        db, Submission(code=SEED, filename="model.py", device="cpu", train=None, configs=["eager"])
    )
    runstore.claim_run(db, run.id, worker_name, pid or os.getpid())
    run.started_at = utcnow() - timedelta(seconds=started_ago_s)
    db.commit()
    return run


def test_runs_of_a_silent_worker_are_reaped(db, settings):
    runstore.beat(db, "dead@host", ["cpu"], pid=123)
    db.get(WorkerHeartbeat, "dead@host").last_seen = utcnow() - timedelta(seconds=settings.worker_stale_after_s + 1)
    db.commit()
    run = _running_run(db, "dead@host")
    assert runstore.reap_stale_runs(db, settings) == [run.slug]
    assert (run.status, run.error_kind) == (FAILED, "worker_lost")
    assert "stopped responding" in run.error_message


def test_runs_of_a_live_worker_are_left_alone(db, settings):
    runstore.beat(db, "live@host", ["cpu"], pid=os.getpid())
    run = _running_run(db, "live@host")
    assert runstore.reap_stale_runs(db, settings, local_worker="live@host") == []
    assert run.status == RUNNING


def test_a_run_claimed_before_its_worker_restarted_is_reaped(db, settings):
    run = _running_run(db, "w@host", started_ago_s=10)
    runstore.beat(db, "w@host", ["cpu"], pid=999_999)  # the restarted worker: a new pid, a new started_at
    assert runstore.reap_stale_runs(db, settings) == [run.slug]
    assert "restarted" in run.error_message


def test_a_run_whose_process_died_is_reaped_by_its_own_worker(db, settings):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    runstore.beat(db, "me@host", ["cpu"], pid=os.getpid())
    run = _running_run(db, "me@host", pid=gone.pid)
    assert runstore.reap_stale_runs(db, settings, local_worker="other@host") == []  # only the owner can tell
    assert runstore.reap_stale_runs(db, settings, local_worker="me@host") == [run.slug]


def test_a_run_past_the_hard_time_limit_is_reaped(db, settings):
    runstore.beat(db, "slow@host", ["cpu"], pid=os.getpid())
    run = _running_run(db, "slow@host", started_ago_s=settings.hard_time_limit_s + settings.worker_stale_after_s + 1)
    assert runstore.reap_stale_runs(db, settings) == [run.slug]
    assert "hard time limit" in run.error_message


def test_the_api_reaps_a_run_it_is_asked_about(client, db, settings):
    run = _running_run(db, "never-beat@host")
    assert client.get(f"/api/runs/{run.slug}").get_json()["error"]["kind"] == "worker_lost"
