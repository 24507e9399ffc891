"""Helpers for the web, worker and browser tests: isolated settings, a real worker process, waiting on runs."""

from __future__ import annotations

import copy
import gzip
import io
import json
import os
import re
import signal
import subprocess
import time
import uuid
from contextlib import contextmanager

import psycopg
import redis

from engine.sink import ReportSink
from storage import runstore
from storage.config import PROJECT_ROOT, Settings
from storage.db import migrate, session_factory
from webapp.submission import never_defined
from workers.launch import dies_with_parent, worker_command

# Configs that stop before Inductor: the engine records Dynamo and AOTAutograd in a few seconds, no C++ build.
FAST_CONFIGS = ["eager", "backend_eager", "aot_eager"]
SEED = open(os.path.join(PROJECT_ROOT, "examples", "seed.py")).read()


def make_settings(instance_path, **overrides) -> Settings:
    """Settings for one test instance: SQLite data and broker inside it unless overridden; fast heartbeats."""
    instance_path = str(instance_path)
    defaults = dict(
        instance_path=instance_path,
        database_url=f"sqlite:///{instance_path}/pt2scope.sqlite",
        broker_url=f"sqla+sqlite:///{instance_path}/broker.sqlite",
        examples_dir=os.path.join(PROJECT_ROOT, "examples"),
        job_time_limit_s=300.0,
        heartbeat_interval_s=1.0,
        worker_stale_after_s=5.0,
        pch_warmup=False,  # 20-50 s of g++ per worker start; only tests/security warms one, on purpose
        kernel_cache_gallery="none",  # the same for the trusted kernel cache (tests/security/test_kernel_cache.py)
    )
    settings = Settings.from_env(**{**defaults, **overrides})
    migrate(settings.database_url)
    return settings


class LoggedProcess:
    """A background process started in its own session with its output in ``log_path``; stopped with SIGTERM (as
    `docker stop` and Celery's warm shutdown expect), then killed with its group after ``stop_timeout``."""

    stop_timeout = 30.0

    def start(self, command: list[str], env: dict[str, str]) -> None:
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=dies_with_parent(signal.SIGKILL),  # a test run killed outright leaves nothing running
        )

    def output(self) -> str:
        with open(self.log_path) as f:
            return f.read()[-5000:]

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)  # the group this started, nothing else
                self.process.wait()
        self.log.close()


class Worker(LoggedProcess):
    """A real Celery worker process (the same command line `make run` uses), stopped on exit."""

    def __init__(self, settings: Settings, queues=("cpu",)):
        self.settings, self.queues = settings, list(queues)
        self.name = f"test-{uuid.uuid4().hex[:8]}@localhost"
        self.log_path = os.path.join(settings.instance_path, f"{self.name}.log")
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Worker:
        os.makedirs(self.settings.instance_path, exist_ok=True)
        self.start(worker_command(self.name, self.queues), {**os.environ, **self.settings.to_env()})
        wait_until(lambda: self.online(), timeout=90, what=f"worker {self.name} to beat", worker=self)
        return self

    def online(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"worker exited with {self.process.returncode}:\n{self.output()}")
        with session_factory(self.settings.database_url)() as session:
            return set(self.queues) <= runstore.online_queues(session, self.settings)


def waiting_child_args(pid) -> list[bytes] | None:
    """The command line of a job's child (``python -m engine.child JOB_DIR``) blocked reading a pipe, as a
    prestarted child waits for its go; None for any other process, the fork server such a child made included
    (engine.warm.ForkServer: blocked on its request pipe, with its parent's command line)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
        with open(f"/proc/{pid}/wchan") as f:
            waiting = "pipe_read" in f.read()
        with open(f"/proc/{pid}/stat") as f:
            parent = f.read().rsplit(")", 1)[1].split()[1]
        with open(f"/proc/{parent}/cmdline", "rb") as f:
            forked = f.read().split(b"\0") == args  # the child's own parent is the sandbox's launcher
    except OSError:
        return None
    return args if waiting and b"engine.child" in args and not forked else None


def wait_until(predicate, *, timeout: float, what: str, interval: float = 0.1, worker: Worker | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    detail = f"\nworker log:\n{worker.output()}" if worker else ""
    raise AssertionError(f"timed out after {timeout} s waiting for {what}{detail}")


def wait_for_run(client, run_id: str, *, timeout: float = 240, worker: Worker | None = None) -> dict:
    """Poll the API as a client would until the run has finished; return its last status."""

    def finished():
        data = client.get(f"/api/runs/{run_id}").get_json()
        return data if data["status"] in ("succeeded", "failed") else None

    return wait_until(finished, timeout=timeout, what=f"run {run_id} to finish", interval=0.2, worker=worker)


def wait_for_success(client, run_id: str, **wait) -> dict:
    """``wait_for_run`` for a run that must succeed: a failed one fails the test with the run's own error (a bare
    "'failed' == 'succeeded'" left a clean clone's failure unexplained)."""
    data = wait_for_run(client, run_id, **wait)
    assert data["status"] == "succeeded", f"run {run_id} {data['status']}: {data['error']}"
    return data


