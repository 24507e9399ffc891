"""The attacks that broke the worker, through a real worker: on the embedded default (SQLite data and broker) and
on PostgreSQL + Redis, where text rules differ. Each run ends within seconds of its job with the real cause, and
the worker serves the next run."""

import json
import os

import pytest
from sqlalchemy import func, select, text

from storage import runstore
from storage.db import session_factory
from storage.models import Run
from tests.support import (
    SEED,
    Worker,
    make_settings,
    scratch_postgres_and_redis,
    submittable,
    wait_for_run,
    wait_for_success,
)
from webapp import create_app

ATTACKS = os.path.join(os.path.dirname(__file__), "attacks")
REDIS_DB = 11  # a db index of its own, flushed: no other user of this server is touched


def attack(name: str) -> str:
    with open(os.path.join(ATTACKS, f"{name}.py")) as f:
        return submittable(f.read())


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def backend(request, tmp_path_factory):
    instance = tmp_path_factory.mktemp(request.param)
    if request.param == "sqlite":
        yield make_settings(instance)
        return
    with scratch_postgres_and_redis(REDIS_DB) as (database_url, broker_url):
        yield make_settings(instance, database_url=database_url, broker_url=broker_url)


@pytest.fixture(scope="module")
def site(backend):
    with Worker(backend) as worker:
        yield create_app(backend).test_client(), worker, backend


def submit(client, name: str) -> str:
    response = client.post("/api/runs", json={"code": attack(name), "configs": ["eager"]})
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def seconds_after_start(settings, slug: str) -> float:
    with session_factory(settings.database_url)() as session:
        run = runstore.get_run(session, slug)
        return (run.finished_at - run.started_at).total_seconds()


def test_malformed_and_flooding_events_neither_crash_the_worker_nor_flood_the_run(site):
    client, worker, _ = site
    run_id = submit(client, "malformed_events")
    status = wait_for_run(client, run_id, timeout=120, worker=worker)
    assert status["status"] == "succeeded", status["error"]
    assert len(json.dumps(status)) < 2 * 1024 * 1024  # 5,000 events of 20 kB would be 100 MB
    assert any("further progress events were dropped" in m["text"] for m in status["messages"])


def test_a_report_of_the_wrong_shape_fails_the_run_at_once_naming_the_field(site):
    client, worker, settings = site
    run_id = submit(client, "report_wrong_type")
    status = wait_for_run(client, run_id, timeout=120, worker=worker)
    error = status["error"]
    assert status["status"] == "failed" and error["kind"] == "invalid_report", error
    assert "report from the job is invalid" in error["message"] and "Traceback" not in json.dumps(error)
    assert seconds_after_start(settings, run_id) < 30  # not the reaper's 17.5 minutes


def fail_inserts_for_next_run(settings, table: str) -> int:
    """A real database error: a trigger refusing rows of ``table`` for the next run to be created."""
    with session_factory(settings.database_url)() as session:
        run_id = (session.scalar(select(func.max(Run.id))) or 0) + 1
        if session.get_bind().dialect.name == "sqlite":
            session.execute(
                text(
                    f"CREATE TRIGGER fail_{table}_{run_id} BEFORE INSERT ON {table} "
                    f"WHEN NEW.run_id = {run_id} "
                    "BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END"
                )
            )
        else:
            session.execute(
                text(
                    "CREATE OR REPLACE FUNCTION fail_insert() RETURNS trigger AS $$ BEGIN "
                    "IF NEW.run_id = TG_ARGV[0]::int THEN RAISE EXCEPTION 'simulated disk failure'; "
                    "END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
                )
            )
            session.execute(
                text(
                    f"CREATE TRIGGER fail_{table}_{run_id} BEFORE INSERT ON {table} FOR EACH ROW "
                    f"EXECUTE FUNCTION fail_insert('{run_id}')"
                )
            )
        session.commit()
    return run_id


