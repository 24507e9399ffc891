"""A thread in each worker's main process: heartbeat (with the worker's device), reaper and broker purge.

It runs in the main process, not the pool child that runs jobs, so it beats while a job runs and stops beating
when the worker dies: that silence is what the reaper in every other worker (and the API) acts on.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from sqlalchemy import text

from engine import jobgroup, sandbox
from storage import progress, runstore
from storage.config import Settings
from storage.db import make_engine, session_factory
from workers import device

log = logging.getLogger(__name__)

PURGE_EVERY_S = 60.0
# The folder of a prestarted child for a worker's next job (workers.tasks): jobs/prestart-<pool pid>-<random>. It
# belongs to no run (the job it will serve, and then serves, is not known when it is made): it lives while that
# pool process lives.
PRESTART_PREFIX = "prestart-"
RUN_MARKS = (
    ".runs"  # in the jobs folder: for each prestart- folder handed a job, the run it serves (mark_prestarted_folder)
)


class Maintenance(threading.Thread):
    def __init__(self, settings: Settings, worker_name: str, queues: list[str]):
        super().__init__(name="pt2scope-maintenance", daemon=True)
        self.settings, self.worker_name, self.queues = settings, worker_name, queues
        self._stopped = threading.Event()
        self._sessions = session_factory(settings.database_url)
        self._purged_at = 0.0
        self.device = device.describe()  # once: it does not change while the process lives
        self.tick()  # beat before the first job can be claimed: the reaper must know this worker at once

    def run(self) -> None:
        while not self._stopped.wait(self.settings.heartbeat_interval_s):
            try:
                self.tick()
            except Exception:  # a database hiccup must not end the heartbeat for good
                log.exception("maintenance tick failed")

    def tick(self) -> None:
        with self._sessions() as session:
            runstore.beat(session, self.worker_name, self.queues, os.getpid(), self.device)
            for slug in runstore.reap_stale_runs(session, self.settings, local_worker=self.worker_name):
                log.warning("run %s reaped: its worker died", slug)
        if time.monotonic() - self._purged_at > PURGE_EVERY_S:
            purge_consumed_messages(self.settings.broker_url)
            for slug in remove_dead_job_folders(self.settings, self._sessions):
                log.warning("folder of run %s removed: its job is not running any more", slug)
            self._purged_at = time.monotonic()

    def stop(self) -> None:
        self._stopped.set()
        with self._sessions() as session:
            runstore.forget_worker(session, self.worker_name)


def remove_dead_job_folders(settings: Settings, sessions) -> list[str]:
    """Kill what is left of jobs of runs no worker runs any more, and delete their folders (unmounting their
    tmpfs) and empty cgroups: a worker killed mid-job leaves them behind. A folder exists only while its job runs
    (it is made after the claim and removed before the final report is stored: progress.job_runs_on), so any
    other folder is dead; but that of a prestarted child (PRESTART_PREFIX), which lives while the pool process
    that made it does until it is handed a job, and from then on as long as that job's run (RUN_MARKS)."""
    try:
        names = os.listdir(settings.jobs_path)
    except FileNotFoundError:
        return []
    removed = []
    with sessions() as session:
        marks = os.path.join(settings.jobs_path, RUN_MARKS)
        for name in os.listdir(marks) if os.path.isdir(marks) else []:
            if name not in names:  # its folder is gone
                _remove_file(os.path.join(marks, name))
        for name in names:
            if name == RUN_MARKS:
                continue
            slug = _marked_run(settings, name)
            if slug is None and _prestart_owner_alive(name):  # a prestarted child, waiting for its job
                continue
            run = runstore.get_run(session, slug or name)
            if run is None or not progress.job_runs_on(run, settings):
                folder = os.path.join(settings.jobs_path, name)
                sandbox.kill_processes_of_job_dir(folder)  # a job whose worker died may still run
                sandbox.remove_job_dir(folder)
                removed.append(name)
    jobgroup.remove_stale()
    return removed


def mark_prestarted_folder(settings: Settings, folder: str, slug: str) -> None:
    """Say which run a prestarted child serves, in a file outside its folder (the job cannot reach it): from
    then on the folder lives as long as that run's job, like a folder named after its run."""
    marks = os.path.join(settings.jobs_path, RUN_MARKS)
    os.makedirs(marks, exist_ok=True)
    with open(os.path.join(marks, os.path.basename(folder.rstrip("/"))), "w") as f:
        f.write(slug)


def _marked_run(settings: Settings, name: str) -> str | None:
    try:
        with open(os.path.join(settings.jobs_path, RUN_MARKS, name)) as f:
            return f.read().strip() or None
    except OSError:
        return None


def _remove_file(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _prestart_owner_alive(name: str) -> bool:
    """A prestarted child's folder whose pool process still runs (its child waits for, or runs, a job)."""
    if not name.startswith(PRESTART_PREFIX):
        return False
    pid = name[len(PRESTART_PREFIX) :].split("-")[0]
    return pid.isdigit() and runstore.process_exists(int(pid))


def purge_consumed_messages(broker_url: str) -> int:
    """Delete messages the SQL broker has delivered: kombu marks them invisible and keeps them forever.

    (Connecting through make_engine also switches an SQLite broker file to WAL, which it then keeps.)
    """
    if not broker_url.startswith("sqla+"):
        return 0
    engine = make_engine(broker_url[len("sqla+") :])
    try:
        with engine.begin() as connection:
            if not engine.dialect.has_table(connection, "kombu_message"):
                return 0
            return connection.execute(text("DELETE FROM kombu_message WHERE visible = :no"), {"no": False}).rowcount
    finally:
        engine.dispose()