def read_sample_report(name: str) -> dict:
    """A sample report by name (tests/fixtures/reports): NAME.json, or NAME.json.gz for the large ones."""
    path = os.path.join(PROJECT_ROOT, "tests", "fixtures", "reports", f"{name}.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    with gzip.open(path + ".gz", "rt") as f:
        return json.load(f)


def sample_site(instance_path, names, **extra: dict):
    """A site whose database holds the named sample reports, and ``extra`` reports under their keywords, as
    finished runs: (its test client, {name: slug})."""
    from webapp import create_app

    settings = make_settings(instance_path)
    with session_factory(settings.database_url)() as session:
        reports = {**{name: read_sample_report(name) for name in names}, **extra}
        slugs = {name: store_sample_report(session, report).slug for name, report in reports.items()}
    return create_app(settings).test_client(), slugs


def store_sample_report(session, report: dict):
    """A real recorded report (tests/fixtures/reports) stored as a finished run, as a worker stores it: a job's
    with its stage events, an imported log's as an import (a run of kind "import", its report stored by
    store_import). Returns the run."""
    report = copy.deepcopy(report)  # store_import names each rank's run in the report
    if report.get("trace_import"):
        run = runstore.create_import(session, report["source"]["filename"], io.BytesIO(b"-"), 1)  # the log's stand-in
        runstore.store_import(session, run.id, report)
        return run
    request = report["request"]
    run = runstore.create_run(
        session,
        runstore.Submission(
            code=report["source"]["code"],
            filename=report["source"]["filename"],
            device=request["device"],
            train=request.get("train"),
            configs=request["configs"],
        ),
    )
    for stage in report["stages"]:
        runstore.record_event(
            session,
            run.id,
            {
                "event": "stage",
                "stage": stage["name"],
                "state": "finished",
                "seconds": stage.get("seconds"),
                "config": stage.get("config"),
            },
        )
    if report.get("failure"):
        failure = report["failure"]
        runstore.record_event(session, run.id, {"event": "stage", "stage": failure["stage"], "state": "failed"})
    runstore.store_report(session, run.id, report)
    return run


def submittable(code: str) -> str:
    """Hostile or hanging code as a user must send it: with the top-level names the submit check asks for
    (webapp.submission.never_defined) where it has none, after code that never lets the job reach them."""
    return code + "\nmodel = example_inputs = None\n" if never_defined(code) else code


def form_token(client) -> dict:
    """The CSRF field a browser's form would post: read from the form page, as a browser gets it."""
    html = client.get("/").get_data(as_text=True)
    return {"csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)}


# The production configuration on this machine's servers (.ci/run starts them): PostgreSQL and Redis.
POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_SERVER_URL = "redis://127.0.0.1:6379"


@contextmanager
def scratch_postgres_and_redis(redis_db: int):
    """A new PostgreSQL database and an emptied Redis database (an index of the caller's own, so no other user of
    the server is touched), both gone afterwards. Yields (database_url, broker_url)."""
    database = f"pt2scope_test_{uuid.uuid4().hex[:10]}"
    broker_url = f"{REDIS_SERVER_URL}/{redis_db}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    redis.Redis.from_url(broker_url).flushdb()
    database_url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{database}"
    try:
        yield database_url, broker_url
    finally:
        session_factory(database_url).kw["bind"].dispose()
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
        redis.Redis.from_url(broker_url).flushdb()


class Collected(ReportSink):
    """A job's sink that keeps everything it is handed: ``events``, ``partials``, ``earlies`` and ``finals``;
    ``on_event`` (optional) is called with each event first (raising there stops the job, as a database error
    would)."""

    def __init__(self, on_event=None) -> None:
        self.on_event = on_event
        self.events: list[dict] = []
        self.partials: list[dict] = []
        self.earlies: list[dict] = []
        self.finals: list[dict] = []

    def event(self, event: dict) -> None:
        if self.on_event is not None:
            self.on_event(event)
        self.events.append(event)

    def partial(self, report: dict) -> None:
        self.partials.append(report)

    def early(self, report: dict) -> None:
        self.earlies.append(report)

    def final(self, report: dict) -> None:
        self.finals.append(report)