def test_a_database_error_while_storing_the_report_fails_the_run_at_once_with_an_error_id(site):
    client, worker, settings = site
    expected_id = fail_inserts_for_next_run(settings, "report_sections")
    run_id = client.post("/api/runs", json={"code": SEED, "configs": ["eager"]}).get_json()["id"]
    status = wait_for_run(client, run_id, timeout=120, worker=worker)
    error = status["error"]
    assert status["status"] == "failed" and error["kind"] == "internal_error", error
    assert "storing the report failed" in error["message"] and "error id" in error["message"]
    assert "simulated disk failure" not in json.dumps(error) and "Traceback" not in json.dumps(error)
    assert seconds_after_start(settings, run_id) < 30  # was the reaper's 17.5 minutes, "ran past the time limit"
    error_id = error["message"].split("error id ")[1].split(")")[0]
    assert f"error {error_id}" in open(worker.log_path).read()  # the traceback is in the log, under that id
    with session_factory(settings.database_url)() as session:
        assert runstore.get_run(session, run_id).id == expected_id


def test_a_database_error_on_a_progress_event_kills_the_whole_job_at_once(site):
    client, worker, settings = site
    fail_inserts_for_next_run(settings, "run_events")
    hang = submittable("import time\ntime.sleep(600)\n")
    run_id = client.post("/api/runs", json={"code": hang, "configs": ["eager"]}).get_json()["id"]
    status = wait_for_run(client, run_id, timeout=60, worker=worker)  # not the job's 300 s time limit
    error = status["error"]
    assert status["status"] == "failed" and error["kind"] == "internal_error", error
    assert "could not record this run's progress" in error["message"] and "error id" in error["message"]
    assert seconds_after_start(settings, run_id) < 30
    assert not os.path.exists(os.path.join(settings.jobs_path, run_id))  # folder (and its tmpfs) gone


def test_an_exception_message_with_nul_and_a_lone_surrogate_is_stored_readably(site):
    client, worker, _ = site
    status = wait_for_run(client, submit(client, "nul_in_exception"), timeout=120, worker=worker)
    assert status["status"] == "failed" and status["error"]["kind"] == "user_exception", status["error"]
    assert "bad\\x00value \\ud800 end" in status["error"]["message"]
    page = client.get(f"/r/{status['id']}")
    assert page.status_code == 200 and "bad\\x00value" in page.get_data(as_text=True)


def test_the_worker_serves_the_next_run_after_the_attacks(site):
    client, worker, _ = site
    run_id = client.post("/api/runs", json={"code": SEED, "configs": ["eager"]}).get_json()["id"]
    wait_for_success(client, run_id, timeout=120, worker=worker)
    assert worker.process.poll() is None


def test_events_and_failures_of_any_shape_are_stored(backend):
    """The store itself, below the engine's schema: what PostgreSQL used to refuse (a stage of 40 characters or
    a list, NUL in text) is stored, readable, instead of crashing the task."""
    with session_factory(backend.database_url)() as session:
        run = runstore.create_run(
            session, runstore.Submission(code="x", filename="model.py", device="cpu", train=None, configs=["eager"])
        )
        for event in (
            {"event": "stage", "stage": ["load"], "state": {"x": 1}},
            {"event": "stage", "stage": "x" * 40, "state": "started"},
            {"event": "message", "text": "nul\x00here \udcff"},
        ):
            runstore.record_event(session, run.id, event)
        runstore.fail_run(session, session.get(Run, run.id), "s" * 40, "k\x00ind", "bad\x00value \ud800")
        session.expire_all()
        stored = session.get(Run, run.id)
        assert [e.stage for e in stored.events] == [None, "x" * 31 + "\u2026", None]
        assert stored.events[2].text == "nul\\x00here \\udcff"
        assert stored.error_message == "bad\\x00value \\ud800" and stored.error_kind == "k\\x00ind"
